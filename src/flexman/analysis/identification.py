"""Parameter identification from measured motion: ``fm.identify(robot, t, q, tau, ...)``.

Rigid arms (the default): the joint torques are linear in the inertial parameters
(:mod:`.rigid_regressor`), so the identifiable (base) parameters follow from one weighted
linear least-squares problem:

1. q and tau are low-pass filtered forward and backward (zero-phase Butterworth,
   ``scipy.signal.filtfilt``, the same filter on both so that they stay consistent), and q is
   differentiated twice (second-order central differences) -> qd, qdd;
2. a few filter lengths at both ends are dropped (the filter's start-up transient);
3. the regressor of the base parameters is stacked over the samples, ``W beta = tau``;
4. ordinary least squares gives residuals per joint, hence each joint equation's noise level
   sigma_j; the rows are then weighted by 1/sigma_j and solved again (Gautier's weighted least
   squares). The covariance of the estimate is ``s^2 (W_w^T W_w)^-1`` with ``s^2`` the weighted
   residual variance (about 1): standard errors are the square roots of its diagonal.

Flexible links (``parameters=[...]``): beam properties (``rhoA<i>``, ``EI<i>``, ``zeta<i>`` ...,
see :mod:`.physical`) enter the dynamics nonlinearly. The joints are made to follow the
measured (filtered) joint motion exactly (``fm.simulate(..., prescribed=...)``, the compiled
model when a C compiler is there: changing a beam property changes only its parameter vector),
and ``scipy.optimize.least_squares`` adjusts the parameters, in logarithmic scale from the model
file's values, until the simulated joint torques and the simulated tip offset and/or beam
curvatures (strain gauges) match the measured ones. Standard errors come from the Jacobian
at the solution, ``s^2 (J^T J)^-1``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import physical
from . import rigid_regressor as rr


def _signals(robot, t, q, tau):
    """Checked (t, q, tau) arrays: one line naming the argument otherwise."""
    t = np.asarray(t, dtype=float)
    if t.ndim != 1 or t.size < 20:
        raise ValueError(f"t: expected a 1-D array of at least 20 sample times (got shape {t.shape})")
    if not np.all(np.isfinite(t)):
        raise ValueError("t: sample times must be finite numbers")
    step = np.diff(t)
    if np.any(step <= 0):
        k = int(np.flatnonzero(step <= 0)[0])
        raise ValueError(f"t: time must increase from sample to sample (sample {k + 1} at t = {t[k + 1]:g} "
                         f"follows t = {t[k]:g})")
    if np.ptp(step) > 1e-3 * step.mean():
        raise ValueError("t: samples must be equally spaced (the zero-phase filter assumes one sampling rate); "
                         "resample the data first")
    n = robot.n_joints
    out = [t]
    for name, arr in (("q", q), ("tau", tau)):
        arr = np.asarray(arr, dtype=float)
        if arr.ndim == 1 and n == 1:
            arr = arr[:, None]
        if arr.shape != (t.size, n):
            raise ValueError(f"{name}: expected shape ({t.size}, {n}) (one row per sample time, one column per "
                             f"joint), got {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name}: all values must be finite numbers")
        out.append(arr)
    return out


def filtered_motion(t, q, cutoff=None, order=4):
    """(q, qd, qdd, filter) from samples q (N, n): zero-phase Butterworth at ``cutoff`` Hz (default
    a tenth of the Nyquist frequency), then central differences. ``filter(x)`` filters any other
    signal the same way."""
    from scipy.signal import butter, filtfilt

    fs = 1.0 / float(np.mean(np.diff(t)))
    cutoff = 0.05 * fs if cutoff is None else float(cutoff)
    if not 0 < cutoff < 0.5 * fs:
        raise ValueError(f"cutoff: must lie between 0 and the Nyquist frequency {0.5 * fs:g} Hz (got {cutoff:g})")
    b, a = butter(int(order), cutoff / (0.5 * fs))
    pad = min(3 * max(len(a), len(b)), len(t) - 1)

    def filt(x):
        return filtfilt(b, a, x, axis=0, padlen=pad)

    qf = filt(q)
    qd = np.gradient(qf, t, axis=0, edge_order=2)
    qdd = np.gradient(qd, t, axis=0, edge_order=2)
    return qf, qd, qdd, filt


@dataclass
class Identification:
    """Estimated parameters with their standard errors.

    ``names``: what was estimated (base combinations such as ``ZZ1 + 0.25*m2``, or beam
    parameter names); ``values``, ``std`` (standard errors), ``covariance``; ``sigma``: the
    residual standard deviation of each joint equation (N m or N); ``base``: the
    :class:`~flexman.analysis.BaseParameters` (rigid). ``condition``: condition number of the
    weighted least-squares matrix (columns scaled): large means a poorly exciting motion."""

    names: list
    values: np.ndarray
    std: np.ndarray
    covariance: np.ndarray
    sigma: np.ndarray
    samples: int
    condition: float
    base: rr.BaseParameters | None = None
    notes: list = field(default_factory=list)

    @property
    def relative_std(self) -> np.ndarray:
        """Standard error over |value| (inf where the value is 0)."""
        with np.errstate(divide="ignore"):
            return self.std / np.abs(self.values)

    def interval(self, k=3.0):
        """(low, high) at +- k standard errors."""
        return self.values - k * self.std, self.values + k * self.std

    def to_dict(self) -> dict:
        out = {"parameters": [{"name": n, "value": float(v), "std": float(s)}
                              for n, v, s in zip(self.names, self.values, self.std)],
               "residual_std": [float(s) for s in self.sigma], "samples": self.samples,
               "condition": float(self.condition), "notes": list(self.notes)}
        if self.base is not None:
            out["unidentifiable"] = self.base.unidentifiable
        return out

    def table(self) -> str:
        width = max(len(n) for n in self.names) if self.names else 4
        lines = [f"{'parameter':<{width}}  {'value':>13}  {'std error':>11}  {'rel %':>7}"]
        for n, v, s, r in zip(self.names, self.values, self.std, self.relative_std):
            lines.append(f"{n:<{width}}  {v:13.6g}  {s:11.3g}  {100 * r:7.2f}")
        lines.append(f"residual std per joint: {', '.join(f'{s:.3g}' for s in self.sigma)}; "
                     f"{self.samples} samples; condition number {self.condition:.3g}")
        if self.base is not None and self.base.unidentifiable:
            lines.append("no effect on the torques (not identifiable): " + ", ".join(self.base.unidentifiable))
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


def _weighted_lsq(W, y, rows_per_joint, weights=None):
    """(beta, covariance, sigma per joint, condition) for W beta = y with joint-interleaved rows."""
    n = rows_per_joint
    if weights is None:
        beta0 = np.linalg.lstsq(W, y, rcond=None)[0]
        r = (y - W @ beta0).reshape(-1, n)
        dof = max(r.shape[0] - W.shape[1] / n, 1.0)
        sigma = np.sqrt((r ** 2).sum(axis=0) / dof)
        sigma = np.where(sigma > 0, sigma, sigma.max() if sigma.max() > 0 else 1.0)  # exact data: equal weights
        weights = 1.0 / sigma
    w = np.tile(np.asarray(weights, dtype=float), W.shape[0] // n)
    Ww, yw = W * w[:, None], y * w
    scale = np.linalg.norm(Ww, axis=0)
    scale[scale == 0] = 1.0
    beta_s, _, rank, sv = np.linalg.lstsq(Ww / scale, yw, rcond=None)
    beta = beta_s / scale
    res = yw - Ww @ beta
    s2 = float(res @ res) / max(len(yw) - W.shape[1], 1)
    inv = np.linalg.pinv((Ww / scale).T @ (Ww / scale))
    cov = s2 * inv / np.outer(scale, scale)
    sigma = np.sqrt(((y - W @ beta).reshape(-1, n) ** 2).mean(axis=0))
    cond = float(sv[0] / sv[-1]) if sv.size and sv[-1] > 0 else np.inf
    return beta, cov, sigma, cond, rank


def identify(robot, t, q, tau, parameters=None, cutoff=None, order=4, armature=False, viscous=False,
             coulomb=False, weights=None, trim=None, tip=None, curvature=None, **options) -> Identification:
    """Identify ``robot``'s parameters from samples ``t`` (N,), joint positions ``q`` (N, n_joints)
    and joint torques ``tau`` (N, n_joints); see the module docstring.

    Rigid (``parameters=None``): the base inertial parameters (plus armature ``Ia``, viscous
    ``Fv`` and Coulomb ``Fc`` friction columns when asked); ``cutoff`` (Hz) and ``order`` of the
    Butterworth filter; ``weights``: per-joint row weights instead of the two-step estimate;
    ``trim``: samples dropped at each end (default 5% of them, at least 10).

    Flexible: ``parameters`` names the beam properties to estimate, measured ``tip`` offsets
    (N, 3; :func:`flexman.analysis.tip_offset`) and/or ``curvature=(link, x, data)`` with data
    (N, len(x), 3) as :func:`flexman.analysis.curvature` gives (NaN where not measured), see
    :func:`identify_beam`."""
    t, q, tau = _signals(robot, t, q, tau)
    if parameters is not None:
        return identify_beam(robot, t, q, tau, parameters, tip=tip, curvature=curvature, cutoff=cutoff,
                             order=order, **options)
    if options:
        raise TypeError(f"identify: unexpected options {', '.join(options)}")
    if not robot.is_rigid:
        raise ValueError("identify: the robot has flexible links; give parameters=[...] (beam properties such as "
                         "EI2) and measured tip or curvature data")
    qf, qd, qdd, filt = filtered_motion(t, q, cutoff, order)
    tauf = filt(tau)
    N = len(t)
    trim = max(10, N // 20) if trim is None else int(trim)
    keep = slice(trim, N - trim)
    if N - 2 * trim < 10:
        raise ValueError(f"trim: {trim} samples at each end leave fewer than 10 of {N}")
    base = rr.base_parameters(robot, armature, viscous, coulomb)
    Y = rr.regressor(robot, qf[keep], qd[keep], qdd[keep], armature, viscous, coulomb)[..., base.independent]
    n = robot.n_joints
    W = Y.reshape(-1, Y.shape[-1])
    y = tauf[keep].reshape(-1)
    beta, cov, sigma, cond, rank = _weighted_lsq(W, y, n, weights)
    notes = []
    if rank < W.shape[1]:
        weak = _weakest(W, base.base_names)
        raise ValueError(f"data: the motion does not excite every identifiable combination (rank {rank} of "
                         f"{W.shape[1]}); least excited: {weak}. Use a richer trajectory")
    return Identification(base.base_names, beta, np.sqrt(np.diag(cov)), cov, sigma, N - 2 * trim, cond, base, notes)


def _weakest(W, names):
    scale = np.linalg.norm(W, axis=0)
    scale[scale == 0] = 1.0
    _, _, vt = np.linalg.svd(W / scale, full_matrices=False)
    v = vt[-1]
    idx = np.argsort(-np.abs(v))[:3]
    return ", ".join(names[i] for i in idx if abs(v[i]) > 0.1)


# ----- flexible links: nonlinear least squares on simulations ----------------------------


class _JointSpline:
    """The measured joint motion as a prescription traj(t) -> (q, qd, qdd) (quintic spline),
    tabulated on the integrator's half steps (RK4 asks for those times only)."""

    def __init__(self, t, q, dt):
        from scipy.interpolate import make_interp_spline

        self.spline = make_interp_spline(t - t[0], q, k=5)
        self.half = 0.5 * dt
        grid = np.arange(2 * len(t) + 1) * self.half
        self.table = [self.spline(grid, nu) for nu in (0, 1, 2)]

    def __call__(self, s):
        k = s / self.half
        i = int(round(k))
        if abs(k - i) < 1e-9 and 0 <= i < len(self.table[0]):
            return self.table[0][i], self.table[1][i], self.table[2][i]
        return self.spline(s), self.spline(s, 1), self.spline(s, 2)


