"""A URDF robot's visual meshes for the report's 3D view: read, thinned, placed, bent, packed.

Each visual (``robot.visuals``, :mod:`flexman.model.visuals`) is read with trimesh (pycollada
for ``.dae``), scaled and placed in its link's undeformed frame, and thinned by vertex
clustering until the whole robot has at most :data:`MAX_TRIANGLES` triangles, so that a report
stays a few MB. Per animation frame the page gets each carrying link's pose (3 x 4) and, for a
flexible link, its modal coordinates; a mesh on a beam bends with it: each vertex moves by
``sum_k p_k Psi_k(v)``, where ``Psi_k(v) = disp_k(s) + rot_k(s) x (v - c(s))`` is the k-th
shape's displacement and section rotation at the vertex's station s along the beam axis
(clamped to the beam's ends, so what lies beyond the tip moves with the tip section), the
first-order point map of the beam model itself. Arrays travel as base64 little-endian
Float32 / Uint16 / Uint32.
"""
from __future__ import annotations

import base64
import functools
import sys

import numpy as np

from ..dynamics import beam_tensors as bt
from .. import extras

MAX_TRIANGLES = 30000  # for the whole robot: a few hundred kB of page, smooth enough to recognise it
MIN_TRIANGLES = 300  # a small part keeps at least this many (or all it has)
DEFAULT_COLOUR = (0.72, 0.75, 0.80)
_NOTICES: set = set()


def _notice(text: str) -> None:
    """One line on stderr, once per process and text."""
    if text not in _NOTICES:
        _NOTICES.add(text)
        print(f"flexman: {text}", file=sys.stderr)


@functools.lru_cache(maxsize=64)
def _read(path: str):
    """(vertices, faces, rgb or None) of a mesh file, its parts joined (trimesh; COLLADA through pycollada)."""
    trimesh = extras.require("trimesh")
    if path.lower().endswith(".dae"):
        extras.require("collada")
    scene = trimesh.load(path, force="scene")
    mesh = scene.to_geometry() if hasattr(scene, "to_geometry") else scene.dump(concatenate=True)
    colour = None
    try:
        rgba = np.asarray(mesh.visual.to_color().vertex_colors, float)
        if rgba.size:
            colour = tuple(np.median(rgba[:, :3], axis=0) / 255.0)
    except Exception:  # a texture or material trimesh cannot turn into colours: the default one
        colour = None
    return np.asarray(mesh.vertices, float), np.asarray(mesh.faces, np.int64), colour


def _primitive(kind: str, size):
    """(vertices, faces) of a URDF box, cylinder (along z) or sphere, centred on its frame."""
    creation = extras.require("trimesh.creation", "URDF boxes, cylinders and spheres in the report", "mesh")
    if kind == "box":
        mesh = creation.box(extents=size)
    elif kind == "cylinder":
        mesh = creation.cylinder(radius=size[0], height=size[1], sections=24)
    else:
        mesh = creation.icosphere(subdivisions=2, radius=size[0])
    return np.asarray(mesh.vertices, float), np.asarray(mesh.faces, np.int64)


def geometry(visual):
    """(vertices in the link frame, faces, rgb) of one visual."""
    colour = None
    if visual.kind == "mesh":
        v, f, colour = _read(visual.path)
        v = v * np.asarray(visual.scale, float)
    else:
        v, f = _primitive(visual.kind, visual.size)
    if visual.rgba is not None:
        colour = tuple(visual.rgba[:3])
    v = v @ visual.origin[:3, :3].T + visual.origin[:3, 3]
    return v, f, colour or DEFAULT_COLOUR


