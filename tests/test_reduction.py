"""Reduced models (issue 33, fm.reduce): flexible coordinates above a cutoff slaved to their
quasi-static deflection. Statics against fm.analysis.statics (the second-order jets, an
independent path), a move against the full model as the cutoff rises, plain truncation against
the static correction, the stable step, and the one-line refusals."""
import re

import numpy as np
import pytest

import flexman as fm
from flexman import Beam, Link, RigidBody, Robot
from flexman.analysis import quasi_static_deflection, tip_offset
from flexman.simulate.stability import StepWarning, check_step, largest_stable_step
from flexman.trajectory import rest_to_rest


def one_link(shapes="clamped_mass", modes=3):
    """A hub-driven link in a vertical plane (gravity -y, the beam along x at q = 0, bending in
    y): three clamped-mass modes of about 4.3, 29 and 86 Hz with the joint free."""
    beam = Beam(length=0.8, mass_per_length=0.65, EI=[30.0, 30.0], shapes=shapes, modes={"y": modes, "z": 0, "torsion": 0},
                elements=3 if shapes == "finite_elements" else 0)
    body = RigidBody(mass=0.2, com=[0.0, 0.0, 0.0], inertia=[1e-4, 1e-4, 1e-4])
    hub = RigidBody(mass=1.0, com=[0.0, 0.0, 0.0], inertia=[0.025, 0.025, 0.05])
    return Robot(links=[Link(joint="revolute", a=0.8, beam=beam, body=body, hub=hub)], gravity=[0.0, -9.81, 0.0],
                 name="one_link")


def test_mode_frequencies_and_what_is_dropped():
    robot = one_link()
    w = fm.analysis.mode_frequencies(robot) / (2 * np.pi)
    free = fm.analysis.natural_frequencies(robot) / (2 * np.pi)
    np.testing.assert_allclose(w, free[1:], rtol=2e-3)  # eigenfunction shapes: each coordinate is (almost) a mode
    reduced = fm.reduce(robot, above_hz=20.0)
    assert reduced.dropped_names == ["ey1_2", "ey1_3"] and reduced.coordinate_names == ["q1", "ey1_1"]
    assert reduced.nq == 2 and reduced.nf == 1 and "ey1_2" in repr(reduced)


def test_static_deflection_equals_the_full_statics():
    """At rest the dropped rows are the full model's: the reduced model's own equilibrium (its
    kept flexible rows balanced, found here by Newton on its inverse dynamics) is the full
    model's static deflection under gravity, dropped coordinates included."""
    robot = one_link()
    q_r = np.array([0.4])
    full = fm.analysis.statics(robot, q_r, order=2)  # the beam's default stiffening is the second-order kinematics
    reduced = fm.reduce(robot, above_hz=20.0)
    q = np.concatenate([q_r, [0.0]])
    zero = np.zeros(2)
    for _ in range(6):  # kept flexible row of the reduced inverse dynamics -> 0 (Newton, difference Jacobian)
        r = reduced.inverse_dynamics(q, zero, zero)[1]
        e = np.array([0.0, 1e-7])
        slope = (reduced.inverse_dynamics(q + e, zero, zero)[1] - r) / 1e-7
        q = q - np.array([0.0, r / slope])
    q_full, qd_full = reduced.full_state(q)
    np.testing.assert_allclose(q_full, full.q, rtol=1e-7, atol=1e-12 * np.abs(full.q).max())
    assert np.all(qd_full == 0.0)
    assert reduced.inverse_dynamics(q, zero, zero)[0] == pytest.approx(full.torques[0], rel=1e-8)
    assert abs(full.q[3]) > 1e-4 * abs(full.q[1])  # the dropped modes do carry a share


