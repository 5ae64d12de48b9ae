"""Fuzzing the doors (issue 14): model files in YAML, JSON and TOML, raw text, the Python API's
inputs and the command line. Every input either works (and then gives a usable model or
finite numbers) or is refused with one line: ModelError/ValueError from Python, exit 2 and
one ``flexman: error:`` line from the command. Nothing hangs and nothing crashes inside.

Derandomized with bounded example counts so CI runs the same cases in a few tens of seconds;
``FLEXMAN_FUZZ_SCALE=20`` searches twenty times as many random cases.
"""
from __future__ import annotations

import contextlib
import io as textio
import json
import math
import os

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import flexman as fm
from bounds import bounded
from flexman import cli
from flexman.model import io
from flexman.model import serialize as model_data
from flexman.model.errors import ModelError

# FLEXMAN_FUZZ_SCALE=20 runs twenty times the examples, randomized (a deeper search by hand)
SCALE = int(os.environ.get("FLEXMAN_FUZZ_SCALE", "1"))
FUZZ = settings(max_examples=40 * SCALE, derandomize=SCALE == 1, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                       HealthCheck.data_too_large])
SECONDS = 20.0  # no single input may take longer: a hang takes forever, a loaded CI machine a while

BASES = {name: model_data.robot_to_dict(fm.examples.load(name)) for name in
         ("flx_rigid_pendulum", "flx_double_pendulum", "flx_three_link", "theodore_rrp", "dynaman_rp")}
KEYS = sorted(set(model_data.TOP_FIELDS + model_data.LINK_FIELDS + model_data.BEAM_FIELDS + model_data.HUB_FIELDS + model_data.MODE_FIELDS))

# ----- junk values ---------------------------------------------------------------------------------
NUMBERS = st.sampled_from([0, 1, -1, 2, 7, 51, 10**9, 10**400, 0.0, -0.0, 0.5, -2.5, 1e-300, 5e-324, 1e-9,
                           1e9, 1e300, -1e300, math.inf, -math.inf, math.nan])
TEXTS = st.sampled_from(["", "x", "1e-3", "90 deg", "-45 deg", "[/bold]", "[red]x", "\x1b[31m", "\x07", "é",
                         "line\nbreak", "revolute", "prismatic", "clamped_free", "clamped_mass", "polynomial",
                         "finite_elements", "standard", "modified", "name with spaces", "a" * 50])
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, st.integers(-10**6, 10**6),
                    st.floats(allow_nan=True, allow_infinity=True), TEXTS, st.text(max_size=12))
JUNK = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS + ["zzz"]), inner, max_size=4)),
    max_leaves=8)


def paths(data, here=()):
    """Every place in nested data: tuples of keys and indices."""
    yield here
    if isinstance(data, dict):
        for key, value in data.items():
            yield from paths(value, here + (key,))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from paths(value, here + (i,))


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _at(data, where):
    for key in where:
        data = data[key]
    return data


@st.composite
def mutated_models(draw):
    """A bundled model with one to three mutations: a value replaced by junk, a number scaled or
    negated, a field removed, an unknown field added."""
    data = json.loads(json.dumps(BASES[draw(st.sampled_from(sorted(BASES)))]))  # deep copy
    for _ in range(draw(st.integers(1, 3))):
        places = list(paths(data))[1:]
        numeric = [p for p in places if _is_number(_at(data, p))]
        # mostly a plausible change of a number (the model may still load), sometimes anything
        where = draw(st.sampled_from(numeric if numeric and draw(st.integers(0, 3)) else places))
        parent = _at(data, where[:-1])
        key, value = where[-1], parent[where[-1]]
        op = draw(st.sampled_from(["number", "number", "scale", "scale", "junk", "delete", "unknown"]))
        if op in ("number", "scale") and _is_number(value):
            factor = draw(st.sampled_from([-1, 0, 0.5, 2, 1e-6, 1e6, 1e12, 1e200]))
            parent[key] = draw(NUMBERS) if op == "number" or abs(value) > 1e300 else value * factor
        elif op == "delete" and isinstance(parent, dict):
            del parent[key]
        elif op == "unknown" and isinstance(value, dict):
            value[draw(st.sampled_from(["zzz", "masss", "Mass", "beam_", "com "]))] = draw(SCALARS)
        else:
            parent[key] = draw(JUNK)
    return data


