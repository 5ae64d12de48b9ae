"""Mimic joints (q_full = G q + c) in the features beyond the dynamics: writing a URDF (read back by
flexman and by Pinocchio, whose full model is reduced here), frequencies about a motion (against
central differences of the reduced inverse dynamics), the identification regressor (tau = Y theta
against inverse dynamics; identification of the Panda), the truncated mass matrix (against the
full robot's truncated one reduced by G), sensitivities (against finite differences) and motion
planning (checked by fm.simulate(prescribed=))."""
from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import flexman as fm
from flexman.analysis import rigid_regressor as rr
from test_mimic_derived import BEAMS, _pinocchio_reduced_terms, _rel, _tree
from urdf_helpers import ROBOTS as ROOT
from urdf_helpers import pinocchio_reduced

pin = pytest.importorskip("pinocchio")
PANDA = None if ROOT is None else ROOT / "panda_description/urdf/panda.urdf"


def _panda(viscous=None):
    """A private copy of the Panda (fm.load may hand back a shared one), Coulomb friction off."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        robot = copy.deepcopy(fm.load(PANDA))
    for link in robot.links:
        link.coulomb = 0.0
        link.viscous = link.viscous if viscous is None else viscous
    robot.clear_derived()
    return robot


def _full_map(robot):
    """(G, c) of the joints from the robot's mimic table, built here (flexible coordinates one to one)."""
    names = [link.name for link in robot.links]
    free = [n for n in names if n not in robot.mimic]
    n, nf = len(names), robot.nf
    G, c = np.zeros((n + nf, len(free) + nf)), np.zeros(n + nf)
    G[n:, len(free):] = np.eye(nf)
    for i, name in enumerate(names):
        if name in robot.mimic:
            source, multiplier, offset = robot.mimic[name]
            G[i, free.index(source)], c[i] = multiplier, offset
        else:
            G[i, free.index(name)] = 1.0
    return G, c


# ----- 1. writing a URDF ------------------------------------------------------------------------
def _check_written(robot, path, rng):
    fm.save(robot, path)
    text = path.read_text()
    assert text.count("<mimic ") == len(robot.mimic)
    back = fm.load(path)
    assert type(back).__name__ == "MimicRobot" and back.nq == robot.nq
    assert [(k, v[0]) for k, v in sorted(back.mimic.items())] == [(k, v[0]) for k, v in sorted(robot.mimic.items())]
    model, free, G, c = pinocchio_reduced(path)  # Pinocchio reads the written file with every joint free
    assert len(free) == robot.n_joints
    for _ in range(3):
        q, qd, qdd = (rng.uniform(-1.0, 1.0, robot.nq) for _ in range(3))
        ours = (robot.mass_matrix(q), robot.bias_forces(q, qd), robot.inverse_dynamics(q, qd, qdd))
        assert _rel(back.mass_matrix(q), ours[0]) < 1e-12 and _rel(back.bias_forces(q, qd), ours[1]) < 1e-12
        for a, b in zip(ours, _pinocchio_reduced_terms(model, G, c, q, qd, qdd)):
            assert _rel(a, b) < 1e-10


def test_a_mimic_tree_written_as_urdf_reads_back_and_pinocchio_agrees(tmp_path):
    _, robot = _tree(tmp_path)
    _check_written(robot, tmp_path / "x.urdf", np.random.default_rng(11))
    assert '<mimic joint="j2" multiplier="-0.5" offset="0.1"/>' in (tmp_path / "x.urdf").read_text()


@pytest.mark.skipif(ROOT is None, reason="example-robot-data is not installed")
def test_the_panda_written_as_urdf_reads_back_and_pinocchio_agrees(tmp_path):
    robot = _panda(viscous=0.0)
    _check_written(robot, tmp_path / "panda.urdf", np.random.default_rng(12))


