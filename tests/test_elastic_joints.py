"""Elastic joints (issue 36, Spong's reduced model): a drive with ``stiffness`` adds a motor
coordinate ``<joint>_motor`` behind a torsional spring and damper, the joint torque acting on
the motor. Checked against the two-inertia closed form, an independently assembled linear
model of a clamped beam on a spring (tests/beam_oracle.py plus the spring and rotor written
here), the rigid-joint limit of a stiff spring, energy conservation with the energy assembled
here from the arm without drives, and the statics' balance; every backend is in
tests/test_backends.py (robot ``elastic_joints``)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import eigh

import flexman as fm
from beam_oracle import matrices as planar_matrices
from flexman.model.serialize import robot_from_dict, robot_to_dict


def with_drives(robot, drives):
    """``robot`` rebuilt from its model-file data with ``drives`` = {link index: drive mapping}."""
    data = robot_to_dict(robot)
    for i, drive in drives.items():
        data["links"][i]["drive"] = drive
    return robot_from_dict(data)


def link_side(robot):
    """The same arm without its drives (the link side of every elastic joint)."""
    data = robot_to_dict(robot)
    for link in data["links"]:
        link.pop("drive", None)
    return robot_from_dict(data)


def one_link(drive, gravity=(0.0, 0.0, -9.81)):
    """One rigid link turning about z (gravity along the axis: no gravity stiffness)."""
    body = fm.RigidBody(mass=2.0, com=[-0.2, 0.0, 0.0], inertia=[0.01, 0.02, 0.03])
    link = fm.Link(a=0.5, body=body, armature=0.005, drive=fm.Drive(**drive))
    return fm.Robot(links=[link], name="one_link", gravity=list(gravity))


def test_coordinates_are_named_and_laid_out_after_the_flexible_ones():
    robot = with_drives(fm.examples.load("flx_three_link"), {1: {"gear_ratio": 50.0, "rotor_inertia": 1e-4,
                                                                  "stiffness": 1e3}})
    plain = fm.examples.load("flx_three_link")
    assert robot.nq == plain.nq + 1 and robot.n_joints == 3 and robot.nf == plain.nf
    assert robot.coordinate_names == plain.coordinate_names + ["q2_motor"]
    assert robot.motor_links == (1,) and robot.actuated == (0, plain.nq, 2)
    assert robot.flex_index == plain.flex_index and robot.motor_index == slice(plain.nq, plain.nq + 1)


def test_a_rigid_link_on_a_spring_has_the_two_inertia_frequency():
    """w^2 = k (1/J + 1/B): J the link's inertia about the axis (Izz + m r^2 + armature),
    B = n^2 J_rotor; the other mode is the free rotation of both together."""
    n, J_rotor, k = 50.0, 4e-5, 500.0
    robot = one_link({"gear_ratio": n, "rotor_inertia": J_rotor, "stiffness": k})
    J, B = 0.03 + 2.0 * 0.3 ** 2 + 0.005, n * n * J_rotor
    w = robot.natural_frequencies()
    assert w[0] == pytest.approx(0.0, abs=1e-6)
    assert w[1] == pytest.approx(np.sqrt(k * (1.0 / J + 1.0 / B)), rel=1e-12)
    np.testing.assert_allclose(robot.mass_matrix(np.zeros(2)), np.diag([J, B]), rtol=1e-13, atol=1e-15)


def test_a_clamped_beam_on_a_spring_equals_the_assembled_linear_model():
    """A 1 m beam (three clamped-free modes in the plane of the joint) on an elastic joint: the
    free frequencies equal those of the beam's modal model assembled independently
    (tests/beam_oracle.py), with the rotor B on its own coordinate and the spring k (theta - q)."""
    L, rho, EI, Ia = 1.0, 2.0, 50.0, 0.2
    n, J_rotor, k = 30.0, 1e-4, 300.0
    beam = fm.Beam(length=L, mass_per_length=rho, EI=(EI, EI), modes={"y": 3, "z": 0, "torsion": 0},
                   shapes="clamped_free")
    drive = fm.Drive(gear_ratio=n, rotor_inertia=J_rotor, stiffness=k)
    robot = fm.Robot(links=[fm.Link(a=L, beam=beam, armature=Ia, drive=drive)], name="beam_on_spring",
                     gravity=[0, 0, 0])
    M, K = planar_matrices([(L, rho, EI)], [True], root_inertia=Ia, modes=3)
    m = len(M)  # [joint, modes]; the motor appended
    M_all, K_all = np.zeros((m + 1, m + 1)), np.zeros((m + 1, m + 1))
    M_all[:m, :m], K_all[:m, :m] = M, K
    M_all[m, m] = n * n * J_rotor
    e = np.zeros(m + 1)
    e[0], e[m] = -1.0, 1.0
    K_all += k * np.outer(e, e)
    expected = np.sqrt(np.clip(eigh(K_all, M_all, eigvals_only=True), 0.0, None))
    got = robot.natural_frequencies()
    assert got[0] == pytest.approx(0.0, abs=1e-5) and expected[0] == pytest.approx(0.0, abs=1e-5)
    np.testing.assert_allclose(got[1:], expected[1:], rtol=1e-9)
    # with the joint held, the motor vibrates on its spring alone: sqrt(k / B) among the beam's modes
    locked = fm.analysis.natural_frequencies(robot, joints="locked")
    assert np.min(np.abs(locked - np.sqrt(k / (n * n * J_rotor)))) < 1e-9 * np.sqrt(k / (n * n * J_rotor))


def test_mass_matrix_and_forces_are_the_link_sides_plus_the_motor_and_spring():
    """M = blockdiag(M_link, B); b gains -s on the joint and s + n^2 b theta_dot on the motor,
    s = k (theta - q) + d (theta_dot - q_dot); the joint torque acts on the motor (S)."""
    drives = {0: {"gear_ratio": 80.0, "rotor_inertia": 3e-5, "stiffness": 900.0, "damping": 0.4, "viscous": 2e-4},
              2: {"gear_ratio": -40.0, "rotor_inertia": 5e-5, "stiffness": 400.0}}
    robot = with_drives(fm.examples.load("flx_three_link"), drives)
    plain = link_side(robot)
    rng = np.random.default_rng(4)
    n0, nm = plain.nq, robot.nq
    q, qd, qdd = rng.uniform(-0.5, 0.5, nm), rng.uniform(-0.5, 0.5, nm), rng.uniform(-1, 1, nm)
    M_expected = np.zeros((nm, nm))
    M_expected[:n0, :n0] = plain.mass_matrix(q[:n0])
    b_expected = np.zeros(nm)
    b_expected[:n0] = plain.bias_forces(q[:n0], qd[:n0])
    for m, (i, d) in zip(range(n0, nm), sorted(drives.items())):
        s = d["stiffness"] * (q[m] - q[i]) + d.get("damping", 0.0) * (qd[m] - qd[i])
        M_expected[m, m] = d["gear_ratio"] ** 2 * d["rotor_inertia"]
        b_expected[i] -= s
        b_expected[m] = s + d["gear_ratio"] ** 2 * d.get("viscous", 0.0) * qd[m]
    np.testing.assert_allclose(robot.mass_matrix(q), M_expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(robot.bias_forces(q, qd), b_expected, rtol=0, atol=1e-10)
    tau = np.array([1.5, -0.7, 0.3])
    S = np.zeros((nm, 3))
    S[[n0, 1, n0 + 1], [0, 1, 2]] = 1.0
    qdd_expected = np.linalg.solve(M_expected, S @ tau - b_expected)
    np.testing.assert_allclose(robot.forward_dynamics(q, qd, tau), qdd_expected, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(robot.inverse_dynamics(q, qd, qdd), M_expected @ qdd + b_expected, atol=1e-10)


@pytest.mark.parametrize("formulation", ["lagrange", "newton_euler"])
def test_other_formulations_trace_the_same_motor_terms(formulation):
    """The energy-based Lagrangian (M from the kinetic energy, b from Christoffel symbols and the
    spring's potential, dampers added) and a rigid arm's Newton-Euler request (traced by Book's
    recursion for elastic joints) give the numeric model's M and b."""
    robot = with_drives(fm.examples.load("dynaman_2r"), {
        0: {"gear_ratio": 30.0, "rotor_inertia": 2e-4, "stiffness": 150.0, "damping": 0.3, "viscous": 1e-3},
        1: {"gear_ratio": 20.0, "rotor_inertia": 1e-4, "stiffness": 80.0}})
    fast = fm.derive(robot, formulation=formulation).compile("numpy")
    rng = np.random.default_rng(2)
    for _ in range(3):
        q, qd = rng.uniform(-1, 1, robot.nq), rng.uniform(-1, 1, robot.nq)
        np.testing.assert_allclose(fast.mass_matrix(q), robot.mass_matrix(q), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(fast.bias_forces(q, qd), robot.bias_forces(q, qd), rtol=1e-10, atol=1e-10)


def test_a_stiff_spring_converges_to_the_rigid_joint():
    """As k grows, the frequencies other than the joint's own mode tend to those of the same
    arm behind a rigid transmission (the rotor as armature); the error falls as 1/k."""
    rigid_drive = {"gear_ratio": 60.0, "rotor_inertia": 5e-5}
    base = fm.examples.load("flx_three_link")
    rigid = with_drives(base, {0: rigid_drive, 1: rigid_drive}).natural_frequencies()
    errors = []
    for k in (1e4, 1e5, 1e6, 1e7):
        spring = dict(rigid_drive, stiffness=k)
        w = with_drives(base, {0: spring, 1: spring}).natural_frequencies()
        errors.append(np.max(np.abs(w[:len(rigid)] / np.maximum(rigid, 1.0) - rigid / np.maximum(rigid, 1.0))))
    errors = np.array(errors)
    assert np.all(errors[1:] < 0.2 * errors[:-1]), errors
    assert errors[-1] < 1e-4, errors


def test_a_stiff_spring_converges_to_the_rigid_joint_in_a_simulated_move():
    """The two-link arm driven by the same joint torques behind elastic joints: the links' motion
    approaches that behind a rigid transmission as k grows (the spring's windup ~ tau / k)."""
    rigid_drive = {"gear_ratio": 40.0, "rotor_inertia": 1e-4}
    base = fm.examples.load("dynaman_2r")

    def run(drive):
        robot = with_drives(base, {0: drive, 1: drive})
        res = fm.simulate(robot, 0.15, dt=2.5e-4, torque=[3.0, -1.0], backend="numeric", method="rk4", progress=False)
        return res.q[:, :2]

    reference = run(rigid_drive)
    assert np.ptp(reference[:, 0]) > 0.02  # the arm moves
    errors = [np.max(np.abs(run(dict(rigid_drive, stiffness=k)) - reference)) for k in (1e3, 1e4, 1e5)]
    assert errors[0] > 1e-4, errors  # the spring is felt
    assert errors[1] < 0.25 * errors[0] and errors[2] < 0.25 * errors[1], errors


def test_an_undamped_elastic_arm_conserves_the_energy_assembled_from_its_parts():
    """No friction, no damping, no torque: the link side's energy (from the arm without drives)
    plus B theta_dot^2 / 2 plus k (theta - q)^2 / 2 stays constant over the run."""
    drives = {0: {"gear_ratio": 50.0, "rotor_inertia": 1e-4, "stiffness": 200.0},
              1: {"gear_ratio": 30.0, "rotor_inertia": 1e-4, "stiffness": 120.0}}
    robot = with_drives(fm.examples.load("dynaman_2r"), drives)
    plain = link_side(robot)
    q0 = np.array([0.3, -0.2, 0.5, -0.5])
    res = fm.simulate(robot, 0.3, dt=2e-4, q0=q0, backend="numeric", method="rk4", progress=False)
    q, qd = res.q, res.qd
    energy = plain.kinetic_energy(q[:, :2], qd[:, :2]) + plain.potential_energy(q[:, :2])
    for m, (i, d) in zip((2, 3), sorted(drives.items())):
        B = d["gear_ratio"] ** 2 * d["rotor_inertia"]
        energy = energy + 0.5 * B * qd[:, m] ** 2 + 0.5 * d["stiffness"] * (q[:, m] - q[:, i]) ** 2
    assert np.ptp(plain.kinetic_energy(q[:, :2], qd[:, :2])) > 1e-3  # energy flows between the parts
    assert np.ptp(energy) < 1e-8 * max(1.0, abs(energy[0])), np.ptp(energy)
    np.testing.assert_allclose(robot.kinetic_energy(q[::300], qd[::300]) + robot.potential_energy(q[::300]),
                               energy[::300], rtol=1e-12)


def test_statics_winds_the_motor_up_by_the_torque_over_the_stiffness():
    """Held at q_r under gravity and a tip load, the motor stands at q + tau / k, and the state
    balances the first-order model's forces: b(q, 0) = S tau (link and beam rows zero)."""
    drives = {1: {"gear_ratio": 50.0, "rotor_inertia": 1e-4, "stiffness": 2e4},
              2: {"gear_ratio": 50.0, "rotor_inertia": 1e-4, "stiffness": 5e3}}
    robot = with_drives(fm.examples.load("flx_three_link"), drives)
    plain = link_side(robot)
    q_r, wrench = np.array([0.2, 0.4, -0.3]), np.array([0.0, 5.0, -20.0, 0.0, 0.0, 0.0])
    res = fm.analysis.statics(robot, q_r, wrench, order=1)
    ref = fm.analysis.statics(plain, q_r, wrench, order=1)
    np.testing.assert_allclose(res.torques, ref.torques, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(res.q[:plain.nq], ref.q, rtol=1e-12, atol=1e-15)
    for m, (i, d) in zip(range(plain.nq, robot.nq), sorted(drives.items())):
        assert res.q[m] == pytest.approx(q_r[i] + res.torques[i] / d["stiffness"], rel=1e-12)
    S = np.zeros((robot.nq, 3))
    S[list(robot.actuated), [0, 1, 2]] = 1.0
    f_ext = [(-1, None, wrench)]
    balance = robot.inverse_dynamics(res.q, np.zeros(robot.nq), np.zeros(robot.nq), f_ext=f_ext) - S @ res.torques
    assert np.max(np.abs(balance)) < 1e-8 * np.max(np.abs(res.torques))


def test_pid_fmu_with_elastic_joints_equals_the_interpreted_loop(tmp_path):
    """The FMU's built-in PID puts its torques on the motor coordinates as the loops do."""
    from fmpy import simulate_fmu

    robot = with_drives(fm.examples.load("dynaman_2r"), {
        0: {"gear_ratio": 40.0, "rotor_inertia": 1e-4, "stiffness": 400.0, "damping": 0.2},
        1: {"gear_ratio": 40.0, "rotor_inertia": 1e-4, "stiffness": 300.0}})
    zero = np.zeros(2)
    hold = lambda t: (zero, zero, zero)  # noqa: E731  (what the FMU's set-point inputs, left at 0, give)
    pid = fm.control.PID(robot, hold, [30.0, 20.0], [2.0, 1.0], [4.0, 3.0])
    q0 = np.array([0.3, -0.2, 0.25, -0.1])
    path = fm.derive(robot).fmu(tmp_path / "elastic.fmu", kind="cs", controller=pid, step_size=1e-3, q0=q0)
    out = simulate_fmu(str(path), stop_time=0.1, output_interval=1e-3)
    ref = fm.simulate(robot, 0.1, dt=1e-3, q0=q0, controller=pid, backend="numeric", progress=False)
    got = np.column_stack([out[name] for name in robot.coordinate_names])
    rows = [int(np.argmin(abs(ref.t - t))) for t in out["time"]]
    assert np.max(np.abs(got - ref.q[rows])) < 1e-9
    assert np.max(np.abs(ref.q[-1] - ref.q[0])) > 0.05


def test_round_trip_keeps_the_drive(tmp_path):
    robot = with_drives(fm.examples.load("flx_three_link"), {
        0: {"gear_ratio": -25.0, "rotor_inertia": 2e-4, "stiffness": 3e3, "damping": 0.5, "coulomb": 0.01}})
    back = fm.load(fm.save(robot, tmp_path / "elastic.yaml"))
    assert back.links[0].drive == robot.links[0].drive and back.content_key() == robot.content_key()
    softer = with_drives(robot, {0: dict(robot_to_dict(robot)["links"][0]["drive"], stiffness=2e3)})
    assert softer.content_key() != robot.content_key()


def test_model_based_laws_and_prescribed_motion_are_refused_in_one_line():
    robot = with_drives(fm.examples.load("dynaman_2r"), {0: {"gear_ratio": 40.0, "rotor_inertia": 1e-4,
                                                             "stiffness": 400.0}})
    traj = fm.trajectory.rest_to_rest(np.zeros(2), np.ones(2), 0.5)
    for law in (lambda: fm.control.ComputedTorque(robot, traj, 10.0, 5.0),
                lambda: fm.control.Decoupling(robot, traj, 10.0, 5.0)):
        with pytest.raises(ValueError, match=r"controller: .* joints q1 are elastic .*use PID") as info:
            law()
        assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match=r"prescribed: prescribed joint motion is not supported with elastic"):
        fm.simulate(robot, 0.1, prescribed=traj, progress=False)


TWO_JOINT_URDF = """<?xml version="1.0"?>
<robot name="geared">
  <link name="base"/>
  <link name="upper"><inertial><origin xyz="0.2 0 0"/><mass value="1.5"/>
    <inertia ixx="0.001" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="fore"><inertial><origin xyz="0.15 0 0"/><mass value="0.8"/>
    <inertia ixx="0.001" iyy="0.004" izz="0.004" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="tool"/>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="10" velocity="1"/></joint>
  <joint name="elbow" type="continuous"><parent link="upper"/><child link="fore"/>
    <origin xyz="0.4 0 0"/><axis xyz="0 0 1"/></joint>
  <joint name="tool_joint" type="fixed"><parent link="fore"/><child link="tool"/><origin xyz="0.3 0 0"/></joint>
  {transmissions}
</robot>
"""
NEW_SYNTAX = """<transmission name="t_elbow"><type>transmission_interface/SimpleTransmission</type>
    <joint name="elbow"><hardwareInterface>hardware_interface/EffortJointInterface</hardwareInterface></joint>
    <actuator name="m_elbow"><mechanicalReduction>{n}</mechanicalReduction></actuator></transmission>"""
OLD_SYNTAX = """<transmission name="t_shoulder" type="pr2_mechanism_model/SimpleTransmission">
    <joint name="{joint}"/><actuator name="m_shoulder"/><mechanicalReduction>{n}</mechanicalReduction></transmission>"""


def _urdf(tmp_path, transmissions, name="geared"):
    path = tmp_path / f"{name}.urdf"
    path.write_text(TWO_JOINT_URDF.replace("{transmissions}", transmissions))
    return path


def test_urdf_transmissions_give_gear_ratios_and_an_overlay_the_rotor_and_spring(tmp_path):
    path = _urdf(tmp_path, NEW_SYNTAX.format(n=80) + OLD_SYNTAX.format(joint="shoulder", n=-50))
    robot = fm.load(path)
    assert [link.drive.gear_ratio for link in robot.links] == [-50.0, 80.0]
    plain = fm.load(_urdf(tmp_path, "", "plain"))
    q = np.array([0.3, -0.7])
    np.testing.assert_allclose(robot.mass_matrix(q), plain.mass_matrix(q), rtol=0, atol=0)  # no rotor yet
    overlay = {"links": {"upper": {"drive": {"rotor_inertia": 2e-5}},
                         "fore": {"drive": {"rotor_inertia": 3e-5, "stiffness": 600.0, "damping": 0.1}}}}
    geared = fm.load(path, overlay=overlay)
    assert geared.links[1].drive == fm.Drive(gear_ratio=80.0, rotor_inertia=3e-5, stiffness=600.0, damping=0.1)
    assert geared.coordinate_names[-1] == "elbow_motor" and geared.nq == 3  # (a URDF joint names its coordinate)
    expected = np.zeros((3, 3))
    expected[:2, :2] = plain.mass_matrix(q)
    expected[0, 0] += 50.0 ** 2 * 2e-5
    expected[2, 2] = 80.0 ** 2 * 3e-5
    np.testing.assert_allclose(geared.mass_matrix(np.r_[q, 0.1]), expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("transmission, message", [
    (OLD_SYNTAX.format(joint="tool_joint", n=10), "t_shoulder (a fixed joint 'tool_joint')"),
    (OLD_SYNTAX.format(joint="wrist", n=10), "t_shoulder (no joint 'wrist')"),
    (OLD_SYNTAX.format(joint="shoulder", n="ten"), "t_shoulder (reduction 'ten')"),
    (OLD_SYNTAX.format(joint="shoulder", n=0), "t_shoulder (reduction '0')"),
])
def test_transmissions_that_are_no_gear_ratio_are_named_in_one_line(tmp_path, capfd, transmission, message):
    """Real descriptions carry transmissions of fixed fingers and the like (the Kinova arm of
    example-robot-data): the file loads, without that drive, and one line names them."""
    robot = fm.load(_urdf(tmp_path, transmission))
    err = [line for line in capfd.readouterr().err.splitlines() if "transmission" in line]
    assert len(err) == 1 and message in err[0] and "not read as gear ratios" in err[0]
    assert all(link.drive is None for link in robot.links)
