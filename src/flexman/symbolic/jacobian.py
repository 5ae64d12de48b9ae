"""Symbolic geometric Jacobian of a point of a link (rows: linear, angular velocity), traced
from the same frame derivatives as :func:`flexman.dynamics.api.jacobian`."""
from __future__ import annotations

import numpy as np

from ..dynamics import lagrange4 as l4
from ..dynamics.structure import build
from .mimic import full_coordinates, reduce_vector
from .program import Program
from .recursions import coordinate_inputs
from .tracer import Tape


def jacobian_program(eom, link=-1, point=None) -> Program:
    robot = eom.robot
    tape = Tape(fold=eom.options["fold"], cse=eom.options["cse"])
    x = coordinate_inputs(tape, robot.nq, robot.n_joints)
    traced, q = full_coordinates(robot, x["q"])  # mimic joints: J_full(G q + c) G
    if eom.parameters == "symbolic":
        from .params import symbolic_model

        model, pvals, _ = symbolic_model(traced, tape)
    else:
        model, pvals = build(traced), {}
    J = l4.point_jacobian(model, q, link % len(robot.links), point)
    if traced is not robot:
        G = robot.mimic_map()[0]
        J = np.array([reduce_vector(G, row) for row in J], dtype=object)
    inputs = {"q": [f"q{k + 1}" for k in range(robot.nq)], "p": list(pvals)}
    return Program.from_tape("jacobian", tape, inputs, {"J": J}, doc={"J": "geometric Jacobian [v; w], 6 x nq"})
