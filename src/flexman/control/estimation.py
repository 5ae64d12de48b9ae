"""State estimation from sensor readings: discrete Kalman filters designed from the model.

The plant is ``x = (q, qd)`` under joint torques held over each sample (zero-order hold). Its
linearization at a pose (``linearize_plant``: the model's analytic partial derivatives of the
forward dynamics, :func:`forward_partials`) is discretized exactly (:func:`discretize`, the
matrix exponential), and the readings ``y = h(q, qd, qdd)`` of a
:class:`flexman.sensors.SensorSet` are linearized through ``qdd = f(q, qd, tau)``. Process
noise is a white torque disturbance on the joints, held over a sample like the input
(covariance ``Bd diag(torque_noise^2) Bd^T``); the readings' noise is their standard deviation
plus the encoders' quantisation (quantum^2 / 12).

:class:`KalmanFilter` runs in the *current* form: at sample k the prediction ``xbar_k`` is
corrected with the reading, ``xhat_k = xbar_k + M (y_k - h(xbar_k))``, and
``xbar_{k+1}`` is one sample of the nonlinear model (RK4) from ``xhat_k`` under the applied
torque. The steady-state gain ``M = P C^T (C P C^T + R)^-1`` comes from the discrete Riccati
equation; ``Ad M`` is the predictor gain that python-control's ``dlqe`` returns. With
``extended=True`` the filter relinearizes the model and the readings at every sample (EKF): its
covariance goes through the exact derivative of its own RK4 prediction (:func:`rk4_transition`,
the tangent of the RK4 stages), and the readings' Jacobian is exact for encoders, strain gauges
and torque sensors (on an elastic joint the spring's torque: its rows in q and qd).
:func:`observability` is the PBH test: the modes of ``Ad`` the readings cannot see.
"""
from __future__ import annotations

import weakref

import numpy as np

__all__ = ["forward_partials", "linearize_plant", "discretize", "KalmanFilter", "kalman", "observability",
           "rk4_sample", "rk4_transition"]


def _forward(model, q, qd, tau):
    return np.asarray(model.forward_dynamics(q, qd, tau), dtype=float)


_WITH_PARTIALS = weakref.WeakKeyDictionary()  # compiled model -> its variant compiled with the partials


def _partials_model(model):
    """The model that evaluates ``model``'s partial derivatives fastest: for a compiled model without
    them, its robot's variant compiled with them once that is built (looked up once per model: the
    look-up serializes the robot, a millisecond per call), else ``model`` itself."""
    if getattr(model, "backend", None) != "c" or getattr(model, "has_derivatives", True):
        return model
    found = _WITH_PARTIALS.get(model)
    if found is None:
        from ..codegen.modelcache import existing_model

        found = existing_model(model.robot, derivatives=True)
        if found is None:
            return model
        _WITH_PARTIALS[model] = found
    return found


def forward_partials(model, q, qd, tau, eps=1e-6):
    """(d qdd/d q, d qdd/d qd, d qdd/d tau) of the forward dynamics at one state: the model's own
    analytic partial derivatives (``forward_dynamics_derivatives``: a robot's or a compiled
    model's), or central differences (batched) for a model without them."""
    exact = getattr(_partials_model(model), "forward_dynamics_derivatives", None)
    if exact is not None:
        return tuple(np.asarray(d, dtype=float) for d in exact(q, qd, tau))
    nq = model.nq
    n, nx = 2 * nq, 2 * nq + len(tau)
    X = np.repeat(np.concatenate([q, qd, tau])[None], 2 * nx, axis=0)
    X[:nx] += eps * np.eye(nx)
    X[nx:] -= eps * np.eye(nx)
    F = _forward(model, X[:, :nq], X[:, nq:n], X[:, n:])
    D = ((F[:nx] - F[nx:]) / (2.0 * eps)).T  # (nq, 2 nq + nj)
    return D[:, :nq], D[:, nq:n], D[:, n:]


def linearize_plant(model, q, qd=None, tau=None):
    """(A, B) of ``x' = (qd, f(q, qd, tau))`` at (q, qd, tau) from :func:`forward_partials`.
    ``tau`` defaults to the joint rows of the bias forces at rest (the torque that holds the pose)."""
    q = np.asarray(q, dtype=float)
    nq, nj = model.nq, model.n_joints
    qd = np.zeros(nq) if qd is None else np.asarray(qd, dtype=float)
    if tau is None:
        tau = np.asarray(model.bias_forces(q, np.zeros(nq)), dtype=float)[:nj]
    Fq, Fqd, Ftau = forward_partials(model, q, qd, np.asarray(tau, dtype=float))
    A = np.zeros((2 * nq, 2 * nq))
    A[:nq, nq:] = np.eye(nq)
    A[nq:, :nq], A[nq:, nq:] = Fq, Fqd
    B = np.zeros((2 * nq, nj))
    B[nq:] = Ftau
    return A, B


