"""Optimised excitation for identification: ``fm.analysis.excitation(robot, period, harmonics, limits=...)``.

The joints follow a finite Fourier series (Swevers, Ganseman, Tukel, De Schutter & Van Brussel,
1997: :class:`flexman.trajectory.FourierSeries`), periodic, so that data of many periods can be
averaged and differentiated without end effects. Its coefficients are chosen to minimise the
condition number of the stacked base regressor over one period (in SI units, the criterion of
Swevers et al. and of Gautier & Khalil): a small condition number means every identifiable
combination of parameters is seen by the torques, none drowned by the others.

The search: ``starts`` random series (normal coefficients decaying as 1/harmonic), each scaled
to the largest amplitude its position range, rate and acceleration limits allow and slowed by
bisection until its torques fit, are ranked by condition number; the best ``refine`` of them
are optimised by SLSQP over all coefficients at once. The objective is the log condition number
with its analytic gradient (``d log s = u^T dY v / s`` for the extreme singular values, the
regressor's derivatives taken point by point on the grid and carried through the Fourier basis);
the position, rate and acceleration limits on the grid are linear constraints in the
coefficients and the torque limits nonlinear ones with their Jacobian, all with a 1 % margin.
The best optimised series is then shrunk where needed (each joint's oscillation, then the whole
motion for the torques) until every limit holds: positions, rates and accelerations at their
exact extremes (Newton-polished), torques 0.1 % inside on a grid 40 times finer than the one
optimised.

``random_condition`` is the honest comparison: the median over 11 further random series, drawn
independently of the starts and scaled to the same limits the same way.
"""
from __future__ import annotations

import numpy as np

from ..trajectory import FourierSeries
from . import rigid_regressor as rr

MAX_HARMONICS = 20
TORQUE_GUARD = 1.0 - 1e-3  # torques kept this far inside their limits on the check grid (peaks between its points)


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
    return _cond(Y.reshape(-1, Y.shape[-1]))


def _gram(Y):
    """Y^T Y of a tall (rows, P) matrix by einsum: no threaded BLAS, whose start-up and spinning on
    matrices this small cost many times the arithmetic on a loaded machine."""
    return np.einsum("ki,kj->ij", Y, Y)


def _cond(Y):
    """Condition number of a tall matrix: from the extreme eigenvalues of its Gram matrix (exact to
    ~1e-16 cond^2 relative), by SVD where that is not accurate enough (cond > 1e5)."""
    lam = np.linalg.eigvalsh(_gram(Y))
    if lam[0] > 1e-10 * lam[-1]:
        return float(np.sqrt(lam[-1] / lam[0]))
    sv = np.linalg.svd(Y, compute_uv=False)
    return float(sv[0] / sv[-1]) if sv[-1] > 0 else np.inf


def _fit_torque(design, x, L, fine, amplitude=None):
    """The series of shape x, slowed by bisection on its amplitude until every torque on the
    fine grid is within L["tau"]; a one-line ValueError when even the arm held at the centre of
    its ranges needs more."""
    traj = design.series(x, 1.0, amplitude)
    if L["tau"] is None:
        return traj
    tau_full = fine.torque(traj)
    if np.all(np.abs(tau_full) <= TORQUE_GUARD * L["tau"]):
        return traj
    still = design.series(x, 0.0)
    tau = np.abs(fine.torque(still)).max(axis=0)
    if not np.all(tau <= TORQUE_GUARD * L["tau"]):
        j = int(np.argmax(tau / L["tau"]))
        raise ValueError(f"limits.tau: joint {j + 1} needs {tau[j]:.3g} to hold the arm still at the centre of its "
                         f"range, above its limit {L['tau'][j]:.3g}; no excitation satisfies these limits")
    return design.series(x, _largest_within(lambda g: design.series(x, g, amplitude), tau_full, fine, L), amplitude)


