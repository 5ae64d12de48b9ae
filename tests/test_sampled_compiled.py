"""Sampled control in the compiled C loop (flexman.codegen.loop_sampled, flexman.simulate.compiled_sampled):
a whole sampled run in C equals the Python loop it replaces to 1e-10 (states, torques, readings,
their true values, estimates), for the showcase's LQG (encoders, strain gauges, steady-state or
extended Kalman filter, decoupling + LQR) with and without delay, a joint torque sensor in the filter,
sampled PID and computed torque with a torque disturbance and an output grid whose last step is
short, frame sensors (accelerometers, gyroscopes, a late position sensor) in the filter and
recorded, and a run that diverges; what C does not evaluate keeps the Python loop and says why."""
from __future__ import annotations

import importlib
import shutil
import warnings

import numpy as np
import pytest

import flexman as fm
from flexman import trajectory as tr
from flexman.control import PID, ComputedTorque, Decoupling, Sampled
from flexman.control.sampled import design_pose
from flexman.simulate.compiled_loop import LoopUnavailable

pytestmark = pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")), reason="no C compiler")
S = fm.sensors
COUNT = 2 * np.pi / 2 ** 16  # one count of a 16-bit encoder


def same(a, b, tol=1e-10):
    """Equal to ``tol`` relative to the larger of 1 and the largest value (shapes equal)."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape
    scale = max(1.0, float(np.max(np.abs(b), initial=0.0)))
    assert float(np.max(np.abs(a - b), initial=0.0)) <= tol * scale, float(np.max(np.abs(a - b)))


def both_loops(robot, t_final, make, dt=1e-3, **kwargs):
    """The run in each loop, each with a fresh controller from ``make()`` (same seeds)."""
    runs = {}
    for loop in ("compiled", "python"):
        runs[loop] = fm.simulate(robot, t_final, dt=dt, controller=make(), backend="compiled", loop=loop,
                                 progress=False, **kwargs)
        assert runs[loop].stats["loop"] == loop
    return runs["compiled"], runs["python"]


def assert_same_sampled_run(a, b):
    assert len(a.t) == len(b.t) and a.diverged == b.diverged and a.stats["samples"] == b.stats["samples"]
    assert a.stats["t_fault"] == b.stats["t_fault"]
    for name in ("t", "q", "qd", "tau"):
        same(getattr(a, name), getattr(b, name))
    same(a.estimate["t"], b.estimate["t"], 0.0)
    same(a.estimate["x"], b.estimate["x"])
    assert (a.measurements is None) == (b.measurements is None)
    if b.measurements is not None:
        assert list(a.measurements) == list(b.measurements)
        for name, ch in b.measurements.items():
            same(a.measurements[name].t, ch.t, 0.0)
            same(a.measurements[name].y, ch.y)
            same(a.measurements[name].true, ch.true)


@pytest.fixture(scope="module")
def arm():
    """The showcase arm, its compiled model loaded first: every design then evaluates the same code
    (the filter's and the law's linearizations are differences of it: round-off of 1e-14 between
    two evaluators would part the two loops by 1e-9)."""
    robot = fm.examples.load("flx_three_link_lqr")
    robot.compiled()
    return robot


@pytest.fixture(scope="module")
def law(arm):
    """The showcase's decoupling + LQR law on a short move, its LQR on from the end of the move."""
    Q, R = arm.controller["lqr_weights"]
    move = tr.rest_to_rest([0.0, 0.0, 0.0], [0.2, 0.1, -0.1], 0.5)
    return Decoupling(arm, move, gp=100.0, gv=20.0, lqr_at=0.5, lqr_weights=(np.array(Q), R))


def lab_sensors(arm, torque_sensor=False):
    """16-bit encoders with a count of jitter, a gauge at each tube's root (2 microstrain), and
    optionally a torque sensor on the second joint (0.05 N m)."""
    out = ([S.encoder(arm, j, 2 ** 16, noise=COUNT) for j in range(3)]
           + [S.strain_gauge(arm, link, 0.0, 0.05, noise=2e-6, bias=1e-6) for link in ("upper", "fore")])
    return out + ([S.torque(arm, 1, noise=0.05)] if torque_sensor else [])


