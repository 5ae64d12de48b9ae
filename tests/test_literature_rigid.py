"""Rigid-arm literature cases: closed-form equations of motion derived by hand, and the
compound-pendulum periods of the thesis.

(a) DYNAMAN's validation arms (002 sec. 4, p. 15; Appendices B-C, pp. 24-25): M(q) and
    b(q, qd) of the bundled examples against Lagrange's equations worked out below.
(b) Mackay's rigid compound pendulum (000 sec. 3.3.1, Table 3.2, p. 49): the exact period
    from the complete elliptic integral against the document's printed values, which
    checks our reading of the Table 3.1 parameters. (The simulated periods are tested with
    the simulator.)
Plus two more hand derivations: the thesis double pendulum (sec. 3.3.2) and the constant
generalized inertia matrix of Saha et al.'s modified arm (003 eq. 16).
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.special import ellipk

from flexman import examples

RNG_SEED = 20240611


def random_states(robot, n=8, seed=RNG_SEED):
    rng = np.random.default_rng(seed)
    q = rng.uniform(-np.pi, np.pi, (n, robot.nq))
    qd = rng.uniform(-2.0, 2.0, (n, robot.nq))
    for j, link in enumerate(robot.links):
        if link.joint == "prismatic":
            q[:, j] = rng.uniform(*link.limits, n)
    return q, qd


def assert_close(actual, expected, tol=1e-10):
    actual, expected = np.asarray(actual), np.asarray(expected)
    scale = max(1.0, np.abs(expected).max())
    np.testing.assert_allclose(actual, expected, rtol=0, atol=tol * scale)


# ----- (a) DYNAMAN example I: planar 2R arm -----------------------------------------------------
def planar_2r(m1, m2, l1, lc1, lc2, I1, I2, g, q, qd):
    """Lagrange's equations of a planar 2R arm with joint angles from the horizontal x axis
    and gravity g along -y (derived by hand):

        M11 = I1 + I2 + m1 lc1^2 + m2 (l1^2 + lc2^2 + 2 l1 lc2 cos q2)
        M12 = I2 + m2 (lc2^2 + l1 lc2 cos q2),   M22 = I2 + m2 lc2^2
        b1 = -m2 l1 lc2 sin q2 (2 qd1 qd2 + qd2^2) + (m1 lc1 + m2 l1) g cos q1 + m2 lc2 g cos(q1 + q2)
        b2 =  m2 l1 lc2 sin q2 qd1^2 + m2 lc2 g cos(q1 + q2)
    """
    q1, q2 = q[..., 0], q[..., 1]
    qd1, qd2 = qd[..., 0], qd[..., 1]
    c2, s2 = np.cos(q2), np.sin(q2)
    M11 = I1 + I2 + m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * c2)
    M12 = I2 + m2 * (lc2**2 + l1 * lc2 * c2)
    M22 = I2 + m2 * lc2**2 + 0 * q2
    M = np.stack([np.stack([M11, M12], -1), np.stack([M12, M22], -1)], -2)
    h = m2 * l1 * lc2 * s2
    b1 = -h * (2 * qd1 * qd2 + qd2**2) + (m1 * lc1 + m2 * l1) * g * np.cos(q1) + m2 * lc2 * g * np.cos(q1 + q2)
    b2 = h * qd1**2 + m2 * lc2 * g * np.cos(q1 + q2)
    return M, np.stack([b1, b2], -1)


def test_dynaman_2r_parameters_are_two_equal_uniform_links():
    """002 Appendix B (p. 24): two equal links with uniform mass distribution."""
    robot = examples.load("dynaman_2r")
    first, second = robot.links
    for link in robot.links:
        m, l = link.body.mass, link.a
        assert link.body.com == pytest.approx([-l / 2, 0.0, 0.0])  # mid-length
        assert link.body.inertia[2, 2] == pytest.approx(m * l**2 / 12, rel=1e-15)
    assert (first.body.mass, first.a) == (second.body.mass, second.a)
    assert robot.gravity == pytest.approx([0.0, -9.81, 0.0])


def test_dynaman_2r_matches_hand_derivation():
    robot = examples.load("dynaman_2r")
    (L1, L2), g = robot.links, -robot.gravity[1]
    params = dict(
        m1=L1.body.mass, m2=L2.body.mass, l1=L1.a,
        lc1=L1.a + L1.body.com[0], lc2=L2.a + L2.body.com[0],  # com is at x = -(a - lc)
        I1=L1.body.inertia[2, 2], I2=L2.body.inertia[2, 2], g=g,
    )
    q, qd = random_states(robot)
    M, b = planar_2r(q=q, qd=qd, **params)
    assert_close(robot.mass_matrix(q), M)
    assert_close(robot.bias_forces(q, qd), b)


def test_dynaman_2r_matches_printed_normalized_equations():
    """002 sec. 4, Example I (p. 15), with m = l = 1: M / (m l^2) =
    [[(3 cos q2 + 5)/3, (3 cos q2 + 2)/6], [(3 cos q2 + 2)/6, 1/3]] and the gravity terms
    (cos(q1 + q2) + 3 cos q1) g / (2 l), cos(q1 + q2) g / (2 l)."""
    robot = examples.load("dynaman_2r")
    m, l, g = robot.links[0].body.mass, robot.links[0].a, -robot.gravity[1]
    assert (m, l) == (1.0, 1.0)
    q, _ = random_states(robot)
    c2 = np.cos(q[:, 1])
    M = np.stack([np.stack([(3 * c2 + 5) / 3, (3 * c2 + 2) / 6], -1),
                  np.stack([(3 * c2 + 2) / 6, np.full_like(c2, 1 / 3)], -1)], -2)
    assert_close(robot.mass_matrix(q) / (m * l**2), M)
    c1, c12 = np.cos(q[:, 0]), np.cos(q[:, 0] + q[:, 1])
    gravity = np.stack([(c12 + 3 * c1) * g / (2 * l), c12 * g / (2 * l)], -1)
    assert_close(robot.bias_forces(q, np.zeros_like(q)) / (m * l**2), gravity)


# ----- (a) DYNAMAN example II: revolute disc carrying a sliding rod ---------------------------
def disc_rod(I_disc, I_rod, m_r, c, q, qd):
    """Lagrange's equations of the RP arm (derived by hand). theta turns the disc about the
    vertical axis; r is the distance from that axis to the rod's end, the rod's centre is
    c = l_r/2 behind it, so at distance (r - c) from the axis; gravity is along the axis:

        T = 1/2 (I_disc + I_rod + m_r (r - c)^2) thetad^2 + 1/2 m_r rd^2
        M = diag(I_disc + I_rod + m_r (r - c)^2, m_r)
        b = (2 m_r (r - c) thetad rd, -m_r (r - c) thetad^2)
    """
    r, thd, rd = q[..., 1], qd[..., 0], qd[..., 1]
    M11 = I_disc + I_rod + m_r * (r - c) ** 2
    zero = 0 * r
    M = np.stack([np.stack([M11, zero], -1), np.stack([zero, m_r + zero], -1)], -2)
    b = np.stack([2 * m_r * (r - c) * thd * rd, -m_r * (r - c) * thd**2], -1)
    return M, b


def test_dynaman_rp_matches_hand_derivation():
    robot = examples.load("dynaman_rp")
    disc, rod = robot.links
    # the joint-1 axis z0 is the y axis of frames 1 and 2 (alpha1 = -90 deg, link 2 aligned)
    I_disc, I_rod = disc.body.inertia[1, 1], rod.body.inertia[1, 1]
    m_r, c = rod.body.mass, -rod.body.com[2]
    l_r = 2 * c
    assert I_rod == pytest.approx(m_r * l_r**2 / 12, rel=1e-15)  # 002 App. C: phi2
    q, qd = random_states(robot)
    M, b = disc_rod(I_disc, I_rod, m_r, c, q, qd)
    assert_close(robot.mass_matrix(q), M)
    assert_close(robot.bias_forces(q, qd), b)


def test_dynaman_rp_against_printed_equations():
    """002 sec. 4, Example II (p. 15), in our symbols:
        (l_r^2 - 4 r l_r + 4 r^2) m_r / 4 * thetadd + I_disc thetadd = T1 + (thetad rd l_r - 2 r thetad rd) m_r
        rdd m_r = F2 - (thetad^2 l_r - 2 r thetad^2) m_r / 2
    The printed M11 has no m_r l_r^2 / 12 although the report's data file (App. C, p. 25)
    gives the rod the moment phi2 = diag(m_r l_r^2/12, m_r l_r^2/12, 0) about axes across
    it, one of which is always parallel to the revolute axis: the term belongs in M11 (a
    rod turning end-over-end). We assert the printed equations with that term added."""
    robot = examples.load("dynaman_rp")
    disc, rod = robot.links
    I_disc, m_r, l_r = disc.body.inertia[1, 1], rod.body.mass, -2 * rod.body.com[2]
    q, qd = random_states(robot)
    r, thd, rd = q[:, 1], qd[:, 0], qd[:, 1]
    M = robot.mass_matrix(q)
    printed_M11 = (l_r**2 - 4 * r * l_r + 4 * r**2) * m_r / 4 + I_disc
    assert_close(M[:, 0, 0], printed_M11 + m_r * l_r**2 / 12)
    assert_close(M[:, 1, 1], np.full_like(r, m_r))
    assert_close(M[:, 0, 1], np.zeros_like(r))
    b = robot.bias_forces(q, qd)
    assert_close(-b[:, 0], (thd * rd * l_r - 2 * r * thd * rd) * m_r)
    assert_close(-b[:, 1], -(thd**2 * l_r - 2 * r * thd**2) * m_r / 2)


# ----- (b) thesis 3.3.1: rigid compound pendulum periods -------------------------------------
# 000 Table 3.2 (p. 49): initial displacement (rad) -> period (s), elliptic-integral column
TABLE_3_2_ELLIPTIC = {0.05: 3.276, 0.1: 3.278, 0.2: 3.284, 0.4: 3.309}
SMALL_AMPLITUDE_PERIOD = 3.276  # 000 sec. 3.3.1 (p. 48), eq. (3.7)


def pendulum_constants():
    """(I_pivot, m, lc, g) of the bundled rigid pendulum, read from the model."""
    robot = examples.load("flx_rigid_pendulum")
    link = robot.links[0]
    m = link.body.mass
    lc = link.a + link.body.com[0]  # distance from the joint axis to the centre
    i_pivot = link.body.inertia[2, 2] + m * lc**2
    g = np.linalg.norm(robot.gravity)
    return i_pivot, m, lc, g


def exact_period(phi_max):
    """T = 4 sqrt(I_pivot / (m g lc)) K(k), k = sin(phi_max / 2) (000 eq. 3.6); SciPy's
    ellipk takes the parameter k^2."""
    i_pivot, m, lc, g = pendulum_constants()
    return 4.0 * np.sqrt(i_pivot / (m * g * lc)) * ellipk(np.sin(phi_max / 2) ** 2)


def test_pendulum_is_the_thesis_slender_rod():
    i_pivot, m, lc, g = pendulum_constants()
    assert (m, lc) == (10.955, 2.0)  # Table 3.1 mass, half the 4.0 m length
    assert i_pivot == pytest.approx(m * 4.0**2 / 3, rel=1e-12)  # eq. (3.5): 3g/(2a)


@pytest.mark.parametrize("phi_max", sorted(TABLE_3_2_ELLIPTIC))
def test_table_3_2_elliptic_periods(phi_max):
    """The document's values agree with the closed form to their printed precision."""
    assert exact_period(phi_max) == pytest.approx(TABLE_3_2_ELLIPTIC[phi_max], abs=0.0005)


