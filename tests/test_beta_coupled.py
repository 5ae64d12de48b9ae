"""004 sec. 4.2: the clamped-mass eigenvalues of a sliding link integrated with the equations of
motion (eq. 40 as extra states, shapes rebuilt from the current beta at every evaluation).

Arm: theodore_rrp (004 sec. 5, Table 3), gravity-free; the boom (link 3) extends 0.3 -> 1.0 m in
0.5 s (sinusoidal rest-to-rest), joints 1 and 2 held at zero by the decoupling law (004 eq. 31;
gains chosen here, the paper gives none). Most runs use one clamped-mass mode per bending
direction: with two, the boom's second mode is at 1.1e4 rad/s at l = 0.3 m and fixed-step RK4
needs dt < 2.5e-4 s (the two-mode case is the slow test).
"""
import numpy as np
import pytest
from scipy.integrate import cumulative_trapezoid

import flexman as fm
from flexman import Robot
from flexman.analysis import clamped_mass_shapes, simulate_with_beta
from flexman.control import Decoupling
from flexman.discretize import clamped_mass_roots, shape_set, stiffness_matrix
from flexman.trajectory import rest_to_rest
from flexman.dynamics.structure import numeric_model

GP, GV = 400.0, 40.0
BOOM = 2  # link index of the sliding beam


def rrp(modes=1):
    """theodore_rrp with `modes` clamped-mass modes per bending direction on links 2 and 3."""
    robot = fm.examples.load("theodore_rrp")
    for link in robot.links:
        if link.beam is not None:
            link.beam.modes = {"y": modes, "z": modes, "torsion": 0}
    return Robot(links=robot.links, name=f"theodore_rrp_{modes}", gravity=robot.gravity, dh=robot.dh,
                 payload=robot.payload)


def boom_move(duration=0.5):
    """Only the prismatic joint moves: q3 0 -> 0.7 m (free length 0.3 -> 1.0 m)."""
    return rest_to_rest([0.0, 0.0, 0.0], [0.0, 0.0, 0.7], duration)


def resolved_roots(res):
    """Roots of the frequency equation (38) re-solved at each sampled length."""
    sl = res.sliding
    return np.array([np.concatenate([clamped_mass_roots(n, *sl.loads(l)[d]) for d, n in zip(sl.directions, sl.counts)])
                     for l in res.length])


def tip_deflection(robot_at, q, boom_only=False):
    """Tip of link 3 minus its position without deflection (of every flexible link, or of the
    boom only), per sample."""
    out = []
    for k, qk in enumerate(q):
        r = robot_at(k)
        rigid = qk.copy()
        rigid[r.link_flex_slice(BOOM) if boom_only else r.flex_index] = 0.0
        out.append(r.frame(qk, BOOM)[:3, 3] - r.frame(rigid, BOOM)[:3, 3])
    return np.array(out)


_RUNS = {}


def extension_runs():
    """The boom extension with updated shapes and with the fixed (q = 0) shapes, run once."""
    if not _RUNS:
        robot = rrp(1)
        traj = boom_move()
        ctl = Decoupling(robot, traj, GP, GV)
        _RUNS["beta"] = simulate_with_beta(robot, 0.6, dt=1e-3, controller=ctl)
        _RUNS["fixed"] = fm.simulate(robot, 0.6, dt=1e-3, controller=ctl, progress=False)
        _RUNS["robot"] = robot
    return _RUNS["robot"], _RUNS["beta"], _RUNS["fixed"]


# ----- the shapes from given roots ----------------------------------------------------------
@pytest.mark.parametrize("loads", [(0.0, 0.0, 0.0), (0.8338, 0.0, 0.0), (0.2, 0.01, 0.03), (2.0, 0.5, 0.1)])
def test_shapes_from_given_roots(loads):
    """Built from the roots (no root finding) they are the shape_set('clamped_mass') functions."""
    beta = clamped_mass_roots(4, *loads)
    given = clamped_mass_shapes(beta, *loads)
    fresh = shape_set("clamped_mass", "bending", 4, M=loads[0], J=loads[1], D=loads[2])
    eta = np.linspace(0.0, 1.0, 13)
    for k in range(4):
        np.testing.assert_allclose(given(eta, k), fresh(eta, k), rtol=0, atol=1e-12 * beta.max() ** k)
    eta, w = given.quadrature()
    np.testing.assert_allclose((given(eta) ** 2) @ w, 1.0, atol=1e-12)  # int psi^2 d eta = 1


