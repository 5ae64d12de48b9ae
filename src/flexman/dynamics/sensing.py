"""What frame sensors read, from the frame recursion of the dynamics: one function for floats,
batches and traced symbols (so the numeric readings, the traced program and its generated C are
the same algorithm).

A frame sensor is a *tap*: its kind, the link whose distal frame carries it (-1: the base) and the
fixed 4x4 placement ``T`` of the sensor in that frame (a named frame's offset and the sensor's
point). The recursion :func:`flexman.dynamics.lagrange4.forward`, with second-order beam
kinematics (as ``robot.frame(order=2)`` and ``robot.jacobian(order=2)``) and gravity entering as
the base acceleration ``-g``, gives each frame ``W`` and its exact time derivatives ``W_dot``,
``W_ddot`` at (q, qd, qdd). With ``h = T e_4`` the sensor's point and ``R = W_rot T_rot`` its axes:

- position: ``W h`` (base frame);
- gyroscope: ``R^T w`` with ``skew(w)`` the skew part of ``W_dot_rot W_rot^T``, i.e. ``R^T J_w qd``;
- accelerometer: ``R^T (a - g) = R^T W_ddot h``, where ``a = J qdd + J_dot qd`` exactly: ``W_ddot`` is
  the second time derivative of the frame, no difference along qd is taken.
"""
from __future__ import annotations

import numpy as np

from . import lagrange4 as l4
from . import ops

#: the sensors whose readings come from the frames, and their channels
FRAME_KINDS = ("accelerometer", "gyroscope", "position")


def sensor_taps(robot, sensors) -> list:
    """The frame sensors among ``sensors`` (:class:`flexman.model.sensors.Sensor`) as taps, in
    order: (kind, link, the sensor's 4x4 placement in that link's distal frame: a named frame's
    offset, then the sensor's point)."""
    from ..model.inputs import link_frame

    taps = []
    for s in sensors:
        if s.type in FRAME_KINDS:
            i, T = link_frame(robot, s.where if isinstance(s.where, str) else s.index)
            P = np.eye(4)
            if s.point is not None:
                P[:3, 3] = s.point
            taps.append((s.type, i, P if T is None else np.asarray(T, dtype=float) @ P))
    return taps


def _tap_frames(model, recs, link, like):
    """(W, W_dot, W_ddot) of a link's distal frame; the base's for link -1 (identity, at rest,
    base acceleration -g)."""
    if link >= 0:
        rec = recs[link]
        return rec["W"], rec["Wd"], rec["Wdd"]
    W = np.eye(4)
    Wdd = np.zeros((4, 4), dtype=like.dtype if ops.is_symbolic(like) else float)
    Wdd[:3, 3] = -np.asarray(model.gravity)
    return W, np.zeros((4, 4)), Wdd


def frame_readings(model, q, qd, qdd, taps) -> list:
    """The readings (..., 3) of each tap ``(kind, link, T)`` at (q, qd, qdd) of ``model`` (a
    numeric or traced model of the recursions; q, qd, qdd float batches or traced arrays)."""
    recs = l4.forward(model, q, qd, qdd, gravity=True, second_order=True)
    out = []
    for kind, link, T in taps:
        T = np.asarray(T, dtype=float)
        W, Wd, Wdd = _tap_frames(model, recs, link, q)
        h = T[:, 3]
        if kind == "position":
            out.append((W @ h)[..., :3])
            continue
        Rt = ops.transpose(W[..., :3, :3] @ T[:3, :3])
        if kind == "gyroscope":
            Om = Wd[..., :3, :3] @ ops.transpose(W[..., :3, :3])
            w = 0.5 * np.stack([Om[..., 2, 1] - Om[..., 1, 2], Om[..., 0, 2] - Om[..., 2, 0],
                                Om[..., 1, 0] - Om[..., 0, 1]], axis=-1)
        elif kind == "accelerometer":
            w = (Wdd @ h)[..., :3]
        else:
            raise ValueError(f"kind: {kind!r} is not a frame sensor; use one of {', '.join(FRAME_KINDS)}")
        out.append((Rt @ w[..., None])[..., 0])
    return out
