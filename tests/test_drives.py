"""Rigid transmissions (issue 36, the part built so far): a link's ``drive: {gear_ratio,
rotor_inertia, viscous, coulomb}`` reflects the rotor as armature ``n^2 J`` and the motor's
friction as ``n^2 b`` and ``|n| c`` at the joint, on every path (numeric, generated C), equal to
Pinocchio's ``model.armature``; elastic joints are tested in tests/test_elastic_joints.py."""
from __future__ import annotations

import numpy as np
import pytest

import flexman as fm
from flexman.model.serialize import robot_from_dict, robot_to_dict

pin = pytest.importorskip("pinocchio")

GEARS = [(100.0, 3e-5, 0.002, 0.01), (-50.0, 8e-5, 0.0, 0.0), (160.0, 1.2e-5, 0.001, 0.05)]


def geared(name="saha_3link"):
    data = robot_to_dict(fm.examples.load(name))
    for link, (n, J, b, c) in zip(data["links"], GEARS):
        link["drive"] = {"gear_ratio": n, "rotor_inertia": J, "viscous": b, "coulomb": c}
    return robot_from_dict(data)


def test_reflected_rotor_inertia_is_pinocchios_armature():
    from test_rigid import pinocchio_model

    robot = geared()
    plain = fm.examples.load("saha_3link")
    model = pinocchio_model(plain)  # the same arm without drives: armature set here by hand
    for i, (n, J, _, _) in enumerate(GEARS[: robot.n_joints]):
        model.armature[i] = plain.links[i].armature + n * n * J
    data = model.createData()
    rng = np.random.default_rng(3)
    for _ in range(4):
        q = rng.uniform(-2, 2, robot.nq)
        M_pin = pin.crba(model, data, q)
        M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T
        np.testing.assert_allclose(robot.mass_matrix(q), M_pin, rtol=0, atol=1e-12)


def test_motor_friction_is_reflected_and_generated_code_agrees():
    robot = geared()
    plain = fm.examples.load("saha_3link")
    q, qd, qdd = np.array([0.3, -0.4, 0.5]), np.array([0.7, -0.2, 0.4]), np.array([1.0, 2.0, -1.0])
    extra = np.array([n * n * J * a + n * n * b * v + abs(n) * c * np.sign(v)
                      for (n, J, b, c), a, v in zip(GEARS, qdd, qd)])
    np.testing.assert_allclose(robot.inverse_dynamics(q, qd, qdd), plain.inverse_dynamics(q, qd, qdd) + extra,
                               rtol=0, atol=1e-12)
    # generated code: Coulomb friction branches on the sign of qd, so it is compared without it (as for a
    # link's own coulomb); viscous friction and the reflected rotor are in the code
    data = robot_to_dict(robot)
    for link in data["links"]:
        link["drive"].pop("coulomb", None)
    smooth = robot_from_dict(data)
    fast = fm.derive(smooth).compile("c")
    np.testing.assert_allclose(fast.mass_matrix(q), smooth.mass_matrix(q), rtol=0, atol=1e-12)
    np.testing.assert_allclose(fast.inverse_dynamics(q, qd, qdd), smooth.inverse_dynamics(q, qd, qdd), rtol=0,
                               atol=1e-10)
    with pytest.raises(ValueError, match=r"links\[0\]\.drive\.coulomb: Coulomb friction is not in the generated code"):
        fm.simulate(robot, 0.01, backend="compiled", progress=False)


def test_a_flexible_arm_with_drives_and_the_round_trip(tmp_path):
    data = robot_to_dict(fm.examples.load("flx_three_link"))
    data["links"][1]["drive"] = {"gear_ratio": 80.0, "rotor_inertia": 2e-4}
    robot = robot_from_dict(data)
    plain = fm.examples.load("flx_three_link")
    q = np.linspace(0.1, 0.4, robot.nq)
    difference = robot.mass_matrix(q) - plain.mass_matrix(q)
    expected = np.zeros_like(difference)
    expected[1, 1] = 80.0 ** 2 * 2e-4
    np.testing.assert_allclose(difference, expected, atol=1e-10)
    back = fm.load(fm.save(robot, tmp_path / "geared.yaml"))
    assert back.links[1].drive == robot.links[1].drive and back.links[1].armature == robot.links[1].armature
    np.testing.assert_allclose(back.mass_matrix(q), robot.mass_matrix(q), rtol=0, atol=0)


@pytest.mark.parametrize("drive, message", [
    ({"gear_ratio": 0.0}, r"links\[0\]\.drive\.gear_ratio: must be a non-zero number"),
    ({"rotor_inertia": -1.0}, r"links\[0\]\.drive\.rotor_inertia: must be >= 0"),
    ({"stiffness": 1e4}, r"links\[0\]\.drive\.rotor_inertia: an elastic joint's motor needs a rotor inertia > 0"),
    ({"gear": 10.0}, r"links\[0\]\.drive\.gear: unknown field.*allowed fields: gear_ratio, rotor_inertia"),
    ({"gear_ratio": float("nan")}, r"links\[0\]\.drive\.gear_ratio"),
    # elastic joints (tests/test_elastic_joints.py)
    ({"stiffness": 0.0, "rotor_inertia": 1e-4}, r"links\[0\]\.drive\.stiffness: an elastic joint's spring must be > 0"),
    ({"stiffness": -5.0, "rotor_inertia": 1e-4}, r"links\[0\]\.drive\.stiffness: an elastic joint's spring must be > 0"),
    ({"stiffness": 100.0, "rotor_inertia": 1e-4, "damping": -1.0}, r"links\[0\]\.drive\.damping: must be >= 0"),
    ({"damping": 1.0}, r"links\[0\]\.drive\.damping: the damper of an elastic joint needs its spring"),
    ({"stiffness": 100.0}, r"links\[0\]\.drive\.rotor_inertia: an elastic joint's motor needs a rotor inertia > 0"),
    ({"stiffness": "stiff", "rotor_inertia": 1e-4}, r"links\[0\]\.drive\.stiffness"),
    ({"stiffness": float("inf"), "rotor_inertia": 1e-4}, r"links\[0\]\.drive\.stiffness"),
    ({"gyroscopic": True}, r"links\[0\]\.drive\.gyroscopic: the rotor's coupling is a term of the elastic joint"),
    ({"stiffness": 100.0, "rotor_inertia": 1e-4, "gyroscopic": "yes"}, r"links\[0\]\.drive\.gyroscopic: must be true or false"),
    # torque limits (tests/test_drive_limits.py)
    ({"torque_limit": 0.0}, r"links\[0\]\.drive\.torque_limit: the motor's torque limit must be a number > 0 N m"),
    ({"torque_limit": -2.0}, r"links\[0\]\.drive\.torque_limit: the motor's torque limit must be a number > 0"),
    ({"torque_limit": "10 Nm"}, r"links\[0\]\.drive\.torque_limit"),
    ({"torque_limit": 1e12}, r"links\[0\]\.drive\.torque_limit \(at the joint"),
])
def test_bad_drives_are_one_line(drive, message):
    data = robot_to_dict(fm.examples.load("dynaman_2r"))
    data["links"][0]["drive"] = drive
    with pytest.raises(fm.ModelError, match=message) as info:
        robot_from_dict(data)
    assert "\n" not in str(info.value)
