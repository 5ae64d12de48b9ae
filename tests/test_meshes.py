"""URDF meshes for the report (issue 35): found and placed on their links (against Pinocchio's
frames), thinned, bent with a flexible link's beam (against the beam's own shape functions), and
left out with one notice line when they cannot be drawn. The page itself is checked in Chromium
(tests/test_report_browser.py)."""
from __future__ import annotations

from base64 import b64decode
from pathlib import Path

import numpy as np
import pytest

import flexman as fm
from flexman.dynamics.structure import numeric_model
from flexman.viz import meshes
from flexman.viz.animation import animation_data
from urdf_helpers import FOREARM_OVERLAY, ROBOTS, bent_by_centreline, pin_q

trimesh = pytest.importorskip("trimesh")

UR5 = ROBOTS / "ur_description/urdf/ur5_robot.urdf" if ROBOTS is not None else None


def twisting_beam_robot():
    """One revolute beam bending both ways (two modes in y) and twisting (one torsion mode)."""
    beam = fm.Beam(length=0.6, mass_per_length=1.5, EI=(900.0, 700.0), GJ=80.0, polar_inertia_per_length=2e-4,
                   modes={"y": 2, "z": 1, "torsion": 1})
    return fm.Robot(links=[fm.Link(a=0.6, body=fm.RigidBody(0.3, [0.0, 0.0, 0.0], [1e-3, 1e-3, 1e-3]), beam=beam)],
                    name="twister")


def test_vertices_move_with_the_beams_shape_functions_at_their_station():
    """A point on the beam axis moves as the beam's centre line at its station (the shape
    functions, ``RevoluteBeam.centreline``); a point off the axis also turns with its cross-section:
    by the slope (a finite difference of the centre line) about e_ax x e_t, and by the torsion
    shape's angle about the axis; beyond the tip it rides on the tip section."""
    robot = twisting_beam_robot()
    beam = numeric_model(robot).links[0].beam
    e_ax = np.eye(3)[beam.axis]
    rng = np.random.default_rng(3)
    p = rng.uniform(-0.02, 0.02, beam.n)
    s = np.linspace(0.0, 1.0, 9)
    on_axis = beam.root + np.outer(s * beam.length, e_ax)
    expected = beam.centreline(p, s)[:, :3] - beam.centreline(0 * p, s)[:, :3]
    np.testing.assert_allclose(meshes.bent(beam, p, on_axis) - on_axis, expected, atol=1e-15)
    # off the axis: the section turns by the centre line's slope and by the torsion shape's angle
    offset = np.array([0.0, 0.03, -0.02])
    points = on_axis + offset
    torsion = beam.shapes["torsion"]
    twist = p[-1] * torsion(s)[0] * beam.length ** float(np.atleast_1d(torsion.scale)[0])
    expected = bent_by_centreline(beam, p, points) + np.cross(twist[:, None] * e_ax, offset)
    np.testing.assert_allclose(meshes.bent(beam, p, points), expected, atol=1e-7)  # (finite differences)
    assert np.abs(bent_by_centreline(beam, p, points) - points - (bent_by_centreline(beam, p, on_axis) - on_axis)).max() > 1e-4
    assert np.abs(twist).max() > 1e-3  # both rotations are there to be tested
    # beyond the tip: the first-order tip transform of the dynamics, D = I + sum p_k D_k
    beyond = beam.root + (1.2 * beam.length) * e_ax + offset
    D = np.eye(4) + np.einsum("k,kab->ab", p, beam.Dk)
    np.testing.assert_allclose(meshes.bent(beam, p, beyond[None])[0], D[:3, :3] @ beyond + D[:3, 3], atol=1e-15)


def test_vertex_clustering_keeps_the_shape_under_the_triangle_budget():
    """A fine sphere thinned to at most 500 triangles: under the budget, every vertex within a cell
    of the sphere, the area within 5 % of 4 pi r^2, the mesh still closed (each edge in two triangles)."""
    sphere = trimesh.creation.icosphere(subdivisions=5, radius=0.1)  # 20480 triangles
    v, f = meshes.decimate(np.asarray(sphere.vertices), np.asarray(sphere.faces), 500)
    assert 200 < len(f) <= 500
    assert np.abs(np.linalg.norm(v, axis=1) - 0.1).max() < 0.2 * 0.1
    area = 0.5 * np.linalg.norm(np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]]), axis=1).sum()
    assert abs(area / (4 * np.pi * 0.01) - 1) < 0.05
    small = np.asarray(sphere.faces)[:100]
    assert meshes.decimate(np.asarray(sphere.vertices), small, 500)[1] is small  # under the budget: untouched


