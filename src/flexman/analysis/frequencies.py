"""Natural frequencies of the arm linearized about a configuration at rest."""
from __future__ import annotations

import numpy as np

from ..model import inputs
from ..model.checks import check_mass_matrix, require_invertible
from ..model.errors import ModelError

STEP = 1e-30


def stiffness(robot, q, gravity=True):
    """d b / d q at rest (gravity gradient + elastic stiffness; elastic only with
    gravity=False), by complex-step differentiation; q (nq,) or batched (..., nq)."""
    from ..dynamics import lagrange4
    from ..dynamics.structure import numeric_model

    q = np.asarray(q, dtype=float)
    if getattr(robot, "mimic", None):  # mimic joints: G^T K_full(G q + c) G
        G, c = robot.mimic_map()
        return G.T @ stiffness(robot.full, q @ G.T + c, gravity) @ G
    n = q.shape[-1]
    # every column at once: one batched recursion over the n perturbed states (k, ..., nq)
    qc = np.broadcast_to(q.astype(complex), (n,) + q.shape).copy()
    for k in range(n):
        qc[k, ..., k] += 1j * STEP
    zero = np.zeros(qc.shape)
    tau = lagrange4.inverse_dynamics(numeric_model(robot), qc, zero, zero, gravity=gravity, friction=False)
    return np.moveaxis(tau.imag / STEP, 0, -1)


def generalized_eigenvalues(K, M):
    """Eigenvalues of K v = lam M v (K symmetric, M symmetric positive definite; ascending) by the
    Cholesky factor M = L L^T: those of L^-1 K L^-T. NumPy alone: every fixed-step run checks its
    step against the highest frequency, and importing scipy.linalg would cost more than a short
    run. LinAlgError when M is not positive definite."""
    L = np.linalg.cholesky(M)
    A = np.linalg.solve(L, np.linalg.solve(L, K).T).T
    return np.linalg.eigvalsh(0.5 * (A + A.T))


def linearize(robot, q=None):
    """(M, K) of the free arm about q at rest: M dq_dd + K dq = S dtau."""
    q = np.zeros(robot.nq) if q is None else inputs.finite(inputs.real(inputs.state(robot, q), "q"), "q")
    if q.ndim != 1:
        raise ValueError(f"q: expected one configuration of nq = {robot.nq} values, got shape {q.shape}")
    return robot.mass_matrix(q), stiffness(robot, q)


def _flexible_forces(robot, q, qd, pf, pv):
    """Flexible rows of the inverse dynamics with joint accelerations zero (complex-step safe)."""
    from ..dynamics import lagrange4
    from ..dynamics.structure import numeric_model

    sl = robot.flex_index
    qq = q.astype(pf.dtype)
    vv = qd.astype(pv.dtype)
    qq[sl], vv[sl] = pf, pv
    if getattr(robot, "mimic", None):  # mimic joints: the full robot at G q + c, G qd; its flexible
        G, c = robot.mimic_map()      # rows are the reduced ones (G maps the flexible coordinates one to one)
        full = robot.full
        tau = lagrange4.inverse_dynamics(numeric_model(full), qq @ G.T + c, vv @ G.T, np.zeros(full.nq), friction=False)
        return tau[full.flex_index]
    return lagrange4.inverse_dynamics(numeric_model(robot), qq, vv, np.zeros(robot.nq), friction=False)[sl]


def _flexible_jacobians(robot, q, qd, p, pv):
    """(K, C) = d Q_f / d (p, p_dot) by complex step at the flexible state (p, pv)."""
    n = p.size
    K, C = np.zeros((n, n)), np.zeros((n, n))
    for k in range(n):
        e = np.zeros(n, dtype=complex)
        e[k] = 1j * STEP
        K[:, k] = _flexible_forces(robot, q, qd, p + e, pv.astype(complex)).imag / STEP
        C[:, k] = _flexible_forces(robot, q, qd, p.astype(complex), pv + e).imag / STEP
    return K, C


def steady_deflection(robot, q, qd, tol=1e-12, iterations=50):
    """Flexible coordinates at rest relative to the joints when the joints sit at q's joint values
    and turn at qd's constant joint rates (centrifugal and gravity loads balanced by the beams)."""
    sl = robot.flex_index
    p = np.array(q[sl], dtype=float)
    zero = np.zeros_like(p)
    for _ in range(iterations):
        r = _flexible_forces(robot, q, qd, p, zero).real
        K, _ = _flexible_jacobians(robot, q, qd, p, zero)
        try:
            step = np.linalg.solve(K, -r)
        except np.linalg.LinAlgError:
            raise ValueError("qd: no steady deflection at these joint rates (the stiffness vanishes: "
                             "the beams buckle or whirl); lower the rates") from None
        p = p + step
        if np.abs(step).max() <= tol * max(1.0, np.abs(p).max()):
            return p
    raise ValueError("qd: no steady deflection found at these joint rates (Newton did not converge); lower the rates")


