"""Optimised excitation for identification: ``fm.analysis.excitation(robot, period, harmonics, limits=...)``.

The joints follow a finite Fourier series (Swevers, Ganseman, Tukel, De Schutter & Van Brussel,
1997: :class:`flexman.trajectory.FourierSeries`), periodic, so that data of many periods can be
averaged and differentiated without end effects. Its coefficients are chosen to minimise the
condition number of the stacked base regressor over one period (in SI units, the criterion of
Swevers et al. and of Gautier & Khalil): a small condition number means every identifiable
combination of parameters is seen by the torques, none drowned by the others.

The limits are kept by construction rather than by a constrained optimiser: each joint's series
is scaled to the largest amplitude its position range, rate and acceleration limits allow and
centred in its range (closed form), and when torque limits are given the whole motion is slowed
in amplitude by bisection until every torque fits. The optimiser therefore searches only the
*shape* of the motion: a few random starts, the best refined by L-BFGS-B (finite differences),
with a penalty on torque excess during the search and the exact scaling at the end, checked on a
grid ten times finer than the one optimised.
"""
from __future__ import annotations

import numpy as np

from ..trajectory import FourierSeries
from . import rigid_regressor as rr

MAX_HARMONICS = 20


def default_limits(robot) -> dict:
    """Limits used where ``limits`` gives none: the model's joint ranges (else +-pi rad or
    +-0.5 m), 1 rad/s or 0.5 m/s, 5 rad/s^2 or 2 m/s^2, and no torque limit."""
    rev = np.array([link.joint == "revolute" for link in robot.joint_links])
    q = np.array([link.limits if link.limits is not None else ((-np.pi, np.pi) if r else (-0.5, 0.5))
                  for link, r in zip(robot.links, rev)], dtype=float)
    return {"q": q, "qd": np.where(rev, 1.0, 0.5), "qdd": np.where(rev, 5.0, 2.0), "tau": None}


def _limits(robot, limits):
    n = robot.n_joints
    out = default_limits(robot)
    if limits is None:
        return out
    if not isinstance(limits, dict):
        raise ValueError("limits: expected a mapping with any of q ([lower, upper] per joint), qd, qdd, tau "
                         "(largest magnitudes, one per joint or one for all)")
    for key in limits:
        if key not in out:
            raise ValueError(f"limits.{key}: unknown; use q, qd, qdd or tau")
    for key, value in limits.items():
        if value is None:
            continue
        try:
            arr = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"limits.{key}: expected numbers (got {value!r:.60})") from None
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"limits.{key}: must be finite numbers")
        if key == "q":
            arr = np.broadcast_to(arr, (n, 2)).copy() if arr.shape in ((2,), (n, 2)) else None
            if arr is None:
                raise ValueError(f"limits.q: expected [lower, upper] or {n} such pairs (one per joint)")
            bad = np.flatnonzero(arr[:, 0] >= arr[:, 1])
            if bad.size:
                raise ValueError(f"limits.q: joint {bad[0] + 1} has lower {arr[bad[0], 0]:g} >= upper "
                                 f"{arr[bad[0], 1]:g}; no motion fits an empty range")
        else:
            if arr.shape not in ((), (n,)):
                raise ValueError(f"limits.{key}: expected one number or {n} (one per joint)")
            arr = np.broadcast_to(arr, (n,)).copy()
            if np.any(arr <= 0):
                j = int(np.flatnonzero(arr <= 0)[0])
                raise ValueError(f"limits.{key}: joint {j + 1} has {arr[j]:g}; a largest magnitude must be > 0 "
                                 "(the joint could not move)")
        out[key] = arr
    return out


def _basis(period, harmonics, t):
    """Matrices (len(t), 2H) mapping coefficients [a, b] to q - q0, qd and qdd."""
    w = 2.0 * np.pi / period * np.arange(1, harmonics + 1)
    x = t[:, None] * w
    s, c = np.sin(x), np.cos(x)
    return (np.hstack([s / w, -c / w]), np.hstack([c, s]), np.hstack([-w * s, w * c]))


class _Design:
    """The motion of coefficient shapes x (n, 2H) scaled to the limits, on a time grid."""

    def __init__(self, robot, period, harmonics, L, samples):
        self.robot, self.period, self.H, self.L = robot, period, harmonics, L
        self.t = np.arange(samples) * period / samples
        self.B = _basis(period, harmonics, self.t)

    def kinematic(self, x):
        """(scale, mid, centre) per joint: the factor that brings the shape to the largest amplitude
        its q, qd, qdd limits allow, the middle of its range and the middle of the shape's q."""
        Bq, Bv, Ba = self.B
        sq, sv, sa = x @ Bq.T, x @ Bv.T, x @ Ba.T  # (n, samples)
        span = self.L["q"][:, 1] - self.L["q"][:, 0]
        tiny = 1e-300
        scale = np.minimum.reduce([span / np.maximum(np.ptp(sq, axis=1), tiny),
                                   self.L["qd"] / np.maximum(np.abs(sv).max(axis=1), tiny),
                                   self.L["qdd"] / np.maximum(np.abs(sa).max(axis=1), tiny)])
        mid = self.L["q"].mean(axis=1)
        centre = 0.5 * (sq.max(axis=1) + sq.min(axis=1))
        return scale, mid, centre

    def series(self, x, factor=1.0, amplitude=None):
        """The series of shape x at ``factor`` of the largest amplitude (per joint: ``amplitude``
        in (0, 1] times it, default 1)."""
        scale, mid, centre = self.kinematic(x)
        s = factor * scale * (1.0 if amplitude is None else amplitude)
        coef = x * s[:, None]
        return FourierSeries(self.period, mid - s * centre, coef[:, :self.H], coef[:, self.H:])

    def torque(self, traj):
        q, qd, qdd = traj(self.t)
        return self.robot.inverse_dynamics(q, qd, qdd)


