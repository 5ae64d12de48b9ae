"""Real robot descriptions as they are written: the URDFs of ``example-robot-data`` (the set
Pinocchio's own tests use), read by flexman with the root link fixed (and freed: floating=True),
against Pinocchio reading the same files (mass matrix, bias forces, inverse dynamics; joint damping and friction taken out
on our side, Pinocchio's dynamics have none)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import flexman as fm
from flexman import ModelError
from flexman.model.urdf import urdf_identifier
from urdf_helpers import ROBOTS as ROOT
from urdf_helpers import pin_q, pinocchio_floating, pinocchio_reduced

pin = pytest.importorskip("pinocchio")


FILES = sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*.urdf")) if ROOT else []

# What flexman refuses, with the reason (one line naming the element): some files describe a
# free-flying body with no joint, or nothing at all; two have a joint moving (almost) no mass
# (their M is singular or nearly so); one names a mimic joint that is not in the file.
REFUSED = {
    "there is no joint of that name": ["alex_description/urdf/alex_psyonic_hands.urdf"],
    "nothing moves": ["hector_description/robots/quadrotor_base.urdf", "iris_description/robots/iris_simple.urdf"],
    "no <link> elements": ["ur_description/urdf/ur3.urdf"],
}
# Files whose mass matrix is singular or ill-conditioned (a finger with no inertial; iCub's head
# with a degenerate inertia): they load, flagged, with one line naming the massless chain; their
# kinematics and inverse dynamics compare with Pinocchio's as every other file's (below), what
# needs M's inverse is refused (test_singular_mass_matrix_urdf_loads_and_refuses_forward_dynamics).
SINGULAR = ["icub_description/robots/icub.urdf", "romeo_description/urdf/romeo_laas_small.urdf",
            "romeo_description/urdf/romeo.urdf"]
# Files with <mimic> joints (a joint following another, q_j = multiplier q_i + offset) that load:
# compared with Pinocchio's full model reduced by q_full = G q + c on the test's side (below).
MIMIC = ["baxter_description/urdf/baxter.urdf", "panda_description/urdf/panda.urdf",
         "panda_description/urdf/panda_collision.urdf", "pr2_description/urdf/pr2.urdf",
         "talos_data/robots/talos_full_v2.urdf", "talos_data/robots/talos_full_v2_box.urdf",
         "tiago_pro_description/robots/tiago_pro.urdf", "romeo_description/urdf/romeo.urdf"]
REASON = {f: why for why, files in REFUSED.items() for f in files}
READ = [f for f in FILES if f not in REASON and f not in MIMIC and f not in SINGULAR]


def _load(rel):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # meshes ignored; implausible inertials kept as written
        return fm.load(ROOT / rel)


@pytest.mark.skipif(not FILES, reason="example-robot-data is not installed")
@pytest.mark.parametrize("rel", READ)
def test_real_urdf_matches_pinocchio(rel):
    robot = _load(rel)
    model = pin.buildModelFromUrdf(str(ROOT / rel))
    # the same coordinates in the same order (depth-first, urdfdom's order of child joints)
    assert [model.names[j] for j in range(1, model.njoints)] == [j for j in _joint_names(robot, ROOT / rel)]
    # and the coordinates carry the joints' names
    assert robot.coordinate_names == [urdf_identifier(model.names[j]) for j in range(1, model.njoints)]
    _same_dynamics_as_pinocchio(robot, model, np.random.default_rng(len(rel)))


@pytest.mark.skipif(not FILES, reason="example-robot-data is not installed")
@pytest.mark.parametrize("rel", MIMIC)
def test_mimic_urdf_matches_reduced_pinocchio(rel):
    """Mimic joints: M = G^T M_full G, b = G^T b_full(G q + c, G qd), ID = G^T ID_full with
    Pinocchio's full model, at a random state; the coordinates are Pinocchio's joints without
    the followers, in its order."""
    robot = _load(rel)
    model, free, G, c = pinocchio_reduced(ROOT / rel)
    assert robot.nq == robot.n_joints == len(free) == len(robot.links) - len(robot.mimic)
    names = _joint_names(robot, ROOT / rel)
    assert [names[i] for i in robot.independent] == free
    assert robot.coordinate_names == [urdf_identifier(n) for n in free]
    for link in robot.links:
        link.viscous = link.coulomb = 0.0
    rng = np.random.default_rng(len(rel))
    q, qd, qdd = (rng.uniform(-1.0, 1.0, robot.nq) for _ in range(3))
    data = model.createData()
    qp = pin_q(model, G @ q + c)
    M = pin.crba(model, data, qp)
    M = np.triu(M) + np.triu(M, 1).T
    refs = (G.T @ M @ G, G.T @ pin.nonLinearEffects(model, data, qp, G @ qd), G.T @ pin.rnea(model, data, qp, G @ qd, G @ qdd))
    for ours, ref in zip((robot.mass_matrix(q), robot.bias_forces(q, qd), robot.inverse_dynamics(q, qd, qdd)), refs):
        assert np.abs(ours - ref).max() <= 1e-10 * max(1.0, np.abs(ref).max())


# Free bodies with no joint: refused with a fixed root ("nothing moves"), whole robots when freed.
FREE_BODIES = ["hector_description/robots/quadrotor_base.urdf", "iris_description/robots/iris_simple.urdf"]


@pytest.mark.skipif(not FILES, reason="example-robot-data is not installed")
@pytest.mark.parametrize("rel", READ + FREE_BODIES)
def test_real_urdf_with_a_floating_base_matches_pinocchio(rel):
    """fm.load(urdf, floating=True): legged robots, humanoids, flying arms and every fixed-base
    file freed at its root. flexman's six base coordinates (x, y, z, then yaw, pitch, roll about
    z, y, x: Trans Rz Ry Rx) are Pinocchio's composite root joint PX PY PZ RZ RY RX, so M, b and
    inverse dynamics compare entry by entry at a random state."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        robot = fm.load(ROOT / rel, floating=True)
    model = pinocchio_floating(ROOT / rel)
    assert model.nv == robot.nq
    _same_dynamics_as_pinocchio(robot, model, np.random.default_rng(len(rel) + 1))


