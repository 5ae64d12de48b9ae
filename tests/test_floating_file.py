"""``joint: floating`` in model files: a root link declared floating flies on the six coordinates
of :mod:`flexman.model.floating` (x, y, z, yaw, pitch, roll). A free-floating flexible arm written
as a model file equals the URDF path (``fm.load(urdf, floating=True)`` with an overlay), conserves
linear and angular momentum in free flight, and round-trips through fm.save as one floating link;
a floating joint anywhere but on a root is refused in one line."""
from __future__ import annotations

import numpy as np
import pytest

import flexman as fm
from flexman import ModelError
from flexman.model.serialize import robot_from_dict, robot_to_dict
from test_trees import SATELLITE
from urdf_helpers import free_flight_momenta

MODEL = """
name: sat
gravity: [0, 0, 0]
links:
  - name: bus
    joint: floating
    mass: 20
    com: [0.05, 0, 0]
    inertia: [2, 2.5, 3, 0.1, 0, 0]
  - name: boom
    placement: {xyz: [0.5, 0, 0.2], axis: [0, 0, 1]}
    limits: [-3, 3]
    mass: 0.2
    com: [1.0, 0, 0]
    inertia: [1.0e-4, 1.0e-4, 1.0e-4]
    beam: {length: 1.0, mass_per_length: 1.0, EI: 200.0, modes: {y: 1, z: 1}}
  - name: hand
    placement: {xyz: [1.0, 0, 0], axis: [0, 1, 0]}
    limits: [-3, 3]
    mass: 0.5
    com: [0.1, 0, 0]
    inertia: [0.001, 0.002, 0.002]
frames:
  camera: {link: bus, xyz: [0, 0.3, 0], rpy: [0, 0, 1]}
"""
OVERLAY = {"gravity": [0, 0, 0], "links": {"boom": {
    "beam": {"length": 1.0, "mass_per_length": 1.0, "EI": 200.0, "modes": {"y": 1, "z": 1}},
    "mass": 0.2, "com": [1.0, 0, 0], "inertia": [1e-4, 1e-4, 1e-4]}}}


def _model(tmp_path, text=MODEL):
    path = tmp_path / "sat.yaml"
    path.write_text(text)
    return fm.load(path)


def test_a_floating_model_file_equals_the_urdf_floating_path(tmp_path):
    robot = _model(tmp_path)
    assert robot.nq == 10 and [link.name for link in robot.links] == [
        "bus_x", "bus_y", "bus_z", "bus_yaw", "bus_pitch", "bus", "boom", "hand"]
    urdf = tmp_path / "sat.urdf"
    urdf.write_text(SATELLITE)
    ref = fm.load(urdf, overlay=OVERLAY, floating=True)
    rng = np.random.default_rng(4)
    for _ in range(3):
        q, qd = rng.uniform(-1, 1, 10), rng.uniform(-1, 1, 10)
        q[8:] *= 0.01
        np.testing.assert_allclose(robot.mass_matrix(q), ref.mass_matrix(q), rtol=0, atol=1e-12)
        np.testing.assert_allclose(robot.bias_forces(q, qd), ref.bias_forces(q, qd), rtol=0, atol=1e-12)
        np.testing.assert_allclose(robot.frame(q, "camera"), ref.frame(q, "camera"), rtol=0, atol=1e-14)
    # the pose of the floating body: Trans(x, y, z) Rz(yaw) Ry(pitch) Rx(roll)
    from flexman.model.rotations import rpy_matrix

    T = robot.frame(q, "bus")
    np.testing.assert_allclose(T[:3, 3], q[:3], atol=1e-14)
    np.testing.assert_allclose(T[:3, :3], rpy_matrix([q[5], q[4], q[3]])[:3, :3], atol=1e-14)


def test_free_floating_flexible_model_file_conserves_momentum(tmp_path):
    """No gravity, no torques, RK4 at 0.2 ms for 0.04 s: linear momentum (the generalized momenta
    of x, y, z) and angular momentum about the base origin (the momentum along a rigid rotation of
    everything about each axis) constant to 1e-10."""
    robot = _model(tmp_path)

    rng = np.random.default_rng(1)
    q0, qd0 = rng.uniform(-0.5, 0.5, robot.nq), rng.uniform(-0.5, 0.5, robot.nq)
    q0[8:] *= 0.01
    res = fm.simulate(robot, 0.04, dt=2e-4, method="rk4", q0=q0, qd0=qd0, backend="numeric")
    (l0, a0), (l1, a1) = (free_flight_momenta(robot, res.q[k], res.qd[k]) for k in (0, -1))
    assert np.abs(res.q[-1] - res.q[0]).max() > 1e-3  # it moved
    assert np.abs(l1 - l0).max() < 1e-10 * np.abs(l0).max()
    assert np.abs(a1 - a0).max() < 1e-10 * np.abs(a0).max()


