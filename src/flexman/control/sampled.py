"""Sampled control: a controller law run at a sample rate from sensor readings, its torque held
over each sample (zero-order hold) and applied ``delay`` whole samples after the readings it was
computed from. :func:`flexman.simulate` integrates the plant between samples
(:mod:`flexman.simulate.sampled`).

At sample k (time ``t_k = k T``) the loop hands :meth:`Sampled.sample` the true state; the
sensors read it (noise, bias, quantisation), the estimator (a :class:`~.estimation.KalmanFilter`)
turns the readings into an estimate, and the law evaluates its torque at the estimate carried
``delay`` samples ahead by the estimator's model under the torques already committed (so the
torque applied at ``t_{k+delay}`` is computed for that time). Without an estimator the law reads
the true state at the sample (sampled state feedback). A torque disturbance of standard
deviation ``torque_noise`` (the Kalman filter's process noise) can be added to the plant, held
over each sample, from its own seeded stream.
"""
from __future__ import annotations

import numpy as np

from .estimation import kalman, rk4_sample

__all__ = ["Sampled", "lqg", "design_pose"]


class Sampled:
    """``law`` (a :class:`~flexman.control.Controller` or ``law(t, q, qd) -> tau``) sampled at
    ``rate`` Hz with ``delay`` whole samples of computation delay, reading ``sensors`` (a
    :class:`~flexman.sensors.SensorSet`) through ``estimator`` (or the true state when None)."""

    def __init__(self, law, rate, delay=0, sensors=None, estimator=None, torque_noise=0.0, seed=0):
        rate = float(rate) if not isinstance(rate, bool) and isinstance(rate, (int, float, np.number)) else np.nan
        if not (np.isfinite(rate) and rate > 0):
            raise ValueError("rate: the controller's sample rate must be a number > 0 Hz (e.g. 1000)")
        if isinstance(delay, bool) or not isinstance(delay, (int, np.integer)) or delay < 0:
            raise ValueError(f"delay: give the computation delay as a whole number of samples >= 0 (got {delay!r:.40})")
        if estimator is not None and sensors is None:
            sensors = estimator.sensors
        if estimator is not None and abs(estimator.period * rate - 1.0) > 1e-9:
            raise ValueError(f"estimator: designed for {1 / estimator.period:g} Hz, the controller runs at {rate:g} Hz; "
                             "design it at the controller's rate")
        noise = np.asarray(torque_noise, dtype=float)
        if not np.all(np.isfinite(noise)) or np.any(noise < 0):
            raise ValueError("torque_noise: a standard deviation must be a finite number >= 0 (N m)")
        self.law, self.rate, self.period, self.delay = law, rate, 1.0 / rate, int(delay)
        self.sensors, self.estimator, self.torque_noise, self.seed = sensors, estimator, noise, int(seed)
        self.robot = getattr(law, "robot", None) or getattr(estimator, "robot", None)
        self.tau_max = getattr(law, "tau_max", None)

    def using(self, model):
        """The law, the estimator and torque sensors evaluating with the simulation's model (the
        compiled one) when it is their robot's (as :meth:`Controller.using`)."""
        if hasattr(self.law, "using"):
            self.law = self.law.using(model)
        mine, theirs = (getattr(r, "robot", r) for r in (self.robot, model))
        if mine is theirs or (hasattr(mine, "content_key") and hasattr(theirs, "content_key")
                              and mine.content_key() == theirs.content_key()):
            if self.estimator is not None:
                self.estimator.model = model
            if self.sensors is not None:
                self.sensors.model = model
        return self

    def law_torque(self, t, q, qd):
        """The law's torque at (t, q, qd) with its own states as they are (no sampling, no delay)."""
        return self._law(t, q, qd)

    def _law(self, t, q, qd):
        law = self.law
        if hasattr(law, "torque"):
            return np.asarray(law.torque(t, q, qd, self.z), dtype=float)
        return np.asarray(law(t, q, qd), dtype=float)

    def start(self, q0, qd0, nj, seed=None):
        """Reset for a run from (q0, qd0): the estimator starts at the true initial state, the
        law's own states at their initial values, the held torques at zero."""
        self.run_seed = self.seed if seed is None else int(seed)
        self.z = np.asarray(self.law.initial_state(), float) if hasattr(self.law, "initial_state") else np.zeros(0)
        self.pending = [np.zeros(nj) for _ in range(self.delay)]
        self.tau_prev = np.zeros(nj)
        self.disturbance = np.random.default_rng([self.run_seed, 2 ** 31 - 1])
        if self.sensors is not None:
            self.sensors.reseed(self.run_seed)
            lags = self.sensors.lags(self.period)  # late position sensors: the samples' positions they look back on
            self.past, self.keep = [], max((whole + 2 for whole, _ in lags), default=2)
        if self.estimator is not None:
            self.estimator.reset(q0, qd0)

    def loop_spec(self):
        """This controller as data for the compiled sampled loop (:mod:`flexman.simulate.compiled_sampled`),
        or None when its sampling is overridden: the ``law``, ``period``, ``delay``, ``sensors``,
        ``estimator`` and ``torque_noise``; after :meth:`start` also the law's states ``z``."""
        kind = type(self)
        if any(getattr(kind, name) is not getattr(Sampled, name) or name in vars(self)
               for name in ("sample", "start", "_law")):
            return None
        return {"law": self.law, "period": self.period, "delay": self.delay, "sensors": self.sensors,
                "estimator": self.estimator, "torque_noise": self.torque_noise, "z": getattr(self, "z", None)}

    def draws(self, n, nj):
        """(sensor draws (n, m) or None, torque disturbance draws (n, nj) or None): the standard
        normal draws ``n`` calls of :meth:`sample` make after :meth:`start`, taken from the same
        streams (for a loop that samples in C)."""
        sensors = None if self.sensors is None else self.sensors.draws(n)
        torque = self.disturbance.standard_normal((n, nj)) if np.any(self.torque_noise) else None
        return sensors, torque

    def sample(self, t, q, qd, qdd):
        """(torque to hold over [t, t + T), readings y, true readings, estimate x̂) at one sample."""
        y = y_true = None
        if self.sensors is not None:
            self.past.append(np.array(q, dtype=float))
            del self.past[:-self.keep]
            y_true = self.sensors.late(self.sensors.h(q, qd, qdd), self.past, self.period)
            y = self.sensors.read(y_true)
        if self.estimator is not None:
            xhat = self.estimator.correct(y, self.tau_prev)
        else:
            xhat = np.concatenate([q, qd])
        nq = len(q)
        x_law, t_law = xhat, t + self.delay * self.period
        if self.delay and self.estimator is not None:  # carry the estimate to the time the torque acts
            for tau in self.pending:
                x_law = rk4_sample(self.estimator.model, x_law, tau, self.period, self.estimator.steps)
        tau_new = self._law(t_law, x_law[:nq], x_law[nq:])
        if len(self.z):  # the law's own states (a PID's integral) by Euler over the sample
            self.z = self.z + self.period * np.asarray(self.law.state_derivative(t_law, x_law[:nq], x_law[nq:], self.z))
        if self.delay:
            self.pending.append(tau_new)
            tau = self.pending.pop(0)
        else:
            tau = tau_new
        if self.estimator is not None:
            self.estimator.predict(tau)
        self.tau_prev = tau
        applied = tau
        if np.any(self.torque_noise):
            applied = tau + self.disturbance.standard_normal(len(tau)) * self.torque_noise
        return tau, applied, y, y_true, xhat


