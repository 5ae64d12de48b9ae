"""Kinematic trees: links with parents (model files, validation, depth-first order) and the
dynamics of trees against Pinocchio, an independent implementation built here through its
model API (one joint per link, its placement and unaligned axis, the link's body)."""
from __future__ import annotations

import numpy as np
import pytest

import flexman as fm
from flexman import Link, ModelError, RigidBody, Robot
from flexman.model import Placement
from urdf_helpers import free_flight_momenta, pin_q

pin = pytest.importorskip("pinocchio")


def _rpy(r):
    from flexman.model.rotations import rpy_matrix

    return rpy_matrix(r)[:3, :3]


def random_tree(seed, n=7, fixed_share=0.0, gravity=(0.3, -0.2, -9.81)):
    """A random tree of placed revolute and prismatic joints: link i hangs from a random earlier
    link or the base; bodies with random COM and inertia."""
    rng = np.random.default_rng(seed)
    links = []
    for i in range(n):
        parent = int(rng.integers(-1, i)) if i else -1
        principal = rng.uniform(0.03, 0.05, 3)  # any two exceed the third
        R = np.linalg.qr(rng.normal(size=(3, 3)))[0]
        body = RigidBody(float(rng.uniform(0.5, 2.0)), rng.uniform(-0.2, 0.2, 3), R @ np.diag(principal) @ R.T)
        pl = Placement(rng.uniform(-0.3, 0.3, 3), rng.uniform(-np.pi, np.pi, 3), rng.normal(size=3))
        joint = "prismatic" if rng.random() < 0.3 else "revolute"
        links.append(Link(joint=joint, placement=pl, body=body, name=f"l{i}", parent="base" if parent < 0 else parent))
    return Robot(links, name="tree", gravity=np.array(gravity), dh="standard")


def pinocchio_tree(robot):
    """Pinocchio's model of a flexman tree of placed joints (bodies in the joint frames)."""
    model = pin.Model()
    ids = []
    for link, parent in zip(robot.links, robot.parents):
        pl = link.placement
        placement = pin.SE3(_rpy(pl.rpy), np.array(pl.xyz, float))
        kind = pin.JointModelRevoluteUnaligned if link.joint == "revolute" else pin.JointModelPrismaticUnaligned
        jid = model.addJoint(0 if parent < 0 else ids[parent], kind(np.array(pl.axis, float)), placement, link.name)
        b = link.body
        model.appendBodyToJoint(jid, pin.Inertia(b.mass, np.array(b.com, float), np.array(b.inertia, float)), pin.SE3.Identity())
        ids.append(jid)
    model.gravity = pin.Motion(np.array(robot.gravity, float), np.zeros(3))
    return model