def frequencies_about_motion(robot, q, qd):
    """Frequencies (rad/s, ascending) of the flexible coordinates linearized about a steady motion:
    joints at q's joint values turning at qd's constant joint rates, beams at their steady
    deflection; gyroscopic coupling included, structural damping left out. A mode made unstable
    by the motion has no frequency and is reported as 0."""
    from scipy.linalg import eig

    sl = robot.flex_index
    n = robot.nf
    if n == 0:
        return np.zeros(0)
    p = steady_deflection(robot, q, qd)
    K, C = _flexible_jacobians(robot, q, qd, p, np.zeros(n))
    qs = np.array(q, dtype=float)
    qs[sl] = p
    M = robot.mass_matrix(qs)[sl, sl]
    G = 0.5 * (C - C.T)  # gyroscopic part; the symmetric part is damping
    A = np.block([[np.zeros((n, n)), np.eye(n)], [-np.linalg.solve(M, K), -np.linalg.solve(M, G)]])
    lam = eig(A, right=False)
    omega = np.sort(np.abs(lam.imag))
    unstable = np.sort(np.abs(lam.real)) > 1e-8 * max(1.0, np.abs(lam).max())
    omega = omega[1::2]  # +-i omega pairs
    if unstable.any():
        omega = np.where(omega < 1e-8 * max(1.0, omega.max()), 0.0, omega)
    return omega


def padded(robot, q, name="q"):
    """``q`` with the flexible coordinates appended as zeros when it gives the joints only
    (n_joints values, or (..., n_joints)), and the motors of elastic joints at their joints'
    values (springs relaxed); nq values (or None) as given."""
    if q is None or robot.nf + robot.n_motors == 0:
        return q
    arr = np.asarray(q)
    if arr.ndim >= 1 and arr.shape[-1] == robot.n_joints and arr.dtype.kind in "iuf":
        out = np.zeros(arr.shape[:-1] + (robot.nq,))
        out[..., robot.joint_index] = arr
        out[..., robot.motor_index] = arr[..., list(robot.motor_links)]
        return out
    return q


def natural_frequencies(robot, q=None, joints="free", qd=None):
    """Natural frequencies (rad/s, ascending) of the arm linearized about q at rest, or with
    ``qd`` about a steady motion (see :func:`frequencies_about_motion`; joints then held).

    joints="free": joints unactuated (the free system); joints="locked": joint coordinates
    held, only the flexible coordinates and the motors of elastic joints vibrate. Modes that are unstable in the linearization
    (an arm above its joint) have no frequency and are reported as 0.

    ``q`` may give every coordinate (nq values) or the joints only (n_joints values: the flexible
    coordinates are then zero, the undeformed arm), as ``flexman frequencies --q`` takes it; None:
    all zero. ``qd`` likewise (joint rates only: the flexible rates zero).
    """
    if getattr(robot, "is_reduced", False):
        return reduced_frequencies(robot, q, joints, qd)
    require_invertible(robot)
    q, qd = padded(robot, q, "q"), padded(robot, qd, "qd")
    if qd is not None:
        qd = inputs.state(robot, qd, "qd")
        if qd.ndim != 1:
            raise ValueError(f"qd: expected one set of nq = {robot.nq} rates, got shape {qd.shape}")
        if not np.all(np.isfinite(qd)):
            raise ValueError("qd: must be finite numbers")
        q = np.zeros(robot.nq) if q is None else inputs.state(robot, q)
        if q.ndim != 1:
            raise ValueError(f"q: expected one configuration of nq = {robot.nq} values, got shape {q.shape}")
        return frequencies_about_motion(robot, q, qd)
    M, K = linearize(robot, q)
    if joints == "locked":
        sl = slice(robot.n_joints, robot.nq)  # flexible and motor coordinates
        M, K = M[sl, sl], K[sl, sl]
    elif joints != "free":
        raise ValueError("joints: use 'free' or 'locked'")
    if M.shape[0] == 0:
        return np.zeros(0)
    K = 0.5 * (K + K.T)  # symmetric at equilibrium; the antisymmetric part is a non-equilibrium artefact
    try:
        lam = generalized_eigenvalues(K, 0.5 * (M + M.T))
    except np.linalg.LinAlgError:  # M not positive definite: say which coordinate moves no mass
        check_mass_matrix(robot, None if q is None else np.asarray(q, dtype=float))
        raise ModelError(f"natural frequencies: the mass matrix of the {'flexible' if joints == 'locked' else 'free'} "
                         "coordinates is not positive definite at q; check the masses and inertias") from None
    return np.sqrt(np.clip(lam, 0.0, None))


def reduced_frequencies(reduced, q=None, joints="free", qd=None):
    """Natural frequencies (rad/s, ascending) of a reduced model (:mod:`.reduction`) at rest: the
    eigenvalues of its linearization ``K_r v = w^2 M_r v`` (M_r is not symmetric where the
    dropped coordinates' static deflection couples through gravity; complex pairs count by
    their real part)."""
    if qd is not None:
        raise ValueError("qd: frequencies about a steady motion are not computed for a reduced model; give q only, "
                         "or use the full robot (reduced.robot)")
    if joints not in ("free", "locked"):
        raise ValueError("joints: use 'free' or 'locked'")
    M, K = reduced.linearize(q)
    if joints == "locked":
        sl = slice(reduced.n_joints, reduced.nq)
        M, K = M[sl, sl], K[sl, sl]
    if M.shape[0] == 0:
        return np.zeros(0)
    lam = np.linalg.eigvals(np.linalg.solve(M, K)).real
    return np.sort(np.sqrt(np.clip(lam, 0.0, None)))
