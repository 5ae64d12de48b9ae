"""FMU co-simulation with generalized-alpha (issue 33): an FMU exported with
``method="generalized_alpha"`` (or chosen by "auto" where RK4 at the step size is unstable), run by
FMPy, an independent FMI importer, equals ``fm.simulate(method="generalized_alpha")`` of the same
model; the rates the method carries survive the communication steps."""
from __future__ import annotations

import json

import fmpy
import numpy as np
import pytest
from fmpy import read_model_description

import flexman as fm
from flexman import cli
from flexman.codegen.fmu import co_simulation_method
from flexman.control import PID
from flexman.simulate.stability import largest_stable_step
from test_fmu import hold, one_line_error, set_points, start_state, torque

T_FINAL = 0.5


def _run(path, robot, step_size, interval, extra=None):
    q0, qd0 = start_state(robot)
    values = {n: float(v) for n, v in zip(robot.coordinate_names, q0)}
    values.update({f"qd_{n}": float(v) for n, v in zip(robot.coordinate_names, qd0)})
    values.update({f"tau{j + 1}": float(t) for j, t in enumerate(torque(robot))})
    values.update(step_size=step_size, **(extra or {}))
    res = fmpy.simulate_fmu(str(path), fmi_type="CoSimulation", stop_time=T_FINAL, output_interval=interval,
                            start_values=values)
    return np.stack([res[n] for n in robot.coordinate_names], axis=-1), res


def _reference(robot, dt, **run):
    q0, qd0 = start_state(robot)
    return fm.simulate(robot, T_FINAL, dt=dt, q0=q0, qd0=qd0, method="generalized_alpha", progress=False, **run)


@pytest.fixture(scope="module")
def arm():
    return fm.examples.load("flx_three_link")


def test_generalized_alpha_fmu_equals_simulate(arm, tmp_path):
    """Above RK4's stability limit of the arm's modes (15 ms): "auto" picks generalized-alpha; two
    internal steps per communication step, the rates carried across them."""
    h = 0.02
    assert h > largest_stable_step(arm) and co_simulation_method(arm, "auto", h) == "generalized_alpha"
    path = fm.derive(arm).fmu(tmp_path / "arm.fmu", kind="cs", step_size=h)
    described = {v.name: v.description for v in read_model_description(str(path)).modelVariables}
    assert "generalized-alpha" in described["step_size"]
    q, _ = _run(path, arm, h, 2 * h)
    ref = _reference(arm, h, torque=torque(arm), backend="numeric")
    want = np.vstack([ref.q[::2], ref.q[-1:]])  # 0, 0.04, ..., 0.48, and FMPy's last, shorter step to 0.5
    assert q.shape == want.shape
    assert np.abs(q - want).max() < 1e-8
    finer, _ = _run(path, arm, h / 4, 2 * h)  # step_size set through FMPy: a run of its own
    assert np.abs(finer - want).max() > 1e-6


def test_pid_fmu_with_generalized_alpha_equals_simulate(arm, tmp_path):
    """The model file's PID on constant set-points, its gains making the loop stiff (RK4 needs
    dt <= 6 ms): the FMU at 10 ms by generalized-alpha against fm.simulate with that PID."""
    spec = arm.controller
    target = [0.2, 0.1, 0.2]
    pid = PID(arm, hold(target), spec["kp"], spec["ki"], spec["kd"], off_at=spec["off_at"])
    path = fm.derive(arm).fmu(tmp_path / "pid.fmu", kind="cs", controller=fm.control.from_spec(arm, spec),
                               method="generalized_alpha", rho_inf=0.5)
    q, res = _run(path, arm, 0.01, 0.01, extra=set_points(arm, target))
    ref = _reference(arm, 0.01, controller=pid, torque=torque(arm), rho_inf=0.5, backend="numeric")
    assert np.abs(q - ref.q).max() < 1e-8
    tau = np.stack([res[f"tau_applied{j + 1}"] for j in range(3)], axis=-1)
    assert np.abs(tau - ref.tau).max() < 1e-8 * np.abs(ref.tau).max()
    assert np.abs(ref.q[-1, :3] - ref.q[0, :3]).max() > 0.05  # it moved


def test_cli_method_and_bad_input(tmp_path, capsys):
    path = tmp_path / "a.fmu"
    assert cli.main(["export", "dynaman_2r", "--fmu", str(path), "--kind", "cs", "--method", "generalized_alpha",
                     "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["method"] == "generalized_alpha"
    assert co_simulation_method(fm.examples.load("dynaman_2r"), "auto", 0.5) == "rk4"  # rigid: no stiff mode
    one_line_error(capsys, ["export", "dynaman_2r", "--fmu", str(tmp_path / "b.fmu"), "--rho-inf", "1.5"],
                   r"rho_inf: must be a number in [0, 1]")
    one_line_error(capsys, ["export", "dynaman_2r", "--fmu", str(tmp_path / "b.fmu"), "--method", "euler"],
                   "--method")
    with pytest.raises(ValueError, match="method: unknown 'euler'") as info:
        fm.derive(fm.examples.load("dynaman_2r")).fmu(tmp_path / "c.fmu", method="euler")
    assert "\n" not in str(info.value)