# ----- 2. frequencies about a motion ------------------------------------------------------------
def test_frequencies_about_a_motion_of_a_flexible_mimic_tree(tmp_path):
    """The steady deflection zeroes the flexible rows of the reduced inverse dynamics; (K, C) from
    central differences of those rows in (p, p_dot), M the reduced mass matrix's flexible block: the
    gyroscopic eigenproblem's frequencies are natural_frequencies(q, qd=...)."""
    from scipy.linalg import eig

    from flexman.analysis.frequencies import steady_deflection

    _, robot = _tree(tmp_path, overlay=BEAMS)
    sl, nf, nj = robot.flex_index, robot.nf, robot.n_joints
    q = np.concatenate([[0.3, -0.4, 0.2], np.zeros(nf)])
    qd = np.concatenate([[2.0, -1.5, 1.0], np.zeros(nf)])
    p = steady_deflection(robot, q, qd)
    q[sl] = p

    def flex_rows(dp, dv):
        qq, vv = q.copy(), qd.copy()
        qq[sl] += dp
        vv[sl] += dv
        return robot.inverse_dynamics(qq, vv, np.zeros(robot.nq))[sl]

    assert np.abs(flex_rows(0, 0)).max() < 1e-8 * np.abs(robot.inverse_dynamics(q, qd, 0 * q)).max()
    h = 1e-6
    K = np.stack([(flex_rows(h * e, 0) - flex_rows(-h * e, 0)) / (2 * h) for e in np.eye(nf)], axis=1)
    C = np.stack([(flex_rows(0, h * e) - flex_rows(0, -h * e)) / (2 * h) for e in np.eye(nf)], axis=1)
    M = robot.mass_matrix(q)[sl, sl]
    Gy = 0.5 * (C - C.T)
    A = np.block([[np.zeros((nf, nf)), np.eye(nf)], [-np.linalg.solve(M, K), -np.linalg.solve(M, Gy)]])
    ref = np.sort(np.abs(eig(A, right=False).imag))[1::2]
    ours = robot.natural_frequencies(q, qd=qd)
    assert ours.shape == (nf,) and nj == 3
    np.testing.assert_allclose(ours, ref, rtol=1e-6)
    assert np.abs(ours - robot.natural_frequencies(q, qd=0 * qd)).max() > 1e-3  # the motion matters


# ----- 3. identification regressor --------------------------------------------------------------
def test_regressor_of_a_mimic_tree_gives_the_inverse_dynamics(tmp_path):
    """Columns per link, the follower's included; tau = Y theta with armature and friction on
    every link (the follower's act through G^T); the base parameters reproduce tau."""
    _, robot = _tree(tmp_path)
    rng = np.random.default_rng(13)
    for link in robot.links:
        link.armature, link.viscous, link.coulomb = rng.uniform(0.01, 0.3, 3)
    robot.clear_derived()
    names = rr.parameter_names(robot, True, True, True)
    assert len(names) == 10 * 4 + 3 * 4 and "m4" in names and "Fv4" in names
    pi = rr.standard_parameters(robot, True, True, True)
    q, qd, qdd = (rng.uniform(-1.0, 1.0, (20, 3)) for _ in range(3))
    Y = rr.regressor(robot, q, qd, qdd, True, True, True)
    assert Y.shape == (20, 3, len(names))
    tau = robot.inverse_dynamics(q, qd, qdd)
    assert np.abs(Y @ pi - tau).max() < 1e-12 * np.abs(tau).max()
    base = rr.base_parameters(robot, True, True, True)
    assert 0 < base.rank < len(names)
    assert np.abs(Y[..., base.independent] @ base.project(pi) - tau).max() < 1e-9 * np.abs(tau).max()
    # the follower's mass moves the torques: it is in some base combination
    assert "m4" not in base.unidentifiable


