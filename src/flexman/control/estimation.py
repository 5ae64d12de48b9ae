"""State estimation from the sensors: the arm linearised at a pose, sampled with a zero-order
hold, a steady-state Kalman filter designed on it, an extended Kalman filter that relinearises
along the motion, and the check that the chosen sensors see every coordinate.

The state is ``x = [q, qd]`` (all coordinates: joints and beams), the input the joint torques.
Linearised at rest at ``x* = [q*, 0]`` (the beams at their static sag under gravity, the joints
where asked) with the torques ``u*`` that hold it:

    dx' = A dx + B du,    dy = C dx + D du,

A and B from the forward dynamics' partial derivatives (``robot.forward_dynamics_derivatives``),
C and D from the sensors' (``Sensors.jacobians``, with qdd = FD(x, u) for sensors that read
accelerations). Sampled every ``dt`` with the torque held (zero-order hold):
``Ad = e^{A dt}``, ``Bd = int_0^dt e^{A s} ds B``. Process noise: torque disturbances of standard
deviation ``torque_noise`` held over each sample (covariance ``Bd W Bd^T``); measurement noise
the sensors' (``Sensors.noise_covariance``).

The steady-state filter's covariance solves the discrete Riccati equation; its gain in the
predictor form, ``L = Ad P C^T (C P C^T + R)^-1``, is what python-control's ``dlqe`` returns.
"""
from __future__ import annotations

import numpy as np

from ..model import inputs


def operating_point(robot, q=None):
    """(x*, u*): the joints at ``q`` (n_joints values, or all nq; default zero), the beams at
    their static deflection under gravity (when given only the joints), at rest; u* holds it."""
    nq, nj = robot.nq, robot.n_joints
    if q is None:
        q = np.zeros(nj)
    q = inputs.finite(inputs.real(inputs.array(q, "q"), "q"), "q").astype(float)
    if q.shape == (nj,) and robot.nf:
        from ..analysis.quasi_static import quasi_static_deflection

        full = np.zeros(nq)
        full[robot.joint_index] = q
        full[robot.flex_index] = quasi_static_deflection(robot, q)
        q = full
    elif q.shape == (nj,):
        q = q.copy()
    elif q.shape != (nq,):
        raise ValueError(f"q: give the {nj} joint values or all {nq} coordinates, got shape {q.shape}")
    zero = np.zeros(nq)
    u = robot.inverse_dynamics(q, zero, zero)[:nj]
    return np.concatenate([q, zero]), u


def linearize(robot, sensors, q=None):
    """(A, B, C, D, x*, u*, y*): the continuous model about the operating point (see the module)."""
    nq = robot.nq
    x0, u0 = operating_point(robot, q)
    q0, qd0 = x0[:nq], x0[nq:]
    f = robot.forward_dynamics_derivatives(q0, qd0, u0)
    A = np.block([[np.zeros((nq, nq)), np.eye(nq)], [f.dq, f.dqd]])
    B = np.vstack([np.zeros((nq, robot.n_joints)), f.dtau])
    qdd0 = robot.forward_dynamics(q0, qd0, u0)
    Hq, Hqd, Hqdd = sensors.jacobians(q0, qd0, qdd0)
    C = np.hstack([Hq + Hqdd @ f.dq, Hqd + Hqdd @ f.dqd])
    D = Hqdd @ f.dtau
    return A, B, C, D, x0, u0, sensors.h(q0, qd0, qdd0)


def zero_order_hold(A, B, dt):
    """(Ad, Bd) of x' = A x + B u with u held over each step dt (the matrix exponential of the
    augmented system)."""
    from scipy.linalg import expm

    n, m = B.shape
    E = expm(np.block([[A, B], [np.zeros((m, n + m))]]) * dt)
    return E[:n, :n], E[:n, n:]


def unobservable(Ad, C, names, tol=1e-9):
    """The modes of (Ad, C) the outputs cannot see (PBH test: rank [lambda I - Ad; C] < n), each
    as (|lambda| and angle, the coordinate its eigenvector moves most)."""
    lam, V = np.linalg.eig(Ad)
    n = Ad.shape[0]
    out = []
    scale = max(1.0, np.abs(Ad).max(), np.abs(C).max())
    for k, l in enumerate(lam):
        M = np.vstack([l * np.eye(n) - Ad, C])
        s = np.linalg.svd(M, compute_uv=False)
        if s[-1] <= tol * scale:
            out.append((l, names[int(np.argmax(np.abs(V[:, k])))]))
    return out


def _state_names(robot):
    return list(robot.coordinate_names) + [f"{n}_rate" for n in robot.coordinate_names]


