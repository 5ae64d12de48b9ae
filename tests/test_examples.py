"""The bundled examples: they load, have the documented sizes and masses, and are physical.

Every rigid body (link body, hub, payload) must have its centre of mass inside the link's
extent (a popular Stanford-arm copy has a cm/m slip)
and principal moments that satisfy the triangle inequality.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import flexman as fm
from flexman import examples

EXPECTED_NAMES = [
    "dynaman_2r",
    "dynaman_rp",
    "flx_double_pendulum",
    "flx_flexible_pendulum",
    "flx_joint_mass",
    "flx_rigid_pendulum",
    "flx_three_link",
    "flx_three_link_lqr",
    "krb_spinup",
    "panda_like",
    "piedboeuf_one_link",
    "puma560",
    "saha_3link",
    "saha_3link_modified",
    "stanford_arm",
    "theodore_rrp",
    "theodore_rrp_fem",
    "ur5_like",
    "ur5_like_flexible",
]

NQ = {
    "dynaman_2r": 2,
    "dynaman_rp": 2,
    "flx_rigid_pendulum": 1,
    "flx_double_pendulum": 2,
    "flx_flexible_pendulum": 3,  # joint + fundamental mode in each bending plane
    "flx_joint_mass": 3,
    "flx_three_link": 7,  # 000 sec. 3.3.5, p. 68: "7 degrees of freedom in total"
    "flx_three_link_lqr": 7,  # the same arm
    "krb_spinup": 5,  # hub angle + 4 in-plane bending modes (chosen)
    "panda_like": 7,
    "ur5_like": 6,
    "ur5_like_flexible": 6 + 2 * 2,  # two beams, one mode in each bending plane
    "piedboeuf_one_link": 6,  # 001 sec. 3.5: the motor angle and five polynomial shapes
    "puma560": 6,
    "stanford_arm": 6,
    "saha_3link": 3,
    "saha_3link_modified": 3,
    # 004 sec. 4.4: spatial case, 2 flexible links, m = 2 modes / elements each:
    "theodore_rrp": 2 * 2 * 2 + 3,  # assumed modes: 2 m n_f + n = 11
    "theodore_rrp_fem": 4 * 2 * 2 + 3,  # finite elements: 4 m n_f + n = 19
}

# 000 Table 3.1 (p. 44): the FLX link, m = 10.955 kg, a = 4.0 m, E = 2.0e11 Pa, I = 1.476e-7 m^4
FLX_MASS, FLX_LENGTH, FLX_EI = 10.955, 4.0, 2.0e11 * 1.476e-7

# Link masses (link bodies, beams counted with their link; hubs excluded), kg.
MASSES = {
    # 002 Appendix B (p. 24): two equal links of mass m; m = 1 kg chosen (symbolic there)
    "dynaman_2r": [1.0, 1.0],
    # 002 Appendix C (p. 25): disc m_d and rod m_r (symbolic there; 5 kg and 1 kg chosen)
    "dynaman_rp": [5.0, 1.0],
    "flx_rigid_pendulum": [FLX_MASS],
    "flx_double_pendulum": [FLX_MASS, FLX_MASS],
    "flx_flexible_pendulum": [FLX_MASS],
    "flx_joint_mass": [FLX_MASS],
    "flx_three_link": [10.0, FLX_MASS, FLX_MASS],  # link-1 rotor chosen (not in the thesis)
    "flx_three_link_lqr": [10.0, FLX_MASS, FLX_MASS],
    # Kane, Ryan & Banerjee 1987: rho A = 1.2 kg/m over L = 10 m
    "krb_spinup": [12.0],
    # 001 Table 1: beam rho l = 0.650 * 0.7845 kg plus the tool m_t = 0.1608 kg
    "piedboeuf_one_link": [0.650 * 0.7845 + 0.1608],
    # Armstrong, Khatib & Burdick 1986 via Corke 1996 (puma560.m): m1 = 0 (not measured)
    "puma560": [0.0, 17.4, 4.8, 0.82, 0.34, 0.09],
    # Paul 1981 Table 6.5 via Corke 1996 (stanford.m)
    "stanford_arm": [9.29, 5.01, 4.25, 1.08, 0.63, 0.51],
    "saha_3link": [10.0, 8.0, 2.0],  # chosen (003 is symbolic)
    "saha_3link_modified": [10.0, 8.0, 2.0],
    # 004 Table 3: m1 = 3.7051, m2 = 0.3310, m3 = 0.4303 kg
    "theodore_rrp": [3.7051, 0.3310, 0.4303],
    "theodore_rrp_fem": [3.7051, 0.3310, 0.4303],
    # Universal Robots' UR5 dynamics table (examples/generate_urdf.py)
    "ur5_like": [3.7, 8.393, 2.275, 1.219, 1.219, 0.1879],
    # tip housings 2.0 and 1.0 kg plus aluminium tubes 1.64 kg/m x 0.425 m and 0.98 kg/m x 0.39225 m (chosen)
    "ur5_like_flexible": [3.7, 2.0 + 1.64 * 0.425, 1.0 + 0.98 * 0.39225, 1.219, 1.219, 0.1879],
    # Gaz et al. 2019, identified masses (examples/generate_urdf.py)
    "panda_like": [4.970684, 0.646926, 3.228604, 3.587895, 1.225946, 1.666555, 0.735522],
}


def link_masses(robot):
    out = []
    for link in robot.links:
        m = link.body.mass
        if link.beam is not None:
            m += link.beam.length * link.beam.mass_per_length
        out.append(m)
    return out


# ----- geometry helpers ------------------------------------------------------------------------
from flexman.dynamics.dh import rot_x as _rot_x, rot_z as _rot_z, trans as _trans  # noqa: E402


def reference_q(link) -> float:
    """The joint value at which a link's extent is measured: 0 for a revolute joint, the
    largest travel for a prismatic one (its body extends as far back as the joint runs)."""
    if link.joint == "prismatic" and link.limits is not None:
        return float(link.limits[1])
    return 0.0


def dh_transform(link, q, convention):
    if link.placement is not None:  # a URDF-style link: A = P J(q) N (flexman.dynamics.dh)
        from flexman.dynamics.dh import joint_motion, split

        P, N, _ = split(link, convention)
        return P @ joint_motion(np.array(q), link.joint == "revolute") @ N
    theta = link.theta + (q if link.joint == "revolute" else 0.0)
    d = link.d + (q if link.joint == "prismatic" else 0.0)
    if convention == "standard":
        return _rot_z(theta) @ _trans(z=d) @ _trans(x=link.a) @ _rot_x(link.alpha)
    return _rot_x(link.alpha) @ _trans(x=link.a) @ _rot_z(theta) @ _trans(z=d)


def extent_box(robot, i):
    """Axis-aligned box in link i's own frame spanned by its two joint points (the frame
    origin and the previous frame's origin), grown by a quarter of the robot's reach."""
    link = robot.links[i]
    A = dh_transform(link, reference_q(link), robot.dh)
    previous = -A[:3, :3].T @ A[:3, 3]
    if link.placement is not None:  # a URDF frame sits at its joint: the link reaches to the next joint
        after = robot.links[i + 1].placement if i + 1 < len(robot.links) else None
        previous = after.xyz if after is not None else np.zeros(3)
    points = np.array([np.zeros(3), previous])
    reach = sum(abs(l.a) + abs(l.d) + abs(reference_q(l)) + (np.linalg.norm(l.placement.xyz) if l.placement else 0)
                for l in robot.links)
    margin = 0.25 * reach
    return points.min(axis=0) - margin, points.max(axis=0) + margin


def rigid_bodies(robot):
    """(link index, label, RigidBody) of every rigid body: link bodies, hubs, payload."""
    out = []
    for i, link in enumerate(robot.links):
        out.append((i, f"links[{i}] body", link.body))
        if link.hub is not None:
            out.append((i, f"links[{i}] hub", link.hub))
    if robot.payload is not None:
        out.append((len(robot.links) - 1, "payload", robot.payload))
    return out


def implausible(robot):
    """Messages for every rigid body that is not physical (empty when all are)."""
    problems = []
    for i, label, body in rigid_bodies(robot):
        lo, hi = extent_box(robot, i)
        if body.mass > 0 and not (np.all(body.com >= lo) and np.all(body.com <= hi)):
            problems.append(f"{label}: centre of mass {body.com} outside [{lo}, {hi}]")
        eig = np.linalg.eigvalsh(body.inertia)
        tol = 1e-9 * max(1e-12, abs(eig).max())
        if eig.min() < -tol or eig[0] + eig[1] < eig[2] - tol:
            problems.append(f"{label}: principal moments {eig} violate the triangle inequality")
    return problems


# ----- the registry ----------------------------------------------------------------------------
def test_names_lists_all_bundled_files():
    assert examples.names() == EXPECTED_NAMES
    assert sorted(NQ) == EXPECTED_NAMES and sorted(MASSES) == EXPECTED_NAMES


@pytest.mark.parametrize("name", EXPECTED_NAMES)
def test_path_description_and_source(name):
    path = examples.path(name)
    assert path.is_file() and path.suffix == ".yaml"
    assert path.parent.name == "data" and path.parent.parent.name == "examples"
    text = examples.describe(name)
    assert text and "\n" not in text
    robot = examples.load(name)
    assert robot.name == name
    assert robot.description == text
    sources = robot.source if isinstance(robot.source, list) else [robot.source]
    cited = " ".join(sources)
    # a document, where in it (table, figure, section, appendix) and page(s)
    assert re.search(r"\b([Tt]ables?|Figs?\.|sec\.|Appendix) ", cited), cited
    if "EPM-RT-93-17" not in cited:  # 001's text carries no page numbers: cited by section, table, equation
        assert re.search(r"\bpp?\. \d", cited), cited
    else:
        assert re.search(r"\beqs?\. \d", cited), cited


def test_unknown_name_is_a_model_error():
    with pytest.raises(fm.ModelError, match=r"unknown example 'nope'; available: dynaman_2r, "):
        examples.load("nope")
    with pytest.raises(fm.ModelError, match="unknown example"):
        examples.path("nope")


def test_top_level_load_accepts_an_example_name():
    robot = fm.load("flx_three_link")
    assert robot.nq == 7


@pytest.mark.parametrize("name", EXPECTED_NAMES)
def test_example_loads_with_documented_size(name):
    robot = examples.load(name)
    assert robot.nq == NQ[name]
    assert len(robot.coordinate_names) == robot.nq


@pytest.mark.parametrize("name", EXPECTED_NAMES)
def test_masses_match_documents(name):
    robot = examples.load(name)
    np.testing.assert_allclose(link_masses(robot), MASSES[name], rtol=0, atol=5e-5)


@pytest.mark.parametrize("name", EXPECTED_NAMES)
def test_every_rigid_body_is_plausible(name):
    robot = examples.load(name)
    assert implausible(robot) == []


@pytest.mark.parametrize("name", EXPECTED_NAMES)
def test_mass_matrix_is_symmetric_positive_definite(name):
    robot = examples.load(name)
    rng = np.random.default_rng(7)
    q = np.zeros((4, robot.nq))
    q[:, : robot.n_joints] = rng.uniform(-1.0, 1.0, (4, robot.n_joints))
    for j, link in enumerate(robot.links):
        if link.limits is not None:
            q[:, j] = rng.uniform(*link.limits, 4)
    M = robot.mass_matrix(q)
    np.testing.assert_allclose(M, np.swapaxes(M, -1, -2), atol=1e-12 * np.abs(M).max())
    assert np.all(np.linalg.eigvalsh(M) > 0)


# ----- the plausibility check itself catches the known slips -----------------------------------
def test_plausibility_check_catches_the_stanford_cm_slip():
    """roboticstoolbox's Stanford copy has offsets 10x too large for links 2, 3, 5, 6."""
    robot = examples.load("stanford_arm")
    for i in (1, 2, 4):  # links 2, 3, 5 as in the toolbox copy
        robot.links[i].body.com = robot.links[i].body.com * 10.0
    problems = implausible(robot)
    assert len(problems) == 3 and all("centre of mass" in p for p in problems)


