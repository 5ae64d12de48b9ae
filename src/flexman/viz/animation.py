"""Frames of the 3D animation of a simulated arm: which samples, how much magnification,
and the arm's lines at each frame (deformed and, as a ghost, undeformed), ready for JSON."""
from __future__ import annotations

import math

import numpy as np

from ..analysis.tip import tip_offset
from .arm import arm_lines, reach, triads
from .meshes import mesh_scene

MAX_FRAMES = 240  # enough for a smooth replay, small enough for a light page
TRIAD = 0.04  # length of a named frame's axes, as a fraction of the view's side
SHOWN_DEFLECTION = 0.08  # auto magnification: the largest tip deflection drawn as this fraction of the reach


def frame_indices(n_samples: int, max_frames: int = MAX_FRAMES) -> np.ndarray:
    """Evenly spaced sample indices, first and last included."""
    if n_samples <= max_frames:
        return np.arange(n_samples)
    return np.unique(np.round(np.linspace(0, n_samples - 1, max_frames)).astype(int))


def max_tip_deflection(robot, q) -> float:
    """Largest distance of any flexible link's tip from the undeformed arm's (m)."""
    worst = 0.0
    for i, link in enumerate(robot.links):
        if link.is_flexible:
            worst = max(worst, float(np.nanmax(np.linalg.norm(tip_offset(robot, q, link=i), axis=-1))))
    return worst


def auto_magnification(robot, q) -> float:
    """A round factor (1, 2, 5, 10, 20, ...) that makes the largest tip deflection visible:
    about SHOWN_DEFLECTION of the arm's reach; 1 when deflections are already that large."""
    deflection = max_tip_deflection(robot, q)
    if not deflection > 0:
        return 1.0
    wanted = SHOWN_DEFLECTION * reach(robot) / deflection
    if wanted <= 1:
        return 1.0
    decade = 10 ** math.floor(math.log10(wanted))
    return float(max(m * decade for m in (1, 2, 5) if m * decade <= wanted))


def _rounded(points, digits=5):
    """Nested lists for JSON with NaN as None (a gap in a Plotly line), rounded to save space."""
    arr = np.round(np.asarray(points, dtype=float), digits)
    return [[None if not np.isfinite(v) else float(v) for v in axis] for axis in np.moveaxis(arr, -1, 0)]


def animation_data(robot, t, q, magnify=None, max_frames=MAX_FRAMES, meshes=True) -> dict:
    """Per frame: time and x/y/z lists of the rigid segments, beams, joints, tip and the
    undeformed ghost (and, when magnified, the same parts at true scale as ``true_*``); with named
    frames (``robot.frames``: a URDF's ``tool0``...) their origins (``named``) and small triads
    (``frame_x``, ``frame_y``, ``frame_z``: a segment along each axis), named in ``frame_names``;
    plus the magnification and a cube that holds every frame. With ``meshes`` and a robot that
    has visuals (a URDF's meshes) their packed data under "meshes" (:func:`.meshes.mesh_scene`)."""
    t = np.asarray(t, dtype=float)
    q = np.asarray(q, dtype=float).reshape(len(t), -1)
    idx = frame_indices(len(t), max_frames)
    magnify = auto_magnification(robot, q) if magnify is None else float(magnify)
    if not (np.isfinite(magnify) and magnify >= 0):
        raise ValueError(f"magnify: must be a finite number >= 0 (got {magnify})")
    deformed = arm_lines(robot, q[idx], magnify)
    ghost = arm_lines(robot, q[idx], 0.0)
    parts = {"rigid": deformed.rigid, "beams": deformed.beams, "joints": deformed.joints, "tip": deformed.tip,
             "ghost_rigid": ghost.rigid, "ghost_beams": ghost.beams}
    if magnify != 1.0 and robot.nf:  # the true scale too, for the page's scale switch
        true = arm_lines(robot, q[idx], 1.0)
        parts.update(true_rigid=true.rigid, true_beams=true.beams, true_joints=true.joints, true_tip=true.tip)
    if deformed.frames.shape[-3]:
        parts["named"] = deformed.frames[..., :3, 3]
    meshes = mesh_scene(robot, q[idx], magnify, "true_rigid" in parts) if meshes else None
    boxes = [meshes.pop("corners").reshape(-1, 3)] if meshes else []
    every = np.concatenate([p.reshape(-1, 3) for p in parts.values() if p.size] + boxes, axis=0)
    every = every[np.all(np.isfinite(every), axis=1)]
    lo, hi = (every.min(axis=0), every.max(axis=0)) if every.size else (-np.ones(3), np.ones(3))
    centre, half = 0.5 * (lo + hi), 0.5 * max(float((hi - lo).max()), 1e-3) * 1.1
    size = TRIAD * 2.0 * half  # triads a few percent of the view, whatever the arm's size
    for prefix, lines in (("", deformed), ("true_", true if "true_rigid" in parts else None)):
        if lines is not None and lines.frames.shape[-3]:
            parts[prefix + "named"], (parts[prefix + "frame_x"], parts[prefix + "frame_y"],
                                      parts[prefix + "frame_z"]) = triads(lines.frames, size)
    frames = [{"t": float(t[k]), **{name: _rounded(p[j]) for name, p in parts.items()}}
              for j, k in enumerate(idx)]
    out = {"magnify": magnify, "frames": frames, "frame_names": list(robot.frames or {}), "triad_size": size,
           "range": [[float(c - half), float(c + half)] for c in centre],
           "max_tip_deflection": max_tip_deflection(robot, q)}
    if meshes:
        out["meshes"] = meshes
    return out
