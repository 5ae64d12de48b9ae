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
IMPLICIT_METHODS = ("generalized_alpha",)
#: methods only the compiled loop runs (no Python twin: SciPy's "Radau" is the same method there)
COMPILED_METHODS = ("radau5",)
METHODS = ("rk4",) + IMPLICIT_METHODS + COMPILED_METHODS + ADAPTIVE_METHODS
#: the smallest rtol of radau5 (as SciPy's Radau: below it the error estimate is round-off)
RADAU_MIN_RTOL = 100 * 2.220446049250313e-16
#: the default high-frequency damping of generalized-alpha: modes far above 1/h lose 1 - 0.8 of
#: their amplitude per step; the resolved ones keep second-order accuracy
RHO_INF = 0.8


#: a Newton iteration of an implicit step has converged when it changes no state component by more
#: than this, relative to 1 + |x_i| + h |x_i'| (rad, m, rad/s, ...: 1e-12 is far below any physical
#: figure; the rate term is the scale of the step's own increment, so round-off in a fast rate counts)
NEWTON_TOL = 1e-12


def alpha_parameters(rho_inf):
    """(alpha_m, alpha_f, gamma) of first-order generalized-alpha for the spectral radius at
    infinity ``rho_inf`` in [0, 1] (Jansen, Whiting & Hulbert 2000: second order, A-stable)."""
    rho = float(rho_inf)
    if isinstance(rho_inf, bool) or not (0.0 <= rho <= 1.0):
        raise ValueError(f"rho_inf: must be a number in [0, 1] (the spectral radius at infinite step: 1 keeps "
                         f"every mode, 0 damps unresolved ones in one step); got {rho_inf!r:.40}")
    am, af = 0.5 * (3.0 - rho) / (1.0 + rho), 1.0 / (1.0 + rho)
    return am, af, 0.5 + am - af


def jacobian(f, t, x, f0):
    """df/dx at (t, x) by forward differences (f0 = f(t, x))."""
    J = np.empty((len(x), len(x)))
    for j in range(len(x)):
        h = 1.4901161193847656e-08 * max(1.0, abs(x[j]))
        xp = x.copy()
        xp[j] += h
        J[:, j] = (f(t, xp) - f0) / h
    return J


#: exceptions from the right-hand side that end a run with its partial result kept
FAULTS = (SingularMatrixError, np.linalg.LinAlgError, FloatingPointError, OverflowError, ZeroDivisionError)


def _fault(t, message):
    return {"success": False, "diverged": True, "t_fault": float(t), "message": message}


def finished(message):
    """The info of a run that went to its end (a ``message`` saying how)."""
    return {"success": True, "diverged": False, "t_fault": None, "message": message}


def _keep(X, k, x, t_next, progress):
    """Store the state after step k as sample k + 1; the fault (None when fine) of a state that
    is no longer finite."""
    if not np.all(np.isfinite(x)):
        return _fault(t_next, "the state became non-finite (the run diverged)")
    X[k + 1] = x
    if progress is not None:
        progress(t_next)
    return None


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
        fault = _keep(X, k, x, t + h, progress)
        if fault:
            return X[: k + 1], fault
    steps = len(t_grid) - 1
    return X, {"steps": steps, **finished("fixed-step RK4 finished")}


def generalized_alpha(f, t_grid, x0, rho_inf=RHO_INF, after_first_stage=None, progress=None):
    """Integrate with generalized-alpha (first-order form, Jansen, Whiting & Hulbert 2000) on the
    grid: the Python loop's twin of the compiled loop's ``fm_galpha_run``, step for step.

    The unknown of each step is the rate v = x'(t_{k+1}); with x_{k+1} = x_k + h ((1 - gamma)
    v_k + gamma v) the stage equation v_k + alpha_m (v - v_k) = f(t_k + alpha_f h, x_k +
    alpha_f (x_{k+1} - x_k)) is solved by Newton's method with the iteration matrix
    alpha_m I - alpha_f gamma h J, J = df/dx at the step's start (refreshed once when an
    iteration slows down), until no state component changes by more than ``NEWTON_TOL``
    relative to 1 + |x_i| + h |v_i| (per component: rates and positions differ by orders of magnitude). ``after_first_stage(k)`` as for :func:`rk4`. Returns (X, info)."""
    am, af, gm = alpha_parameters(rho_inf)
    t_grid = np.asarray(t_grid, dtype=float)
    X = np.empty((len(t_grid), len(x0)))
    x = X[0] = np.asarray(x0, dtype=float)
    iterations = jacobians = 0
    eye = np.eye(len(x))
    for k in range(len(t_grid) - 1):
        t, h = t_grid[k], t_grid[k + 1] - t_grid[k]
        ta = t + af * h
        try:
            f0 = f(t, x)
            if after_first_stage is not None:
                after_first_stage(k)
            if k == 0:
                vn = f0  # the rates at the start: the first step's predictor
            lu = _factor(am * eye - af * gm * h * jacobian(f, t, x, f0))
            jacobians += 1
            v, last, refreshed, converged = vn.copy(), np.inf, False, False
            for _ in range(40):
                xa = x + af * h * ((1.0 - gm) * vn + gm * v)
                fa = f(ta, xa)
                step = _solve(lu, fa - (vn + am * (v - vn)))
                v = v + step
                iterations += 1
                size = np.max(h * np.abs(step) / (1.0 + np.abs(x) + h * np.abs(v)))  # per component
                if not np.isfinite(size):
                    break
                if size <= NEWTON_TOL:
                    converged = True
                    break
                if size > 0.5 * last and not refreshed:  # fa is f at this iterate's xa
                    lu = _factor(am * eye - af * gm * h * jacobian(f, ta, xa, fa))
                    jacobians += 1
                    refreshed = True
                last = size
        except FAULTS as exc:
            return X[: k + 1], _fault(t, f"{type(exc).__name__}: {exc}")
        if not converged:
            return X[: k + 1], _fault(t, "the implicit stage did not converge (the run diverged)")
        with np.errstate(all="ignore"):
            x = x + h * ((1.0 - gm) * vn + gm * v)
        vn = v
        fault = _keep(X, k, x, t + h, progress)
        if fault:
            return X[: k + 1], fault
    steps = len(t_grid) - 1
    return X, {"steps": steps, "newton_iterations": iterations, "jacobians": jacobians,
               **finished(f"fixed-step generalized-alpha finished (rho_inf = {float(rho_inf):g})")}


def _factor(A):
    import scipy.linalg

    lu = scipy.linalg.lu_factor(A, check_finite=True)
    if not np.all(np.abs(np.diag(lu[0])) > 0):
        raise np.linalg.LinAlgError("the implicit step's iteration matrix is singular")
    return lu


def _solve(lu, b):
    import scipy.linalg

    return scipy.linalg.lu_solve(lu, b)


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
        info = finished("the solver reached the end of the interval")
    info.update(steps=steps, jacobian_evaluations=int(solver.njev),
                lu_decompositions=int(solver.nlu))
    return np.array(ts), np.array(xs), info
