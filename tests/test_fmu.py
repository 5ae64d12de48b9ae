"""FMU export (``fm.derive(robot).fmu``, ``flexman export --fmu``) against FMPy, an independent
FMI importer: its validation accepts the FMUs, and its simulations (model exchange with its
CVODE, co-simulation with the FMU's RK4) equal ``fm.simulate`` of the same model run on the
interpreted (numeric) path: a rigid arm, the thesis three-link arm and a stiffened beam. The
physics has references outside flexman's models too: the rigid arm's trajectory equals RK4 on
Pinocchio's pin.aba, the stiffened beam's obeys the energy-Lagrangian oracle's equations."""
from __future__ import annotations

import ctypes
import subprocess
import zipfile
from pathlib import Path

import fmpy
import numpy as np
import pytest
from fmpy.fmi1 import printLogMessage
from fmpy.fmi2 import fmi2CallbackFunctions, fmi2CallbackLoggerTYPE
from fmpy.logging import addLoggerProxy
from fmpy.validation import validate_fmu

import flexman as fm
from flexman import cli
from flexman.analysis.tip import tip_offset
from flexman.codegen.cbuild import compiler
from flexman.control import PID, ComputedTorque, Decoupling
from flexman.model.serialize import robot_from_dict, robot_to_dict
from flexman.symbolic.params import parameter_values

T_FINAL, DT = 0.2, 1e-3
_LIVE_LOGGER = fmi2CallbackLoggerTYPE(printLogMessage)  # FMPy's own printer, alive for the session


@pytest.fixture(autouse=True)
def fmpy_logger_restored():
    """After each test, FMPy's logger proxy points at a live logger again. The proxy keeps the logger
    of the last ``simulate_fmu(logger=...)`` in a C global, freed when that call returns: an FMU
    logging through FMPy's default callbacks later in the process would call freed memory (it
    crashed a later test of the same worker)."""
    yield
    callbacks = fmi2CallbackFunctions()
    callbacks.logger = _LIVE_LOGGER
    addLoggerProxy(ctypes.byref(callbacks))


def stiffened_pendulum(mass_per_length=2.73875, damping=0.02, payload=1.0):
    """The thesis's flexible pendulum (4 m tube, one mode per plane) with geometric stiffening,
    modal damping and a payload: every kind of physical parameter the FMU exposes."""
    data = robot_to_dict(fm.examples.load("flx_flexible_pendulum"))
    beam = data["links"][0]["beam"]
    beam.update(stiffening=True, damping=damping, mass_per_length=mass_per_length)
    data["payload"] = {"mass": payload, "com": [0.0, 0.0, 0.0], "inertia": [0.01, 0.01, 0.01]}
    data["name"] = "stiff_pendulum"
    return robot_from_dict(data)


def rebuilt(name, change):
    """The model ``name`` rebuilt from its model-file data after ``change(data)``."""
    data = robot_to_dict(MODELS[name]())
    change(data)
    return robot_from_dict(data)


MODELS = {"dynaman_2r": lambda: fm.examples.load("dynaman_2r"),
          "flx_three_link": lambda: fm.examples.load("flx_three_link"),
          "stiff_pendulum": stiffened_pendulum}


def start_state(robot):
    """A moving start: joint 1 displaced and turning, the rest at rest."""
    q0, qd0 = np.zeros(robot.nq), np.zeros(robot.nq)
    q0[0], qd0[0] = 0.3, 2.0
    return q0, qd0


def torque(robot):
    return np.r_[5.0, np.zeros(robot.n_joints - 1)]


def start_values(robot, extra=None):
    """FMPy start values: the start state and the torque inputs."""
    q0, qd0 = start_state(robot)
    values = {n: float(v) for n, v in zip(robot.coordinate_names, q0)}
    values.update({f"qd_{n}": float(v) for n, v in zip(robot.coordinate_names, qd0)})
    values.update({f"tau{j + 1}": float(t) for j, t in enumerate(torque(robot))})
    values["step_size"] = DT
    values.update(extra or {})
    return values