@pytest.fixture(scope="module")
def study():
    """The same fast move (0.6 rad in 0.3 s) on the full model and the reduced ones, from rest at
    the static sag."""
    robot = one_link()
    traj = rest_to_rest([0.0], [0.6], 0.3)
    q0 = np.concatenate([[0.0], quasi_static_deflection(robot, [0.0])])
    controller = fm.control.ComputedTorque(robot, traj, kp=100.0, kd=20.0)
    return fm.analysis.convergence(robot, quantity="reduction", above_hz=(20.0, 60.0), controller=controller,
                                   t_final=0.4, q0=q0, dt=2e-3, method="rk4", backend="numeric")


def test_error_shrinks_as_the_cutoff_rises(study):
    """Reduced against full: the error falls as the cutoff rises (measured: tip 2.6e-4 -> 1.5e-6
    of the peak), and the reduced models keep more coordinates as it does."""
    assert study.kept == [1, 2]
    assert study.tip_error[0] < 3e-3 and study.joint_error[0] < 1e-4
    assert study.tip_error[1] < study.tip_error[0] / 10
    assert study.joint_error[1] < study.joint_error[0] / 10
    assert study.full_tip_peak > 1e-3
    assert "above Hz" in study.table() and study.to_dict()["kept"] == [1, 2]


def test_truncation_is_worse_than_the_static_correction(study):
    """Dropping the modes outright loses their static share of the tip deflection: at each
    cutoff the truncated model's tip error is several times the slaved one's (measured: 4 times
    at 20 Hz, where the kept mode's dynamic error is large too, 23 times at 60 Hz)."""
    assert np.all(study.truncated_tip_error > 3 * study.tip_error)
    assert study.truncated_tip_error[1] > 10 * study.tip_error[1]


def test_simulated_result_holds_the_full_coordinates():
    robot = one_link()
    reduced = fm.reduce(robot, above_hz=20.0)
    res = fm.simulate(reduced, 0.05, dt=2e-3, torque=[0.5], backend="numeric", progress=False)
    assert res.q.shape == (len(res.t), robot.nq) and res.robot is robot
    assert res.stats["reduced"]["dropped"] == ["ey1_2", "ey1_3"] and res.stats["loop"] == "python"
    assert np.all(res.qd[:, 2:] == 0.0) and np.any(res.q[:, 2:] != 0.0)
    # every sample balances the dropped rows of the full equations (qd_d = qdd_d = 0)
    k = len(res.t) // 2
    qdd = np.zeros(robot.nq)
    qdd[:2] = reduced.forward_dynamics(res.q[k, :2], res.qd[k, :2], res.tau[k])
    tau_full = robot.inverse_dynamics(res.q[k], res.qd[k], qdd)
    np.testing.assert_allclose(tau_full[2:], 0.0, atol=1e-8 * np.abs(tau_full).max())


def test_highest_frequency_below_the_cutoff_and_the_step_grows():
    """Dropping the 86 Hz mode leaves the reduced model's highest frequency below the cutoff,
    and RK4's stable step grows by the ratio of the highest frequencies. The full model's step
    warning names the cutoff that would let RK4 run at its dt; following it silences the check."""
    robot = one_link()
    dt = 8e-3
    with pytest.warns(StepWarning):
        text = check_step(robot, dt, "rk4")
    found = re.search(r"fm\.reduce\(robot, above_hz=([0-9.e+-]+)\)", text)
    assert found, text
    cutoff = float(found.group(1))
    reduced = fm.reduce(robot, above_hz=cutoff)
    w_full = fm.analysis.natural_frequencies(robot).max()
    w_red = fm.analysis.natural_frequencies(reduced).max()
    assert w_red < 2 * np.pi * cutoff < w_full
    assert largest_stable_step(reduced) / largest_stable_step(robot) == pytest.approx(w_full / w_red, rel=1e-12)
    assert largest_stable_step(reduced) > dt > largest_stable_step(robot)
    assert check_step(reduced, dt, "rk4") == ""
    truncated = fm.analysis.natural_frequencies(fm.reduce(robot, above_hz=cutoff, static=False))
    np.testing.assert_allclose(fm.analysis.natural_frequencies(reduced), truncated, rtol=1e-3, atol=1e-9)


