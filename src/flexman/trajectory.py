"""Joint-space trajectories: rest-to-rest profiles, clamped cubic splines and spin-ups.

Every trajectory is a callable ``traj(t) -> (q, qd, qdd)``. The built-in ones say which they are
(``traj.kind``: ``rest_to_rest``, ``spline``, ``spin_up``, ``fourier``) with the data that defines
them, so the compiled simulation loop can evaluate them in C (input-shaped ones too; others run
in Python). It is batched in time: a
scalar ``t`` gives arrays of shape ``(n,)``, ``t`` of shape ``(k,)`` gives ``(k, n)``.
Before its start it holds the first point and after its end the last point, with zero
velocity and acceleration, so a controller can keep using it after the move.

Sources: the smooth sinusoidal rest-to-rest profile of Theodore & Ghosal (004, sec. 5);
the cubic-spline joint trajectories fed to FLX's PID controllers (000, sec. 3.1); the
spin-up manoeuvre of Kane, Ryan & Banerjee (1987) (:func:`spin_up`).

:func:`from_spec` builds one from a model file's mapping (``manoeuvre:`` and a controller's
``trajectory:``).
"""
from __future__ import annotations

import numpy as np

from .model import inputs
from .model.limits import MIN_DURATION

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


def _seconds(value, name: str) -> float:
    """A duration in seconds: finite, at least MIN_DURATION (1e-300 s would make every
    acceleration overflow) and at most as long as any run may be."""
    if isinstance(value, (bool, np.bool_)):  # True is not 1 s
        raise ValueError(f"{name}: expected a number of seconds (got {value!r})")
    try:
        T = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a number of seconds (got {value!r:.40})") from None
    if not (np.isfinite(T) and T >= MIN_DURATION):
        raise ValueError(f"{name}: must be a finite number of seconds >= {MIN_DURATION:g} (got {value!r:.40}; "
                         "README, Limits)")
    return T


def rest_to_rest(q_start, q_end, duration, profile="sinusoidal"):
    """Move from ``q_start`` to ``q_end`` in ``duration`` seconds, starting and ending at rest.

    ``sinusoidal`` (004 sec. 5): ``q = q0 + (qf - q0) (t/T - sin(2 pi t/T) / (2 pi))``, zero
    velocity and acceleration at both ends; ``quintic``: zero velocity and acceleration at
    both ends; ``cubic``: zero velocity only (acceleration jumps at the ends).
    """
    q0 = np.atleast_1d(inputs.array(q_start, "q_start")).astype(float)
    qf = np.atleast_1d(inputs.array(q_end, "q_end")).astype(float)
    q0, qf = np.broadcast_arrays(q0, qf)
    T = _seconds(duration, "duration")
    s, ds, dds = _normalized(profile)
    dq = qf - q0

    def evaluate(t):
        x = (t / T)[..., None]
        return q0 + dq * s(x), dq * ds(x) / T, dq * dds(x) / T**2

    traj = Trajectory(0.0, T, evaluate, q0.size)
    traj.q_start, traj.q_end, traj.profile = q0.copy(), qf.copy(), profile
    traj.kind = "rest_to_rest"
    return traj


