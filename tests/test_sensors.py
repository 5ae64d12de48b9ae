"""Sensors (issue 36): what encoders, strain gauges, accelerometers, gyroscopes, position and torque
sensors read, checked against 001's statics, finite differences of the frame kinematics and the
dynamics; their noise, quantisation and the model file's ``sensors:`` section."""
from __future__ import annotations

import copy

import numpy as np
import pytest

import flexman as fm
from flexman.model import ModelError
from flexman.model.serialize import robot_from_dict, robot_to_dict
from flexman.sensors import SensorSet

S = fm.sensors
C = 0.003  # m: the gauges' distance from the neutral axis (the +y face)


@pytest.fixture(scope="module")
def pb():
    return fm.examples.load("piedboeuf_one_link")


def test_strain_gauges_read_the_001_statics_strain(pb):
    """Under each of 001's endpoint loads, the gauges at 001's stations read -c kappa_z, the
    curvature fm.analysis.statics gives at its gauges (the same positions, same load cases)."""
    stations = pb.statics["gauges"][0]
    sset = SensorSet(pb, [S.strain_gauge(pb, "arm", x, C, name=f"g{i}") for i, x in enumerate(stations)])
    for angle in (0.0, np.pi / 4):
        for force in pb.statics["forces"]:
            res = fm.analysis.statics(pb, [angle], list(force) + [0, 0, 0], point=pb.statics["point"],
                                      gauges=pb.statics["gauges"])
            expected = -C * res.curvature[..., 2]
            assert np.allclose(sset.h(res.q), expected, rtol=1e-12, atol=1e-15)
    # the same gauges from a model file's sensors: section
    data = robot_to_dict(pb)
    data["sensors"] = [{"type": "strain_gauge", "link": "arm", "station": x, "offset": C, "noise": 2e-6} for x in stations]
    robot = robot_from_dict(data)
    res = fm.analysis.statics(pb, [0.0], [0, -5.4, 0, 0, 0, 0], point=pb.statics["point"], gauges=pb.statics["gauges"])
    assert np.allclose(SensorSet(robot, robot.sensors).h(res.q), -C * res.curvature[..., 2], rtol=1e-12)
    assert np.max(np.abs(-C * res.curvature[..., 2])) > 1e-4  # hundreds of microstrain: a real signal


def _motion(robot, t, amp, w):
    """q(t), qd(t), qdd(t) of a smooth motion of every coordinate."""
    phase = np.arange(robot.nq)
    q = amp * np.sin(w * t + phase)
    return q, amp * w * np.cos(w * t + phase), -amp * w * w * np.sin(w * t + phase)


def test_accelerometer_is_the_second_derivative_of_the_frame_position(pb):
    """The specific force R^T (a - g) with a from fifth-order finite differences in time of the
    tool point's position (robot.frame, second-order kinematics) along a motion of every coordinate."""
    point = np.array(pb.statics["point"])
    sset = SensorSet(pb, [S.accelerometer(pb, "arm", point), S.position(pb, "arm", point)])
    amp = np.r_[0.8, 0.01 * np.ones(pb.nq - 1)]
    w, h = 2.0, 1e-3
    for t in (0.1, 0.7):
        q, qd, qdd = _motion(pb, t, amp, w)
        pos = lambda s: sset.h(_motion(pb, s, amp, w)[0])[3:]
        acc = (-pos(t + 2 * h) + 16 * pos(t + h) - 30 * pos(t) + 16 * pos(t - h) - pos(t - 2 * h)) / (12 * h * h)
        R = pb.frame(q, "arm", order=2)[:3, :3]
        assert np.allclose(sset.h(q, qd, qdd)[:3], R.T @ (acc - pb.gravity), atol=1e-5)
    # the Jacobian in qdd is R^T J_v: exact for the accelerometer
    _, _, Hqdd = sset.jacobians(q, qd, qdd)
    assert np.allclose(Hqdd[:3], R.T @ pb.jacobian(q, "arm", point, order=2)[:3], atol=1e-7)