def fmpy_run(path, robot, kind, extra=None, dt=DT):
    """(q, qd, result) of an FMPy simulation of the FMU over [0, T_FINAL], sampled every dt."""
    options = dict(fmi_type=kind, stop_time=T_FINAL, output_interval=dt, start_values=start_values(robot, extra))
    if kind == "ModelExchange":
        options.update(solver="CVode", relative_tolerance=1e-10)
    res = fmpy.simulate_fmu(str(path), **options)
    names = robot.coordinate_names
    return (np.stack([res[n] for n in names], axis=-1), np.stack([res[f"qd_{n}"] for n in names], axis=-1), res)


def reference(robot, dt=DT, **kw):
    q0, qd0 = start_state(robot)
    return fm.simulate(robot, T_FINAL, dt=dt, q0=q0, qd0=qd0, torque=torque(robot), backend="numeric", **kw)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """{name: (robot, FMU path, numeric RK4 reference)}, built once for the module."""
    folder = tmp_path_factory.mktemp("fmu")
    out = {}
    for name, make in MODELS.items():
        robot = make()
        out[name] = (robot, fm.derive(robot).fmu(folder / f"{name}.fmu"), reference(robot))
    return out


@pytest.mark.parametrize("name", list(MODELS))
def test_fmpy_validation_accepts_the_fmu(exported, name):
    assert validate_fmu(str(exported[name][1])) == []


@pytest.mark.parametrize("name", list(MODELS))
def test_co_simulation_equals_simulate(exported, name):
    """The FMU's RK4 at the output step is fm.simulate's RK4 at the same step, to roundoff."""
    robot, path, ref = exported[name]
    q, qd, res = fmpy_run(path, robot, "CoSimulation")
    assert np.allclose(res["time"], ref.t, atol=1e-12, rtol=0)
    assert np.max(np.abs(q - ref.q)) < 1e-10
    assert np.max(np.abs(qd - ref.qd)) < 1e-9 * max(1.0, np.max(np.abs(ref.qd)))
    assert np.max(np.abs(ref.q[-1] - ref.q[0])) > 0.1  # the arm moved


def test_rigid_fmu_trajectory_equals_pinocchio(exported):
    """Physics from outside flexman: the rigid arm's FMU co-simulation equals RK4 written here
    on Pinocchio's articulated-body accelerations (pin.aba, its model built from the DH data by
    test_rigid.pinocchio_model), same step, to 1e-10."""
    pin = pytest.importorskip("pinocchio")
    from test_rigid import pinocchio_model

    robot, path, _ = exported["dynaman_2r"]
    q, qd, _ = fmpy_run(path, robot, "CoSimulation")
    model = pinocchio_model(robot)
    data = model.createData()
    viscous = np.array([link.viscous for link in robot.links])
    tau = torque(robot)

    def f(x):
        n = robot.nq
        return np.concatenate([x[n:], pin.aba(model, data, x[:n], x[n:], tau - viscous * x[n:])])

    from rk4_reference import rk4_path

    ref = rk4_path(f, np.concatenate(start_state(robot)), DT, len(q) - 1)
    assert np.max(np.abs(q - ref[:, :robot.nq])) < 1e-10
    assert np.max(np.abs(qd - ref[:, robot.nq:])) < 1e-9 * max(1.0, np.abs(ref[:, robot.nq:]).max())


def test_flexible_fmu_trajectory_satisfies_the_energy_oracle(exported):
    """The stiffened, damped pendulum's FMU trajectory obeys the equations of motion of the
    energy-Lagrangian oracle (its own constants from the model data, flexman.oracles): at sampled
    instants M(q) qdd + b(q, qd) = S tau, qdd by central differences of the FMU's rates
    (error O(dt^2)), against the size of the terms."""
    from flexman.oracles.energy_lagrangian import EnergyLagrangian

    robot, path, _ = exported["stiff_pendulum"]
    q, qd, _ = fmpy_run(path, robot, "CoSimulation")
    oracle = EnergyLagrangian(robot)
    force = np.r_[torque(robot), np.zeros(robot.nq - robot.n_joints)]
    for k in (20, 90, 160):
        qdd = (qd[k + 1] - qd[k - 1]) / (2 * DT)
        M, b = oracle.mass_matrix(q[k]), oracle.bias_forces(q[k], qd[k])
        scale = np.abs(M @ qdd).max() + np.abs(b).max()
        assert np.abs(M @ qdd + b - force).max() < 2e-5 * scale, (k, M @ qdd + b - force)  # (3e-6 seen; a 50 % damping error: 2.5e-4)


