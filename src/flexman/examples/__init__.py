"""Bundled example robots: the arms of the literature flexman is checked against.

Each example is a model file in ``examples/data/`` with a one-line ``description`` and a
``source`` naming the document, table/figure and page its numbers come from; values a
document does not give are chosen, and the file says so next to them.

>>> from flexman import examples
>>> examples.names()[:2]
['dynaman_2r', 'dynaman_rp']
>>> robot = examples.load("flx_three_link")
>>> robot.nq
7
"""
from __future__ import annotations

from pathlib import Path

from ..model.errors import ModelError

DATA = Path(__file__).resolve().parent / "data"

__all__ = ["names", "path", "describe", "load"]


def names() -> list:
    """The bundled example names, sorted."""
    return sorted(p.stem for p in DATA.glob("*.yaml"))


def path(name: str) -> Path:
    """The model file of a bundled example."""
    if not isinstance(name, str) or name not in names():
        raise ModelError(f"unknown example {name!r}; available: {', '.join(names())}")
    return DATA / f"{name}.yaml"


def _data(name: str) -> dict:
    from ..model.parse import parse

    return parse(path(name).read_text(encoding="utf-8"), "yaml")


def describe(name: str) -> str:
    """The one-line description of a bundled example."""
    return str(_data(name).get("description", "")).strip()


def load(name: str):
    """The :class:`~flexman.model.robot.Robot` of a bundled example (a model file, or an
    overlay whose ``urdf:`` names a bundled URDF)."""
    from ..model.io import load_overlay
    from ..model.serialize import robot_from_dict

    try:
        data = _data(name)
        return load_overlay(data, path(name)) if "urdf" in data else robot_from_dict(data)
    except ModelError as exc:  # a broken bundled file is our bug: say which file
        raise ModelError(f"bundled example {name!r}: {exc}") from None
