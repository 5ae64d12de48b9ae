"""Optimal rest-to-rest motion of flexible arms: ``fm.plan`` (CasADi + IPOPT).

:func:`plan` checks its inputs, builds a :class:`~.collocation.Problem` (the equations from
``fm.derive(robot).casadi()``), solves it by direct collocation (:mod:`.collocation`) and
returns a :class:`~.result.Plan`. What each objective means and how to warm start:
docs/motion.md.
"""
from __future__ import annotations

import time
import warnings

import numpy as np

from ..model import inputs
from ..model import limits as lim
from ..model.errors import FlexmanRuntimeWarning
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
#: seconds IPOPT may take over all the solves of one plan (IPOPT's max_wall_time); a hopeless
#: problem (a move far too fast for the arm) otherwise iterates for minutes
TIME_LIMIT = 120.0
#: the largest values taken (as the rest of flexman: README, Limits): joint values, rates, torques
MAGNITUDES = {"position": lim.MAX_JOINT_POSITION, "rate": lim.MAX_JOINT_RATE, "torque": lim.MAX_FORCE}
#: the residual check: a plan whose simulated residual vibration exceeds the plain (quintic)
#: profile's, or the ZVD-shaped profile's of the same duration while above the floor (a shaper can
#: cancel a linear mode all but exactly: RESIDUAL_FLOOR of the move's tip travel, or PLAIN_SHARE of
#: the plain profile's residual, count as matching it), is solved again on twice the knots, at most
#: RESIDUAL_REFINES times and MAX_KNOTS knots
RESIDUAL_REFINES, MAX_KNOTS, RESIDUAL_FLOOR, PLAIN_SHARE = 3, 1000, 1e-6, 0.05


