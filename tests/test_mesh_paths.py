"""URDF mesh addresses (package://, file://, relative) resolved to files (issue 35)."""
from __future__ import annotations

import pytest

from flexman.model.packages import resolve_mesh_path
from urdf_helpers import ROBOTS


def test_package_uri_found_next_to_the_urdf_in_ros_package_path_and_share(tmp_path, monkeypatch):
    mesh = tmp_path / "ws" / "my_robot" / "meshes" / "link.stl"
    mesh.parent.mkdir(parents=True)
    mesh.write_text("solid x\nendsolid x\n")
    urdf_dir = tmp_path / "ws" / "my_robot" / "urdf"
    urdf_dir.mkdir()
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)
    assert resolve_mesh_path("package://my_robot/meshes/link.stl", urdf_dir) == mesh.resolve()
    monkeypatch.setenv("ROS_PACKAGE_PATH", str(tmp_path / "ws"))
    assert resolve_mesh_path("package://my_robot/meshes/link.stl", tmp_path) == mesh
    assert resolve_mesh_path("../meshes/link.stl", urdf_dir).resolve() == mesh.resolve()
    assert resolve_mesh_path(f"file://{mesh}") == mesh
    with pytest.raises(FileNotFoundError, match=r"package 'nowhere' not found .*ROS_PACKAGE_PATH\.$"):
        resolve_mesh_path("package://nowhere/a.stl", tmp_path)


@pytest.mark.skipif(ROBOTS is None, reason="example-robot-data is not installed")
def test_example_robot_data_meshes_resolve_through_the_installed_share_folder(monkeypatch, tmp_path):
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)
    path = resolve_mesh_path("package://example-robot-data/robots/ur_description/meshes/ur5/visual/base.dae", tmp_path)
    assert path.is_file() and path.name == "base.dae" and path.samefile(
        ROBOTS / "ur_description" / "meshes" / "ur5" / "visual" / "base.dae")
