"""Partial derivatives of the inverse and forward dynamics, from the same recursions.

Inverse dynamics ``tau = ID(q, qd, qdd) = M(q) qdd + b(q, qd)`` (all nq generalized forces:
joint torques and the flexible rows) is differentiated by the complex step: every recursion of
:mod:`.api` runs in complex arithmetic, so ``Im ID(q + i h e_j) / h`` is the exact partial
derivative (no subtractive cancellation, any h small enough; all nq directions are one batched
call). ``d tau / d qdd`` is M itself.

Forward dynamics follows from the identity ``ID(q, qd, FD(q, qd, tau)) = S tau``: at
``qdd = FD(q, qd, tau)``,

    d qdd / d q   = -M^-1 d ID / d q,
    d qdd / d qd  = -M^-1 d ID / d qd,
    d qdd / d tau =  M^-1 S,

which is also how Pinocchio's ``computeABADerivatives`` is built (Carpentier & Mansard 2018).
The generated code evaluates the same formulas (``symbolic.tapediff`` differentiates the traced
inverse dynamics; the C function solves with M's factors, see ``codegen.sources``).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..model import inputs

STEP = 1e-30  # complex step: exact to round-off for any step this small


class InverseDerivatives(NamedTuple):
    """Partials of the generalized forces tau (..., nq) of :func:`inverse_dynamics_derivatives`:
    ``dq[..., i, j] = d tau_i / d q_j``, ``dqd`` likewise, ``dqdd`` = M."""
    dq: np.ndarray
    dqd: np.ndarray
    dqdd: np.ndarray


class ForwardDerivatives(NamedTuple):
    """Partials of the accelerations qdd (..., nq) of :func:`forward_dynamics_derivatives`:
    ``dq[..., i, j] = d qdd_i / d q_j``, ``dqd`` likewise, ``dtau`` (..., nq, n_joints) = M^-1 S."""
    dq: np.ndarray
    dqd: np.ndarray
    dtau: np.ndarray


def _real_states(robot, **arrays):
    out = inputs.states(robot, **arrays)
    for name, a in zip(arrays, out):
        if np.iscomplexobj(a) or a.dtype == object:
            raise ValueError(f"{name}: derivatives take real numbers (complex or symbolic values: "
                             f"differentiate robot.inverse_dynamics yourself)")
        inputs.finite(a, name)
    return out


def _directions(x, nq):
    """x (..., nq) as (..., nq, nq) complex: direction j of row j is i STEP e_j."""
    return x[..., None, :] + 1j * STEP * np.eye(nq)


def inverse_dynamics_derivatives(robot, q, qd, qdd, inverse_dynamics, mass_matrix):
    """(d tau/d q, d tau/d qd, d tau/d qdd = M) of the generalized forces at (q, qd, qdd), each
    (..., nq, nq); leading batch dimensions as everywhere. ``inverse_dynamics(robot, q, qd, qdd)``
    and ``mass_matrix(robot, q)``: the recursions (:mod:`.api`), run here in complex numbers."""
    q, qd, qdd = _real_states(robot, q=q, qd=qd, qdd=qdd)
    q, qd, qdd = np.broadcast_arrays(q, qd, qdd)
    nq = robot.nq
    flat = lambda a: a[..., None, :]
    dq = inverse_dynamics(robot, _directions(q, nq), flat(qd), flat(qdd)).imag / STEP
    dqd = inverse_dynamics(robot, flat(q), _directions(qd, nq), flat(qdd)).imag / STEP
    # row j of the batch is the direction e_j: transpose to d tau_i / d x_j
    return InverseDerivatives(np.swapaxes(dq, -1, -2), np.swapaxes(dqd, -1, -2), mass_matrix(robot, q))


def forward_dynamics_derivatives(robot, q, qd, tau, api):
    """(d qdd/d q, d qdd/d qd (..., nq, nq), d qdd/d tau (..., nq, n_joints)) at (q, qd, tau);
    ``api``: the module of the recursions (forward and inverse dynamics, M, the selection S)."""
    q, qd = _real_states(robot, q=q, qd=qd)
    tau = inputs.finite(inputs.real(inputs.joint_values(robot, tau), "tau"), "tau")
    qdd = api.forward_dynamics(robot, q, qd, tau)
    d = inverse_dynamics_derivatives(robot, q, qd, qdd, api.inverse_dynamics, api.mass_matrix)
    return from_inverse(d.dq, d.dqd, d.dqdd, api.selection(robot))


def from_inverse(d_q, d_qd, M, S):
    """Forward-dynamics partials from the inverse dynamics' partials at qdd = FD(q, qd, tau) and M."""
    rhs = np.concatenate([-d_q, -d_qd, np.broadcast_to(S, M.shape[:-2] + S.shape)], axis=-1)
    sol = np.linalg.solve(M, rhs)
    nq = M.shape[-1]
    return ForwardDerivatives(sol[..., :nq], sol[..., nq:2 * nq], sol[..., 2 * nq:])