def serialize(data, fmt):
    if fmt == "json":
        return json.dumps(data)
    if fmt == "yaml":
        return yaml.safe_dump(data, allow_unicode=True)
    try:
        return io.dumps_toml(data)
    except (ModelError, TypeError):
        return None  # TOML has no null (and no mixed arrays in older writers): not a TOML document


def check_outcome(load, where):
    """load() gives a usable robot, or one-line ModelError; within SECONDS."""
    try:
        with bounded(cpu_s=SECONDS):
            robot = load()
    except ModelError as exc:
        message = str(exc)
        assert message and "\n" not in message and message.startswith(where), message
        assert "Traceback" not in message and "object at 0x" not in message, message
        return None
    nq, nj = robot.nq, robot.n_joints
    assert nq == len(robot.coordinate_names) and nj == len(robot.links)
    M = robot.mass_matrix(np.zeros(nq))
    assert np.all(np.isfinite(M)) and np.allclose(M, M.T, rtol=1e-9, atol=1e-12 * np.abs(M).max())
    assert np.linalg.eigvalsh(M)[0] > 0
    assert np.all(np.isfinite(robot.forward_dynamics(np.zeros(nq), np.zeros(nq), np.zeros(nj))))
    return robot


# ----- model files ---------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["yaml", "json", "toml"])
@FUZZ
@given(data=mutated_models())
def test_mutated_model_files_load_or_are_refused_in_one_line(tmp_path_factory, fmt, data):
    text = serialize(data, fmt)
    assume(text is not None)
    path = tmp_path_factory.mktemp("fuzz") / f"model.{fmt}"
    path.write_text(text, encoding="utf-8")
    robot = check_outcome(lambda: fm.load(path), str(path))
    if robot is not None:  # what loads saves and loads back the same
        again = fm.load(fm.save(robot, path.with_name(f"again.{fmt}")))
        np.testing.assert_allclose(again.mass_matrix(np.zeros(robot.nq)), robot.mass_matrix(np.zeros(robot.nq)),
                                   rtol=1e-12, atol=1e-14)


@FUZZ
@given(data=JUNK)
def test_arbitrary_data_is_refused_or_loads(data):
    check_outcome(lambda: model_data.robot_from_dict(data), "")


FRAGMENTS = st.sampled_from(["name: x\n", "links:\n", "  - a: 1\n", "    mass: 2\n", "&a [1]\n", "*a\n", "<<: *a\n",
                             "!!python/object/apply:os.system ['true']\n", "!!binary aGk=\n", "? [a]\n: 1\n",
                             "{", "[", "\t", "---\n", "...\n", "%YAML 1.1\n", "\ufeff", "\r\n", "\x00", "'\n",
                             '"\\e[31m"\n', "1e400\n", "0x1F\n", "2024-01-01\n", "~\n", "[" * 40, "a: &b [*b]\n"])


@pytest.mark.parametrize("fmt", ["yaml", "json", "toml"])
@FUZZ
@given(text=st.one_of(st.lists(FRAGMENTS, max_size=12).map("".join), st.text(max_size=200)))
def test_raw_text_never_crashes_the_loader(tmp_path_factory, fmt, text):
    path = tmp_path_factory.mktemp("raw") / f"model.{fmt}"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    check_outcome(lambda: fm.load(path), str(path))


# ----- API inputs ----------------------------------------------------------------------------------
ROBOTS = {"flexible": fm.examples.load("flx_three_link"), "rigid": fm.examples.load("flx_double_pendulum")}


@st.composite
def array_like(draw, n):
    """Arrays and lists of many shapes and kinds, near and far from (..., n)."""
    kind = draw(st.sampled_from(["good", "batch", "column", "short", "long", "scalar", "empty", "list", "ragged",
                                 "int", "bool", "complex", "text", "none", "nan", "object"]))
    if kind == "good":
        return np.full(n, 0.1)
    if kind == "batch":
        return np.full((draw(st.integers(0, 3)), draw(st.integers(1, 3)), n), 0.05)
    if kind == "column":
        return np.full((n, 1), 0.1)
    if kind == "short":
        return np.zeros(max(n - 1, 0))
    if kind == "long":
        return np.zeros(n + draw(st.integers(1, 3)))
    if kind == "scalar":
        return draw(st.sampled_from([0.3, 1, np.float32(2.0)]))
    if kind == "empty":
        return np.zeros((0, n))
    if kind == "list":
        return [0.1] * n
    if kind == "ragged":
        return [[0.1] * n, [0.1] * (n + 1)]
    if kind == "int":
        return list(range(n))
    if kind == "bool":
        return [True] * n
    if kind == "complex":
        return np.zeros(n, dtype=complex)
    if kind == "text":
        return draw(st.sampled_from(["0 0", ["a"] * n, b"\x00" * n]))
    if kind == "none":
        return None
    if kind == "nan":
        return np.full(n, np.nan)
    return np.array([object()] * n, dtype=object)