def test_small_amplitude_period():
    i_pivot, m, lc, g = pendulum_constants()
    period = 2 * np.pi * np.sqrt(i_pivot / (m * g * lc))
    assert period == pytest.approx(SMALL_AMPLITUDE_PERIOD, abs=0.0005)
    assert exact_period(1e-8) == pytest.approx(period, rel=1e-12)


def test_pendulum_model_has_the_pendulum_equation():
    """M = I_pivot and b = m g lc sin(q): eq. (3.5) with q from the downward vertical."""
    robot = examples.load("flx_rigid_pendulum")
    i_pivot, m, lc, g = pendulum_constants()
    q = np.linspace(-3.0, 3.0, 13)[:, None]
    assert_close(robot.mass_matrix(q)[:, 0, 0], np.full(13, i_pivot))
    assert_close(robot.bias_forces(q, np.zeros_like(q))[:, 0], m * g * lc * np.sin(q[:, 0]))


# ----- thesis 3.3.2: double rigid compound pendulum ------------------------------------------
def test_double_pendulum_matches_hand_derivation():
    """Two uniform rods (m, a), angles from the downward vertical (000 sec. 3.3.2). Times
    3 / (m a^2), Lagrange's equations read
        (5 + 3 cos q2) qdd1 + (1 + 3/2 cos q2) qdd2 - 3/2 sin q2 (2 qd1 + qd2) qd2
            + 3g/(2a) (3 sin q1 + sin(q1 + q2)) = 0
        (1 + 3/2 cos q2) qdd1 + qdd2 + 3/2 sin q2 qd1^2 + 3g/(2a) sin(q1 + q2) = 0.
    The inertia terms are those printed in eqs. (3.8)-(3.9); the printed velocity and
    gravity terms differ (a dropped factor 2 and different sines), see the report."""
    robot = examples.load("flx_double_pendulum")
    m, a, g = robot.links[0].body.mass, robot.links[0].a, np.linalg.norm(robot.gravity)
    q, qd = random_states(robot)
    q1, q2, qd1, qd2 = q[:, 0], q[:, 1], qd[:, 0], qd[:, 1]
    c2, s2 = np.cos(q2), np.sin(q2)
    scale = m * a**2 / 3
    M = np.stack([np.stack([5 + 3 * c2, 1 + 1.5 * c2], -1),
                  np.stack([1 + 1.5 * c2, np.ones_like(c2)], -1)], -2) * scale
    b = np.stack([-1.5 * s2 * (2 * qd1 + qd2) * qd2 + 1.5 * g / a * (3 * np.sin(q1) + np.sin(q1 + q2)),
                  1.5 * s2 * qd1**2 + 1.5 * g / a * np.sin(q1 + q2)], -1) * scale
    assert_close(robot.mass_matrix(q), M)
    assert_close(robot.bias_forces(q, qd), b)


