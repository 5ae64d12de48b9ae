"""Symbolic geometric Jacobian of a point of a link (rows: linear, angular velocity), traced
from the same frame derivatives as :func:`flexman.dynamics.api.jacobian`."""
from __future__ import annotations

from ..dynamics import lagrange4 as l4
from ..dynamics.structure import build
from .program import Program
from .recursions import coordinate_inputs
from .tracer import Tape


def jacobian_program(eom, link=-1, point=None) -> Program:
    robot = eom.robot
    tape = Tape(fold=eom.options["fold"], cse=eom.options["cse"])
    x = coordinate_inputs(tape, robot.nq, robot.n_joints)
    if eom.parameters == "symbolic":
        from .params import symbolic_model

        model, pvals, _ = symbolic_model(robot, tape)
    else:
        model, pvals = build(robot), {}
    J = l4.point_jacobian(model, x["q"], link % robot.n_joints, point)
    inputs = {"q": [f"q{k + 1}" for k in range(robot.nq)], "p": list(pvals)}
    return Program.from_tape("jacobian", tape, inputs, {"J": J}, doc={"J": "geometric Jacobian [v; w], 6 x nq"})
