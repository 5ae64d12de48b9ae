"""A controller that runs at a sample rate on what the sensors read, as on a lab bench.

Every ``1/rate`` seconds the sensors are read (bias, seeded noise, encoder counts), an estimator
(:class:`~flexman.control.estimation.KalmanFilter` or its extended form) turns the readings into
an estimate of ``x = [q, qd]``, and the law computes a torque from that estimate. The torque
reaches the drives ``delay`` samples later (the computation time of a real controller) and is
held until the next one arrives (zero-order hold). Between samples the plant is integrated by
RK4 with the steps its highest mode allows; ``torque_noise`` adds a disturbance torque (seeded,
one value per sample and joint, held over the sample) to what the drives apply.

The law is any built-in controller (its ``torque(t, q, qd)`` is evaluated on the estimate: the
decoupling + LQR law fed by a Kalman filter is the LQG controller of :func:`lqg`) or a function
``law(t, q_hat, qd_hat) -> tau``.
"""
from __future__ import annotations

import math
import time
from collections import deque

import numpy as np

from ..model import inputs


def _law(controller):
    if hasattr(controller, "torque"):
        if getattr(controller, "n_states", 0):
            raise ValueError(f"controller: {type(controller).__name__} has states of its own (a PID's integrals); "
                             "sampled control takes a static law (computed torque, decoupling + LQR) or a function")
        return lambda t, q, qd: controller.torque(t, q, qd)
    if callable(controller):
        return controller
    raise ValueError("controller: give a built-in controller or a function law(t, q_hat, qd_hat) -> tau")


def simulate_sampled(robot, t_final, controller, sensors, rate, estimator=None, delay=0, q0=None, qd0=None,
                     torque_noise=0.0, seed=0, backend=None):
    """Run the sampled loop (see the module) for ``t_final`` seconds from ``q0``, ``qd0`` (the
    estimator starts from its own state: ``estimator.reset(x)`` to give it one); returns a
    :class:`~flexman.simulate.Result` at the sample times whose ``measurements`` hold the
    readings (``"y"``), their noise-free values (``"y_true"``) and names, and ``estimate`` the
    estimator's [q, qd] at each sample (the true state when there is no estimator)."""
    from ..simulate import Result
    from ..simulate.stability import largest_stable_step

    t_final = inputs.positive(t_final, "t_final")
    rate = inputs.positive(rate, "rate")
    if isinstance(delay, bool) or not isinstance(delay, (int, np.integer)) or delay < 0:
        raise ValueError(f"delay: a whole number of samples >= 0, got {delay!r}")
    period = 1.0 / rate
    n = int(round(t_final * rate))
    if n < 1:
        raise ValueError(f"rate: {rate:g} Hz gives no sample in t_final = {t_final:g} s; raise the rate or the duration")
    if delay >= n:
        raise ValueError(f"delay: {delay} samples ({delay * period:g} s) is as long as the run ({n} samples); "
                         "give fewer samples of delay or a longer run")
    law = _law(controller)
    nq, nj = robot.nq, robot.n_joints
    model = robot
    if backend != "numeric":
        try:
            model = robot.compiled()
        except (RuntimeError, ValueError, ImportError):
            model = robot
    rng = np.random.default_rng(seed)
    w = np.broadcast_to(np.asarray(torque_noise, dtype=float), (nj,))
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("torque_noise: standard deviations must be finite and >= 0")
    x = np.zeros(2 * nq)
    if q0 is not None:
        x[:nq] = inputs.finite(inputs.state(robot, q0, "q0"), "q0")
    if qd0 is not None:
        x[nq:] = inputs.finite(inputs.state(robot, qd0, "qd0"), "qd0")
    h_max = largest_stable_step(robot) if robot.nf else np.inf
    sub = max(1, math.ceil(period / (0.8 * h_max))) if np.isfinite(h_max) else 1
    h = period / sub
    hold = np.zeros(nj)
    if estimator is not None:  # before the first computed torque arrives the drives hold the operating torque
        hold = np.array(estimator.u0, dtype=float)
    queue = deque([hold.copy() for _ in range(delay)])
    T, Xs, U, Y, Ytrue, Xhat = [], [], [], [], [], []
    f = lambda x, u: np.concatenate([x[nq:], model.forward_dynamics(x[:nq], x[nq:], u)])
    start = time.perf_counter()
    applied = hold
    for k in range(n + 1):
        t = k * period
        q, qd = x[:nq], x[nq:]
        qdd = model.forward_dynamics(q, qd, applied)
        Ytrue.append(sensors.h(q, qd, qdd))
        y = sensors.read(q, qd, qdd, rng)
        Y.append(y)
        estimate = estimator.correct(y) if estimator is not None else x.copy()
        Xhat.append(estimate)
        T.append(t)
        Xs.append(x.copy())
        if k == n:
            U.append(applied.copy())
            break
        command = np.asarray(law(t, estimate[:nq], estimate[nq:]), dtype=float)
        queue.append(command)
        applied = queue.popleft()
        U.append(applied.copy())
        if estimator is not None:
            estimator.predict(applied)
        drive = applied + (rng.standard_normal(nj) * w if np.any(w) else 0.0)
        for _ in range(sub):
            k1 = f(x, drive)
            k2 = f(x + 0.5 * h * k1, drive)
            k3 = f(x + 0.5 * h * k2, drive)
            k4 = f(x + h * k3, drive)
            x = x + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        if not np.all(np.isfinite(x)):
            raise FloatingPointError(f"simulate_sampled: the state became non-finite at t = {t + period:g} s "
                                     "(the loop is unstable: check the gains, the rate and the delay)")
    X = np.array(Xs)
    q, qd = X[:, :nq], X[:, nq:]
    energy = robot.kinetic_energy(q, qd) + robot.potential_energy(q)
    stats = {"rate": rate, "delay": delay, "substeps": sub, "steps": n * sub, "wall_time": time.perf_counter() - start,
             "loop": "python (sampled)", "success": True, "message": "sampled loop finished"}
    return Result(np.array(T), q, qd, np.array(U), energy, robot=robot, method="rk4", stats=stats,
                  controller=controller if hasattr(controller, "torque") else None,
                  measurements={"t": np.array(T), "names": list(sensors.names), "y": np.array(Y),
                                "y_true": np.array(Ytrue)},
                  estimate=np.array(Xhat))


def lqg(robot, traj, sensors, rate, torque_noise, q=None, extended=False, **decoupling):
    """(law, estimator): the decoupling + LQR law (``decoupling``: its gains, ``lqr_weights``...;
    see :class:`~flexman.control.Decoupling`) fed by a Kalman filter of ``sensors`` at ``rate``
    (designed at the pose ``q``, default the reference's end), for :func:`simulate_sampled`."""
    from . import Decoupling
    from .estimation import ExtendedKalmanFilter, KalmanFilter

    law = Decoupling(robot, traj, **decoupling)
    pose = np.asarray(traj(traj.t_end if hasattr(traj, "t_end") else 0.0)[0]) if q is None else q
    kind = ExtendedKalmanFilter if extended else KalmanFilter
    return law, kind(robot, sensors, 1.0 / inputs.positive(rate, "rate"), pose, torque_noise)
