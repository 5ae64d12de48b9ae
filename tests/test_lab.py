"""The lab bench (issue 36): sensors, a Kalman filter designed from the model, sampled control on
what the sensors read, LQG on the showcase arm.

Oracles: fm.analysis.statics' gauges (001's loads), central differences of the sensor outputs,
python-control's dlqe, the separation principle on the sampled loop's own one-step map, the
chi-square band of the normalised estimation error squared over seeded runs, and the
continuous full-state LQR run of today's showcase."""
from __future__ import annotations

import numpy as np
import pytest

import flexman as fm
from flexman.analysis.strain import surface_strain
from flexman.control.estimation import KalmanFilter, linearize, zero_order_hold
from flexman.control.sampled import simulate_sampled
from flexman.control.sensors import (Accelerometer, Encoder, Gyroscope, JointTorque, Sensors, StrainGauge,
                                     ToolPosition)

POSE = np.array([0.5, 0.3, -0.4])  # the showcase move's goal
COUNT = 2 * np.pi / 2 ** 16  # one count of a 16-bit encoder


@pytest.fixture(scope="module")
def showcase():
    robot = fm.examples.load("flx_three_link_lqr")
    return robot, fm.control.from_spec(robot, robot.controller)


def bench_sensors(robot, seed=0):
    """16-bit encoders (their readings jitter by three counts) and one strain gauge per flexible
    link, 0.2 m from its root, 3 microstrain of noise."""
    flexible = [i for i, link in enumerate(robot.links) if link.is_flexible]
    return Sensors(robot, [Encoder(j, counts=2 ** 16, noise=3 * COUNT) for j in range(robot.n_joints)]
                   + [StrainGauge(i, 0.2, height=0.02, noise=3e-6) for i in flexible], seed=seed)


def test_strain_gauges_read_the_001_statics_gauges():
    """piedboeuf_one_link under 001's endpoint loads: the sensor at each gauge station reads the
    surface strain of the statics' curvature there."""
    robot = fm.examples.load("piedboeuf_one_link")
    stations = robot.statics["gauges"][0]
    sensors = Sensors(robot, [StrainGauge(0, x, height=0.0127) for x in stations])
    for force in robot.statics["forces"]:
        res = fm.analysis.statics(robot, [np.pi / 4], list(force) + [0, 0, 0], point=robot.statics["point"],
                                  gauges=robot.statics["gauges"])
        expected = surface_strain(res.curvature, 0.0127).ravel()
        assert np.allclose(sensors.h(res.q), expected, rtol=1e-12, atol=1e-15)


def test_sensor_jacobians_equal_central_differences():
    robot = fm.examples.load("flx_three_link")
    sensors = Sensors(robot, [Encoder(0), StrainGauge(1, 1.0, height=0.02), JointTorque(2), ToolPosition(),
                              Accelerometer(2, point=(0.5, 0.0, 0.0)), Gyroscope(1)])
    rng = np.random.default_rng(0)
    q, qd, qdd = (rng.uniform(-0.3, 0.3, robot.nq) for _ in range(3))
    got = sensors.jacobians(q, qd, qdd)
    for k, H in enumerate(got):
        fd = np.zeros_like(H)
        for j in range(robot.nq):
            e = np.zeros(robot.nq)
            e[j] = 1e-6
            plus, minus = [q, qd, qdd], [q, qd, qdd]
            plus[k], minus[k] = plus[k] + e, minus[k] - e
            fd[:, j] = (sensors.h(*plus) - sensors.h(*minus)) / 2e-6
        assert np.abs(H - fd).max() <= 1e-6 * max(1.0, np.abs(fd).max()), k


def test_accelerometer_at_rest_reads_gravity_up_and_the_encoder_counts():
    robot = fm.examples.load("flx_three_link")
    robot.gravity = np.array([0.0, 0.0, -9.81])
    sensors = Sensors(robot, [Accelerometer(0), Encoder(0, counts=1000)], seed=4)
    q = np.zeros(robot.nq)
    q[0] = 0.0031
    y = sensors.read(q)
    assert np.allclose(y[:3], robot.frame(q, 0)[:3, :3].T @ [0.0, 0.0, 9.81], atol=1e-12)
    assert y[3] == pytest.approx(round(0.0031 / (2 * np.pi / 1000)) * 2 * np.pi / 1000, abs=1e-15)
    noisy = Sensors(robot, [Encoder(0, counts=None, noise=1e-3)], seed=4)
    again = Sensors(robot, [Encoder(0, counts=None, noise=1e-3)], seed=4)
    assert np.array_equal([noisy.read(q) for _ in range(5)], [again.read(q) for _ in range(5)])