def test_gyroscope_reads_the_frame_rotation_rate():
    """On a rigid arm (orthogonal frames) the gyroscope reads R^T w with skew(w) = dR/dt R^T, dR/dt by
    finite differences in time of robot.frame."""
    robot = fm.examples.load("puma560")
    sset = SensorSet(robot, [S.gyroscope(robot, -1)])
    amp, w, h = 0.5 * np.ones(robot.nq), 1.3, 1e-4
    q, qd, _ = _motion(robot, 0.3, amp, w)
    R = lambda s: robot.frame(_motion(robot, s, amp, w)[0], -1)[:3, :3]
    W = (R(0.3 + h) - R(0.3 - h)) / (2 * h) @ R(0.3).T
    omega = np.array([W[2, 1], W[0, 2], W[1, 0]])
    assert np.allclose(sset.h(q, qd), R(0.3).T @ omega, atol=1e-7)


def test_numerical_jacobians_match_finite_differences_of_h(pb):
    sensors = [S.encoder(pb, 0, 4096), S.strain_gauge(pb, 0, 0.2, [C, 0.001]), S.accelerometer(pb, 0),
               S.gyroscope(pb, 0), S.position(pb, 0), S.torque(pb, 0)]
    sset = SensorSet(pb, sensors)
    rng = np.random.default_rng(4)
    q, qd, qdd = (rng.normal(size=pb.nq) * s for s in (0.05, 0.3, 1.0))
    Hq, Hqd, Hqdd = sset.jacobians(q, qd, qdd)
    h = 1e-5
    for k in range(pb.nq):
        e = np.zeros(pb.nq)
        e[k] = h
        assert np.allclose((sset.h(q + e, qd, qdd) - sset.h(q - e, qd, qdd)) / (2 * h), Hq[:, k], atol=1e-6 * (1 + np.abs(Hq[:, k])))
        assert np.allclose((sset.h(q, qd + e, qdd) - sset.h(q, qd - e, qdd)) / (2 * h), Hqd[:, k], atol=1e-6 * (1 + np.abs(Hqd[:, k])))
    # the encoder's row is a unit row, the torque sensor's qdd row the joint row of M
    assert np.array_equal(Hq[0], np.eye(pb.nq)[0]) and not Hqd[0].any()
    assert np.allclose(Hqdd[-1], pb.mass_matrix(q)[0], rtol=1e-6)


def test_torque_sensor_reads_the_applied_torque_and_measurements_are_sampled(pb):
    """A model file's sensors read during a run (res.measurements): a torque sensor reads the torque
    that drove the joint (the dynamics closed), an encoder reads multiples of its count, at its rate."""
    data = robot_to_dict(pb)
    data["sensors"] = [{"type": "torque", "joint": "arm", "name": "torque"},
                       {"type": "encoder", "joint": 0, "counts_per_revolution": 1024, "rate": 100.0, "name": "enc"}]
    robot = robot_from_dict(data)
    res = fm.simulate(robot, 0.2, dt=1e-3, torque=lambda t, q, qd: [np.sin(20 * t)], backend="numeric")
    m = res.measurements
    assert set(m) == {"torque", "enc"}
    assert np.allclose(m["torque"].true, res.tau[:, 0], atol=1e-9)
    assert np.allclose(m["enc"].t, np.arange(21) * 0.01)
    counts = m["enc"].y / (2 * np.pi / 1024)
    assert np.allclose(counts, np.round(counts)) and np.all(np.abs(m["enc"].y - m["enc"].true) <= np.pi / 1024 + 1e-15)


def test_noise_bias_and_quantisation_statistics(pb):
    enc = S.encoder(pb, 0, 256, noise=1e-3, bias=0.01)
    sset = SensorSet(pb, [enc], seed=7)
    q = np.zeros((20000, pb.nq))
    q[:, 0] = np.linspace(-1, 1, len(q))
    err = sset.read(sset.h(q))[:, 0] - q[:, 0]
    quantum = 2 * np.pi / 256
    assert abs(err.mean() - 0.01) < 3e-4
    assert err.std() == pytest.approx(np.sqrt(1e-6 + quantum ** 2 / 12), rel=0.03)
    again = SensorSet(pb, [enc], seed=7).read(sset.h(q))
    other = SensorSet(pb, [enc], seed=8).read(sset.h(q))
    assert np.array_equal(again, SensorSet(pb, [enc], seed=7).read(sset.h(q))) and not np.array_equal(again, other)