def discretize(A, B, T):
    """(Ad, Bd) of ``x' = A x + B u`` under a zero-order hold of period T (exact)."""
    from scipy.linalg import expm

    n, m = B.shape
    E = np.zeros((n + m, n + m))
    E[:n, :n], E[:n, n:] = A, B
    Phi = expm(E * T)
    return Phi[:n, :n], Phi[:n, n:]


def _rk4(f, z, h, steps):
    """``steps`` RK4 steps of z' = f(z) for z a tuple of arrays (a state, or a state and its tangent)."""
    for _ in range(steps):
        k1 = f(z)
        k2 = f(tuple(u + 0.5 * h * k for u, k in zip(z, k1)))
        k3 = f(tuple(u + 0.5 * h * k for u, k in zip(z, k2)))
        k4 = f(tuple(u + h * k for u, k in zip(z, k3)))
        z = tuple(u + (h / 6.0) * (a + 2.0 * b + 2.0 * c + d) for u, a, b, c, d in zip(z, k1, k2, k3, k4))
    return z


def rk4_sample(model, x, tau, T, steps):
    """The state (..., 2 nq) after T seconds under the constant torque ``tau``: ``steps`` RK4
    steps of the forward dynamics (the plant's own integrator in the Python loop)."""
    nq = model.nq

    def f(z):
        x, = z
        return np.concatenate([x[..., nq:], _forward(model, x[..., :nq], x[..., nq:], tau)], axis=-1),

    return _rk4(f, (x,), T / steps, steps)[0]


def rk4_transition(model, x, tau, T, steps):
    """(x after T, F = d x_T / d x, G = d x_T / d tau) of :func:`rk4_sample` at one state: the
    same RK4 steps carrying their tangent (each stage's Jacobian from :func:`forward_partials`),
    so F and G are the exact derivatives of the discrete prediction, free of the round-off that
    differencing it amplifies."""
    nq = model.nq
    x, tau = np.asarray(x, dtype=float), np.asarray(tau, dtype=float)
    n, nj = len(x), len(tau)
    E = np.hstack([np.zeros((nj, n)), np.eye(nj)])  # d tau / d (x, tau)

    def f(z):
        y, dy = z
        Fq, Fqd, Ftau = forward_partials(model, y[:nq], y[nq:], tau)
        qdd = _forward(model, y[:nq], y[nq:], tau)
        return np.concatenate([y[nq:], qdd]), np.vstack([dy[nq:], Fq @ dy[:nq] + Fqd @ dy[nq:] + Ftau @ E])

    x, D = _rk4(f, (x, np.hstack([np.eye(n), np.zeros((n, nj))])), T / steps, steps)
    return x, D[:, :n], D[:, n:]


def _output_matrices(sensors, model, q, qd, tau):
    """(C, D): the readings' Jacobians in x = (q, qd) and in tau through qdd = f(q, qd, tau).
    Encoders and strain gauges are exact rows in q; frame sensors take ``SensorSet.jacobians``,
    composed with :func:`forward_partials`. A torque sensor reads the inverse dynamics at the
    filter's own accelerations, ``ID(q, qd, FD(q, qd, tau)) = S tau``, plus its joint's spring
    torque ``s = Hq q + Hqd qd`` (an elastic joint's): its row is exactly (Hq, Hqd) in x (zero
    on a rigid joint) and S's row in tau (what its inverse-dynamics derivatives give,
    ``dID/dx + M dFD/dx = 0``, here without their round-off)."""
    nq, nj = model.nq, model.n_joints
    torque = [(sl, s.index, k) for k, (s, sl) in enumerate(zip(sensors.sensors, sensors.slices))
              if s.type == "torque"]
    if len(sensors.linear_rows) + len(torque) == len(sensors.sensors):
        Hq, Hqd, Hqdd = (np.zeros((sensors.m, nq)) for _ in range(3))
        for k, row in sensors.linear_rows.items():
            Hq[sensors.slices[k]] = row
    else:
        Hq, Hqd, Hqdd = (np.array(H, dtype=float) for H in sensors.jacobians(q, qd, _forward(model, q, qd, tau)))
    for sl, _, k in torque:
        (Hq[sl], Hqd[sl]), Hqdd[sl] = sensors.spring_rows[k], 0.0
    C, D = np.hstack([Hq, Hqd]), np.zeros((sensors.m, nj))
    if np.any(Hqdd):
        Fq, Fqd, Ftau = forward_partials(model, q, qd, tau)
        C += np.hstack([Hqdd @ Fq, Hqdd @ Fqd])
        D = Hqdd @ Ftau
    actuated = np.asarray(model.actuated)
    for sl, i, _ in torque:
        D[sl] = (actuated == i).astype(float)
    return C, D


