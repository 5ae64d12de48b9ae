"""A robot's sensors as one program ``y(q, qd, qdd, p)``: the true value of every channel (no
noise, bias or quantisation: what :meth:`flexman.sensors.SensorSet.h` gives), in the parameters
of a symbolic-parameter EOM, for an exported model (the FMU's sensor outputs).

Each kind is traced from the algorithm the numeric path uses, on the same traced model as the
equations (:func:`flexman.symbolic.params.symbolic_model`), so a tuned parameter moves the
readings as it moves the dynamics:

- encoder: the joint coordinate (link side) or the joint's motor coordinate (motor side);
- strain gauge: ``z kappa_y - y kappa_z`` at its station, the curvatures of the beam's assumed
  modes (as :func:`flexman.analysis.strain.curvature`); with the beam length ``lb`` a parameter
  the shapes stretch with the beam (``phi_k(x) = L**s_k psi_k(x / L)``), so the gauge's row scales
  as ``L**(s_k - 2)`` at the same fraction of the beam: exact for a gauge at the root, and for
  one elsewhere the gauge moves with the beam's stretch;
- torque: what the joint transmits to its link, its row of the inverse dynamics (Book's
  recursion, ``M qdd + b``) plus an elastic joint's spring and damper torque
  (:func:`flexman.dynamics.motors.transmitted`, in the traced model's motors);
- accelerometer, gyroscope, position: :func:`flexman.dynamics.sensing.frame_readings`.

A robot with mimic joints is traced as its full robot at ``G q + c`` (rates ``G qd``, ``G qdd``);
its torque rows are those of ``G^T tau``.
"""
from __future__ import annotations

import numpy as np

from ..dynamics import lagrange4 as l4
from ..dynamics.motors import transmitted
from ..dynamics.sensing import FRAME_KINDS, frame_readings, sensor_taps
from ..dynamics.structure import build, numeric_model
from .mimic import full_state, reduce_vector
from .program import Program
from .recursions import coordinate_inputs
from .tracer import Tape


def _gauge(traced, sensor, q_full, lb):
    """A strain gauge's reading, linear in the beam's coordinates; ``lb``: the traced beam length
    (None: the model's number)."""
    beam = numeric_model(traced).links[sensor.index].beam
    flex = np.arange(len(q_full))[numeric_model(traced).links[sensor.index].flex]
    _, dth, _ = beam.kinematics.fields(sensor.station / beam.length)  # (n, 1, 3) curvature per coordinate
    y, z = sensor.offset
    coef = z * dth[:, 0, 1] - y * dth[:, 0, 2]
    scale = np.concatenate([np.asarray(ss.scale, int) for ss in beam.shapes.values()])
    power = [s - (1 if d == "torsion" else 2) for s, d in zip(scale, beam.directions)]  # curvature ~ L**power
    out = 0.0
    for k, c in enumerate(coef):
        if c != 0.0:
            factor = 1.0 if lb is None or power[k] == 0 else (lb / beam.length) ** power[k]
            out = out + float(c) * factor * q_full[flex[k]]
    return out


def sensor_program(eom, sensors, name="sensors") -> Program:
    """The program of the channels of ``sensors`` (:class:`flexman.model.sensors.Sensor`, checked
    against ``eom.robot``), output ``y`` (one per channel, in order), inputs q, qd, qdd and the
    parameter vector ``p`` of ``eom`` (its names, in its order; numeric EOMs have none)."""
    robot = eom.robot
    tape = Tape(fold=eom.options["fold"], cse=eom.options["cse"])
    x = coordinate_inputs(tape, robot.nq, robot.n_joints)
    q, qd, qdd = x["q"], x["qd"], x["qdd"]
    traced, q_full, qd_full, qdd_full = full_state(robot, q, qd, qdd)
    G = None if traced is robot else robot.mimic_map()[0]
    if eom.parameters == "symbolic":
        from .params import symbolic_model

        model, pvals, _ = symbolic_model(traced, tape, second_order=True)
        missing = set(pvals) - set(eom.param_values)
        if missing:  # the same robot gives the same names; anything else is a bug
            raise RuntimeError(f"sensor_program: parameters {sorted(missing)} not in the equations' vector")
        lb = lambda i: tape.input(f"lb{i + 1}") if f"lb{i + 1}" in pvals else None
    else:
        model, lb = build(traced), (lambda i: None)
    kinds = [s.type for s in sensors]
    taps = sensor_taps(robot, sensors)
    frames = iter(frame_readings(model, q_full, qd_full, qdd_full, taps) if taps else ())
    tau = None
    if "torque" in kinds:
        tau = l4.inverse_dynamics(model, q_full, qd_full, qdd_full)
        tau = tau if G is None else reduce_vector(G, tau)
    values = []
    for s in sensors:
        if s.type == "encoder":
            values.append(q[robot.actuated[s.index] if s.side == "motor" else s.index])
        elif s.type == "strain_gauge":
            values.append(_gauge(traced, s, q_full, lb(s.index)))
        elif s.type == "torque":
            values.append(transmitted(model.motors, s.index, tau[s.index], q_full, qd_full))
        elif s.type in FRAME_KINDS:
            values += list(next(frames))
        else:
            raise ValueError(f"sensors: unknown sensor type {s.type!r:.40}")
    y = np.array(values + [None], dtype=object)[:-1]
    inputs = {g: [f"{g}{k + 1}" for k in range(robot.nq)] for g in ("q", "qd", "qdd")}
    inputs["p"] = list(eom.param_values)
    return Program.from_tape(name, tape, inputs, {"y": y},
                             doc={"y": "the sensors' channels without noise, bias or quantisation"})
