"""Joint-space reference trajectories: rest-to-rest profiles and clamped cubic splines.

Every trajectory is a callable ``traj(t) -> (q, qd, qdd)``. It is batched in time: a
scalar ``t`` gives arrays of shape ``(n,)``, ``t`` of shape ``(k,)`` gives ``(k, n)``.
Before its start it holds the first point and after its end the last point, with zero
velocity and acceleration, so a controller can keep using it after the move.

Sources: the smooth sinusoidal rest-to-rest profile of Theodore & Ghosal (004, sec. 5);
the cubic-spline joint trajectories fed to FLX's PID controllers (000, sec. 3.1).
"""
from __future__ import annotations

import numpy as np
from scipy.interpolate import CubicSpline

PROFILES = ("sinusoidal", "quintic", "cubic")


class Trajectory:
    """A reference over [t_start, t_end] given by ``evaluate(t) -> (q, qd, qdd)``."""

    def __init__(self, t_start, t_end, evaluate, n):
        self.t_start = float(t_start)
        self.t_end = float(t_end)
        self.n = int(n)
        self._evaluate = evaluate

    @property
    def duration(self) -> float:
        return self.t_end - self.t_start

    def __call__(self, t):
        t = np.asarray(t, dtype=float)
        tc = np.clip(t, self.t_start, self.t_end)
        q, qd, qdd = self._evaluate(tc)
        moving = ((t >= self.t_start) & (t <= self.t_end))[..., None]
        return q, np.where(moving, qd, 0.0), np.where(moving, qdd, 0.0)


def _normalized(profile):
    """s(x), s'(x), s''(x) on x in [0, 1] with s(0) = 0, s(1) = 1."""
    if profile == "sinusoidal":
        w = 2.0 * np.pi
        return (lambda x: x - np.sin(w * x) / w,
                lambda x: 1.0 - np.cos(w * x),
                lambda x: w * np.sin(w * x))
    if profile == "quintic":
        return (lambda x: x**3 * (10.0 - 15.0 * x + 6.0 * x**2),
                lambda x: 30.0 * x**2 * (1.0 - x) ** 2,
                lambda x: 60.0 * x * (1.0 - x) * (1.0 - 2.0 * x))
    if profile == "cubic":
        return (lambda x: x**2 * (3.0 - 2.0 * x),
                lambda x: 6.0 * x * (1.0 - x),
                lambda x: 6.0 - 12.0 * x)
    raise ValueError(f"profile: unknown '{profile}'; use one of {', '.join(PROFILES)}")


def rest_to_rest(q_start, q_end, duration, profile="sinusoidal"):
    """Move from ``q_start`` to ``q_end`` in ``duration`` seconds, starting and ending at rest.

    ``sinusoidal`` (004 sec. 5): ``q = q0 + (qf - q0) (t/T - sin(2 pi t/T) / (2 pi))``, zero
    velocity and acceleration at both ends; ``quintic``: zero velocity and acceleration at
    both ends; ``cubic``: zero velocity only (acceleration jumps at the ends).
    """
    q0 = np.atleast_1d(np.asarray(q_start, dtype=float))
    qf = np.atleast_1d(np.asarray(q_end, dtype=float))
    q0, qf = np.broadcast_arrays(q0, qf)
    T = float(duration)
    if not T > 0:
        raise ValueError(f"duration: must be > 0 (got {duration})")
    s, ds, dds = _normalized(profile)
    dq = qf - q0

    def evaluate(t):
        x = (t / T)[..., None]
        return q0 + dq * s(x), dq * ds(x) / T, dq * dds(x) / T**2

    traj = Trajectory(0.0, T, evaluate, q0.size)
    traj.q_start, traj.q_end, traj.profile = q0.copy(), qf.copy(), profile
    return traj


def spline(times, points):
    """Clamped cubic spline through via points (zero velocity at the first and last), as
    used to command FLX's joint controllers (000 sec. 3.1). ``points``: (k, n) or (k,)."""
    times = np.asarray(times, dtype=float)
    pts = np.asarray(points, dtype=float)
    if pts.ndim == 1:
        pts = pts[:, None]
    if times.ndim != 1 or len(times) < 2 or len(times) != len(pts):
        raise ValueError("spline: give k >= 2 strictly increasing times and k points")
    if np.any(np.diff(times) <= 0):
        raise ValueError("spline: times must be strictly increasing")
    cs = CubicSpline(times, pts, axis=0, bc_type="clamped")
    d1, d2 = cs.derivative(1), cs.derivative(2)
    traj = Trajectory(times[0], times[-1], lambda t: (cs(t), d1(t), d2(t)), pts.shape[1])
    traj.q_start, traj.q_end, traj.times, traj.points = pts[0].copy(), pts[-1].copy(), times, pts
    return traj
