"""Optimal rest-to-rest motion of flexible arms: ``fm.plan`` (CasADi + IPOPT).

:func:`plan` checks its inputs, builds a :class:`~.collocation.Problem` (the equations from
``fm.derive(robot).casadi()``), solves it by direct collocation (:mod:`.collocation`) and
returns a :class:`~.result.Plan`. What each objective means and how to warm start:
docs/motion.md.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..model import inputs
from ..trajectory import rest_to_rest
from .collocation import Problem, dense_peaks, solve
from .result import Plan, PlanningError

__all__ = ["plan", "Plan", "PlanningError", "OBJECTIVES"]

#: objective names; a dict {name: weight} is a weighted sum of them
OBJECTIVES = ("effort", "time", "deflection", "tip_path", "smooth")
#: default weights added to keep a plan smooth and unique (a little effort under every objective)
REGULARIZATION = 1e-4
#: weight of the joints' squared jerk (normalised): keeps the piecewise-linear accelerations of the
#: collocation from kinking at every knot, which would excite modes faster than the grid resolves
SMOOTHING = 1e-2
#: the limits are checked on the returned trajectory at this many instants per collocation interval
DENSE_POINTS = 20
#: a limit holds densely when the peak is at most (1 + LIMIT_TOLERANCE) times it
LIMIT_TOLERANCE = 1e-3
#: re-solves with backed-off bounds when the dense check finds a limit exceeded between knots
MAX_RESOLVES = 4


def _joint_vector(value, n, name, positive=False):
    try:
        arr = np.atleast_1d(np.asarray(value, dtype=float))
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected {n} finite numbers (one per joint)") from None
    if arr.size == 1 and n > 1:
        arr = np.full(n, float(arr[0]))
    if arr.shape != (n,) or not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: expected {n} finite numbers (one per joint), got {np.ravel(arr).tolist()!r:.80}")
    if positive and np.any(arr <= 0):
        raise ValueError(f"{name}: every limit must be > 0 (got {arr.tolist()})")
    return arr


def _weights(objective):
    if isinstance(objective, str):
        objective = {objective: 1.0}
    if not isinstance(objective, dict) or not objective:
        raise ValueError(f"objective: give one of {', '.join(OBJECTIVES)} or a mapping {{name: weight}}")
    for k, v in objective.items():
        if k not in OBJECTIVES:
            raise ValueError(f"objective: unknown {k!r}; use one of {', '.join(OBJECTIVES)}")
        if not (isinstance(v, (int, float)) and np.isfinite(v) and v >= 0):
            raise ValueError(f"objective.{k}: a weight must be a finite number >= 0 (got {v!r})")
    return {k: float(v) for k, v in objective.items()}


def check_controllable(robot, q_goal, tol=1e-12):
    """Refuse a robot whose flexible motion the joints cannot bring to rest: the linearized arm at
    ``q_goal`` (joints as inputs, :func:`flexman.control.closed_loop_linearization`) must be
    controllable (Hautus test on every eigenvalue: the smallest singular value of [A - lam I, B]
    above ``tol`` times its largest; a stiff, weakly coupled mode sits near 1e-8, an uncoupled one
    at roundoff, 1e-17)."""
    if robot.nf == 0:
        return
    from ..control import closed_loop_linearization

    q = np.zeros(robot.nq)
    q[robot.joint_index] = q_goal
    A, B = closed_loop_linearization(robot, q)
    n = A.shape[0]
    for lam in np.linalg.eigvals(A):
        U, sv, _ = np.linalg.svd(np.hstack([A - lam * np.eye(n), B]))
        if sv[-1] < tol * sv[0]:  # rank deficient: w = U[:, -1] with w^H A = lam w^H and w^H B = 0
            w = U[:, -1]
            flex = np.abs(w[robot.n_joints:robot.nq]) + np.abs(w[robot.nq + robot.n_joints:n])
            name = robot.coordinate_names[robot.n_joints + int(np.argmax(flex))]
            raise PlanningError(
                f"robot: the flexible coordinate {name} cannot be brought to rest with the joint actuators "
                f"(its mode at {abs(lam) / (2 * np.pi):.3g} Hz is uncontrollable at the goal); remove that mode "
                "(beam.modes) or add an actuator that moves it")


def plan(robot, q_start, q_goal, duration=None, limits=None, objective=None, knots=60, path=None,
         pre_post=None, guess=None, max_iter=500, ee_frame=None) -> Plan:
    """An optimal rest-to-rest move of ``robot``'s joints from ``q_start`` to ``q_goal`` over its full
    flexible dynamics, by Hermite–Simpson collocation and IPOPT.

    ``duration``: seconds, or None for the minimum time within ``limits`` (objective "time" is
    then added; it is the default objective without a duration, "effort" with one). ``limits``: {"torque": per-joint N m, "rate": per-joint rad/s (or m/s)}; joint
    ranges come from the model's ``limits``. ``objective``: "effort" (integral of squared torque,
    normalised by the limits), "time", "deflection" (integral of the squared end-effector
    deflection: the tip against the rigid arm's tip at the same joint angles), "tip_path" (the
    end-effector follows ``path(t) -> xyz`` over [0, duration]; by default the rigid arm's tip along
    a quintic joint profile; the joints may move ``pre_post`` seconds before and after it: pre- and
    post-actuation), or a mapping {name: weight}. ``guess``: a joint trajectory to start from
    (default: the quintic profile). ``knots``: collocation intervals. ``ee_frame``: the end effector
    of "deflection", "tip_path" and ``plan.tip`` (a link's or a named frame's name, e.g. a URDF's
    ``tool0``); None: the robot's own (``robot.end_effector``, else the last link).

    Every plan starts and ends at rest: all rates and accelerations zero (so the flexible coordinates
    at their static deflection, zero without gravity). Failures are one-line :class:`PlanningError`.
    """
    if ee_frame is not None:
        if not isinstance(ee_frame, str):
            raise ValueError(f"ee_frame: give the name of a link or frame (got {type(ee_frame).__name__})")
        try:
            inputs.link_frame(robot, ee_frame)
        except ValueError as exc:
            raise ValueError(f"ee_frame: {str(exc).removeprefix('link: ')}") from None
        robot = robot.with_end_effector(ee_frame)
    n = robot.n_joints
    q_start = _joint_vector(q_start, n, "q_start")
    q_goal = _joint_vector(q_goal, n, "q_goal")
    weights = _weights(objective if objective is not None else ("effort" if duration is not None else "time"))
    limits = dict(limits or {})
    unknown = set(limits) - {"torque", "rate"}
    if unknown:
        raise ValueError(f"limits: unknown {sorted(unknown)}; use 'torque' and 'rate' (one value per joint)")
    torque = None if limits.get("torque") is None else _joint_vector(limits["torque"], n, "limits.torque", True)
    rate = None if limits.get("rate") is None else _joint_vector(limits["rate"], n, "limits.rate", True)
    if not isinstance(knots, (int, np.integer)) or not 4 <= knots <= 1000:
        raise ValueError(f"knots: expected a whole number of intervals in [4, 1000] (got {knots!r})")
    ranges = [tuple(lk.limits) if lk.limits is not None else None for lk in robot.joint_links] + [None] * robot.nf
    for name, qv in (("q_start", q_start), ("q_goal", q_goal)):
        for i, rng in enumerate(ranges[:n]):
            if rng is not None and not rng[0] <= qv[i] <= rng[1]:
                raise PlanningError(f"{name}: joint {i + 1} = {qv[i]:g} is outside its range [{rng[0]:g}, {rng[1]:g}] "
                                    f"(links[{i}].limits); choose a reachable target")
    if duration is None:
        if torque is None and rate is None:
            raise ValueError("duration: give a duration in seconds, or torque or rate limits for a minimum-time plan")
        weights.setdefault("time", 1.0)
    else:
        duration = inputs.positive(duration, "duration")  # a number: not True, not a list
        weights.pop("time", None)
    if "tip_path" in weights and duration is None:
        raise ValueError("objective: tip_path needs a duration (the path's timing)")
    check_controllable(robot, q_goal)

    from ..symbolic import derive

    which = ("inverse_dynamics", "tip_position") if ({"deflection", "tip_path"} & set(weights)) else ("inverse_dynamics",)
    functions = derive(robot).casadi(which)

    # the warm start and the time window of the move inside the horizon
    pre = 0.0
    if "tip_path" in weights:
        pre = 0.25 * duration if pre_post is None else inputs.positive(pre_post, "pre_post", allow_zero=True)
        if not (np.isfinite(pre) and pre >= 0):
            raise ValueError(f"pre_post: seconds >= 0 (got {pre_post!r})")
    horizon = None if duration is None else duration + 2 * pre
    guess_T = horizon if horizon is not None else _time_estimate(q_start, q_goal, torque, rate, robot)
    profile = rest_to_rest(q_start, q_goal, guess_T if not pre else duration, "quintic")
    if guess is None:
        guess_traj = profile if not pre else _delayed(profile, pre)
    else:
        guess_traj = guess
    path_fn = None
    if "tip_path" in weights:
        path_fn = _tip_path(robot, profile, path, pre, duration)
    scale = torque if torque is not None else _torque_scale(robot, profile)
    weights.setdefault("effort", 0.0)
    weights["effort"] += REGULARIZATION
    # a minimum-time plan rides its limits: smoothing there would trade seconds for smoothness
    weights.setdefault("smooth", SMOOTHING * (1e-2 if "time" in weights else 1.0))
    # jerk of the quintic profile at its ends: 60 |dq| / T^3 (a scale, floored for joints that stay)
    dq = np.abs(q_goal - q_start)
    jerk = 60.0 * np.maximum(dq, 1e-3 * max(float(dq.max()), 1e-3)) / (duration or guess_T) ** 3
    problem = Problem(robot, functions, q_start, q_goal, horizon, int(knots), weights, torque, rate,
                      ranges, path_fn, (pre, pre + (duration or 0.0)), guess_traj, guess_T, scale, jerk, max_iter)
    return _solve_within_limits(problem, robot, functions, torque, rate,
                                lambda sol: Plan(robot, sol, q_start, q_goal, weights, path_fn,
                                                 (pre, pre + (duration or sol.T))))


def _solve_within_limits(problem, robot, functions, torque, rate, make_plan):
    """Solve ``problem``; then check the torque and rate limits densely on the returned trajectory
    (:func:`~.collocation.dense_peaks`, DENSE_POINTS per interval: the collocation enforces them only
    at knots and midpoints; the torques also on ``fm.simulate(prescribed=)`` of the planned joints, whose
    flexible motion is integrated rather than interpolated) and, while a peak exceeds its limit by more than LIMIT_TOLERANCE, re-solve
    (warm started) with that joint's bound scaled by limit / peak, at most MAX_RESOLVES times. The
    plan's ``report["dense"]`` holds the densely checked peaks, their ratios to the limits, the
    bounds the last solve used and the number of re-solves."""
    bounds = {"torque": None if torque is None else torque.copy(), "rate": None if rate is None else rate.copy()}
    limits = {"torque": torque, "rate": rate}
    resolves, iterations, seconds = 0, 0, 0.0
    while True:
        sol = solve(problem)
        iterations, seconds = iterations + sol.iterations, seconds + sol.seconds
        result = make_plan(sol)
        if resolves and not (sol.success or sol.status == "Solved_To_Acceptable_Level"):
            raise PlanningError(
                f"plan: the limits hold at the knots but not between them, and the re-solve with bounds backed "
                f"off to {_ratios(bounds, limits)} of them failed ({sol.status.replace('_', ' ').lower()}); raise "
                "the limits slightly, add knots or allow a longer duration")
        result.check()
        peaks = dense_peaks(result, functions, DENSE_POINTS)
        simulated = _simulated_peak_torque(robot, result) if torque is not None else None
        if simulated is not None:
            peaks["torque"] = np.maximum(peaks["torque"], simulated)
        ratios = {k: peaks[k] / limits[k] for k in ("torque", "rate") if limits[k] is not None}
        worst = max((float(v.max()) for v in ratios.values()), default=0.0)
        result.report["dense"] = {
            "points_per_interval": DENSE_POINTS, "torque_peak": peaks["torque"], "rate_peak": peaks["rate"],
            "simulated_torque_peak": simulated,
            "torque_ratio": ratios.get("torque"), "rate_ratio": ratios.get("rate"), "largest_ratio": worst,
            "within_limits": worst <= 1.0 + LIMIT_TOLERANCE, "resolves": resolves,
            "iterations_all_solves": iterations, "seconds_all_solves": seconds,
            "torque_bound": bounds["torque"], "rate_bound": bounds["rate"]}
        if worst <= 1.0 + LIMIT_TOLERANCE:
            return result
        if resolves >= MAX_RESOLVES:
            warnings.warn(f"plan: after {resolves} re-solves a limit is still exceeded between the knots by "
                          f"{100 * (worst - 1):.2g} % (report['dense']); add knots", RuntimeWarning, stacklevel=3)
            return result
        for k, ratio in ratios.items():  # back off by the measured overshoot (a little more, to land inside)
            over = ratio > 1.0 + 0.5 * LIMIT_TOLERANCE
            bounds[k] = np.where(over, bounds[k] / ratio * (1.0 - 0.5 * LIMIT_TOLERANCE), bounds[k])
        problem.torque_limit, problem.rate_limit, problem.warm = bounds["torque"], bounds["rate"], sol
        resolves += 1


def _simulated_peak_torque(robot, result):
    """The largest joint torques of ``fm.simulate(prescribed=)`` of the plan's joint motion (the flexible
    coordinates integrated, not interpolated), from its first knot state, on the dense check's step."""
    from ..simulate import simulate

    dt = result.h / DENSE_POINTS
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = simulate(robot, result.duration, dt=dt, prescribed=result.trajectory, q0=result.q[0], qd0=result.qd[0])
    if getattr(res, "diverged", False):
        return None
    return np.abs(np.asarray(res.tau)).max(axis=0)