@pytest.mark.parametrize("above, match", [
    (0.0, "above_hz: expected a frequency in Hz, a finite number > 0"),
    (-5.0, "above_hz: expected a frequency in Hz"),
    (float("nan"), "above_hz: expected a frequency in Hz"),
    ("fast", "above_hz: expected a frequency in Hz"),
    (True, "above_hz: expected a frequency in Hz"),
    (1e4, "above_hz: no flexible coordinate of 'one_link' has a mode above 10000 Hz"),
    (1.0, "above_hz: every flexible coordinate of 'one_link' has its mode above 1 Hz"),
])
def test_bad_cutoffs_are_refused_in_one_line(above, match):
    with pytest.raises(ValueError, match=re.escape(match)) as err:
        fm.reduce(one_link(), above_hz=above)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("kwargs, match", [
    ({}, "reduce: give either above_hz"),
    ({"above_hz": 20.0, "coordinates": ["ey1_3"]}, "reduce: give either above_hz"),
    ({"coordinates": ["q1"]}, "coordinates: 'q1' is no flexible coordinate of 'one_link'"),
    ({"coordinates": ["ey1_1", "ey1_2", "ey1_3"]}, "coordinates: name at least one flexible coordinate to drop and keep"),
])
def test_bad_coordinate_lists_are_refused_in_one_line(kwargs, match):
    with pytest.raises(ValueError, match=re.escape(match)) as err:
        fm.reduce(one_link(), **kwargs)
    assert "\n" not in str(err.value)


def test_finite_elements_and_rigid_arms_are_refused_in_one_line():
    with pytest.raises(ValueError, match=r"links\[0\]\.beam: finite-element coordinates are nodal") as err:
        fm.reduce(one_link("finite_elements"), above_hz=20.0)
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="has no flexible coordinates"):
        fm.reduce(fm.load("flx_rigid_pendulum"), above_hz=20.0)
    with pytest.raises(ValueError, match="prescribed: prescribed motion is not run on a reduced model"):
        fm.simulate(fm.reduce(one_link(), above_hz=20.0), 0.1, prescribed=rest_to_rest([0.0], [0.1], 0.1))


def test_named_coordinates_drop_those():
    reduced = fm.reduce(one_link(), coordinates=["ey1_3"])
    assert reduced.dropped_names == ["ey1_3"] and reduced.nq == 3


@pytest.mark.parametrize("law, method", [("pid", "rk4"), ("computed_torque", "rk4"), ("pid", "generalized_alpha")])
def test_compiled_loop_equals_the_python_loop(law, method):
    """The reduced model in the compiled loop (the dropped coordinates iterated in C) against the
    Python loop (Reduced.solve): the same iteration, tolerance and warm start, so states and
    torques agree to round-off (measured: 1e-16 rad, 2e-14 N m); the slaved model (above 20 Hz)
    and the truncated one; generalized-alpha's Newton takes the same iterations (in C its Jacobian
    is analytic once the model's derivative variant is built, by forward differences before, as
    in the Python loop; tests/test_reduced_loops.py compares the two)."""
    robot = one_link()
    traj = rest_to_rest([0.0], [0.6], 0.3)
    q0 = np.concatenate([[0.0], quasi_static_deflection(robot, [0.0])])
    if law == "pid":
        controller = fm.control.PID(robot, traj, kp=100.0, ki=10.0, kd=20.0)
    else:
        controller = fm.control.ComputedTorque(robot, traj, kp=100.0, kd=20.0)
    for reduced in (fm.reduce(robot, above_hz=20.0), fm.reduce(robot, coordinates=["ey1_3"], static=False)):
        runs = [fm.simulate(reduced, 0.2, dt=2e-3, q0=q0, controller=controller, method=method, backend="compiled",
                            loop=loop, progress=False) for loop in ("python", "compiled")]
        python, compiled = runs
        assert python.stats["loop"] == "python" and compiled.stats["loop"] == "compiled"
        assert compiled.q.shape == python.q.shape == (len(python.t), robot.nq)
        np.testing.assert_allclose(compiled.q, python.q, rtol=0, atol=1e-10)
        np.testing.assert_allclose(compiled.qd, python.qd, rtol=0, atol=1e-10)
        np.testing.assert_allclose(compiled.tau, python.tau, rtol=0, atol=1e-10 * np.abs(python.tau).max())
        if method == "generalized_alpha":
            assert compiled.stats["newton_iterations"] == python.stats["newton_iterations"]
            assert compiled.stats["jacobians"] == python.stats["jacobians"]
        if reduced.static:
            assert np.abs(compiled.q[:, 3]).max() > 1e-6  # the slaved coordinates do move
            assert compiled.stats["reduced_iterations"] >= 2
        else:
            assert np.all(compiled.q[:, 3] == 0.0)