@pytest.mark.parametrize("delay, torque_sensor", [(0, False), (1, False), (1, True)],
                         ids=["lqg", "lqg-delay", "lqg-torque-sensor"])
def test_lqg_compiled_equals_python(compiled_backend, arm, law, delay, torque_sensor):
    sensors = lab_sensors(arm, torque_sensor)

    def make():
        return fm.control.lqg(arm, law, sensors, rate=1000.0, delay=delay, torque_noise=0.5, seed=3)

    a, b = both_loops(arm, 0.7, make)
    assert_same_sampled_run(a, b)
    assert not a.diverged and a.stats["samples"] == 700 and np.ptp(a.q[:, 0]) > 0.15  # the arm moved
    # the filter follows the beams: estimate of the flexible coordinates within a few % of their range
    flex = arm.flex_index
    truth = np.concatenate([a.q, a.qd], axis=1)[:-1][:, flex]
    assert np.abs(a.estimate["x"][:, flex] - truth).max() < 0.1 * np.ptp(truth)


def test_filter_prediction_steps_and_a_separate_sensor_seed(compiled_backend, arm, law):
    """A filter predicting with 4 RK4 steps per sample, a sensor with its own seed, two samples of delay."""
    sensors = lab_sensors(arm)
    sensors[3] = S.strain_gauge(arm, "upper", 1.0, [0.0, 0.05], noise=3e-6, seed=17)

    def make():
        kf = fm.control.kalman(arm, sensors, 500.0, q=design_pose(arm, law), torque_noise=0.2, steps=4)
        return Sampled(law, 500.0, delay=2, estimator=kf, torque_noise=0.2, seed=5)

    a, b = both_loops(arm, 0.3, make)
    assert_same_sampled_run(a, b)
    assert a.stats["samples"] == 150


def test_lqg_with_an_accelerometer_and_a_gyroscope_compiled_equals_python(compiled_backend, arm, law):
    """The showcase's LQG with an accelerometer on the forearm and a gyroscope on the upper arm in
    the steady-state filter besides the encoders and gauges: the compiled loop (the frame sensors'
    generated C) equals the Python loop to 1e-10."""
    sensors = lab_sensors(arm) + [S.accelerometer(arm, "fore", [0.3, 0.0, 0.0], noise=0.01),
                                  S.gyroscope(arm, "upper", noise=1e-3)]

    def make():
        return fm.control.lqg(arm, law, sensors, rate=1000.0, delay=1, torque_noise=0.5, seed=3)

    a, b = both_loops(arm, 0.3, make)
    assert_same_sampled_run(a, b)
    assert a.stats["samples"] == 300 and np.ptp(a.measurements["accelerometer_fore_y"].true) > 1.0


def test_extended_kalman_filter_compiled_equals_python(compiled_backend, arm, law):
    """The showcase's LQG with the extended Kalman filter (encoders, gauges and a torque sensor; two RK4
    steps per prediction, one sample of delay): the compiled run equals the Python loop, the filter's
    final covariances included, its transition Jacobian from the model's partial derivatives in C."""
    arm.compiled(derivatives=True)
    sensors = lab_sensors(arm, torque_sensor=True)
    filters = []

    def make():
        kf = fm.control.kalman(arm, sensors, 1000.0, q=design_pose(arm, law), torque_noise=0.5, extended=True, steps=2)
        filters.append(kf)
        return Sampled(law, 1000.0, delay=1, estimator=kf, torque_noise=0.5, seed=3)

    a, b = both_loops(arm, 0.6, make)
    assert_same_sampled_run(a, b)
    assert a.stats["jacobian"] == "analytic" and a.stats["samples"] == 600 and np.ptp(a.q[:, 0]) > 0.15
    compiled, python = filters
    for name in ("Pk", "Pk_post"):
        same(getattr(compiled, name), getattr(python, name))
    assert np.abs(python.Pk - python.P).max() > 0.01 * np.abs(python.P).max()  # the covariance moved with the arm


