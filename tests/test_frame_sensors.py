"""Frame sensors exact (issue 36, "the lab bench"): accelerometers, gyroscopes and position sensors
read from the frame recursion (flexman.dynamics.sensing), traced into a program with tape
Jacobians (flexman.symbolic.frame_sensors) and compiled (flexman.codegen.frame_sensors).

Oracles: closed forms (an accelerometer at rest reads -R^T g; on a spinning one-link arm the
centripetal and tangential accelerations), a complex-step derivative of the point Jacobian's
velocity ``J(q(t)) qd(t)`` along a motion (J qdd + Jdot qd to round-off), central differences
of the readings (the Jacobians), and numeric == traced == generated C on serial, flexible,
tree, mimic, elastic-joint and floating-base robots."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import flexman as fm
from backends import ROBOTS
from flexman.dynamics import lagrange4 as l4
from flexman.dynamics.structure import numeric_model
from flexman.model.serialize import robot_from_dict, robot_to_dict
from flexman.sensors import SensorSet

S = fm.sensors
CASES = ("flexible_serial", "flexible_tree", "mimic_tree", "elastic_joints", "floating_file_beam")
has_cc = pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")), reason="no C compiler")


def _state(robot, seed):
    rng = np.random.default_rng(seed)
    q, qd, qdd = (rng.normal(size=robot.nq) * s for s in (0.4, 0.8, 2.0))
    q[robot.flex_index] *= 0.05  # small deflections, as the beams' model assumes
    return q, qd, qdd


def _set(robot):
    """An accelerometer and a position sensor off the last link's frame, a gyroscope on the second
    link, an encoder and a torque sensor on joint 0."""
    point = np.array([0.05, -0.02, 0.03])
    return SensorSet(robot, [S.accelerometer(robot, -1, point, name="acc"), S.gyroscope(robot, 1, name="gyro"),
                             S.position(robot, -1, point, name="pos"), S.encoder(robot, 0, name="enc"),
                             S.torque(robot, 0, name="tq")])


@pytest.fixture(scope="module", params=CASES)
def case(request, tmp_path_factory):
    robot = ROBOTS[request.param](tmp_path_factory.mktemp(request.param))
    return request.param, robot, _set(robot)


def test_accelerometer_equals_the_complex_step_derivative_of_the_point_velocity():
    """a = d/dt (J(q(t)) qd(t)) along q(t) = q + qd t + qdd t^2 / 2, by a complex step of 1e-30
    (no cancellation): the reading R^T (a - g) agrees to round-off, so J_dot qd is exact."""
    for name in ("ur5_like_flexible", "flx_three_link", "piedboeuf_one_link"):
        robot = fm.examples.load(name)
        point = np.array([0.1, 0.02, 0.03])
        sset = SensorSet(robot, [S.accelerometer(robot, -1, point)])
        q, qd, qdd = _state(robot, 1)
        h = 1e-30
        J = l4.point_jacobian(numeric_model(robot), q + 1j * h * qd, len(robot.links) - 1, point, second_order=True)
        a = (J @ (qd + 1j * h * qdd)).imag[:3] / h
        R = robot.frame(q, -1, order=2)[:3, :3]
        expected = R.T @ (a - np.asarray(robot.gravity))
        assert np.allclose(sset.h(q, qd, qdd), expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max())


def test_accelerometer_at_rest_reads_minus_gravity_in_its_frame():
    """At rest the specific force is -R^T g, R the sensor frame's rotation (the named frame
    ``tool`` off the flexible UR5's last link, its offset included, and a link's frame)."""
    data = robot_to_dict(fm.examples.load("ur5_like_flexible"))
    data["frames"] = {"tool": {"link": len(data["links"]) - 1, "xyz": [0.0, 0.05, 0.1], "rpy": [0.3, -0.4, 1.0]}}
    robot = robot_from_dict(data)
    name = "tool"
    sset = SensorSet(robot, [S.accelerometer(robot, name, [0.0, 0.0, 0.1]), S.accelerometer(robot, 2)])
    for seed in range(3):
        q = np.random.default_rng(seed).normal(size=robot.nq)
        q[robot.flex_index] *= 0.02
        expected = [-robot.frame(q, where, order=2)[:3, :3].T @ robot.gravity for where in (name, 2)]
        assert np.allclose(sset.h(q), np.concatenate(expected), rtol=0, atol=1e-13)


def test_accelerometer_on_a_spinning_one_link_arm_reads_the_centripetal_acceleration():
    """The rigid pendulum (a 4 m link about the base z axis) turning at w with angular acceleration
    alpha: a point at r on the link axis reads [-w^2 r, alpha r, 0] - R^T g in the link's frame
    (x along the link), the gyroscope [0, 0, w]."""
    robot = fm.examples.load("flx_rigid_pendulum")
    L = robot.links[0].a
    sset = SensorSet(robot, [S.accelerometer(robot, 0, [-1.5, 0.0, 0.0]), S.gyroscope(robot, 0)])
    r = L - 1.5  # the point's distance from the joint axis
    for q, w, alpha in ((0.3, 2.0, 0.0), (-1.1, 5.0, 3.0)):
        R = robot.frame([q])[:3, :3]
        y = sset.h([q], [w], [alpha])
        assert np.allclose(y[:3], np.array([-w * w * r, alpha * r, 0.0]) - R.T @ robot.gravity, rtol=1e-13, atol=1e-12)
        assert np.allclose(y[3:], [0.0, 0.0, w], rtol=1e-14, atol=1e-14)


def test_jacobians_equal_central_differences(case):
    """All three Jacobians (frame sensors: tape derivatives; torque sensor: the inverse dynamics'
    partials) equal central differences of h to 1e-6 relative."""
    _, robot, sset = case
    q, qd, qdd = _state(robot, 2)
    H = sset.jacobians(q, qd, qdd)
    for a, x in enumerate((q, qd, qdd)):
        step = 1e-6 * max(1.0, np.abs(x).max())
        for k in range(robot.nq):
            e = np.zeros(robot.nq)
            e[k] = step
            args_p, args_m = [q, qd, qdd], [q, qd, qdd]
            args_p[a], args_m[a] = x + e, x - e
            central = (sset.h(*args_p) - sset.h(*args_m)) / (2 * step)
            scale = max(1.0, np.abs(H[a]).max())
            assert np.abs(central - H[a][:, k]).max() <= 1e-6 * scale, (a, k)
    assert np.any(H[0][:9]) and np.any(H[1][:9]) and np.any(H[2][:3])  # the frame sensors' rows are live


@has_cc
@pytest.mark.parametrize("name", ["flexible_tree", "mimic_tree", "floating_file_beam"])
def test_numeric_traced_and_c_readings_agree(name, tmp_path):
    """SensorSet.h (the recursion on floats), the traced program run as NumPy and the generated C
    (a batch of states, and one) agree to 1e-12, readings and Jacobians."""
    robot = ROBOTS[name](tmp_path)
    sset = _set(robot)
    lib = sset.frame_library()
    frame = [k for k, s in enumerate(sset.sensors) if s.type in ("accelerometer", "gyroscope", "position")]
    rows = np.concatenate([np.arange(sset.slices[k].start, sset.slices[k].stop) for k in frame])
    Q = np.stack([np.stack(_state(robot, seed)) for seed in range(4)])  # (4, 3, nq)
    numeric = sset.h(Q[:, 0], Q[:, 1], Q[:, 2])[:, rows]
    c = lib.readings(Q[:, 0], Q[:, 1], Q[:, 2])
    scale = np.abs(numeric).max()
    assert np.abs(c - numeric).max() <= 1e-12 * scale
    for s in range(4):
        traced = sset.jacobians(*Q[s])
        y, *H = lib.jacobians(*Q[s])
        assert np.abs(y - numeric[s]).max() <= 1e-12 * scale
        for a in range(3):
            assert np.abs(H[a] - traced[a][rows]).max() <= 1e-12 * max(1.0, np.abs(H[a]).max())


def test_the_frame_program_and_its_jacobians_take_q_qd_qdd():
    robot = fm.examples.load("dynaman_2r")
    prog = _set(robot).frame_program()
    assert list(prog.inputs) == ["q", "qd", "qdd"] and list(prog.outputs) == ["y", "Hq", "Hqd", "Hqdd"]
    assert prog.outputs["y"][0] == (9,) and prog.outputs["Hq"][0] == (9, robot.nq)
