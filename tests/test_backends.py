"""Every feature on every backend it supports (the ``backend`` fixture, tests/backends.py):
floating bases (model file and URDF, with and without a beam), mimic joints, trees, flexible and
rigid serial arms. Each backend's mass matrix, bias forces and forward dynamics equal the
interpreted recursions at random states, and each simulating backend's RK4 run equals the
interpreted run, to 1e-10. The numeric path is itself checked against Pinocchio and the energy
oracle in test_trees, test_floating_file, test_urdf_real and test_mimic."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import flexman as fm
from backends import SIMULATING, model, run
from test_floating_file import MODEL as FLOATING_FILE
from test_mimic import tree_urdf
from test_trees import random_tree
from urdf_helpers import ROBOTS

pytestmark = pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")), reason="no C compiler")

BEAM = {"length": 1.0, "mass_per_length": 1.0, "EI": 200.0, "modes": {"y": 1, "z": 1}}
RIGID_FILE = FLOATING_FILE.replace("    beam: {length: 1.0, mass_per_length: 1.0, EI: 200.0, modes: {y: 1, z: 1}}\n", "")


def _write(tmp, name, text):
    path = tmp / name
    path.write_text(text)
    return path


def _urdf_floating(tmp, beam):
    """example-robot-data's double pendulum on a floating base (nq 8), its first link a beam or not."""
    if ROBOTS is None:
        pytest.skip("example-robot-data is not installed")
    urdf = ROBOTS / "double_pendulum_description" / "urdf" / "double_pendulum.urdf"
    plain = fm.load(urdf, floating=True)
    if not beam:
        return plain
    name = plain.links[6].name
    return fm.load(urdf, floating=True, overlay={"links": {name: {"beam": dict(BEAM, length=0.3)}}})


CASES = {
    "floating_file": lambda tmp: fm.load(_write(tmp, "sat.yaml", RIGID_FILE)),
    "floating_file_beam": lambda tmp: fm.load(_write(tmp, "satb.yaml", FLOATING_FILE)),
    "floating_urdf": lambda tmp: _urdf_floating(tmp, beam=False),
    "floating_urdf_beam": lambda tmp: _urdf_floating(tmp, beam=True),
    "mimic": lambda tmp: fm.load(_write(tmp, "tree.urdf", tree_urdf())),
    "tree": lambda tmp: random_tree(2, n=4),
    "flexible_serial": lambda tmp: fm.examples.load("flx_three_link"),
    "rigid_serial": lambda tmp: fm.examples.load("dynaman_2r"),
}
FMU_CASES = ("floating_file_beam", "floating_urdf", "mimic", "rigid_serial")  # FMU exports: a few seconds each


