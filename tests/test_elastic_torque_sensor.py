"""A joint torque sensor on an elastic joint (issue 36) reads the torque the joint transmits to
its link: the joint's row of the inverse dynamics (which holds ``-s`` and is zero along any
simulated motion) plus its spring and damper torque ``s = k (theta - q) + d (theta_dot - q_dot)``.
Checked on one link on an elastic joint under gravity: along a simulated move against ``s`` from
the run's own states (closed form), at rest against the link's gravity torque ``m g r cos q``
(closed form) and the statics' spring, the Jacobians against central differences, and the
compiled sampled loop (extended Kalman filter fed by the sensor) against the Python loop. The
FMU's output is in tests/test_fmu_sensors.py (its elastic-joint case)."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import flexman as fm
from flexman.control import PID, Sampled
from flexman.control.estimation import _output_matrices
from flexman.model.serialize import robot_from_dict, robot_to_dict

S = fm.sensors
MASS, R_COM, G = 2.0, 0.3, 9.81  # the link's mass, its centre of mass 0.3 m from the joint, gravity
K, D = 500.0, 0.3  # the joint's spring (N m/rad) and damper (N m s/rad)


def central(f, x, eps=1e-6):
    """Central differences of f at x: (len(f(x)), len(x))."""
    cols = [(np.asarray(f(x + eps * e)) - np.asarray(f(x - eps * e))) / (2.0 * eps) for e in np.eye(len(x))]
    return np.stack(cols, axis=-1)


@pytest.fixture(scope="module")
def robot():
    """One rigid link turning about z, gravity along -y (in the plane of motion), on an elastic
    joint, carrying a torque sensor on that joint (its own ``sensors:``)."""
    body = fm.RigidBody(mass=MASS, com=[R_COM - 0.5, 0.0, 0.0], inertia=[0.01, 0.02, 0.03])
    drive = fm.Drive(gear_ratio=50.0, rotor_inertia=4e-5, stiffness=K, damping=D)
    plain = fm.Robot(links=[fm.Link(a=0.5, body=body, armature=0.005, drive=drive)], name="elastic_one_link",
                     gravity=[0.0, -G, 0.0])
    data = robot_to_dict(plain)
    data["sensors"] = [{"type": "torque", "joint": 0, "name": "tq"}]
    return robot_from_dict(data)


def spring(q, qd):
    """k (theta - q) + d (theta_dot - q_dot): coordinates (q1, q1_motor)."""
    return K * (q[..., 1] - q[..., 0]) + D * (qd[..., 1] - qd[..., 0])


def test_along_a_move_it_reads_the_spring_and_damper_torque(robot):
    res = fm.simulate(robot, 0.3, dt=1e-3, q0=[0.2, 0.2], torque=4.0, backend="numeric", progress=False)
    s = spring(res.q, res.qd)
    y = res.measurements["tq"].true
    assert np.max(np.abs(y - s)) < 1e-10 * np.max(np.abs(s))
    assert np.ptp(s) > 1.0 and np.max(np.abs(y)) > 1.0  # not ~0 (the inverse dynamics' row alone is)
    qdd = robot.forward_dynamics(res.q, res.qd, res.tau)
    assert np.max(np.abs(robot.inverse_dynamics(res.q, res.qd, qdd)[:, 0])) < 1e-9


@pytest.mark.parametrize("q_link", [0.0, 0.7, -1.2])
def test_at_rest_under_gravity_it_reads_the_links_gravity_torque(robot, q_link):
    """At rest the reading is the torque that holds the link, m g r cos q, whatever the motor's
    angle; at the statics' equilibrium that is the spring's k (theta - q) too."""
    sset = S.SensorSet(robot, robot.sensors)
    hold = MASS * G * R_COM * np.cos(q_link)
    for theta in (q_link, q_link + 0.05):
        assert sset.h(np.array([q_link, theta]))[0] == pytest.approx(hold, rel=1e-12, abs=1e-12)
    eq = fm.analysis.statics(robot, [q_link])
    assert K * (eq.q[1] - eq.q[0]) == pytest.approx(hold, rel=1e-10, abs=1e-12)
    assert sset.h(eq.q)[0] == pytest.approx(hold, rel=1e-12, abs=1e-12)


def test_jacobians_equal_central_differences(robot):
    """SensorSet.jacobians against differences of h; the Kalman filter's (C, D) against differences
    of the reading at the filter's own accelerations, h(q, qd, FD(q, qd, tau)): for the elastic
    joint the spring's rows (k, d), and D the input matrix's row (zero: the torque acts on the motor)."""
    sset = S.SensorSet(robot, robot.sensors)
    q, qd, qdd, tau = np.array([0.4, 0.43]), np.array([0.7, -0.5]), np.array([3.0, -2.0]), np.array([1.5])
    H = sset.jacobians(q, qd, qdd)
    for a, J in enumerate(H):
        x = [q, qd, qdd]

        def h(z, a=a):
            return sset.h(*[z if b == a else x[b] for b in range(3)])

        diff = central(h, x[a])  # in qd: zero (the damper's terms cancel; one link has no Coriolis terms)
        assert np.max(np.abs(J - diff)) <= 1e-6 * max(1.0, np.max(np.abs(diff)))

    def reading(z):
        return sset.h(z[:2], z[2:4], robot.forward_dynamics(z[:2], z[2:4], z[4:]))

    C, Dm = _output_matrices(sset, robot, q, qd, tau)
    diff = central(reading, np.concatenate([q, qd, tau]))
    assert np.max(np.abs(np.hstack([C, Dm]) - diff)) <= 1e-6 * np.max(np.abs(diff))
    assert np.array_equal(C[0], [-K, K, -D, D]) and not np.any(Dm)


@pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")), reason="no C compiler")
def test_compiled_sampled_loop_equals_python_with_the_filter_reading_it(compiled_backend, robot):
    """A sampled PID at 500 Hz fed by an extended Kalman filter of the motor encoder and the
    torque sensor (the link's angle is seen only through the spring): the compiled loop (its
    fm_sampled_h and fm_ekf_readings) equals the Python loop to 1e-10."""
    robot.compiled(derivatives=True)
    move = fm.trajectory.rest_to_rest([0.0], [0.4], 0.2)
    sensors = [S.encoder(robot, 0, side="motor", noise=1e-4), S.torque(robot, 0, noise=0.02, name="tq_noisy")]

    def make():
        kf = fm.control.kalman(robot, sensors, 500.0, torque_noise=0.3, extended=True)
        return Sampled(PID(robot, move, kp=60.0, ki=0.0, kd=6.0), 500.0, estimator=kf, torque_noise=0.3, seed=4)

    runs = [fm.simulate(robot, 0.3, dt=1e-3, q0=[0.0, 0.0], controller=make(), backend="compiled", loop=loop,
                        progress=False) for loop in ("compiled", "python")]
    a, b = runs
    assert a.stats["loop"] == "compiled" and b.stats["loop"] == "python"
    scale = lambda x: max(1.0, np.max(np.abs(x)))  # noqa: E731
    for name in ("q", "qd", "tau"):
        assert np.max(np.abs(getattr(a, name) - getattr(b, name))) <= 1e-10 * scale(getattr(b, name))
    assert np.max(np.abs(a.estimate["x"] - b.estimate["x"])) <= 1e-10 * scale(b.estimate["x"])
    assert list(a.measurements) == list(b.measurements) == ["encoder_0", "tq_noisy"]
    for name, ch in b.measurements.items():
        for field in ("t", "y", "true"):
            got, ref = getattr(a.measurements[name], field), getattr(ch, field)
            assert np.max(np.abs(got - ref)) <= 1e-10 * scale(ref)
    rows = np.arange(a.stats["samples"]) * 2  # the grid index of each sample (1 ms steps, 500 Hz)
    s = spring(a.q[rows], a.qd[rows])
    assert np.max(np.abs(a.measurements["tq_noisy"].true - s)) < 1e-10 * np.max(np.abs(s)) and np.ptp(s) > 0.5
    assert np.ptp(a.q[:, 0]) > 0.2  # the link moved