def test_co_simulation_takes_sub_steps_of_step_size(exported):
    """A communication step of 2 ms with step_size 1 ms: two internal RK4 steps, so every other
    sample of the 1 ms run."""
    robot, path, ref = exported["dynaman_2r"]
    q, _, res = fmpy_run(path, robot, "CoSimulation", dt=2 * DT)
    assert len(res) == len(ref.t[::2])
    assert np.max(np.abs(q - ref.q[::2])) < 1e-10


@pytest.mark.parametrize("name", list(MODELS))
def test_model_exchange_equals_simulate(exported, name):
    """FMPy integrates the FMU's derivatives with CVODE; fm.simulate's RK4 at 1 ms is accurate
    to about 1e-9 on these arms (slowest mode periods above 50 ms)."""
    robot, path, ref = exported[name]
    q, qd, _ = fmpy_run(path, robot, "ModelExchange")
    assert np.max(np.abs(q - ref.q)) < 1e-6
    assert np.max(np.abs(qd - ref.qd)) < 1e-6 * max(1.0, np.max(np.abs(ref.qd)))


def test_outputs_are_the_end_effector_and_tip_deflections(exported):
    """ee_* is the last distal frame's origin, tip<i>_d* each flexible link's tip offset, on
    the FMU's own states (robot.frame and analysis.tip_offset evaluate them numerically)."""
    robot, path, _ = exported["flx_three_link"]
    q, _, res = fmpy_run(path, robot, "CoSimulation")
    ee = np.stack([res[f"ee_{c}"] for c in "xyz"], axis=-1)
    assert np.max(np.abs(ee - robot.frame(q, -1)[..., :3, 3])) < 1e-12
    for link in (2, 3):
        tip = np.stack([res[f"tip{link}_d{c}"] for c in "xyz"], axis=-1)
        expected = tip_offset(robot, q, link=link - 1)
        assert np.max(np.abs(tip - expected)) < 1e-12
        assert np.max(np.abs(expected)) > 1e-4  # the links did bend


CHANGES = {  # name: (what the model file changes, checked against a rebuilt model)
    "dynaman_2r": lambda d: d["links"][1].update(mass=2.5),
    "stiff_pendulum": lambda d: (d["links"][0]["beam"].update(EI=[15000.0, 40000.0], damping=0.1,
                                                             mass_per_length=3.5), d.update(payload={
                                     "mass": 2.0, "com": [0.0, 0.0, 0.0], "inertia": [0.02, 0.02, 0.02]})),
}


@pytest.mark.parametrize("name", list(CHANGES))
def test_parameters_set_through_fmpy_act_as_a_rebuilt_model(exported, name):
    """Setting the FMU's parameters to a changed model's values (masses, EI, damping, payload)
    gives that model's simulation, without a new FMU."""
    robot, path, ref = exported[name]
    changed = rebuilt(name, CHANGES[name])
    new = {k: v for k, v in parameter_values(changed).items() if parameter_values(robot).get(k) != v}
    assert set(new) <= set(parameter_values(robot)) and new
    q, qd, _ = fmpy_run(path, robot, "CoSimulation", extra=new)
    expected = reference(changed)
    assert np.max(np.abs(q - expected.q)) < 1e-10
    assert np.max(np.abs(q - ref.q)) > 1e-4  # the change matters


@pytest.fixture(scope="module")
def controlled(tmp_path_factory):
    """flx_three_link exported with its model file's PID controllers by the command line."""
    path = tmp_path_factory.mktemp("fmu_cli") / "three_link_pid.fmu"
    assert cli.main(["export", "flx_three_link", "--fmu", str(path), "--controller"]) == 0
    return path