def clamped_spline_coefficients(times, points):
    """Piecewise-cubic coefficients ``c`` (4, k - 1, n) of the clamped cubic spline through
    ``points`` (k, n) at ``times`` (k,): on piece i, ``q = c[0] s^3 + c[1] s^2 + c[2] s + c[3]``
    with ``s = t - times[i]``, zero slope at both ends, continuous second derivative (the
    standard slope equations of a cubic spline, as SciPy's CubicSpline with bc_type="clamped")."""
    h = np.diff(times)
    slope = np.diff(points, axis=0) / h[:, None]
    k = len(times)
    s = np.zeros_like(points)
    if k > 2:  # interior slopes: h_i s_{i-1} + 2 (h_{i-1} + h_i) s_i + h_{i-1} s_{i+1} = 3 (h_i d_{i-1} + h_{i-1} d_i)
        A = np.zeros((k - 2, k - 2))
        i = np.arange(k - 2)
        A[i, i] = 2.0 * (h[:-1] + h[1:])
        A[i[1:], i[1:] - 1] = h[2:]
        A[i[:-1], i[:-1] + 1] = h[:-2]
        s[1:-1] = np.linalg.solve(A, 3.0 * (h[1:, None] * slope[:-1] + h[:-1, None] * slope[1:]))
    t = (s[:-1] + s[1:] - 2.0 * slope) / h[:, None]
    return np.stack([t / h[:, None], (slope - s[:-1]) / h[:, None] - t, s[:-1], points[:-1]])


def piecewise_values(x, c, t):
    """Values at ``t`` of the piecewise polynomials ``c`` (order + 1, pieces, n; highest power
    first) on the breaks ``x``: the piece holding t (the last one at the end), powers summed from
    the lowest, as the compiled loop does."""
    i = np.clip(np.searchsorted(x, t, side="right") - 1, 0, len(x) - 2)
    s = (t - x[i])[..., None]
    res, z = 0.0, 1.0
    for kp in range(c.shape[0]):
        res = res + c[c.shape[0] - kp - 1, i] * z
        z = z * s
    return res


def spline(times, points):
    """Clamped cubic spline through via points (zero velocity at the first and last), as
    used to command FLX's joint controllers (000 sec. 3.1). ``points``: (k, n) or (k,)."""
    times = inputs.array(times, "times").astype(float)
    pts = inputs.array(points, "points").astype(float)
    if pts.ndim == 1:
        pts = pts[:, None]
    if times.ndim != 1 or len(times) < 2 or len(times) != len(pts):
        raise ValueError("spline: give k >= 2 strictly increasing times and k points")
    if np.any(np.diff(times) <= 0):
        raise ValueError("spline: times must be strictly increasing")
    if not np.all(np.isfinite(times)) or np.min(np.diff(times)) < MIN_DURATION:
        raise ValueError(f"spline: times must be finite and at least {MIN_DURATION:g} s apart (README, Limits)")
    c = clamped_spline_coefficients(times, pts)
    c1 = c[:3] * np.array([3.0, 2.0, 1.0])[:, None, None]  # the derivatives' coefficients
    c2 = c1[:2] * np.array([2.0, 1.0])[:, None, None]

    def evaluate(t):
        return piecewise_values(times, c, t), piecewise_values(times, c1, t), piecewise_values(times, c2, t)

    traj = Trajectory(times[0], times[-1], evaluate, pts.shape[1])
    traj.q_start, traj.q_end, traj.times, traj.points = pts[0].copy(), pts[-1].copy(), times, pts
    traj.kind, traj.pieces = "spline", (c, c1, c2)  # piecewise polynomials of q, qd, qdd on traj.times
    return traj


class SpinUp(Trajectory):
    """A smooth spin-up to a steady rate that then goes on for ever (see :func:`spin_up`)."""

    def __call__(self, t):
        t = np.asarray(t, dtype=float)
        q, qd, qdd = self._evaluate(np.maximum(t, self.t_start) - self.t_start)
        return q, qd, qdd


