"""URDF import/export and the general joint placement, checked against Pinocchio's own URDF
parser (an independent reader and an independent dynamics code) on random serial chains
written here and on the bundled arms exported to URDF."""
from __future__ import annotations

import copy

import numpy as np
import pytest

import flexman as fm
from flexman.model import ModelError
from urdf_helpers import AXIS_URDF

pin = pytest.importorskip("pinocchio")

TOL = 1e-10


def _vec(v):
    return " ".join(repr(float(x)) for x in v)


def _random_inertial(rng, indent="    "):
    m = float(rng.uniform(0.2, 3.0))
    a, b, c = rng.uniform(0.02, 0.2, 3)  # second moments of a physical body: moments obey I1 + I2 >= I3
    p = [float(b + c), float(a + c), float(a + b)]
    return (
        f"{indent}<inertial>\n"
        f'{indent}  <origin xyz="{_vec(rng.uniform(-0.2, 0.2, 3))}" rpy="{_vec(rng.uniform(-np.pi, np.pi, 3))}"/>\n'
        f'{indent}  <mass value="{m!r}"/>\n'
        f'{indent}  <inertia ixx="{p[0]!r}" iyy="{p[1]!r}" izz="{p[2]!r}" ixy="0" ixz="0" iyz="0"/>\n'
        f"{indent}</inertial>\n"
    )


def random_urdf(rng, n, fixed=True):
    """A random serial chain: random origins and axes (some along coordinate axes), revolute,
    continuous and prismatic joints, inertials with their own rotated frames, and fixed joints
    with massive links between moving ones and at the tip."""
    out = ['<?xml version="1.0"?>', '<robot name="random">', '  <link name="base"/>']
    prev, k = "base", 0
    kinds = []
    for i in range(n):
        segments = [("fixed", None)] if fixed and rng.random() < 0.4 else []
        kind = rng.choice(["revolute", "continuous", "prismatic"], p=[0.5, 0.2, 0.3])
        segments.append((kind, None))
        for jtype, _ in segments:
            k += 1
            name = f"l{k}"
            out.append(f'  <link name="{name}">\n{_random_inertial(rng)}  </link>')
            axis = rng.standard_normal(3) if rng.random() < 0.5 else np.eye(3)[rng.integers(3)] * rng.choice([-1, 1])
            out.append(f'  <joint name="j{k}" type="{jtype}">')
            out.append(f'    <parent link="{prev}"/><child link="{name}"/>')
            out.append(f'    <origin xyz="{_vec(rng.uniform(-0.5, 0.5, 3))}" rpy="{_vec(rng.uniform(-np.pi, np.pi, 3))}"/>')
            if jtype != "fixed":
                out.append(f'    <axis xyz="{_vec(axis)}"/>')
            if jtype in ("revolute", "prismatic"):
                out.append('    <limit lower="-2" upper="2" effort="10" velocity="3"/>')
            out.append("  </joint>")
            prev = name
            if jtype != "fixed":
                kinds.append(jtype)
    if fixed:
        out.append(f'  <link name="tool">\n{_random_inertial(rng)}  </link>')
        out.append(f'  <joint name="jtool" type="fixed"><parent link="{prev}"/><child link="tool"/>'
                   f'<origin xyz="0.1 0.2 0.3" rpy="0.3 0.2 0.1"/></joint>')
    out.append("</robot>")
    return "\n".join(out) + "\n", kinds


def _pin_model(path, gravity=(0, 0, -9.81)):
    model = pin.buildModelFromUrdf(str(path))
    model.gravity.linear = np.asarray(gravity, float)
    return model


def _to_pin(model, q):
    """Pinocchio's configuration vector: a continuous joint takes (cos q, sin q)."""
    out = []
    for j, qi in zip(list(model.joints)[1:], q):
        out += [np.cos(qi), np.sin(qi)] if j.nq == 2 else [qi]
    return np.array(out)


def _pin_dynamics(model, q, qd, qdd):
    data = model.createData()
    qp = _to_pin(model, q)
    M = pin.crba(model, data, qp)
    M = np.triu(M) + np.triu(M, 1).T
    b = pin.nonLinearEffects(model, data, qp, qd)
    tau = pin.rnea(model, data, qp, qd, qdd)
    return M, b, tau