# ----- (1) integrated beta == re-solved frequency equation ----------------------------------
def test_beta_follows_the_extension():
    robot, res, _ = extension_runs()
    assert res.beta.shape == (len(res.t), 2) and res.frequencies.shape == res.beta.shape
    np.testing.assert_allclose(res.length[[0, -1]], [0.3, 1.0], atol=1e-4)
    ref = resolved_roots(res)
    err = np.abs(res.beta - ref).max()
    print(f"\nbeta: {res.beta[0, 0]:.6f} -> {res.beta[-1, 0]:.6f}, max |beta - roots(l)| = {err:.2e}")
    assert err < 1e-6
    # frequencies beta^2 sqrt(EI / (mu l^4)) fall from 1103 to 147 rad/s as the boom extends
    np.testing.assert_allclose(res.frequencies, ref**2 * np.sqrt(1165.4916 / (0.331 * res.length[:, None] ** 4)),
                               rtol=1e-9)
    # the joints still track: the controller's model differs from the plant only in the shapes
    assert np.abs(res.q[:, :3] - boom_move()(res.t)[0]).max() < 1e-3


# ----- (2) joint held fixed: the fixed-shape model ------------------------------------------
def test_held_joint_equals_fixed_shape_model():
    """Joints 1 and 2 swing the arm, the boom stays at its q = 0 length: beta keeps its initial
    value and the run is fm.simulate's."""
    robot = rrp(1)
    traj = rest_to_rest([0.0, 0.0, 0.0], [0.5, 0.3, 0.0], 0.2)
    ctl = Decoupling(robot, traj, GP, GV)
    res = simulate_with_beta(robot, 0.25, dt=1e-3, controller=ctl)
    ref = fm.simulate(robot, 0.25, dt=1e-3, controller=ctl, progress=False)
    assert np.abs(ref.q[:, robot.flex_index]).max() > 1e-4  # the flexible modes are excited
    np.testing.assert_allclose(res.beta, np.broadcast_to(res.beta[0], res.beta.shape), rtol=0, atol=1e-12)
    for name in ("q", "qd", "tau", "energy"):
        np.testing.assert_allclose(getattr(res, name), getattr(ref, name), rtol=0, atol=1e-9, err_msg=name)


# ----- (3) the shapes at the end are the clamped-mass shapes of the final length ------------
def check_final_shapes(res, n):
    sl = res.sliding
    loads = sl.loads(res.length[-1])
    beam = numeric_model(res.robot_at(-1)).links[BOOM].beam
    eta = np.linspace(0.0, 1.0, 11)
    for d, used in res.shapes(-1).items():
        fresh = shape_set("clamped_mass", "bending", n, M=loads[d][0], J=loads[d][1], D=loads[d][2])
        for k in range(4):
            np.testing.assert_allclose(used(eta, k), fresh(eta, k), rtol=0, atol=1e-8)
        block = [i for i, di in enumerate(beam.directions) if di == d]
        K = stiffness_matrix(fresh, 1165.4916, 1.0)
        np.testing.assert_allclose(beam.Kbar[np.ix_(block, block)], K, rtol=0, atol=1e-8 * np.abs(K).max())


def test_final_shapes_are_clamped_mass_at_final_length():
    robot, res, _ = extension_runs()
    check_final_shapes(res, 1)


@pytest.mark.slow
def test_two_modes_fast_extension():
    """The Table 3 model (two modes per direction, nq = 11), boom extended in 0.2 s."""
    robot = fm.examples.load("theodore_rrp")
    traj = boom_move(0.2)
    res = simulate_with_beta(robot, 0.2, dt=2.5e-4, controller=Decoupling(robot, traj, GP, GV))
    assert res.beta.shape[1] == 4
    np.testing.assert_allclose(res.length[-1], 1.0, atol=5e-3)  # tracking with mismatched shapes
    np.testing.assert_allclose(res.beta, resolved_roots(res), rtol=0, atol=1e-6)
    check_final_shapes(res, 2)


