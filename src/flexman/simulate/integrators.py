"""Time integrators for x' = f(t, x): fixed-step classic Runge-Kutta and SciPy's solve_ivp.

FLX integrated its equations with the classic fourth-order Runge-Kutta scheme, evaluating
the full dynamics at each of the four stages (000 sec. 3.1); ``rk4`` does the same on the
output grid. The adaptive and stiff methods (useful for stiff flexible modes) come from
``scipy.integrate.solve_ivp`` and are sampled on the same grid.
"""
from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp

ADAPTIVE_METHODS = ("RK45", "DOP853", "Radau", "BDF", "LSODA")
METHODS = ("rk4",) + ADAPTIVE_METHODS


def rk4(f, t_grid, x0, after_first_stage=None, progress=None):
    """Integrate with one classic RK4 step between consecutive times of ``t_grid``.

    ``after_first_stage(k)`` runs right after f was evaluated at (t_k, x_k), so a caller can
    record quantities computed there (the applied torques). Returns (X, info).
    """
    t_grid = np.asarray(t_grid, dtype=float)
    X = np.empty((len(t_grid), len(x0)))
    x = X[0] = np.asarray(x0, dtype=float)
    for k in range(len(t_grid) - 1):
        t, h = t_grid[k], t_grid[k + 1] - t_grid[k]
        k1 = f(t, x)
        if after_first_stage is not None:
            after_first_stage(k)
        k2 = f(t + 0.5 * h, x + 0.5 * h * k1)
        k3 = f(t + 0.5 * h, x + 0.5 * h * k2)
        k4 = f(t + h, x + h * k3)
        x = X[k + 1] = x + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        if progress is not None:
            progress(t + h)
    steps = len(t_grid) - 1
    return X, {"steps": steps, "success": True, "message": "fixed-step RK4 finished"}


def adaptive(f, t_grid, x0, method="RK45", rtol=1e-8, atol=1e-10, max_step=np.inf):
    """Integrate with ``solve_ivp`` and sample at ``t_grid``. Returns (t, X, info); on failure
    t and X stop at the last output time reached."""
    if method not in ADAPTIVE_METHODS:
        raise ValueError(f"method: unknown '{method}'; use one of {', '.join(METHODS)}")
    t_grid = np.asarray(t_grid, dtype=float)
    sol = solve_ivp(f, (t_grid[0], t_grid[-1]), np.asarray(x0, dtype=float), method=method,
                    t_eval=t_grid, rtol=rtol, atol=atol, max_step=max_step)
    info = {"success": bool(sol.success), "message": str(sol.message),
            "jacobian_evaluations": int(sol.njev), "lu_decompositions": int(sol.nlu)}
    return sol.t, sol.y.T, info
