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


#: the outputs of each frame of ``frames``: its origin, then its rotation matrix row by row
FRAME_OUTPUTS = ("x", "y", "z", "r11", "r12", "r13", "r21", "r22", "r23", "r31", "r32", "r33")


def output_frames(robot, frames) -> list:
    """The frames (names of links or named frames, e.g. a URDF's ``tool0``) an exported model
    reports, checked: distinct, each the robot's and a plain name (it prefixes output names)."""
    from ..model import inputs
    from ..model.names import is_identifier

    out = []
    for name in frames or ():
        inputs.frame_name(robot, name, "output frame")
        if not is_identifier(name) or name == "ee":
            raise ValueError(f"output frame: {name!r} cannot prefix output names; rename it (letters, digits, _)")
        if name in out:
            raise ValueError(f"output frame: {name!r} is given twice; give each frame once")
        out.append(name)
    return out


def position_names(robot, frames=()) -> list:
    """Names of the outputs of :func:`position_program`, in order: the end effector's
    position ``ee_x, ee_y, ee_z`` (origin of the robot's end effector, ``robot.end_effector``,
    else of the last link's distal frame; base frame, m), then per flexible link i ``tip<i>_dx,
    tip<i>_dy, tip<i>_dz``: its distal frame origin minus where it would be with the same joint
    values and no deflection (``analysis.tip_offset``), then for each of ``frames`` its placement
    in the base frame: ``<frame>_x, _y, _z`` (m) and its rotation ``<frame>_r11`` ... ``_r33``."""
    out = ["ee_x", "ee_y", "ee_z"]
    for i, link in enumerate(robot.links):
        if link.is_flexible:
            out += [f"tip{i + 1}_{c}" for c in ("dx", "dy", "dz")]
    for name in output_frames(robot, frames):
        out += [f"{name}_{c}" for c in FRAME_OUTPUTS]
    return out


def _placement(frames, robot, name):
    """The base-frame placement (4x4, traced) of a link or named frame from the links' frames."""
    from ..model import inputs

    i, T = inputs.link_frame(robot, name)
    W = np.eye(4) if i < 0 else frames[i]
    return W if T is None else W @ T


def position_program(eom, frames=()) -> Program:
    """The program ``y(q, p)`` of :func:`position_names` for the robot of ``eom``, with the
    parameter vector of ``eom`` (its names, in its order; numeric EOMs have none)."""
    from ..model import inputs

    robot = eom.robot
    frames = output_frames(robot, frames)
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
    l4_frames = l4.frames(model, q_full)
    undeformed = l4.frames(model, rigid)
    at = robot.full if getattr(robot, "mimic", None) else robot  # (the traced frames are the full robot's)
    placed = {}
    for name in [inputs.end_effector(robot)] + frames:
        placed[name] = _placement(l4_frames, at, name)
    values = list(placed[inputs.end_effector(robot)][:3, 3])
    for i, link in enumerate(robot.links):
        if link.is_flexible:
            values += [l4_frames[i][k, 3] - undeformed[i][k, 3] for k in range(3)]
    for name in frames:
        W = placed[name]
        values += [W[k, 3] for k in range(3)] + [W[r, c] for r in range(3) for c in range(3)]
    out = np.array(values + [None], dtype=object)[:-1]
    inputs = {"q": [f"q{k + 1}" for k in range(robot.nq)], "p": list(eom.param_values)}
    return Program.from_tape("position", tape, inputs, {"y": out},
                             doc={"y": "end-effector position, then each flexible link's tip deflection (base frame, m), "
                                     "then each output frame's position and rotation"})