@pytest.mark.skipif(ROOT is None, reason="example-robot-data is not installed")
def test_identify_recovers_the_panda_base_parameters():
    """Noise-free torques of a Fourier motion of the Panda (inverse dynamics; the fingers open and
    close by millimetres): fm.identify's base parameters, viscous friction included, lie within four
    standard errors of the true ones (the errors are the filter's and the differences')."""
    robot = _panda()
    w = 2 * np.pi * np.array([0.3, 0.7, 1.1, 1.7])
    rng = np.random.default_rng(0)
    A, B = rng.uniform(-0.5, 0.5, (2, 8, 4))
    A[7] *= 0.02
    B[7] *= 0.02
    t = np.arange(0.0, 6.0, 1e-3)
    s, c = np.sin(w * t[:, None, None]), np.cos(w * t[:, None, None])
    q = np.array([0, 0, 0, -1.5, 0, 1.5, 0, 0.02]) + (A * s + B * c).sum(-1)
    qd, qdd = (w * (A * c - B * s)).sum(-1), (-w ** 2 * (A * s + B * c)).sum(-1)
    tau = robot.inverse_dynamics(q, qd, qdd)
    ident = fm.identify(robot, t, q, tau, viscous=True, cutoff=10.0)
    true = ident.base.project(rr.standard_parameters(robot, viscous=True))
    assert len(ident.names) == ident.base.rank > 40
    z = (ident.values - true) / ident.std
    assert np.all(np.abs(z) < 4.0), dict(zip(ident.names, z))
    well = ident.std < 1e-3 * np.abs(true).max()
    assert well.sum() >= 20 and np.all(np.abs(ident.values - true)[well] < 5e-3 * np.abs(true).max())
    assert np.all(ident.validation["relative"] < 0.01)


# ----- 4. motion planning -----------------------------------------------------------------------
def test_plan_of_a_flexible_mimic_tree_brings_it_to_rest(tmp_path):
    """A 1 s rest-to-rest plan of the tree with a beam on the followed link: at the knots it
    satisfies the numeric reduced dynamics; followed exactly (fm.simulate(prescribed=)) it leaves
    the beam a small fraction of the quintic profile's ringing, with the planned torques."""
    beam = {"links": {"l2": {"beam": {"length": 0.3, "mass_per_length": 1.0, "EI": 20.0, "modes": {"y": 1}}}}}
    _, robot = _tree(tmp_path, overlay=beam)
    goal = np.array([0.3, -0.2, 0.25])
    plan = fm.plan(robot, np.zeros(3), goal, duration=1.0, knots=30)
    assert plan.report["success"]
    tau = robot.inverse_dynamics(plan.q, plan.qd, plan.qdd)
    assert np.abs(tau[:, robot.flex_index]).max() < 1e-8
    assert np.allclose(tau[:, robot.joint_index], plan.torques, atol=1e-9)
    settled = plan.q[-1, robot.flex_index]  # the static deflection at the goal
    ringing = {}
    for name, traj in (("plan", plan.trajectory),
                       ("quintic", fm.trajectory.rest_to_rest(np.zeros(3), goal, 1.0, "quintic"))):
        res = fm.simulate(robot, 1.2, dt=2e-3, prescribed=traj, q0=plan.q[0], backend="numeric")
        np.testing.assert_allclose(res.q[-1, robot.joint_index], goal, atol=1e-9)
        ringing[name] = np.abs(res.q[res.t >= 1.0][:, robot.flex_index] - settled).max()
        if name == "plan":
            m = res.t <= 1.0
            assert np.abs(res.tau[m] - plan.torque(res.t[m])).max() < 1e-2 * np.abs(res.tau).max()
    assert ringing["quintic"] > 3e-5 and ringing["plan"] < 0.1 * ringing["quintic"]


# ----- 5. truncated mass matrices ---------------------------------------------------------------
def test_truncated_mass_matrix_of_a_flexible_mimic_tree(tmp_path):
    """derive(truncate=k) of the mimic tree: G^T (the full robot's truncated M at G q + c) G; k = 0
    is the reduced M with the beams straight, the top degree the exact reduced M."""
    from flexman.symbolic.program import run_program

    _, robot = _tree(tmp_path, overlay=BEAMS)
    G, c = _full_map(robot)
    np.testing.assert_array_equal(G, robot.mimic_map()[0])
    rng = np.random.default_rng(14)
    q = np.concatenate([rng.uniform(-1, 1, 3), rng.uniform(-0.05, 0.05, robot.nf)])
    q0 = q.copy()
    q0[robot.flex_index] = 0.0
    for k in (0, 1):
        ours = run_program(fm.derive(robot, formulation="book", truncate=k).program("mass_matrix"), q)["M"]
        full = run_program(fm.derive(robot.full, formulation="book", truncate=k).program("mass_matrix"), G @ q + c)["M"]
        assert _rel(ours, G.T @ full @ G) < 1e-12
        if k == 0:
            assert _rel(ours, robot.mass_matrix(q0)) < 1e-10
        else:
            assert _rel(ours, robot.mass_matrix(q)) > 1e-8  # (truncated: not the exact M)