def _compare(robot, model, rng, trials=3):
    worst = 0.0
    for _ in range(trials):
        q, qd, qdd = (rng.uniform(-1.5, 1.5, robot.nq) for _ in range(3))
        M0, b0, t0 = _pin_dynamics(model, q, qd, qdd)
        for ours, ref in ((robot.mass_matrix(q), M0), (robot.bias_forces(q, qd), b0),
                          (robot.inverse_dynamics(q, qd, qdd), t0)):
            err = np.max(np.abs(ours - ref)) / max(1.0, np.max(np.abs(ref)))
            worst = max(worst, err)
    return worst


@pytest.mark.parametrize("seed", range(6))
def test_random_urdf_chains_match_pinocchio(tmp_path, seed):
    rng = np.random.default_rng(100 + seed)
    text, kinds = random_urdf(rng, int(rng.integers(2, 7)))
    path = tmp_path / "random.urdf"
    path.write_text(text)
    robot = fm.load(path)
    assert [l.joint for l in robot.links] == ["prismatic" if k == "prismatic" else "revolute" for k in kinds]
    assert _compare(robot, _pin_model(path), rng) < TOL


@pytest.mark.parametrize("name", ["puma560", "stanford_arm", "saha_3link", "saha_3link_modified",
                                  "dynaman_rp", "theodore_rrp", "flx_three_link"])
def test_bundled_arms_exported_to_urdf_match_pinocchio(tmp_path, name):
    """fm.save(robot, x.urdf) writes the rigid part; Pinocchio reading it agrees with flexman's
    own DH model (beams as rigid rods, no armature or friction: URDF has no place for them)."""
    robot = copy.deepcopy(fm.examples.load(name))
    for link in robot.links:
        link.armature = link.viscous = link.coulomb = 0.0
        if link.beam is not None:
            link.beam.modes = {"y": 0, "z": 0, "torsion": 0}
    robot = fm.model.serialize.robot_from_dict(fm.model.serialize.robot_to_dict(robot))
    path = fm.save(robot, tmp_path / f"{name}.urdf")
    rng = np.random.default_rng(7)
    assert _compare(robot, _pin_model(path, robot.gravity), rng) < TOL
    back = fm.load(path)  # and our own reader gives the same dynamics through placements
    back.gravity = robot.gravity
    q, qd = rng.uniform(-1, 1, robot.nq), rng.uniform(-1, 1, robot.nq)
    np.testing.assert_allclose(back.mass_matrix(q), robot.mass_matrix(q), atol=1e-11)
    np.testing.assert_allclose(back.bias_forces(q, qd), robot.bias_forces(q, qd), atol=1e-10)


def test_limits_damping_friction_are_read(tmp_path):
    text = """<robot name="r"><link name="b"/>
      <link name="a"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1"/></inertial></link>
      <joint name="j" type="revolute"><parent link="b"/><child link="a"/><axis xyz="0 0 1"/>
        <limit lower="-1.5" upper="2.5" effort="1" velocity="1"/><dynamics damping="0.3" friction="0.2"/></joint>
    </robot>"""
    path = tmp_path / "r.urdf"
    path.write_text(text)
    link = fm.load(path).links[0]
    assert link.limits == (-1.5, 2.5) and link.viscous == 0.3 and link.coulomb == 0.2
    assert link.placement.axis.tolist() == [0.0, 0.0, 1.0]


GOOD_LINK = '<link name="{n}"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1"/></inertial></link>'


def _joint(name, parent, child, kind="revolute"):
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>')