def hold(target):
    """A constant reference: what the FMU's set-point inputs give its controller."""
    target = np.asarray(target, dtype=float)
    return lambda t: (target, np.zeros_like(target), np.zeros_like(target))


def set_points(robot, target):
    return {f"{n}_ref": float(v) for n, v in zip(robot.coordinate_names, target)}


def on_grid(res, names, dt=DT):
    """FMPy's samples at 0, dt, ... (model exchange adds samples at events)."""
    t = dt * np.arange(int(round(T_FINAL / dt)) + 1)
    return np.stack([np.interp(t, res["time"], res[n]) for n in names], axis=-1)


@pytest.mark.parametrize("kind", ["CoSimulation", pytest.param("ModelExchange", marks=pytest.mark.slow)])
def test_pid_fmu_equals_simulate_with_the_models_pid(controlled, kind):
    """The model file's PID on constant set-points (inputs) = fm.simulate with that PID, also
    when a torque input is added to it; the applied torques are outputs. The closed loop's
    fast transient needs RK4 at 0.25 ms to be a reference for CVODE to 1e-6 (at 1 ms its rate
    error is 2e-4)."""
    robot = fm.examples.load("flx_three_link")
    spec = robot.controller
    target = [0.2, 0.1, 0.2]
    pid = PID(robot, hold(target), spec["kp"], spec["ki"], spec["kd"], off_at=spec["off_at"])
    assert validate_fmu(str(controlled)) == []
    dt = DT if kind == "CoSimulation" else DT / 4
    _, _, res = fmpy_run(controlled, robot, kind, extra=set_points(robot, target), dt=dt)
    expected = reference(robot, dt=dt, controller=pid)
    q = on_grid(res, robot.coordinate_names, dt)
    tau = on_grid(res, [f"tau_applied{j + 1}" for j in range(3)], dt)
    assert np.max(np.abs(q - expected.q)) < (1e-10 if kind == "CoSimulation" else 1e-6)
    error = np.max(np.abs(tau - expected.tau)) / np.max(np.abs(expected.tau))
    assert error < (1e-10 if kind == "CoSimulation" else 1e-6)
    assert np.max(np.abs(expected.q[-1, :3] - expected.q[0, :3])) > 0.05


def test_pid_switch_off_and_gains_set_through_fmpy(tmp_path):
    """A PID switched off mid-run (off_at between RK4 stages) and gains changed through FMPy:
    co-simulation equals fm.simulate with those gains and that switch-off."""
    robot = fm.examples.load("dynaman_2r")
    pid = PID(robot, hold([0.5, -0.3]), [40.0, 30.0], [5.0, 4.0], [8.0, 6.0], off_at=0.1505)
    path = fm.derive(robot).fmu(tmp_path / "pid.fmu", controller=pid, kind="cs")
    assert validate_fmu(str(path)) == []
    new_gains = {"kp1": 60.0, "ki2": 9.0, "kd1": 4.0}
    q, _, _ = fmpy_run(path, robot, "CoSimulation", extra={**set_points(robot, [0.5, -0.3]), **new_gains})
    changed = PID(robot, hold([0.5, -0.3]), [60.0, 30.0], [5.0, 9.0], [4.0, 6.0], off_at=0.1505)
    expected = reference(robot, controller=changed)
    assert np.max(np.abs(q - expected.q)) < 1e-10
    assert np.max(np.abs(q - reference(robot, controller=pid).q)) > 1e-4  # the gains matter


@pytest.fixture(scope="module")
def computed_torque(tmp_path_factory):
    robot = fm.examples.load("dynaman_2r")
    law = ComputedTorque(robot, hold([0.5, -0.3]), [100.0, 100.0], [20.0, 20.0])
    return robot, law, fm.derive(robot).fmu(tmp_path_factory.mktemp("ct") / "ct.fmu", controller=law)


