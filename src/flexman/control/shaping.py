"""Input shaping for flexible arms: impulse sequences designed from the arm's own vibration modes,
and joint trajectories convolved with them so that a move leaves (almost) no residual vibration.

``sh = shaper(robot, q, kind="ZVD")`` finds the arm's modes, designs one shaper per mode
(:mod:`flexman.control.impulses`: Singer & Seering's ZV and ZVD, Singhose's EI) and convolves
them into one sequence; ``sh(traj)`` is the shaped trajectory, a
:class:`flexman.trajectory.Trajectory` that ends ``sh.duration`` later.

Which modes (the design choice the caller makes):

- without a controller, the joints are taken to follow their command exactly (position control,
  ``fm.simulate(..., prescribed=...)``): the vibrating system is the arm with its joints locked,
  ``M_ff qdd_f + C_ff qd_f + K_ff q_f = -M_fr qdd_r``, so the modes are those of (M_ff, C_ff, K_ff)
  linearized at rest (damping from the model's beam damping);
- with ``controller=``, the command drives the closed loop: the modes are the oscillatory
  eigenvalues of the closed loop's Jacobian (:mod:`flexman.analysis.closed_loop`).

A flexible arm's frequencies change with its pose. ``q`` may be one configuration, several, or a
trajectory (sampled at ``samples`` instants of its move). Over several configurations each mode
has a frequency range [w_min, w_max]; its shaper is designed at the middle of the range,
(w_min + w_max) / 2: the residual vibration of ZV, ZVD and EI is nearly symmetric in the
frequency ratio about the design point, so the middle gives the smallest worst case.
``sh.worst_residual`` reports that worst case per mode (pick ZVD or EI when it is too large).
"""
from __future__ import annotations

import numpy as np

from ..analysis.closed_loop import closed_loop_jacobian, reference_state
from ..analysis.frequencies import generalized_eigenvalues, linearize
from ..model import engine
from ..simulate.run import controller_parts
from ..trajectory import Trajectory
from . import impulses

__all__ = ["Shaper", "ShapedTrajectory", "shaper", "arm_modes", "robustness"]

#: default frequency ratios of the robustness curves
RATIOS = np.linspace(0.5, 1.5, 401)
#: the most impulses a convolved shaper may have (each shaped mode multiplies them by 2 or 3,
#: and a shaped trajectory evaluates its base once per impulse)
MAX_IMPULSES = 1000


class ShapedTrajectory(Trajectory):
    """``sum_i A_i base(t - t_i)``: the base trajectory convolved with a shaper's impulses.

    q, qd and qdd are exact (each is the same sum of the base's own values). The move starts
    with the base and ends ``shaper.duration`` after it; outside it holds like the base does.
    """

    def __init__(self, base, shaper):
        self.base, self.shaper = base, shaper
        A, times = shaper.amplitudes.copy(), shaper.times.copy()
        self.impulses = (A, times)  # what the sum uses (the compiled loop reads them too)

        def evaluate(t):
            t = np.asarray(t, dtype=float)
            parts = [base(t - ti) for ti in times]
            return tuple(sum(a * p[k] for a, p in zip(A, parts)) for k in range(3))

        super().__init__(base.t_start, base.t_end + shaper.duration, evaluate, base.n)
        for name in ("q_start", "q_end"):  # not the profile: the shaped move is not that profile
            if hasattr(base, name):
                setattr(self, name, getattr(base, name))

    def __call__(self, t):
        # the base holds (or, for a spin-up, keeps turning) outside its move: the sum is exact for all t
        return self._evaluate(t)


