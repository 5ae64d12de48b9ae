"""URDF <mimic> joints (q_j = multiplier q_i + offset): the reduced dynamics of a small tree
against Pinocchio's full model reduced by q_full = G q + c, one-line errors for bad mimics, the
refusal left (the per-link numeric model), and the Panda (two fingers, one following the other)
simulated interpreted."""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import flexman as fm
from flexman import ModelError
from urdf_helpers import ROBOTS as ROOT
from urdf_helpers import pin_q, pinocchio_reduced

pin = pytest.importorskip("pinocchio")


def _inertial(rng):
    R = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    I = R @ np.diag(rng.uniform(0.02, 0.03, 3)) @ R.T  # (principal moments meeting the triangle inequality)
    return (f'<inertial><origin xyz="{" ".join(map(str, rng.uniform(-0.2, 0.2, 3)))}" rpy="0.3 -0.2 0.1"/>'
            f'<mass value="{rng.uniform(0.5, 2.0)}"/><inertia ixx="{I[0, 0]}" iyy="{I[1, 1]}" izz="{I[2, 2]}" '
            f'ixy="{I[0, 1]}" iyz="{I[1, 2]}" ixz="{I[0, 2]}"/></inertial>')


def _joint(name, kind, parent, child, rng, extra=""):
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{" ".join(map(str, rng.uniform(-0.3, 0.3, 3)))}" rpy="{" ".join(map(str, rng.uniform(-1, 1, 3)))}"/>'
            f'<axis xyz="{" ".join(map(str, rng.normal(size=3)))}"/>{extra}'
            + ('<limit lower="-2" upper="2" effort="10" velocity="1"/>' if kind != "continuous" else "") + '</joint>')


def tree_urdf(mimic='<mimic joint="j2" multiplier="-0.5" offset="0.1"/>'):
    """base -> l1 (j1) -> l2 (j2) -> l4 (j4); l1 -> l3 (j3, prismatic, following j2)."""
    rng = np.random.default_rng(7)
    links = "".join(f'<link name="l{k}">{_inertial(rng)}</link>' for k in range(1, 5))
    joints = (_joint("j1", "revolute", "base", "l1", rng) + _joint("j2", "continuous", "l1", "l2", rng)
              + _joint("j3", "prismatic", "l1", "l3", rng, mimic) + _joint("j4", "revolute", "l2", "l4", rng))
    return f'<?xml version="1.0"?><robot name="tree"><link name="base"/>{links}{joints}</robot>'


def test_small_tree_with_a_mimic_joint_matches_reduced_pinocchio(tmp_path):
    path = tmp_path / "tree.urdf"
    path.write_text(tree_urdf())
    robot = fm.load(path)
    assert robot.nq == robot.n_joints == 3 and len(robot.links) == 4 and robot.coordinate_names == ["j1", "j2", "j4"]
    assert robot.mimic == {"l3": ("l2", -0.5, 0.1)}
    model, free, G, c = pinocchio_reduced(path)
    assert free == ["j1", "j2", "j4"]
    np.testing.assert_array_equal(robot.mimic_map()[0], G)
    np.testing.assert_array_equal(robot.mimic_map()[1], c)
    data = model.createData()
    rng = np.random.default_rng(3)
    for _ in range(3):
        q, qd, qdd = (rng.uniform(-1.0, 1.0, 3) for _ in range(3))
        Q = G @ q + c
        qp = pin_q(model, Q)
        M = pin.crba(model, data, qp)
        M = np.triu(M) + np.triu(M, 1).T
        refs = (G.T @ M @ G, G.T @ pin.nonLinearEffects(model, data, qp, G @ qd),
                G.T @ pin.rnea(model, data, qp, G @ qd, G @ qdd))
        ours = (robot.mass_matrix(q), robot.bias_forces(q, qd), robot.inverse_dynamics(q, qd, qdd))
        for a, b in zip(ours, refs):
            assert np.abs(a - b).max() <= 1e-10 * max(1.0, np.abs(b).max())
        # forward dynamics inverts inverse dynamics; energies are the full model's at G q + c, G qd
        tau = robot.inverse_dynamics(q, qd, qdd)
        np.testing.assert_allclose(robot.forward_dynamics(q, qd, tau), qdd, atol=1e-9)
        assert robot.kinetic_energy(q, qd) == pytest.approx(0.5 * qd @ robot.mass_matrix(q) @ qd, rel=1e-12)
        assert robot.kinetic_energy(q, qd) == pytest.approx(0.5 * (G @ qd) @ M @ (G @ qd), rel=1e-12)  # Pinocchio's M
        # frames and Jacobians of every link, the follower's included: Pinocchio's joint frames, J_full G
        pin.computeJointJacobians(model, data, qp)
        for name, joint in (("l1", "j1"), ("l2", "j2"), ("l3", "j3"), ("l4", "j4")):
            jid = model.getJointId(joint)
            T = robot.frame(q, name)
            np.testing.assert_allclose(T[:3, :3], data.oMi[jid].rotation, atol=1e-12)
            np.testing.assert_allclose(T[:3, 3], data.oMi[jid].translation, atol=1e-12)
            J = pin.getJointJacobian(model, data, jid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED) @ G
            np.testing.assert_allclose(robot.jacobian(q, name), J, atol=1e-12)
    # an external wrench enters as (J_full G)^T w
    w = np.array([1.0, -2.0, 0.5, 0.1, 0.3, -0.2])
    np.testing.assert_allclose(robot.inverse_dynamics(q, qd, qdd, f_ext=[("l3", [0.1, 0.0, 0.0], w)]),
                               robot.inverse_dynamics(q, qd, qdd) - robot.jacobian(q, "l3", point=[0.1, 0.0, 0.0]).T @ w,
                               atol=1e-12)
    # batches: the same numbers per state
    qs = rng.uniform(-1, 1, (4, 3))
    np.testing.assert_allclose(robot.mass_matrix(qs)[2], robot.mass_matrix(qs[2]), atol=1e-14)