def test_steady_state_gain_equals_python_control_dlqe(showcase):
    control = pytest.importorskip("control")
    robot, _ = showcase
    kf = KalmanFilter(robot, bench_sensors(robot), 1e-3, q=POSE, torque_noise=0.05)
    L, P, _ = control.dlqe(kf.Ad, kf.Bd, kf.C, kf.W, kf.R)
    assert np.abs(kf.L - L).max() <= 1e-8 * np.abs(L).max()
    assert np.abs(kf.P - P).max() <= 1e-8 * np.abs(P).max()


def test_separation_of_the_sampled_lqg_loop(showcase):
    """The loop the implementation runs (the filter's correct and predict, u = u* - K x_hat) on the
    sampled linear plant: its one-step map's eigenvalues are the LQR's and the estimator's."""
    from scipy.linalg import solve_discrete_are

    robot, _ = showcase
    kf = KalmanFilter(robot, bench_sensors(robot), 1e-3, q=POSE, torque_noise=0.05)
    Ad, Bd, C = kf.Ad, kf.Bd, kf.C
    n = Ad.shape[0]
    X = solve_discrete_are(Ad, Bd, np.eye(n), 1e-2 * np.eye(Bd.shape[1]))
    K = np.linalg.solve(Bd.T @ X @ Bd + 1e-2 * np.eye(Bd.shape[1]), Bd.T @ X @ Ad)

    def step(z):
        x, prior = z[:n], z[n:]
        kf.prior = kf.x0 + prior
        estimate = kf.correct(kf.y0 + C @ x) - kf.x0
        u = -K @ estimate
        kf.predict(kf.u0 + u)
        return np.concatenate([Ad @ x + Bd @ u, kf.prior - kf.x0])

    M = np.column_stack([step(e) for e in np.eye(2 * n)])  # the map is linear: its columns
    got = np.sort_complex(np.linalg.eigvals(M))
    want = np.sort_complex(np.concatenate([np.linalg.eigvals(Ad - Bd @ K), np.linalg.eigvals(Ad - kf.L @ C)]))
    assert np.abs(got - want).max() <= 1e-8


def test_filter_is_consistent_over_seeded_runs(showcase):
    """50 seeded runs holding the showcase arm at its goal under torque disturbances (0.05 N m),
    the filter started from the operating point with the true state drawn from its covariance:
    the run-averaged normalised estimation error squared stays in the 95 % chi-square band."""
    from scipy.stats import chi2

    robot, law = showcase
    hold = fm.control.Decoupling(robot, fm.trajectory.rest_to_rest(POSE, POSE, 0.1), gp=100.0, gv=20.0)
    runs, n = 50, 2 * robot.nq
    nees = []
    for r in range(runs):
        kf = KalmanFilter(robot, bench_sensors(robot, seed=r), 1e-3, q=POSE, torque_noise=0.05)
        x0 = kf.x0 + np.random.default_rng(1000 + r).multivariate_normal(np.zeros(n), kf.covariance())
        res = simulate_sampled(robot, 0.2, hold, kf.sensors, 1000, estimator=kf, delay=1, q0=x0[:robot.nq],
                               qd0=x0[robot.nq:], torque_noise=0.05, seed=2000 + r)
        e = np.hstack([res.q, res.qd]) - res.estimate
        nees.append(np.einsum("ki,ij,kj->k", e, np.linalg.inv(kf.covariance()), e))
    average = np.mean(nees, axis=0)
    low, high = chi2.ppf(0.025, runs * n) / runs, chi2.ppf(0.975, runs * n) / runs
    assert np.mean((average >= low) & (average <= high)) >= 0.9