class Shaper:
    """An input shaper: impulse ``amplitudes`` (summing to 1) at ``times`` (s, from 0).

    ``frequencies``, ``damping``: the design frequency (rad/s) and damping ratio of each mode it
    was built for; ``ranges``: each mode's (w_min, w_max) over the configurations considered;
    ``kind``, ``tolerance`` (EI's residual at the design frequency; the line drawn with the
    robustness curve), ``source`` (which system's modes: "locked joints",
    "closed loop" or "given"). ``sh(traj)`` shapes a joint trajectory.
    """

    def __init__(self, amplitudes, times, kind, frequencies, damping, ranges=None, tolerance=None, source="given"):
        self.amplitudes = np.asarray(amplitudes, dtype=float)
        self.times = np.asarray(times, dtype=float)
        self.kind = kind
        self.frequencies = np.atleast_1d(np.asarray(frequencies, dtype=float))
        self.damping = np.broadcast_to(np.asarray(damping, dtype=float), self.frequencies.shape).copy()
        self.ranges = (np.stack([self.frequencies, self.frequencies], axis=-1) if ranges is None
                       else np.asarray(ranges, dtype=float).reshape(-1, 2))
        self.tolerance = tolerance
        self.source = source

    @classmethod
    def design(cls, kind, frequencies, damping=0.0, tolerance=0.05, ranges=None, source="given"):
        """One ``kind`` shaper per mode (frequencies in rad/s, damping ratios), convolved."""
        kind = impulses.check_kind(kind)
        w = np.atleast_1d(np.asarray(frequencies, dtype=float))
        if w.ndim != 1 or w.size == 0:
            raise ValueError("frequencies: give one or more natural frequencies in rad/s")
        z = np.asarray(damping, dtype=float)
        if z.ndim and z.shape != w.shape:
            raise ValueError(f"damping: give one damping ratio or one per mode ({w.size}), got {z.size}")
        z = np.broadcast_to(z, w.shape)
        tol = impulses.check_tolerance(tolerance)
        count = (2 if kind == "ZV" else 3) ** w.size
        if count > MAX_IMPULSES:
            lowest = int(np.log(MAX_IMPULSES) // np.log(2 if kind == "ZV" else 3))
            raise ValueError(f"modes: a {kind} shaper for {w.size} modes would have {count} impulses (at most "
                             f"{MAX_IMPULSES}); shape the modes that ring, e.g. modes={lowest} (the {lowest} lowest)")
        seq = (np.ones(1), np.zeros(1))
        for k, (wk, zk) in enumerate(zip(w, z)):
            seq = impulses.convolve(seq, impulses.sequence(kind, impulses.check_frequency(wk, f"frequencies[{k}]"),
                                                           impulses.check_damping(zk, f"damping[{k}]"), tol))
        return cls(seq[0], seq[1], kind, w, z, ranges, tol, source)

    @property
    def duration(self) -> float:
        """The delay the shaper adds to a move (s): the time of its last impulse."""
        return float(self.times[-1])

    def __call__(self, traj):
        """The shaped trajectory of ``traj`` (a :class:`flexman.trajectory.Trajectory`)."""
        if not (callable(traj) and hasattr(traj, "t_start") and hasattr(traj, "t_end") and hasattr(traj, "n")):
            raise ValueError("traj: expected a flexman.trajectory.Trajectory (with t_start, t_end and n), "
                             f"got {type(traj).__name__}")
        return ShapedTrajectory(traj, self)

    def residual(self, omega, damping=0.0):
        """Residual vibration (a fraction of the unshaped one) of a mode of frequency ``omega``
        (rad/s, any shape) and damping ratio ``damping`` after this sequence."""
        return impulses.residual_vibration(self.amplitudes, self.times, omega, damping)

    @property
    def worst_residual(self):
        """Per mode, the largest residual vibration over its frequency range (the design point
        alone when the shaper was designed at one configuration)."""
        out = []
        for (lo, hi), z in zip(self.ranges, self.damping):
            out.append(float(self.residual(np.linspace(lo, hi, 101), z).max()))
        return np.array(out)

    def robustness(self, ratios=None):
        """Residual vibration against frequency error: for each design mode, V at ``ratios``
        times its design frequency (with its damping). Returns ``{"ratio": r, label: V, ...}``."""
        r = RATIOS if ratios is None else np.asarray(ratios, dtype=float)
        data = {"ratio": r}
        for k, (w, z) in enumerate(zip(self.frequencies, self.damping)):
            data[f"mode {k + 1} ({w / (2 * np.pi):.3g} Hz)"] = self.residual(r * w, z)
        return data

    def plot_robustness(self, path=None):
        """The robustness curves of :meth:`robustness` as a matplotlib Figure (saved to ``path``)."""
        plot = engine.require("plot_robustness")
        return plot(self.robustness(), path, tolerance=self.tolerance,
                    title=f"{self.kind} shaper, {len(self.frequencies)} mode(s), {self.duration:.3g} s")

    def __repr__(self):
        hz = ", ".join(f"{w / (2 * np.pi):.4g}" for w in self.frequencies)
        return (f"Shaper({self.kind}, modes at [{hz}] Hz ({self.source}), {len(self.times)} impulses, "
                f"duration {self.duration:.4g} s)")


#: modes damped more than this do not ring (and a critically damped pair, split by round-off into
#: a tiny imaginary part, would ask for an absurdly long shaper)
MAX_DAMPING = 0.95


def _oscillatory(lam):
    """(omega_n, zeta) of the eigenvalues with positive imaginary part and damping ratio below
    MAX_DAMPING, ascending in omega_n."""
    lam = np.asarray(lam)
    lam = lam[(lam.imag > 0) & (lam.imag > np.sqrt(1.0 - MAX_DAMPING**2) * np.abs(lam))]
    omega = np.abs(lam)
    zeta = np.clip(-lam.real / omega, 0.0, None)
    zeta = np.where(zeta < 1e-9, 0.0, zeta)
    order = np.argsort(omega)
    return omega[order], zeta[order]


def _locked_joint_modes(robot, q, eps=1e-6):
    """(omega_n, zeta) of the arm with its joints locked, linearized at rest at q."""
    f = robot.flex_index
    M, K = linearize(robot, q)
    M, K = M[f, f], K[f, f]
    K = 0.5 * (K + K.T)
    n = robot.nf
    # damping: d b_f / d qd_f at rest by central differences (Coriolis terms are quadratic and cancel)
    steps = np.zeros((2 * n, robot.nq))
    steps[:n, f] = eps * np.eye(n)
    steps[n:, f] = -eps * np.eye(n)
    Db = robot.bias_forces(np.broadcast_to(q, steps.shape), steps)[..., f]
    C = (Db[:n] - Db[n:]).T / (2.0 * eps)
    if not np.any(np.abs(C) > 1e-12 * max(1.0, np.abs(K).max())):
        w2 = generalized_eigenvalues(K, 0.5 * (M + M.T))
        return np.sqrt(np.clip(w2, 0.0, None)), np.zeros(n)
    A = np.block([[np.zeros((n, n)), np.eye(n)], [-np.linalg.solve(M, K), -np.linalg.solve(M, C)]])
    return _oscillatory(np.linalg.eigvals(A))


def arm_modes(robot, q, controller=None, t=0.0, qd=None):
    """(omega_n, zeta): natural frequencies (rad/s, ascending) and damping ratios of the
    vibration modes a shaped command excites, at one configuration ``q`` (nq values).

    Without a controller: the arm with its joints locked (joints following their command
    exactly), linearized at rest. With one: the oscillatory eigenvalues of the closed loop
    linearized at (t, q, qd) (qd zero by default), controller states at their initial value.
    """
    q = np.asarray(q, dtype=float)
    if controller is None:
        return _locked_joint_modes(robot, q)
    n_z, z0, _, _ = controller_parts(controller, robot.n_joints)
    qd = np.zeros(robot.nq) if qd is None else np.asarray(qd, dtype=float)
    x = np.concatenate([q, qd, z0])
    return _oscillatory(np.linalg.eigvals(closed_loop_jacobian(robot, controller, t, x)))


def _configurations(robot, q, samples):
    """(times or None, states (k, nq), rates (k, nq) or None) of the configurations to design for."""
    if isinstance(q, Trajectory) or (callable(q) and hasattr(q, "t_start") and hasattr(q, "t_end")):
        if getattr(q, "n", robot.n_joints) != robot.n_joints:
            raise ValueError(f"q: the trajectory moves {q.n} joints; the robot has {robot.n_joints}")
        times = np.linspace(q.t_start, q.t_end, int(samples))
        states = [reference_state(robot, q, t) for t in times]
        return times, np.array([s[0] for s in states]), np.array([s[1] for s in states])
    try:
        arr = np.asarray(q, dtype=float)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.ndim not in (1, 2) or arr.shape[-1] not in (robot.n_joints, robot.nq) or arr.size == 0:
        raise ValueError(f"q: give one configuration ({robot.n_joints} joint values or nq = {robot.nq} "
                         "coordinates), a list of them, or a trajectory")
    if not np.all(np.isfinite(arr)):
        raise ValueError("q: configurations must be finite numbers")
    arr = np.atleast_2d(arr)
    if arr.shape[-1] == robot.n_joints:
        full = np.zeros((len(arr), robot.nq))
        full[:, robot.joint_index] = arr
        arr = full
    return None, arr, None


def _select(n_modes, modes):
    """0-based indices of the modes to shape: None -> all, int m -> the m lowest, a sequence ->
    those 1-based mode numbers."""
    if modes is None:
        return np.arange(n_modes)
    if isinstance(modes, (int, np.integer)) and not isinstance(modes, bool):
        if not 1 <= modes <= n_modes:
            raise ValueError(f"modes: give a number of modes between 1 and {n_modes} (the arm's vibration modes), "
                             f"got {modes}")
        return np.arange(int(modes))
    try:
        idx = np.asarray(modes, dtype=int).ravel() - 1
    except (TypeError, ValueError):
        idx = None
    if idx is None or idx.size == 0 or np.any(idx < 0) or np.any(idx >= n_modes):
        raise ValueError(f"modes: give a number of lowest modes or mode numbers between 1 and {n_modes}, "
                         f"got {modes!r}")
    return np.unique(idx)


def _merge(lo, hi, zeta, gap):
    """Group modes whose frequency ranges overlap or lie within ``gap`` (relative) of each
    other (one shaper cancels them all: e.g. the equal y and z bending modes of a round tube):
    (lo, hi, zeta) per group, zeta the group's mean."""
    order = np.argsort(0.5 * (lo + hi))
    groups = []
    for k in order:
        if groups and lo[k] <= groups[-1][1] * (1.0 + gap):
            g = groups[-1]
            groups[-1] = [min(g[0], lo[k]), max(g[1], hi[k]), g[2] + [zeta[k]]]
        else:
            groups.append([lo[k], hi[k], [zeta[k]]])
    return (np.array([g[0] for g in groups]), np.array([g[1] for g in groups]),
            np.array([np.mean(g[2]) for g in groups]))


def shaper(robot, q, kind="ZV", modes=None, damping=None, tolerance=0.05, controller=None, t=None, samples=9,
           merge=0.01):
    """The input shaper of ``robot``'s vibration modes at ``q``.

    q: one configuration (n_joints joint values, flexible coordinates zero, or nq coordinates),
    a list of configurations, or a trajectory (sampled at ``samples`` instants of its move,
    rates included): each mode is designed at the middle of its frequency range over them.
    kind: "ZV", "ZVD" or "EI"; tolerance, in (0, 1): EI's residual vibration at the design
    frequency (and the acceptable level drawn with the robustness curve). modes: None (all),
    the number of lowest modes, or a list of mode numbers (1 = the lowest). damping: None (from
    the model), one ratio or one per mode.
    controller: None -> the locked-joint modes (joints following the command, ``prescribed=``);
    a controller -> the closed loop's modes, linearized at time ``t`` (default: each sampled
    instant of a trajectory, else 0). Modes whose frequency ranges overlap or come within
    ``merge`` (relative) of each other share one shaper (0: never). The shapers of the modes
    are convolved into one sequence (at most MAX_IMPULSES impulses: with many modes, choose).
    """
    kind = impulses.check_kind(kind)
    tol = impulses.check_tolerance(tolerance)
    if robot.nf == 0:
        raise ValueError(f"robot: '{robot.name}' has no flexible modes (no beam with modes); input shaping "
                         "needs a flexible link (add a beam: to a link)")
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 1:
        raise ValueError(f"samples: give a whole number >= 1 of instants along the trajectory, got {samples!r}")
    if t is not None and (isinstance(t, (bool, np.bool_)) or not isinstance(t, (int, float, np.number))
                          or not np.isfinite(t)):
        raise ValueError(f"t: the time at which the controller is linearized, a finite number of seconds (got {t!r:.40})")
    times, states, rates = _configurations(robot, q, samples)
    found = []
    for k, qk in enumerate(states):
        if controller is None:
            found.append(arm_modes(robot, qk))
        else:
            tk = float(t) if t is not None else (times[k] if times is not None else 0.0)
            found.append(arm_modes(robot, qk, controller, tk, None if rates is None else rates[k]))
    n_modes = min(len(w) for w, _ in found)
    if n_modes == 0:
        raise ValueError("q: the arm has no oscillatory mode here (all modes overdamped or unstable): nothing to shape")
    omega = np.array([w[:n_modes] for w, _ in found])  # (configurations, modes)
    zeta = np.array([z[:n_modes] for _, z in found])
    if np.any(omega <= 0):
        raise ValueError("q: a mode has a non-positive frequency at one of the configurations (the arm buckles "
                         "there); shape for configurations where it is stable")
    idx = _select(n_modes, modes)
    lo, hi = omega.min(axis=0)[idx], omega.max(axis=0)[idx]
    if damping is None:
        z = zeta.mean(axis=0)[idx]
    else:
        z = np.asarray(damping, dtype=float)
        if z.ndim and z.size != idx.size:
            raise ValueError(f"damping: give one damping ratio or one per shaped mode ({idx.size}), got {z.size}")
        z = np.broadcast_to(z, idx.shape)
        for k, zk in enumerate(z):
            impulses.check_damping(zk, f"damping[{k}]")
    if not (np.isfinite(merge) and merge >= 0):
        raise ValueError(f"merge: give a relative frequency gap >= 0 (e.g. 0.01), got {merge!r}")
    lo, hi, z = _merge(lo, hi, z, float(merge))
    return Shaper.design(kind, 0.5 * (lo + hi), z, tol, np.stack([lo, hi], axis=-1),
                         "locked joints" if controller is None else "closed loop")


def robustness(kinds=impulses.KINDS, damping=0.0, tolerance=0.05, ratios=None):
    """The classic robustness curves: residual vibration against the ratio of the actual to the
    design frequency for each shaper kind, all designed for the same mode (damping ratio
    ``damping``). Returns ``{"ratio": r, "ZV": V, "ZVD": V, "EI": V}``."""
    r = RATIOS if ratios is None else np.asarray(ratios, dtype=float)
    data = {"ratio": r}
    for kind in kinds:
        A, times = impulses.sequence(kind, 1.0, damping, tolerance)
        data[impulses.check_kind(kind)] = impulses.residual_vibration(A, times, r, damping)
    return data