def test_sensors_round_trip_through_a_model_file(pb, tmp_path):
    data = robot_to_dict(pb)
    data["sensors"] = [{"type": "strain_gauge", "link": "arm", "station": 0.0191, "offset": [0.003, 0.0], "noise": 2e-6},
                       {"type": "position", "frame": 0, "point": [0.0115, -0.3159, 0.0], "latency": 0.02, "rate": 30}]
    robot = robot_from_dict(data)
    fm.save(robot, tmp_path / "arm.yaml")
    back = fm.load(tmp_path / "arm.yaml")
    q = np.linspace(0.1, 0.2, pb.nq)
    assert np.allclose(SensorSet(back, back.sensors).h(q), SensorSet(robot, robot.sensors).h(q))
    assert back.sensors[1].latency == 0.02 and back.sensors[1].rate == 30


BAD = [
    ({"type": "strain_gauge", "link": "elbow", "station": 0.1, "offset": 0.003}, "sensors[0].link: no link is named 'elbow'"),
    ({"type": "strain_gauge", "link": 3, "station": 0.1, "offset": 0.003}, "sensors[0].link: link 3 does not exist"),
    ({"type": "strain_gauge", "link": "arm", "station": 0.9, "offset": 0.003}, "sensors[0].station: 0.9 m is outside"),
    ({"type": "strain_gauge", "link": "arm", "station": 0.1}, "sensors[0].offset: the neutral axis does not stretch"),
    ({"type": "encoder", "joint": 0, "noise": -1e-3}, "sensors[0].noise: a standard deviation must be >= 0"),
    ({"type": "encoder", "joint": 0, "rate": 0}, "sensors[0].rate: a sample rate must be > 0 Hz"),
    ({"type": "encoder", "joint": 0, "counts_per_revolution": 1.5}, "sensors[0].counts_per_revolution: must be a whole number"),
    ({"type": "encoder", "joint": 0, "side": "motor"}, "sensors[0].side: joint 0 has no motor coordinate"),
    ({"type": "gyroscope", "frame": "tool"}, "sensors[0].frame: 'tool' is neither a link nor a named frame"),
    ({"type": "sonar", "joint": 0}, "sensors[0].type: unknown sensor 'sonar'"),
    ({"type": "encoder", "joint": 0, "station": 0.1}, "sensors[0].station: unknown field for a encoder"),
    ({"type": "position", "frame": 0, "latency": -0.1}, "sensors[0].latency: must be a latency in seconds >= 0"),
]


@pytest.mark.parametrize("item, message", BAD)
def test_bad_sensors_are_refused_in_one_line(pb, item, message):
    data = robot_to_dict(pb)
    data["sensors"] = [copy.deepcopy(item)]
    with pytest.raises(ModelError) as info:
        robot_from_dict(data)
    text = str(info.value)
    assert text.startswith(message) and "\n" not in text


def test_motor_side_encoder_reads_the_elastic_joints_motor():
    """On an elastic joint (tests/backends.py) the motor-side encoder reads the motor coordinate,
    the link-side one the joint's."""
    import tempfile
    from pathlib import Path

    from backends import ROBOTS

    robot = ROBOTS["elastic_joints"](Path(tempfile.mkdtemp()))
    motor = robot.actuated[0]
    assert motor != 0
    sensors = fm.sensors.SensorSet(robot, [fm.sensors.encoder(robot, 0), fm.sensors.encoder(robot, 0, side="motor")])
    q = np.linspace(0.1, 0.9, robot.nq)
    assert np.allclose(sensors.h(q), [q[0], q[motor]], rtol=0, atol=0)