def test_compiled_loop_falls_back_with_a_reason():
    """What the reduced model's C loop cannot take runs in the Python loop, saying why; asked for
    the compiled loop, it is a one-line error."""
    robot = one_link()
    reduced = fm.reduce(robot, above_hz=20.0)
    res = fm.simulate(reduced, 0.02, dt=2e-3, controller=lambda t, q, qd: -5.0 * q[:1], method="rk4",
                      backend="compiled", progress=False)
    assert res.stats["loop"] == "python" and "written in Python" in res.stats["loop_reason"]
    res = fm.simulate(reduced, 0.02, dt=2e-3, torque=[0.5], method="Radau", backend="compiled", progress=False)
    assert res.stats["loop"] == "python"
    assert res.stats["loop_reason"] == ("method 'Radau': a reduced model's compiled loop runs rk4, generalized_alpha and "
                                       "radau5")
    res = fm.simulate(reduced, 0.02, dt=2e-3, torque=[0.5], method="rk4", backend="numeric", progress=False)
    assert res.stats["loop"] == "python" and "interpreted" in res.stats["loop_reason"]
    with pytest.raises(ValueError, match="loop='compiled': method 'Radau'") as err:
        fm.simulate(reduced, 0.02, dt=2e-3, torque=[0.5], method="Radau", backend="compiled", loop="compiled",
                    progress=False)
    assert "\n" not in str(err.value)


def test_no_convergence_is_the_same_one_line_error_in_both_loops():
    """An iteration of the dropped coordinates that does not converge (here: allowed one step)
    stops either loop with the reduced model's one-line error: the Python solve, and the C loop
    (its limit lowered in the struct only, so that the checks before the run pass)."""
    from flexman.simulate.backend import evaluator
    from flexman.simulate.compiled_reduced import plan_reduced

    robot = one_link()
    controller = fm.control.PID(robot, rest_to_rest([0.0], [0.6], 0.3), kp=100.0, ki=0.0, kd=20.0)
    reduced = fm.reduce(robot, above_hz=20.0)
    reduced.max_iterations = 1
    match = "reduced model 'one_link': the quasi-static deflection of ey1_2, ey1_3 did not converge in"
    with pytest.raises(ValueError, match=match) as err:
        fm.simulate(reduced, 0.02, dt=2e-3, controller=controller, method="rk4", backend="compiled", loop="python",
                    progress=False)
    assert "\n" not in str(err.value)
    model = evaluator(robot, "compiled")
    t_grid = np.linspace(0.0, 0.02, 11)
    run, why = plan_reduced(fm.reduce(robot, above_hz=20.0).using(model), model, "rk4", 1, controller.using(model),
                            None, t_grid, loop="compiled")
    assert why == "compiled"
    run.struct.max_iterations = 1
    with pytest.raises(ValueError, match=match) as err:
        run.run(np.zeros(2 * 2 + 1), t_grid)
    assert "\n" not in str(err.value)