def test_triangle_inequality_rejects_the_tabulated_puma_link3_inertia():
    """Corke's standard-DH Puma table gives link 3 (0.066, 0.086, 0.0125) kg m^2."""
    with pytest.raises(fm.ModelError, match="triangle"):
        fm.RigidBody(mass=4.8, inertia=[0.066, 0.086, 0.0125])


# ----- document values carried into the files -------------------------------------------------
@pytest.mark.parametrize("name", ["flx_flexible_pendulum", "flx_joint_mass", "flx_three_link"])
def test_flx_beams_are_the_table_3_1_link(name):
    robot = examples.load(name)
    beams = [link.beam for link in robot.links if link.beam is not None]
    assert beams
    for beam in beams:
        assert beam.length == FLX_LENGTH
        assert beam.mass_per_length * beam.length == pytest.approx(FLX_MASS, rel=1e-12)
        assert beam.EI == pytest.approx((FLX_EI, FLX_EI), rel=1e-12)  # 29520 N m^2
        assert beam.shapes == "clamped_free"
        assert beam.modes == {"y": 1, "z": 1, "torsion": 0}


def test_flx_three_link_layout_and_controller():
    robot = examples.load("flx_three_link")
    assert not robot.links[0].is_flexible  # link 1 rigid (000 sec. 3.3.5)
    assert robot.links[0].a == 0.0 and robot.links[0].d == 0.0  # zero length
    assert robot.links[1].is_flexible and robot.links[2].is_flexible
    ctrl = robot.controller
    assert ctrl["type"] == "pid" and ctrl["off_at"] == 0.5  # switched off at 0.5 s
    for key in ("kp", "ki", "kd"):
        assert len(ctrl[key]) == robot.n_joints
    assert ctrl["trajectory"]["type"] == "spline"