def _joint_vector(value, n, name, positive=False, kind="position"):
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
    if np.abs(arr).max() > MAGNITUDES[kind]:
        k = int(np.argmax(np.abs(arr)))
        raise ValueError(f"{name}: joint {k + 1} = {arr[k]:g} is beyond the supported magnitude {MAGNITUDES[kind]:g} "
                         f"of a joint {kind} (README, Limits); give a physical value")
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
         pre_post=None, guess=None, max_iter=500, time_limit=TIME_LIMIT, ee_frame=None) -> Plan:
    """An optimal rest-to-rest move of ``robot``'s joints from ``q_start`` to ``q_goal`` over its full
    flexible dynamics, by Hermite–Simpson collocation and IPOPT.

    ``duration``: seconds, or None for the minimum time within ``limits`` (objective "time" is
    then added; it is the default objective without a duration, "effort" with one). ``limits``: {"torque": per-joint N m (default: the drives' ``torque_limit``, seen at the joint,
    where the model gives them), "rate": per-joint rad/s (or m/s)}; joint
    ranges come from the model's ``limits``. ``objective``: "effort" (integral of squared torque,
    normalised by the limits), "time", "deflection" (integral of the squared end-effector
    deflection: the tip against the rigid arm's tip at the same joint angles), "tip_path" (the
    end-effector follows ``path(t) -> xyz`` over [0, duration]; by default the rigid arm's tip along
    a quintic joint profile; the joints may move ``pre_post`` seconds before and after it: pre- and
    post-actuation), or a mapping {name: weight}. ``guess``: a joint trajectory to start from
    (default: the quintic profile). ``knots``: collocation intervals. ``max_iter``: IPOPT's
    iterations per solve; ``time_limit``: seconds for all of IPOPT's solves together (TIME_LIMIT).
    ``ee_frame``: the end effector of "deflection", "tip_path" and ``plan.tip`` (a link's or a named
    frame's name, e.g. a URDF's ``tool0``); None: the robot's own (``robot.end_effector``, else the
    last link).

    Every plan starts and ends at rest: all rates and accelerations zero (so the flexible coordinates
    at their static deflection, zero without gravity). Failures are one-line :class:`PlanningError`.
    """
    if ee_frame is not None:
        robot = robot.with_end_effector(inputs.frame_name(robot, ee_frame, "ee_frame"))
    n = robot.n_joints
    q_start = _joint_vector(q_start, n, "q_start")
    q_goal = _joint_vector(q_goal, n, "q_goal")
    weights = _weights(objective if objective is not None else ("effort" if duration is not None else "time"))
    limits = dict(limits or {})
    unknown = set(limits) - {"torque", "rate"}
    if unknown:
        raise ValueError(f"limits: unknown {sorted(unknown)}; use 'torque' and 'rate' (one value per joint)")
    torque = None if limits.get("torque") is None else _joint_vector(limits["torque"], n, "limits.torque", True, "torque")
    if torque is None and robot.torque_limits is not None:  # the drives' limits (inf: a joint without one)
        torque = robot.torque_limits
    rate = None if limits.get("rate") is None else _joint_vector(limits["rate"], n, "limits.rate", True, "rate")
    if not isinstance(knots, (int, np.integer)) or isinstance(knots, bool) or not 4 <= knots <= 1000:
        raise ValueError(f"knots: expected a whole number of intervals in [4, 1000] (got {knots!r})")
    if not isinstance(max_iter, (int, np.integer)) or isinstance(max_iter, bool) or not 1 <= max_iter <= 100_000:
        raise ValueError(f"max_iter: expected a whole number of IPOPT iterations in [1, 100000] (got {max_iter!r})")
    time_limit = inputs.positive(time_limit, "time_limit")
    deadline = time.monotonic() + time_limit
    ranges = [tuple(lk.limits) if lk.limits is not None else None for lk in robot.joint_links] + [None] * robot.nf
    for name, qv in (("q_start", q_start), ("q_goal", q_goal)):
        for i, rng in enumerate(ranges[:n]):
            if rng is not None and not rng[0] <= qv[i] <= rng[1]:
                raise PlanningError(f"{name}: joint {i + 1} = {qv[i]:g} is outside its range [{rng[0]:g}, {rng[1]:g}] "
                                    f"(links[{i}].limits); choose a reachable target")
    if duration is None:
        if torque is None and rate is None:
            raise ValueError("duration: give a duration in seconds, or torque or rate limits for a minimum-time plan")
        if np.array_equal(q_start, q_goal):
            raise PlanningError("q_goal: equals q_start, a zero move, which has no least time; give a goal away "
                                "from the start (or a duration, to plan holding still)")
        weights.setdefault("time", 1.0)
    else:
        duration = inputs.positive(duration, "duration")  # a number: not True, not a list
        weights.pop("time", None)
    if "tip_path" in weights and duration is None:
        raise ValueError("objective: tip_path needs a duration (the path's timing)")
    check_grid(robot, int(knots), duration is None)
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
    scale = torque if torque is not None and np.isfinite(torque).all() else _torque_scale(robot, profile)
    if torque is not None:  # a joint without a limit (a drive's inf) keeps the profile's scale
        scale = np.where(np.isfinite(torque), torque, scale)
    weights.setdefault("effort", 0.0)
    weights["effort"] += REGULARIZATION
    # a minimum-time plan rides its limits: smoothing there would trade seconds for smoothness
    weights.setdefault("smooth", SMOOTHING * (1e-2 if "time" in weights else 1.0))
    # jerk of the quintic profile at its ends: 60 |dq| / T^3 (a scale, floored for joints that stay)
    dq = np.abs(q_goal - q_start)
    jerk = 60.0 * np.maximum(dq, 1e-3 * max(float(dq.max()), 1e-3)) / (duration or guess_T) ** 3

    def solve_on(intervals):  # one problem on ``intervals`` knots (a re-solve on a finer grid shares the rest)
        problem = Problem(robot, functions, q_start, q_goal, horizon, intervals, weights, torque, rate, ranges, path_fn,
                          (pre, pre + (duration or 0.0)), guess_traj, guess_T, scale, jerk, int(max_iter),
                          deadline=deadline, time_limit=time_limit)
        return _solve_within_limits(problem, robot, functions, torque, rate,
                                    lambda sol: Plan(robot, sol, q_start, q_goal, weights, path_fn,
                                                     (pre, pre + (duration or sol.T))))

    result = solve_on(int(knots))
    if not robot.nf or path_fn is not None:  # a tip path moves before and after its window: no "plain move"
        return result
    return _refined_until_quiet(robot, result, solve_on, int(knots), q_start, q_goal)


def _refined_until_quiet(robot, result, solve_on, knots, q_start, q_goal):
    """``result``, or the same plan solved again on twice the knots (the problem, its functions and
    deadline shared) until its simulated residual vibration passes :func:`residual_check`, at most
    RESIDUAL_REFINES times; one warning when the last one still does not."""
    check = result.report["residual"] = residual_check(robot, result, q_start, q_goal)
    refines = 0
    while not check["better"] and refines < RESIDUAL_REFINES and 2 * knots <= MAX_KNOTS:
        refines, knots = refines + 1, 2 * knots
        result = solve_on(knots)
        check = result.report["residual"] = residual_check(robot, result, q_start, q_goal)
        check["refined_from_knots"] = knots // 2
    if not check["better"]:
        shaped = "" if check["shaped"] is None else f" or the ZVD-shaped one's ({check['shaped'] * 1e6:.3g} um)"
        warnings.warn(f"plan: its simulated residual vibration ({check['plan'] * 1e6:.3g} um at the tip) exceeds the "
                      f"plain quintic profile's ({check['plain'] * 1e6:.3g} um){shaped} even on "
                      f"{result.report['knots']} knots (report['residual']); use more knots, a longer duration, or "
                      "the shaped profile", FlexmanRuntimeWarning, stacklevel=3)
    return result