def spin_up(rate, ramp_time, q_start=0.0):
    """Spin a joint up from rest to ``rate`` (rad/s, one value or one per joint) in
    ``ramp_time`` seconds with a smooth acceleration (1 - cos), then hold that rate.

    This is the hub-angle manoeuvre of Kane, Ryan & Banerjee (1987), a standard test of
    geometric stiffening: for t < Ts, ``q = (Ws/Ts) (t^2/2 + (Ts/2 pi)^2 (cos(2 pi t/Ts) - 1))``,
    afterwards ``q = Ws (t - Ts/2)`` (plus ``q_start``). Acceleration is zero at both ends of
    the ramp, so velocity and acceleration are continuous.
    """
    W = np.atleast_1d(inputs.array(rate, "rate")).astype(float)
    q0 = np.atleast_1d(inputs.array(q_start, "q_start")).astype(float)
    W, q0 = np.broadcast_arrays(W, q0)
    T = _seconds(ramp_time, "ramp_time")
    if not np.all(np.isfinite(W)) or not np.all(np.isfinite(q0)):
        raise ValueError("spin_up: rate and q_start must be finite numbers")
    w = 2.0 * np.pi / T

    def evaluate(t):
        x = t[..., None]
        ramp = x < T
        xr = np.minimum(x, T)
        q = np.where(ramp, (W / T) * (xr**2 / 2.0 + (np.cos(w * xr) - 1.0) / w**2), W * (x - T / 2.0))
        qd = np.where(ramp, (W / T) * (xr - np.sin(w * xr) / w), W)
        qdd = np.where(ramp, (W / T) * (1.0 - np.cos(w * xr)), 0.0)
        return q0 + q, qd * np.ones_like(q), qdd * np.ones_like(q)

    traj = SpinUp(0.0, T, evaluate, W.size)
    traj.q_start, traj.rate, traj.ramp_time = q0.copy(), W.copy(), T
    traj.kind = "spin_up"
    return traj


# ----- from a model file ---------------------------------------------------------------------
#: the fields of each kind of trajectory in a model file: (required, optional)
SPEC_FIELDS = {
    "spin_up": (("rate", "ramp_time"), ("start",)),
    "rest_to_rest": (("start", "end", "duration"), ("profile",)),
    "spline": (("times", "points"), ()),
}


def _spec_numbers(value, where, n=None, positive=False):
    """A finite float array from a number or a (nested) list; ``n``: values along the last axis
    (a single number is repeated)."""
    bad = isinstance(value, (bool, str, dict)) or value is None
    try:
        arr = None if bad else np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.dtype == object or (arr.size and not np.all(np.isfinite(arr))):
        raise ValueError(f"{where}: expected finite numbers (got {value!r:.60})")
    if positive and np.any(arr <= 0):
        raise ValueError(f"{where}: must be > 0 (got {value!r:.60})")
    if n is not None:
        if arr.ndim == 0:
            arr = np.full(n, float(arr))
        elif arr.shape[-1] != n:
            raise ValueError(f"{where}: expected {n} values (one per joint), got {arr.shape[-1]}")
    return arr