CALLS = {
    "mass_matrix": lambda r, a, b, c: r.mass_matrix(a),
    "bias_forces": lambda r, a, b, c: r.bias_forces(a, b),
    "inverse_dynamics": lambda r, a, b, c: r.inverse_dynamics(a, b, c),
    "forward_dynamics": lambda r, a, b, c: r.forward_dynamics(a, b, c),
    "kinetic_energy": lambda r, a, b, c: r.kinetic_energy(a, b),
    "potential_energy": lambda r, a, b, c: r.potential_energy(a),
    "frame": lambda r, a, b, c: r.frame(a, -1),
    "jacobian": lambda r, a, b, c: r.jacobian(a, point=c if np.shape(c) == (3,) else None),
    "natural_frequencies": lambda r, a, b, c: r.natural_frequencies(a),
}


@pytest.mark.parametrize("name", sorted(CALLS))
@pytest.mark.parametrize("which", sorted(ROBOTS))
@settings(FUZZ, max_examples=25 * SCALE)
@given(data=st.data())
def test_api_inputs_give_numbers_or_one_line_value_errors(which, name, data):
    robot = ROBOTS[which]
    n_last = robot.n_joints if name == "forward_dynamics" else robot.nq
    a, b = data.draw(array_like(robot.nq)), data.draw(array_like(robot.nq))
    c = data.draw(array_like(n_last if name != "jacobian" else 3))
    try:
        with np.errstate(all="ignore"):
            out = CALLS[name](robot, a, b, c)
    except ValueError as exc:
        assert str(exc) and "\n" not in str(exc), str(exc)
        return
    assert np.asarray(out).dtype.kind in "fc"


# ----- the command line ----------------------------------------------------------------------------
VALUES = st.sampled_from(["0", "-1", "1e-3", "0.01", "nan", "inf", "-inf", "1e308", "1e-300", "abc", "", "2", "0.02"])
OPTIONS = {
    "simulate": ["--t-final", "--dt", "--method", "--rtol", "--atol", "--q0", "--torque", "--out", "--no-plot",
                 "--controller", "--backend"],
    "frequencies": ["--q"],
    "info": [],
    "closure": ["--t-final", "--dt", "--out"],
    "codegen": ["--lang", "--out", "--force", "--formulation"],
    "examples": ["--copy", "--force"],
    "derive": ["--formulation", "--parameters", "--latex"],
    "statics": ["--q", "--order", "--steps", "--force", "--gauges", "--deg"],
}
CHOICES = {"--method": ["rk4", "RK45", "Radau", "euler"], "--backend": ["numeric", "fast"],
           "--lang": ["c", "python", "cobol"], "--formulation": ["book", "denoc", "none"],
           "--parameters": ["numeric", "symbolic", "x"]}
FLAGS = {"--no-plot", "--force", "--latex", "--deg"}


@st.composite
def command_lines(draw, tmp):
    command = draw(st.sampled_from(sorted(OPTIONS) + ["simulate"] * 4))
    model = draw(st.sampled_from(["flx_rigid_pendulum", str(tmp / "model.yaml")] * 3
                                 + [str(tmp / "missing.yaml"), "no_such_example", "", str(tmp)]))
    argv = [command] + ([draw(st.sampled_from(["flx_rigid_pendulum", "nope"]))] if command == "examples" else [model])
    chosen = draw(st.lists(st.sampled_from(OPTIONS[command]), max_size=4, unique=True)) if OPTIONS[command] else []
    for option in chosen:
        if option in FLAGS:
            argv.append(option)
        elif option in CHOICES:
            argv += [option, draw(st.sampled_from(CHOICES[option]))]
        elif option in ("--out", "--copy", "--controller"):
            argv += [option, draw(st.sampled_from(["", str(tmp / "out" / "x.c"), str(tmp / "model.yaml"), str(tmp),
                                                   str(tmp / "new.py")]))]
        elif option == "--t-final":
            argv += [option, draw(st.sampled_from(["0.02", "0", "-1", "nan", "inf", "1e308", "x"]))]
        else:
            argv += [f"{option}={draw(VALUES)}"]
    return argv


