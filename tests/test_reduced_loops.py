"""Reduced models (fm.reduce) in the compiled loop (issue 33): the analytic Newton Jacobian of the
reduced right-hand side (the implicit function theorem on the dropped rows, the full model's
partial derivatives) against central differences of the same C right-hand side;
generalized-alpha with it against the run that differentiates by forward differences; radau5 on
the reduced model against SciPy's Radau in the Python loop and, for the reduction's error, against
the full model's radau5 run; batches against single runs; sampled control against the Python
loop and the full model."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

import flexman as fm
from flexman import Beam, Link, RigidBody, Robot
from flexman.analysis import quasi_static_deflection
from flexman.simulate.compiled_reduced import plan_reduced
from flexman.trajectory import rest_to_rest

from test_reduction import one_link

P = ctypes.POINTER(ctypes.c_double)


@pytest.fixture(scope="module")
def arm():
    """The one-link arm of test_reduction, its compiled model (derivative variant built), a move
    and its start at the static sag."""
    robot = one_link()
    model = robot.compiled()
    robot.compiled(derivatives=True)
    traj = rest_to_rest([0.0], [0.6], 0.3)
    q0 = np.concatenate([[0.0], quasi_static_deflection(robot, [0.0])])
    return robot, model, traj, q0


def _loop(arm, law, method, static=True):
    robot, model, _, _ = arm
    reduced = fm.reduce(robot, above_hz=20.0, static=static)
    run, why = plan_reduced(reduced.using(model), model, method, 1, None if law is None else law.using(model),
                            [0.3] if law is None else None, np.linspace(0.0, 0.3, 4), loop="compiled")
    assert why == "compiled"
    return run


def _rhs(run, t, x):
    dx, tau = np.zeros(x.size), np.zeros(1)
    status = run.lib.fm_reduced_rhs(ctypes.byref(run.struct), ctypes.byref(run.compiled.control), t,
                                    x.ctypes.data_as(P), dx.ctypes.data_as(P), tau.ctypes.data_as(P), None)
    assert status == 0
    return dx


def test_reduced_jacobian_equals_central_differences(arm):
    """df/dx of the reduced right-hand side (slaved and truncated; no law, PID, computed torque,
    decoupling) from the partial derivatives equals central differences of the C right-hand side
    (its iteration tightened to round-off so that the differences see no iteration noise;
    measured: 5e-12 to 2e-9 of the largest entry)."""
    robot, model, traj, _ = arm
    laws = [None, fm.control.PID(robot, traj, kp=100.0, ki=10.0, kd=20.0),
            fm.control.ComputedTorque(robot, traj, kp=100.0, kd=20.0),
            fm.control.Decoupling(robot, traj, gp=100.0, gv=20.0)]
    rng = np.random.default_rng(0)
    for static in (True, False):
        for law in laws:
            run = _loop(arm, law, "generalized_alpha", static)
            run.struct.tol = 1e-14
            na = run.struct.na
            nx = 2 * na + (law.n_states if law is not None else 0)
            x = rng.uniform(-0.4, 0.4, nx)
            x[1] *= 0.01  # the kept deflection and its rate: small, as in a run
            x[na + 1] *= 0.1
            J = np.zeros((nx, nx))
            status = run.lib.fm_reduced_loop_jacobian(ctypes.byref(run.struct), ctypes.byref(run.compiled.control),
                                                      0.13, x.ctypes.data_as(P), nx, J.ctypes.data_as(P))
            assert status == 0
            central = np.zeros((nx, nx))
            for j in range(nx):
                e = np.zeros(nx)
                e[j] = 1e-6 * max(1.0, abs(x[j]))
                central[:, j] = (_rhs(run, 0.13, x + e) - _rhs(run, 0.13, x - e)) / (2 * e[j])
            label = f"{type(law).__name__}, static={static}"
            assert np.abs(J - central).max() <= 1e-7 * np.abs(central).max(), label
            assert np.abs(J[na:2 * na, :]).max() > 100.0, label  # the accelerations' rows are not empty


def test_reduced_jacobian_with_an_elastic_joint():
    """The same on the arm behind an elastic joint (the torque acts on the motor's coordinate, S
    is not the joints' rows), under a PID (measured: 5e-11 of the largest entry)."""
    beam = Beam(length=0.8, mass_per_length=0.65, EI=[30.0, 30.0], shapes="clamped_mass",
                modes={"y": 3, "z": 0, "torsion": 0})
    link = Link(joint="revolute", a=0.8, beam=beam, body=RigidBody(mass=0.2, com=[0.0, 0.0, 0.0], inertia=[1e-4] * 3),
                hub=RigidBody(mass=1.0, com=[0.0, 0.0, 0.0], inertia=[0.025, 0.025, 0.05]),
                drive=fm.Drive(gear_ratio=50.0, rotor_inertia=1e-4, stiffness=1e3))
    robot = Robot(links=[link], gravity=[0.0, -9.81, 0.0], name="one_link_elastic_joint")
    model = robot.compiled()
    robot.compiled(derivatives=True)
    law = fm.control.PID(robot, rest_to_rest([0.0], [0.6], 0.3), kp=100.0, ki=10.0, kd=20.0)
    run = _loop((robot, model, None, None), law, "generalized_alpha")
    assert run.slaved.coordinate_names == ["q1", "ey1_1", "q1_motor"]
    run.struct.tol = 1e-14
    x = np.random.default_rng(0).uniform(-0.4, 0.4, 7)
    J = np.zeros((7, 7))
    assert run.lib.fm_reduced_loop_jacobian(ctypes.byref(run.struct), ctypes.byref(run.compiled.control), 0.13,
                                            x.ctypes.data_as(P), 7, J.ctypes.data_as(P)) == 0
    central = np.zeros((7, 7))
    for j in range(7):
        e = np.zeros(7)
        e[j] = 1e-6 * max(1.0, abs(x[j]))
        central[:, j] = (_rhs(run, 0.13, x + e) - _rhs(run, 0.13, x - e)) / (2 * e[j])
    assert np.abs(J - central).max() <= 1e-7 * np.abs(central).max()


def test_generalized_alpha_with_the_analytic_jacobian(arm):
    """The compiled reduced generalized-alpha run with the analytic Jacobian equals the run that
    differentiates by forward differences to Newton's tolerance (measured: 1e-17 rad, 4e-16 rad/s),
    with the same Newton iterations and fewer right-hand sides (measured: 1028 against 1828)."""
    robot, _, traj, q0 = arm
    law = fm.control.PID(robot, traj, kp=100.0, ki=10.0, kd=20.0)
    t_grid = np.arange(201) * 2e-3
    x0 = np.concatenate([q0[:2], np.zeros(2), np.zeros(1)])
    runs = []
    for analytic in (True, False):
        run = _loop(arm, law, "generalized_alpha")
        if not analytic:
            run.struct.full.id_partials = None  # no partials: forward differences of fm_reduced_rhs
        runs.append(run.run(x0, t_grid, method="generalized_alpha"))
    (_, Xa, Ta, sa), (_, Xf, Tf, sf) = runs
    assert sa["jacobian"] == "analytic" and sf["jacobian"] == "finite differences"
    assert sa["success"] and sf["success"]
    np.testing.assert_allclose(Xa, Xf, rtol=0, atol=1e-10)
    np.testing.assert_allclose(Ta, Tf, rtol=0, atol=1e-8)
    assert sa["newton_iterations"] == sf["newton_iterations"] and sa["jacobians"] == sf["jacobians"]
    assert sa["rhs_evaluations"] < sf["rhs_evaluations"] - sa["jacobians"] * (Xa.shape[1] - 2)


def test_radau5_equals_scipy_radau_on_the_reduced_model(arm):
    """radau5 on the reduced model in C (Radau IIA with step control, its Jacobian analytic)
    against SciPy's Radau in the Python loop (Reduced.solve) at the same tolerances: they agree
    to the tolerance (measured: 1.4e-10 rad, 4e-9 rad/s)."""
    robot, _, traj, q0 = arm
    reduced = fm.reduce(robot, above_hz=20.0)
    law = fm.control.PID(robot, traj, kp=100.0, ki=10.0, kd=20.0)
    kw = dict(q0=q0, controller=law, backend="compiled", progress=False, rtol=1e-8, atol=1e-10)
    ours = fm.simulate(reduced, 0.4, dt=2e-3, method="radau5", **kw)
    scipy = fm.simulate(reduced, 0.4, dt=2e-3, method="Radau", **kw)
    assert ours.stats["loop"] == "compiled" and scipy.stats["loop"] == "python"
    assert ours.stats["jacobian"] == "analytic" and ours.stats["success"]
    assert ours.q.shape == scipy.q.shape == (len(scipy.t), robot.nq)
    np.testing.assert_allclose(ours.q, scipy.q, rtol=0, atol=1e-8)
    np.testing.assert_allclose(ours.qd, scipy.qd, rtol=0, atol=1e-7)
    assert np.abs(ours.q[:, 3]).max() > 1e-6  # the slaved coordinates are filled in


def test_radau5_measures_the_reduction_error_as_rk4_does(arm):
    """The reduced model's error against the full model (fm.analysis.convergence, the fast move
    of test_reduction) is the same whether both run radau5 or RK4 at 2 ms (measured: tip error
    2.617e-4 of both at 20 Hz; 1.42e-6 against 1.48e-6 at 60 Hz, where RK4's own error shows)."""
    robot, _, traj, q0 = arm
    controller = fm.control.ComputedTorque(robot, traj, kp=100.0, kd=20.0)
    studies = [fm.analysis.convergence(robot, quantity="reduction", above_hz=(20.0, 60.0), controller=controller,
                                       t_final=0.4, q0=q0, dt=2e-3, method=method, backend="compiled")
               for method in ("radau5", "rk4")]
    radau, rk4 = studies
    assert radau.tip_error[0] == pytest.approx(rk4.tip_error[0], rel=1e-3)
    assert radau.tip_error[1] == pytest.approx(rk4.tip_error[1], rel=0.1)
    assert radau.tip_error[1] < radau.tip_error[0] / 10


@pytest.mark.parametrize("method", ["rk4", "generalized_alpha", "radau5"])
def test_batch_equals_single_runs(arm, method):
    """fm.simulate_batch of a reduced model: one C call for the batch, every run equal to
    fm.simulate of it (states, torques, the dropped coordinates filled in), exactly; output_every
    keeps those samples (radau5's samples come from its dense output: round-off)."""
    robot, _, traj, q0 = arm
    reduced = fm.reduce(robot, above_hz=20.0)
    law = fm.control.PID(robot, traj, kp=100.0, ki=10.0, kd=20.0)
    starts = np.array([q0, q0 + [0.05, 0.0, 0.0, 0.0], q0 - [0.1, 1e-3, 0.0, 0.0]])
    kw = dict(controller=law, method=method, backend="compiled", progress=False, rtol=1e-8, atol=1e-10)
    batch = fm.simulate_batch(reduced, 0.3, dt=2e-3, q0=starts, **kw)
    every = fm.simulate_batch(reduced, 0.3, dt=2e-3, q0=starts, output_every=3, **kw)
    assert batch.stats["loop"] == "compiled" and batch.robot is robot and batch.method == method
    assert batch.q.shape == (3, len(batch.t), robot.nq)
    for k in range(3):
        single = fm.simulate(reduced, 0.3, dt=2e-3, q0=starts[k], **kw)
        np.testing.assert_array_equal(batch.t, single.t)
        np.testing.assert_allclose(batch.q[k], single.q, rtol=0, atol=1e-14)
        np.testing.assert_allclose(batch.qd[k], single.qd, rtol=0, atol=1e-14)
        np.testing.assert_allclose(batch.tau[k], single.tau, rtol=0, atol=1e-12)
        np.testing.assert_allclose(every.q[k], single.q[np.searchsorted(single.t, every.t)], rtol=0, atol=1e-14)
    assert np.abs(batch.q[:, :, 3]).max() > 1e-6  # the slaved coordinates are filled in


def test_batch_refusals_are_one_line(arm):
    robot, _, traj, _ = arm
    reduced = fm.reduce(robot, above_hz=20.0)
    cases = [(dict(robots=[robot]), "robots: a reduced model's batch runs its own robot's parameters"),
             (dict(method="dopri5"), "method: 'dopri5' is not run on a reduced model's batch"),
             (dict(torque=np.zeros((2, 1)), q0=np.zeros((2, 4))), "torque: per-run torques"),
             (dict(q0=np.array([np.zeros(4), [0.0, np.nan, 0.0, 0.0]])), r"q0\[1\] is nan; every entry must be a finite"),
             (dict(controller=lambda t, q, qd: -q[:1]), "a reduced model's batch runs in the compiled loop only, "
                                                        "and this one cannot")]
    for kwargs, match in cases:
        with pytest.raises(ValueError, match=match) as err:
            fm.simulate_batch(reduced, 0.02, dt=2e-3, backend="compiled", progress=False, **kwargs)
        assert "\n" not in str(err.value)


def test_auto_picks_generalized_alpha_for_a_stiff_reduced_loop(arm):
    """method="auto" on a reduced model: the step check linearizes the reduced closed loop; at a
    step above RK4's limit it runs generalized-alpha in the compiled loop with the analytic
    Jacobian, and the reason names the loop's limit (no fm.reduce hint: the model is reduced)."""
    robot, _, traj, q0 = arm
    reduced = fm.reduce(robot, above_hz=60.0)
    law = fm.control.PID(robot, traj, kp=100.0, ki=10.0, kd=20.0)
    res = fm.simulate(reduced, 0.3, dt=3e-2, q0=q0, controller=law, backend="compiled", progress=False)
    assert res.stats["method"] == "generalized_alpha" and res.stats["loop"] == "compiled"
    assert res.stats["jacobian"] == "analytic" and res.stats["success"]
    limit = res.stats["step_check"]["rk4_limit"]
    assert limit < 3e-2 and f"above the loop's stability limit {limit:.3g} s" in res.stats["method_reason"]
    assert "fm.reduce" not in res.stats["method_reason"]
    assert res.stats["reduced"]["dropped"] == ["ey1_3"]


def test_sampled_control_compiled_equals_python_and_the_full_model(arm):
    """A sampled PID (500 Hz, one sample of delay, a torque disturbance) reading an encoder and a
    strain gauge at the root (which sees the dropped modes' share), without and with a
    steady-state Kalman filter designed on the full robot: the reduced model's compiled run
    equals the Python loop to round-off (measured: 2e-16 rad, 6e-14 N m) and the full model's
    run to the reduction's error (measured: 1e-5 to 6e-5 rad on the joint)."""
    from test_sampled_compiled import assert_same_sampled_run

    robot, _, traj, q0 = arm
    reduced = fm.reduce(robot, above_hz=20.0)
    sensors = [fm.sensors.encoder(robot, 0, 2 ** 16, noise=1e-4),
               fm.sensors.strain_gauge(robot, 0, 0.0, 0.01, noise=2e-6, bias=1e-6)]

    def make(filtered):
        law = fm.control.PID(robot, traj, kp=100.0, ki=10.0, kd=20.0)
        if filtered:
            kf = fm.control.kalman(robot, sensors, 500.0, torque_noise=0.2)
            return fm.control.Sampled(law, 500.0, delay=1, estimator=kf, torque_noise=0.2, seed=5)
        return fm.control.Sampled(law, 500.0, delay=1, sensors=fm.sensors.SensorSet(robot, sensors), torque_noise=0.2,
                                  seed=5)

    for filtered in (False, True):
        runs = [fm.simulate(model, 0.4, dt=1e-3, q0=q0, controller=make(filtered), backend="compiled", loop=loop,
                            progress=False) for model, loop in ((reduced, "compiled"), (reduced, "python"), (robot, "auto"))]
        ours, python, full = runs
        assert ours.stats["loop"] == "compiled" and python.stats["loop"] == "python" and full.stats["loop"] == "compiled"
        assert ours.robot is robot and ours.q.shape == full.q.shape and ours.stats["samples"] == 200
        assert_same_sampled_run(ours, python)
        assert np.abs(ours.q[:, 0] - full.q[:, 0]).max() < 2e-4  # of a 0.6 rad move
        assert np.abs(ours.q[:, 3]).max() > 1e-6  # the slaved coordinate is filled in
