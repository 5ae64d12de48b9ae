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


def motors(robot) -> tuple:
    """The motors of a robot's elastic joints, in coordinate order."""
    out = []
    start = robot.motor_index.start
    for k, i in enumerate(robot.motor_links):
        d = robot.links[i].drive
        B, b, c = d.reflected()
        out.append(Motor(link=i, index=start + k, inertia=B, stiffness=d.stiffness, damping=d.damping,
                         viscous=b, coulomb=c))
    return tuple(out)


def spring(m: Motor, q, qd, elastic=True):
    """The torque of the joint's spring and damper, ``k (theta - q_i) + d (theta_dot - q_i_dot)``;
    ``elastic`` False (or a per-sample 0/1 array) leaves it out (as the beams' elastic forces)."""
    s = m.stiffness * (q[..., m.index] - q[..., m.link])
    if m.damping:
        s = s + m.damping * (qd[..., m.index] - qd[..., m.link])
    if isinstance(elastic, np.ndarray):
        return s * elastic
    return s if elastic else 0.0


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