def _largest_within(make, tau_hi, fine, L, steps=30):
    """The largest g in [0, 1] (bisection to 2**-steps) whose series make(g) keeps every torque
    within TORQUE_GUARD * L["tau"] on the fine grid, given that make(0) does and make(1) (torques
    tau_hi there) does not. The halvings, four per torque call (15 amplitudes at once), test only
    the fine points that matter (every 10th, and around each joint's torque peaks at g = 1); the
    answer is then checked on the whole fine grid, and where some other point exceeds a limit,
    that point joins the tested ones and the search goes on below: the same answer as bisecting
    on the whole grid, for a fraction of the torques."""
    t, lim = fine.t, TORQUE_GUARD * L["tau"]
    m = t.size
    ratio = np.abs(tau_hi) / L["tau"]
    peak = (ratio >= np.roll(ratio, 1, axis=0)) & (ratio >= np.roll(ratio, -1, axis=0))
    near = np.unique(np.nonzero(peak)[0])
    keep = np.zeros(m, dtype=bool)
    keep[::10] = True
    for d in (-1, 0, 1):
        keep[(near + d) % m] = True
    while True:
        ts = t[keep]
        lo, hi = 0.0, 1.0
        while hi - lo > 2.0 ** -steps:  # four halvings per torque call: 15 amplitudes at once
            gs = lo + (hi - lo) * np.arange(17) / 16
            states = [np.concatenate(parts) for parts in zip(*(make(g)(ts) for g in gs[1:16]))]
            tau = fine.robot.inverse_dynamics(*states).reshape(15, ts.size, -1)
            ok = np.all(np.abs(tau) <= lim, axis=(1, 2))
            i, k = 0, 16
            while k - i > 1:  # the halvings' own path (the torques need not grow with g)
                m = (i + k) // 2
                i, k = (m, k) if ok[m - 1] else (i, m)
            lo, hi = gs[i], gs[k]
        if lo == 0.0:
            return lo
        over = np.any(np.abs(fine.robot.inverse_dynamics(*make(lo)(t))) > lim, axis=1)
        if not over.any():
            return lo
        keep |= over  # a point the halvings did not test decides: test it too, and search again