@pytest.mark.skipif(ROBOTS is None, reason="example-robot-data is not installed")
def test_ur5_meshes_sit_on_pinocchios_link_frames_with_a_turned_flexible_forearm(capfd):
    """The UR5's seven visual meshes, posed for the animation at random joint angles (the forearm
    a beam along its turned frame's z axis, undeflected), land where Pinocchio's frames of the URDF
    links put the mesh files' vertices; loading prints no mesh notice, since they are drawn."""
    import pinocchio as pin

    robot = fm.load(UR5, overlay=FOREARM_OVERLAY)
    assert "mesh" not in capfd.readouterr().err
    assert [v.name for v in robot.visuals] == ["base_link", "shoulder_link", "upper_arm_link", "forearm_link",
                                               "wrist_1_link", "wrist_2_link", "wrist_3_link"]
    model = pin.buildModelFromUrdf(str(UR5))
    data = model.createData()
    q = np.zeros((1, robot.nq))
    q[0, :6] = np.random.default_rng(7).uniform(-1.5, 1.5, 6)
    pin.framesForwardKinematics(model, data, pin_q(model, q[0, :6]))
    scene = meshes.mesh_scene(robot, q, 1.0, False)
    poses = np.frombuffer(b64decode(scene["poses"]), "<f4").reshape(len(scene["slots"]), 3, 4)
    for vis, item in zip(robot.visuals, scene["visuals"]):
        local = np.frombuffer(b64decode(item["vertices"]), "<f4").reshape(-1, 3)
        pose = poses[item["slot"]]
        world = local @ pose[:, :3].T + pose[:, 3]
        oMf = data.oMf[model.getFrameId(vis.name)]
        in_urdf = np.linalg.solve(vis.origin[:3, :3], (local - vis.origin[:3, 3]).T).T  # back in the URDF link frame
        np.testing.assert_allclose(world, in_urdf @ oMf.rotation.T + oMf.translation, atol=2e-6)  # float32
        assert item["flex"] == (0 if vis.name == "forearm_link" else -1)
    assert 5000 < scene["triangles"] <= meshes.MAX_TRIANGLES


def test_primitives_placed_and_missing_meshes_said_in_one_line(tmp_path, capfd):
    """A box and a cylinder become triangles at their visual origins; a mesh file that is not
    there is one stderr line naming it (no Python warning), and the rest is still drawn."""
    urdf = tmp_path / "two.urdf"
    urdf.write_text("""<robot name="two">
  <link name="base"><visual><origin xyz="0 0 -0.05"/><geometry><box size="0.2 0.2 0.1"/></geometry></visual></link>
  <link name="arm"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><origin xyz="0.25 0 0" rpy="0 1.5707963267948966 0"/><geometry><cylinder radius="0.03" length="0.5"/></geometry>
      <material name="red"><color rgba="1 0 0 1"/></material></visual>
    <visual><geometry><mesh filename="meshes/gone.stl"/></geometry></visual></link>
  <joint name="j" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
</robot>""")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        robot = fm.load(urdf)
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "gone.stl" in err[0] and "lines" in err[0], err
    anim = animation_data(robot, [0.0, 1.0], [[0.0], [np.pi / 2]])
    scene = anim["meshes"]
    assert [v["name"] for v in scene["visuals"]] == ["base", "arm"] and scene["visuals"][1]["colour"] == "#ff0000"
    assert scene["triangles"] == 12 + len(trimesh.creation.cylinder(radius=0.03, height=0.5, sections=24).faces)
    poses = np.frombuffer(b64decode(scene["poses"]), "<f4").reshape(2, 2, 3, 4)
    arm = np.frombuffer(b64decode(scene["visuals"][1]["vertices"]), "<f4").reshape(-1, 3)
    end = arm @ poses[1, 1, :, :3].T + poses[1, 1, :, 3]  # turned a quarter turn: the cylinder along y
    np.testing.assert_allclose([end[:, 1].min(), end[:, 1].max()], [0.0, 0.5], atol=1e-6)
    assert anim["range"][1][1] >= 0.5  # the view holds the meshes


def test_without_trimesh_the_report_draws_sticks_after_one_line(monkeypatch, tmp_path, capfd):
    """trimesh missing: loading says so in one line, the animation has no meshes (the sticks stay)."""
    from flexman.model import urdf as urdf_module

    urdf = tmp_path / "one.urdf"
    urdf.write_text("""<robot name="one"><link name="base"/>
  <link name="arm"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><geometry><box size="0.5 0.05 0.05"/></geometry></visual></link>
  <joint name="j" type="continuous"><parent link="base"/><child link="arm"/><axis xyz="0 0 1"/></joint></robot>""")
    from flexman import extras

    real = extras.available
    monkeypatch.setattr(extras, "available", lambda module: False if module == "trimesh" else real(module))
    monkeypatch.setattr(urdf_module, "_MESH_NOTICES", set())
    robot = fm.load(urdf)
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install 'flexman[mesh]'" in err[0], err
    anim = animation_data(robot, [0.0], [[0.3]])
    assert "meshes" not in anim and anim["frames"][0]["rigid"]


