"""fm.plan: optimal rest-to-rest motion, checked by simulation (``fm.simulate``), which is
independent of the planner's collocation grid, and against the numeric dynamics."""
import numpy as np
import pytest

import flexman as fm
from flexman.control import PlanTracking
from flexman.planning import PlanningError

pytest.importorskip("casadi")


def hub_arm(z_modes=0, limits=None):
    """One flexible link on a hub turning in a horizontal plane (about 4.5 Hz locked-joint mode)."""
    beam = fm.Beam(length=1.0, mass_per_length=1.0, EI=[50.0, 50.0], modes={"y": 1, "z": z_modes, "torsion": 0})
    link = fm.Link(joint="revolute", a=1.0, body=fm.RigidBody(mass=0.0), limits=limits,
                   hub=fm.RigidBody(mass=1.0, inertia=[0.05, 0.05, 0.05]), beam=beam)
    return fm.Robot(links=[link], gravity=[0, 0, 0], name="hub_arm")


def tip_at(robot, q_r):
    q = np.zeros(robot.nq)
    q[robot.joint_index] = q_r
    return robot.frame(q)[:3, 3]


def residual(robot, traj, t_end, goal, t_final, dt=2e-3):
    """Largest end-effector distance from the goal after ``t_end`` with the joints following
    ``traj`` exactly (prescribed motion)."""
    res = fm.simulate(robot, t_final, dt=dt, prescribed=traj, backend="compiled")
    tip = robot.frame(res.q)[:, :3, 3]
    return np.linalg.norm(tip[res.t >= t_end] - tip_at(robot, goal), axis=1).max(), res


@pytest.fixture(scope="module")
def hub_plan():
    robot = hub_arm()
    return robot, fm.plan(robot, [0.0], [1.0], duration=1.0, knots=30)


def test_plan_leaves_no_vibration(hub_plan):
    """A 1 s move of the hub arm: the quintic profile leaves the tip ringing by about 1 mm;
    the plan, followed exactly in simulation, leaves a small fraction of it."""
    robot, plan = hub_plan
    assert plan.report["success"] and plan.report["constraint_violation"] < 1e-6
    quintic = fm.trajectory.rest_to_rest([0.0], [1.0], 1.0, "quintic")
    ringing, _ = residual(robot, quintic, 1.0, [1.0], 1.5)
    planned, res = residual(robot, plan.trajectory, 1.0, [1.0], 1.5)
    assert ringing > 5e-4
    assert planned < 0.15 * ringing
    assert res.stats["loop"] == "compiled"  # the plan's joints are a spline C evaluates
    # the simulated torques (prescribed motion) are the planned ones
    assert np.allclose(res.tau[res.t <= 1.0], plan.torque(res.t[res.t <= 1.0]), atol=1e-2 * np.abs(res.tau).max())


def test_plan_satisfies_the_numeric_equations(hub_plan):
    """At the knots the planned state, accelerations and torques satisfy M qdd + b = S tau of the
    numeric dynamics (which the CasADi functions were generated from, not evaluated by)."""
    robot, plan = hub_plan
    tau = robot.inverse_dynamics(plan.q, plan.qd, plan.qdd)
    assert np.abs(tau[:, robot.flex_index]).max() < 1e-8
    assert np.allclose(tau[:, robot.joint_index], plan.torques, atol=1e-9)
    # rest at both ends, joints at their targets, joint motion continuous between knots
    assert np.allclose(plan.qd[[0, -1]], 0) and np.allclose(plan.qdd[[0, -1]], 0)
    q, qd, qdd = plan.trajectory(plan.t)
    assert np.allclose(q, plan.q[:, :1], atol=1e-9) and np.allclose(qd, plan.qd[:, :1], atol=1e-9)


def test_minimum_time_rides_the_torque_limit():
    robot = hub_arm()
    limits = {"torque": [2.0]}
    plan = fm.plan(robot, [0.0], [1.0], limits=limits, knots=30)
    assert 0.5 < plan.duration < 5.0
    _, res = residual(robot, plan.trajectory, plan.duration, [1.0], plan.duration + 0.5)
    peak = np.abs(res.tau).max()
    assert 1.9 < peak < 2.0 * 1.002  # at the limit, and within it between the knots too (dense check, re-solves)
    with pytest.raises(PlanningError, match=r"^plan: the limits cannot be met.* in \d") as info:
        fm.plan(robot, [0.0], [1.0], duration=0.8 * plan.duration, limits=limits, knots=30)
    assert "\n" not in str(info.value)