class _Problem:
    """log condition number of the base regressor over the design grid and the limits there, as
    functions of the normalised series z = [q0 (n), a (n, H), b (n, H)] with its gradient.

    ``q0_i = mid_i + half_span_i z``, ``a, b = qd_max_i z``. The regressor depends on the series
    only through (q, qd, qdd) at each grid point, so its derivatives are taken point by point: Y
    is linear in qdd (a unit step is exact) and quadratic in qd (a central difference is exact),
    central differences in q; the chain rule through the Fourier basis gives the gradient in z
    for 5n + 1 regressor evaluations, whatever the number of harmonics."""

    def __init__(self, robot, design, L, base, margin):
        self.robot, self.design, self.L = robot, design, L
        self.n, self.H = robot.n_joints, design.H
        self.indep = base.independent
        # the torques: the rigid bodies, armature (rotors) and viscous friction through the regressor's
        # columns, Coulomb friction (flat in the state) beside it; mimic joints through G (q_full = G q + c)
        self.pi = rr.standard_parameters(robot, armature=True, viscous=True)
        self.G = robot.mimic_map()[0] if getattr(robot, "mimic", None) else np.eye(self.n)
        self.coul = np.array([link.joint_coulomb for link in robot.links], dtype=float)
        self.mid = L["q"].mean(axis=1)
        self.half = 0.5 * (L["q"][:, 1] - L["q"][:, 0])
        self.shrink = 1.0 - margin
        self._cache = (None, None)

    def series(self, z):
        n, H = self.n, self.H
        q0 = self.mid + self.half * z[:n]
        c = z[n:].reshape(n, 2 * H) * self.L["qd"][:, None]
        return FourierSeries(self.design.period, q0, c[:, :H], c[:, H:])

    def z_of(self, traj):
        c = np.hstack([traj.a, traj.b]) / self.L["qd"][:, None]
        return np.concatenate([(traj.q0 - self.mid) / self.half, c.ravel()])

    def _states(self, z):
        n = self.n
        Bq, Bv, Ba = self.design.B
        c = z[n:].reshape(n, -1) * self.L["qd"][:, None]
        q0 = self.mid + self.half * z[:n]
        return q0 + Bq @ c.T, Bv @ c.T, Ba @ c.T  # (K, n) each

    def _tau(self, Y, qd, qdd):
        return Y @ self.pi + (self.coul * np.sign(qd @ self.G.T)) @ self.G

    def evaluate(self, z, grad=True):
        """{"f": log condition number, "tau": torques on the grid, with grad: "grad" (of f) and
        "dtau" (d tau / dz, (K n, len(z)))}; the last point is remembered, and a gradient asked
        at the point last evaluated without one reuses its regressor and eigen-decomposition."""
        cached = self._cache
        if cached[0] is not None and np.array_equal(cached[0], z):
            out = cached[1]
            if not grad or "grad" in out:
                return out
        else:
            out = self._value(z)
            self._cache = (z.copy(), out)
        if grad:
            self._gradient(out)
        return out

    def _value(self, z):
        q, qd, qdd = self._states(z)
        K, n = q.shape[0], self.n
        Y0 = rr.regressor(self.robot, q, qd, qdd, armature=True, viscous=True)
        Yb = Y0[..., self.indep].reshape(K * n, -1)
        # extreme singular values and right vectors from the (P, P) Gram matrix: u = Y v / s
        lam, V = np.linalg.eigh(_gram(Yb))
        lmax = lam[-1]
        lmin = max(lam[0], 1e-32 * lmax, 1e-300)
        return {"f": float(0.5 * np.log(lmax / lmin)), "tau": self._tau(Y0, qd, qdd), "states": (q, qd, qdd),
                "Y0": Y0, "Yb": Yb, "eig": (lmax, V[:, -1], lmin, V[:, 0])}

    def _gradient(self, out):
        n = self.n
        q, qd, qdd = out["states"]
        Y0, Yb = out["Y0"], out["Yb"]
        K, h = q.shape[0], 1e-6
        eye = np.eye(n)
        # every perturbed state the derivatives need, in one regressor call: q + h e_j, qd + h e_j,
        # qdd + e_j (forward differences: O(h) in q, O(h) in qd where Y is quadratic, exact in qdd)
        Qs = [q + h * eye[j] for j in range(n)] + [q] * (2 * n)
        Vs = [qd] * n + [qd + h * eye[j] for j in range(n)] + [qd] * n
        As = [qdd] * (2 * n) + [qdd + eye[j] for j in range(n)]
        Y = rr.regressor(self.robot, np.concatenate(Qs), np.concatenate(Vs), np.concatenate(As), armature=True,
                         viscous=True)
        Y = Y.reshape(3 * n, K, n, -1)
        lmax, vmax, lmin, vmin = out["eig"]
        # d log s = u^T dY v / s = (Y v)^T dY v / s^2 for the extreme singular values
        W = (np.outer(Yb @ vmax, vmax) / lmax - np.outer(Yb @ vmin, vmin) / lmin).reshape(K, n, -1)
        dq = (Y[:n] - Y0) / h                 # (n, K, n, P): d Y / d q_j at every grid point
        dv = (Y[n:2 * n] - Y0) / h
        da = Y[2 * n:] - Y0
        Bq, Bv, Ba = self.design.B
        # d f / d (q_j, qd_j, qdd_j) at every grid point, then through the basis
        gq, gv, ga = (np.einsum("kip,jkip->kj", W, d[..., self.indep]) for d in (dq, dv, da))
        out["grad"] = np.concatenate([self.half * gq.sum(axis=0),
                                      ((Bq.T @ gq + Bv.T @ gv + Ba.T @ ga).T * self.L["qd"][:, None]).ravel()])
        Tq, Tv, Ta = (np.einsum("jkip,p->kij", d, self.pi) for d in (dq, dv, da))  # (K, n_rows, n_joints)
        J0 = Tq * self.half[None, None, :]                                            # d tau[k, i] / d q0_j
        Jc = (Tq[..., None] * Bq[:, None, None, :] + Tv[..., None] * Bv[:, None, None, :]
              + Ta[..., None] * Ba[:, None, None, :]) * self.L["qd"][None, None, :, None]   # ... / d coefficients
        out["dtau"] = np.concatenate([J0, Jc.reshape(K, n, -1)], axis=2).reshape(K * n, -1)

    def linear_constraints(self):
        """A z + b >= 0 for the position, rate and acceleration limits on the grid (normalised)."""
        n, H = self.n, self.H
        Bq, Bv, Ba = self.design.B
        K = Bq.shape[0]
        rows, offs = [], []
        s = self.shrink
        for j in range(n):
            def block(B0, basis, scale):  # value of that quantity at each grid point, per z
                A = np.zeros((K, n + n * 2 * H))
                A[:, j] = B0
                A[:, n + j * 2 * H:n + (j + 1) * 2 * H] = basis * self.L["qd"][j]
                return A / scale
            Aq = block(self.half[j], Bq, self.half[j])      # (q - mid) / half
            Av = block(0.0, Bv, self.L["qd"][j])
            Aa = block(0.0, Ba, self.L["qdd"][j])
            for A in (Aq, Av, Aa):
                rows += [-A, A]
                offs += [np.full(K, s), np.full(K, s)]
        return np.vstack(rows), np.concatenate(offs)

    def torque_constraint(self, z):
        e = self.evaluate(z, grad=False)
        lim = self.L["tau"] * self.shrink
        r = (e["tau"] / lim).ravel()
        return np.concatenate([1.0 - r, 1.0 + r])

    def torque_jacobian(self, z):
        e = self.evaluate(z)
        K = e["tau"].shape[0]
        J = e["dtau"] / np.tile(self.L["tau"] * self.shrink, K)[:, None]
        return np.vstack([-J, J])