@pytest.mark.parametrize("name", ["theodore_rrp", "theodore_rrp_fem"])
def test_theodore_rrp_table_3(name):
    robot = examples.load(name)
    link1, link2, link3 = robot.links
    assert [l.joint for l in robot.links] == ["revolute", "revolute", "prismatic"]
    assert link1.beam is None and link1.d == 0.1  # rigid, l1 = 0.1 m
    assert link2.beam.length == 1.0 and link2.a == 1.0  # l2 = 1.0 m
    assert link3.beam.length == 1.3  # total length l3^0 = 1.3 m
    for beam in (link2.beam, link3.beam):
        assert beam.EI == (1165.4916, 1165.4916)
    assert robot.payload.mass == 0.0828
    # joint rotary inertias about the joint axes (the y axis of frames 1 and 2 here)
    assert link1.hub.inertia[1, 1] == 0.352
    assert link2.hub.inertia[1, 1] == 3.2
    assert np.all(robot.gravity == 0.0)  # gravity-free (sec. 5)
    if name == "theodore_rrp":
        assert link2.beam.shapes == link3.beam.shapes == "clamped_mass"
        assert link2.beam.modes == {"y": 2, "z": 2, "torsion": 0}
    else:
        assert link2.beam.shapes == link3.beam.shapes == "finite_elements"
        assert link2.beam.elements == link3.beam.elements == 2


