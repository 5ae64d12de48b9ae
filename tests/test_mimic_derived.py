"""Mimic joints beyond the numeric model: the derived equations and generated code (the full robot
traced at q_full = G q + c, reduced by G^T) against Pinocchio's full model reduced on the test's
side and against the numeric model; compiled models and simulation; a flexible overlay on a
mimic tree against the energy-based Lagrangian oracle; statics; model files (``links[i].mimic``)
round-tripping through fm.save; bad mimic fields refused in one line each."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import flexman as fm
from flexman import ModelError
from flexman.model.serialize import robot_from_dict
from flexman.oracles.energy_lagrangian import EnergyLagrangian
from test_mimic import tree_urdf
from urdf_helpers import ROBOTS as ROOT
from urdf_helpers import pin_q, pinocchio_reduced

pin = pytest.importorskip("pinocchio")

BEAMS = {"links": {"l2": {"beam": {"length": 0.3, "mass_per_length": 1.0, "EI": 200.0, "modes": {"y": 1, "z": 1}}},
                   "l4": {"beam": {"length": 0.25, "mass_per_length": 0.8, "EI": [150.0, 120.0],
                                   "modes": {"y": 2, "z": 1}}}}}


def _rel(a, b):
    return np.abs(np.asarray(a) - np.asarray(b)).max() / max(1.0, np.abs(b).max())


def _tree(tmp_path, overlay=None):
    path = tmp_path / "tree.urdf"
    path.write_text(tree_urdf())
    robot = fm.load(path, overlay=overlay)
    for link in robot.links:
        link.viscous = link.coulomb = 0.0
    return path, robot


def _pinocchio_reduced_terms(model, G, c, q, qd, qdd):
    data = model.createData()
    qp = pin_q(model, G @ q + c)
    M = pin.crba(model, data, qp)
    M = np.triu(M) + np.triu(M, 1).T
    return (G.T @ M @ G, G.T @ pin.nonLinearEffects(model, data, qp, G @ qd),
            G.T @ pin.rnea(model, data, qp, G @ qd, G @ qdd))


def _check_generated(robot, compiled, rng, model=None, G=None, c=None):
    for _ in range(3):
        q, qd, qdd = (rng.uniform(-1.0, 1.0, robot.nq) for _ in range(3))
        q[robot.flex_index] *= 0.02  # (deflections of centimetres)
        tau = rng.uniform(-1.0, 1.0, robot.n_joints)
        ours = (compiled.mass_matrix(q), compiled.bias_forces(q, qd), compiled.inverse_dynamics(q, qd, qdd))
        numeric = (robot.mass_matrix(q), robot.bias_forces(q, qd), robot.inverse_dynamics(q, qd, qdd))
        for a, b in zip(ours, numeric):
            assert _rel(a, b) < 1e-12
        # forward dynamics: the generated accelerations satisfy the numeric model's equations to
        # rounding (backward error; the solve itself amplifies rounding by cond(M) on a flexible arm)
        qdd_gen = compiled.forward_dynamics(q, qd, tau)
        S_tau = np.concatenate([tau, np.zeros(robot.nf)])
        scale = max(1.0, np.abs(robot.mass_matrix(q) @ qdd_gen).max(), np.abs(robot.bias_forces(q, qd)).max())
        assert np.abs(robot.inverse_dynamics(q, qd, qdd_gen) - S_tau).max() < 1e-12 * scale
        if model is not None:  # the independent oracle: Pinocchio's full model reduced here
            for a, b in zip(ours, _pinocchio_reduced_terms(model, G, c, q, qd, qdd)):
                assert _rel(a, b) < 1e-10


@pytest.mark.parametrize("parameters", ["numeric", "symbolic"])
def test_generated_code_of_a_mimic_tree_is_the_reduced_model(tmp_path, parameters):
    path, robot = _tree(tmp_path)
    model, free, G, c = pinocchio_reduced(path)
    eom = fm.derive(robot, parameters=parameters, reduce_mass_matrix=parameters == "numeric")  # (seconds, not a minute)
    assert eom.nq == 3 and eom.M.shape == (3, 3)
    _check_generated(robot, eom.compile("numpy"), np.random.default_rng(5), model, G, c)
    if parameters == "numeric":  # the symbolic Jacobian of the follower's frame is J_full G
        import sympy

        q = np.array([0.3, -0.2, 0.4])
        J = eom.jacobian(3).subs({sympy.Symbol(f"q{k + 1}"): v for k, v in enumerate(q)})  # (links[3]: l3)
        np.testing.assert_allclose(np.array(J, dtype=float), robot.jacobian(q, 3), atol=1e-12)


def test_compiled_model_and_simulation_of_a_mimic_tree(tmp_path):
    from flexman.codegen import cbuild
    from flexman.codegen.modelcache import compiled_model

    try:
        cbuild.compiler()
    except RuntimeError:
        pytest.skip("no C compiler")
    path, robot = _tree(tmp_path)
    model, _, G, c = pinocchio_reduced(path)
    _check_generated(robot, compiled_model(robot), np.random.default_rng(6), model, G, c)
    q0 = np.array([0.2, -0.3, 0.1])
    a = fm.simulate(robot, t_final=0.05, dt=0.001, q0=q0, backend="compiled")
    b = fm.simulate(robot, t_final=0.05, dt=0.001, q0=q0, backend="numeric")
    assert np.abs(a.q - b.q).max() < 1e-10


@pytest.mark.skipif(ROOT is None, reason="example-robot-data is not installed")
def test_generated_code_of_the_panda_is_the_reduced_model():
    path = ROOT / "panda_description/urdf/panda.urdf"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        robot = fm.load(path)
    for link in robot.links:
        link.viscous = link.coulomb = 0.0
    model, _, G, c = pinocchio_reduced(path)
    compiled = fm.derive(robot).compile("numpy")
    assert compiled.nq == 8
    _check_generated(robot, compiled, np.random.default_rng(7), model, G, c)


def test_flexible_overlay_on_a_mimic_tree_matches_the_energy_oracle(tmp_path):
    """Beams on l2 (followed) and l4: M and b of the reduced model equal the energy-based
    Lagrangian of the full flexible robot reduced by G (built here: the joints' G from the XML, the
    flexible coordinates one to one); generated code equals the numeric model."""
    path, robot = _tree(tmp_path, overlay=BEAMS)
    assert type(robot).__name__ == "MimicRobot" and robot.nq == 3 + 5 and robot.n_joints == 3
    _, _, Gj, cj = pinocchio_reduced(path)
    nf = robot.nf
    G = np.block([[Gj, np.zeros((4, nf))], [np.zeros((nf, 3)), np.eye(nf)]])
    c = np.concatenate([cj, np.zeros(nf)])
    oracle = EnergyLagrangian(robot.full)
    rng = np.random.default_rng(8)
    q = np.concatenate([rng.uniform(-1, 1, 3), rng.uniform(-0.02, 0.02, nf)])
    qd = rng.uniform(-1, 1, robot.nq)
    assert _rel(robot.mass_matrix(q), G.T @ oracle.mass_matrix(G @ q + c) @ G) < 1e-9
    assert _rel(robot.bias_forces(q, qd), G.T @ oracle.bias_forces(G @ q + c, G @ qd)) < 1e-8
    _check_generated(robot, fm.derive(robot, parameters="symbolic", reduce_mass_matrix=False).compile("numpy"), rng)


def test_statics_of_a_flexible_mimic_tree(tmp_path):
    """At the equilibrium the reduced bias forces at rest vanish on the flexible coordinates and
    equal the holding torques on the joints (b(q, 0) = S tau)."""
    _, robot = _tree(tmp_path, overlay=BEAMS)
    res = fm.analysis.statics(robot, np.array([0.3, 0.2, -0.1]))
    assert res.q.shape == (robot.nq,) and res.torques.shape == (3,)
    np.testing.assert_array_equal(res.q[:3], [0.3, 0.2, -0.1])
    b = robot.bias_forces(res.q, np.zeros(robot.nq))
    assert np.abs(b[3:]).max() < 1e-9 * np.abs(b).max()
    np.testing.assert_allclose(res.torques, b[:3], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("fmt", ["yaml", "toml", "json"])
def test_a_mimic_robot_round_trips_through_a_model_file(tmp_path, fmt):
    _, robot = _tree(tmp_path, overlay=BEAMS)
    fm.save(robot, tmp_path / f"t.{fmt}")
    again = fm.load(tmp_path / f"t.{fmt}")
    assert again.mimic == robot.mimic and again.coordinate_names == robot.coordinate_names
    q = np.random.default_rng(9).uniform(-0.5, 0.5, robot.nq)
    np.testing.assert_array_equal(again.mass_matrix(q), robot.mass_matrix(q))
    np.testing.assert_array_equal(again.bias_forces(q, q), robot.bias_forces(q, q))


def _links(mimic_of_l3=None, mimic_of_l2=None):
    link = lambda name, extra: {"name": name, "joint": "revolute", "a": 0.3, "mass": 1.0, "com": [-0.15, 0, 0],
                                "inertia": [0.001, 0.01, 0.01], **extra}
    return {"name": "m", "links": [link("l1", {}), link("l2", {} if mimic_of_l2 is None else {"mimic": mimic_of_l2}),
                                   link("l3", {} if mimic_of_l3 is None else {"mimic": mimic_of_l3})]}


def test_a_model_file_mimic_field_reads_a_name_or_an_index():
    by_name = robot_from_dict(_links({"joint": "l1", "multiplier": 2.0, "offset": 0.1}))
    by_index = robot_from_dict(_links({"joint": 0, "multiplier": 2.0, "offset": 0.1}))
    assert by_name.mimic == by_index.mimic == {"l3": ("l1", 2.0, 0.1)} and by_name.nq == 2
    q = np.array([0.4, -0.3])
    # q_full = (q1, q2, 2 q1 + 0.1): the follower's frame is the full robot's there
    np.testing.assert_allclose(by_name.frame(q, "l3"), by_name.full.frame([0.4, -0.3, 0.9], "l3"), atol=1e-15)


@pytest.mark.parametrize("l3, l2, message", [
    ({"joint": "l9"}, None, "links[2].mimic.joint: no link is named 'l9'"),
    ({"joint": 7}, None, "links[2].mimic.joint: 7 is neither a link's name nor its index"),
    ({"joint": "l3"}, None, "links[2].mimic.joint: a joint cannot follow itself"),
    ({"joint": "l2"}, {"joint": "l1"}, "links[2].mimic.joint: links[1] follows another joint itself"),
    ({"multiplier": 2.0}, None, "links[2].mimic.joint: required field missing"),
    ({"joint": "l1", "gain": 2.0}, None, "links[2].mimic.gain: unknown field"),
    ({"joint": "l1", "multiplier": "x"}, None, "links[2].mimic.multiplier"),
])
def test_bad_mimic_fields_are_one_line(l3, l2, message):
    with pytest.raises(ModelError) as info:
        robot_from_dict(_links(l3, l2))
    assert message in str(info.value) and "\n" not in str(info.value)


def test_lagrange_falls_back_and_the_statics_command_runs(tmp_path):
    """The energy-based formulation differentiates by the coordinates it traces: on a mimic robot
    Book's recursion is traced instead (noted), with the same numbers; `flexman statics` on a saved
    flexible mimic model reads the joint types of the independent joints (robot.joint_links)."""
    import json
    import subprocess
    import sys

    _, robot = _tree(tmp_path)
    eom = fm.derive(robot, formulation="lagrange")
    assert eom.fell_back and any("mimic joints" in n for n in eom.notes)
    _check_generated(robot, eom.compile("numpy"), np.random.default_rng(10))
    _, flexible = _tree(tmp_path, overlay=BEAMS)
    assert [link.name for link in flexible.joint_links] == ["l1", "l2", "l4"]
    path = fm.save(flexible, tmp_path / "flex.yaml")
    out = subprocess.run([sys.executable, "-m", "flexman.cli", "statics", str(path), "--q", "0.3", "0.2", "-0.1",
                          "--json"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    expected = fm.analysis.statics(flexible, np.array([0.3, 0.2, -0.1])).torques
    data = json.loads(out.stdout)
    assert "Traceback" not in out.stderr and data
    np.testing.assert_allclose(np.ravel(_first(data, "torques")), expected, rtol=1e-9)


def _first(data, key):
    """The first value under ``key`` anywhere in a JSON document."""
    if isinstance(data, dict):
        if key in data:
            return data[key]
        data = list(data.values())
    if isinstance(data, list):
        for item in data:
            found = _first(item, key)
            if found is not None:
                return found
    return None
