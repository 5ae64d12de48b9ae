"""Time integrators for x' = f(t, x): fixed-step classic Runge-Kutta and SciPy's solvers.

FLX integrated its equations with the classic fourth-order Runge-Kutta scheme, evaluating
the full dynamics at each of the four stages (000 sec. 3.1); ``rk4`` does the same on the
output grid. The adaptive and stiff methods (useful for stiff flexible modes) are SciPy's
solver classes (those behind ``solve_ivp``), stepped here one step at a time and sampled on
the same grid through their dense output.

Both stop at the first fault and keep everything computed before it: a state that is no
longer finite (the run diverged), a solver that cannot continue (step size underflow), or a
numerical failure in the right-hand side (a singular mass matrix, say). ``info`` then has
``success`` False, ``diverged`` True and ``t_fault``, the time the fault was met; the
returned samples are the finite ones before it.
"""
from __future__ import annotations

import numpy as np

from ..model.errors import SingularMatrixError

ADAPTIVE_METHODS = ("RK45", "DOP853", "Radau", "BDF", "LSODA")
METHODS = ("rk4",) + ADAPTIVE_METHODS


#: exceptions from the right-hand side that end a run with its partial result kept
FAULTS = (SingularMatrixError, np.linalg.LinAlgError, FloatingPointError, OverflowError, ZeroDivisionError)


def _fault(t, message):
    return {"success": False, "diverged": True, "t_fault": float(t), "message": message}


def _finished(message):
    return {"success": True, "diverged": False, "t_fault": None, "message": message}


def rk4(f, t_grid, x0, after_first_stage=None, progress=None):
    """Integrate with one classic RK4 step between consecutive times of ``t_grid``.

    ``after_first_stage(k)`` runs right after f was evaluated at (t_k, x_k), so a caller can
    record quantities computed there (the applied torques). Returns (X, info); after a fault
    X holds the samples before it (see the module doc).
    """
    t_grid = np.asarray(t_grid, dtype=float)
    X = np.empty((len(t_grid), len(x0)))
    x = X[0] = np.asarray(x0, dtype=float)
    for k in range(len(t_grid) - 1):
        t, h = t_grid[k], t_grid[k + 1] - t_grid[k]
        try:
            k1 = f(t, x)
            if after_first_stage is not None:
                after_first_stage(k)
            k2 = f(t + 0.5 * h, x + 0.5 * h * k1)
            k3 = f(t + 0.5 * h, x + 0.5 * h * k2)
            k4 = f(t + h, x + h * k3)
        except FAULTS as exc:
            return X[: k + 1], _fault(t, f"{type(exc).__name__}: {exc}")
        with np.errstate(all="ignore"):
            x = x + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        if not np.all(np.isfinite(x)):
            return X[: k + 1], _fault(t + h, "the state became non-finite (the run diverged)")
        X[k + 1] = x
        if progress is not None:
            progress(t + h)
    steps = len(t_grid) - 1
    return X, {"steps": steps, **_finished("fixed-step RK4 finished")}


def adaptive(f, t_grid, x0, method="RK45", rtol=1e-8, atol=1e-10, max_step=np.inf):
    """Integrate with one of SciPy's solvers, stepped here, sampled at ``t_grid``.
    Returns (t, X, info); after a fault t and X stop at the last output time reached."""
    if method not in ADAPTIVE_METHODS:
        raise ValueError(f"method: unknown '{method}'; use one of {', '.join(METHODS)}")
    from scipy import integrate as scipy_integrate  # here: importing SciPy's solvers costs a fixed-step run

    t_grid = np.asarray(t_grid, dtype=float)
    solver = getattr(scipy_integrate, method)(f, t_grid[0], np.asarray(x0, dtype=float), t_grid[-1],
                                     rtol=rtol, atol=atol, max_step=max_step)
    ts, xs = [t_grid[0]], [np.asarray(x0, dtype=float)]
    k, info, steps = 1, None, 0
    while solver.status == "running" and info is None:
        t_old = solver.t
        try:
            message = solver.step()
        except FAULTS as exc:
            info = _fault(t_old, f"{type(exc).__name__}: {exc}")
            break
        if solver.status == "failed":
            info = _fault(t_old, str(message))
            break
        if not np.all(np.isfinite(solver.y)):
            info = _fault(solver.t, "the state became non-finite (the run diverged)")
            break
        steps += 1
        stop = np.searchsorted(t_grid, solver.t, side="right")
        if stop > k:
            dense = solver.dense_output()
            for t in t_grid[k:stop]:
                ts.append(t)
                xs.append(solver.y.copy() if t == solver.t else dense(t))
            k = stop
    if info is None:
        info = _finished("the solver reached the end of the interval")
    info.update(steps=steps, jacobian_evaluations=int(solver.njev),
                lu_decompositions=int(solver.nlu))
    return np.array(ts), np.array(xs), info