def test_link_numbers_index_every_link_the_followers_included(tmp_path):
    """A link number counts ``robot.links`` (4 here, 3 coordinates), for frames and Jacobians
    alike: -1 is the last link (the follower l3, depth-first after l2's branch), 3 is accepted."""
    path = tmp_path / "tree.urdf"
    path.write_text(tree_urdf())
    robot = fm.load(path)
    assert [link.name for link in robot.links] == ["l1", "l2", "l4", "l3"]
    q = np.array([0.3, -0.4, 0.2])
    for number, name in ((-1, "l3"), (3, "l3"), (-2, "l4"), (2, "l4"), (-4, "l1")):
        np.testing.assert_array_equal(robot.frame(q, number), robot.frame(q, name))
        np.testing.assert_array_equal(robot.jacobian(q, number), robot.jacobian(q, name))
    np.testing.assert_array_equal(robot.jacobian(q), robot.jacobian(q, "l3"))
    with pytest.raises(ValueError, match="out of range for 4 links"):
        robot.frame(q, 4)


def test_linearization_of_a_mimic_robot(tmp_path):
    """K = G^T K_full G: the gradient of the reduced bias forces at rest (central differences);
    the natural frequencies are those of (G^T M G, G^T K G)."""
    from scipy.linalg import eigh

    from flexman.analysis.frequencies import linearize

    path = tmp_path / "tree.urdf"
    path.write_text(tree_urdf())
    robot = fm.load(path)
    for link in robot.links:
        link.viscous = link.coulomb = 0.0
    q, h = np.array([0.3, -0.4, 0.2]), 1e-6
    M, K = linearize(robot, q)
    fd = np.stack([(robot.bias_forces(q + h * e, 0 * q) - robot.bias_forces(q - h * e, 0 * q)) / (2 * h)
                   for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(K, fd, atol=1e-7 * np.abs(fd).max())
    np.testing.assert_allclose(M, robot.mass_matrix(q), atol=1e-15)
    lam = eigh(0.5 * (K + K.T), M, eigvals_only=True)
    np.testing.assert_allclose(robot.natural_frequencies(q), np.sqrt(np.clip(lam, 0.0, None)), rtol=1e-10, atol=1e-6)


@pytest.mark.parametrize("mimic, message", [
    ('<mimic joint="j9"/>', '<joint name="j3">/mimic: joint="j9": there is no joint of that name'),
    ('<mimic joint="j3"/>', '<joint name="j3">/mimic: joint="j3": a joint cannot follow itself'),
    # issue 34: a multiplier of 1e10 was blamed on a link's mass (the conditioning it ruins); 1e300 offsets loaded
    ('<mimic joint="j2" multiplier="1e10"/>', 'multiplier: 1e+10 is beyond the supported magnitude 1000'),
    ('<mimic joint="j2" offset="1e300"/>', 'offset: 1e+300 is beyond the supported magnitude 1000'),
])
def test_bad_mimic_is_one_line_naming_the_joint(tmp_path, mimic, message):
    path = tmp_path / "tree.urdf"
    path.write_text(tree_urdf(mimic))
    with pytest.raises(ModelError) as info:
        fm.load(path)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_mimic_of_a_mimic_joint_is_refused(tmp_path):
    text = tree_urdf().replace('<axis', '<mimic joint="j3" multiplier="2"/><axis', 4)  # j4 (the last) follows j3
    text = text.replace('<mimic joint="j3" multiplier="2"/><axis', '<axis', 3)
    path = tmp_path / "tree.urdf"
    path.write_text(text)
    with pytest.raises(ModelError) as info:
        fm.load(path)
    assert '<joint name="j4">/mimic: joint="j3" is a mimic joint itself' in str(info.value)
    assert "\n" not in str(info.value)


def test_the_per_link_numeric_model_is_refused_in_one_line(tmp_path):
    """Writing a URDF, planning, the regressor and the rest take a robot with mimic joints
    (tests/test_mimic_features.py); what still refuses it is the numeric model built one
    coordinate per link, which the reduced API never asks for: one line naming the followers."""
    from flexman.dynamics.structure import numeric_model

    path = tmp_path / "tree.urdf"
    path.write_text(tree_urdf())
    robot = fm.load(path)
    for call in (lambda: numeric_model(robot),):
        with pytest.raises(ModelError) as info:
            call()
        assert "mimic joints (l3)" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.skipif(ROOT is None, reason="example-robot-data is not installed")
def test_panda_simulates_interpreted_conserving_energy():
    """Panda with its two fingers (panda_finger_joint2 follows joint1): 8 coordinates; free
    motion under gravity without damping conserves energy (RK4, 1 ms, 0.05 s)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        robot = fm.load(ROOT / "panda_description/urdf/panda.urdf")
    assert robot.nq == 8 and len(robot.links) == 9
    for link in robot.links:
        link.viscous = link.coulomb = 0.0
    q0 = np.array([0.1, -0.5, 0.2, -1.8, 0.1, 1.5, 0.3, 0.02])
    res = fm.simulate(robot, t_final=0.05, dt=0.001, q0=q0, backend="numeric")
    assert res.q.shape == (51, 8) and np.all(np.isfinite(res.q))
    energy = [robot.kinetic_energy(q, qd) + robot.potential_energy(q) for q, qd in zip(res.q, res.qd)]
    assert np.ptp(energy) < 1e-8 * max(1.0, abs(energy[0]))
    # both fingers at the same opening: the follower's frame is where Pinocchio's full model puts
    # it at q_full = G q + c (G, c read from the file here)
    model, _, G, c = pinocchio_reduced(ROOT / "panda_description/urdf/panda.urdf")
    data = model.createData()
    pin.framesForwardKinematics(model, data, pin_q(model, G @ res.q[-1] + c))
    ref = data.oMf[model.getFrameId("panda_rightfinger")]
    T = robot.frame(res.q[-1], "panda_rightfinger")
    np.testing.assert_allclose(T[:3, :3], ref.rotation, atol=1e-14)
    np.testing.assert_allclose(T[:3, 3], ref.translation, atol=1e-14)


@pytest.mark.skipif(ROOT is None, reason="example-robot-data is not installed")
def test_panda_report_draws_both_fingers(tmp_path):
    """The 3D view draws every link, the following finger at q_full = G q + c; the report of a
    short run is written, with the reduced equations of motion."""
    from flexman.viz.arm import arm_lines

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        robot = fm.load(ROOT / "panda_description/urdf/panda.urdf")
    q = np.array([0.1, -0.5, 0.2, -1.8, 0.1, 1.5, 0.3, 0.03])
    lines = arm_lines(robot, q)
    assert lines.joints.shape == (9, 3)
    G, c = robot.mimic_map()
    for k, name in ((7, "panda_leftfinger"), (8, "panda_rightfinger")):  # each finger's segment ends at its frame
        end = robot.frame(q, name)[:3, 3]
        assert np.min(np.linalg.norm(lines.rigid[~np.isnan(lines.rigid[:, 0])] - end, axis=1)) < 1e-12
    res = fm.simulate(robot, t_final=0.02, dt=0.01, q0=q, backend="numeric")
    path = res.report(tmp_path / "report.html")
    text = Path(path).read_text()
    assert "panda_rightfinger" in text and "Equations of motion" in text