def test_minimum_time_limits_hold_between_the_knots():
    """The collocation enforces the limits at knots and midpoints only; fm.plan checks the returned
    trajectory densely (and the torques on a simulation of it), backs the bounds off by the overshoot
    and re-solves. Checked here independently: 50 points per interval on the plan's interpolant, and
    fm.simulate(prescribed=) of the planned joints on a finer step than the planner's check."""
    robot = fm.examples.load("dynaman_2r")
    torque, rate = np.array([20.0, 10.0]), np.array([2.0, 3.0])
    plan = fm.plan(robot, [0.0, 0.0], [1.0, -0.5], limits={"torque": torque, "rate": rate}, knots=30)
    dense = plan.report["dense"]
    assert dense["points_per_interval"] == 20 and dense["within_limits"]
    t = np.linspace(0.0, plan.duration, 50 * 30 + 1)
    q, qd, qdd = plan.state(t)
    tau = robot.inverse_dynamics(q, qd, qdd)
    peak_tau, peak_rate = np.abs(tau).max(axis=0), np.abs(qd).max(axis=0)
    assert np.all(peak_tau <= torque * 1.001) and np.all(peak_rate <= rate * 1.001)
    assert np.all(np.abs(plan.torque(t)).max(axis=0) <= torque * 1.001)
    # the limits are active: a minimum-time move rides them
    assert peak_tau[0] > 0.99 * torque[0] and np.all(peak_rate > 0.99 * rate)
    # the report gives the densely checked maxima (to the precision of its coarser grid)
    assert np.allclose(dense["torque_peak"], peak_tau, rtol=2e-3)
    assert np.allclose(dense["rate_peak"], peak_rate, rtol=2e-3)
    assert dense["largest_ratio"] == pytest.approx(max((peak_tau / torque).max(), (peak_rate / rate).max()), rel=2e-3)
    res = fm.simulate(robot, plan.duration, dt=plan.duration / 3000, prescribed=plan.trajectory)
    assert np.all(np.abs(res.tau).max(axis=0) <= torque * 1.001)
    assert np.all(np.abs(res.qd).max(axis=0) <= rate * 1.001)


def test_limits_at_the_knots_alone_are_exceeded_between_them(monkeypatch):
    """Why the dense check exists: the same minimum-time plan solved once (the bounds at the knots
    and midpoints equal to the limits, as the collocation states them) exceeds a limit between knots."""
    import flexman.planning as planning

    robot = fm.examples.load("dynaman_2r")
    torque = np.array([20.0, 10.0])
    ratios, original = [], planning.dense_peaks

    def record(plan, functions, points):
        peaks = original(plan, functions, points)
        ratios.append(peaks["torque"] / torque)
        return peaks
    monkeypatch.setattr(planning, "dense_peaks", record)
    plan = fm.plan(robot, [0.0, 0.0], [1.0, -0.5], limits={"torque": torque}, knots=30)
    assert ratios[0].max() > 1.001                    # the single solve overshoots between the knots
    assert plan.report["dense"]["resolves"] >= 1      # so fm.plan re-solved
    assert plan.report["dense"]["largest_ratio"] <= 1.001
    assert np.all(plan.report["dense"]["torque_bound"] < torque)


