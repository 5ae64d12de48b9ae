"""Motor coordinates of elastic joints (Spong's reduced model), seen from the link side.

An elastic joint ``i`` (a drive with ``stiffness``) has a motor coordinate ``theta`` (the motor
angle divided by the gear ratio) behind a torsional spring k and damper d. Its terms are linear
and enter every formulation the same way, so they are written once here and added by the
recursions (:mod:`.lagrange4`) and the energy-based Lagrangian:

* kinetic energy ``B theta_dot^2 / 2`` (``B = n^2 J``; the rotor's coupling with the link's
  rotation is left out), potential energy ``k (theta - q_i)^2 / 2``;
* generalized forces: ``-s`` on the joint and ``B theta_ddot + s + f`` on the motor, with the
  spring and damper torque ``s = k (theta - q_i) + d (theta_dot - q_i_dot)`` and the motor's
  reflected friction ``f = n^2 b theta_dot + |n| c sign(theta_dot)``.

The complete model (``drive.gyroscopic``; Tomei, Spong) keeps the rotor's coupling with the
rotation of the link that carries it. The rotor turns about the joint's axis ``z`` (fixed in the
carrier's distal frame ``R``, the stator frame ``R P``) at ``n theta_dot`` relative to its
carrier, whose angular velocity along ``z`` is ``w = 1/2 tr(R_dot K R^T)`` with the constant
``K = -P_R [e_z]x P_R^T``. The rotor's kinetic energy gains ``c theta_dot w``, ``c = n J`` (its
inertia moving with the carrier belongs to the carrier's body), and Lagrange's equations of
that term give

* on the motor: ``c/2 tr(R_ddot K R^T)`` (the carrier's angular acceleration along z);
* on every coordinate that moves the carrier: ``tr(dR/dq_k X)`` with ``X = c/2 theta_ddot K R^T +
  c theta_dot K R_dot^T``, a matrix the 4x4 recursion adds to the carrier's ``G`` (the rate of the
  rotor's angular momentum, its gyroscopic torque included).

Both hold exactly for the model's own kinematics (with a flexible carrier its first-order tip
rotation), so M stays symmetric and the energy is conserved.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import ops


@dataclass(frozen=True)
class Motor:
    link: int  # the elastic joint's coordinate (its link's index)
    index: int  # the motor's coordinate
    inertia: float  # B = n^2 J
    stiffness: float
    damping: float
    viscous: float  # n^2 b
    coulomb: float  # |n| c
    coupling: float = 0.0  # c = n J of the complete model (0: the reduced model)
    carrier: int = -1  # the link carrying the rotor (the joint's parent; -1: the base)
    K: np.ndarray | None = None  # -P_R [e_z]x P_R^T: the joint axis in the carrier's distal frame


def motors(robot) -> tuple:
    """The motors of a robot's elastic joints, in coordinate order."""
    from . import dh

    out = []
    start = robot.motor_index.start
    parents = robot.parents
    for k, i in enumerate(robot.motor_links):
        d = robot.links[i].drive
        B, b, c = d.reflected()
        gyro = {}
        if d.gyroscopic and parents[i] >= 0:  # (a rotor on the fixed base has no coupling)
            P = dh.split(robot.links[i], robot.dh)[0][:3, :3]
            z = P[:, 2]
            gyro = dict(coupling=d.gear_ratio * d.rotor_inertia, carrier=parents[i],
                        K=-np.array([[0.0, -z[2], z[1]], [z[2], 0.0, -z[0]], [-z[1], z[0], 0.0]]))
        out.append(Motor(link=i, index=start + k, inertia=B, stiffness=d.stiffness, damping=d.damping,
                         viscous=b, coulomb=c, **gyro))
    return tuple(out)


def _pad(X):
    """A 3x3 block (..., 3, 3) as a 4x4 matrix with zero translation parts."""
    out = ops.zeros_like_batch(X.shape[:-2], (4, 4), X)
    out[..., :3, :3] = X
    return out


def coupled(model):
    """The motors of the complete model (a rotor coupled with its carrier's rotation)."""
    return [m for m in model.motors if m.coupling]


def carrier_rate(m: Motor, R, Rd):
    """The carrier's angular velocity along the rotor's axis, ``1/2 tr(R_dot K R^T)`` (...,)."""
    return 0.5 * ops.trace_product(Rd @ m.K, ops.transpose(R))


