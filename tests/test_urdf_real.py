"""Real robot descriptions as they are written: the URDFs of ``example-robot-data`` (the set
Pinocchio's own tests use), read by flexman with the root link fixed, against Pinocchio reading
the same files (mass matrix, bias forces, inverse dynamics; joint damping and friction taken out
on our side, Pinocchio's dynamics have none)."""
from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import flexman as fm
from flexman import ModelError

pin = pytest.importorskip("pinocchio")


def _robots_dir():
    for entry in sys.path:
        folder = Path(entry) / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
        if folder.is_dir():
            return folder
    return None


ROOT = _robots_dir()
FILES = sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*.urdf")) if ROOT else []

# What flexman refuses, with the reason (one line naming the element): mimic joints (a coordinate
# following another) are not read yet; some files describe a free-flying body with no joint, or
# nothing at all; one has a joint moving a link that carries no mass (its M would be singular).
REFUSED = {
    "mimic": ["alex_description/urdf/alex_psyonic_hands.urdf", "baxter_description/urdf/baxter.urdf",
              "panda_description/urdf/panda.urdf", "panda_description/urdf/panda_collision.urdf",
              "pr2_description/urdf/pr2.urdf", "romeo_description/urdf/romeo.urdf",
              "talos_data/robots/talos_full_v2.urdf", "talos_data/robots/talos_full_v2_box.urdf",
              "talos_data/robots/talos_left_arm.urdf", "talos_data/robots/talos_reduced.urdf",
              "talos_data/robots/talos_reduced_box.urdf", "talos_data/robots/talos_reduced_corrected.urdf",
              "tiago_pro_description/robots/tiago_pro.urdf"],
    "nothing moves": ["hector_description/robots/quadrotor_base.urdf", "iris_description/robots/iris_simple.urdf"],
    "no <link> elements": ["ur_description/urdf/ur3.urdf"],
    "nothing it carries has mass": ["romeo_description/urdf/romeo_laas_small.urdf"],
    "at most 100 are supported": ["tiago_description/robots/tiago_dual.urdf"],
}
REASON = {f: why for why, files in REFUSED.items() for f in files}
READ = [f for f in FILES if f not in REASON]


def _load(rel):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # meshes ignored; implausible inertials kept as written
        return fm.load(ROOT / rel)


def _pin_q(model, q):
    out = []
    for joint, qi in zip(list(model.joints)[1:], q):
        out += [np.cos(qi), np.sin(qi)] if joint.nq == 2 else [qi]  # continuous joints: (cos, sin)
    return np.array(out)


@pytest.mark.skipif(not FILES, reason="example-robot-data is not installed")
@pytest.mark.parametrize("rel", READ)
def test_real_urdf_matches_pinocchio(rel):
    robot = _load(rel)
    model = pin.buildModelFromUrdf(str(ROOT / rel))
    # the same coordinates in the same order (depth-first, urdfdom's order of child joints)
    assert [model.names[j] for j in range(1, model.njoints)] == [j for j in _joint_names(robot, ROOT / rel)]
    for link in robot.links:
        link.viscous = link.coulomb = 0.0
    rng = np.random.default_rng(len(rel))
    q, qd, qdd = (rng.uniform(-1.0, 1.0, robot.nq) for _ in range(3))
    data = model.createData()
    qp = _pin_q(model, q)
    M = pin.crba(model, data, qp)
    M = np.triu(M) + np.triu(M, 1).T
    for ours, ref in ((robot.mass_matrix(q), M), (robot.bias_forces(q, qd), pin.nonLinearEffects(model, data, qp, qd)),
                      (robot.inverse_dynamics(q, qd, qdd), pin.rnea(model, data, qp, qd, qdd))):
        assert np.abs(ours - ref).max() <= 1e-10 * max(1.0, np.abs(ref).max())


def _joint_names(robot, path):
    """The URDF joint of each flexman link (a link is named after its URDF child link)."""
    import defusedxml.ElementTree as ET

    from flexman.model.urdf import urdf_identifier

    joint_of = {urdf_identifier(j.find("child").get("link")): j.get("name") for j in ET.parse(path).getroot().findall("joint")}
    return [joint_of[link.name] for link in robot.links]


@pytest.mark.skipif(not FILES, reason="example-robot-data is not installed")
@pytest.mark.parametrize("rel", sorted(REASON))
def test_refused_urdf_says_why_in_one_line(rel):
    with pytest.raises(ModelError) as info:
        _load(rel)
    assert REASON[rel] in str(info.value) and "\n" not in str(info.value)


@pytest.mark.skipif(not FILES, reason="example-robot-data is not installed")
def test_ur5_fixed_frames_are_named_frames():
    """UR5: base_link -> base and wrist_3_link -> ee_link / tool0 are fixed joints, merged; their
    child links stay as frames, at Pinocchio's frame placements."""
    rel = "ur_description/urdf/ur5_robot.urdf"
    robot = _load(rel)
    assert robot.n_joints == 6 and robot.is_serial
    model = pin.buildModelFromUrdf(str(ROOT / rel))
    data = model.createData()
    q = np.random.default_rng(1).uniform(-1, 1, 6)
    pin.framesForwardKinematics(model, data, q)
    pin.computeJointJacobians(model, data, q)
    for name in ("tool0", "ee_link", "base"):
        fid = model.getFrameId(name)
        T = robot.frame(q, name)
        np.testing.assert_allclose(T[:3, :3], data.oMf[fid].rotation, atol=1e-12)
        np.testing.assert_allclose(T[:3, 3], data.oMf[fid].translation, atol=1e-12)
        J = pin.getFrameJacobian(model, data, fid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        np.testing.assert_allclose(robot.jacobian(q, name), J, atol=1e-12)
