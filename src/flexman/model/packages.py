"""Resolve the ``package://NAME/path`` addresses of URDF mesh files to files on disk.

ROS names a mesh by its package; outside a ROS workspace the package is found, in this order,
in the URDF's own directory and its parents (a folder named NAME), in each folder of
``ROS_PACKAGE_PATH`` and in the ``share`` folder of installed cmeel packages (where
example-robot-data puts its robots)."""
from __future__ import annotations

import os
import sys
from pathlib import Path


def _share_folders() -> list:
    """``cmeel.prefix/share`` under each entry of ``sys.path`` that has one."""
    found = []
    for entry in sys.path:
        share = Path(entry or ".") / "cmeel.prefix" / "share"
        if share.is_dir() and share not in found:
            found.append(share)
    return found


def package_roots(name: str, base_dir=None) -> list:
    """Candidate folders of package ``name``, in search order (see the module docstring)."""
    roots = []
    if base_dir is not None:
        base = Path(base_dir).resolve()
        for folder in (base, *base.parents):
            if folder.name == name:
                roots.append(folder)
            roots.append(folder / name)
    for entry in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep):
        if entry:
            roots += [Path(entry) / name, Path(entry)] if Path(entry).name == name else [Path(entry) / name]
    roots += [share / name for share in _share_folders()]
    return roots


def resolve_mesh_path(uri: str, base_dir=None) -> Path:
    """The file a URDF mesh ``filename`` names: ``package://NAME/rest``, ``file://PATH`` or a path
    relative to ``base_dir`` (the URDF's folder). Raises FileNotFoundError in one sentence."""
    if uri.startswith("package://"):
        name, _, rest = uri[len("package://"):].partition("/")
        if not name or not rest:
            raise FileNotFoundError(f"mesh filename '{uri}': expected package://PACKAGE/PATH.")
        for root in package_roots(name, base_dir):
            candidate = root / rest
            if candidate.is_file():
                return candidate
        raise FileNotFoundError(f"mesh filename '{uri}': package '{name}' not found next to the URDF, in "
                                "ROS_PACKAGE_PATH or in an installed share folder; set ROS_PACKAGE_PATH.")
    path = Path(uri[len("file://"):] if uri.startswith("file://") else uri)
    if not path.is_absolute() and base_dir is not None:
        path = Path(base_dir) / path
    if not path.is_file():
        raise FileNotFoundError(f"mesh filename '{uri}': no such file {path}.")
    return path
