"""FMU co-simulation with the implicit methods (issue 33): an FMU exported with
``method="generalized_alpha"`` (or chosen by "auto" where RK4 at the step size is unstable) or
``method="radau5"``, run by FMPy, an independent FMI importer, equals ``fm.simulate`` with that
method of the same model; the rates the method carries survive the communication steps. Newton's
Jacobian inside the FMU is the analytic one of the compiled loop (the model's partial derivatives
compiled in): the same Newton iterations as ``fm.simulate``'s compiled loop, and far fewer
right-hand sides than the forward differences the FMU used before (the compiled loop's run without
partials). The FMU reports its work in one log line at fmi2Terminate."""
from __future__ import annotations

import json
import re

import fmpy
import numpy as np
import pytest
from fmpy import read_model_description
from fmpy.validation import validate_fmu

import flexman as fm
from flexman import cli
from flexman.codegen.fmu import co_simulation_method
from flexman.control import PID
from flexman.simulate import compiled_loop
from flexman.simulate.stability import largest_stable_step
from test_fmu import fmpy_logger_restored, hold, one_line_error, set_points, start_state, torque  # noqa: F401

T_FINAL = 0.5


def _run(path, robot, step_size, interval, extra=None, stats=None, t_final=T_FINAL):
    """(q, FMPy's result) of a co-simulation; ``stats``: a dict that receives the FMU's statistics
    (its log line at fmi2Terminate, logging on)."""
    q0, qd0 = start_state(robot)
    values = {n: float(v) for n, v in zip(robot.coordinate_names, q0)}
    values.update({f"qd_{n}": float(v) for n, v in zip(robot.coordinate_names, qd0)})
    values.update({f"tau{j + 1}": float(t) for j, t in enumerate(torque(robot))})
    values.update(step_size=step_size, **(extra or {}))
    lines = []
    res = fmpy.simulate_fmu(str(path), fmi_type="CoSimulation", stop_time=t_final, output_interval=interval,
                            start_values=values, debug_logging=stats is not None,
                            logger=lambda *args: lines.append((args[3].decode(), args[4].decode())))
    if stats is not None:
        found = [m for c, m in lines if c == "logStatistics"]
        assert len(found) == 1, lines
        stats.update({k: int(v) if v.isdigit() else v for k, v in re.findall(r"(\w+)=(\w+)", found[0])})
    return np.stack([res[n] for n in robot.coordinate_names], axis=-1), res


def _reference(robot, dt, **run):
    q0, qd0 = start_state(robot)
    return fm.simulate(robot, T_FINAL, dt=dt, q0=q0, qd0=qd0, method="generalized_alpha", progress=False, **run)


@pytest.fixture(scope="module")
def arm():
    return fm.examples.load("flx_three_link")


@pytest.fixture(scope="module")
def galpha_fmu(arm, tmp_path_factory):
    """The arm's co-simulation FMU at step_size 20 ms, its method chosen by "auto"."""
    return fm.derive(arm).fmu(tmp_path_factory.mktemp("galpha") / "arm.fmu", kind="cs", step_size=0.02)


def test_generalized_alpha_fmu_equals_simulate(arm, galpha_fmu):
    """Above RK4's stability limit of the arm's modes (15 ms): "auto" picks generalized-alpha; two
    internal steps per communication step, the rates carried across them."""
    h = 0.02
    assert h > largest_stable_step(arm) and co_simulation_method(arm, "auto", h) == "generalized_alpha"
    path = galpha_fmu
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