@settings(FUZZ, max_examples=80 * SCALE)
@given(data=st.data())
def test_command_lines_exit_cleanly(tmp_path_factory, data):
    tmp = tmp_path_factory.mktemp("cli")
    fm.save(fm.examples.load("flx_rigid_pendulum"), tmp / "model.yaml")
    argv = data.draw(command_lines(tmp))
    err, out = textio.StringIO(), textio.StringIO()
    with bounded(cpu_s=3 * SECONDS), contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        status = cli.main(argv)  # the default run: 1000 RK4 steps
    text = err.getvalue()
    assert "internal error" not in text and "Traceback" not in text, (argv, text)
    assert status in (0, 1, 2), (argv, status, text)
    if status == 2:
        lines = [line for line in text.splitlines() if line.startswith("flexman: error:")]
        assert len(lines) == 1, (argv, text)


# ----- simulate's arguments ------------------------------------------------------------------------
SIM_VALUES = st.sampled_from([None, 0.0, -1.0, 0.01, 0.02, 1e-300, 1e308, math.nan, math.inf, "0.01", [0.01], True])


@settings(FUZZ, max_examples=60 * SCALE)
@given(t_final=st.sampled_from([0.02, 0.05, 0.0, -1.0, 1e308, math.nan, "1", None]),
       dt=SIM_VALUES, rtol=SIM_VALUES, atol=SIM_VALUES,
       method=st.sampled_from(["rk4", "RK45", "Radau", "LSODA", "euler", None]),
       q0=st.sampled_from([None, [0.3, 0.1], [math.nan, 0], [0.3], 0.3, "0.3", [[0.3, 0.1]], np.zeros((2, 1))]),
       torque=st.sampled_from([None, 0.5, [1.0, -1.0], [math.nan, 0.0], [1.0], lambda t, q, qd: [0.0, 0.0],
                               lambda t, q, qd: [math.inf, 0.0], lambda t, q, qd: [1.0], "1"]))
def test_simulate_arguments_run_or_are_refused(t_final, dt, rtol, atol, method, q0, torque):
    robot = ROBOTS["rigid"]
    kwargs = {k: v for k, v in dict(dt=dt, rtol=rtol, atol=atol, method=method, q0=q0, torque=torque).items()
              if v is not None}
    try:
        with bounded(cpu_s=SECONDS), np.errstate(all="ignore"), contextlib.redirect_stderr(textio.StringIO()):
            res = fm.simulate(robot, t_final, **kwargs)
    except ValueError as exc:
        assert str(exc) and "\n" not in str(exc), str(exc)
        return
    assert len(res.t) == len(res.q) == len(res.tau) and np.all(np.isfinite(res.q))
    assert res.diverged or res.t[-1] == pytest.approx(float(t_final))


# ----- models built in Python ----------------------------------------------------------------------
PARTS = {"RigidBody": dict(mass=1.0, com=[0, 0, 0], inertia=[1, 1, 1]),
         "Beam": dict(length=1.0, mass_per_length=1.0, EI=1.0),
         "Link": dict(a=1.0),
         "Robot": dict(links=[fm.Link(a=1.0, body=fm.RigidBody(1.0, [0, 0, 0], [1, 1, 1]))])}
FIELDS = {"RigidBody": ["mass", "com", "inertia"],
          "Beam": ["length", "mass_per_length", "EI", "GJ", "polar_inertia_per_length", "damping", "shapes", "modes",
                   "elements"],
          "Link": ["joint", "a", "alpha", "d", "theta", "body", "hub", "beam", "armature", "viscous", "coulomb",
                   "limits", "name"],
          "Robot": ["links", "name", "gravity", "dh", "payload"]}
PY_JUNK = st.one_of(SCALARS, st.lists(st.floats(-2, 2), max_size=4), st.just({"y": 1}), st.just(np.zeros((2, 2))),
                    st.just(np.array(1.0)), st.just(fm.RigidBody()))


@settings(FUZZ, max_examples=100 * SCALE)
@given(data=st.data())
def test_model_parts_built_in_python_are_checked(data):
    cls = data.draw(st.sampled_from(sorted(PARTS)))
    kwargs = dict(PARTS[cls], **{data.draw(st.sampled_from(FIELDS[cls])): data.draw(PY_JUNK)})
    try:
        getattr(fm, cls)(**kwargs)
    except ModelError as exc:
        assert str(exc) and "\n" not in str(exc), str(exc)
