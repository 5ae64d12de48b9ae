"""Natural frequencies of the arm linearized about a configuration at rest."""
from __future__ import annotations

import numpy as np
from scipy.linalg import eigh

from ..model import inputs

STEP = 1e-30


def stiffness(robot, q, gravity=True):
    """d b / d q at rest (gravity gradient + elastic stiffness; elastic only with
    gravity=False), by complex-step differentiation; q (nq,) or batched (..., nq)."""
    from ..dynamics import lagrange4

    q = np.asarray(q, dtype=float)
    n = q.shape[-1]
    zero = np.zeros(n)
    out = np.zeros(q.shape + (n,))
    for k in range(n):
        qc = q.astype(complex)
        qc[..., k] += 1j * STEP
        tau = lagrange4.inverse_dynamics(robot._model, qc, zero, zero, gravity=gravity, friction=False)
        out[..., :, k] = tau.imag / STEP
    return out


def linearize(robot, q=None):
    """(M, K) of the free arm about q at rest: M dq_dd + K dq = S dtau."""
    q = np.zeros(robot.nq) if q is None else inputs.finite(inputs.real(inputs.state(robot, q), "q"), "q")
    if q.ndim != 1:
        raise ValueError(f"q: expected one configuration of nq = {robot.nq} values, got shape {q.shape}")
    return robot.mass_matrix(q), stiffness(robot, q)


def natural_frequencies(robot, q=None, joints="free"):
    """Natural frequencies (rad/s, ascending) of the arm linearized about q at rest.

    joints="free": joints unactuated (the free system); joints="locked": joint coordinates
    held, only the flexible coordinates vibrate. Modes that are unstable in the linearization
    (an arm above its joint) have no frequency and are reported as 0.
    """
    M, K = linearize(robot, q)
    if joints == "locked":
        sl = robot.flex_index
        M, K = M[sl, sl], K[sl, sl]
    elif joints != "free":
        raise ValueError("joints: use 'free' or 'locked'")
    if M.shape[0] == 0:
        return np.zeros(0)
    K = 0.5 * (K + K.T)  # symmetric at equilibrium; the antisymmetric part is a non-equilibrium artefact
    lam = eigh(K, 0.5 * (M + M.T), eigvals_only=True)
    return np.sqrt(np.clip(lam, 0.0, None))