@pytest.fixture(scope="module")
def robots(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("backends")
    return {name: make(tmp) for name, make in CASES.items()}


def _state(robot, rng):
    q, qd = rng.uniform(-0.5, 0.5, robot.nq), rng.uniform(-0.5, 0.5, robot.nq)
    q[robot.flex_index] *= 0.02
    qd[robot.flex_index] *= 0.02
    return q, qd, rng.uniform(-1, 1, robot.n_joints)


def _close(a, b, tol=1e-10):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    assert a.shape == b.shape
    scale = max(1.0, float(np.abs(b).max()))
    assert float(np.abs(a - b).max()) <= tol * scale, float(np.abs(a - b).max())


@pytest.mark.parametrize("case", list(CASES))
def test_equations_equal_numeric(robots, backend, case):
    if backend in ("loop", "fmu"):
        pytest.skip(f"{backend} only simulates (test_runs_equal_numeric)")
    robot = robots[case]
    ev = model(robot, backend)
    rng = np.random.default_rng(5)
    for _ in range(2):
        q, qd, tau = _state(robot, rng)
        _close(ev.mass_matrix(q), robot.mass_matrix(q))
        _close(ev.bias_forces(q, qd), robot.bias_forces(q, qd))
        M = robot.mass_matrix(q)
        _close(ev.forward_dynamics(q, qd, tau), robot.forward_dynamics(q, qd, tau), 1e-12 * np.linalg.cond(M))


@pytest.mark.parametrize("case", list(CASES))
def test_runs_equal_numeric(robots, backend, case):
    if backend not in SIMULATING or backend == "numeric":
        pytest.skip(f"{backend}: no simulation of its own (test_equations_equal_numeric)")
    if backend == "fmu" and case not in FMU_CASES:
        pytest.skip("FMU export is checked on a few cases (each a C build)")
    robot = robots[case]
    rng = np.random.default_rng(9)
    q0, qd0, tau = _state(robot, rng)
    t, q, qd = run(robot, backend, 0.05, 1e-3, q0, qd0, tau)
    t_ref, q_ref, qd_ref = run(robot, "numeric", 0.05, 1e-3, q0, qd0, tau)
    _close(t, t_ref, 1e-12)
    _close(q, q_ref)
    _close(qd, qd_ref)
    assert np.abs(q_ref[-1] - q_ref[0]).max() > 1e-3  # it moved


def test_floating_default_backend_compiles_and_equals_numeric(robots, monkeypatch):
    """The default backend (``auto``) on a floating model file builds and uses the compiled model
    (issue: an IndexError in the parameter vector of a floating base)."""
    from flexman.simulate import backend as be

    robot = robots["floating_file_beam"]
    monkeypatch.setenv("FLEXMAN_BACKEND", "auto")
    monkeypatch.setattr(be, "worth_compiling", lambda robot, work: (True, ""))
    res = fm.simulate(robot, 0.05, dt=1e-3, progress=False)
    ref = fm.simulate(robot, 0.05, dt=1e-3, progress=False, backend="numeric")
    assert res.stats["backend"] == "compiled" and ref.stats["backend"] == "numeric"
    _close(res.q, ref.q)
    _close(res.qd, ref.qd)


def test_floating_plan_and_its_prescribed_run_on_compiled_equal_numeric(robots, monkeypatch):
    """fm.plan of a floating flexible arm on the default backend (the dense torque check simulates
    the plan compiled) equals the plan on the numeric backend; the plan's prescribed run too."""
    from flexman.simulate import backend as be

    robot = robots["floating_file_beam"]
    q0 = np.zeros(robot.n_joints)
    goal = q0.copy()
    goal[6] = 0.3
    limits = {"torque": [50.0] * robot.n_joints}
    monkeypatch.setattr(be, "worth_compiling", lambda robot, work: (True, ""))
    plans = {}
    for name in ("auto", "numeric"):
        monkeypatch.setenv("FLEXMAN_BACKEND", name)
        plans[name] = fm.plan(robot, q0, goal, duration=0.5, knots=20, limits=limits)
    a, b = plans["auto"], plans["numeric"]
    _close(a.q, b.q)
    _close(a.report["dense"]["simulated_torque_peak"], b.report["dense"]["simulated_torque_peak"])
    runs = [fm.simulate(robot, a.duration, dt=a.h / 4, prescribed=a.trajectory, q0=a.q[0], qd0=a.qd[0],
                        progress=False, backend=kind) for kind in ("compiled", "numeric")]
    assert runs[0].stats["backend"] == "compiled"
    _close(runs[0].q, runs[1].q)
    _close(runs[0].tau, runs[1].tau)
    assert np.abs(runs[1].q[-1, 6] - 0.3) < 1e-6


def test_floating_fmu_from_the_cli_equals_numeric(robots, tmp_path):
    """``flexman export MODEL --fmu`` of a floating model file (compiled C inside the FMU): its
    co-simulation equals the numeric RK4 run."""
    import fmpy

    from flexman import cli

    path = _write(tmp_path, "sat.yaml", FLOATING_FILE)
    out = tmp_path / "sat.fmu"
    assert cli.main(["export", str(path), "--fmu", str(out), "--kind", "cs"]) in (0, None)
    robot = robots["floating_file_beam"]
    q0, qd0, tau = _state(robot, np.random.default_rng(3))
    names = robot.coordinate_names
    start = {**{n: float(v) for n, v in zip(names, q0)}, **{f"qd_{n}": float(v) for n, v in zip(names, qd0)},
             **{f"tau{j + 1}": float(t) for j, t in enumerate(tau)}, "step_size": 1e-3}
    res = fmpy.simulate_fmu(str(out), fmi_type="CoSimulation", stop_time=0.05, output_interval=1e-3, start_values=start)
    _, q_ref, _ = run(robot, "numeric", 0.05, 1e-3, q0, qd0, tau)
    _close(np.stack([res[n] for n in names], axis=-1), q_ref)