@pytest.mark.parametrize("kind", ["CoSimulation", "ModelExchange"])
def test_computed_torque_fmu_equals_simulate(computed_torque, kind):
    robot, law, path = computed_torque
    q, _, _ = fmpy_run(path, robot, kind, extra=set_points(robot, [0.5, -0.3]))
    expected = reference(robot, controller=law)
    assert np.max(np.abs(q - expected.q)) < (1e-10 if kind == "CoSimulation" else 1e-6)


@pytest.mark.slow
def test_decoupling_lqr_fmu_equals_simulate(tmp_path):
    """004's decoupling law switching to its LQR loop mid-run (the gain computed at export)."""
    robot = fm.examples.load("flx_three_link_lqr")
    spec = robot.controller
    law = Decoupling(robot, hold([0.2, 0.1, 0.2]), spec["gp"], spec["gv"], lqr_at=0.1505,
                     lqr_weights=spec["lqr_weights"])
    path = fm.derive(robot).fmu(tmp_path / "lqr.fmu", controller=law, kind="cs")
    assert validate_fmu(str(path)) == []
    q, _, _ = fmpy_run(path, robot, "CoSimulation", extra=set_points(robot, [0.2, 0.1, 0.2]))
    expected = reference(robot, controller=law)
    assert np.max(np.abs(q - expected.q)) < 1e-10