# ----- (4) what the updated shapes change ---------------------------------------------------
def test_report_tip_deflection_and_frequencies():
    """Printed, not asserted tightly: the tip deflection of the boom with updated and with fixed
    shapes, and its first frequency at the final length."""
    robot, res, ref = extension_runs()
    for boom_only in (False, True):
        w_beta = tip_deflection(res.robot_at, res.q, boom_only)
        w_fixed = tip_deflection(lambda k: robot, ref.q, boom_only)
        peak_beta, peak_fixed = (np.linalg.norm(w, axis=1).max() for w in (w_beta, w_fixed))
        diff = np.linalg.norm(w_beta - w_fixed, axis=1).max()
        print(f"\ntip deflection ({'boom only' if boom_only else 'links 2 and 3'}), peak: updated shapes "
              f"{peak_beta * 1e3:.4f} mm, fixed shapes {peak_fixed * 1e3:.4f} mm; largest difference "
              f"{diff * 1e3:.4f} mm, at the end {np.linalg.norm(w_beta[-1] - w_fixed[-1]) * 1e3:.4f} mm")
    # the fixed-shape model's first boom frequency at l = 1 m (shapes of l = 0.3 m, stretched)
    M0 = res.sliding.loads(0.3)["y"][0]
    fixed_set = shape_set("clamped_mass", "bending", 1, M=M0)
    L, mu, m_p = 1.0, 0.331, 0.0828
    k = stiffness_matrix(fixed_set, 1165.4916, L)[0, 0]
    m = mu * L + m_p * fixed_set(1.0)[0, 0] ** 2
    w_fixed_shapes = np.sqrt(k / m)
    print(f"first boom frequency at l = 1 m: exact (integrated beta) {res.frequencies[-1, 0]:.2f} rad/s, "
          f"fixed q = 0 shapes {w_fixed_shapes:.2f} rad/s")
    assert peak_beta > 0 and peak_fixed > 0 and np.isfinite(diff)
    assert w_fixed_shapes > res.frequencies[-1, 0]  # 004: neglecting the update overestimates


# ----- energy: not conserved while the boom slides (004's frozen shapes) --------------------
def test_energy_rate_of_frozen_shapes():
    """Free slide (no torque), boom from 0.3 m at 1 m/s with the boom deflected: the fixed-shape
    model conserves energy; with updated shapes E = T + V changes, at exactly
    dE/dt = sum_j dE/dp_j dp_j/dt over the shape parameters p = (beta, M, J, D)."""
    robot = rrp(1)
    q0, qd0 = np.zeros(robot.nq), np.zeros(robot.nq)
    qd0[0], qd0[2] = 0.5, 1.0
    q0[5], q0[6] = 1e-3, -5e-4  # boom modes (y, z)
    opts = dict(dt=1e-3, method="DOP853", rtol=1e-10, atol=1e-12, q0=q0, qd0=qd0)
    res = simulate_with_beta(robot, 0.1, **opts)
    ref = fm.simulate(robot, 0.1, progress=False, **opts)
    drift_fixed = np.abs(ref.energy - ref.energy[0]).max()
    drift = res.energy - res.energy[0]
    print(f"\nfree slide {res.length[0]:.3f} -> {res.length[-1]:.3f} m, E(0) = {res.energy[0]:.6f} J: "
          f"energy change {drift[-1]:.3e} J with updated shapes, |drift| {drift_fixed:.1e} J with fixed shapes")
    assert drift_fixed < 1e-8 * res.energy[0]
    assert np.abs(drift).max() > 1e-5 * res.energy[0]

    sl = res.sliding

    def energy(q, qd, p):
        sets = {d: clamped_mass_shapes(p[4 * i], *p[4 * i + 1:4 * i + 4]) for i, d in enumerate(sl.directions)}
        r = sl.robot_with_sets(sets)
        return float(r.kinetic_energy(q, qd) + r.potential_energy(q))

    rate = []
    for q, qd, beta, l in zip(res.q, res.qd, res.beta, res.length):
        loads, v = sl.loads(l), qd[BOOM] / l
        bd = sl.beta_rate(beta, l, qd[BOOM])
        p = np.concatenate([[beta[i], *loads[d]] for i, d in enumerate(sl.directions)])
        pd = np.concatenate([[bd[i], -loads[d][0] * v, -3 * loads[d][1] * v, -2 * loads[d][2] * v]
                             for i, d in enumerate(sl.directions)])
        total = 0.0
        for j in np.flatnonzero(pd):
            h = np.zeros_like(p)
            h[j] = 1e-6
            total += (energy(q, qd, p + h) - energy(q, qd, p - h)) / 2e-6 * pd[j]
        rate.append(total)
    predicted = cumulative_trapezoid(rate, res.t, initial=0.0)
    np.testing.assert_allclose(drift, predicted, rtol=0, atol=2e-3 * np.abs(drift).max())


def test_needs_a_sliding_clamped_mass_link():
    with pytest.raises(ValueError, match="link"):
        simulate_with_beta(fm.examples.load("flx_three_link"), 0.01)
    with pytest.raises(ValueError, match="not a flexible prismatic"):
        simulate_with_beta(rrp(1), 0.01, link=1)