def condition(robot, traj, samples=None, base=None) -> float:
    """Condition number of the stacked base regressor of a joint motion over [0, traj.period]
    (or [traj.t_start, traj.t_end]), in SI units as Swevers et al. and Gautier use it."""
    base = base or rr.base_parameters(robot)
    t0, t1 = (0.0, traj.period) if hasattr(traj, "period") else (traj.t_start, traj.t_end)
    samples = samples or max(200, 4 * len(base.independent))
    t = t0 + np.arange(samples) * (t1 - t0) / samples
    Y = rr.regressor(robot, *traj(t))[..., base.independent]
    sv = np.linalg.svd(Y.reshape(-1, Y.shape[-1]), compute_uv=False)
    return float(sv[0] / sv[-1]) if sv[-1] > 0 else np.inf


def _fit_torque(design, x, L, fine, amplitude=None):
    """The series of shape x, slowed by bisection on its amplitude until every torque on the
    fine grid is within L["tau"]; a one-line ValueError when even the arm held at the centre of
    its ranges needs more."""
    traj = design.series(x, 1.0, amplitude)
    if L["tau"] is None:
        return traj
    within = lambda tr: np.all(np.abs(fine.torque(tr)) <= L["tau"])  # noqa: E731
    if within(traj):
        return traj
    still = design.series(x, 0.0)
    if not within(still):
        tau = np.abs(fine.torque(still)).max(axis=0)
        j = int(np.argmax(tau / L["tau"]))
        raise ValueError(f"limits.tau: joint {j + 1} needs {tau[j]:.3g} to hold the arm still at the centre of its "
                         f"range, above its limit {L['tau'][j]:.3g}; no excitation satisfies these limits")
    lo, hi = 0.0, 1.0
    for _ in range(30):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if within(design.series(x, mid, amplitude)) else (lo, mid)
    return design.series(x, lo, amplitude)


def excitation(robot, period, harmonics, limits=None, seed=0, starts=20, iterations=30, samples=None):
    """An excitation trajectory (:class:`flexman.trajectory.FourierSeries`) whose base regressor
    has a small condition number, within ``limits`` = {"q": [lower, upper] per joint, "qd", "qdd",
    "tau": largest magnitudes} (missing keys: :func:`default_limits`).

    ``period`` (s) and ``harmonics`` fix the series; ``starts`` random shapes are tried and the
    best refined by at most ``iterations`` L-BFGS-B steps on ``samples`` points per period. The
    result carries ``.condition`` (over one period, fine grid), ``.limits`` and
    ``.random_condition`` (the median of the random starts scaled to the same limits: what an
    unoptimised series gives). Rigid arms only."""
    from scipy.optimize import minimize

    rr.check_rigid(robot, "excitation")
    try:
        period = float(period)
    except (TypeError, ValueError):
        raise ValueError(f"period: expected a number of seconds (got {period!r:.40})") from None
    if not (np.isfinite(period) and period > 0):
        raise ValueError(f"period: must be a finite number of seconds > 0 (got {period:g})")
    if isinstance(harmonics, bool) or not float(harmonics).is_integer() or not 1 <= harmonics <= MAX_HARMONICS:
        raise ValueError(f"harmonics: expected a whole number from 1 to {MAX_HARMONICS} (got {harmonics!r})")
    H, n = int(harmonics), robot.n_joints
    L = _limits(robot, limits)
    base = rr.base_parameters(robot)
    P = len(base.independent)
    samples = int(samples or max(12 * H, 3 * P // n + 1, 40))
    design = _Design(robot, period, H, L, samples)
    fine = _Design(robot, period, H, L, 10 * samples)
    if L["tau"] is not None:
        _fit_torque(design, np.ones((n, 2 * H)), L, fine)  # impossible torque limits: refused before searching

    def split(flat):  # shape coefficients and each joint's fraction of its largest amplitude
        return flat[:n * 2 * H].reshape(n, 2 * H), 1.0 / (1.0 + np.exp(-flat[n * 2 * H:]))

    def cost(flat):
        x, amplitude = split(flat)
        traj = design.series(x, 1.0, amplitude)
        q, qd, qdd = traj(design.t)
        Y = rr.regressor(robot, q, qd, qdd)[..., base.independent]
        sv = np.linalg.svd(Y.reshape(-1, P), compute_uv=False)
        value = np.log(sv[0] / max(sv[-1], 1e-300))
        if L["tau"] is not None:
            excess = np.max(np.abs(robot.inverse_dynamics(q, qd, qdd)) / L["tau"]) - 1.0
            value += 10.0 * max(excess, 0.0) ** 2
        return value

    rng = np.random.default_rng(seed)
    decay = np.tile(1.0 / np.arange(1, H + 1), 2)
    full = np.full(n, 3.0)  # amplitude fraction 0.95 at the start
    tries = [rng.standard_normal((n, 2 * H)) * decay for _ in range(max(1, int(starts)))]
    costs = [cost(np.concatenate([x.ravel(), full])) for x in tries]
    best = np.concatenate([tries[int(np.argmin(costs))].ravel(), full])
    sol = minimize(cost, best, method="L-BFGS-B", options={"maxiter": int(iterations), "eps": 1e-4})
    x, amplitude = split(sol.x if sol.fun < min(costs) else best)
    traj = _fit_torque(design, x, L, fine, amplitude)
    traj.condition = condition(robot, traj, 10 * samples, base)
    rand = [condition(robot, _fit_torque(design, xr, L, fine), 10 * samples, base) for xr in tries[:5]]
    traj.random_condition = float(np.median(rand))
    traj.limits = L
    return traj