def from_spec(spec, n_joints, where="trajectory"):
    """A trajectory from a mapping, as written in model files::

        {type: spin_up, rate: 6.0, ramp_time: 15.0, start: 0.0}
        {type: rest_to_rest, start: [...], end: [...], duration: 2.0, profile: sinusoidal}
        {type: spline, times: [t0, t1, ...], points: [[...], [...], ...]}

    Joint values are one per joint (a single number is used for every joint). A bad field is
    a ``ValueError`` naming it (``where.field: ...``) in one line.
    """
    if not isinstance(spec, dict):
        raise ValueError(f"{where}: expected a mapping with 'type' ({' | '.join(SPEC_FIELDS)}) and its fields")
    kind = spec.get("type")
    if kind not in SPEC_FIELDS:
        raise ValueError(f"{where}.type: unknown {kind!r}; use one of {', '.join(SPEC_FIELDS)}")
    required, optional = SPEC_FIELDS[kind]
    allowed = ("type",) + required + optional
    for key in spec:
        if key not in allowed:
            raise ValueError(f"{where}.{key}: unknown field for type {kind}; allowed fields: {', '.join(allowed)}")
    for key in required:
        if key not in spec:
            raise ValueError(f"{where}.{key}: required field missing for type {kind}")
    field = lambda key: f"{where}.{key}"  # noqa: E731
    if kind == "spin_up":
        ramp = _spec_numbers(spec["ramp_time"], field("ramp_time"), positive=True)
        if ramp.ndim:
            raise ValueError(f"{field('ramp_time')}: expected one number of seconds")
        return spin_up(_spec_numbers(spec["rate"], field("rate"), n_joints),
                       _seconds(ramp, field("ramp_time")), _spec_numbers(spec.get("start", 0.0), field("start"), n_joints))
    if kind == "rest_to_rest":
        duration = _spec_numbers(spec["duration"], field("duration"), positive=True)
        if duration.ndim:
            raise ValueError(f"{field('duration')}: expected one number of seconds")
        profile = spec.get("profile", "sinusoidal")
        if profile not in PROFILES:
            raise ValueError(f"{field('profile')}: unknown {profile!r}; use one of {', '.join(PROFILES)}")
        return rest_to_rest(_spec_numbers(spec["start"], field("start"), n_joints),
                            _spec_numbers(spec["end"], field("end"), n_joints), _seconds(duration, field("duration")),
                            profile)
    times = _spec_numbers(spec["times"], field("times"))
    if times.ndim != 1 or times.size < 2 or np.any(np.diff(times) <= 0):
        raise ValueError(f"{field('times')}: expected at least 2 strictly increasing times")
    points = _spec_numbers(spec["points"], field("points"))
    if n_joints == 1 and points.ndim == 1:
        points = points[:, None]
    if points.ndim != 2 or points.shape != (len(times), n_joints):
        raise ValueError(f"{field('points')}: expected {len(times)} rows (one per time) of {n_joints} joint values")
    return spline(times, points)


# ----- periodic excitation --------------------------------------------------------------------
class FourierSeries(Trajectory):
    """A periodic joint motion, the finite Fourier series of Swevers et al. (1997)::

        q_i(t) = q0_i + sum_l  a_il / (l w) sin(l w t) - b_il / (l w) cos(l w t),   w = 2 pi / period

    (so that ``qd_i = sum_l a_il cos(l w t) + b_il sin(l w t)``). It repeats for ever: a robot
    runs it for whole periods, and identification data from several periods average the noise.
    ``a``, ``b``: (n, harmonics); ``q0``: (n,)."""

    kind = "fourier"  # the compiled loop evaluates it in C

    def __init__(self, period, q0, a, b):
        self.period = float(period)
        if not (np.isfinite(self.period) and self.period > 0):
            raise ValueError(f"period: must be a finite number of seconds > 0 (got {period!r})")
        self.q0 = np.atleast_1d(np.asarray(q0, dtype=float)).copy()
        self.a = np.atleast_2d(np.asarray(a, dtype=float)).copy()
        self.b = np.atleast_2d(np.asarray(b, dtype=float)).copy()
        if self.a.shape != self.b.shape or self.a.shape[0] != self.q0.size:
            raise ValueError("FourierSeries: a and b must be (n_joints, harmonics) and q0 (n_joints,)")
        self.harmonics = self.a.shape[1]
        super().__init__(0.0, self.period, self._evaluate_series, self.q0.size)

    def _evaluate_series(self, t):
        w = 2.0 * np.pi / self.period * np.arange(1, self.harmonics + 1)
        x = np.asarray(t, dtype=float)[..., None, None] * w
        s, c = np.sin(x), np.cos(x)
        q = self.q0 + ((self.a * s - self.b * c) / w).sum(-1)
        qd = (self.a * c + self.b * s).sum(-1)
        qdd = (w * (-self.a * s + self.b * c)).sum(-1)
        return q, qd, qdd

    def __call__(self, t):
        return self._evaluate_series(t)

    def samples(self, rate, periods=1):
        """(t, q, qd, qdd) at ``rate`` samples per second over whole ``periods``."""
        t = np.arange(int(round(periods * self.period * rate))) / float(rate)
        return (t,) + tuple(self._evaluate_series(t))

    def to_csv(self, path, rate=1000.0, periods=1):
        """Write t, q1.., qd1.., qdd1.. sampled at ``rate`` Hz over ``periods`` periods (the
        reference a robot's controller follows); returns the path."""
        import io

        from .outputs import write_text

        t, q, qd, qdd = self.samples(rate, periods)
        header = ["t"] + [f"{p}{i + 1}" for p in ("q", "qd", "qdd") for i in range(self.n)]
        buf = io.StringIO()
        np.savetxt(buf, np.column_stack([t, q, qd, qdd]), delimiter=",", fmt="%.17g", header=",".join(header),
                   comments="")
        return write_text(path, buf.getvalue())


