"""A floating flexible robot through the doors that compile (issue 34): ``fm.plan`` on the default
backend (its dense torque check simulates the plan compiled) equals the plan on the numeric
backend, the plan's prescribed run compiled equals the numeric one, and ``flexman export --fmu``
of the model file gives an FMU whose co-simulation equals the numeric RK4 run, to 1e-10."""
from __future__ import annotations

import numpy as np
import pytest

import flexman as fm
from backends import SATELLITE_FILE_BEAM, states

pytest.importorskip("casadi")
TEXT = SATELLITE_FILE_BEAM  # the floating bus with a flexible boom


@pytest.fixture(scope="module")
def floating(tmp_path_factory):
    path = tmp_path_factory.mktemp("floating") / "sat.yaml"
    path.write_text(TEXT)
    robot = fm.load(path)
    assert robot.links[0].name.endswith("_x") and any(link.is_flexible for link in robot.links)
    return path, robot


def _close(a, b, tol=1e-10):
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert np.abs(a - b).max() <= tol * max(1.0, np.abs(b).max()), np.abs(a - b).max()


def test_floating_plan_on_the_default_backend_equals_numeric(floating, monkeypatch):
    from flexman.simulate import backend as be

    _, robot = floating
    q0 = np.zeros(robot.n_joints)
    goal = q0.copy()
    goal[-2] = 0.3  # the boom's joint
    limits = {"torque": [50.0] * robot.n_joints}
    monkeypatch.setattr(be, "worth_compiling", lambda robot, work: (True, ""))  # compiled however short
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
    assert abs(runs[1].q[-1, robot.n_joints - 2] - 0.3) < 1e-6


def test_floating_fmu_from_the_cli_equals_numeric(floating, tmp_path):
    fmpy = pytest.importorskip("fmpy")
    from flexman import cli

    path, robot = floating
    out = tmp_path / "sat.fmu"
    assert cli.main(["export", str(path), "--fmu", str(out), "--kind", "cs"]) in (0, None)
    q0, qd0, tau = states(robot, 1, seed=3)[0]
    names = robot.coordinate_names
    start = {**{n: float(v) for n, v in zip(names, q0)}, **{f"qd_{n}": float(v) for n, v in zip(names, qd0)},
             **{f"tau{j + 1}": float(t) for j, t in enumerate(tau)}, "step_size": 1e-3}
    res = fmpy.simulate_fmu(str(out), fmi_type="CoSimulation", stop_time=0.05, output_interval=1e-3, start_values=start)
    ref = fm.simulate(robot, 0.05, dt=1e-3, method="rk4", q0=q0, qd0=qd0, torque=tau, backend="numeric", progress=False)
    _close(np.stack([res[n] for n in names], axis=-1), ref.q)
    assert np.abs(ref.q[-1] - ref.q[0]).max() > 1e-3
