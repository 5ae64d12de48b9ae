"""A URDF robot as it is: its joint names name the coordinates, its named frames (``tool0``, the
Panda's ``panda_hand``) serve as the end effector of simulations, reports, sweeps, plans, statics
and FMU outputs, and sweep and overlay paths take link and joint names. Oracles: Pinocchio's
frame placements of the same files (``updateFramePlacements``), and the URDF text itself."""
from __future__ import annotations

import numpy as np
import pytest

import flexman as fm
from flexman import ModelError
from flexman.model.urdf import urdf_identifier
from urdf_helpers import ROBOTS, pin_q, pinocchio_floating, pinocchio_reduced

pin = pytest.importorskip("pinocchio")
needs_erd = pytest.mark.skipif(ROBOTS is None, reason="example-robot-data is not installed")
UR5 = "ur_description/urdf/ur5_robot.urdf"
PANDA = "panda_description/urdf/panda.urdf"
FOREARM = {"links": {"forearm_link": {
    "beam": {"length": 0.39225, "mass_per_length": 0.98, "EI": 1.07e4, "modes": {"y": 1, "z": 1}, "axis": [0, 0, 1]},
    "mass": 1.0, "com": [0.39225, 0.0, 0.0], "inertia": [0.002, 0.002, 0.0018]}}}


def _pin_frame(path, q_full, name):
    model = pin.buildModelFromUrdf(str(path))
    data = model.createData()
    pin.forwardKinematics(model, data, pin_q(model, q_full))
    pin.updateFramePlacements(model, data)
    return data.oMf[model.getFrameId(name)].homogeneous


@needs_erd
@pytest.mark.parametrize("rel, frame", [(UR5, "tool0"), (UR5, "ee_link"), (PANDA, "panda_hand"),
                                        (PANDA, "panda_hand_tcp")])
def test_named_frame_placement_equals_pinocchio(rel, frame):
    robot = fm.load(ROBOTS / rel)
    q = np.random.default_rng(3).uniform(-1, 1, robot.nq)
    G, c = robot.mimic_map() if getattr(robot, "mimic", None) else (np.eye(robot.nq), np.zeros(robot.nq))
    ref = _pin_frame(ROBOTS / rel, G @ q + c, frame)
    assert np.abs(robot.frame(q, frame) - ref).max() < 1e-12
    # the end effector named once serves every consumer: the report's dot and the tip offsets
    from flexman.viz.arm import arm_lines

    ee = robot.with_end_effector(frame)
    np.testing.assert_allclose(arm_lines(ee, q).tip[0], ref[:3, 3], atol=1e-12)


@needs_erd
def test_coordinates_carry_the_urdf_joint_names_and_survive_a_model_file(tmp_path):
    robot = fm.load(ROBOTS / UR5, overlay=FOREARM)
    model = pin.buildModelFromUrdf(str(ROBOTS / UR5))
    joints = [model.names[j] for j in range(1, model.njoints)]
    assert robot.coordinate_names == joints + ["forearm_link_ey1", "forearm_link_ez1"]
    fm.save(robot, tmp_path / "ur5.yaml")
    assert fm.load(tmp_path / "ur5.yaml").coordinate_names == robot.coordinate_names
    res = fm.simulate(robot, 0.01, dt=1e-3, method="rk4", ee_frame="tool0")
    assert res.coordinate_names == robot.coordinate_names
    assert set(robot.coordinate_names) <= set(res.to_pandas().columns)
    assert res.columns()[1:9] == robot.coordinate_names
    fm.save(robot, tmp_path / "ur5.urdf")  # the URDF written back keeps the joint names
    assert fm.load(tmp_path / "ur5.urdf").coordinate_names == joints
    # model-file robots keep their names
    assert fm.examples.load("flx_three_link").coordinate_names[:3] == ["q1", "q2", "q3"]


