"""The Python loop of a sampled controller (:class:`flexman.control.sampled.Sampled`): at every
sample the controller reads the plant, and its torque is held while the plant is integrated
with RK4 at the output step ``dt`` until the next sample (``dt`` divides the sample period).

The controller is reached through its methods only (``period``, ``delay``, ``start``,
``sample``), so this module needs nothing from :mod:`flexman.control`. The accelerations a
sample's sensors see are those under the torque held just before it (the torque of this sample
is not yet known when the sensors read).
"""
from __future__ import annotations

import time

import numpy as np

from .backend import notice
from .run import check_first_torque, drive_limits, saturate
from .stability import largest_stable_step, rk4_substeps


def sample_steps(controller, dt, t_final):
    """RK4 steps per sample; one-line errors for a step that does not divide the period, or a
    delay longer than the run."""
    period = controller.period
    steps = int(round(period / dt))
    if steps < 1 or abs(steps * dt - period) > 1e-9 * period:
        raise ValueError(f"dt: the output step {dt:g} s must divide the controller's sample period {period:g} s "
                         f"(rate {1 / period:g} Hz); use dt = {period:g} s or a whole fraction of it")
    if controller.delay * period >= t_final:
        raise ValueError(f"controller.delay: {controller.delay} samples ({controller.delay * period:g} s) is not shorter "
                         f"than the run ({t_final:g} s); give a shorter delay or a longer run")
    return steps


def plant_substeps(robot, dt) -> int:
    """RK4 steps per output step ``dt`` for the plant between samples (``method="auto"``): the
    torque is held over a sample, so the plant's own highest mode bounds RK4's step
    (:func:`.stability.largest_stable_step`); a stiff arm's output step is divided so that each
    RK4 step stays within it (with a 10 % margin), and the notice says so once."""
    n = rk4_substeps(robot, float(dt))
    if n > 1:
        notice(f"method='auto': the plant is integrated with RK4 at dt/{n} = {dt / n:.3g} s between the controller's "
               f"samples (its highest mode needs RK4 steps <= {largest_stable_step(robot):.3g} s; the outputs stay at "
               f"dt = {dt:g} s)", key=("substeps", getattr(robot, "name", ""), n))
    return n


def loop_growth(model, controller, q0, qd0, nj, eps=1e-6):
    """The spectral radius of the sampled loop linearized at the start: the plant's (A, B) at
    (q0, qd0) under the law's first torque, held over a period (exact zero-order hold), the law's
    Jacobian in (q, qd) by central differences (its own states held), and the delay line of a
    loop without an estimator (with one, the estimate is carried over the delay by the model, so
    the law acts on the state at the time its torque acts). Above 1 an error grows by that factor
    per sample. None where the law or the plant is not finite there (the run's own checks say
    why in their words)."""
    from ..control.estimation import discretize, linearize_plant

    nq = len(q0)
    controller.start(q0, qd0, nj)
    x0 = np.concatenate([q0, qd0])

    def law(x):
        return np.asarray(controller.law_torque(0.0, x[:nq], x[nq:]), dtype=float)

    with np.errstate(all="ignore"):
        tau0 = law(x0)
        K = np.stack([(law(x0 + eps * e) - law(x0 - eps * e)) / (2.0 * eps) for e in np.eye(2 * nq)], axis=1)
        if not (np.all(np.isfinite(tau0)) and np.all(np.isfinite(K))):
            return None
        A, B = linearize_plant(model, q0, qd0, tau0)
    if not (np.all(np.isfinite(A)) and np.all(np.isfinite(B))):
        return None
    Phi, Gam = discretize(A, B, controller.period)
    n, d = 2 * nq, 0 if controller.estimator is not None else controller.delay
    if d == 0:
        closed = Phi + Gam @ K
    else:  # x, then the torques queued: the oldest acts over this sample, the law's joins the queue
        closed = np.zeros((n + d * nj, n + d * nj))
        closed[:n, :n], closed[:n, n:n + nj] = Phi, Gam
        for j in range(d - 1):
            closed[n + j * nj:n + (j + 1) * nj, n + (j + 1) * nj:n + (j + 2) * nj] = np.eye(nj)
        closed[n + (d - 1) * nj:, :n] = K
    with np.errstate(all="ignore"):
        return float(np.abs(np.linalg.eigvals(closed)).max())