def residual_vibration(robot, traj, t_end, q_goal, settle=None, dt=None):
    """The largest distance (m) of the tip from its rest position at the goal (the static sag under
    gravity included) after ``t_end``, with the joints following ``traj`` exactly (prescribed
    motion, the flexible coordinates integrated) and held at the goal for ``settle`` seconds after it
    (default: three periods of the lowest locked-joint mode at the goal)."""
    from ..analysis.frequencies import natural_frequencies
    from ..analysis.quasi_static import quasi_static_deflection
    from ..simulate import simulate

    rest = np.zeros(robot.nq)
    rest[robot.joint_index] = q_goal
    rest[robot.flex_index] = quasi_static_deflection(robot, np.asarray(q_goal, dtype=float))
    w = natural_frequencies(robot, rest, joints="locked")
    w = w[w > 1e-6]
    period = 2 * np.pi / float(w[0]) if w.size else t_end
    settle = 3.0 * period if settle is None else settle
    dt = min(period / 40.0, t_end / 200.0) if dt is None else dt
    steps = int(np.ceil((t_end + settle) / dt))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:  # several such runs per plan: the compiled model pays for itself (built once, cached)
            res = simulate(robot, steps * dt, dt=dt, prescribed=traj, progress=False, backend="compiled")
        except (RuntimeError, ValueError):  # no compiler, or a model C cannot take
            res = simulate(robot, steps * dt, dt=dt, prescribed=traj, progress=False, backend="numeric")
    ee = inputs.end_effector(robot)  # the plan's end effector (ee_frame), as its objectives
    tip = robot.frame(res.q[res.t >= t_end - 1e-12], ee)[:, :3, 3]
    return float(np.linalg.norm(tip - robot.frame(rest, ee)[:3, 3], axis=1).max())


def residual_check(robot, result, q_start, q_goal) -> dict:
    """{"plan", "plain", "shaped": the residual vibration (m) of the plan, of the quintic profile of
    its duration and of a ZVD-shaped quintic of the same total duration (None when the shaper alone
    takes most of it; :func:`residual_vibration`), "floor": what counts as matching the shaper,
    "better": the plan's is no worse than the plain profile's nor, above the floor, than the shaped
    one's}: the plan checked by simulation, not by its own collocation grid."""
    from ..control.shaping import shaper

    T = result.duration
    plain = rest_to_rest(q_start, q_goal, T, "quintic")
    zvd = shaper(robot, plain, kind="ZVD")
    tip_travel = float(np.linalg.norm(result.tip(T) - result.tip(0.0))) if T > 0 else 0.0
    out = {"plan": residual_vibration(robot, result.trajectory, T, q_goal),
           "plain": residual_vibration(robot, plain, T, q_goal), "shaped": None}
    if zvd.duration < 0.8 * T:  # the shaped move of the same duration: a shorter base, shaped
        base = rest_to_rest(q_start, q_goal, T - zvd.duration, "quintic")
        out["shaped"] = residual_vibration(robot, zvd(base), T, q_goal)
    floor = max(RESIDUAL_FLOOR * max(tip_travel, 1e-3), PLAIN_SHARE * out["plain"])
    out["floor"] = floor
    out["better"] = bool(out["plan"] <= out["plain"] and out["plan"] <= max(out["shaped"] or 0.0, floor))
    return out


def least_knots(robot, min_time: bool) -> int:
    """The fewest collocation intervals N with no more equality constraints than free unknowns.
    Per interval the transcription adds 2 nq defects and 2 nf flexible equations (at a knot and a
    midpoint) against 3 nq knot unknowns and nf midpoint ones; the ends fix 2 nj joint values and
    4 nq rates and accelerations, and nf flexible equations sit on the last knot. So
    equalities - free unknowns = 2 nf + 3 nj - nj N (- 1 for a free duration)."""
    return max(4, -(-(2 * robot.nf + 3 * robot.n_joints - int(min_time)) // robot.n_joints))


def check_grid(robot, knots: int, min_time: bool) -> None:
    """Refuse a grid with more equality constraints than unknowns (no motion can satisfy them:
    IPOPT would report the problem infeasible and the limits would be blamed)."""
    need = least_knots(robot, min_time)
    if knots < need:
        excess = 2 * robot.nf + 3 * robot.n_joints - int(min_time) - robot.n_joints * knots
        raise PlanningError(f"knots: {knots} intervals are too coarse for {robot.nq} coordinates ({robot.nf} flexible): "
                            f"the dynamics then give {excess} more equality constraints than unknowns; use at "
                            f"least {need} knots (the default is 60)")


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
                          f"{100 * (worst - 1):.2g} % (report['dense']); add knots", FlexmanRuntimeWarning, stacklevel=3)
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