def test_extended_filter_reading_frame_sensors_compiled_equals_python(compiled_backend, arm, law):
    """The extended filter relinearizing an accelerometer on the forearm and a gyroscope on the upper
    arm besides the encoders and gauges (their rows through the frame program's exact Jacobians and
    the forward dynamics' partials, in C): the compiled run equals the Python loop, covariances included."""
    arm.compiled(derivatives=True)
    sensors = lab_sensors(arm) + [S.accelerometer(arm, "fore", [0.3, 0.0, 0.0], noise=0.01),
                                  S.gyroscope(arm, "upper", noise=1e-3)]
    filters = []

    def make():
        kf = fm.control.kalman(arm, sensors, 1000.0, q=design_pose(arm, law), torque_noise=0.5, extended=True)
        filters.append(kf)
        return Sampled(law, 1000.0, delay=1, estimator=kf, torque_noise=0.5, seed=3)

    a, b = both_loops(arm, 0.3, make)
    assert_same_sampled_run(a, b)
    assert a.stats["loop"] == "compiled" and a.stats["jacobian"] == "analytic"
    for name in ("Pk", "Pk_post"):
        same(getattr(filters[0], name), getattr(filters[1], name))
    assert np.ptp(a.measurements["accelerometer_fore_y"].true) > 1.0


def test_compiled_extended_filter_is_consistent_during_the_move(compiled_backend, arm, law):
    """NEES of the compiled EKF's own covariance 0.3 s into the move (the arm turning, the beams
    bending), over 50 seeded runs started with an error drawn from the filter's prior: the average
    lies inside the two-sided 95 % chi-square band (told half or twice the disturbance it meets, the
    same filter lands outside it: 18.5 and 11.0)."""
    from scipy.stats import chi2

    arm.compiled(derivatives=True)
    unbiased = ([S.encoder(arm, j, 2 ** 16, noise=COUNT) for j in range(3)]
                + [S.strain_gauge(arm, link, 0.0, 0.05, noise=2e-6) for link in ("upper", "fore")])  # noise it models
    lqg = fm.control.lqg(arm, law, unbiased, rate=1000.0, delay=1, torque_noise=0.5, extended=True)
    kf, n, runs, rest = lqg.estimator, 2 * arm.nq, 50, np.zeros(arm.nq)
    L = np.linalg.cholesky(kf.P)
    nees = []
    for seed in range(runs):
        x0 = L @ np.random.default_rng(100 + seed).standard_normal(n)
        lqg.seed = seed
        kf.reset = lambda q0, qd0, P0=None: type(kf).reset(kf, rest, rest)  # the filter starts at rest
        res = fm.simulate(arm, 0.3, dt=1e-3, controller=lqg, q0=x0[:arm.nq], qd0=x0[arm.nq:], progress=False)
        del kf.reset
        assert res.stats["loop"] == "compiled"
        e = np.concatenate([res.q[-2], res.qd[-2]]) - res.estimate["x"][-1]  # at the last sample, t = 0.299 s
        nees.append(e @ np.linalg.solve(kf.covariance(), e))
    lo, hi = chi2.ppf([0.025, 0.975], runs * n) / runs
    assert lo < np.mean(nees) < hi, (np.mean(nees), lo, hi)


@pytest.fixture(scope="module")
def rigid():
    return fm.examples.load("dynaman_2r")


MOVE_2R = tr.rest_to_rest([0.0, 0.0], [0.5, -0.3], 0.2)