def test_sources_match_the_standard_headers(exported, tmp_path):
    """The FMU's own FMI declarations agree with the standard's headers (FMPy ships them):
    its sources compile against fmi2Functions.h, where any differing prototype is an error."""
    headers = Path(fmpy.__file__).parent / "c-code"
    with zipfile.ZipFile(exported["flx_three_link"][1]) as z:
        z.extractall(tmp_path)
        listed = z.namelist()
    assert "binaries/linux64/flx_three_link.so" in listed and "modelDescription.xml" in listed
    sources = sorted((tmp_path / "sources").glob("*.c"))
    proc = subprocess.run([compiler(), "-fsyntax-only", "-Wall", "-Werror", "-DFMI2_STANDARD_HEADERS", f"-I{headers}",
                           *map(str, sources)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_model_exchange_only(tmp_path):
    robot = fm.examples.load("dynaman_2r")
    path = fm.derive(robot).fmu(tmp_path / "arm.fmu", kind="me")
    md = fmpy.read_model_description(str(path))
    assert md.modelExchange is not None and md.coSimulation is None
    assert validate_fmu(str(path)) == []
    names = [v.name for v in md.modelVariables]
    assert names[:4] == ["q1", "q2", "qd_q1", "qd_q2"] and "tau2" in names and "m2" in names


# ----- the command line: one-line errors, nothing left behind ----------------------------------
def one_line_error(capsys, argv, pattern):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("flexman: error: ") and pattern in err[0], err


def test_cli_refuses_an_existing_file_without_force(controlled, capsys):
    before = controlled.read_bytes()
    one_line_error(capsys, ["export", "flx_three_link", "--fmu", str(controlled)], "exists; remove it or add --force")
    assert controlled.read_bytes() == before


def test_cli_bad_inputs(tmp_path, capsys, monkeypatch):
    one_line_error(capsys, ["export", "dynaman_2r", "--fmu", str(tmp_path / "a.fmu"), "--kind", "xx"], "--kind")
    one_line_error(capsys, ["export", "dynaman_2r", "--fmu", str(tmp_path / "a.zip")], "does not end in .fmu")
    one_line_error(capsys, ["export", "dynaman_2r", "--fmu", str(tmp_path / "a.fmu"), "--controller"],
                   "has no controller section")
    monkeypatch.setenv("CC", str(tmp_path / "no-such-compiler"))
    one_line_error(capsys, ["export", "dynaman_2r", "--fmu", str(tmp_path / "a.fmu")], "install gcc or clang")
    assert list(tmp_path.iterdir()) == []  # nothing half-written


def test_refused_models_and_controllers(tmp_path):
    data = robot_to_dict(fm.examples.load("dynaman_2r"))
    data["links"][0]["coulomb"] = 0.2
    with pytest.raises(fm.ModelError, match="coulomb"):
        fm.derive(robot_from_dict(data)).fmu(tmp_path / "a.fmu")
    robot = fm.examples.load("dynaman_2r")
    with pytest.raises(ValueError, match="kind: unknown 'fmi3'"):
        fm.derive(robot).fmu(tmp_path / "a.fmu", kind="fmi3")
    with pytest.raises(fm.ModelError, match="evaluated in Python only"):
        fm.derive(robot).fmu(tmp_path / "a.fmu", controller=lambda t, q, qd: np.zeros(2))
    coupled = PID(robot, hold([0.0, 0.0]), [[10.0, 1.0], [1.0, 10.0]], 0.0, 1.0)
    with pytest.raises(fm.ModelError, match="one gain per joint"):
        fm.derive(robot).fmu(tmp_path / "a.fmu", controller=coupled)
    assert list(tmp_path.iterdir()) == []



def test_a_tiny_step_size_is_refused_not_one_step(exported, tmp_path):
    """step_size 1e-300 at run time once overflowed the step count and took one RK4 step per
    communication step; now the step fails with the reason, and export refuses it in one line."""
    from fmpy import simulate_fmu

    robot, path, _ = exported["dynaman_2r"]
    said = []
    with pytest.raises(Exception, match="fmi2DoStep") as info:
        simulate_fmu(str(path), fmi_type="CoSimulation", stop_time=0.01, output_interval=DT,
                     start_values=start_values(robot, {"step_size": 1e-300}),
                     logger=lambda *args: said.append(str(args[-1])))
    assert any("step_size is too small" in line for line in said), said
    eom = fm.derive(robot, parameters="symbolic")
    for bad in (1e-300, 0.0, float("nan"), True, 10.0):
        with pytest.raises(ValueError, match=r"step_size: must be a number of seconds in \[1e-09, 1\]"):
            eom.fmu(tmp_path / "x.fmu", step_size=bad)


@pytest.mark.parametrize("name, value, rule", [("m1", -1.0, ">= 0"), ("lb2", 0.0, "> 0"), ("EIy2", -5.0, ">= 0"),
                                               ("m1", float("nan"), "finite")])
def test_tunable_parameters_out_of_their_bounds_are_refused_at_run_time(exported, name, value, rule):
    """A negative mass (issue 34: it ran), a zero beam length, a negative stiffness or a NaN set
    through FMPy: fmi2SetReal fails, the log names the parameter and its bound, nothing runs."""
    robot, path, _ = exported["flx_three_link"]
    said = []
    with pytest.raises(Exception, match="fmi2SetReal"):
        fmpy.simulate_fmu(str(path), fmi_type="CoSimulation", stop_time=0.01, output_interval=DT,
                          start_values=start_values(robot, {name: value}),
                          logger=lambda *args: said.append(args[-1].decode()))
    assert any(line.startswith(f"{name} = ") and rule in line for line in said), said


@pytest.mark.parametrize("values", [{"XX1": 10.0}, {"m1": 2.0, "XX1": 0.0, "YY1": 0.0, "ZZ1": 0.0}])
def test_inconsistent_inertial_parameters_are_refused_before_they_are_used(exported, values):
    """Issue 34: each value within its own bound, together not a body (principal moments against the
    triangle inequality; a mass with no inertia about the frame origin though it sits off the axis
    is fine, a mass of 2 with zero inertia while the model's first moments are zero is a point mass
    at the origin: consistent) - the FMU refuses the first set, names the body and runs nothing."""
    robot, path, _ = exported["flx_three_link"]
    names = robot.compiled().param_names
    said = []
    consistent = "m1" in values
    run = lambda: fmpy.simulate_fmu(str(path), fmi_type="CoSimulation", stop_time=0.01, output_interval=DT,
                                    start_values=start_values(robot, values),
                                    logger=lambda *args: said.append(args[-1].decode()))
    assert set(values) <= set(names)
    if consistent:
        assert np.all(np.isfinite(run()["ee_x"]))
        return
    with pytest.raises(Exception, match="fmi2ExitInitializationMode|fmi2DoStep"):
        run()
    assert any(line.startswith("link 1: the inertial parameters set are not physically consistent") for line in said), said