def cluster(vertices, faces, cells: int):
    """Vertex clustering: vertices in one cell of a grid with ``cells`` cells along the mesh's
    longest side merge into their mean; triangles that collapse, and repeated ones, go."""
    lo = vertices.min(axis=0)
    size = max(float((vertices.max(axis=0) - lo).max()), 1e-12) / cells
    key = np.floor((vertices - lo) / size).astype(np.int64)
    _, first, label = np.unique(key, axis=0, return_index=True, return_inverse=True)
    label = label.reshape(-1)
    count = np.bincount(label)
    merged = np.stack([np.bincount(label, weights=vertices[:, a]) for a in range(3)], axis=1) / count[:, None]
    tri = label[faces]
    tri = tri[(tri[:, 0] != tri[:, 1]) & (tri[:, 1] != tri[:, 2]) & (tri[:, 0] != tri[:, 2])]
    _, keep = np.unique(np.sort(tri, axis=1), axis=0, return_index=True)
    tri = tri[np.sort(keep)]
    used = np.unique(tri)
    renumber = np.full(len(merged), -1)
    renumber[used] = np.arange(len(used))
    return merged[used], renumber[tri]


def decimate(vertices, faces, max_faces: int):
    """The mesh with at most ``max_faces`` triangles (itself when it has no more): a clustering grid
    that brings it under, found from 512 cells by the square law of a surface's triangle count."""
    if len(faces) <= max_faces:
        return vertices, faces
    cells = 512
    v, f = cluster(vertices, faces, cells)
    while len(f) > max_faces and cells > 2:  # a surface's triangles grow as cells^2: aim there, a little under
        cells = max(2, int(cells * min(0.9, 0.95 * np.sqrt(max_faces / len(f)))))
        v, f = cluster(vertices, faces, cells)
    return v, f


def mode_fields(beam, points) -> np.ndarray:
    """Psi (n, V, 3): the displacement of points (V, 3) of the undeformed link frame per unit
    modal coordinate of a revolute beam, carried by the cross-section at each point's station
    (see the module docstring)."""
    axes = (beam.axis, beam.transverse["y"], beam.transverse["z"])
    e_ax = np.eye(3)[beam.axis]
    s = np.clip((points - beam.root) @ e_ax / beam.length, 0.0, 1.0)
    disp, rot = bt.section_motion(beam.shapes, beam.length, axes, s)
    arm = points - (beam.root + np.outer(s * beam.length, e_ax))
    return disp + np.cross(rot, arm[None])


def bent(beam, p, points) -> np.ndarray:
    """Points (V, 3) of the undeformed link frame moved with the beam at modal coordinates p."""
    return points + np.einsum("k,kva->va", np.asarray(p, float), mode_fields(beam, points))


def _b64(array, dtype) -> str:
    return base64.b64encode(np.ascontiguousarray(array, dtype=np.dtype(dtype).newbyteorder("<")).tobytes()).decode()


def _hex(rgb) -> str:
    return "#" + "".join(f"{int(round(255 * min(max(float(c), 0.0), 1.0))):02x}" for c in rgb)


def load_visuals(robot, max_triangles: int = MAX_TRIANGLES) -> list:
    """[(visual, vertices, faces, rgb)] of the robot's visuals that can be read, thinned to
    ``max_triangles`` in all; [] without trimesh or visuals (the sticks are drawn then)."""
    visuals = list(getattr(robot, "visuals", None) or [])
    if not visuals or not extras.available("trimesh"):
        return []
    loaded, bad = [], []
    for vis in visuals:
        try:
            loaded.append((vis, *geometry(vis)))
        except extras.MissingExtra as exc:
            _notice(f"{robot.name}: meshes drawn as lines: {exc}")
            return []
        except Exception as exc:  # an unreadable file: that part is left out, said once
            bad.append(f"{vis.path or vis.kind} ({type(exc).__name__})")
    if bad:
        _notice(f"{robot.name}: {len(bad)} visual(s) could not be read and are not drawn: {bad[0]}")
    total = sum(len(f) for _, _, f, _ in loaded)
    out = []
    for vis, v, f, rgb in loaded:
        share = max(MIN_TRIANGLES, int(max_triangles * len(f) / max(total, 1)))
        v, f = decimate(v, f, share)
        if len(f):
            out.append((vis, v, f, rgb))
    return out