def test_lqg_showcase_at_1khz_with_encoders_and_gauges(showcase):
    """The showcase move at 1 kHz, one sample of delay, torque disturbances: the tip error over the
    last second within 1.5 x the continuous full-state LQR's; the estimated tip deflections within
    1 mm rms of the true ones."""
    from flexman.analysis.strain import deflection

    robot, law = showcase
    full = fm.simulate(robot, 4.5, dt=1e-3, controller=law, progress=False)
    # a fixed-gain filter used along the whole move: designed for ten times the actual disturbance,
    # so that it trusts the readings over its model (linearised at the goal) during the motion
    kf = KalmanFilter(robot, bench_sensors(robot, seed=1), 1e-3, q=POSE, torque_noise=0.5)
    kf.reset(np.zeros(2 * robot.nq))  # the bench starts at rest at zero, as the run does
    res = simulate_sampled(robot, 4.5, law, kf.sensors, 1000, estimator=kf, delay=1, torque_noise=0.05, seed=3)
    goal = robot.frame(np.concatenate([POSE, np.zeros(robot.nf)]), -1)[:3, 3]
    tip_error = lambda r: np.linalg.norm(robot.frame(r.q[r.t >= 3.5], -1)[:, :3, 3] - goal, axis=-1).max()
    assert tip_error(res) <= 1.5 * tip_error(full)
    for link in (1, 2):
        length = robot.links[link].beam.length
        true = deflection(robot, res.q, link, length)
        estimated = deflection(robot, res.estimate[:, :robot.nq], link, length)
        assert np.sqrt(np.mean(np.sum((true - estimated) ** 2, axis=-1))) <= 1e-3
    m = res.measurements
    assert m["y"].shape == m["y_true"].shape == (len(res.t), 5) and m["names"][:3] == ["encoder_q1", "encoder_q2",
                                                                                         "encoder_q3"]
    assert (m["y"][:, 3:] - m["y_true"][:, 3:]).std() == pytest.approx(3e-6, rel=0.1)  # the gauges' noise


def test_extended_filter_at_the_operating_point_is_the_steady_state_filter(showcase):
    """Started from the steady-state covariance at the design point, the extended filter's first
    correction and prediction equal the steady-state filter's (the same linearisation)."""
    from flexman.control.estimation import ExtendedKalmanFilter

    robot, _ = showcase
    sensors = bench_sensors(robot)
    kf = KalmanFilter(robot, sensors, 1e-3, q=POSE, torque_noise=0.05)
    ekf = ExtendedKalmanFilter(robot, sensors, 1e-3, q=POSE, torque_noise=0.05, backend="numeric", substeps=50)
    y = kf.y0 + 1e-6 * np.arange(1, 6)
    assert np.abs(ekf.correct(y) - kf.correct(y)).max() <= 1e-9
    u = kf.u0 + np.array([0.01, -0.02, 0.03])
    assert np.abs(ekf.predict(u) - kf.predict(u)).max() <= 1e-9
    assert np.abs(ekf.Pk - kf.P).max() <= 1e-6 * np.abs(kf.P).max()


def test_unobservable_sensors_and_bad_input_are_one_line(showcase):
    robot = fm.examples.load("piedboeuf_one_link")
    tip = robot.links[0].beam.length
    with pytest.raises(ValueError, match=r"^sensors: strain_.* cannot observe .*add a sensor"):
        KalmanFilter(robot, Sensors(robot, [StrainGauge(0, tip, height=0.01, noise=1e-6)]), 1e-3)
    with pytest.raises(ValueError, match="StrainGauge.link: link 0 has no flexible beam"):
        Sensors(showcase[0], [StrainGauge(0, 0.1, height=0.02)])
    with pytest.raises(ValueError, match="Encoder.joint: joint 7 does not exist"):
        Sensors(robot, [Encoder(7)])
    with pytest.raises(ValueError, match=r"sensors\[0\].noise: expected a finite number >= 0"):
        Sensors(robot, [Encoder(0, noise=-1.0)])
    sensors = Sensors(robot, [Encoder(0, noise=1e-4)])
    with pytest.raises(ValueError, match="rate"):
        simulate_sampled(robot, 0.1, lambda t, q, qd: [0.0], sensors, 0.0)
    with pytest.raises(ValueError, match="delay: 200 samples"):
        simulate_sampled(robot, 0.1, lambda t, q, qd: [0.0], sensors, 1000, delay=200)
    with pytest.raises(ValueError, match="dt"):
        KalmanFilter(robot, sensors, 0.0)


def test_motor_side_encoder_reads_the_elastic_joints_motor():
    """On an elastic joint the motor-side encoder reads the motor coordinate (the link side the joint's)."""
    import tempfile
    from pathlib import Path

    from backends import ROBOTS

    robot = ROBOTS["elastic_joints"](Path(tempfile.mkdtemp()))
    motor = robot.actuated[0]
    assert motor != 0
    sensors = Sensors(robot, [Encoder(0, counts=None), Encoder(0, counts=None, side="motor")])
    q = np.linspace(0.1, 0.9, robot.nq)
    assert np.array_equal(sensors.h(q), [q[0], q[motor]])
    rigid = [j for j in range(robot.n_joints) if robot.actuated[j] == j][0]
    with pytest.raises(ValueError, match="Encoder.side: joint .* has no motor coordinate"):
        Sensors(robot, [Encoder(rigid, side="motor")])