def test_004_table_1_note_link2_frequency_in_rad_per_s():
    """INDEX.md: with the Table 3 link-2 data, the clamped-free first frequency is
    208.64 rad/s (33.2 Hz); our reading of EI, mass and length reproduces it."""
    beam = examples.load("theodore_rrp").links[1].beam
    beta1 = 1.8751040687119611
    omega = beta1**2 * np.sqrt(beam.EI[0] / (beam.mass_per_length * beam.length**4))
    assert omega == pytest.approx(208.64, abs=0.01)


def test_flx_fixed_free_period_275_ms():
    """000 sec. 3.3.3 (p. 63): the fixed-free fundamental period of the link is 275 ms."""
    beam = examples.load("flx_flexible_pendulum").links[0].beam
    beta1 = 1.8751040687119611
    omega = beta1**2 * np.sqrt(beam.EI[0] / (beam.mass_per_length * beam.length**4))
    assert 2 * np.pi / omega == pytest.approx(0.275, abs=0.0005)


def test_flx_flexible_pendulum_linearized_periods():
    """Reading check of Table 3.1 through the whole model (000 sec. 3.3.3, pp. 59-63): the
    hanging flexible pendulum's linearized periods are the rigid 3.276 s, the in-plane
    flexural 47 +- 1 ms (the joint is back-driven) and, out of plane where the root is
    clamped, the fixed-free 275 ms."""
    robot = examples.load("flx_flexible_pendulum")
    periods = np.sort(2 * np.pi / robot.natural_frequencies(np.zeros(robot.nq)))[::-1]
    assert periods[0] == pytest.approx(3.276, abs=0.0005)
    assert periods[1] == pytest.approx(0.275, abs=0.0005)
    assert periods[2] == pytest.approx(0.047, abs=0.001)