@needs_erd
def test_end_effector_from_an_overlay_drives_the_tip_figures(tmp_path):
    """end_effector: tool0 in the overlay: tip_offset, statics' loaded point and the rigid tip path
    of a plan are tool0's; an unknown name is refused in one line listing the names."""
    from flexman.analysis.tip import tip_offset

    robot = fm.load(ROBOTS / UR5, overlay={**FOREARM, "end_effector": "tool0"})
    assert robot.end_effector == "tool0"
    q = np.zeros(robot.nq)
    q[:6] = [0.1, -0.8, 0.9, 0.2, 0.3, 0.4]
    q[6:] = [0.01, -0.02]
    rigid = q.copy()
    rigid[6:] = 0.0
    expected = robot.frame(q, "tool0")[:3, 3] - robot.frame(rigid, "tool0")[:3, 3]
    np.testing.assert_allclose(tip_offset(robot, q), expected, atol=1e-15)
    assert np.abs(tip_offset(robot, q) - tip_offset(robot, q, link=-1)).max() > 1e-4  # not the last link's
    st = fm.analysis.statics(robot, q[:6], wrench=[0, 0, -10, 0, 0, 0])
    np.testing.assert_allclose(st.position, robot.frame(st.q, "tool0", order=2)[:3, 3], atol=1e-12)
    fm.save(robot, tmp_path / "ur5.yaml")
    assert fm.load(tmp_path / "ur5.yaml").end_effector == "tool0"
    with pytest.raises(ModelError) as info:
        fm.load(ROBOTS / UR5, overlay={"end_effector": "tool9"})
    assert "tool0" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ValueError, match="ee_frame: .*tool0"):
        fm.simulate(robot, 0.01, ee_frame="tool9")


