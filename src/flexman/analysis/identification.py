"""Parameter identification from measured motion: ``fm.identify(robot, t, q, tau, ...)``.

Rigid arms (the default): the joint torques are linear in the inertial parameters
(:mod:`.rigid_regressor`), so the identifiable (base) parameters follow from one weighted
linear least-squares problem:

1. the filter cutoff is read from the data when not given (:func:`.signals.choose_cutoff`: the
   band where the spectra of q and tau stand above their noise floors);
2. q is low-pass filtered forward and backward (zero-phase Butterworth) and differentiated twice
   (central differences) -> qd, qdd; the filter's settling time is trimmed at both ends;
3. the regressor of the base parameters is evaluated on the filtered motion and stacked,
   ``W beta = tau``, with the measured torques *unfiltered*: their noise is independent of W
   and averages out, while filtering tau would remove true harmonics of the torque that W keeps;
4. ordinary least squares gives each joint equation's noise level sigma_j; the rows are weighted
   by 1/sigma_j and solved again (Gautier's weighted least squares);
5. the covariance is estimated from independent segments of the record (a cluster-robust
   sandwich over contiguous blocks a few filter periods long), so it holds the noise that
   differentiation puts into the regressor and any colour of the residuals; the filter's bias is
   estimated by filtering the motion once more (which doubles the bias) on a subsample and added;
6. a held-out check: the parameters fitted without each fifth of the record predict that fifth
   (or ``validation=(t, q, tau)``, a separate record, is predicted by the final estimate); the
   rms error per joint is compared with the filtered measured torque.

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
from . import signals
from .measurements import read_measurements  # noqa: F401  (the CSV reader, here since the first release)
from .signals import filtered_motion
from ..model.limits import check_run_size

MIN_SAMPLES_PER_PARAMETER = 10   # samples kept after trimming, per base parameter
FOLDS = 5                        # blocks of the built-in held-out check
# beam fits: the log-parameters to 1e-8 (far below any standard error), not to roundoff
XTOL, FTOL = 1e-8, 1e-10
BIAS_SUBSAMPLE = 2000            # samples (at most a quarter of them) used to estimate the filter's bias


@dataclass
class Identification:
    """Estimated parameters with their standard errors.

    ``names``: what was estimated (base combinations such as ``ZZ1 + 0.25*m2``, or beam
    parameter names); ``values``, ``std`` (standard errors), ``covariance``; ``sigma``: the
    residual standard deviation of each joint equation (N m or N); ``base``: the
    :class:`~flexman.analysis.BaseParameters` (rigid). ``condition``: condition number of the
    weighted least-squares matrix (columns scaled): large means a poorly exciting motion.
    Rigid fits also report ``cutoff`` (Hz) and whether it was read from the data
    (``cutoff_from_data``), ``method`` (how the covariance was estimated) and ``validation``:
    the held-out check, {"kind", "rms" (per joint), "relative" (per joint, of the rms torque)}."""

    names: list
    values: np.ndarray
    std: np.ndarray
    covariance: np.ndarray
    sigma: np.ndarray
    samples: int
    condition: float
    base: rr.BaseParameters | None = None
    notes: list = field(default_factory=list)
    cutoff: float | None = None
    cutoff_from_data: bool = False
    method: str = ""
    validation: dict | None = None

    @property
    def relative_std(self) -> np.ndarray:
        """Standard error over |value| (inf where the value is 0)."""
        with np.errstate(divide="ignore"):
            return self.std / np.abs(self.values)

    def interval(self, k=3.0):
        """(low, high) at +- k standard errors."""
        return self.values - k * self.std, self.values + k * self.std

    def predict(self, robot, q, qd, qdd) -> np.ndarray:
        """Joint torques (..., n_joints) the identified base parameters give for a motion (rigid)."""
        if self.base is None:
            raise ValueError("predict: only for rigid identifications (base parameters)")
        flags = {k: any(n.startswith(tag) for n in self.base.names) for k, tag in
                 (("armature", "Ia"), ("viscous", "Fv"), ("coulomb", "Fc"))}
        Y = rr.regressor(robot, q, qd, qdd, **flags)[..., self.base.independent]
        return Y @ self.values

    def to_dict(self) -> dict:
        out = {"parameters": [{"name": n, "value": float(v), "std": float(s)}
                              for n, v, s in zip(self.names, self.values, self.std)],
               "residual_std": [float(s) for s in self.sigma], "samples": self.samples,
               "condition": float(self.condition), "notes": list(self.notes)}
        if self.base is not None:
            out["unidentifiable"] = self.base.unidentifiable
        if self.cutoff is not None:
            out["cutoff_hz"] = float(self.cutoff)
            out["cutoff_from_data"] = bool(self.cutoff_from_data)
        if self.method:
            out["std_method"] = self.method
        if self.validation is not None:
            out["validation"] = {"kind": self.validation["kind"],
                                 "rms": [float(v) for v in self.validation["rms"]],
                                 "relative": [float(v) for v in self.validation["relative"]]}
        return out

    def table(self) -> str:
        width = max(len(n) for n in self.names) if self.names else 4
        lines = [f"{'parameter':<{width}}  {'value':>13}  {'std error':>11}  {'rel %':>7}"]
        for n, v, s, r in zip(self.names, self.values, self.std, self.relative_std):
            lines.append(f"{n:<{width}}  {v:13.6g}  {s:11.3g}  {100 * r:7.2f}")
        lines.append(f"residual std per joint: {', '.join(f'{s:.3g}' for s in self.sigma)}; "
                     f"{self.samples} samples; condition number {self.condition:.3g}")
        if self.cutoff is not None:
            lines.append(f"filter cutoff: {self.cutoff:.3g} Hz ({'read from the spectra of q and tau' if self.cutoff_from_data else 'given'})")
        if self.method:
            lines.append(f"standard errors: {self.method}")
        if self.validation is not None:
            v = self.validation
            lines.append(f"held-out check ({v['kind']}): rms torque error per joint "
                         + ", ".join(f"{a:.3g} ({100 * b:.2f} %)" for a, b in zip(v["rms"], v["relative"])))
        if self.base is not None and self.base.unidentifiable:
            lines.append("no effect on the torques (not identifiable): " + ", ".join(self.base.unidentifiable))
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


def _scaled(W):
    scale = np.linalg.norm(W, axis=0)
    scale[scale == 0] = 1.0
    return W / scale, scale


def _joint_weights(W, y, n, weights=None):
    """Row weights 1/sigma_j from an ordinary least-squares fit (or the given per-joint weights)."""
    if weights is not None:
        w = np.asarray(weights, dtype=float).reshape(-1)
        if w.shape != (n,) or not np.all(np.isfinite(w)) or np.any(w <= 0):
            raise ValueError(f"weights: expected {n} positive finite numbers (one per joint)")
        return w
    Ws, scale = _scaled(W)
    beta0 = np.linalg.lstsq(Ws.T @ Ws, Ws.T @ y, rcond=None)[0] / scale  # normal equations: weights only
    r = (y - W @ beta0).reshape(-1, n)
    dof = max(r.shape[0] - W.shape[1] / n, 1.0)
    sigma = np.sqrt((r ** 2).sum(axis=0) / dof)
    sigma = np.where(sigma > 0, sigma, sigma.max() if sigma.max() > 0 else 1.0)  # exact data: equal weights
    return 1.0 / sigma


def _weighted(W, y, w, n):
    """The row-weighted problem with scaled columns, built once per fit: (Ws, yw, rows, scale)
    with rows the weight of each row and ``Ws = W * rows / scale``."""
    rows = np.tile(w, W.shape[0] // n)
    Ws, scale = _scaled(W * rows[:, None])
    return Ws, y * rows, rows, scale


def _solve(Ws, yw, scale):
    """(beta, rank, singular values) of a problem from :func:`_weighted`."""
    beta_s, _, rank, sv = np.linalg.lstsq(Ws, yw, rcond=None)
    return beta_s / scale, rank, sv


def _segment_covariance(Ws, yw, beta, scale, n, segments):
    """Cluster-robust (sandwich) covariance of a weighted least-squares estimate over contiguous
    segments of samples: ``B^-1 (sum_k g_k g_k^T) B^-1 K/(K-1)``, ``B = W_w^T W_w``,
    ``g_k = W_w,k^T r_k``. Valid when the residuals of different segments are independent,
    whatever their correlation and level inside a segment."""
    r = yw - Ws @ (beta * scale)
    samples = Ws.shape[0] // n
    edges = np.linspace(0, samples, segments + 1).astype(int) * n
    G = np.stack([Ws[a:b].T @ r[a:b] for a, b in zip(edges[:-1], edges[1:])])
    inv = np.linalg.pinv(Ws.T @ Ws)
    cov = inv @ (G.T @ G) @ inv * segments / (segments - 1)
    return cov / np.outer(scale, scale)


def identify(robot, t, q, tau, parameters=None, cutoff=None, order=4, armature=False, viscous=False,
             coulomb=False, weights=None, trim=None, validation=None, segments=None, tip=None, curvature=None,
             **options) -> Identification:
    """Identify ``robot``'s parameters from samples ``t`` (N,), joint positions ``q`` (N, n_joints)
    and joint torques ``tau`` (N, n_joints); see the module docstring.

    Rigid (``parameters=None``): the base inertial parameters (plus armature ``Ia``, viscous
    ``Fv`` and Coulomb ``Fc`` friction columns when asked). ``cutoff`` (Hz; default read from
    the data) and ``order`` of the Butterworth filter; ``weights``: per-joint row weights instead
    of the two-step estimate; ``trim``: samples dropped at each end (default 5% of them, at least
    two periods of the cutoff); ``segments``: independent blocks for the covariance (default
    about two cutoff periods each, 10 to 50); ``validation=(t, q, tau)``: a separate record the
    estimate must predict (default: a five-fold held-out check on the record itself).

    Flexible: ``parameters`` names the beam properties to estimate, measured ``tip`` offsets
    (N, 3; :func:`flexman.analysis.tip_offset`) and/or ``curvature=(link, x, data)`` with data
    (N, len(x), 3) as :func:`flexman.analysis.curvature` gives (NaN where not measured), see
    :func:`identify_beam`."""
    t, q, tau = signals.check_signals(robot, t, q, tau)
    if parameters is None:  # the regressor (samples x joints x parameters) is held about three times
        columns = 10 * len(robot.links) + 3 * len(robot.links)  # 10 inertial, 3 friction per link
        check_run_size(len(t), 3 * robot.n_joints * columns, "samples", "t",
                       hint="the regressor holds every sample's joints x parameters: resample the record "
                            "(fewer samples) or cut it")
    if parameters is not None:
        return identify_beam(robot, t, q, tau, parameters, tip=tip, curvature=curvature, cutoff=cutoff,
                             order=order, **options)
    if options:
        raise TypeError(f"identify: unexpected options {', '.join(options)}")
    if not robot.is_rigid:
        raise ValueError("identify: the robot has flexible links; give parameters=[...] (beam properties such as "
                         "EI2) and measured tip or curvature data")
    N, n = len(t), robot.n_joints
    base = rr.base_parameters(robot, armature, viscous, coulomb)
    P = len(base.independent)
    if N < MIN_SAMPLES_PER_PARAMETER * P:
        raise ValueError(f"data: {N} samples for {P} base parameters; identification needs at least "
                         f"{MIN_SAMPLES_PER_PARAMETER} per parameter ({MIN_SAMPLES_PER_PARAMETER * P}, more after the "
                         "filter's ends are trimmed) - record longer or sample faster")
    from_data = cutoff is None
    if from_data:
        cutoff = signals.choose_cutoff(t, q, tau)
    cutoff, order = signals.check_filter(t, cutoff, order)
    if trim is None:
        trim = _default_trim(t, cutoff)
    elif isinstance(trim, bool) or not float(trim).is_integer() or trim < 0:
        raise ValueError(f"trim: samples dropped at each end must be a whole number >= 0 (got {trim!r})")
    trim = int(trim)
    kept = N - 2 * trim
    if kept < MIN_SAMPLES_PER_PARAMETER * P:
        raise ValueError(f"data: {max(kept, 0)} samples left after trimming {trim} at each end, for {P} base "
                         f"parameters; identification needs at least {MIN_SAMPLES_PER_PARAMETER} per parameter "
                         f"({MIN_SAMPLES_PER_PARAMETER * P}) - record longer or sample faster")
    filt = signals.lowpass(t, cutoff, order)
    keep = slice(trim, N - trim)
    flags = (armature, viscous, coulomb)
    qf = filt(q)
    qd, qdd = signals.derivatives(qf, t)
    Y = rr.regressor(robot, qf[keep], qd[keep], qdd[keep], *flags)[..., base.independent]
    W = Y.reshape(-1, P)
    y = tau[keep].reshape(-1)
    w = _joint_weights(W, y, n, weights)
    Ws, yw, rows, scale = _weighted(W, y, w, n)
    beta, rank, sv = _solve(Ws, yw, scale)
    if rank < P:
        weak = _weakest(W, base.base_names)
        raise ValueError(f"data: the motion does not excite every identifiable combination (rank {rank} of "
                         f"{P}); least excited: {weak}. Use a richer trajectory")
    cond = float(sv[0] / sv[-1]) if sv[-1] > 0 else np.inf
    sigma = np.sqrt(((y - W @ beta).reshape(-1, n) ** 2).mean(axis=0))
    if segments is None:
        segments = int(np.clip(kept / (2 * signals.settling_samples(t, cutoff) / signals.SETTLING_PERIODS), 10, 50))
    elif isinstance(segments, bool) or not float(segments).is_integer() or not 2 <= segments <= kept:
        raise ValueError(f"segments: expected a whole number from 2 to the {kept} samples kept (got {segments!r})")
    segments = int(segments)
    cov = _segment_covariance(Ws, yw, beta, scale, n, segments)
    bias = _filter_bias(robot, t, qf, tau, filt, keep, base, flags, w, n)
    cov = cov + np.outer(bias, bias)
    method = (f"from {segments} independent segments of the record (cluster-robust sandwich: regressor noise and "
              f"coloured residuals included), plus the filter's bias estimated by filtering twice")
    notes = []
    if cond > 1e6:
        notes.append(f"the motion excites the parameters unevenly (condition number {cond:.3g}); "
                     "an optimised excitation (fm.analysis.excitation) helps")
    if validation is None:
        check = _held_out(Ws, yw, rows, n, filt(tau)[keep])
    else:
        check = _validate(robot, validation, base, beta, flags, cutoff, order)
    return Identification(base.base_names, beta, np.sqrt(np.diag(cov)), cov, sigma, kept, cond, base, notes,
                          cutoff, from_data, method, check)


def _default_trim(t, cutoff):
    """Samples dropped at each end of a record: 5 % of them, at least 10 and the filter's settling."""
    return max(10, len(t) // 20, signals.settling_samples(t, cutoff))


def _filter_bias(robot, t, qf, tau, filt, keep, base, flags, w, n):
    """Bias of the estimate due to the filter, on a subsample: the filter's distortion of the
    motion is (to first order) doubled by filtering twice, so fit(once) - fit(twice) estimates it.
    ``qf``: the motion filtered once (as the fit used it)."""
    idx = np.arange(len(t))[keep]
    sub = idx[::max(4, len(idx) // BIAS_SUBSAMPLE)]  # at most a quarter of the samples
    fits = []
    for qs in (qf, filt(qf)):
        qd, qdd = signals.derivatives(qs, t)
        Y = rr.regressor(robot, qs[sub], qd[sub], qdd[sub], *flags)[..., base.independent]
        Ws, yw, _, scale = _weighted(Y.reshape(-1, Y.shape[-1]), tau[sub].reshape(-1), w, n)
        fits.append(_solve(Ws, yw, scale)[0])
    return fits[0] - fits[1]


def _relative(err, ref):
    rms = np.sqrt((ref ** 2).mean(axis=0))
    return np.sqrt((err ** 2).mean(axis=0)), np.sqrt((err ** 2).mean(axis=0)) / np.where(rms > 0, rms, 1.0)


def _held_out(Ws, yw, rows, n, tau_filtered):
    """Each of FOLDS contiguous blocks predicted by the parameters fitted on the others, compared
    with the filtered measured torque (the measurement noise filtered out). The fits use the
    normal equations of the scaled, weighted problem (:func:`_weighted`), summed per block and reused."""
    samples = Ws.shape[0] // n
    edges = np.linspace(0, samples, FOLDS + 1).astype(int) * n
    A = [Ws[a:b].T @ Ws[a:b] for a, b in zip(edges[:-1], edges[1:])]
    g = [Ws[a:b].T @ yw[a:b] for a, b in zip(edges[:-1], edges[1:])]
    pred = np.empty(samples * n)
    for k, (a, b) in enumerate(zip(edges[:-1], edges[1:])):
        beta = np.linalg.lstsq(sum(A) - A[k], sum(g) - g[k], rcond=None)[0]
        pred[a:b] = Ws[a:b] @ beta / rows[a:b]
    rms, rel = _relative(pred.reshape(-1, n) - tau_filtered, tau_filtered)
    return {"kind": f"{FOLDS}-fold: each fifth of the record predicted from the other four", "rms": rms,
            "relative": rel}


def _validate(robot, validation, base, beta, flags, cutoff, order):
    """The final estimate predicting a separate record (t, q, tau), filtered as the fit was."""
    try:
        tv, qv, tauv = validation
    except (TypeError, ValueError):
        raise ValueError("validation: expected (t, q, tau) of a separate record") from None
    try:
        tv, qv, tauv = signals.check_signals(robot, tv, qv, tauv)
        signals.check_filter(tv, cutoff, order)
    except ValueError as exc:
        raise ValueError(f"validation: {exc}") from None
    filt = signals.lowpass(tv, cutoff, order)
    trim = _default_trim(tv, cutoff)
    keep = slice(trim, len(tv) - trim)
    qf = filt(qv)
    qd, qdd = signals.derivatives(qf, tv)
    Y = rr.regressor(robot, qf[keep], qd[keep], qdd[keep], *flags)[..., base.independent]
    ref = filt(tauv)[keep]
    rms, rel = _relative(Y @ beta - ref, ref)
    return {"kind": f"a separate record of {len(tv)} samples", "rms": rms, "relative": rel}


def _weakest(W, names):
    _, _, vt = np.linalg.svd(_scaled(W)[0], full_matrices=False)
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
    simulated minus measured joint torques (weight ``tau_weight``), tip offsets, curvatures.
    ``cutoff`` (Hz) of the filter on the measured joint motion: default read from the data as
    for rigid arms (:func:`.signals.choose_cutoff`), reported with the result."""
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
    from_data = cutoff is None
    if from_data:
        cutoff = signals.choose_cutoff(t, q, tau)
    cutoff, order = signals.check_filter(t, cutoff, order)
    qf, _, _, _ = filtered_motion(t, q, cutoff, order)
    dt = float(np.mean(np.diff(t)))
    traj = _JointSpline(t, qf, dt)
    t_final = float(t[-1] - t[0])
    trim = _default_trim(t, cutoff)  # the filter's and the spline's end effects
    scales = {}
    for key, data in channels:
        rms = np.sqrt(np.nanmean(data[trim:N - trim] ** 2, axis=0))
        scales[key] = np.where(rms > 0, rms, 1.0)
    start = np.array([physical.value(robot, n) for n in names])
    if np.any(start <= 0):
        bad = names[int(np.flatnonzero(start <= 0)[0])]
        raise ValueError(f"parameters: {bad} is 0 in the model file; give it a positive starting value")

    memo = {}

    def outputs(x):  # one simulation per parameter vector (least_squares asks again for points it saw)
        key = np.asarray(x, dtype=float).tobytes()
        if key not in memo:
            if len(memo) > 8:
                memo.clear()
            memo[key] = simulated(x)
        return memo[key]

    def simulated(x):
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
        sol = least_squares(residual, x, diff_step=1e-6, xtol=XTOL, ftol=FTOL)
        x = sol.x
        parts = misfits(x)
        for key, _ in channels:
            std = np.sqrt(np.nanmean(parts[key] ** 2, axis=0))
            scales[key] = np.where(std > 0, std, scales[key])
    sol = least_squares(residual, x, diff_step=1e-6, xtol=XTOL, ftol=FTOL)
    values = start * np.exp(sol.x)
    J = sol.jac
    dof = max(len(sol.fun) - len(names), 1)
    s2 = 2 * sol.cost / dof
    cov_x = s2 * np.linalg.pinv(J.T @ J)
    cov = cov_x * np.outer(values, values)  # d value = value d x
    sv = np.linalg.svd(J, compute_uv=False)
    out, k = outputs(sol.x)
    sigma = np.sqrt(np.mean((out["tau"] - tau[:k]) ** 2, axis=0))
    notes = [f"least_squares: {sol.nfev} + {sol.njev * len(names)} simulations, {sol.message}"]
    return Identification(names, values, np.sqrt(np.diag(cov)), cov, sigma, N,
                          float(sv[0] / sv[-1]) if sv[-1] > 0 else np.inf, None, notes, cutoff=cutoff,
                          cutoff_from_data=from_data)


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