def test_generalized_alpha_fmu_uses_the_analytic_jacobian(arm, galpha_fmu, monkeypatch):
    """The FMU's Newton iteration against the compiled loop's (fm.simulate, the model compiled with
    its partial derivatives): the same run to round-off, the same iterations and Jacobians, all
    analytic; the forward-difference Jacobian (the compiled loop without partials, what the FMU
    did before) costs nx right-hand sides per Jacobian more."""
    h = 0.02
    arm.compiled(derivatives=True)
    stats = {}
    q, _ = _run(galpha_fmu, arm, h, h, stats=stats)
    q0, qd0 = start_state(arm)
    kw = dict(dt=h, q0=q0, qd0=qd0, method="generalized_alpha", progress=False, torque=torque(arm), backend="compiled")
    ref = fm.simulate(arm, T_FINAL, **kw)
    assert ref.stats["loop"] == "compiled" and ref.stats["jacobian"] == "analytic"
    assert np.abs(q - ref.q).max() < 1e-12 * np.abs(ref.q).max()
    assert stats["jacobian"] == "analytic" and stats["analytic_jacobians"] == stats["jacobians"] > 0
    assert stats["steps"] == len(ref.t) - 1
    for key in ("newton_iterations", "jacobians"):
        assert stats[key] == ref.stats[key], key
    assert stats["rhs_evaluations"] == ref.stats["rhs_evaluations"] - 1  # fm.simulate: also the last torque
    monkeypatch.setattr(compiled_loop, "partials_model", lambda model: None)
    fd = fm.simulate(arm, T_FINAL, **kw)
    assert fd.stats["jacobian"] == "finite differences"
    assert stats["newton_iterations"] <= fd.stats["newton_iterations"]
    assert stats["rhs_evaluations"] + 2 * arm.nq * stats["jacobians"] <= fd.stats["rhs_evaluations"]


@pytest.fixture(scope="module")
def radau_pid(arm, tmp_path_factory):
    """(FMU by radau5 with the model file's PID, set-points, the PID on that constant reference)."""
    spec = arm.controller
    target = [0.2, 0.1, 0.2]
    arm.compiled(derivatives=True)
    path = fm.derive(arm).fmu(tmp_path_factory.mktemp("radau") / "pid.fmu", kind="cs", method="radau5",
                               controller=fm.control.from_spec(arm, spec), rtol=1e-6, atol=1e-8)
    pid = PID(arm, fm.trajectory.rest_to_rest(target, target, 1.0), spec["kp"], spec["ki"], spec["kd"],
              off_at=spec["off_at"])
    return path, set_points(arm, target), pid


def _radau_reference(arm, pid, dt, rtol, atol, t_final=0.3):
    q0, qd0 = start_state(arm)
    return fm.simulate(arm, t_final, dt=dt, q0=q0, qd0=qd0, method="radau5", rtol=rtol, atol=atol, controller=pid,
                       torque=torque(arm), progress=False, backend="compiled")


def test_radau5_fmu_takes_the_compiled_loops_steps(arm, radau_pid):
    """One communication step over the run: the FMU's Radau IIA takes fm.simulate's steps (the same
    C), so the end state and every count agree; the stiff PID loop moved the arm."""
    path, points, pid = radau_pid
    described = {v.name: v for v in read_model_description(str(path)).modelVariables}
    assert described["rtol"].start == "1e-06" and described["atol"].start == "1e-08"
    assert "Radau IIA" in described["step_size"].description and validate_fmu(str(path)) == []
    stats = {}
    q, _ = _run(path, arm, 1.0, 0.3, extra=points, stats=stats, t_final=0.3)
    ref = _radau_reference(arm, pid, 0.3, 1e-6, 1e-8)
    assert ref.stats["loop"] == "compiled" and ref.stats["jacobian"] == "analytic"
    assert np.abs(q - ref.q).max() < 1e-12
    assert stats["jacobian"] == "analytic"
    for key in ("steps", "rejected_steps", "newton_iterations", "jacobians", "lu_decompositions",
                "rhs_evaluations"):
        assert stats[key] == ref.stats[key], key
    assert np.abs(ref.q[-1, :3] - ref.q[0, :3]).max() > 0.3


def test_radau5_fmu_over_communication_steps_meets_its_tolerance(arm, radau_pid):
    """Communication steps of 10 ms (the steps end there; the method's state carries over): the FMU
    against a run at tolerances 1e5 times tighter, its error falling with rtol set through FMPy,
    and against fm.simulate with the same tolerances (whose samples come from dense output)."""
    path, points, pid = radau_pid
    fine = _radau_reference(arm, pid, 0.01, 1e-11, 1e-13)
    errors = []
    for rtol in (1e-4, 1e-6):
        q, _ = _run(path, arm, 1.0, 0.01, extra=dict(points, rtol=rtol, atol=1e-2 * rtol), t_final=0.3)
        assert q.shape == fine.q.shape
        errors.append(np.abs(q - fine.q).max())
    assert errors[1] < 5e-9 and errors[0] > 10 * errors[1], errors
    same = _radau_reference(arm, pid, 0.01, 1e-6, 1e-8)
    assert np.abs(same.q - fine.q).max() < 1e-8
    assert np.abs(q - same.q).max() < 1e-8


