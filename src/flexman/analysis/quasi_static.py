"""Quasi-static deflection of the flexible links along a prescribed joint motion.

The quasi-static deflection is the deflection that the inertial and gravity loads of a
prescribed joint motion would cause if the links did not vibrate: the flexible coordinates
``q_f`` at which the flexible rows of the equations of motion balance with ``q_f' = q_f'' = 0``,

    inverse_dynamics((q_r, q_f), (qd_r, 0), (qdd_r, 0))[F] = 0.

It costs no time integration and no controller, and it estimates the link deflections and the
end-effector error a move causes; the dynamic response oscillates about it.

The residual is solved by a Newton-like iteration with the elastic stiffness,
``q_f <- q_f - K_ff^{-1} r(q_f)``: the residual depends on ``q_f`` mainly through ``K_ff q_f``,
its dependence through the inertia and gravity terms is small, so the iteration contracts fast.
"""
from __future__ import annotations

import numpy as np

from ..model import inputs
from .frequencies import stiffness

ABS_FLOOR = 1e-14  # absolute step below which an (almost) undeflected sample counts as converged


def quasi_static_deflection(robot, q_r, qd_r=None, qdd_r=None, iterations=50, tol=1e-10):
    """Flexible coordinates q_f (nf,) or (N, nf) that balance the flexible equations at rest
    relative to the moving joints.

    ``q_r``, ``qd_r``, ``qdd_r``: joint positions, velocities, accelerations, (n_joints,) or
    (N, n_joints); None means zeros. Iterates ``q_f <- q_f - K_ff^{-1} r(q_f)`` until every
    sample's update is below ``tol`` times its deflection (norms); raises ValueError if the
    robot has no flexible coordinates or the iteration does not converge in ``iterations``.
    """
    if robot.nf == 0:
        raise ValueError(f"quasi_static_deflection: robot '{robot.name}' has no flexible coordinates "
                         "(rigid links only), so there is no deflection to compute")
    q_r = inputs.finite(inputs.real(inputs.joint_values(robot, q_r, "q_r"), "q_r"), "q_r")
    if q_r.ndim > 2:
        raise ValueError(f"q_r: expected shape ({robot.n_joints},) or (N, {robot.n_joints}), got {q_r.shape}")
    qd_r, qdd_r = (np.zeros_like(q_r) if v is None
                   else np.broadcast_to(inputs.finite(inputs.joint_values(robot, v, name), name), q_r.shape)
                   for v, name in ((qd_r, "qd_r"), (qdd_r, "qdd_r")))
    single = q_r.ndim == 1
    q_r, qd_r, qdd_r = np.atleast_2d(q_r), np.atleast_2d(qd_r), np.atleast_2d(qdd_r)

    J, F = robot.joint_index, robot.flex_index
    N = q_r.shape[0]
    q = np.zeros((N, robot.nq))
    qd = np.zeros((N, robot.nq))
    qdd = np.zeros((N, robot.nq))
    q[:, J], qd[:, J], qdd[:, J] = q_r, qd_r, qdd_r

    K = stiffness(robot, q, gravity=False)[:, F, F]  # q_r-dependent only for sliding beams
    for _ in range(iterations):
        residual = robot.inverse_dynamics(q, qd, qdd)[:, F]
        try:
            step = np.linalg.solve(K, residual[..., None])[..., 0]
        except np.linalg.LinAlgError as exc:
            raise ValueError(f"quasi_static_deflection: singular elastic stiffness K_ff ({exc})") from exc
        q[:, F] -= step
        size = np.linalg.norm(step, axis=-1)
        if np.all(size <= tol * np.linalg.norm(q[:, F], axis=-1) + ABS_FLOOR):
            out = q[:, F]
            return out[0] if single else out
    worst = int(np.argmax(size / (np.linalg.norm(q[:, F], axis=-1) + ABS_FLOOR)))
    raise ValueError(
        f"quasi_static_deflection: no convergence in {iterations} iterations (sample {worst}: last update "
        f"{size[worst]:.3g}, deflection {np.linalg.norm(q[worst, F]):.3g}); the loads may exceed "
        "what the elastic stiffness can hold (e.g. a fast spin softening the links)"
    )


def quasi_static_along(robot, traj, times, **kwargs):
    """Full coordinates (N, nq) along a trajectory ``traj(t) -> (q, qd, qdd)``: the reference
    joint positions with the quasi-static deflection, e.g. for plotting or the end-effector
    error ``robot.frame(q_full, -1)``. ``kwargs`` go to :func:`quasi_static_deflection`."""
    times = np.atleast_1d(np.asarray(times, dtype=float))
    q_r, qd_r, qdd_r = traj(times)
    q_f = quasi_static_deflection(robot, q_r, qd_r, qdd_r, **kwargs)
    return np.concatenate([np.asarray(q_r, float), q_f], axis=-1)
