"""Symbolic geometric Jacobian of a point of a link (rows: linear, angular velocity), traced
from the same frame derivatives as :func:`flexman.dynamics.api.jacobian`."""
from __future__ import annotations

import numpy as np

from ..dynamics import lagrange4 as l4
from ..dynamics.structure import build
from .program import Program
from .trace import coordinate_inputs
from .tracer import Tape


def jacobian_values(model, q, link, point=None):
    Ws, dWs = l4.frame_derivatives(model, q)
    W, dW = Ws[link], dWs[link]
    h = np.array([0.0, 0.0, 0.0, 1.0])
    if point is not None:
        h[:3] = np.asarray(point, dtype=float)
    lin = dW @ h  # (nq, 4)
    Om = dW[..., :3, :3] @ np.swapaxes(W[None, :3, :3], -1, -2)  # skew(omega_k) = dR/dq_k R^T
    ang = 0.5 * np.stack([Om[..., 2, 1] - Om[..., 1, 2], Om[..., 0, 2] - Om[..., 2, 0], Om[..., 1, 0] - Om[..., 0, 1]], axis=-1)
    return np.swapaxes(np.concatenate([lin[..., :3], ang], axis=-1), -1, -2)


def jacobian_program(eom, link=-1, point=None) -> Program:
    robot = eom.robot
    tape = Tape(**eom.options)
    x = coordinate_inputs(tape, robot.nq, robot.n_joints)
    if eom.parameters == "symbolic":
        from .params import symbolic_model

        model, pvals, _ = symbolic_model(robot, tape)
    else:
        model, pvals = build(robot), {}
    J = jacobian_values(model, x["q"], link % robot.n_joints, point)
    inputs = {"q": [f"q{k + 1}" for k in range(robot.nq)], "p": list(pvals)}
    return Program.from_tape("jacobian", tape, inputs, {"J": J}, doc={"J": "geometric Jacobian [v; w], 6 x nq"})
