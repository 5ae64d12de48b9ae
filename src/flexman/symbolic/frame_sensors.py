"""The frame sensors' readings as a program: ``y = h(q, qd, qdd)`` of a robot's accelerometers,
gyroscopes and position sensors, traced from :func:`flexman.dynamics.sensing.frame_readings` (the
same frame recursion, with second-order beam kinematics), and its exact Jacobians ``dy/dq``,
``dy/dqd``, ``dy/dqdd`` by forward differentiation of the tape (:mod:`.tapediff`).

The robot's numbers are constants of the program (its inputs are q, qd, qdd only): it reads what
:meth:`flexman.sensors.SensorSet.h` reads, for the loops and filters that evaluate it compiled.
A robot with mimic joints is traced as its full robot at ``G q + c`` (rates ``G qd``, ``G qdd``),
so the Jacobians are those in the reduced coordinates.
"""
from __future__ import annotations

import numpy as np

from ..dynamics.sensing import frame_readings
from ..dynamics.structure import numeric_model
from .mimic import full_state
from .program import Program
from .recursions import coordinate_inputs
from .tapediff import jacobian
from .tracer import Tape

#: the Jacobian output groups, in the order of the inputs they differentiate by
JACOBIANS = {"Hq": "q", "Hqd": "qd", "Hqdd": "qdd"}


def frame_sensor_program(robot, taps, jacobians=False, name="frame_sensors") -> Program:
    """The program of the taps' readings (``y``: 3 per tap, in order); ``jacobians=True`` adds
    ``Hq``, ``Hqd``, ``Hqdd`` (each 3 taps x nq) differentiated on the tape."""
    nq = robot.nq
    tape = Tape()
    x = coordinate_inputs(tape, nq, robot.n_joints)
    traced, q, qd, qdd = full_state(robot, x["q"], x["qd"], x["qdd"])
    readings = frame_readings(numeric_model(traced), q, qd, qdd, taps)
    y = np.array([v for r in readings for v in np.ravel(r)] + [None], dtype=object)[:-1]
    outputs = {"y": y}
    doc = {"y": "the frame sensors' readings (3 per sensor: specific force, angular rate or position)"}
    if jacobians:
        for group, wrt in JACOBIANS.items():
            names = [f"{wrt}{k + 1}" for k in range(nq)]
            outputs[group] = np.array(jacobian(tape, list(y), names), dtype=object).reshape(len(y), nq)
            doc[group] = f"d y / d {wrt} ({len(y)} x {nq})"
    inputs = {g: [f"{g}{k + 1}" for k in range(nq)] for g in ("q", "qd", "qdd")}
    return Program.from_tape(name, tape, inputs, outputs, doc=doc)
