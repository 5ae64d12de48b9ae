"""The arm as lines to draw: rigid link segments, beam centre lines, joints, the tip and the
named frames (a URDF's ``tool0``...).

Positions come from the dynamics' own forward recursion (the frames ``W0``, ``Wh``, ``W`` of
every link, deflection included) and from each beam's centre line in its undeformed link
frame, so the picture is the model. Deflections can be drawn magnified: the flexible
coordinates are scaled by ``magnify`` before the kinematics, so every downstream link moves
with the magnified tip rotations too.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..dynamics.lagrange4 import forward
from ..dynamics.structure import numeric_model
from ..model import inputs

STATIONS = 21  # points along each beam: enough for a smooth curve of the first few modes


@dataclass
class ArmLines:
    """Points (..., P, 3) of each part; NaN rows separate the pieces of one part."""

    rigid: np.ndarray  # joint -> DH elbow -> end of the rigid part of each link
    beams: np.ndarray  # deflected centre lines
    joints: np.ndarray  # joint origins
    tip: np.ndarray  # the end effector's origin (the robot's end_effector frame, else the last link's distal frame)
    frames: np.ndarray = None  # (..., F, 4, 4) the named frames (robot.frames, in their order), base frame


def _origin(W):
    return W[..., :3, 3]


def _elbow(link, W0, q_i, convention):
    """The corner of a DH link: standard A = Rz Tz(d) Tx(a) Rx, corner after Tz(d) (on the previous
    z axis); modified A = Rx Tx(a) Rz Tz(d), corner after Tx(a) (on the previous x axis)."""
    if convention == "standard":
        along = link.d + (q_i if link.joint == "prismatic" else 0.0)
        return _origin(W0) + W0[..., :3, 2] * np.asarray(along)[..., None]
    return _origin(W0) + W0[..., :3, 0] * link.a


def _gap(batch):
    return np.full(batch + (1, 3), np.nan)


def link_records(robot, q, magnify=1.0):
    """(robot drawn, its q with flexible coordinates x ``magnify``, numeric model, the forward
    recursion's records per link) at configurations q (..., nq). A robot with mimic joints
    (rigid) is drawn link by link at ``q_full = G q + c``."""
    q = np.array(q, dtype=float)
    if getattr(robot, "mimic", None):
        G, c = robot.mimic_map()
        q, robot = q @ G.T + c, robot.full
    q[..., robot.flex_index] *= magnify
    zero = np.zeros_like(q)
    model = numeric_model(robot)
    return robot, q, model, forward(model, q, zero, zero, gravity=False)


def arm_lines(robot, q, magnify=1.0, stations=STATIONS) -> ArmLines:
    """The lines of the arm at configurations q (..., nq), flexible coordinates x ``magnify``."""
    robot, q, model, recs = link_records(robot, q, magnify)
    batch = q.shape[:-1]
    eta = np.linspace(0.0, 1.0, stations)
    rigid, beams, joints = [], [], []
    for i, (link, lk, rec) in enumerate(zip(robot.links, model.links, recs)):
        W0, Wh = rec["W0"], rec["Wh"]
        joints.append(_origin(W0)[..., None, :])
        piece = [_origin(W0)[..., None, :]]
        sliding = lk.beam is not None and lk.beam.sliding
        if not sliding:  # a sliding beam passes through its hub at the joint: no rigid part
            piece.append(_elbow(link, W0, q[..., i], robot.dh)[..., None, :])
        if lk.beam is None:
            piece.append(_origin(Wh)[..., None, :])
        else:
            line = lk.beam.centreline(rec["p"], eta)
            world = np.einsum("...ab,...gb->...ga", Wh, line)[..., :3]
            if not sliding:
                piece.append(world[..., :1, :])  # the rigid part ends at the beam's root
            beams += [world, _gap(batch)]
        rigid += piece + [_gap(batch)]
    at, T = inputs.link_frame(robot, inputs.end_effector(robot))
    W = np.eye(4) if at < 0 else recs[at]["W"]
    tip = np.broadcast_to(_origin(W if T is None else W @ T), batch + (3,))[..., None, :]
    empty = np.zeros(batch + (0, 3))
    cat = lambda parts: np.concatenate(parts, axis=-2) if parts else empty
    named = [(np.eye(4) if i < 0 else recs[i]["W"]) @ T for i, T in (robot.frames or {}).values()]
    named = np.stack([np.broadcast_to(W, batch + (4, 4)) for W in named], axis=-3) if named else np.zeros(batch + (0, 4, 4))
    return ArmLines(rigid=cat(rigid), beams=cat(beams), joints=cat(joints), tip=tip, frames=named)


def triads(frames, size) -> tuple:
    """(origins (..., F, 3), [x, y, z] axis segments (..., 3F, 3) each: origin, origin + size * axis,
    a NaN gap) of frames (..., F, 4, 4): small triads to draw where each named frame is."""
    origins = frames[..., :3, 3]
    axes = []
    for a in range(3):
        ends = origins + size * frames[..., :3, a]
        gap = np.full(origins.shape, np.nan)
        axes.append(np.stack([origins, ends, gap], axis=-2).reshape(origins.shape[:-2] + (-1, 3)))
    return origins, axes


def reach(robot) -> float:
    """A length scale of the arm: the sum of its DH lengths and beam lengths (m)."""
    total = sum(abs(l.a) + abs(l.d) + (l.beam.length if l.beam is not None else 0.0) for l in robot.links)
    return total if total > 0 else 1.0
