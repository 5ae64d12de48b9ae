"""Closed-loop eigenvalues along a reference trajectory (004 sec. 5, Figs. 9-10).

Theodore & Ghosal compute "the closed-loop eigenvalues of the manipulator system using the
jacobian of the closed-loop equations of motion in state-space form" at points of the
move; their imaginary parts are the vibration frequencies of the controlled arm. Here the
closed loop is ``x' = f(t, x)`` with ``x = (q, qd[, z])``, ``tau = controller(t, q, qd[, z])``
and ``qdd = robot.forward_dynamics(q, qd, tau)``; its Jacobian is taken by central
differences at the reference state ``q = (q_d(t), q_f = 0)``, ``qd = (qd_d(t), 0)``.
"""
from __future__ import annotations

import numpy as np

from ..simulate.run import controller_parts

__all__ = ["closed_loop_jacobian", "closed_loop_eigenvalues", "reference_state"]


def reference_state(robot, traj, t):
    """(q, qd) of the rigid reference at time t: joints on the trajectory, q_f = 0, qd_f = 0."""
    q_d, qd_d, _ = traj(float(t))
    q, qd = np.zeros(robot.nq), np.zeros(robot.nq)
    q[robot.joint_index], qd[robot.joint_index] = q_d, qd_d
    return q, qd


def _closed_loop_rhs(robot, controller):
    """f(t, X) for a batch of states X (k, 2 nq + n_z); falls back to a loop when the
    controller does not accept batched states."""
    nq, nj = robot.nq, robot.n_joints
    n_z, _, torque, deriv = controller_parts(controller, nj)

    def one(t, x):
        q, qd, z = x[:nq], x[nq:2 * nq], x[2 * nq:]
        tau = np.asarray(torque(t, q, qd, z), dtype=float)
        out = [qd, robot.forward_dynamics(q, qd, tau)]
        if n_z:
            out.append(np.asarray(deriv(t, q, qd, z), dtype=float))
        return np.concatenate(out)

    def batch(t, X):
        q, qd, z = X[:, :nq], X[:, nq:2 * nq], X[:, 2 * nq:]
        try:
            tau = np.asarray(torque(t, q, qd, z), dtype=float)
            ok = tau.shape == (len(X), nj)
        except (ValueError, IndexError, TypeError):
            ok = False
        if not ok or n_z:  # controller states: evaluate one by one (their derivative may not batch)
            return np.array([one(t, x) for x in X])
        return np.concatenate([qd, robot.forward_dynamics(q, qd, tau)], axis=1)

    return batch, n_z


def closed_loop_jacobian(robot, controller, t, x, eps=1e-6):
    """df/dx of the closed loop at (t, x) by central differences (step ``eps`` per entry)."""
    f, _ = _closed_loop_rhs(robot, controller)
    x = np.asarray(x, dtype=float)
    n = len(x)
    steps = eps * np.eye(n)
    F = f(float(t), np.concatenate([x + steps, x - steps]))
    return (F[:n] - F[n:]).T / (2.0 * eps)


def closed_loop_eigenvalues(robot, controller, times, traj=None, eps=1e-6):
    """Eigenvalues of the closed loop linearized along the reference trajectory.

    ``traj`` defaults to ``controller.traj``. Controller states (e.g. PID integrals) are part
    of the state, at zero. Returns ``(times, eigenvalues)``, eigenvalues of shape
    ``(len(times), 2 nq + n_states)``, each row sorted by |imaginary part| then real part,
    so the positive imaginary parts read as the closed-loop vibration frequencies (rad/s).
    """
    traj = controller.traj if traj is None else traj
    times = np.atleast_1d(np.asarray(times, dtype=float))
    _, n_z = _closed_loop_rhs(robot, controller)
    out = []
    for t in times:
        q, qd = reference_state(robot, traj, t)
        x = np.concatenate([q, qd, np.zeros(n_z)])
        lam = np.linalg.eigvals(closed_loop_jacobian(robot, controller, t, x, eps))
        out.append(lam[np.lexsort((lam.real, np.abs(lam.imag)))])
    return times, np.array(out)