@pytest.mark.parametrize("fmt", ["yaml", "toml", "json"])
def test_a_floating_base_round_trips_as_one_link(tmp_path, fmt):
    """fm.save writes the six links back as one ``joint: floating`` link, for a model file and for
    a URDF loaded with floating=True alike; the robot read back is the same."""
    urdf = tmp_path / "sat.urdf"
    urdf.write_text(SATELLITE)
    for robot in (_model(tmp_path), fm.load(urdf, overlay=OVERLAY, floating=True)):
        again = fm.load(fm.save(robot, tmp_path / f"again.{fmt}"))
        items = robot_to_dict(again)["links"]
        assert [item.get("joint") for item in items] == ["floating", "revolute", "revolute"]
        assert [link.name for link in again.links] == [link.name for link in robot.links]
        q = np.random.default_rng(2).uniform(-0.5, 0.5, robot.nq)
        np.testing.assert_array_equal(again.mass_matrix(q), robot.mass_matrix(q))
        np.testing.assert_array_equal(again.frame(q, "camera"), robot.frame(q, "camera"))


def _data(**floating):
    bus = {"name": "bus", "joint": "floating", "mass": 5.0, "inertia": [0.1, 0.1, 0.1], **floating}
    arm = {"name": "arm", "joint": "revolute", "a": 0.5, "mass": 1.0, "com": [-0.25, 0, 0], "inertia": [1e-3, 0.02, 0.02]}
    return bus, arm


def test_floating_on_a_second_root_and_children_by_index(tmp_path):
    """A floating body after a fixed-base arm (parent: base), whose child names it by its index as
    written: the child hangs from the floating body (indices past it are moved by five)."""
    bus, arm = _data(parent="base")
    first = dict(arm, name="first")
    child = dict(arm, name="child", parent=1)
    robot = robot_from_dict({"name": "two", "gravity": [0, 0, 0], "links": [first, bus, child]})
    names = [link.name for link in robot.links]
    assert names == ["first", "bus_x", "bus_y", "bus_z", "bus_yaw", "bus_pitch", "bus", "child"]
    assert robot.parents[names.index("child")] == names.index("bus")


@pytest.mark.parametrize("links, message", [
    (lambda bus, arm: [arm, bus], "links[1].joint: a floating joint joins a root link to the base only"),
    (lambda bus, arm: [arm, dict(bus, parent="arm")], "links[1].joint: a floating joint joins a root link to the base only"),
    (lambda bus, arm: [{k: v for k, v in bus.items() if k != "name"}, arm], "links[0].name: a floating link needs a name"),
    (lambda bus, arm: [dict(bus, limits=[-1, 1]), arm], "links[0].limits: unknown field"),
])
def test_a_floating_joint_off_a_root_is_one_line(links, message):
    with pytest.raises(ModelError) as info:
        robot_from_dict({"name": "x", "links": links(*_data())})
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_link_named_like_a_generated_floating_coordinate_is_refused(tmp_path):
    """Issue 34: a link 'bus_x' beside the floating link 'bus' (which names its x coordinate link
    bus_x) made frame(q, 'bus_x') return the generated link; now the model file, the URDF and
    Python link lists are refused in one line naming the clash."""
    text = MODEL.replace("  - name: hand\n", "  - name: bus_x\n")
    with pytest.raises(ModelError, match=r"^.*two links are named 'bus_x' \(a floating link 'bus' names its "
                                         r"coordinate links bus_x \.\.\. bus_pitch\); give every link its own name$"):
        _model(tmp_path, text)
    urdf = tmp_path / "sat.urdf"
    urdf.write_text(SATELLITE.replace('"hand"', '"bus_yaw"'))
    with pytest.raises(ModelError, match="two links are named 'bus_yaw'"):
        fm.load(urdf, floating=True)
    assert fm.load(urdf).n_joints == 2  # not floating: no generated names, no clash
    from flexman.model.floating import floating_links

    from flexman.model.robot import Placement

    links = floating_links(fm.RigidBody(1.0, inertia=[0.1, 0.1, 0.1]), "bus") + [
        fm.Link(name="bus_pitch", parent="bus", joint="revolute", placement=Placement())]
    with pytest.raises(ModelError, match="two links are named 'bus_pitch'"):
        fm.Robot(links=links)


def test_parent_base_beside_a_link_named_base_is_refused_and_saved_files_avoid_it(tmp_path):
    """Issue 34: with a link named 'base', 'parent: base' could mean either; it is refused in
    one line. A URDF whose floating root is named 'base' (ANYmal's) still loads, and fm.save
    writes its references by index so that the file loads back to the same robot."""
    text = MODEL.replace("name: bus\n", "name: base\n").split("frames:")[0]
    text = text.replace("  - name: hand\n", "  - name: hand\n    parent: base\n")
    with pytest.raises(ModelError, match=r"^.*link 'hand': its parent 'base' is ambiguous, a link is named 'base' "
                                         r"too; rename that link \('base' is the robot's base\)$"):
        _model(tmp_path, text)
    urdf = tmp_path / "sat.urdf"
    urdf.write_text(SATELLITE.replace('"bus"', '"base"'))
    robot = fm.load(urdf, floating=True)
    assert robot.links[5].name == "base" and robot.frames["camera"][0] == 5
    fm.save(robot, tmp_path / "again.yaml")
    again = fm.load(tmp_path / "again.yaml")
    q = np.random.default_rng(3).uniform(-1, 1, robot.nq)
    assert robot.parents == again.parents and robot.frames["camera"][0] == again.frames["camera"][0]
    assert np.allclose(robot.mass_matrix(q), again.mass_matrix(q), atol=1e-12)