@pytest.mark.parametrize("seed", range(6))
def test_random_tree_against_pinocchio(seed):
    robot = random_tree(seed)
    assert not robot.is_serial
    model = pinocchio_tree(robot)
    data = model.createData()
    # Pinocchio numbers its joints in the order they were added: ours, depth-first
    assert [model.names[j] for j in range(1, model.njoints)] == [link.name for link in robot.links]
    rng = np.random.default_rng(100 + seed)
    q, qd, qdd = (rng.normal(size=robot.nq) for _ in range(3))
    M_ref = pin.crba(model, data, q)
    M_ref = np.triu(M_ref) + np.triu(M_ref, 1).T
    scale = max(1.0, np.abs(M_ref).max())
    np.testing.assert_allclose(robot.mass_matrix(q), M_ref, rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(robot.bias_forces(q, qd), pin.nonLinearEffects(model, data, q, qd), rtol=0, atol=1e-10 * scale)
    tau = pin.rnea(model, data, q, qd, qdd)
    np.testing.assert_allclose(robot.inverse_dynamics(q, qd, qdd), tau, rtol=0, atol=1e-10 * scale)
    # a batch gives the same, and the forward dynamics closes the loop
    qs = rng.normal(size=(3, robot.nq))
    for qi, Mi in zip(qs, robot.mass_matrix(qs)):
        Mr = pin.crba(model, data, qi)
        np.testing.assert_allclose(Mi, np.triu(Mr) + np.triu(Mr, 1).T, rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(robot.forward_dynamics(q, qd, tau), qdd, rtol=0, atol=1e-8 * scale)


@pytest.mark.parametrize("seed", range(3))
def test_tree_frames_and_jacobians_against_pinocchio(seed):
    robot = random_tree(seed)
    model = pinocchio_tree(robot)
    data = model.createData()
    q = np.random.default_rng(seed).normal(size=robot.nq)
    pin.computeJointJacobians(model, data, q)
    for i in range(robot.n_joints):
        T = robot.frame(q, i)
        ref = data.oMi[i + 1]
        np.testing.assert_allclose(T[:3, :3], ref.rotation, atol=1e-12)
        np.testing.assert_allclose(T[:3, 3], ref.translation, atol=1e-12)
        J_ref = pin.getJointJacobian(model, data, i + 1, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        np.testing.assert_allclose(robot.jacobian(q, link=i), J_ref, atol=1e-12)


def test_tree_energies_and_rigid_formulations_agree():
    """The 4x4 recursion (used for flexible arms) and Newton-Euler/composite bodies agree on a tree,
    and the energy rate equals the power of the joint forces."""
    from flexman.dynamics import crba, lagrange4, rnea
    from flexman.dynamics.structure import numeric_model

    robot = random_tree(11)
    model = numeric_model(robot)
    rng = np.random.default_rng(3)
    q, qd, qdd = (rng.normal(size=robot.nq) for _ in range(3))
    np.testing.assert_allclose(lagrange4.inverse_dynamics(model, q, qd, qdd), rnea.inverse_dynamics(robot, q, qd, qdd), atol=1e-10)
    np.testing.assert_allclose(lagrange4.mass_matrix(model, q), crba.mass_matrix(robot, q), atol=1e-10)
    # dE/dt = qd . tau with tau = ID(q, qd, qdd) (no friction)
    h = 1e-6
    E = lambda s: robot.kinetic_energy(q + s * qd + 0.5 * s * s * qdd, qd + s * qdd) + robot.potential_energy(q + s * qd + 0.5 * s * s * qdd)
    rate = (E(h) - E(-h)) / (2 * h)
    assert abs(rate - qd @ robot.inverse_dynamics(q, qd, qdd)) < 1e-6


def test_serial_default_keeps_order_and_parents():
    robot = fm.examples.load("puma560")
    assert robot.is_serial and robot.parents == tuple(range(-1, robot.n_joints - 1))


def test_depth_first_order_and_round_trip(tmp_path):
    body = RigidBody(1.0, [0.1, 0, 0], [0.01, 0.02, 0.02])
    links = [Link(a=0.3, body=body, name="a"), Link(a=0.2, body=body, name="b"),
             Link(a=0.2, body=body, name="c", parent="a"), Link(a=0.1, body=body, name="d", parent=1)]
    robot = Robot(links)
    # depth-first, children in file order: a, b, d (child of b), then c (second child of a)
    assert [link.name for link in robot.links] == ["a", "b", "d", "c"]
    assert robot.parents == (-1, 0, 1, 0)
    path = tmp_path / "tree.yaml"
    fm.save(robot, path)
    again = fm.load(path)
    assert again.parents == robot.parents and again.content_key() == robot.content_key()
    q = np.linspace(0.1, 0.4, 4)
    np.testing.assert_array_equal(again.mass_matrix(q), robot.mass_matrix(q))


@pytest.mark.parametrize("links, message", [
    ([Link(name="x", parent="y")], "links[0].parent: no link is named 'y'"),
    ([Link(name="x", parent=1), Link(name="y", parent=0)], "closed loop"),
    ([Link(name="x", parent=4)], "links[0].parent: index 4 is not a link"),
    ([Link(name="x"), Link(name="z", parent="z")], "cannot be its own parent"),
])
def test_bad_parents_one_sentence(links, message):
    with pytest.raises(ModelError) as exc:
        Robot(links)
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_model_file_parent_errors(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("links:\n  - {name: a, a: 0.3, mass: 1}\n  - {name: b, a: 0.3, mass: 1, parent: nowhere}\n")
    with pytest.raises(ModelError, match=r"links\[1\]\.parent: no link is named 'nowhere'"):
        fm.load(path)
    path.write_text("links:\n  - {name: a, a: 0.3, mass: 1}\n  - {name: b, a: 0.3, mass: 1, parent: 2.5}\n")
    with pytest.raises(ModelError, match=r"links\[1\]\.parent: give the parent link's name"):
        fm.load(path)


def flexible_tree(seed, n=4):
    """A random flexible arm (beams of every shape kind, sliding beams, hubs, payload) whose links
    are then hung from random earlier links: a flexible tree."""
    from test_flexible import random_flexible_robot

    rng = np.random.default_rng(seed)
    serial = random_flexible_robot(rng, n, dh=["standard", "modified"][seed % 2])
    links = serial.links
    for i, link in enumerate(links[1:], 1):
        link.parent = int(rng.integers(-1, i))
    return Robot(links, dh=serial.dh, payload=serial.payload, gravity=serial.gravity), rng


@pytest.mark.parametrize("seed", [2] + [pytest.param(s, marks=pytest.mark.slow) for s in (0, 1, 3)])
def test_flexible_tree_against_energy_lagrangian(seed):
    """Book's recursion on a tree (M by composite bodies, b) against the point-cloud energy
    Lagrangian, whose positions follow each link's path from the base."""
    from flexman.oracles.energy_lagrangian import EnergyLagrangian

    from test_flexible import random_state, rel

    robot, rng = flexible_tree(seed)
    assert not robot.is_serial
    oracle = EnergyLagrangian(robot)
    q, qd, _ = random_state(rng, robot)
    assert rel(robot.mass_matrix(q), oracle.mass_matrix(q)) < 1e-9
    assert rel(robot.bias_forces(q, qd), oracle.bias_forces(q, qd)) < 1e-8
    assert abs(robot.potential_energy(q) - oracle.potential_energy(q).real) < 1e-9 * (1 + abs(robot.potential_energy(q)))


def test_derived_equations_of_a_tree_equal_the_numeric_ones():
    """The same recursions traced on a tree: rigid (Newton-Euler) and flexible (Book), the NumPy
    code generated from them equals the numeric path."""
    rigid = random_tree(5, n=5)
    flexible, rng = flexible_tree(2, n=3)
    for robot, formulation in ((rigid, "newton_euler"), (flexible, "book")):
        fast = fm.derive(robot, formulation=formulation).compile("numpy")
        q, qd = rng.normal(size=robot.nq) * 0.1, rng.normal(size=robot.nq)
        np.testing.assert_allclose(fast.mass_matrix(q), robot.mass_matrix(q), rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(fast.bias_forces(q, qd), robot.bias_forces(q, qd), rtol=1e-10, atol=1e-10)


XACRO = """<?xml version="1.0"?>
<robot name="forked" xmlns:xacro="http://www.ros.org/wiki/xacro">
  <xacro:arg name="length" default="0.4"/>
  <xacro:property name="L" value="$(arg length)"/>
  <xacro:macro name="arm_link" params="name mass">
    <link name="${name}">
      <inertial><origin xyz="${L/2} 0 0"/><mass value="${mass}"/>
        <inertia ixx="0.001" iyy="${mass*L*L/12}" izz="${mass*L*L/12}" ixy="0" ixz="0" iyz="0"/></inertial>
    </link>
  </xacro:macro>
  <link name="base"/>
  <xacro:arm_link name="upper" mass="2.0"/>
  <xacro:arm_link name="left" mass="1.0"/>
  <xacro:arm_link name="right" mass="1.0"/>
  <link name="tool"/>
  <joint name="j1" type="continuous"><parent link="base"/><child link="upper"/><axis xyz="0 0 1"/></joint>
  <joint name="j2" type="revolute"><parent link="upper"/><child link="left"/><origin xyz="${L} 0 0"/>
    <axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="j3" type="prismatic"><parent link="upper"/><child link="right"/><origin xyz="${L} 0 0" rpy="0 0 0.5"/>
    <axis xyz="1 0 0"/><limit lower="0" upper="0.2" effort="1" velocity="1"/></joint>
  <joint name="tool_joint" type="fixed"><parent link="left"/><child link="tool"/><origin xyz="${L} 0 0"/></joint>
</robot>
"""


def test_xacro_file_with_arguments_is_a_tree_like_pinocchio(tmp_path):
    """fm.load of a .urdf.xacro with args: expanded by the xacro package, read as a tree whose
    dynamics equal Pinocchio's reading of the same expansion."""
    import xacro

    path = tmp_path / "forked.urdf.xacro"
    path.write_text(XACRO)
    robot = fm.load(path, args={"length": 0.7})
    assert [link.name for link in robot.links] == ["upper", "left", "right"] and robot.parents == (-1, 0, 0)
    np.testing.assert_allclose(robot.frame(np.zeros(3), "tool")[:3, 3], [1.4, 0, 0], atol=1e-15)
    model = pin.buildModelFromXML(xacro.process_file(str(path), mappings={"length": "0.7"}).toxml())
    data = model.createData()
    q, qd = np.array([0.3, -0.4, 0.1]), np.array([1.0, -0.5, 0.2])
    qp = np.array([np.cos(q[0]), np.sin(q[0]), q[1], q[2]])
    M = pin.crba(model, data, qp)
    np.testing.assert_allclose(robot.mass_matrix(q), np.triu(M) + np.triu(M, 1).T, atol=1e-12)
    np.testing.assert_allclose(robot.bias_forces(q, qd), pin.nonLinearEffects(model, data, qp, qd), atol=1e-12)
    assert robot.links[1].limits == (-1.0, 1.0) and robot.links[0].limits is None  # continuous: none


def test_xacro_errors_are_one_line(tmp_path):
    path = tmp_path / "broken.urdf.xacro"
    path.write_text(XACRO.replace("${mass*L*L/12}", "${mass*LL/12}"))
    with pytest.raises(ModelError) as info:
        fm.load(path)
    text = str(info.value)
    assert "broken.urdf.xacro: xacro could not expand the file" in text and "LL" in text and "\n" not in text
    with pytest.raises(ModelError, match="args are the arguments of a .xacro file"):
        fm.load(fm.examples.path("puma560"), args={"x": 1})


def test_statics_wrench_on_a_branch_and_a_named_frame():
    """Rigid tree held against gravity and a wrench at a side branch (by link name) or at a named
    frame: the holding torques are the inverse dynamics at rest with that external wrench."""
    robot = random_tree(4, n=5)
    T = np.eye(4)
    T[:3, 3] = [0.1, -0.05, 0.2]
    robot.frames = {"tool": (2, T)}
    q = np.random.default_rng(9).normal(size=robot.nq)
    w = np.array([3.0, -1.0, 2.0, 0.2, 0.1, -0.3])
    zero = np.zeros(robot.nq)
    for link, point in (("l3", [0.05, 0.0, 0.1]), ("tool", None), (1, None)):
        held = fm.analysis.statics(robot, q, wrench=w, link=link, point=point, order=0)
        ref = robot.inverse_dynamics(q, zero, zero, f_ext=[(link, point, w)])
        np.testing.assert_allclose(held.torques, ref, atol=1e-10)
        np.testing.assert_allclose(held.position, (robot.frame(q, link) @ np.append(point if point is not None else np.zeros(3), 1.0))[:3], atol=1e-12)
    with pytest.raises(ValueError, match="no link or frame is named 'nowhere'"):
        fm.analysis.statics(robot, q, wrench=w, link="nowhere", order=0)


def test_3d_view_draws_every_branch_from_its_parent():
    """The report's lines: each link's rigid piece starts at its parent's distal frame (the
    base origin for links on the base) and ends at its own joint frame."""
    from flexman.viz.arm import arm_lines

    robot = random_tree(7, n=6)
    q = np.random.default_rng(2).normal(size=robot.nq)
    pieces = arm_lines(robot, q).rigid.reshape(robot.n_joints, 4, 3)  # start, corner, end, gap
    for i, parent in enumerate(robot.parents):
        start = np.zeros(3) if parent < 0 else robot.frame(q, parent)[:3, 3]
        np.testing.assert_allclose(pieces[i, 0], start, atol=1e-12)
        np.testing.assert_allclose(pieces[i, 2], robot.frame(q, i)[:3, 3], atol=1e-12)


def test_compiled_c_of_a_tree_equals_the_numeric_path():
    """The C code generated for a flexible tree, compiled, gives the numeric M, b and forward
    dynamics (the same recursions traced on the tree)."""
    from test_codegen import HAVE_CC

    if not HAVE_CC:
        pytest.skip("no C compiler")
    robot, rng = flexible_tree(2, n=3)
    fast = fm.derive(robot).compile("c")
    q, qd, tau = rng.normal(size=robot.nq) * 0.1, rng.normal(size=robot.nq), rng.normal(size=robot.n_joints)
    np.testing.assert_allclose(fast.mass_matrix(q), robot.mass_matrix(q), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(fast.bias_forces(q, qd), robot.bias_forces(q, qd), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(fast.forward_dynamics(q, qd, tau), robot.forward_dynamics(q, qd, tau), rtol=1e-8, atol=1e-10)


def test_natural_frequencies_of_a_flexible_tree():
    """Joints locked at rest with gravity off: the frequencies are those of K_ff with M_ff, the
    flexible block of the tree's mass matrix (a tree's beams couple through their common parent)."""
    import scipy.linalg

    robot, _ = flexible_tree(2, n=4)
    robot.gravity = np.zeros(3)
    q = np.zeros(robot.nq)
    F = robot.flex_index
    h = 1e-6  # K_ff by central differences of the elastic forces (b at rest, no gravity)
    K = np.array([(robot.bias_forces(q + h * e, 0 * q) - robot.bias_forces(q - h * e, 0 * q))[F] / (2 * h)
                  for e in np.eye(robot.nq)[F]])
    ref = np.sqrt(np.sort(scipy.linalg.eigh(0.5 * (K + K.T), robot.mass_matrix(q)[F, F], eigvals_only=True)))
    got = fm.analysis.natural_frequencies(robot, q, joints="locked")
    np.testing.assert_allclose(np.sort(got), ref, rtol=1e-6)


def test_a_tree_saved_as_urdf_reads_back_and_matches_pinocchio(tmp_path):
    """fm.save(tree, x.urdf): the joints keep their parents and order (zero-padded names, as
    urdfdom sorts siblings by name), named frames become fixed joints; flexman and Pinocchio
    reading the file give the tree's M."""
    robot = random_tree(8, n=11)
    T = np.eye(4)
    T[:3, 3] = [0.0, 0.1, 0.0]
    robot.frames = {"tool": (3, T)}
    path = fm.save(robot, tmp_path / "tree.urdf")
    back = fm.load(path)
    assert back.parents == robot.parents
    q = np.random.default_rng(0).normal(size=robot.nq)
    np.testing.assert_allclose(back.mass_matrix(q), robot.mass_matrix(q), atol=1e-10)
    np.testing.assert_allclose(back.frame(q, "tool"), robot.frame(q, "tool"), atol=1e-12)
    model = pin.buildModelFromUrdf(str(path))
    qp = pin_q(model, q)
    M = pin.crba(model, model.createData(), qp)  # (joints without limits are written continuous)
    np.testing.assert_allclose(robot.mass_matrix(q), np.triu(M) + np.triu(M, 1).T, atol=1e-10)


def test_info_lists_parents_and_frames(tmp_path):
    import json
    import subprocess
    import sys

    robot = random_tree(3, n=4)
    robot.frames = {"tool": (1, np.eye(4))}
    path = fm.save(robot, tmp_path / "tree.yaml")
    out = subprocess.run([sys.executable, "-m", "flexman.cli", "info", str(path), "--json"], capture_output=True,
                         text=True, timeout=300)
    data = json.loads(out.stdout)
    assert [item["parent"] for item in data["links"]] == ["base" if p < 0 else p + 1 for p in robot.parents]
    assert data["frames"] == {"tool": 2}


SATELLITE = """<robot name="sat">
 <link name="bus"><inertial><origin xyz="0.05 0 0"/><mass value="20"/>
  <inertia ixx="2" iyy="2.5" izz="3" ixy="0.1" ixz="0" iyz="0"/></inertial></link>
 <link name="boom"><inertial><origin xyz="0.5 0 0"/><mass value="1"/>
  <inertia ixx="0.01" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
 <link name="hand"><inertial><origin xyz="0.1 0 0"/><mass value="0.5"/>
  <inertia ixx="0.001" iyy="0.002" izz="0.002" ixy="0" ixz="0" iyz="0"/></inertial></link>
 <link name="camera"/>
 <joint name="j1" type="revolute"><parent link="bus"/><child link="boom"/><origin xyz="0.5 0 0.2"/>
  <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
 <joint name="j2" type="revolute"><parent link="boom"/><child link="hand"/><origin xyz="1.0 0 0"/>
  <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
 <joint name="cam" type="fixed"><parent link="bus"/><child link="camera"/><origin xyz="0 0.3 0" rpy="0 0 1"/></joint>
</robot>"""


def test_floating_base_is_a_free_body_like_pinocchio(tmp_path):
    """fm.load(urdf, floating=True): the root link flies on six coordinates (x, y, z, yaw, pitch,
    roll), carrying its inertial and the frames fixed to it; Pinocchio reading the saved robot
    (the six joints written out) gives the same M and b."""
    path = tmp_path / "sat.urdf"
    path.write_text(SATELLITE)
    robot = fm.load(path, floating=True)
    assert robot.nq == 8 and [link.name for link in robot.links][:6] == [
        "bus_x", "bus_y", "bus_z", "bus_yaw", "bus_pitch", "bus"]
    assert robot.links[5].body.mass == 20.0 and robot.frames["camera"][0] == 5
    q = np.random.default_rng(1).uniform(-1, 1, robot.nq)
    qd = np.random.default_rng(2).uniform(-1, 1, robot.nq)
    T = robot.frame(q, "bus")  # the pose: Trans(x, y, z) Rz(yaw) Ry(pitch) Rx(roll)
    from flexman.model.rotations import rpy_matrix

    np.testing.assert_allclose(T[:3, 3], q[:3], atol=1e-14)
    np.testing.assert_allclose(T[:3, :3], rpy_matrix([q[5], q[4], q[3]])[:3, :3], atol=1e-14)
    saved = fm.save(robot, tmp_path / "free.urdf")
    model = pin.buildModelFromUrdf(str(saved))
    data = model.createData()
    qp = pin_q(model, q)
    M = pin.crba(model, data, qp)
    np.testing.assert_allclose(robot.mass_matrix(q), np.triu(M) + np.triu(M, 1).T, atol=1e-10)
    np.testing.assert_allclose(robot.bias_forces(q, qd), pin.nonLinearEffects(model, data, qp, qd), atol=1e-10)
    with pytest.raises(ModelError, match="floating=True frees the root link of a URDF"):
        fm.load(fm.examples.path("puma560"), floating=True)


def test_free_floating_flexible_arm_conserves_momentum(tmp_path):
    """A satellite with a flexible boom in free flight (no gravity, no torques), RK4 at a small
    step: linear momentum (the generalized momenta of x, y, z) and angular momentum about the
    base origin (the momentum along a rigid rotation of everything about each axis) stay
    constant to 1e-10, energy too."""
    path = tmp_path / "sat.urdf"
    path.write_text(SATELLITE)
    overlay = {"gravity": [0, 0, 0], "links": {"boom": {
        "beam": {"length": 1.0, "mass_per_length": 1.0, "EI": 200.0, "modes": {"y": 1, "z": 1}},
        "mass": 0.2, "com": [1.0, 0, 0], "inertia": [1e-4, 1e-4, 1e-4]}}}
    robot = fm.load(path, overlay=overlay, floating=True)
    assert robot.nq == 10

    rng = np.random.default_rng(0)
    q0, qd0 = rng.uniform(-0.5, 0.5, robot.nq), rng.uniform(-0.5, 0.5, robot.nq)
    q0[8:] *= 0.01
    res = fm.simulate(robot, 0.04, dt=2e-4, method="rk4", q0=q0, qd0=qd0)
    (l0, a0), (l1, a1) = (free_flight_momenta(robot, res.q[k], res.qd[k]) for k in (0, -1))
    assert np.abs(res.q[-1] - res.q[0]).max() > 1e-3  # it moved
    assert np.abs(l1 - l0).max() < 1e-10 * np.abs(l0).max()
    assert np.abs(a1 - a0).max() < 1e-10 * np.abs(a0).max()
    assert abs(res.energy[-1] - res.energy[0]) < 1e-10 * abs(res.energy[0])