@pytest.mark.skipif(ROBOTS is None, reason="example-robot-data is not installed")
def test_the_notebook_preview_draws_the_meshes_where_pinocchio_puts_the_links():
    """Issue 35: the notebook's picture of the robot (``plot_arm``, shown by ``robot._repr_html_``)
    draws the URDF's meshes, posed at q: rigid links on Pinocchio's frames, the flexible forearm's
    mesh bent with its beam coordinates."""
    import pinocchio as pin
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection

    from flexman.viz.snapshot import plot_arm

    robot = fm.load(UR5, overlay=FOREARM_OVERLAY)
    model = pin.buildModelFromUrdf(str(UR5))
    data = model.createData()
    q = np.zeros(robot.nq)
    q[:6] = np.random.default_rng(8).uniform(-1.5, 1.5, 6)
    pin.framesForwardKinematics(model, data, pin_q(model, q[:6]))
    posed = meshes.posed_meshes(robot, q)
    parts = meshes.load_visuals(robot, 3000)
    assert len(posed) == len(parts) == 7 and sum(len(t) for t, _ in posed) <= 3000
    for (triangles, _), (vis, local, faces, _) in zip(posed, parts):
        oMf = data.oMf[model.getFrameId(vis.name)]
        in_urdf = np.linalg.solve(vis.origin[:3, :3], (local - vis.origin[:3, 3]).T).T
        assert np.abs(triangles - (in_urdf @ oMf.rotation.T + oMf.translation)[faces]).max() < 1e-12
    q[robot.flex_index] = 0.004  # deflected: the forearm's mesh and those beyond it move by millimetres
    bent = meshes.posed_meshes(robot, q)
    moved = [np.abs(b - a).max() for (a, _), (b, _) in zip(posed, bent)]
    assert max(moved[:3]) == 0.0 and all(1e-4 < m < 0.05 for m in moved[3:]), moved
    fig = plot_arm(robot, q)
    drawn = [c for c in fig.axes[0].collections if isinstance(c, Poly3DCollection)]
    assert len(drawn) == 7


@pytest.mark.skipif(ROBOTS is None, reason="example-robot-data is not installed")
def test_visuals_are_saved_in_model_files_and_drawn_from_them(tmp_path):
    """Issue 35: a URDF robot saved as a model file keeps its visuals (``visuals:``): the file read
    back has the same meshes, placed the same; a mesh beside the file is written relative to it, so
    the folder can move; the loaded model's meshes are drawn."""
    import shutil

    robot = fm.load(UR5, overlay=FOREARM_OVERLAY)
    back = fm.load(fm.save(robot, tmp_path / "ur5.yaml"))
    assert [(v.link, v.kind, v.path, v.scale, v.rgba) for v in back.visuals] == \
           [(v.link, v.kind, v.path, v.scale, v.rgba) for v in robot.visuals]
    assert max(np.abs(a.origin - b.origin).max() for a, b in zip(robot.visuals, back.visuals)) < 1e-12
    # the meshes copied beside the model file: relative paths, the folder moved, still drawn
    folder = tmp_path / "arm"
    (folder / "meshes").mkdir(parents=True)
    for vis in robot.visuals:
        shutil.copy(vis.path, folder / "meshes" / Path(vis.path).name)
        vis.path = str(folder / "meshes" / Path(vis.path).name)
    text = fm.save(robot, folder / "ur5.yaml").read_text()
    assert "mesh: meshes/base.dae" in text
    moved = shutil.move(str(folder), str(tmp_path / "elsewhere"))
    again = fm.load(Path(moved) / "ur5.yaml")
    assert all(Path(v.path).is_file() and "elsewhere" in v.path for v in again.visuals)
    assert len(meshes.load_visuals(again, 3000)) == 7


@pytest.mark.parametrize("visuals, message", [
    ("cube", r"^visuals: expected a list"),
    ([{"link": "nowhere", "box": [0.1, 0.1, 0.1]}], r"^visuals\[0\]\.link: no link named 'nowhere'"),
    ([{"link": "base", "box": [0.1, 0.1, 0.1], "sphere": [0.1]}], r"^visuals\[0\]: give exactly one of mesh, box"),
    ([{"link": "base", "cylinder": [0.1, -0.2]}], r"^visuals\[0\]\.cylinder\[1\]: must be a finite number > 0"),
    ([{"link": "base", "sphere": [0.1], "rgba": [1, 0, 0, 2]}], r"^visuals\[0\]\.rgba: expected 4 numbers"),
    ([{"link": "base", "mesh": ""}], r"^visuals\[0\]\.mesh: must be the path of a mesh file"),
    ([{"link": "base", "mesh": "a.stl", "colour": "red"}], r"^visuals\[0\]\.colour: unknown field"),
])
def test_bad_visuals_are_one_line(visuals, message):
    from flexman.model.serialize import robot_from_dict, robot_to_dict

    data = robot_to_dict(fm.examples.load("dynaman_2r"))
    data["visuals"] = visuals
    with pytest.raises(fm.ModelError, match=message) as info:
        robot_from_dict(data)
    assert "\n" not in str(info.value)
