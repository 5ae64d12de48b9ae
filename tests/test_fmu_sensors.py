"""The FMU's sensor outputs (issue 36): one output per channel of the robot's sensors, read by
FMPy (an independent FMI importer) along its own simulations (co-simulation and model exchange
with CVODE), equal to what :class:`flexman.sensors.SensorSet` reads without noise at the FMU's
states (its noise-free ``read`` of ``h``: bias added, encoders counted) for a flexible arm with
every kind of sensor, an arm with elastic joints and an arm under the built-in controller. A
tuned FMU parameter moves the readings as the model file edited the same way does, a torque
sensor on a rigid joint reads the torque applied there (closed form: M qdd + b = tau) and one on
an elastic joint its spring and damper torque from the run's states (closed form)."""
from __future__ import annotations

import dataclasses
import subprocess
import zipfile
from pathlib import Path

import fmpy
import numpy as np
import pytest
from fmpy.validation import validate_fmu

import flexman as fm
from flexman import cli
from flexman.codegen.cbuild import compiler
from flexman.model import ModelError
from flexman.model.serialize import robot_from_dict, robot_to_dict
from flexman.sensors import SensorSet

TAU = np.array([5.0, 2.0, -1.0])
SENSORS = [  # every kind, with noise (not in the FMU), biases and an encoder's counts
    {"type": "encoder", "joint": "upper", "counts_per_revolution": 4096, "noise": 1e-3, "name": "enc2"},
    {"type": "encoder", "joint": "base", "bias": 0.01, "name": "enc1"},
    {"type": "strain_gauge", "link": "upper", "station": 0.0, "offset": 0.01, "noise": 1e-6, "name": "gauge_root"},
    {"type": "strain_gauge", "link": "fore", "station": 1.5, "offset": [0.01, 0.02], "name": "gauge_mid"},
    {"type": "accelerometer", "frame": "fore", "point": [0.1, 0.0, 0.02], "noise": 0.05, "bias": [0.1, 0.0, -0.2],
     "name": "acc"},
    {"type": "gyroscope", "frame": "upper", "point": [2.0, 0.0, 0.0], "name": "gyro"},
    {"type": "position", "frame": "fore", "point": [0.0, 0.05, 0.0], "latency": 0.02, "name": "tracker"},
    {"type": "torque", "joint": "fore", "name": "tq3"},
    {"type": "torque", "joint": "base", "noise": 0.1, "name": "tq1"},
]


def arm(change=None, controller=False):
    """The thesis three-link flexible arm (flx_three_link_lqr) under gravity with SENSORS;
    ``change(data)`` edits its model-file data first."""
    data = robot_to_dict(fm.examples.load("flx_three_link_lqr"))
    data["gravity"] = [0.0, 0.0, -9.81]
    data["sensors"] = [dict(s) for s in SENSORS]
    if not controller:
        data.pop("controller")
    if change:
        change(data)
    return robot_from_dict(data)


def noise_free(robot):
    """The robot's sensors as a SensorSet whose readings have no noise (bias and counts kept)."""
    return SensorSet(robot, [dataclasses.replace(s, noise=np.zeros_like(s.noise)) for s in robot.sensors])


def run(path, robot, kind="CoSimulation", extra=None, t_final=0.2):
    """(q, qd, qdd, sensor outputs) of an FMPy run of the FMU; qdd the FMU's own der(qd_*)."""
    names = list(robot.coordinate_names)
    start = {"q1": 0.3, "qd_q1": 1.0, "q2": -0.2, "step_size": 1e-3}
    start.update({f"tau{j + 1}": float(t) for j, t in enumerate(TAU[:robot.n_joints])})
    start.update(extra or {})
    channels = SensorSet(robot, robot.sensors).names
    out = names + [f"qd_{n}" for n in names] + [f"der(qd_{n})" for n in names] + channels
    options = dict(fmi_type=kind, stop_time=t_final, output_interval=1e-3, start_values=start, output=out)
    if kind == "ModelExchange":
        options.update(solver="CVode", relative_tolerance=1e-8)
    res = fmpy.simulate_fmu(str(path), **options)
    stack = lambda keys: np.stack([res[k] for k in keys], axis=-1)  # noqa: E731
    return (stack(names), stack([f"qd_{n}" for n in names]), stack([f"der(qd_{n})" for n in names]),
            stack(channels))


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    robot = arm()
    return robot, fm.derive(robot).fmu(tmp_path_factory.mktemp("fmu") / "arm.fmu")