def observability(Ad, C, names, T, tol=1e-8):
    """The modes of ``Ad`` that ``C`` cannot see (PBH test: ``C v = 0`` for an eigenvector v):
    a list of (frequency in Hz, the coordinates that dominate the mode)."""
    lam, V = np.linalg.eig(Ad)
    nq = len(names)
    out = []
    scale = max(np.linalg.norm(C, 2), 1e-300)
    for k in range(len(lam)):
        v = V[:, k] / np.linalg.norm(V[:, k])
        if np.linalg.norm(C @ v) <= tol * scale:
            w = np.abs(v[:nq]) if np.any(np.abs(v[:nq]) > 1e-12) else np.abs(v[nq:])
            top = [names[i] for i in np.argsort(-w)[:2] if w[i] > 0.3 * w.max()]
            freq = abs(np.angle(lam[k])) / (2.0 * np.pi * T)
            if not any(abs(f - freq) < 1e-9 * max(1.0, freq) and t == top for f, t in out):
                out.append((freq, top))
    return out


def _unobservable_text(missing):
    parts = [f"{'the rigid motion' if f < 1e-9 else f'the mode at {f:.4g} Hz'} of {', '.join(top)}" for f, top in missing]
    return "; ".join(parts)


class KalmanFilter:
    """A discrete Kalman filter of a robot's state x = (q, qd) from a :class:`~flexman.sensors.SensorSet`
    read every ``period`` seconds (see the module doc). ``gain`` (2 nq, m) is the steady-state
    current-form gain, ``P`` the prior (predicted) covariance and ``P_post`` the corrected one;
    ``Ad, Bd, C, D, Q, R`` the design's model. The state of a run: ``reset(q0, qd0, P0)``,
    then ``correct(y, tau_prev)`` at each sample and ``predict(tau)`` over it."""

    def __init__(self, robot, sensors, period, q, torque_noise, extended=False, model=None, steps=1):
        from scipy.linalg import solve_discrete_are

        self.robot, self.sensors, self.period, self.extended, self.steps = robot, sensors, float(period), extended, steps
        self.model = model or robot
        nq, nj = robot.nq, robot.n_joints
        self.pose = np.asarray(q, dtype=float)
        self.tau0 = np.asarray(self.model.bias_forces(self.pose, np.zeros(nq)), dtype=float)[:nj]
        self.A, self.B = linearize_plant(self.model, self.pose, tau=self.tau0)
        self.Ad, self.Bd = discretize(self.A, self.B, self.period)
        self.C, self.D = _output_matrices(sensors, self.model, self.pose, np.zeros(nq), self.tau0)
        sigma = np.broadcast_to(np.asarray(torque_noise, dtype=float), (nj,))
        self.W = np.diag(sigma ** 2)
        self.Q = self.Bd @ self.W @ self.Bd.T
        self.R = sensors.covariance
        missing = observability(self.Ad, self.C, list(robot.coordinate_names), self.period)
        if missing:
            raise ValueError(f"sensors: the chosen sensors cannot observe {_unobservable_text(missing)}; add a sensor "
                             "that sees this motion (an encoder on that joint, a strain gauge on that beam and bending plane)")
        if not np.all(np.diag(self.R) > 0):
            raise ValueError("sensors: every reading needs noise > 0 (or an encoder's quantisation) for a Kalman filter; "
                             "give each sensor its noise standard deviation")
        self.P = solve_discrete_are(self.Ad.T, self.C.T, self.Q, self.R)
        S = self.C @ self.P @ self.C.T + self.R
        self.gain = np.linalg.solve(S, self.C @ self.P).T
        self.P_post = self.P - self.gain @ self.C @ self.P
        self.P_post = 0.5 * (self.P_post + self.P_post.T)
        self.reset(self.pose, np.zeros(nq))

    @property
    def predictor_gain(self):
        """``Ad M``: the gain of the predictor form (python-control's ``dlqe``)."""
        return self.Ad @ self.gain

    def reset(self, q0, qd0, P0=None):
        """Start a run from the predicted state (q0, qd0) with covariance P0 (default: the steady prior)."""
        self.x = np.concatenate([np.asarray(q0, float), np.asarray(qd0, float)])
        self.Pk = self.P.copy() if P0 is None else np.array(P0, dtype=float)
        self.Pk_post = self.P_post.copy()

    def correct(self, y, tau):
        """The corrected estimate x̂ from the reading y (``tau``: the torque applied just before, for
        readings that depend on the acceleration)."""
        nq = self.robot.nq
        q, qd = self.x[:nq], self.x[nq:]
        qdd = _forward(self.model, q, qd, tau) if np.any(self.D) or self._needs_qdd else np.zeros(nq)
        innovation = np.asarray(y, float) - self.sensors.h(q, qd, qdd)
        if self.extended:
            C, _ = _output_matrices(self.sensors, self.model, q, qd, tau)
            S = C @ self.Pk @ C.T + self.R
            K = np.linalg.solve(S, C @ self.Pk).T
            self.Pk_post = self.Pk - K @ C @ self.Pk
            self.Pk_post = 0.5 * (self.Pk_post + self.Pk_post.T)
        else:
            K = self.gain
        self.x = self.x + K @ innovation
        return self.x.copy()

    def loop_spec(self):
        """The filter as data for the compiled sampled loop (:mod:`flexman.simulate.compiled_sampled`),
        or None when its correction or prediction is overridden: ``extended``, the steady-state
        ``gain``, the prediction's ``period`` and RK4 ``steps``, its ``model`` and ``sensors``, the
        current prediction ``x`` and ``needs_qdd`` (whether the correction evaluates qdd); for the
        EKF the run's covariances ``P`` and ``P_post`` (a compiled run updates them in place, as it
        does ``x``) and the noise covariances ``R`` and ``W``."""
        kind = type(self)
        if any(getattr(kind, name) is not getattr(KalmanFilter, name) or name in vars(self)
               for name in ("correct", "predict")):
            return None
        return {"extended": self.extended, "gain": self.gain, "period": self.period, "steps": self.steps,
                "model": self.model, "sensors": self.sensors, "x": self.x,
                "needs_qdd": bool(np.any(self.D) or self._needs_qdd), "P": self.Pk, "P_post": self.Pk_post,
                "R": self.R, "W": self.W}

    @property
    def _needs_qdd(self):
        return any(s.type in ("accelerometer", "torque") for s in self.sensors.sensors)

    def predict(self, tau):
        """The prediction one sample ahead under the applied torque (nonlinear model; the EKF also
        propagates its covariance through the exact derivative of that prediction)."""
        if self.extended:
            self.x, F, G = rk4_transition(self.model, self.x, tau, self.period, self.steps)
            self.Pk = F @ self.Pk_post @ F.T + G @ self.W @ G.T
        else:
            self.x = rk4_sample(self.model, self.x, tau, self.period, self.steps)
        return self.x.copy()

    def covariance(self):
        """The covariance of the current corrected estimate (steady state, or the EKF's own)."""
        return self.Pk_post if self.extended else self.P_post