def carrier_load(m: Motor, R, Rd, qd, qdd):
    """What the rotor adds to its carrier's ``G`` (4x4, on the carrier's distal frame):
    ``c/2 theta_ddot K R^T + c theta_dot K R_dot^T``."""
    th_d, th_dd = qd[..., m.index, None, None], qdd[..., m.index, None, None]
    X = (0.5 * m.coupling) * th_dd * (m.K @ ops.transpose(R)) + m.coupling * th_d * (m.K @ ops.transpose(Rd))
    return _pad(X)


def motor_load(m: Motor, R, Rdd):
    """What the rotor adds to its motor's row: ``c/2 tr(R_ddot K R^T)``."""
    return (0.5 * m.coupling) * ops.trace_product(Rdd @ m.K, ops.transpose(R))


def inertia_column(m: Motor, R):
    """The motor's mass-matrix column on its carrier's distal frame (a ``G`` for the composite
    bodies' climb): ``c/2 K R^T``."""
    return _pad((0.5 * m.coupling) * (m.K @ ops.transpose(R)))


def spring(m: Motor, q, qd, elastic=True):
    """The torque of the joint's spring and damper, ``k (theta - q_i) + d (theta_dot - q_i_dot)``;
    ``elastic`` False (or a per-sample 0/1 array) leaves it out (as the beams' elastic forces)."""
    s = m.stiffness * (q[..., m.index] - q[..., m.link])
    if m.damping:
        s = s + m.damping * (qd[..., m.index] - qd[..., m.link])
    if isinstance(elastic, np.ndarray):
        return s * elastic
    return s if elastic else 0.0


def spring_rows(motors_, joint, nq):
    """(Hq, Hqd): the torque of ``joint``'s spring and damper as rows in q and qd (``s = Hq q +
    Hqd qd``: k and d at its motor coordinate, -k and -d at the joint's; zero rows for a rigid
    joint), the data a joint torque sensor adds to the inverse dynamics' row
    (:class:`flexman.sensors.SensorSet`, the compiled loops)."""
    Hq, Hqd = np.zeros(nq), np.zeros(nq)
    for m in motors_:
        if m.link == joint:
            Hq[m.index], Hq[m.link] = m.stiffness, -m.stiffness
            Hqd[m.index], Hqd[m.link] = m.damping, -m.damping
    return Hq, Hqd


def transmitted(motors_, joint, tau_row, q, qd):
    """What ``joint`` transmits to its link: its row of the inverse dynamics ``tau_row`` plus its
    spring and damper torque (an elastic joint's row holds ``-s``, so along a motion the sum is s;
    a rigid joint's row alone). Numeric or traced alike."""
    for m in motors_:
        if m.link == joint:
            tau_row = tau_row + spring(m, q, qd)
    return tau_row


def add_forces(model, cols, q, qd, qdd, elastic=True, friction=True):
    """Add the motors' terms to ``cols``, the per-coordinate generalized forces (a list)."""
    for m in model.motors:
        s = spring(m, q, qd, elastic)
        cols[m.link] = cols[m.link] - s
        tau = m.inertia * qdd[..., m.index] + s
        if friction and m.viscous:
            tau = tau + m.viscous * qd[..., m.index]
        if friction and m.coulomb and not ops.is_symbolic(qd):
            tau = tau + m.coulomb * np.sign(qd[..., m.index])
        cols[m.index] = tau


def kinetic_energy(model, qd):
    """Twice the motors' kinetic energy, sum ``B theta_dot^2``."""
    return sum((m.inertia * qd[..., m.index] ** 2 for m in model.motors), 0)


def potential_energy(model, q):
    """The springs' energy, sum ``k (theta - q_i)^2 / 2``."""
    return sum((0.5 * m.stiffness * (q[..., m.index] - q[..., m.link]) ** 2 for m in model.motors), 0)


def dissipative_forces(model, b, qd):
    """Add the dampers and the motors' viscous friction to ``b`` (an object array, traced):
    the non-conservative terms a Lagrangian derived from the energies leaves out."""
    for m in model.motors:
        f = m.damping * (qd[m.index] - qd[m.link]) if m.damping else 0.0
        b[m.link] = b[m.link] - f
        b[m.index] = b[m.index] + f + (m.viscous * qd[m.index] if m.viscous else 0.0)
