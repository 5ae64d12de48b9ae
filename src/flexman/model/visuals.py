"""The visual geometry a URDF gives its links: where each mesh (or box, cylinder, sphere) sits.

A :class:`Visual` is fixed to one flexman link (index -1: the base) by a rigid transform from
that link's undeformed frame, so a URDF link merged through fixed joints carries its meshes
along. Only the description is kept here (file, placement, scale, colour); reading the files
and drawing them is the report's business (:mod:`flexman.viz.meshes`). The dynamics never read
visuals.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .packages import resolve_mesh_path

PRIMITIVES = ("box", "cylinder", "sphere")


@dataclass
class Visual:
    """One visual element: a mesh file or a primitive, placed in a link frame."""

    link: int  # flexman link index; -1: the base
    origin: np.ndarray  # 4x4: the geometry's frame in the link frame
    kind: str  # "mesh" or one of PRIMITIVES
    path: str = ""  # the resolved mesh file ("mesh")
    scale: tuple = (1.0, 1.0, 1.0)  # mesh scale factors
    size: tuple = ()  # box (x, y, z); cylinder (radius, length); sphere (radius,)
    rgba: tuple | None = None  # the URDF material's colour, if it gives one
    name: str = ""  # the URDF link it belongs to


def _numbers(text, n, default):
    try:
        vals = tuple(float(v) for v in (text or "").split())
    except ValueError:
        return default
    return vals if len(vals) == n and all(np.isfinite(vals)) else default


def named_colours(root) -> dict:
    """Top-level ``<material name=...><color rgba=.../></material>`` by name."""
    out = {}
    for m in root.findall("material"):
        c = m.find("color")
        if m.get("name") and c is not None:
            out[m.get("name")] = _numbers(c.get("rgba"), 4, None)
    return out


def link_visuals(link_elem, on: int, carry, frame, base_dir, named) -> tuple:
    """(visuals, problems) of one URDF ``<link>`` riding on flexman link ``on`` at transform
    ``carry`` (its frame in that link's frame); ``frame(elem)`` reads an ``<origin>``; a mesh
    whose file cannot be found is a problem (one sentence), not an error: the dynamics do not
    need it."""
    visuals, problems = [], []
    for vis in link_elem.findall("visual"):
        geometry = vis.find("geometry")
        shape = next(iter(geometry), None) if geometry is not None else None
        if shape is None or shape.tag not in ("mesh",) + PRIMITIVES:
            continue
        material = vis.find("material")
        rgba = None
        if material is not None:
            colour = material.find("color")
            rgba = (_numbers(colour.get("rgba"), 4, None) if colour is not None
                    else named.get(material.get("name", "")))
        try:
            origin = carry @ frame(vis)
        except ValueError as exc:  # (ModelError) a malformed visual origin: not drawn, said once
            problems.append(str(exc))
            continue
        item = Visual(link=on, origin=origin, kind=shape.tag, rgba=rgba, name=link_elem.get("name", ""))
        if shape.tag == "mesh":
            try:
                item.path = str(resolve_mesh_path(shape.get("filename", ""), base_dir))
            except FileNotFoundError as exc:
                problems.append(str(exc))
                continue
            item.scale = _numbers(shape.get("scale"), 3, (1.0, 1.0, 1.0))
        elif shape.tag == "box":
            item.size = _numbers(shape.get("size"), 3, ())
        elif shape.tag == "cylinder":
            item.size = _numbers(f"{shape.get('radius', '')} {shape.get('length', '')}", 2, ())
        else:
            item.size = _numbers(shape.get("radius"), 1, ())
        if item.kind != "mesh" and not item.size:
            problems.append(f"<link name=\"{item.name}\">: a visual {shape.tag} without a valid size")
            continue
        visuals.append(item)
    return visuals, problems


def turned(visuals, link: int, T) -> list:
    """The visuals with those on ``link`` re-expressed after the link frame was turned (``T``:
    new frame <- old frame, as for the named frames)."""
    out = []
    for v in visuals:
        if v.link == link:
            v = Visual(**{**v.__dict__, "origin": T @ v.origin})
        out.append(v)
    return out


def renumbered(visuals, old_names, new_names) -> list:
    """The visuals of a robot rebuilt with links in another order (by link name; base kept)."""
    index = {name: k for k, name in enumerate(new_names)}
    out = []
    for v in visuals:
        if v.link < 0:
            out.append(v)
        elif old_names[v.link] in index:
            out.append(Visual(**{**v.__dict__, "link": index[old_names[v.link]]}))
    return out