def _derivative(traj, k, t):
    """The k-th time derivative of a series' positions at times t, (len(t), n)."""
    w = 2.0 * np.pi / traj.period * np.arange(1, traj.harmonics + 1)
    x = np.asarray(t, dtype=float)[:, None, None] * w + 0.5 * np.pi * k
    out = (w ** (k - 1.0) * (traj.a * np.sin(x) - traj.b * np.cos(x))).sum(-1)
    return out + traj.q0 if k == 0 else out


def _extremes(traj, k, t):
    """(min, max) per joint of the k-th derivative over the whole period, exact: every local
    extreme on the grid t polished by Newton steps on the next derivative."""
    x = _derivative(traj, k, t)
    out = []
    for sign in (-1.0, 1.0):
        y = sign * x
        peak = (y >= np.roll(y, 1, axis=0)) & (y >= np.roll(y, -1, axis=0))
        rows, cols = np.nonzero(peak)
        tp = t[rows]
        for _ in range(4):
            d1 = _derivative(traj, k + 1, tp)[np.arange(tp.size), cols]
            d2 = _derivative(traj, k + 2, tp)[np.arange(tp.size), cols]
            step = np.where(sign * d2 < 0, -d1 / np.where(d2 == 0, 1.0, d2), 0.0)
            tp = tp + np.clip(step, -(t[1] - t[0]), t[1] - t[0])
        polished = sign * _derivative(traj, k, tp)[np.arange(tp.size), cols]
        best = y.max(axis=0)
        np.maximum.at(best, cols, polished)
        out.append(sign * best)
    return out[0], out[1]


def _fit_limits(traj, L, fine):
    """The series shrunk (each joint's oscillation about its own centre, then the whole motion
    about the centre of each joint's motion by bisection for the torques) until every limit
    holds on the fine grid; None when even the arm held still at that centre exceeds a torque."""
    lo, hi = L["q"][:, 0], L["q"][:, 1]
    (qmin, qmax), (vmin, vmax), (amin, amax) = (_extremes(traj, k, fine.t) for k in range(3))
    osc_lo, osc_hi = qmin - traj.q0, qmax - traj.q0
    f = np.minimum.reduce([np.ones_like(lo), (hi - lo) / np.maximum(osc_hi - osc_lo, 1e-300),
                           L["qd"] / np.maximum(np.maximum(-vmin, vmax), 1e-300),
                           L["qdd"] / np.maximum(np.maximum(-amin, amax), 1e-300)])
    f = np.where(f < 1.0, f * (1.0 - 1e-12), f)
    q0 = np.clip(traj.q0, lo - f * osc_lo, hi - f * osc_hi)
    out = FourierSeries(traj.period, q0, traj.a * f[:, None], traj.b * f[:, None])
    if L["tau"] is None:
        return out
    centre = q0 + 0.5 * f * (osc_lo + osc_hi)

    def scaled(g):
        return FourierSeries(traj.period, centre + g * (q0 - centre), out.a * g, out.b * g)

    within = lambda tr: np.all(np.abs(fine.torque(tr)) <= TORQUE_GUARD * L["tau"])  # noqa: E731
    tau_full = fine.torque(out)
    if np.all(np.abs(tau_full) <= TORQUE_GUARD * L["tau"]):
        return out
    if not within(scaled(0.0)):
        return None
    return scaled(_largest_within(scaled, tau_full, fine, L))


MAX_STARTS = 1000  # random series tried: each costs one torque fit; more only wastes time
MAX_SAMPLES = 100_000  # grid points per period (the fine grid holds 40 times as many)