def test_radau5_fmu_starts_again_where_an_input_changes(tmp_path):
    """FMPy sets the torque inputs before every communication step; where they change (a step at
    0.15 s) the FMU's Radau IIA starts again from the state there, where they do not it goes on: the
    run equals two fm.simulate runs chained at 0.15 s, each over one interval, step for step."""
    robot = fm.examples.load("dynaman_2r")
    robot.compiled(derivatives=True)
    path = fm.derive(robot).fmu(tmp_path / "r.fmu", kind="cs", method="radau5", rtol=1e-7, atol=1e-9, step_size=1.0)
    signal = np.array([(0.0, 2.0, 0.5), (0.15, 2.0, 0.5), (0.15, -1.0, 1.5), (0.3, -1.0, 1.5)],
                      dtype=[("time", float), ("tau1", float), ("tau2", float)])
    lines = []
    res = fmpy.simulate_fmu(str(path), fmi_type="CoSimulation", stop_time=0.3, output_interval=0.15, input=signal,
                            start_values={"q1": 0.3, "qd_q1": 1.0}, debug_logging=True,
                            logger=lambda *args: lines.append(args[-1].decode()))
    stats = dict(re.findall(r"(\w+)=(\w+)", lines[-1]))
    q = np.stack([res["q1"], res["q2"]], axis=-1)
    kw = dict(dt=0.15, method="radau5", rtol=1e-7, atol=1e-9, progress=False, backend="compiled")
    first = fm.simulate(robot, 0.15, q0=[0.3, 0.0], qd0=[1.0, 0.0], torque=[2.0, 0.5], **kw)
    second = fm.simulate(robot, 0.15, q0=first.q[-1], qd0=first.qd[-1], torque=[-1.0, 1.5], **kw)
    assert np.abs(q[1] - first.q[-1]).max() < 1e-12 and np.abs(q[2] - second.q[-1]).max() < 1e-12
    assert int(stats["steps"]) == first.stats["steps"] + second.stats["steps"]
    assert np.abs(second.q[-1] - first.q[-1]).max() > 0.1


def test_cli_radau5_and_its_bad_tolerances(tmp_path, capsys):
    path = tmp_path / "r.fmu"
    assert cli.main(["export", "dynaman_2r", "--fmu", str(path), "--kind", "cs", "--method", "radau5",
                     "--rtol", "1e-7", "--atol", "1e-9", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["method"] == "radau5"
    described = {v.name: v.start for v in read_model_description(str(path)).modelVariables}
    assert float(described["rtol"]) == 1e-7 and float(described["atol"]) == 1e-9
    bad = ["export", "dynaman_2r", "--fmu", str(tmp_path / "b.fmu")]
    one_line_error(capsys, bad + ["--method", "radau5", "--rtol", "0"], "--rtol: must be a finite number > 0")
    one_line_error(capsys, bad + ["--method", "radau5", "--atol", "-1e-9"], "--atol: must be a finite number > 0")
    one_line_error(capsys, bad + ["--method", "radau5", "--rtol", "inf"], "--rtol: expected a finite number")
    one_line_error(capsys, bad + ["--method", "rk4", "--rtol", "1e-6"], "--rtol: only radau5 has tolerances")
    one_line_error(capsys, bad + ["--method", "radau"], "radau5")
    one_line_error(capsys, bad + ["--derivatives", "--kind", "cs"], "derivatives: directional derivatives are model "
                   "exchange's")
    with pytest.raises(ValueError, match=r"^atol: must be a finite number > 0") as info:
        fm.derive(fm.examples.load("dynaman_2r")).fmu(tmp_path / "c.fmu", method="radau5", atol=float("nan"))
    assert "\n" not in str(info.value)