BAD = {
    "malformed": ('<robot name="r"><link name="a"></robot>', "malformed XML"),
    "entity": ('<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x "xxxx">]><robot name="r">&x;</robot>',
               "forbidden XML feature"),
    "two chains": ('<robot name="r"><link name="b"/><link name="b2"/>' + GOOD_LINK.format(n="a")
                   + _joint("j1", "b", "a") + "</robot>", "several root links (b, b2)"),
    "loop": ('<robot name="r"><link name="b"/>' + GOOD_LINK.format(n="a") + GOOD_LINK.format(n="c")
             + _joint("j1", "b", "a") + _joint("j2", "a", "c") + _joint("j3", "c", "a") + "</robot>",
             'joint name="j3">: link \'a\' is already the child of joint \'j1\''),
    "floating": ('<robot name="r"><link name="b"/>' + GOOD_LINK.format(n="a") + _joint("j1", "b", "a", "floating")
                 + "</robot>", "a floating joint is read as a free root link: remove the joint and load with floating=True"),
    "planar": ('<robot name="r"><link name="b"/>' + GOOD_LINK.format(n="a") + _joint("j1", "b", "a", "planar")
               + "</robot>", 'joint name="j1">: joint type \'planar\''),
    "bad number": ('<robot name="r"><link name="b"/>' + GOOD_LINK.format(n="a").replace('value="1"', 'value="x"')
                   + _joint("j1", "b", "a") + "</robot>", "inertial/mass: attribute value=\"x\""),
    "swapped limits": ('<robot name="r"><link name="b"/>' + GOOD_LINK.format(n="a")
                       + _joint("j1", "b", "a").replace('lower="-1" upper="1"', 'lower="3" upper="-3"') + "</robot>",
                       "limit: lower 3 is above upper -3"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_urdf_gives_one_line_naming_the_element(tmp_path, case):
    text, expected = BAD[case]
    path = tmp_path / "bad.urdf"
    path.write_text(text)
    with pytest.raises(ModelError) as info:
        fm.load(path)
    message = str(info.value)
    assert expected in message and "\n" not in message


def test_long_urdf_names_are_cut_with_a_hash_and_save_as_a_model_file():
    """A 60-character link name (URDF sets no limit; a model file's names stop at 40): cut to 40
    with a hash of the whole name, so two long names sharing their first 40 characters stay
    apart, and the robot saves and loads back as a model file with the same M."""
    from flexman.model.names import MAX_NAME
    from flexman.model.serialize import robot_from_dict, robot_to_dict
    from flexman.model.urdf import robot_from_urdf

    long_a, long_b = "x" * 59 + "a", "x" * 59 + "b"
    text = ('<robot name="r"><link name="b"/>' + GOOD_LINK.format(n=long_a) + GOOD_LINK.format(n=long_b)
            + _joint("j1", "b", long_a) + _joint("j2", long_a, long_b) + "</robot>")
    robot = robot_from_urdf(text)
    names = [link.name for link in robot.links]
    assert all(len(n) == MAX_NAME and n.startswith("x" * 31) for n in names) and names[0] != names[1]
    q = np.array([0.3, -0.2])
    again = robot_from_dict(robot_to_dict(robot))
    assert [link.name for link in again.links] == names
    np.testing.assert_allclose(again.mass_matrix(q), robot.mass_matrix(q), rtol=1e-14)


def test_implausible_inertial_is_kept_as_written_with_a_warning():
    """Principal moments (0.1, 0.1, 0.5) break the triangle inequality: read as written, as
    Pinocchio does, with one warning naming the link; a well-formed inertia beside it is not
    flagged."""
    from flexman.model.urdf import robot_from_urdf

    odd = GOOD_LINK.format(n="a").replace('izz="0.1"', 'izz="0.5"')
    text = '<robot name="r"><link name="b"/>' + odd + GOOD_LINK.format(n="c") + _joint("j1", "b", "a") + (
        _joint("j2", "a", "c") + "</robot>")
    with pytest.warns(UserWarning) as record:
        robot = robot_from_urdf(text)
    assert len(record) == 1
    assert str(record[0].message) == ('URDF: <link name="a">/inertial: inertia: principal moments [0.1 0.1 0.5] violate the '
                                      "triangle inequality (I1 + I2 >= I3); kept as written (a model file written from it "
                                      "is refused, unless fixed joints merge it into a consistent body)")
    assert [link.body.strict for link in robot.links] == [False, True]
    np.testing.assert_allclose(robot.links[0].body.inertia, np.diag([0.1, 0.1, 0.5]), rtol=1e-14)


OVERLAY = """
name: two_flexible
gravity: [0, 0, -9.81]
links:
  a:
    beam: {length: 0.5, mass_per_length: 2.0, EI: 50.0, modes: {y: 2, z: 1}}
"""


def test_overlay_turns_a_urdf_link_into_a_beam(tmp_path):
    text = ('<robot name="r"><link name="b"/>' + GOOD_LINK.format(n="a") + GOOD_LINK.format(n="c")
            + _joint("j1", "b", "a") + _joint("j2", "a", "c").replace('<axis', '<origin xyz="0.5 0 0"/><axis')
            + "</robot>")
    urdf = tmp_path / "r.urdf"
    urdf.write_text(text)
    (tmp_path / "o.yaml").write_text(OVERLAY)
    robot = fm.load(urdf, overlay=tmp_path / "o.yaml")
    assert robot.name == "two_flexible" and robot.nq == 5 and robot.links[0].beam.modes["y"] == 2
    (tmp_path / "f.yaml").write_text(f"urdf: r.urdf\n{OVERLAY}")
    same = fm.load(tmp_path / "f.yaml")  # the overlay as a model file naming its URDF
    q, qd = np.linspace(-0.5, 0.5, 5), np.linspace(0.3, -0.2, 5)
    np.testing.assert_array_equal(same.mass_matrix(q), robot.mass_matrix(q))
    M = robot.mass_matrix(q)
    assert np.allclose(M, M.T) and np.linalg.eigvalsh(M).min() > 0
    tau = np.array([0.4, -0.3])
    qdd = robot.forward_dynamics(q, qd, tau)
    np.testing.assert_allclose(robot.inverse_dynamics(q, qd, qdd)[:2], tau, atol=1e-10)
    (tmp_path / "bad.yaml").write_text("links: {nope: {beam: {length: 1, mass_per_length: 1}}}\n")
    with pytest.raises(ModelError, match=r"links.nope: no moving link or joint of that name; links: a, c; joints: j1, j2"):
        fm.load(urdf, overlay=tmp_path / "bad.yaml")


def test_placement_model_file_round_trips_and_validates(tmp_path):
    rng = np.random.default_rng(3)
    text, _ = random_urdf(rng, 4)
    (tmp_path / "r.urdf").write_text(text)
    robot = fm.load(tmp_path / "r.urdf")
    path = fm.save(robot, tmp_path / "r.yaml")
    back = fm.load(path)
    q = rng.uniform(-1, 1, robot.nq)
    np.testing.assert_allclose(back.mass_matrix(q), robot.mass_matrix(q), rtol=0, atol=1e-13)
    bad = path.read_text().replace("placement:", "a: 0.1\n  placement:", 1)
    path.write_text(bad)
    with pytest.raises(ModelError, match=r"links\[0\].a: a link with a placement takes no DH values"):
        fm.load(path)


def test_placement_symbolic_and_generated_code_match_numeric(tmp_path):
    rng = np.random.default_rng(11)
    text, _ = random_urdf(rng, 3)
    (tmp_path / "r.urdf").write_text(text)
    robot = fm.load(tmp_path / "r.urdf")
    q, qd, qdd = (rng.uniform(-1, 1, robot.nq) for _ in range(3))
    for parameters in ("numeric", "symbolic"):
        fast = fm.derive(robot, parameters=parameters).compile("numpy")
        np.testing.assert_allclose(fast.mass_matrix(q), robot.mass_matrix(q), atol=1e-10)
        np.testing.assert_allclose(fast.inverse_dynamics(q, qd, qdd), robot.inverse_dynamics(q, qd, qdd), atol=1e-10)


def test_cli_reads_an_overlay_file_and_refuses_a_bad_urdf_in_one_line(tmp_path):
    import json
    import subprocess
    import sys

    text = ('<robot name="r"><link name="b"/>' + GOOD_LINK.format(n="a") + GOOD_LINK.format(n="c")
            + _joint("j1", "b", "a") + _joint("j2", "a", "c").replace('<axis', '<origin xyz="0.5 0 0"/><axis')
            + "</robot>")
    (tmp_path / "r.urdf").write_text(text)
    (tmp_path / "f.yaml").write_text(f"urdf: r.urdf\n{OVERLAY}")
    run = [sys.executable, "-m", "flexman.cli"]
    out = subprocess.run(run + ["info", str(tmp_path / "f.yaml"), "--json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["nq"] == 5 and info["links"][1]["placement"]["xyz"] == [0.5, 0.0, 0.0]
    (tmp_path / "bad.urdf").write_text(BAD["floating"][0])
    out = subprocess.run(run + ["info", str(tmp_path / "bad.urdf")], capture_output=True, text=True)
    assert out.returncode == 2 and "a floating joint is read as a free root link" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("name", ["ur5_like", "panda_like"])
def test_bundled_urdf_arms_match_pinocchio(name):
    """The shipped URDFs read by Pinocchio and by flexman give the same dynamics."""
    from flexman.examples import DATA

    robot = fm.examples.load(name)
    assert robot.nq == {"ur5_like": 6, "panda_like": 7}[name]
    assert _compare(robot, _pin_model(DATA / f"{name}.urdf"), np.random.default_rng(5)) < TOL


def test_flexible_ur5_like_is_the_urdf_with_two_beams():
    robot = fm.examples.load("ur5_like_flexible")
    rigid = fm.examples.load("ur5_like")
    assert robot.n_joints == 6 and robot.nf == 4
    assert [l.is_flexible for l in robot.links] == [False, True, True, False, False, False]
    rng = np.random.default_rng(2)
    q, qd = rng.uniform(-1, 1, robot.nq), rng.uniform(-1, 1, robot.nq)
    q[6:] *= 1e-3  # millimetre deflections: the elastic forces stay of the order of the torques
    M = robot.mass_matrix(q)
    assert np.allclose(M, M.T, atol=1e-12) and np.linalg.eigvalsh(M).min() > 0
    tau = rng.uniform(-5, 5, 6)
    qdd = robot.forward_dynamics(q, qd, tau)
    np.testing.assert_allclose(robot.inverse_dynamics(q, qd, qdd)[:6], tau, atol=1e-9)
    # the wrist joints carry the same bodies as in the rigid arm: the URDF placements are shared
    for i in (0, 3, 4, 5):
        np.testing.assert_array_equal(robot.links[i].placement.xyz, rigid.links[i].placement.xyz)


# ----- overlay beam.axis: the beam along any direction of the link frame --------------------------


def _axis_overlay(beam, **link):
    return {"links": {"a": {"beam": beam, **link}}}


@pytest.mark.parametrize("axis", [[0, 0, -1], [0, 1, 0], [-1, 0, 0], [0.3, -0.5, 0.8]])
def test_overlay_beam_axis_is_only_a_change_of_frame(tmp_path, axis):
    """A stiff beam along ``axis`` at rest: the rigid URDF (with the beam as a thin rod along
    ``axis`` added to the link's body) in M, b and frames, to 1e-9."""
    from flexman.model import RigidBody
    from flexman.model.urdf import _beam_turn, apply_overlay

    (tmp_path / "r.urdf").write_text(AXIS_URDF)
    rigid = fm.load(tmp_path / "r.urdf")
    L, mu = 0.4, 1.5
    beam = {"length": L, "mass_per_length": mu, "EI": 1e9, "modes": {"y": 1, "z": 1}, "axis": axis}
    flex = apply_overlay(rigid, _axis_overlay(beam))
    u = np.asarray(axis, float) / np.linalg.norm(axis)
    rod = RigidBody(mu * L, 0.5 * L * u, mu * L**3 / 12 * (np.eye(3) - np.outer(u, u)))
    rigid.links[0].body = RigidBody.from_second_moments(rigid.links[0].body.pseudo_inertia() + rod.pseudo_inertia())
    R = np.eye(4)
    R[:3, :3] = _beam_turn(axis, "axis")
    assert np.allclose(R[:3, :3] @ [1, 0, 0], np.asarray(axis) / np.linalg.norm(axis))
    rng = np.random.default_rng(4)
    for _ in range(3):
        qj, qd = rng.uniform(-1, 1, 2), rng.uniform(-1, 1, 2)
        q, qdf = np.zeros(flex.nq), np.zeros(flex.nq)
        q[flex.joint_index], qdf[flex.joint_index] = qj, qd
        M, Mr = flex.mass_matrix(q)[:2, :2], rigid.mass_matrix(qj)
        np.testing.assert_allclose(M, Mr, rtol=0, atol=1e-9 * np.abs(Mr).max())
        b, br = flex.bias_forces(q, qdf)[flex.joint_index], rigid.bias_forces(qj, qd)
        np.testing.assert_allclose(b, br, rtol=0, atol=1e-9 * np.abs(br).max())
        np.testing.assert_allclose(flex.frame(q, 0), rigid.frame(qj, 0) @ R, atol=1e-12)  # F' = F R
        np.testing.assert_allclose(flex.frame(q, 1), rigid.frame(qj, 1), atol=1e-12)  # the next link unchanged


def test_overlay_beam_axis_is_the_same_robot_as_a_turned_urdf(tmp_path):
    """The link's frame turned in the URDF itself, beam along x: the same flexible robot."""
    from flexman.model.rotations import matrix_rpy, rpy_matrix
    from flexman.model.urdf import _beam_turn, apply_overlay

    axis = [0.2, 0.4, -1.0]
    R = _beam_turn(axis, "axis")
    (tmp_path / "r.urdf").write_text(AXIS_URDF)
    rigid = fm.load(tmp_path / "r.urdf")

    def fmt(v):
        return " ".join(repr(float(x)) for x in v)

    j1, inert, j2 = (matrix_rpy(rpy_matrix([0.2, 0.4, -0.3])[:3, :3] @ R), matrix_rpy(R.T @ rpy_matrix([0.3, -0.2, 0.1])[:3, :3]),
                     matrix_rpy(R.T @ rpy_matrix([-0.5, 0.1, 0.7])[:3, :3]))
    turned = (AXIS_URDF.replace('rpy="0.2 0.4 -0.3"', f'rpy="{fmt(j1)}"')
              .replace('<axis xyz="0 1 0"/>', f'<axis xyz="{fmt(R.T @ [0, 1, 0])}"/>')
              .replace('xyz="0.05 -0.02 -0.2" rpy="0.3 -0.2 0.1"', f'xyz="{fmt(R.T @ [0.05, -0.02, -0.2])}" rpy="{fmt(inert)}"')
              .replace('xyz="0.03 0.01 -0.4" rpy="-0.5 0.1 0.7"', f'xyz="{fmt(R.T @ [0.03, 0.01, -0.4])}" rpy="{fmt(j2)}"'))
    (tmp_path / "t.urdf").write_text(turned)
    beam = {"length": 0.4, "mass_per_length": 2.0, "EI": 300.0, "modes": {"y": 2, "z": 1}}
    a = apply_overlay(rigid, _axis_overlay({**beam, "axis": axis}, hub={"mass": 0.5, "offset": [0.0, 0.02, -0.05]}))
    b = apply_overlay(fm.load(tmp_path / "t.urdf"),
                      _axis_overlay(beam, hub={"mass": 0.5, "offset": list(R.T @ [0.0, 0.02, -0.05])}))
    rng = np.random.default_rng(8)
    q, qd = rng.uniform(-1, 1, a.nq) * np.r_[1, 1, 1e-2, 1e-2, 1e-2], rng.uniform(-1, 1, a.nq)
    Ma, Mb = a.mass_matrix(q), b.mass_matrix(q)
    np.testing.assert_allclose(Ma, Mb, rtol=0, atol=1e-9 * np.abs(Mb).max())
    ba, bb = a.bias_forces(q, qd), b.bias_forces(q, qd)
    np.testing.assert_allclose(ba, bb, rtol=0, atol=1e-9 * np.abs(bb).max())


def test_overlay_beam_along_minus_z_sags_like_a_cantilever(tmp_path):
    """Beam along -z of its frame, held horizontal (along world +x): static tip sag q L^4 / (8 EI) down."""
    from flexman.model.urdf import apply_overlay

    text = ('<robot name="r"><link name="b"/>' + GOOD_LINK.format(n="a")
            + '<joint name="j1" type="revolute"><parent link="b"/><child link="a"/>'
            f'<origin xyz="0 0 1" rpy="0 {-np.pi / 2!r} 0"/><axis xyz="0 1 0"/></joint></robot>')
    (tmp_path / "r.urdf").write_text(text)
    L, mu, EI = 0.8, 2.0, 1.0e4
    beam = {"length": L, "mass_per_length": mu, "EI": EI, "modes": {"y": 4, "z": 4}, "axis": [0, 0, -1]}
    robot = apply_overlay(fm.load(tmp_path / "r.urdf"), _axis_overlay(beam, mass=0.0))
    f = np.arange(1, robot.nq)
    q, zero = np.zeros(robot.nq), np.zeros(robot.nq)
    for _ in range(3):  # Newton on the elastic rows with the joint held: b_f(q) = 0
        b0 = robot.bias_forces(q, zero)[f]
        K = np.empty((len(f), len(f)))
        for k, j in enumerate(f):
            dq = q.copy()
            dq[j] += 1e-7
            K[:, k] = (robot.bias_forces(dq, zero)[f] - b0) / 1e-7
        q[f] -= np.linalg.solve(K, b0)
    tip = np.array([L, 0, 0, 1.0])  # the beam's tip in the link's (turned) frame
    sag = (robot.frame(q, 0) @ tip - robot.frame(zero, 0) @ tip)[:3]
    w = mu * 9.81 * L**4 / (8 * EI)
    assert abs(sag[2] + w) < 1e-3 * w, (sag, w)  # down, by the closed form
    assert abs(sag[0]) < 1e-3 * w and abs(sag[1]) < 1e-3 * w
    np.testing.assert_allclose(robot.frame(zero, 0)[:3, :3] @ [1, 0, 0], [1, 0, 0], atol=1e-12)  # horizontal


def test_overlay_beam_axis_default_is_x(tmp_path):
    from flexman.model.serialize import robot_to_dict
    from flexman.model.urdf import apply_overlay

    (tmp_path / "r.urdf").write_text(AXIS_URDF)
    rigid = fm.load(tmp_path / "r.urdf")
    beam = {"length": 0.4, "mass_per_length": 2.0, "EI": 300.0, "modes": {"y": 2, "z": 1}}
    plain = apply_overlay(rigid, _axis_overlay(beam))
    for axis in ([1, 0, 0], [2.5, 0, 0]):
        same = apply_overlay(rigid, _axis_overlay({**beam, "axis": axis}))
        assert robot_to_dict(same) == robot_to_dict(plain)
        q = np.linspace(-0.4, 0.6, plain.nq)
        np.testing.assert_array_equal(same.mass_matrix(q), plain.mass_matrix(q))


@pytest.mark.parametrize("axis", [[0, 0, 0], [1, 0], [1, 0, 0, 0], ["x", 0, 0], [True, 0, 0], "z", None,
                                  [float("nan"), 0, 1], [1e-12, 0, 0]])
def test_overlay_bad_beam_axis_is_one_line(tmp_path, axis):
    from flexman.model.urdf import apply_overlay

    (tmp_path / "r.urdf").write_text(AXIS_URDF)
    beam = {"length": 0.4, "mass_per_length": 2.0, "EI": 300.0, "axis": axis}
    with pytest.raises(ModelError) as info:
        apply_overlay(fm.load(tmp_path / "r.urdf"), _axis_overlay(beam))
    message = str(info.value)
    assert message.startswith("links.a.beam.axis: must be 3 numbers") and "\n" not in message


def test_overlay_axis_of_a_400_digit_integer_is_one_line(tmp_path):
    """Issue 34: an overlay beam axis [0, 0, 10**400] raised OverflowError; overlays are now
    checked value by value as model files are."""
    from flexman.model.urdf import apply_overlay

    (tmp_path / "r.urdf").write_text(AXIS_URDF)
    beam = {"length": 0.4, "mass_per_length": 2.0, "EI": 300.0, "axis": [0, 0, 10**400]}
    with pytest.raises(ModelError, match=r"^links\.a\.beam\.axis\[2\]: the integer 100000000000\.\.\. \(401 "
                                         r"digits\) is too large for a float; use a number below 1e308$"):
        apply_overlay(fm.load(tmp_path / "r.urdf"), _axis_overlay(beam))


def test_inverted_limits_are_refused_like_a_model_files(tmp_path):
    """<limit lower="3" upper="-3"> was dropped silently while a model file's [3, -3] is refused."""
    text = ('<?xml version="1.0"?><robot name="r"><link name="base"/><link name="a"><inertial><mass value="1"/>'
            '<inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>'
            '<joint name="j" type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/>'
            '<limit lower="3" upper="-3" effort="1" velocity="1"/></joint></robot>')
    path = tmp_path / "r.urdf"
    path.write_text(text)
    with pytest.raises(fm.ModelError, match=r'<joint name="j">/limit: lower 3 is above upper -3; swap them') as info:
        fm.load(path)
    assert "\n" not in str(info.value)
    path.write_text(text.replace('lower="3" upper="-3"', 'lower="0" upper="0"'))
    assert fm.load(path).links[0].limits is None  # lower = upper: no limits, as URDFs write them


def test_urdf_without_inertials_loads_for_kinematics_only(capfd):
    """A kinematic URDF (no <inertial> anywhere): frames work, M is zero, so what needs its
    inverse is refused in the one sentence the load printed (naming the joint)."""
    from flexman.model.urdf import robot_from_urdf

    robot = robot_from_urdf('<robot name="r"><link name="b"/><link name="a"/>' + _joint("j1", "b", "a") + "</robot>")
    err = capfd.readouterr().err
    assert err.count("flexman: warning:") == 1 and "coordinates j1 (links a)" in err
    np.testing.assert_allclose(robot.inverse_dynamics([0.3], [0.1], [0.2]), [0.0], atol=1e-15)
    with pytest.raises(ModelError) as info:
        robot.forward_dynamics([0.3], [0.1], [0.0])
    assert str(info.value) == robot.singular_mass and "\n" not in str(info.value)