def excitation(robot, period, harmonics, limits=None, seed=0, starts=20, iterations=30, samples=None,
               refine=2, margin=0.01):
    """An excitation trajectory (:class:`flexman.trajectory.FourierSeries`) whose base regressor
    has a small condition number, within ``limits`` = {"q": [lower, upper] per joint, "qd", "qdd",
    "tau": largest magnitudes} (missing keys: :func:`default_limits`).

    ``period`` (s) and ``harmonics`` fix the series. ``starts`` random series, each scaled to the
    largest amplitude the limits allow, are ranked by condition number and the best ``refine``
    of them optimised by SLSQP (at most ``iterations`` steps each) on ``samples`` points per
    period: the objective is the log condition number with its analytic gradient, the position,
    rate and acceleration limits linear constraints and the torque limits nonlinear ones, all
    kept with a relative ``margin`` on the grid; the best result is then shrunk where needed
    until every limit holds between the grid points too. The result carries ``.condition`` (over
    one period, fine grid), ``.limits`` and ``.random_condition``: the median condition number
    of 11 random series (drawn independently of ``seed``'s starts) scaled to the same limits,
    what an unoptimised series gives. Rigid arms only."""
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
    if isinstance(seed, bool) or not float(seed).is_integer() or not 0 <= seed < 2**63:
        raise ValueError(f"seed: expected a whole number from 0 to 2**63-1 (got {seed!r:.40})")
    if isinstance(starts, bool) or not float(starts).is_integer() or not 1 <= starts <= MAX_STARTS:
        raise ValueError(f"starts: expected a whole number from 1 to {MAX_STARTS} (got {starts!r:.40})")
    if samples is not None and (isinstance(samples, bool) or not float(samples).is_integer()
                                or not 1 <= samples <= MAX_SAMPLES):
        raise ValueError(f"samples: expected a whole number from 1 to {MAX_SAMPLES} (got {samples!r:.40})")
    seed, starts = int(seed), int(starts)
    L = _limits(robot, limits)
    base = rr.base_parameters(robot)
    P = len(base.independent)
    samples = int(samples or max(12 * H, 3 * P // n + 1, 40))
    design = _Design(robot, period, H, L, samples)
    fine = _Design(robot, period, H, L, 40 * samples)  # where every limit is checked
    if L["tau"] is not None:
        _fit_torque(design, np.ones((n, 2 * H)), L, fine)  # impossible torque limits: refused before searching

    decay = np.tile(1.0 / np.arange(1, H + 1), 2)

    def shapes(rng, count):
        return [rng.standard_normal((n, 2 * H)) * decay for _ in range(count)]

    problem = _Problem(robot, design, L, base, margin)
    rng = np.random.default_rng(seed)
    tries = [_fit_limits(_fit_torque(design, x, L, fine), L, fine) for x in shapes(rng, max(1, int(starts)))]
    tries = [tr for tr in tries if tr is not None]  # None: a start whose still centre needs too much torque
    if not tries:
        raise ValueError("limits.tau: no random start fits these torque limits away from the centre of the joint "
                         "ranges; raise the torque limits or narrow the position ranges (limits.q)")
    ranked = sorted(tries, key=lambda tr: problem.evaluate(problem.z_of(tr), grad=False)["f"])
    A, b = problem.linear_constraints()
    cons = [{"type": "ineq", "fun": lambda z: A @ z + b, "jac": lambda z: A}]
    if L["tau"] is not None:
        cons.append({"type": "ineq", "fun": problem.torque_constraint, "jac": problem.torque_jacobian})
    best, best_cond = None, np.inf
    for start in ranked[:max(1, int(refine))]:
        z0 = problem.z_of(start)
        sol = minimize(lambda z: problem.evaluate(z, grad=False)["f"], z0, jac=lambda z: problem.evaluate(z)["grad"],
                       method="SLSQP", constraints=cons, options={"maxiter": int(iterations), "ftol": 1e-6})
        for cand in (problem.series(sol.x), start):
            fitted = _fit_limits(cand, L, fine)
            if fitted is None:
                continue
            c = condition(robot, fitted, 10 * samples, base)
            if c < best_cond:
                best, best_cond = fitted, c
    traj = best
    traj.condition = best_cond
    baseline = [_fit_limits(_fit_torque(design, x, L, fine), L, fine)
                for x in shapes(np.random.default_rng([seed, 27]), 11)]
    traj.random_condition = float(np.median([condition(robot, tr, 10 * samples, base) for tr in baseline
                                             if tr is not None]))
    traj.limits = L
    return traj
