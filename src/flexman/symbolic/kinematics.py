"""Where the arm is, as a program: the end-effector position and each flexible link's tip
deflection, traced from the same frames as :func:`flexman.dynamics.api.frame`.

An exported model (an FMU, :mod:`flexman.codegen.fmu`) reports these beside its coordinates,
so a tool that imports it sees the tool point and the deflections without knowing the model.
"""
from __future__ import annotations

import numpy as np

from ..dynamics import lagrange4 as l4
from ..dynamics.structure import build
from .mimic import full_coordinates
from .program import Program
from .recursions import coordinate_inputs
from .tracer import Tape


def position_names(robot) -> list:
    """Names of the outputs of :func:`position_program`, in order: the end effector's
    position ``ee_x, ee_y, ee_z`` (origin of the last link's distal frame, base frame, m),
    then per flexible link i ``tip<i>_dx, tip<i>_dy, tip<i>_dz``: its distal frame origin minus
    where it would be with the same joint values and no deflection (``analysis.tip_offset``)."""
    out = ["ee_x", "ee_y", "ee_z"]
    for i, link in enumerate(robot.links):
        if link.is_flexible:
            out += [f"tip{i + 1}_{c}" for c in ("dx", "dy", "dz")]
    return out


def position_program(eom) -> Program:
    """The program ``y(q, p)`` of :func:`position_names` for the robot of ``eom``, with the
    parameter vector of ``eom`` (its names, in its order; numeric EOMs have none)."""
    robot = eom.robot
    tape = Tape(fold=eom.options["fold"], cse=eom.options["cse"])
    q = coordinate_inputs(tape, robot.nq, robot.n_joints)["q"]
    rigid = np.array(list(q) + [None], dtype=object)[:-1]
    rigid[robot.flex_index] = 0.0
    traced, q_full = full_coordinates(robot, q)  # mimic joints: the full robot at G q + c
    rigid = full_coordinates(robot, rigid)[1]
    if eom.parameters == "symbolic":
        from .params import symbolic_model

        model, pvals, _ = symbolic_model(traced, tape)
        missing = set(pvals) - set(eom.param_values)
        if missing:  # the same robot gives the same names; anything else is a bug
            raise RuntimeError(f"position_program: parameters {sorted(missing)} not in the equations' vector")
    else:
        model = build(traced)
    frames = l4.frames(model, q_full)
    undeformed = l4.frames(model, rigid)
    values = list(frames[-1][:3, 3])
    for i, link in enumerate(robot.links):
        if link.is_flexible:
            values += [frames[i][k, 3] - undeformed[i][k, 3] for k in range(3)]
    out = np.array(values + [None], dtype=object)[:-1]
    inputs = {"q": [f"q{k + 1}" for k in range(robot.nq)], "p": list(eom.param_values)}
    return Program.from_tape("position", tape, inputs, {"y": out},
                             doc={"y": "end-effector position, then each flexible link's tip deflection (base frame, m)"})