def refine(t, n):
    """The grid ``t`` with each interval divided into ``n`` equal steps (``refine(t, n)[::n]`` is ``t``)."""
    if n == 1:
        return t
    fractions = np.arange(n) / n
    inner = (t[:-1, None] + fractions * np.diff(t)[:, None]).ravel()
    return np.append(inner, t[-1])


def run_sampled(model, controller, t_grid, q0, qd0, nq, nj, steps, reduced=None, x_start=None):
    """(t, X (N, 2 nq), taus (N, nj), record, stats) of a sampled run on the output grid ``t_grid``
    (the applied torques, disturbance included); ``record`` holds the sample times, readings,
    their true values and the estimates. ``reduced``: a reduced model of the plant (``fm.reduce``,
    evaluating with ``model``): the plant integrates its active coordinates ((q0, qd0) and X's
    rows are those), its dropped ones solved under the held torque from q_d = 0 on, and the
    controller reads the full coordinates there (dropped rates and accelerations zero). ``x_start``:
    the full state (q, qd) the controller starts from (default: (q0, qd0))."""
    start = time.perf_counter()
    N = len(t_grid)
    X = np.empty((N, 2 * len(q0)))
    taus = np.empty((N, nj))
    X[0] = np.concatenate([q0, qd0])
    na = len(q0)
    if reduced is not None:
        reduced.warm_start[:] = 0.0
    controller.start(*((q0, qd0) if x_start is None else x_start), nj)
    ts, ys, trues, est = [], [], [], []
    x = X[0].copy()
    tau_applied = np.zeros(nj)
    limit = drive_limits(model)
    k, evals, diverged, t_fault, message = 0, 0, False, None, "completed"

    def accelerations(x, tau):
        if reduced is None:
            return np.asarray(model.forward_dynamics(x[:nq], x[nq:], tau), float)
        return reduced.solve(x[:na], x[na:], tau=tau)[2]

    def f(x, tau):
        return np.concatenate([x[na:], accelerations(x, tau)])

    def full(x, tau):  # (q, qd, qdd) of the robot at the plant's state under tau
        if reduced is None:
            return x[:nq], x[nq:], accelerations(x, tau)
        q, qd, acc, _ = reduced.solve(x[:na], x[na:], tau=tau)
        qdd = np.zeros(nq)
        qdd[list(reduced.active)] = acc
        return q, qd, qdd

    i = 0
    with np.errstate(over="ignore", invalid="ignore"):  # a blow-up is reported once, after the run
        while i < N - 1:
            t = t_grid[i]
            _, tau_applied, y, y_true, xhat = controller.sample(t, *full(x, tau_applied))
            tau_applied = saturate(tau_applied, limit)  # the drives' limits (the controller's estimate is not told)
            if k == 0:
                check_first_torque(t, tau_applied)
            ts.append(t), ys.append(y), trues.append(y_true), est.append(xhat)
            k += 1
            for _ in range(steps):
                taus[i] = tau_applied
                if i == N - 1:
                    break
                h = t_grid[i + 1] - t_grid[i]
                k1 = f(x, tau_applied)
                k2 = f(x + 0.5 * h * k1, tau_applied)
                k3 = f(x + 0.5 * h * k2, tau_applied)
                k4 = f(x + h * k3, tau_applied)
                x = x + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
                evals += 4
                i += 1
                X[i] = x
                if not np.all(np.isfinite(x)):
                    diverged, t_fault, message = True, t_grid[i], "the state is not finite"
                    break
            if diverged:
                break
    taus[i] = tau_applied
    n_out = i + 1 - (1 if diverged else 0)
    record = {"t": np.array(ts), "y": None if ys[0] is None else np.array(ys),
              "true": None if trues[0] is None else np.array(trues), "estimate": np.array(est)}
    stats = {"rhs_evaluations": evals, "wall_time": time.perf_counter() - start, "loop": "python",
             "samples": k, "success": not diverged,
             "diverged": diverged, "t_fault": t_fault, "message": message, "steps": n_out - 1,
             "sample_rate": 1.0 / controller.period, "delay": controller.delay}
    return t_grid[:n_out], X[:n_out], taus[:n_out], record, stats