# ----- 6. sensitivities -------------------------------------------------------------------------
@pytest.mark.parametrize("parameter", ["mass4", "cx2", "rhoA2", "rhoA3", "px4"])
def test_mass_matrix_sensitivity_of_a_mimic_tree(tmp_path, parameter):
    """d M / d parameter against central differences of the reduced M; mass4 is the follower's
    (links[3], l3), rhoA3 the beam on l4 (links[2]): link numbers count robot.links."""
    from flexman.analysis import physical

    _, robot = _tree(tmp_path, overlay=BEAMS)
    q = np.concatenate([[0.3, -0.4, 0.2], np.random.default_rng(15).uniform(-0.02, 0.02, robot.nf)])
    sens = fm.analysis.sensitivity(robot, "mass_matrix", [parameter], q=q)
    v = physical.value(robot, parameter)
    h = 1e-5 * max(1.0, abs(v))
    up, down = (physical.with_values(robot, {parameter: v + s * h}).mass_matrix(q) for s in (1, -1))
    fd = (up - down) / (2 * h)
    d = np.asarray(sens.derivative)[0]
    assert np.abs(fd).max() > 1e-6
    assert np.abs(d - fd).max() < 1e-6 * max(1.0, np.abs(fd).max())


def test_frequency_sensitivity_of_a_mimic_tree(tmp_path):
    """d omega / d EI2 at rest against central differences of robot.natural_frequencies."""
    from flexman.analysis import physical

    _, robot = _tree(tmp_path, overlay=BEAMS)
    q = np.array([0.3, -0.4, 0.2] + [0.0] * robot.nf)
    sens = fm.analysis.sensitivity(robot, "frequencies", ["EI2"], q=q)
    v = physical.value(robot, "EI2")
    h = 1e-4 * v
    fd = (physical.with_values(robot, {"EI2": v + h}).natural_frequencies(q)
          - physical.with_values(robot, {"EI2": v - h}).natural_frequencies(q)) / (2 * h)
    d = np.asarray(sens.derivative).reshape(-1)
    assert np.abs(fd).max() > 1e-3
    np.testing.assert_allclose(d, fd, rtol=1e-5, atol=1e-7 * np.abs(fd).max())


def test_curvature_of_a_mimic_tree_is_the_full_robots(tmp_path):
    """Beam curvature of a mimic tree: the full robot's (every joint free) at G q + c."""
    _, robot = _tree(tmp_path, overlay=BEAMS)
    G, c = _full_map(robot)
    q = np.concatenate([[0.3, -0.4, 0.2], np.linspace(0.01, 0.02, robot.nf)])
    for link in (1, 2):
        ours = fm.analysis.curvature(robot, q, link, [0.0, 0.1])
        np.testing.assert_array_equal(ours, fm.analysis.curvature(robot.full, G @ q + c, link, [0.0, 0.1]))
        assert np.abs(ours).max() > 0.1


def test_a_loaded_mimic_robot_does_not_share_its_full_robot_with_another_load(tmp_path):
    """Loading checks the model and keeps its derived constants process-wide by content; the full
    robot (which shares the links) is not among them: editing one loaded robot leaves a second
    load of the same file alone (its full robot's links are its own)."""
    path = tmp_path / "tree.urdf"
    path.write_text(__import__("test_mimic").tree_urdf())
    a = fm.load(path)
    for link in a.links:
        link.viscous = 5.0
    b = fm.load(path)
    assert all(x is y for x, y in zip(b.full.links, b.links)) and all(lk.viscous == 0.0 for lk in b.full.links)
    q, qd = np.array([0.3, -0.4, 0.2]), np.array([0.5, -0.2, 0.7])
    model, _, G, c = pinocchio_reduced(path)
    assert _rel(b.inverse_dynamics(q, qd, 0 * q), _pinocchio_reduced_terms(model, G, c, q, qd, 0 * q)[2]) < 1e-10