def test_the_fmu_has_one_output_per_sensor_channel(exported, tmp_path):
    robot, path = exported
    assert validate_fmu(str(path)) == []
    md = fmpy.read_model_description(str(path))
    outputs = {v.name: v for v in md.modelVariables if v.causality == "output"}
    names = SensorSet(robot, robot.sensors).names
    assert len(names) == 1 + 1 + 1 + 1 + 3 + 3 + 3 + 1 + 1 and set(names) <= set(outputs)
    assert "latency is not applied" in outputs["tracker_x"].description
    assert "2 pi / 4096" in outputs["enc2"].description
    with zipfile.ZipFile(path) as z:  # the sources compile warning-free against the standard's headers
        z.extractall(tmp_path)
    proc = subprocess.run([compiler(), "-fsyntax-only", "-Wall", "-Werror", "-DFMI2_STANDARD_HEADERS",
                           f"-I{Path(fmpy.__file__).parent / 'c-code'}", *map(str, (tmp_path / "sources").glob("*.c"))],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.parametrize("kind", ["CoSimulation", "ModelExchange"])
def test_sensor_outputs_equal_the_sensor_set_along_the_fmu_run(exported, kind):
    robot, path = exported
    q, qd, qdd, y = run(path, robot, kind)
    # the FMU's accelerations are the model's forward dynamics (the state the sensors read)
    assert np.max(np.abs(qdd - robot.forward_dynamics(q, qd, TAU))) < 1e-9
    sset = noise_free(robot)
    expected = sset.read(sset.h(q, qd, qdd))
    assert np.max(np.abs(y - expected)) < 1e-10
    moved = np.ptp(y, axis=0) > 1e-7
    assert np.all(moved[:-2]) and not np.any(moved[-2:])  # every channel moved but the torques (held inputs)
    quantum = 2 * np.pi / 4096
    assert np.allclose(y[:, 0] / quantum, np.round(y[:, 0] / quantum), atol=1e-9)  # the encoder counts
    tq1 = y[:, sset.names.index("tq1")]
    assert np.max(np.abs(tq1 - TAU[0])) < 1e-10  # rigid joint 1: M qdd + b is the torque applied


TUNED = {  # FMU parameter: (value, the same edit of the model file)
    "EIy2": (20000.0, lambda d: d["links"][1]["beam"].update(EI=[20000.0, 29520.0])),
    "a3": (3.5, lambda d: d["links"][2].update(a=3.5)),
    "gz": (-3.0, lambda d: d.update(gravity=[0.0, 0.0, -3.0])),
    "lb3": (4.4, lambda d: (d["links"][2]["beam"].update(length=4.4),
                            # a gauge off the root stays at its fraction of the stretched beam
                            d["sensors"][3].update(station=1.5 * 4.4 / 4.0))),
}


@pytest.mark.parametrize("name", list(TUNED))
def test_a_tuned_parameter_moves_the_sensors_as_the_edited_model(exported, name):
    robot, path = exported
    value, change = TUNED[name]
    edited = arm(change)
    q, qd, qdd, y = run(path, robot, extra={name: value}, t_final=0.1)
    assert np.max(np.abs(qdd - edited.forward_dynamics(q, qd, TAU))) < 1e-9
    sset = noise_free(edited)
    assert np.max(np.abs(y - sset.read(sset.h(q, qd, qdd)))) < 1e-10
    assert np.max(np.abs(y - run(path, robot, t_final=0.1)[3])) > 1e-6  # the parameter mattered


def test_elastic_joints_motor_encoder_and_torque_sensor(tmp_path):
    data = robot_to_dict(fm.examples.load("dynaman_2r"))
    data["links"][0]["drive"] = {"gear_ratio": 40.0, "rotor_inertia": 1e-4, "stiffness": 400.0, "damping": 0.2}
    data["sensors"] = [{"type": "encoder", "joint": 0, "side": "motor", "counts_per_revolution": 2 ** 16},
                       {"type": "encoder", "joint": 0}, {"type": "torque", "joint": 0}, {"type": "torque", "joint": 1},
                       {"type": "accelerometer", "frame": 1, "point": [0.1, 0.0, 0.0]}]
    robot = robot_from_dict(data)
    path = fm.derive(robot).fmu(tmp_path / "elastic.fmu", kind="cs")
    q, qd, qdd, y = run(path, robot)
    sset = noise_free(robot)
    assert np.max(np.abs(y - sset.read(sset.h(q, qd, qdd)))) < 1e-10
    assert np.max(np.abs(y[:, 0] - y[:, 1])) > 1e-4  # the motor side is not the link side
    assert np.max(np.abs(y[:, 3] - TAU[1])) < 1e-10  # rigid joint 2: the torque applied
    # elastic joint 1 transmits its spring and damper torque k (theta - q) + d (theta_dot - q_dot), not ~0
    s = 400.0 * (q[:, 2] - q[:, 0]) + 0.2 * (qd[:, 2] - qd[:, 0])  # coordinates q1, q2, q1_motor
    assert np.max(np.abs(y[:, 2] - s)) < 1e-10 * np.max(np.abs(s)) and np.max(np.abs(s)) > 0.1
    md = fmpy.read_model_description(str(path))
    text = {v.name: v.description for v in md.modelVariables}
    assert "spring and damper torque" in text["torque_link1"] and "spring" not in text["torque_link2"]


def test_sensor_outputs_under_the_built_in_controller(tmp_path):
    robot = arm(controller=True)
    law = fm.control.from_spec(robot, robot.controller)
    path = fm.derive(robot).fmu(tmp_path / "controlled.fmu", kind="cs", controller=law)
    q, qd, qdd, y = run(path, robot, extra={"q1_ref": 0.5})
    sset = noise_free(robot)
    assert np.max(np.abs(y - sset.read(sset.h(q, qd, qdd)))) < 1e-10


def test_python_sensors_replace_the_robots_own(tmp_path):
    data = robot_to_dict(fm.examples.load("dynaman_2r"))
    data["sensors"] = [{"type": "encoder", "joint": 0, "name": "own"}]
    robot = robot_from_dict(data)
    sensors = [fm.sensors.gyroscope(robot, 1, name="g"), fm.sensors.torque(robot, 0, name="t")]
    path = fm.derive(robot).fmu(tmp_path / "arm.fmu", kind="me", sensors=SensorSet(robot, sensors))
    names = {v.name for v in fmpy.read_model_description(str(path)).modelVariables if v.causality == "output"}
    assert {"g_x", "g_y", "g_z", "t"} <= names and "own" not in names


def test_a_sensor_named_like_another_output_is_refused_in_one_line(tmp_path, capsys):
    robot = arm(lambda d: d["sensors"][6].update(name="ee"))  # its channels ee_x... are the end effector's
    with pytest.raises(ModelError, match=r"sensors\[6\]\.name: the FMU output 'ee_x' .* give the sensor a name") as info:
        fm.derive(robot).fmu(tmp_path / "a.fmu")
    assert "\n" not in str(info.value) and not (tmp_path / "a.fmu").exists()
    with pytest.raises(ValueError, match=r"sensors\[0\]: expected a sensor"):
        fm.derive(robot).fmu(tmp_path / "a.fmu", sensors=["encoder"])
    model = fm.save(robot, tmp_path / "arm.yaml")
    assert cli.main(["export", str(model), "--fmu", str(tmp_path / "b.fmu")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "sensors[6].name" in err[0] and "Traceback" not in err[0], err
    assert not (tmp_path / "b.fmu").exists()


def test_cli_export_lists_the_sensor_outputs(tmp_path, capsys):
    import json

    robot = arm()
    model = fm.save(robot, tmp_path / "arm.yaml")
    assert cli.main(["export", str(model), "--fmu", str(tmp_path / "arm.fmu"), "--kind", "cs", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["sensors"] == SensorSet(robot, robot.sensors).names
    md = fmpy.read_model_description(str(tmp_path / "arm.fmu"))
    assert [v.name for v in md.modelVariables if v.name in info["sensors"]] == info["sensors"]


@pytest.mark.parametrize("name", ["flexible_tree", "mimic_tree", "elastic_joints", "floating_file_beam"])
def test_the_traced_sensor_program_equals_the_sensor_set(name, tmp_path):
    """The FMU's sensor program (symbolic parameters, run as generated NumPy) reads what
    SensorSet.h reads on trees, mimic joints, elastic joints and a floating base (1e-10)."""
    from backends import ROBOTS

    from flexman.symbolic.emit import function_source
    from flexman.symbolic.sensor_program import sensor_program

    robot = ROBOTS[name](tmp_path)
    S = fm.sensors
    last = robot.n_joints - 1
    sensors = [S.encoder(robot, last), S.torque(robot, 0), S.torque(robot, last),
               S.accelerometer(robot, -1, point=[0.05, 0.02, 0.0]), S.gyroscope(robot, 0),
               S.position(robot, -1, point=[0.0, 0.03, 0.01])]
    flexible = [i for i, link in enumerate(robot.links) if link.is_flexible and link.joint == "revolute"]
    if flexible:
        sensors.append(S.strain_gauge(robot, flexible[0], station=0.0, offset=[0.01, 0.02]))
    sset = SensorSet(robot, sensors)
    eom = fm.derive(robot, parameters="symbolic", external=False, reduce_mass_matrix=False)
    env = {"np": np}
    exec(function_source("numpy", sensor_program(eom, sset.sensors), "f"), env)  # our own generated code
    rng = np.random.default_rng(3)
    q, qd, qdd = (rng.normal(size=robot.nq) * s for s in (0.4, 0.8, 2.0))
    q[robot.flex_index] *= 0.05
    y = np.ravel(env["f"](q, qd, qdd, np.array(list(eom.param_values.values()))))
    h = sset.h(q, qd, qdd)
    assert np.max(np.abs(y - h)) < 1e-10 * max(1.0, np.max(np.abs(h)))