# Quintic Hermite basis on s in [0, 1]: coefficients of s^0..s^5 for p0, h v0, h^2 a0, h^2 a1, h v1, p1.
_HERMITE5 = np.array([[1, 0, 0, -10, 15, -6],
                      [0, 1, 0, -6, 8, -3],
                      [0, 0, 0.5, -1.5, 1.5, -0.5],
                      [0, 0, 0, 0.5, -1.0, 0.5],
                      [0, 0, 0, -4, 7, -3],
                      [0, 0, 0, 10, -15, 6]], dtype=float)


def sampled(t, q, qd, qdd):
    """A Trajectory through samples of (q, qd, qdd) at increasing times t: quintic Hermite
    interpolation, so positions, rates and accelerations equal the samples there and are
    continuous between them (what a controller following a sampled reference sees)."""
    t = np.asarray(t, dtype=float)
    q, qd, qdd = (np.asarray(a, dtype=float).reshape(t.size, -1) for a in (q, qd, qdd))
    if t.ndim != 1 or t.size < 2 or not np.all(np.diff(t) > 0):
        raise ValueError("t: expected at least two strictly increasing times")
    n = q.shape[1]
    powers = np.arange(6)
    d1 = _HERMITE5[:, 1:] * powers[1:]            # coefficients of s^0..s^4
    d2 = d1[:, 1:] * powers[1:5]                  # coefficients of s^0..s^3

    def evaluate(tc):
        tc = np.asarray(tc, dtype=float)
        i = np.clip(np.searchsorted(t, tc, side="right") - 1, 0, t.size - 2)
        h = (t[i + 1] - t[i])[..., None]
        s = ((tc - t[i])[..., None] / h)[..., 0]
        S = s[..., None] ** powers                 # (..., 6)
        b0, b1, b2 = S @ _HERMITE5.T, S[..., :5] @ d1.T, S[..., :4] @ d2.T   # (..., 6) basis values
        ends = [q[i], h * qd[i], h * h * qdd[i], h * h * qdd[i + 1], h * qd[i + 1], q[i + 1]]
        pos = sum(b0[..., k, None] * e for k, e in enumerate(ends))
        vel = sum(b1[..., k, None] * e for k, e in enumerate(ends)) / h
        acc = sum(b2[..., k, None] * e for k, e in enumerate(ends)) / (h * h)
        return pos, vel, acc

    return Trajectory(t[0], t[-1], evaluate, n)


MAX_CSV_BYTES = 1 << 30       # a reference file larger than 1 GiB is refused before it is read
_MAX_CELL = 64                # characters of one number in a row (with its comma), for the line-length guard