def kalman(robot, sensors, rate, q=None, torque_noise=1.0, extended=False, model=None, steps=None):
    """A :class:`KalmanFilter` of ``robot`` from ``sensors`` (a SensorSet, a list of sensors, or
    None: the robot's own) read at ``rate`` Hz, designed at the pose ``q`` (default: zero) with a
    torque disturbance of standard deviation ``torque_noise`` (N m, one or per joint).
    ``steps``: RK4 steps per sample of the filter's prediction (default: as many as the robot's
    highest mode needs for a stable step, :func:`flexman.simulate.stability.rk4_substeps`)."""
    from ..sensors import SensorSet, sensor_set

    rate = float(rate)
    if not (np.isfinite(rate) and rate > 0):
        raise ValueError(f"rate: the filter's sample rate must be a number > 0 Hz (got {rate:g})")
    noise = np.asarray(torque_noise, dtype=float)
    if not np.all(np.isfinite(noise)) or np.any(noise < 0):
        raise ValueError("torque_noise: a standard deviation must be a finite number >= 0 (N m)")
    if not isinstance(sensors, SensorSet):
        sensors = sensor_set(robot, sensors, 0)
        sensors.model = model or robot
    if not sensors.sensors:
        raise ValueError("sensors: a Kalman filter needs sensors; give a list or a model file's sensors: section")
    for s in sensors.sensors:
        if s.latency:
            raise ValueError(f"sensors: {s.name} reports {s.latency:g} s late; this filter takes readings without "
                             "latency (leave latency out for the estimator's sensors)")
        if s.rate is not None and abs(s.rate - rate) > 1e-9 * rate:
            raise ValueError(f"sensors: {s.name} samples at {s.rate:g} Hz but the filter runs at {rate:g} Hz; give the "
                             "sensor the filter's rate or leave its rate out")
    q = np.zeros(robot.nq) if q is None else np.asarray(q, dtype=float)
    if q.shape != (robot.nq,) or not np.all(np.isfinite(q)):
        raise ValueError(f"q: the design pose needs nq = {robot.nq} finite values")
    if steps is None:
        from ..simulate.stability import rk4_substeps

        steps = rk4_substeps(robot, 1.0 / rate)
    elif isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise ValueError(f"steps: the prediction's RK4 steps per sample must be a whole number >= 1 (got {steps!r:.40})")
    return KalmanFilter(robot, sensors, 1.0 / rate, q, noise, extended=extended, model=model, steps=int(steps))