def posed_meshes(robot, q, magnify: float = 1.0, max_triangles: int = 3000) -> list:
    """[(triangles (T, 3, 3) in the world, rgb)] of the robot's visuals at one configuration ``q``
    (flexible coordinates x ``magnify``): what the report's view draws at that instant, for static
    pictures (the notebook's preview); [] when nothing can be drawn."""
    from .arm import link_records

    parts = load_visuals(robot, max_triangles)
    if not parts:
        return []
    _, _, model, recs = link_records(robot, np.asarray(q, dtype=float)[None], magnify)
    out = []
    for vis, v, f, rgb in parts:
        points, W = v, np.eye(4)
        if vis.link >= 0:
            beam = model.links[vis.link].beam
            bending = beam is not None and not beam.sliding
            W = np.broadcast_to(recs[vis.link]["Wh" if bending else "W"], (1, 4, 4))[0]
            if bending:
                points = bent(beam, np.asarray(recs[vis.link]["p"])[0], v)
        world = points @ W[:3, :3].T + W[:3, 3]
        out.append((world[f], tuple(rgb) if rgb is not None else DEFAULT_COLOUR))
    return out


def mesh_scene(robot, q, magnify: float, true_scale: bool, max_triangles: int = MAX_TRIANGLES):
    """The meshes' part of the animation data at frames q (F, nq), or None when nothing is
    drawn: {"visuals": [{"name", "colour", "slot", "vertices", "faces", "index" ("u16"/"u32"),
    "flex" (offset into a frame's coordinates, -1 rigid), "modes" (n x V x 3), "n"}], "slots"
    (the link of each pose), "poses" (F x slots x 12, rows of the 3 x 4 pose), "coords"
    (F x coordinates), "triangles"} and, with ``true_scale``, "true_poses", "true_coords"; plus
    "corners" (F, 8 x visuals, 3), the boxes' corners in the world for the view's range (not
    sent)."""
    from .arm import link_records

    parts = load_visuals(robot, max_triangles)
    if not parts:
        return None
    drawn, _, model, _ = link_records(robot, q[:1], 1.0)
    slots = sorted({vis.link for vis, *_ in parts})
    bending = [i for i in slots if i >= 0 and model.links[i].beam is not None and not model.links[i].beam.sliding]
    offsets = dict(zip(bending, np.cumsum([0] + [model.links[i].beam.n for i in bending[:-1]]).tolist()))

    def frames(factor):
        _, _, _, recs = link_records(robot, q, factor)
        poses = np.empty((len(q), len(slots), 3, 4))
        for k, i in enumerate(slots):
            W = np.eye(4) if i < 0 else recs[i]["Wh" if i in offsets else "W"]
            poses[:, k] = np.broadcast_to(W, (len(q), 4, 4))[:, :3, :]
        coords = [recs[i]["p"] for i in bending]
        return poses, (np.concatenate(coords, axis=-1) if coords else np.zeros((len(q), 0)))

    poses, coords = frames(magnify)
    out = {"slots": slots, "poses": _b64(poses, "f4"), "coords": _b64(coords, "f4"), "n_coords": coords.shape[1],
           "visuals": [], "triangles": 0}
    if true_scale:
        true_poses, true_coords = frames(1.0)
        out.update(true_poses=_b64(true_poses, "f4"), true_coords=_b64(true_coords, "f4"))
    corners = []
    for vis, v, f, rgb in parts:
        item = {"name": vis.name, "colour": _hex(rgb), "slot": slots.index(vis.link), "vertices": _b64(v, "f4"),
                "faces": _b64(f, "u2" if len(v) < 65536 else "u4"), "index": "u16" if len(v) < 65536 else "u32",
                "flex": -1, "n": 0}
        if vis.link in offsets:
            beam = model.links[vis.link].beam
            item.update(flex=offsets[vis.link], n=beam.n, modes=_b64(mode_fields(beam, v), "f4"))
        out["visuals"].append(item)
        out["triangles"] += len(f)
        box = np.array(np.meshgrid(*zip(v.min(axis=0), v.max(axis=0)), indexing="ij")).reshape(3, -1).T
        pose = poses[:, item["slot"]]
        corners.append(np.einsum("fab,cb->fca", pose[:, :, :3], box) + pose[:, None, :, 3])
    out["corners"] = np.concatenate(corners, axis=1)
    return out