@pytest.mark.parametrize("args, kwargs, match", [
    (([np.nan], [1.0]), {"duration": 1.0}, r"^q_start: expected 1 finite numbers"),
    (([0.0], [np.inf]), {"duration": 1.0}, r"^q_goal: expected 1 finite numbers"),
    (([0.0], [1.0, 2.0]), {"duration": 1.0}, r"^q_goal: expected 1 finite numbers"),
    (([0.0], [1.0]), {"duration": -1.0}, r"^duration: expected a finite number > 0"),
    (([0.0], [1.0]), {"duration": [2, 3]}, r"^duration: expected a number > 0, got list"),
    (([0.0], [1.0]), {"duration": True}, r"^duration: expected a number > 0, got bool"),
    (([0.0], [1.0]), {}, r"^duration: give a duration"),
    (([0.0], [1.0]), {"duration": 1.0, "objective": "fast"}, r"^objective: unknown 'fast'"),
    (([0.0], [1.0]), {"limits": {"torque": [0.0]}}, r"^limits.torque: every limit must be > 0"),
    (([0.0], [1.0]), {"limits": {"force": [1.0]}}, r"^limits: unknown \['force'\]"),
    # issue 34: magnitudes refused before solving (1e300 was "invalid number detected"), a zero
    # minimum-time move named as such, the solver's budgets checked
    (([0.0], [1e300]), {"duration": 1.0}, r"^q_goal: joint 1 = 1e\+300 is beyond the supported magnitude 1e\+06"),
    (([0.0], [1.0]), {"limits": {"rate": [1e300]}}, r"^limits.rate: joint 1 = 1e\+300 is beyond the supported"),
    (([0.0], [1.0]), {"limits": {"torque": [1e300]}}, r"^limits.torque: joint 1 = 1e\+300 is beyond the supported"),
    (([0.5], [0.5]), {"limits": {"torque": [5.0]}}, r"^q_goal: equals q_start, a zero move, which has no least time"),
    (([0.0], [1.0]), {"duration": 1.0, "max_iter": True}, r"^max_iter: expected a whole number of IPOPT iterations"),
    (([0.0], [1.0]), {"duration": 1.0, "time_limit": 0.0}, r"^time_limit: expected a finite number > 0"),
    (([0.0], [1.0]), {"duration": 1.0, "knots": 4}, r"^knots: 4 intervals are too coarse for 2 coordinates"),
])
def test_bad_input_is_one_sentence(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        fm.plan(hub_arm(), *args, **kwargs)


def test_unreachable_goal_and_uncontrollable_modes():
    with pytest.raises(PlanningError, match=r"^q_goal: joint 1 = 2 is outside its range \[-1, 1\]"):
        fm.plan(hub_arm(limits=(-1.0, 1.0)), [0.0], [2.0], duration=1.0)
    # out-of-plane bending of an arm turning in its plane: no joint moves it
    with pytest.raises(PlanningError, match=r"^robot: the flexible coordinate ez1_1 cannot be brought to rest"):
        fm.plan(hub_arm(z_modes=1), [0.0], [1.0], duration=1.0)


def test_too_coarse_a_grid_names_the_knots_and_the_least_that_works():
    """Issue 34: flx_three_link on 4 intervals has 126 equality constraints for 121 unknowns (CasADi's
    count: the fixed end values are equalities too), which IPOPT called infeasible limits. The refusal
    gives that excess (5) and the least grid; that grid solves."""
    robot = fm.examples.load("flx_three_link")
    with pytest.raises(PlanningError, match=r"^knots: 4 intervals are too coarse for 7 coordinates \(4 flexible\): "
                                            r"the dynamics then give 5 more equality constraints than unknowns; "
                                            r"use at least 6 knots"):
        fm.plan(robot, [0.0] * 3, [0.5] * 3, duration=1.0, knots=4)
    assert fm.plan(robot, [0.0] * 3, [0.5] * 3, duration=1.0, knots=6).report["success"]


def test_a_hopeless_move_stops_at_the_time_limit():
    """Issue 34: a 10 ms move of flx_three_link iterated for 280 s; IPOPT now stops at the plan's
    time limit and says so (and how to raise it)."""
    with pytest.raises(PlanningError, match=r"^plan: IPOPT stopped at the time limit without a solution \(raise "
                                            r"time_limit \(--time-limit\)"):
        fm.plan(fm.examples.load("flx_three_link"), [0.0] * 3, [0.5] * 3, duration=0.01, time_limit=1.0)


# ----- the showcase (issue 28's numbers): the flx_three_link_lqr move in 2.5 s ------------------
SHOW_START, SHOW_GOAL, SHOW_T = [0.0, 0.0, 0.0], [0.5, 0.3, -0.4], 2.5


@pytest.fixture(scope="module")
def showcase():
    robot = fm.examples.load("flx_three_link_lqr")
    return robot, fm.plan(robot, SHOW_START, SHOW_GOAL, duration=SHOW_T)


@pytest.mark.slow
def test_showcase_plan_followed_exactly(showcase):
    robot, plan = showcase
    quintic = fm.trajectory.rest_to_rest(SHOW_START, SHOW_GOAL, SHOW_T, "quintic")
    ringing, _ = residual(robot, quintic, SHOW_T, SHOW_GOAL, SHOW_T + 1.5, dt=2e-3)
    planned, _ = residual(robot, plan.trajectory, SHOW_T, SHOW_GOAL, SHOW_T + 1.5, dt=2e-3)
    assert ringing > 0.1  # 138 mm
    assert planned < 0.5e-3


@pytest.mark.slow
def test_showcase_tracked_by_feedforward_and_lqr(showcase):
    robot, plan = showcase
    res = fm.simulate(robot, SHOW_T + 0.7, dt=2e-3, controller=PlanTracking(robot, plan), backend="compiled")
    tip = robot.frame(res.q)[:, :3, 3]
    after = res.t >= SHOW_T + 0.2
    assert np.linalg.norm(tip[after] - tip_at(robot, SHOW_GOAL), axis=1).max() < 1e-3


@pytest.mark.slow
def test_showcase_tip_follows_the_rigid_path():
    robot = fm.examples.load("flx_three_link_lqr")
    plan = fm.plan(robot, SHOW_START, SHOW_GOAL, duration=SHOW_T, objective="tip_path")
    start, end = plan.window
    assert end - start == pytest.approx(SHOW_T) and start > 0  # pre- and post-actuation
    res = fm.simulate(robot, plan.duration + 0.5, dt=2e-3, prescribed=plan.trajectory, backend="compiled")
    tip = robot.frame(res.q)[:, :3, 3]
    rigid = fm.trajectory.rest_to_rest(SHOW_START, SHOW_GOAL, SHOW_T, "quintic")
    path = np.array([tip_at(robot, rigid(min(max(t - start, 0.0), SHOW_T))[0]) for t in res.t])
    assert np.linalg.norm(tip - path, axis=1).max() < 20e-3
    after = res.t >= plan.duration
    assert np.linalg.norm(tip[after] - tip_at(robot, SHOW_GOAL), axis=1).max() < 1e-3


def _stiff_hub():
    """A short stiff hub arm (75 Hz locked-joint mode) on a 0.3 s move: 60 knots (5 ms) are too
    coarse for its 13 ms period, and the plan on them rings more than the plain quintic move."""
    beam = fm.Beam(length=0.5, mass_per_length=1.0, EI=[1000.0, 1000.0], modes={"y": 2, "z": 0, "torsion": 0})
    link = fm.Link(joint="revolute", a=0.5, body=fm.RigidBody(mass=0.0), hub=fm.RigidBody(mass=1.0, inertia=[0.05] * 3),
                   beam=beam)
    return fm.Robot(links=[link], gravity=[0, 0, 0], name="stiff_hub")


def test_plan_checks_its_residual_by_simulation_and_refines_the_knots():
    """The residual vibration of each candidate, simulated (not read off the collocation grid):
    the default 60 knots leave more than the plain profile, so the plan is solved again on finer
    grids until it leaves less than the plain and (above a micron per metre of travel) the shaped
    one; the report says so."""
    import warnings

    robot = _stiff_hub()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning: the refined plan passes its check
        plan = fm.plan(robot, [0.0], [1.0], duration=0.3)
    check = plan.report["residual"]
    assert check["refined_from_knots"] >= 60 and plan.report["knots"] > 60
    quintic = fm.trajectory.rest_to_rest([0.0], [1.0], 0.3, "quintic")
    plain, _ = residual(robot, quintic, 0.3, [1.0], 0.4, dt=2e-4)
    planned, _ = residual(robot, plan.trajectory, 0.3, [1.0], 0.4, dt=2e-4)
    assert planned < plain and check["plan"] <= max(check["shaped"], check["floor"])


def test_plan_that_cannot_beat_the_plain_move_warns_once(monkeypatch):
    import flexman.planning as planning

    monkeypatch.setattr(planning, "RESIDUAL_REFINES", 0)
    with pytest.warns(RuntimeWarning, match=r"^plan: its simulated residual vibration .* exceeds the plain quintic") as record:
        plan = fm.plan(_stiff_hub(), [0.0], [1.0], duration=0.3)
    assert len(record) == 1 and not plan.report["residual"]["better"]
    assert plan.report["residual"]["plan"] > plan.report["residual"]["plain"]