@pytest.mark.parametrize("make_law", [
    lambda r: PID(r, MOVE_2R, kp=[400.0, 200.0], ki=[50.0, 20.0], kd=[40.0, 20.0], off_at=0.25, tau_max=[60.0, 20.0]),
    lambda r: ComputedTorque(r, MOVE_2R, kp=100.0, kd=20.0),
], ids=["pid", "computed-torque"])
def test_sampled_laws_compiled_equal_python(compiled_backend, rigid, make_law):
    """Sampled at 500 Hz with 1 ms output steps, one sample of delay, the true state to the law,
    encoders and a joint torque sensor recorded, a torque disturbance; 0.3005 s: the last output
    step is half a step."""
    sensors = [S.encoder(rigid, 0, 4096, noise=1e-4), S.torque(rigid, 1, noise=0.1, bias=0.02)]

    def make():
        return Sampled(make_law(rigid), 500.0, delay=1, sensors=fm.sensors.SensorSet(rigid, sensors),
                       torque_noise=[0.5, 0.2], seed=2)

    a, b = both_loops(rigid, 0.3005, make)
    assert_same_sampled_run(a, b)
    assert a.t[-1] == 0.3005 and a.stats["samples"] == 151 and np.ptp(a.q[:, 0]) > 0.3


def test_sampled_pid_with_frame_sensors_and_late_position_sensors(compiled_backend, rigid):
    """A sampled PID at 500 Hz recording an accelerometer, a gyroscope and position sensors 4 ms
    (2 samples) and 5 ms (2.5 samples) late: both loops equal to 1e-10, the compiled one taken;
    the late sensors read the tip position of two samples before (the initial one before the
    run), and at the positions halfway between the samples 2 and 3 back; the gyroscope the sum of
    the joint rates about z, the accelerometer at the first sample (at rest) R^T (J qdd - g)."""
    point = [0.1, 0.0, 0.0]
    sensors = [S.encoder(rigid, 0, 4096, noise=1e-4), S.position(rigid, -1, point, latency=0.004, noise=1e-3),
               S.accelerometer(rigid, -1, point, noise=0.02), S.gyroscope(rigid, -1, noise=1e-3),
               S.position(rigid, -1, point, latency=0.005, name="between")]

    def make():
        law = PID(rigid, MOVE_2R, kp=[400.0, 200.0], ki=[50.0, 20.0], kd=[40.0, 20.0])
        return Sampled(law, 500.0, delay=1, sensors=fm.sensors.SensorSet(rigid, sensors), torque_noise=[0.5, 0.2],
                       seed=2)

    a, b = both_loops(rigid, 0.3005, make)
    assert_same_sampled_run(a, b)
    assert "loop_reason" not in a.stats or a.stats["loop_reason"] == "compiled"
    samples = np.arange(a.stats["samples"]) * 2  # the grid index of each sample (1 ms steps, 500 Hz)
    late = np.stack([a.measurements[f"position_link2_{c}"].true for c in "xyz"], axis=1)
    tip = rigid.frame(a.q[np.maximum(samples - 4, 0)]) @ np.r_[point, 1.0]
    same(late, tip[:, :3], 1e-12)
    between = np.stack([a.measurements[f"between_{c}"].true for c in "xyz"], axis=1)
    q_half = 0.5 * (a.q[np.maximum(samples - 4, 0)] + a.q[np.maximum(samples - 6, 0)])
    same(between, (rigid.frame(q_half) @ np.r_[point, 1.0])[:, :3], 1e-12)
    gyro = np.stack([a.measurements[f"gyroscope_link2_{c}"].true for c in "xyz"], axis=1)
    same(gyro, np.c_[np.zeros((len(samples), 2)), a.qd[samples].sum(axis=1)], 1e-12)
    acc0 = [a.measurements[f"accelerometer_link2_{c}"].true[0] for c in "xyz"]  # at rest, falling: J qdd
    qdd0 = rigid.forward_dynamics(a.q[0], a.qd[0], np.zeros(2))
    R, J = rigid.frame(a.q[0])[:3, :3], rigid.jacobian(a.q[0], -1, point)[:3]
    same(acc0, R.T @ (J @ qdd0 - rigid.gravity), 1e-12)


def test_divergence_compiled_equals_python(compiled_backend, rigid):
    """A PID of gain 1e300 on a moving reference overflows the state after its second sample: both loops
    stop at the same time with the same samples before it, and warn."""
    def make():
        return Sampled(PID(rigid, MOVE_2R, kp=1e300, ki=0.0, kd=0.0), 100.0)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        a, b = both_loops(rigid, 0.1, make)
    assert sum("stopped at t = 0.011 s" in str(w.message) for w in caught) == 2
    assert a.diverged and b.diverged and len(a.t) == 11 and np.all(np.isfinite(a.q))
    assert_same_sampled_run(a, b)