@needs_erd
def test_statics_wrench_at_tool0_matches_the_jacobian_transpose():
    """Rigid UR5 with no gravity and a force at tool0: the holding torques are -J(tool0)^T f,
    with J from Pinocchio's frame Jacobian (world-aligned)."""
    robot = fm.load(ROBOTS / UR5).with_end_effector("tool0")
    robot.gravity = np.zeros(3)
    q = np.array([0.1, -0.8, 0.9, 0.2, 0.3, 0.4])
    f = np.array([3.0, -2.0, 5.0, 0.1, 0.2, -0.3])
    st = fm.analysis.statics(robot, q, wrench=f)
    model = pin.buildModelFromUrdf(str(ROBOTS / UR5))
    data = model.createData()
    J = pin.computeFrameJacobian(model, data, q, model.getFrameId("tool0"), pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
    np.testing.assert_allclose(np.asarray(st.torques).reshape(-1), -J.T @ f, atol=1e-10)


@needs_erd
def test_sweep_and_overlay_paths_take_link_and_joint_names():
    from flexman.sweeps import SweepError, apply
    from flexman.model.serialize import robot_to_dict

    robot = fm.load(ROBOTS / UR5, overlay=FOREARM)
    data = robot_to_dict(robot)
    by_name = apply(robot_to_dict(robot), "links.forearm_link.beam.EI", 2e4)
    by_joint = apply(robot_to_dict(robot), "links.elbow_joint.beam.EI", 2e4)
    by_index = apply(data, "links.2.beam.EI", 2e4)
    assert by_name == by_index == by_joint
    with pytest.raises(SweepError) as info:
        apply(robot_to_dict(robot), "links.forarm_link.beam.EI", 2e4)
    message = str(info.value)
    assert "forearm_link" in message and "elbow_joint" in message and "\n" not in message
    # overlays: a joint's name selects the link it moves
    a = fm.load(ROBOTS / UR5, overlay={"links": {"elbow_joint": FOREARM["links"]["forearm_link"]}})
    b = fm.load(ROBOTS / UR5, overlay=FOREARM)
    q = np.random.default_rng(0).uniform(-1, 1, b.nq)
    np.testing.assert_array_equal(a.mass_matrix(q), b.mass_matrix(q))
    with pytest.raises(ModelError, match="elbow_joint"):
        fm.load(ROBOTS / UR5, overlay={"links": {"elbow": {"mass": 1.0}}})


@needs_erd
def test_panda_mimic_coordinates_are_its_independent_joints():
    robot = fm.load(ROBOTS / PANDA)
    _, free, _, _ = pinocchio_reduced(ROBOTS / PANDA)
    assert robot.coordinate_names == [urdf_identifier(n) for n in free]


@needs_erd
def test_fmu_outputs_tool0_as_pinocchio_places_it(tmp_path, capsys):
    """`flexman export UR5 --fmu --output-frame tool0 --output-frame ee_link`: at the start state
    the FMU's tool0_x ... tool0_r33 are Pinocchio's placement of tool0; the end-effector outputs
    (ee_x...) follow the model's end_effector; an unknown frame is one line, exit 2."""
    import fmpy
    from flexman.cli import main

    model = tmp_path / "ur5.yaml"
    model.write_text(f"urdf: {ROBOTS / UR5}\nend_effector: tool0\n")
    path = tmp_path / "ur5.fmu"
    assert main(["export", str(model), "--fmu", str(path), "--output-frame", "tool0", "--output-frame",
                 "ee_link"]) == 0
    robot = fm.load(model)
    q = np.array([0.3, -0.7, 1.1, -0.4, 0.5, 0.2])
    outputs = ["ee_x", "ee_y", "ee_z"] + [f"tool0_{c}" for c in ("x", "y", "z", "r11", "r12", "r13", "r21", "r22",
                                                                   "r23", "r31", "r32", "r33")]
    res = fmpy.simulate_fmu(str(path), fmi_type="ModelExchange", start_values=dict(zip(robot.coordinate_names, q)),
                            stop_time=1e-4, output=outputs, output_interval=1e-4, solver="Euler", step_size=1e-4)
    ref = _pin_frame(ROBOTS / UR5, q, "tool0")
    got = np.array([res[0][n] for n in outputs])
    np.testing.assert_allclose(got[3:6], ref[:3, 3], atol=1e-12)
    np.testing.assert_allclose(got[6:].reshape(3, 3), ref[:3, :3], atol=1e-12)
    np.testing.assert_allclose(got[:3], ref[:3, 3], atol=1e-12)  # the model's end effector is tool0
    capsys.readouterr()
    assert main(["export", str(model), "--fmu", str(tmp_path / "b.fmu"), "--output-frame", "tool9"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--output-frame" in err and "tool0" in err and len(err.splitlines()) == 1


def test_frequencies_take_joint_only_or_full_q_alike():
    """natural_frequencies(q) with n_joints values is the same as with the flexible coordinates
    zero appended (as `flexman frequencies --q` takes it); the locked spectrum also."""
    robot = fm.examples.load("flx_three_link")
    joints = np.array([0.2, -0.4, 0.5])[:robot.n_joints]
    full = np.concatenate([joints, np.zeros(robot.nf)])
    for kind in ("free", "locked"):
        np.testing.assert_array_equal(fm.analysis.natural_frequencies(robot, joints, joints=kind),
                                      fm.analysis.natural_frequencies(robot, full, joints=kind))
    np.testing.assert_array_equal(robot.natural_frequencies(joints), robot.natural_frequencies(full))


@needs_erd
def test_info_on_a_urdf_robot_lists_its_joints_not_a_dh_table(capsys):
    from flexman.cli import main

    assert main(["info", str(ROBOTS / UR5)]) == 0
    out = capsys.readouterr().out
    assert "DH" not in out and "elbow_joint" in out and "forearm_link" in out and "upper_arm_link" in out
    import defusedxml.ElementTree as ET

    for joint in ET.parse(ROBOTS / UR5).getroot().findall("joint"):  # each moving joint: a row with its axis
        if joint.get("type") != "fixed":
            axis = " ".join(f"{float(v):g}" for v in joint.find("axis").get("xyz").split())
            row = next(line for line in out.splitlines() if f" {joint.get('name')} " in line)
            assert axis in row and joint.find("child").get("link") in row


@needs_erd
def test_sweep_refuses_unknown_link_names_and_frames_before_it_starts(tmp_path):
    from flexman.sweeps import SweepError

    robot = fm.load(ROBOTS / UR5, overlay=FOREARM)
    with pytest.raises(SweepError) as info:
        fm.sweep(robot, {"links.forearm.beam.EI": [1e4]}, out=tmp_path / "a.parquet")
    assert "forearm_link" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(SweepError) as info:
        fm.sweep(robot, {"links.forearm_link.beam.EI": [1e4]}, run={"frame": "tool9"}, out=tmp_path / "b.parquet")
    assert str(info.value).startswith("run.frame: ") and "tool0" in str(info.value)


@needs_erd
def test_a_legged_robot_as_it_is_names_feet_simulation_and_report(tmp_path):
    """Issue 35 with a legged robot (Solo-12 of example-robot-data, freed at its base): coordinates
    named by the URDF (the base's six, then the joints), a foot frame placed as Pinocchio places it
    (its composite root PX PY PZ RZ RY RX is flexman's base) to 1e-12, and that foot as the end
    effector of a short fall under gravity and of its report, whose scene carries the robot's meshes."""
    path = ROBOTS / "solo_description/robots/solo12.urdf"
    robot = fm.load(path, floating=True)
    assert robot.coordinate_names[:7] == ["base_link_x", "base_link_y", "base_link_z", "base_link_yaw",
                                          "base_link_pitch", "base_link_roll", "FL_HAA"]
    assert {"FL_FOOT", "HR_FOOT"} <= set(robot.frames)
    model = pinocchio_floating(path)
    data = model.createData()
    q = np.random.default_rng(5).uniform(-1, 1, robot.nq)
    pin.framesForwardKinematics(model, data, pin_q(model, q))
    assert np.abs(robot.frame(q, "FL_FOOT") - data.oMf[model.getFrameId("FL_FOOT")].homogeneous).max() < 1e-12
    res = fm.simulate(robot, 0.02, dt=1e-3, q0=q, ee_frame="FL_FOOT", backend="numeric", progress=False)
    assert res.robot.end_effector == "FL_FOOT"
    fall = res.q[-1, 2] - q[2]  # the base falls freely (no contact model): z drops by g t^2 / 2
    assert abs(fall + 0.5 * 9.81 * 0.02 ** 2) < 1e-6
    import re

    page = res.report(tmp_path / "solo.html").read_text()
    drawn = re.findall(r'"triangles": ?(\d+)', page)  # the meshes' scene: thinned to the report's budget
    assert len(robot.visuals) == 17 and drawn and 5000 < int(drawn[0]) <= 30000


@needs_erd
def test_a_tip_path_plan_names_tool0_as_its_end_effector():
    """Issue 35: fm.plan(..., objective="tip_path", ee_frame="tool0") on the UR5 with a flexible
    forearm plans about tool0: the plan's robot has tool0 as its end effector, plan.tip() is tool0
    (8 cm beyond the last link's frame), and its end stays where Pinocchio puts tool0 for the goal
    joints, within the forearm's static sag (tenths of a millimetre)."""
    robot = fm.load(ROBOTS / UR5, overlay=FOREARM)
    goal = [0.4, -0.5, 0.6, 0.0, 0.3, 0.0]
    plan = fm.plan(robot, np.zeros(6), goal, duration=1.0, objective="tip_path", knots=20, ee_frame="tool0")
    assert plan.report["success"] and plan.robot.end_effector == "tool0"
    tip = plan.tip()
    np.testing.assert_allclose(tip, robot.frame(plan.q, "tool0")[:, :3, 3], atol=1e-14)
    assert np.linalg.norm(tip - robot.frame(plan.q, -1)[:, :3, 3], axis=1).min() > 0.05
    end = _pin_frame(ROBOTS / UR5, np.array(goal), "tool0")[:3, 3]
    assert np.linalg.norm(tip[-1] - end) < 1e-3