def _ratios(bounds, limits) -> str:
    parts = [f"{np.min(bounds[k] / limits[k]):.4g}" for k in ("torque", "rate") if limits[k] is not None]
    return " and ".join(parts)


def _delayed(traj, pre):
    """``traj`` started ``pre`` seconds later (the warm start of a plan with pre-actuation)."""
    from ..trajectory import Trajectory

    return Trajectory(0.0, traj.t_end + 2 * pre, lambda t: traj(t - pre), traj.n)


def _time_estimate(q_start, q_goal, torque, rate, robot):
    """A first duration for a minimum-time plan: the rate limit's quintic time, or a rigid
    bang-bang estimate from the torque limits and the arm's joint inertia at the start."""
    dq = np.abs(q_goal - q_start)
    T = 0.5
    if rate is not None:
        T = max(T, float(np.max(1.875 * dq / rate)))
    if torque is not None:
        q = np.zeros(robot.nq)
        q[robot.joint_index] = q_start
        inertia = np.diag(robot.mass_matrix(q))[robot.joint_index]
        T = max(T, float(np.max(2.0 * np.sqrt(dq * inertia / torque))) * 1.5)
    return T


def _torque_scale(robot, profile):
    """Torque magnitudes of the warm-start profile on the rigid arm (normalises the effort)."""
    t = np.linspace(profile.t_start, profile.t_end, 21)
    q, qd, qdd = profile(t)
    z = np.zeros((len(t), robot.nf))
    tau = robot.inverse_dynamics(np.hstack([q, z]), np.hstack([qd, z]), np.hstack([qdd, z]))[:, robot.joint_index]
    return np.maximum(np.max(np.abs(tau), axis=0), 1e-3 * max(1.0, float(np.max(np.abs(tau)))))


def _tip_path(robot, profile, path, pre, duration):
    """The end-effector's target over the horizon: ``path`` (or the rigid arm's tip along
    ``profile``) during the move, held at its ends before and after."""
    if path is None:
        def rigid(t):
            q = np.zeros(robot.nq)
            q[robot.joint_index] = profile(t)[0]
            return robot.frame(q, inputs.end_effector(robot))[:3, 3]
        path = rigid
    start, end = np.asarray(path(0.0), dtype=float), np.asarray(path(duration), dtype=float)
    if start.shape != (3,) or not np.all(np.isfinite(start)) or not np.all(np.isfinite(end)):
        raise ValueError("path: path(t) must return 3 finite coordinates (x, y, z in m)")

    def target(t):
        return np.asarray(path(min(max(t - pre, 0.0), duration)), dtype=float)
    return target