def _consistency(path, t, q, qd, qdd):
    """Refuse rates and accelerations that contradict the positions: the Hermite rule
    q1 - q0 = h/2 (qd0 + qd1) + h^2/12 (qdd0 - qdd1) and the trapezoid qd1 - qd0 = h/2 (qdd0 + qdd1)
    hold to O(h^5) and O(h^3) for smooth motion; a record whose residual is 1 % (positions) or
    10 % (rates) of the largest step is not one motion."""
    h = np.diff(t)[:, None]
    rp = q[1:] - q[:-1] - h / 2 * (qd[1:] + qd[:-1]) - h * h / 12 * (qdd[:-1] - qdd[1:])
    rv = qd[1:] - qd[:-1] - h / 2 * (qdd[1:] + qdd[:-1])
    for r, a, what, share in ((rp, q, "qd", 1e-2), (rv, qd, "qdd", 0.1)):
        step = np.abs(np.diff(a, axis=0)).max(axis=0)
        scale = share * step + 1e-9 * (1.0 + np.abs(a).max(axis=0))
        bad = np.abs(r) > scale
        if bad.any():
            i, j = np.argwhere(bad)[0]
            name = "q" if what == "qd" else "qd"
            raise ValueError(f"{path}: row {i + 3}: {what}{j + 1} contradicts {name}{j + 1} (integrating {what}{j + 1} "
                             f"from t={t[i]:g} to {t[i + 1]:g} s misses the change of {name}{j + 1} by "
                             f"{abs(r[i, j]):.3g}); write rates and accelerations of the same motion, or sample it "
                             "more finely")


def from_csv(path):
    """The joint reference written by :meth:`FourierSeries.to_csv` (or any CSV with a header
    ``t, q1.., qd1.., qdd1..``) as a Trajectory (:func:`sampled`), e.g. for
    ``fm.simulate(robot, T, prescribed=from_csv("excitation.csv"))``. A UTF-8 byte-order mark is
    accepted; files over 1 GiB, over-long lines and rates or accelerations that contradict the
    positions are refused in one line."""
    from pathlib import Path

    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ValueError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if size > MAX_CSV_BYTES:
        raise ValueError(f"{path}: {size / 2**20:.0f} MiB, more than the limit of {MAX_CSV_BYTES >> 20} MiB for a "
                         "reference file; write fewer rows")
    try:
        with open(path, encoding="utf-8-sig", newline=None) as fh:
            first = fh.readline(4096)
            if len(first) == 4096 and not first.endswith("\n"):
                raise ValueError(f"{path}: the first line is longer than 4096 characters; expected the header "
                                 "t,q1..,qd1..,qdd1..")
            header = [h.strip() for h in first.split(",")]
            n = (len(header) - 1) // 3
            want = ["t"] + [f"{p}{i + 1}" for p in ("q", "qd", "qdd") for i in range(n)]
            if n < 1 or header != want:
                raise ValueError(f"{path}: expected the header {','.join(want) if n else 't,q1,qd1,qdd1'} "
                                 f"(got {','.join(header)[:80]!r})")
            longest = _MAX_CELL * len(header) + 2
            rows = []
            for k, line in enumerate(iter(lambda: fh.readline(longest + 1), ""), start=2):
                if len(line) > longest:
                    raise ValueError(f"{path}: row {k} is longer than {longest} characters, more than "
                                     f"{len(header)} numbers can take")
                if line.strip():
                    rows.append(line)
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text (byte {exc.start}); save the file as UTF-8") from None
    try:
        data = np.loadtxt(rows, delimiter=",", ndmin=2)
    except ValueError as exc:
        raise ValueError(f"{path}: not a table of numbers ({' '.join(str(exc).split())[:80]})") from None
    if data.shape[0] < 2 or data.shape[1] != len(header) or not np.all(np.isfinite(data)):
        raise ValueError(f"{path}: expected at least two rows of {len(header)} finite numbers")
    t, q, qd, qdd = data[:, 0], data[:, 1:1 + n], data[:, 1 + n:1 + 2 * n], data[:, 1 + 2 * n:]
    try:
        traj = sampled(t, q, qd, qdd)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    _consistency(path, t, q, qd, qdd)
    return traj


__all__ = ["Trajectory", "SpinUp", "FourierSeries", "rest_to_rest", "spline", "spin_up", "sampled", "from_csv",
           "from_spec", "clamped_spline_coefficients", "piecewise_values", "PROFILES", "MIN_DURATION"]