def test_python_laws_and_the_ekf_keep_the_python_loop(compiled_backend, arm, law, rigid, monkeypatch, capsys):
    """A law written in Python and an extended Kalman filter without the model's partial derivatives
    run in the Python loop, saying why; loop='compiled' refuses them in one line."""
    def python_law(t, q, qd):
        return -50.0 * q[:2] - 5.0 * qd[:2]

    res = fm.simulate(rigid, 0.02, dt=1e-3, controller=Sampled(python_law, 1000.0), backend="compiled", progress=False)
    assert res.stats["loop"] == "python" and "written in Python" in res.stats["loop_reason"]
    message = r"^loop='compiled': the sampled law: the controller \(function\) is written in Python$"
    with pytest.raises(LoopUnavailable, match=message):
        fm.simulate(rigid, 0.02, dt=1e-3, controller=Sampled(python_law, 1000.0), backend="compiled", loop="compiled")

    compiled_sampled = importlib.import_module("flexman.simulate.compiled_sampled")  # fm.simulate is the function
    ekf = fm.control.lqg(arm, law, lab_sensors(arm), rate=1000.0, extended=True)
    monkeypatch.setattr(compiled_sampled, "partials_model", lambda model: None)  # the derivatives not built
    monkeypatch.setattr(importlib.import_module("flexman.simulate.backend"), "_said", set())  # notices said anew
    res = fm.simulate(arm, 0.005, dt=1e-3, controller=ekf, backend="compiled", progress=False)
    assert res.stats["loop"] == "python" and "jacobian" not in res.stats
    assert res.stats["loop_reason"].startswith("the extended Kalman filter needs the model's partial derivatives in C")
    said = capsys.readouterr().err.splitlines()  # not the user's choice: said on stderr, in one line
    assert said == [f"flexman: the sampled run takes the Python loop (much slower): {res.stats['loop_reason']}"]
    with pytest.raises(LoopUnavailable, match=r"^loop='compiled': the extended Kalman filter needs the model's "
                                              r"partial derivatives in C, which are not built \(robot.compiled\("
                                              r"derivatives=True\) builds them; [^\n]*\)$"):
        fm.simulate(arm, 0.005, dt=1e-3, controller=ekf, backend="compiled", loop="compiled", progress=False)
    monkeypatch.undo()

    patched = Sampled(law, 1000.0, sensors=fm.sensors.SensorSet(arm, lab_sensors(arm)))
    patched.sensors.read = lambda y: y  # readings without noise: an instance's own method is Python
    res = fm.simulate(arm, 0.005, dt=1e-3, controller=patched, backend="compiled", progress=False)
    assert res.stats["loop"] == "python" and "sensor set's readings are written in Python" in res.stats["loop_reason"]
    same(res.measurements["encoder_base"].y, res.measurements["encoder_base"].true, 0.0)


def test_sampled_loop_defaults_to_compiled_and_numeric_forces_python(compiled_backend, rigid):
    pid = PID(rigid, MOVE_2R, kp=400.0, ki=0.0, kd=40.0)
    assert fm.simulate(rigid, 0.01, controller=Sampled(pid, 1000.0), progress=False).stats["loop"] == "compiled"
    res = fm.simulate(rigid, 0.01, controller=Sampled(pid, 1000.0), backend="numeric", progress=False)
    assert res.stats["loop"] == "python" and "interpreted" in res.stats["loop_reason"]


def test_a_non_finite_first_torque_is_bad_input_in_the_compiled_loop(compiled_backend, rigid):
    pid = PID(rigid, tr.rest_to_rest([0.0, 0.0], [np.nan, 0.0], 1.0), kp=1.0, ki=0.0, kd=1.0)
    with pytest.raises(ValueError, match=r"^torque at t = 0 s"):
        fm.simulate(rigid, 0.1, controller=Sampled(pid, 100.0), backend="compiled", loop="compiled", progress=False)