def design_pose(robot, law):
    """The pose a law's estimator is designed at: a decoupling law's LQR pose (its trajectory at
    ``lqr_at``), else the end of its trajectory, flexible coordinates zero; zero without one."""
    q = np.zeros(robot.nq)
    traj = getattr(law, "traj", None)
    if traj is not None:
        at = getattr(law, "lqr_at", None)
        t = float(at) if at is not None else float(getattr(traj, "t_end", 0.0) or 0.0)
        q[robot.joint_index] = traj(t)[0]
    return q


def lqg(robot, law, sensors=None, rate=1000.0, delay=0, torque_noise=1.0, q=None, extended=False, seed=0,
        disturbance=True, model=None):
    """Output feedback: ``law`` (e.g. the decoupling + LQR law) fed by a Kalman filter of the
    ``sensors`` (default: the robot's own) at ``rate`` Hz with ``delay`` samples of delay. The
    filter is designed at ``q`` (default :func:`design_pose`) for a torque disturbance of
    ``torque_noise`` N m, which the simulation adds to the plant when ``disturbance`` is true."""
    est = kalman(robot, sensors, rate, q=design_pose(robot, law) if q is None else q, torque_noise=torque_noise,
                 extended=extended, model=model)
    return Sampled(law, rate, delay=delay, estimator=est, torque_noise=torque_noise if disturbance else 0.0, seed=seed)