def identify_beam(robot, t, q, tau, parameters, tip=None, curvature=None, cutoff=None, order=4, method="rk4",
                  backend=None, tau_weight=1.0) -> Identification:
    """Beam properties by nonlinear least squares on prescribed-motion simulations (module docstring).

    Residuals (each channel divided by its measured RMS so that torques, metres and 1/m mix):
    simulated minus measured joint torques (weight ``tau_weight``), tip offsets, curvatures."""
    from scipy.optimize import least_squares

    from ..simulate import simulate
    from .strain import curvature as beam_curvature
    from .tip import tip_offset

    names = physical.check(robot, parameters)
    if tip is None and curvature is None:
        raise ValueError("identify: give measured tip offsets (tip=) or curvatures (curvature=(link, x, data)) "
                         "for the beam parameters")
    N = len(t)
    channels = []
    if tip is not None:
        tip = np.asarray(tip, dtype=float)
        if tip.shape != (N, 3):
            raise ValueError(f"tip: expected shape ({N}, 3) (tip offset per sample), got {tip.shape}")
        channels.append(("tip", tip.reshape(N, -1)))
    if curvature is not None:
        try:
            link, xs, data = curvature
        except (TypeError, ValueError):
            raise ValueError("curvature: expected (link, x, data)") from None
        xs = np.atleast_1d(np.asarray(xs, dtype=float))
        data = np.asarray(data, dtype=float)
        if data.shape != (N, xs.size, 3):
            raise ValueError(f"curvature: data of shape ({N}, {xs.size}, 3) expected, got {data.shape}")
        channels.append(("curvature", data.reshape(N, -1)))
    channels.append(("tau", tau))
    qf, _, _, _ = filtered_motion(t, q, cutoff, order)
    dt = float(np.mean(np.diff(t)))
    traj = _JointSpline(t, qf, dt)
    t_final = float(t[-1] - t[0])
    trim = max(10, N // 20)  # the filter's and the spline's end effects
    scales = {}
    for key, data in channels:
        rms = np.sqrt(np.nanmean(data[trim:N - trim] ** 2, axis=0))
        scales[key] = np.where(rms > 0, rms, 1.0)
    start = np.array([physical.value(robot, n) for n in names])
    if np.any(start <= 0):
        bad = names[int(np.flatnonzero(start <= 0)[0])]
        raise ValueError(f"parameters: {bad} is 0 in the model file; give it a positive starting value")

    def outputs(x):
        variant = physical.with_values(robot, dict(zip(names, start * np.exp(x))))
        res = simulate(variant, t_final, dt=dt, method=method, prescribed=traj, progress=False, backend=backend)
        k = min(len(res.t), N)
        out = {"tau": res.tau[:k]}
        if tip is not None:
            out["tip"] = tip_offset(variant, res.q[:k])
        if curvature is not None:
            out["curvature"] = beam_curvature(variant, res.q[:k], link, xs).reshape(k, -1)
        return out, k

    def misfits(x):
        out, k = outputs(x)
        parts = {}
        for key, data in channels:
            r = out[key] - data[:k]
            if k < N:  # a diverged run: the missing samples count as large misfits
                r = np.concatenate([r, np.full((N - k,) + r.shape[1:], 1e3) * scales[key]])
            parts[key] = r[trim:N - trim]
        return parts

    def residual(x):
        parts = misfits(x)
        w = {key: (tau_weight if key == "tau" else 1.0) for key, _ in channels}
        return np.concatenate([np.nan_to_num(w[key] * parts[key] / scales[key]).ravel() for key, _ in channels])

    x = np.zeros(len(names))
    # fail fast when the data cannot tell the parameters apart (central differences: O(h^2) ~ 1e-8)
    J0 = np.stack([(residual(x + 1e-4 * e) - residual(x - 1e-4 * e)) / 2e-4 for e in np.eye(len(names))], axis=1)
    _check_separable(J0, names)
    for _ in range(1):  # fit, then weight each channel by its own residual level (noise unknown), refit
        sol = least_squares(residual, x, diff_step=1e-6, xtol=1e-10, ftol=1e-12)
        x = sol.x
        parts = misfits(x)
        for key, _ in channels:
            std = np.sqrt(np.nanmean(parts[key] ** 2, axis=0))
            scales[key] = np.where(std > 0, std, scales[key])
    sol = least_squares(residual, x, diff_step=1e-6, xtol=1e-10, ftol=1e-12)
    values = start * np.exp(sol.x)
    J = sol.jac
    dof = max(len(sol.fun) - len(names), 1)
    s2 = 2 * sol.cost / dof
    cov_x = s2 * np.linalg.pinv(J.T @ J)
    cov = cov_x * np.outer(values, values)  # d value = value d x
    sv = np.linalg.svd(J, compute_uv=False)
    out, k = outputs(sol.x)
    sigma = np.sqrt(np.mean((out["tau"] - tau[:k]) ** 2, axis=0))
    notes = [f"least_squares: {sol.nfev} simulations, {sol.message}"]
    return Identification(names, values, np.sqrt(np.diag(cov)), cov, sigma, N,
                          float(sv[0] / sv[-1]) if sv[-1] > 0 else np.inf, None, notes)


def _check_separable(J, names):
    """One-line ValueError when a parameter has no effect on the measured data, or when only a
    combination of some of them does (J: residuals' derivatives, one column per parameter)."""
    norm = np.linalg.norm(J, axis=0)
    dead = [n for n, v in zip(names, norm) if v <= 1e-9 * max(norm.max(), 1e-300)]
    if dead:
        raise ValueError(f"parameters: {', '.join(dead)} {'has' if len(dead) == 1 else 'have'} no effect on the "
                         "measured data (not identifiable from them); leave them out or measure what they change")
    _, sv, vt = np.linalg.svd(J / norm, full_matrices=False)
    if sv[-1] < 1e-6 * sv[0]:
        v = vt[-1]
        combo = [names[k] for k in np.argsort(-np.abs(v)) if abs(v[k]) > 0.1]
        raise ValueError(f"parameters: {', '.join(combo)} cannot be told apart from these data (only a combination "
                         "of them acts); identify fewer of them")


def read_measurements(path, robot) -> dict:
    """Measured samples from a CSV file with a header row: ``t``, ``q1..q<n>`` and ``tau1..tau<n>``
    (n joints), optionally ``tip_x, tip_y, tip_z`` (tip offsets, for beam parameters). Returns
    {"t", "q", "tau", "tip" (or None)}; one-line ValueError naming the file otherwise."""
    import csv
    from pathlib import Path

    path = Path(path)
    with open(path, newline="", encoding="utf-8-sig") as fh:
        rows = list(csv.reader(fh))
    if not rows:
        raise ValueError(f"{path}: empty file; expected a header row t, q1.., tau1.. and one row per sample")
    header = [h.strip() for h in rows[0]]
    n = robot.n_joints
    need = ["t"] + [f"q{i + 1}" for i in range(n)] + [f"tau{i + 1}" for i in range(n)]
    missing = [c for c in need if c not in header]
    if missing:
        raise ValueError(f"{path}: missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)} (the header "
                         f"must name t, q1..q{n}, tau1..tau{n}; optional tip_x, tip_y, tip_z)")
    data = []
    for r, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise ValueError(f"{path}: row {r} has {len(row)} values for {len(header)} columns")
        try:
            data.append([float(cell) for cell in row])
        except ValueError:
            bad = next(c for c in row if not _is_float(c))
            raise ValueError(f"{path}: row {r}: {bad.strip()!r} is not a number") from None
    arr = np.array(data, dtype=float).reshape(-1, len(header))
    col = {h: arr[:, k] for k, h in enumerate(header)}
    tip = None
    if all(f"tip_{a}" in col for a in "xyz"):
        tip = np.stack([col[f"tip_{a}"] for a in "xyz"], axis=1)
    return {"t": col["t"], "q": np.stack([col[f"q{i + 1}"] for i in range(n)], axis=1),
            "tau": np.stack([col[f"tau{i + 1}"] for i in range(n)], axis=1), "tip": tip}


def _is_float(text):
    try:
        float(text)
        return True
    except ValueError:
        return False
