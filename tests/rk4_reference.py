"""The classic RK4 path written in the tests, independent of flexman's integrators: the
reference that generated simulators and FMUs are compared with."""
from __future__ import annotations

import numpy as np


def rk4_path(f, x0, dt, steps):
    """States (steps + 1, len(x0)) of RK4 at the fixed step ``dt`` on x' = f(x)."""
    x = np.asarray(x0, dtype=float)
    path = [x]
    for _ in range(steps):
        k1 = f(x)
        k2 = f(x + 0.5 * dt * k1)
        k3 = f(x + 0.5 * dt * k2)
        k4 = f(x + dt * k3)
        x = x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        path.append(x)
    return np.array(path)