# ----- 003: constant generalized inertia matrix of the modified arm --------------------------
def test_saha_modified_arm_has_constant_gim():
    """003 eq. (16) (p. 6): with the Fig. 4 parameters the GIM is constant,
    M = [[I1 + I2xx + I3xx, 0, 0], [0, I2zz + m2 c2^2 + m3 a2^2 + I3zz, I3zz], [0, I3zz, I3zz]]
    (moments about each link's centre; I1 about the joint-1 axis), and the convective
    terms vanish."""
    robot = examples.load("saha_3link_modified")
    l1, l2, l3 = robot.links
    I1 = l1.body.inertia[1, 1]  # joint-1 axis = frame 1's y axis
    I2, I3 = l2.body.inertia, l3.body.inertia
    m2, m3, a2 = l2.body.mass, l3.body.mass, l2.a
    c2 = l2.a + l2.body.com[0]  # signed distance of link 2's centre from joint 2
    expected = np.array([
        [I1 + I2[0, 0] + I3[0, 0], 0.0, 0.0],
        [0.0, I2[2, 2] + m2 * c2**2 + m3 * a2**2 + I3[2, 2], I3[2, 2]],
        [0.0, I3[2, 2], I3[2, 2]],
    ])
    q, qd = random_states(robot)
    assert_close(robot.mass_matrix(q), np.broadcast_to(expected, (len(q), 3, 3)))
    no_gravity = robot.bias_forces(q, qd) - robot.bias_forces(q, np.zeros_like(qd))
    assert_close(no_gravity, np.zeros_like(qd))


def test_saha_original_arm_gim_is_configuration_dependent():
    robot = examples.load("saha_3link")
    q, _ = random_states(robot)
    M = robot.mass_matrix(q)
    assert np.ptp(M[:, 0, 0]) > 0.1 and np.ptp(M[:, 1, 2]) > 0.1