class KalmanFilter:
    """The steady-state Kalman filter of ``robot`` read by ``sensors`` every ``dt`` seconds,
    designed at the pose ``q`` with torque disturbances of standard deviation ``torque_noise``
    (one value or one per joint, N m). ``P`` is the prior (predicted) covariance, ``L`` the
    predictor gain (python-control's ``dlqe``), ``K = P C^T (C P C^T + R)^-1`` the update gain.

    :meth:`correct` takes a reading ``y`` and returns the current estimate of ``x = [q, qd]``,
    :meth:`predict` the torque ``u`` held over the sample that follows; :meth:`reset` starts it
    again."""

    def __init__(self, robot, sensors, dt, q=None, torque_noise=1.0):
        dt = inputs.positive(dt, "dt")
        w = np.broadcast_to(np.asarray(torque_noise, dtype=float), (robot.n_joints,))
        if not np.all(np.isfinite(w)) or np.any(w <= 0):
            raise ValueError("torque_noise: standard deviations of the torque disturbance must be finite and > 0")
        self.robot, self.sensors, self.dt = robot, sensors, dt
        A, B, C, D, self.x0, self.u0, self.y0 = linearize(robot, sensors, q)
        self.Ad, self.Bd = zero_order_hold(A, B, dt)
        self.C, self.D = C, D
        self.W, self.R = np.diag(w ** 2), sensors.noise_covariance()
        blind = unobservable(self.Ad, C, _state_names(robot))
        if blind:
            seen = sorted({name for _, name in blind})
            raise ValueError(f"sensors: {', '.join(sensors.names)} cannot observe {', '.join(seen)} "
                             f"({len(blind)} mode(s) of the sampled model); add a sensor that sees them "
                             "(a strain gauge on each flexible link, an encoder on each joint)")
        if not np.any(self.R.diagonal() > 0):
            raise ValueError("sensors: every sensor is noise-free and unquantised; give their noise (a Kalman "
                             "filter weighs the readings by it)")
        from scipy.linalg import solve_discrete_are

        Q = self.Bd @ self.W @ self.Bd.T
        self.P = solve_discrete_are(self.Ad.T, self.C.T, Q, self.R)
        S = self.C @ self.P @ self.C.T + self.R
        self.K = np.linalg.solve(S, self.C @ self.P).T  # P C^T S^-1 (S symmetric)
        self.L = self.Ad @ self.K
        self.Q = Q
        self.reset()

    def reset(self, x=None):
        """Start from ``x`` (default: the operating point) with the steady-state prior."""
        self.prior = self.x0.copy() if x is None else np.asarray(x, dtype=float).copy()
        self.estimate = self.prior.copy()
        self.acting = np.array(self.u0, dtype=float)  # the torque held over the last sample

    def correct(self, y):
        """The estimate of x after the reading ``y`` taken at this sample."""
        dx = self.prior - self.x0
        innovation = np.asarray(y, dtype=float) - self.y0 - self.C @ dx - self.D @ (self.acting - self.u0)
        self.estimate = self.prior + self.K @ innovation
        return self.estimate

    def predict(self, u):
        """The prior of the next sample, with the torque ``u`` held until then."""
        self.acting = np.asarray(u, dtype=float)
        self.prior = self.x0 + self.Ad @ (self.estimate - self.x0) + self.Bd @ (self.acting - self.u0)
        return self.prior

    def update(self, y, u):
        """:meth:`correct` with ``y``, then :meth:`predict` with ``u``; returns the estimate."""
        estimate = self.correct(y)
        self.predict(u)
        return estimate

    def covariance(self):
        """The covariance of the current (updated) estimate, (I - K C) P."""
        return (np.eye(len(self.x0)) - self.K @ self.C) @ self.P


class ExtendedKalmanFilter(KalmanFilter):
    """A Kalman filter that relinearises along the motion: the prediction integrates the
    nonlinear model over the sample (RK4, ``substeps`` per sample) and propagates the covariance
    with the model linearised at the estimate; the update uses the sensors' Jacobians there."""

    def __init__(self, robot, sensors, dt, q=None, torque_noise=1.0, substeps=4, backend=None):
        super().__init__(robot, sensors, dt, q, torque_noise)
        self.substeps = int(substeps)
        self.Pk = self.P.copy()
        self.model = robot  # the dynamics and their partials: compiled (with derivatives) unless numeric
        if backend != "numeric":
            try:
                self.model = robot.compiled(derivatives=True)
            except (RuntimeError, ValueError, ImportError):
                self.model = robot

    def reset(self, x=None):
        super().reset(x)
        self.Pk = getattr(self, "P", None)
        self.P_estimate = self.Pk

    def _model(self, x, u):
        nq = self.robot.nq
        f = self.model.forward_dynamics_derivatives(x[:nq], x[nq:], u)
        A = np.block([[np.zeros((nq, nq)), np.eye(nq)], [f.dq, f.dqd]])
        B = np.vstack([np.zeros((nq, self.robot.n_joints)), f.dtau])
        return A, B

    def _propagate(self, x, u):
        nq, h = self.robot.nq, self.dt / self.substeps
        f = lambda x: np.concatenate([x[nq:], self.model.forward_dynamics(x[:nq], x[nq:], u)])
        for _ in range(self.substeps):
            k1 = f(x)
            k2 = f(x + 0.5 * h * k1)
            k3 = f(x + 0.5 * h * k2)
            k4 = f(x + h * k3)
            x = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return x

    def correct(self, y):
        nq = self.robot.nq
        x, u = self.prior, self.acting
        q, qd = x[:nq], x[nq:]
        qdd = self.model.forward_dynamics(q, qd, u)
        Hq, Hqd, Hqdd = self.sensors.jacobians(q, qd, qdd)
        A, _ = self._model(x, u)
        C = np.hstack([Hq + Hqdd @ A[nq:, :nq], Hqd + Hqdd @ A[nq:, nq:]])
        S = C @ self.Pk @ C.T + self.R
        K = np.linalg.solve(S, C @ self.Pk).T
        self.estimate = x + K @ (np.asarray(y, dtype=float) - self.sensors.h(q, qd, qdd))
        self.P_estimate = (np.eye(len(x)) - K @ C) @ self.Pk
        return self.estimate

    def predict(self, u):
        self.acting = np.asarray(u, dtype=float)
        Ad, Bd = zero_order_hold(*self._model(self.estimate, self.acting), self.dt)
        self.Pk = Ad @ self.P_estimate @ Ad.T + Bd @ self.W @ Bd.T
        self.prior = self._propagate(self.estimate, self.acting)
        return self.prior

    def covariance(self):
        return self.P_estimate
