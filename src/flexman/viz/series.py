"""The time series a simulation is shown with, computed once for the PNG plots and the HTML report.

Each panel is one quantity against time: joint coordinates (with the reference, if a
controller tracked one), joint velocities, torques, energies, flexible coordinates, tip
deflections, joint errors and the end-effector error; for a run with sensors one panel per
channel (its readings as dots at their samples over the true value), and under an estimator
the estimate's error at the controller's samples (joints and motors, flexible coordinates, and
the tip deflections estimated against true).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..analysis.tip import tip_offset


@dataclass
class Panel:
    key: str  # stable name (used as an HTML id)
    title: str
    ylabel: str
    labels: list
    y: np.ndarray  # (N, k)
    reference: np.ndarray | None = None  # (N, k) dashed beside y, e.g. the desired joints
    t: np.ndarray | None = None  # the panel's own sample times (a sensor's, the controller's); None: the run's
    dots: bool = False  # y drawn as dots at its samples, the reference as a line beneath (readings over truth)
    reference_label: str = "desired"  # what the reference is, in the legend


def reference(result, robot):
    """The joint reference (N, n_joints) the run's controller tracked, or None."""
    traj = getattr(getattr(result, "controller", None), "traj", None)
    if traj is None or robot is None:
        return None
    t = np.asarray(result.t, dtype=float)
    return np.asarray(traj(t)[0], dtype=float).reshape(len(t), robot.n_joints)


def tip_deflections(robot, q):
    """(mm (N, k), labels): each flexible link's tip against the undeformed arm."""
    cols, labels = [], []
    for i, link in enumerate(robot.links):
        if link.is_flexible:
            cols.append(np.linalg.norm(tip_offset(robot, q, link=i), axis=-1))
            labels.append(f"tip {i + 1}")
    return 1e3 * np.stack(cols, axis=-1), labels


def panels(result, robot=None) -> list:
    """The panels of a run, in display order (see the module docstring)."""
    robot = robot if robot is not None else getattr(result, "robot", None)
    t = np.asarray(result.t, dtype=float)
    q = np.asarray(result.q, dtype=float).reshape(len(t), -1)
    qd = np.asarray(result.qd, dtype=float).reshape(len(t), -1)
    nj = robot.n_joints if robot is not None else q.shape[1]
    names = list(getattr(result, "coordinate_names", None) or (
        robot.coordinate_names if robot is not None else [f"q{i + 1}" for i in range(q.shape[1])]))
    q_ref = reference(result, robot)
    out = [Panel("joints", "Joint coordinates", "joint [rad, m]", names[:nj], q[:, :nj], q_ref),
           Panel("velocities", "Joint velocities", "velocity [/s]", names[:nj], qd[:, :nj])]
    tau = getattr(result, "tau", None)
    if tau is not None and np.size(tau):
        out.append(Panel("torques", "Joint torques", "torque [N m, N]", [f"tau_{n}" for n in names[:nj]],
                         np.asarray(tau, float).reshape(len(t), -1)))
    energy = getattr(result, "energy", None)
    if energy is not None and np.size(energy):
        y, labels = np.asarray(energy, float).reshape(len(t), -1), ["energy"]
        if robot is not None:
            kinetic = np.asarray(robot.kinetic_energy(q, qd), float).reshape(len(t), 1)
            potential = np.asarray(robot.potential_energy(q), float).reshape(len(t), 1)
            y, labels = np.hstack([kinetic, potential, y[:, :1]]), ["kinetic", "potential", "total"]
        out.append(Panel("energy", "Energy", "energy [J]", labels, y))
    motors = getattr(robot, "motor_links", ()) if robot is not None else ()
    flexible = slice(nj, q.shape[1] - len(motors))
    if q.shape[1] > nj + len(motors):
        out.append(Panel("flexible", "Flexible coordinates", "flexible coord.", names[flexible], q[:, flexible]))
        if robot is not None:
            y, labels = tip_deflections(robot, q)
            out.append(Panel("tips", "Tip deflections", "tip deflection [mm]", labels, y))
    if motors:  # elastic joints: how far each motor leads its link (the spring's windup, theta - q)
        m = robot.motor_index
        out.append(Panel("windup", "Elastic joints: spring windup", "theta - q [rad, m]",
                         [f"{n} - {names[i]}" for n, i in zip(names[m], motors)], q[:, m] - q[:, list(motors)]))
    out += sensor_panels(result) + estimate_panels(result, robot, q, names)
    if q_ref is not None:
        out.append(Panel("joint_errors", "Joint errors", "joint error [rad, m]", [f"e_{n}" for n in names[:nj]],
                         q[:, :nj] - q_ref))
        ee = 1e3 * np.linalg.norm(tip_offset(robot, q, q_ref), axis=-1)
        out.append(Panel("ee_error", "End-effector error", "end-effector error [mm]", ["|p - p_d|"], ee[:, None]))
    return out


def sensor_panels(result) -> list:
    """One panel per sensor channel of ``result.measurements``: the readings (dots at the
    sensor's samples) over the true value (a line through the same samples)."""
    meas = getattr(result, "measurements", None) or {}
    return [Panel(f"sensor-{k}", f"Sensor {name}: reading and true value", name, [name],
                  np.asarray(ch.y, float).reshape(-1, 1), np.asarray(ch.true, float).reshape(-1, 1),
                  t=np.asarray(ch.t, float), dots=True, reference_label="true")
            for k, (name, ch) in enumerate(meas.items())]


def estimate_panels(result, robot, q, names) -> list:
    """The estimator's error at its samples (``result.estimate``, a sampled controller's): joints
    and motors, the flexible coordinates, and the tip deflections estimated (dots) against true.
    None without an estimator (the law then reads the true state)."""
    est = getattr(result, "estimate", None)
    if robot is None or not est or getattr(getattr(result, "controller", None), "estimator", None) is None:
        return []
    te, xhat = np.asarray(est["t"], float), np.asarray(est["x"], float)
    t, nq, nj = np.asarray(result.t, dtype=float), robot.nq, robot.n_joints
    keep = te <= t[-1]
    te, qhat = te[keep], xhat[keep, :nq]
    if not len(te):
        return []
    true = np.column_stack([np.interp(te, t, q[:, k]) for k in range(nq)])  # the samples lie on the output grid
    err = qhat - true
    rigid = list(range(nj)) + list(range(robot.motor_index.start, nq))
    out = [Panel("estimate_joints", "Estimation error: joints", "estimate - true [rad, m]",
                 [f"{names[i]} error" for i in rigid], err[:, rigid], t=te)]
    if robot.nf:
        flexible = slice(nj, nj + robot.nf)
        out.append(Panel("estimate_flexible", "Estimation error: flexible coordinates", "estimate - true",
                         [f"{n} error" for n in names[flexible]], err[:, flexible], t=te))
        (y_hat, labels), (y_true, _) = tip_deflections(robot, qhat), tip_deflections(robot, true)
        out.append(Panel("estimate_tips", "Tip deflection: estimated (dots) and true", "tip deflection [mm]",
                         [f"{n} estimated" for n in labels], y_hat, y_true, t=te, dots=True, reference_label="true"))
    return out