def _same_dynamics_as_pinocchio(robot, model, rng):
    """M, b and inverse dynamics equal Pinocchio's model of the same file to 1e-10 (relative to
    the larger of 1 and the largest entry) at a random state, joint friction and damping taken out."""
    for link in robot.links:
        link.viscous = link.coulomb = 0.0
    q, qd, qdd = (rng.uniform(-1.0, 1.0, robot.nq) for _ in range(3))
    data = model.createData()
    qp = pin_q(model, q)
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


@pytest.mark.slow
@pytest.mark.skipif(not FILES, reason="example-robot-data is not installed")
def test_ur5_with_a_flexible_forearm(tmp_path):
    """UR5 as ROS describes it (fixed frames and all) with its forearm made an aluminium tube,
    two modes per bending plane: the overlay keeps the named frames; M and b equal the
    energy-Lagrangian oracle's; the derived equations equal the numeric path; it simulates
    (energy conserved, no damping) and reports like the bundled ur5_like_flexible. (The
    oracle's Christoffel symbols make it slow.)"""
    from flexman.oracles.energy_lagrangian import EnergyLagrangian

    overlay = {"name": "ur5_flexible_forearm", "links": {"forearm_link": {
        "beam": {"length": 0.39225, "mass_per_length": 0.98, "EI": 1.07e4, "modes": {"y": 2, "z": 2}, "axis": [0, 0, 1]},
        "mass": 1.0, "com": [0.39225, 0.0, 0.0], "inertia": [0.002, 0.002, 0.0018]}}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        robot = fm.load(ROOT / "ur_description/urdf/ur5_robot.urdf", overlay=overlay)
    assert robot.nq == 10 and robot.coordinate_names[6:] == ["forearm_link_ey1", "forearm_link_ey2", "forearm_link_ez1", "forearm_link_ez2"]
    assert {"tool0", "ee_link", "base"} <= set(robot.frames)
    rng = np.random.default_rng(5)
    q = rng.uniform(-1, 1, robot.nq)
    q[6:] *= 0.01
    qd = rng.uniform(-1, 1, robot.nq)
    oracle = EnergyLagrangian(robot)
    M = oracle.mass_matrix(q)
    assert np.abs(robot.mass_matrix(q) - M).max() < 1e-9 * np.abs(M).max()
    b = oracle.bias_forces(q, qd)
    assert np.abs(robot.bias_forces(q, qd) - b).max() < 1e-8 * np.abs(b).max()
    fast = fm.derive(robot).compile("numpy")
    np.testing.assert_allclose(fast.mass_matrix(q), robot.mass_matrix(q), rtol=1e-10, atol=1e-12)
    # the second z mode is near 4.6 kHz: RK4 at a step well inside its stability limit
    res = fm.simulate(robot, 0.004, dt=2e-5, method="rk4")
    assert abs(res.energy[-1] - res.energy[0]) < 1e-8 * abs(res.energy[0])
    res.report(tmp_path / "ur5.html")
    assert (tmp_path / "ur5.html").stat().st_size > 10_000


@pytest.mark.skipif(not FILES, reason="example-robot-data is not installed")
@pytest.mark.parametrize("rel", SINGULAR)
def test_singular_mass_matrix_urdf_loads_and_refuses_forward_dynamics(rel, capfd):
    """iCub and Romeo load with one warning line naming the massless chain (no Python warning for
    it); inverse dynamics and frames equal Pinocchio's (reduced by its mimic joints for romeo);
    forward dynamics, simulation and natural frequencies refuse in that same one sentence."""
    capfd.readouterr()
    robot = _load(rel)
    err = capfd.readouterr().err
    said = [line for line in err.splitlines() if "mass matrix is" in line]
    assert len(said) == 1 and said[0].startswith("flexman: warning: ") and "moves (almost) no mass" in said[0]
    sentence = robot.singular_mass
    assert sentence in said[0] and sentence.count(". ") == 0 and sentence.endswith(".")
    model, free, G, c = pinocchio_reduced(ROOT / rel)
    for link in robot.links:
        link.viscous = link.coulomb = 0.0
    rng = np.random.default_rng(7)
    q, qd, qdd = (rng.uniform(-1.0, 1.0, robot.nq) for _ in range(3))
    data = model.createData()
    qp = pin_q(model, G @ q + c)
    ref = G.T @ pin.rnea(model, data, qp, G @ qd, G @ qdd)
    assert np.abs(robot.inverse_dynamics(q, qd, qdd) - ref).max() <= 1e-12 * max(1.0, np.abs(ref).max())
    pin.forwardKinematics(model, data, qp)
    pin.updateFramePlacements(model, data)
    name = model.frames[model.nframes - 1].name
    if name in robot.frames or name in [link.name for link in robot.links]:
        assert np.abs(robot.frame(q, name) - data.oMf[model.nframes - 1].homogeneous).max() < 1e-12
    for call in (lambda: robot.forward_dynamics(q, qd, np.zeros(robot.n_joints)),
                 lambda: fm.simulate(robot, 0.01), lambda: robot.natural_frequencies()):
        with pytest.raises(ModelError) as info:
            call()
        assert str(info.value) == sentence
