"""Fuzzing the newer doors (issue 26): generated URDF chains and overlays, beam axes, numbers on
the command line, sweep specifications and signals during writes. Every input either works (a
usable model with finite dynamics, a correct rotation, the number it spells) or is refused in
one line: ModelError/ValueError from Python, exit 2 and one ``flexman: error:`` line from the
command. Derandomized and bounded like tests/test_fuzz.py (``FLEXMAN_FUZZ_SCALE`` deepens it).
"""
from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bounds import bounded
from flexman import cli, sweeps
from flexman.model.errors import ModelError
from flexman.model.io import dumps
from flexman.model.parse import parse
from flexman.model.urdf import _beam_turn, apply_overlay, robot_from_urdf

SCALE = int(os.environ.get("FLEXMAN_FUZZ_SCALE", "1"))
FUZZ = settings(max_examples=40 * SCALE, derandomize=SCALE == 1, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                       HealthCheck.data_too_large])
SECONDS = 20.0
SRC = str(Path(__file__).resolve().parents[1] / "src")
OUTPUTS = str(Path(SRC) / "flexman" / "outputs.py")

# hostile numbers as a URDF writes them
URDF_NUMBERS = st.sampled_from(["0", "1", "-1", "0.5", "1e-9", "1e9", "1e200", "-1e200", "1e308", "-1e308", "5e-324",
                                "nan", "inf", "-inf", "x", "", "1e400", "0x10", "1_0"])
NAMES = st.sampled_from(["a", "b", "a-b", "a_b", "a.b", "a b", "é", "\u009b31m", "\x85", "1st", "base", "x" * 60])


def one_line(message: str) -> None:
    assert message and "\n" not in message, message


@st.composite
def urdf_chains(draw):
    """A serial chain with hostile origins, axes, inertials, names, joint types and, sometimes,
    a loop of links beside it."""
    n = draw(st.integers(1, 3))
    names = [draw(NAMES) if draw(st.integers(0, 2)) == 1 else f"l{k}" for k in range(n)]
    vec = lambda: " ".join(draw(URDF_NUMBERS) if draw(st.integers(0, 20)) == 7 else  # noqa: E731
                           repr(draw(st.floats(-2, 2))) for _ in range(3))
    parts = ['<robot name="r"><link name="root"/>']
    for name in names:
        mass = draw(URDF_NUMBERS) if draw(st.integers(0, 7)) == 3 else "1.0"
        inertia = draw(st.sampled_from(['ixx="0.01" iyy="0.02" izz="0.02"'] * 5 + [
            'ixx="0" iyy="0" izz="0"', 'ixx="1" iyy="1" izz="5"', f'ixx="{draw(URDF_NUMBERS)}" iyy="1" izz="1"']))
        parts.append(f'<link name="{name}"><inertial><origin xyz="{vec()}"/><mass value="{mass}"/>'
                     f'<inertia {inertia}/></inertial></link>')
    prev = "root"
    for k, name in enumerate(names):
        kind = draw(st.sampled_from(["revolute"] * 3 + ["continuous", "prismatic", "fixed", "floating"]))
        parts.append(f'<joint name="j{k}" type="{kind}"><parent link="{prev}"/><child link="{name}"/>'
                     f'<origin xyz="{vec()}" rpy="{vec()}"/><axis xyz="{vec()}"/></joint>')
        prev = name
    if draw(st.integers(0, 9)) == 4:  # two links in a loop, attached to nothing
        parts.append('<link name="p"/><link name="q"/>'
                     '<joint name="k1" type="revolute"><parent link="p"/><child link="q"/></joint>'
                     '<joint name="k2" type="revolute"><parent link="q"/><child link="p"/></joint>')
    return "".join(parts) + "</robot>"


@FUZZ
@given(urdf_chains())
@pytest.mark.filterwarnings("ignore:.*kept as written:UserWarning")
def test_generated_urdf_loads_usable_or_is_refused_in_one_line(text):
    try:
        with bounded(cpu_s=SECONDS):
            robot = robot_from_urdf(text)
    except ModelError as exc:
        one_line(str(exc))
        assert not any(0x80 <= ord(c) <= 0x9F for c in str(exc)), str(exc)  # names escaped
        return
    q = np.linspace(-0.3, 0.4, robot.nq)
    M = robot.mass_matrix(q)
    assert np.all(np.isfinite(M)) and np.linalg.eigvalsh(0.5 * (M + M.T)).min() > 0
    assert np.all(np.isfinite(robot.forward_dynamics(q, -q, np.ones(robot.n_joints))))
    assert len(set(link.name for link in robot.links)) == robot.n_joints
    from flexman.model.serialize import robot_from_dict, robot_to_dict

    if not all(link.body.strict for link in robot.links):  # an implausible inertial kept as Pinocchio does:
        with pytest.raises(ModelError):  # a model file written from it is refused, in one line
            dumps(robot)
        return
    again = robot_from_dict(robot_to_dict(robot))  # saves and loads back as a model file
    np.testing.assert_allclose(again.mass_matrix(q), M, rtol=1e-12, atol=1e-14)
    dumps(robot)


AXIS_NUMBERS = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0, 1e-300, 1e308]))


@FUZZ
@given(st.lists(AXIS_NUMBERS, min_size=3, max_size=3), st.floats(0, 1e-3))
def test_beam_axis_gives_a_rotation_for_every_direction(axis, near):
    """Any direction (and directions within ``near`` of -x): R orthonormal, det 1, R x = a."""
    for a in (axis, [-1.0, near * axis[0] if math.isfinite(axis[0]) else near, near]):
        try:
            R = _beam_turn(a, "beam.axis")
        except ModelError as exc:
            one_line(str(exc))
            assert not all(math.isfinite(v) for v in a) or max(abs(v) for v in a) <= 1e-9
            continue
        if R is None:
            continue
        u = np.asarray(a, float) / np.abs(a).max()
        np.testing.assert_allclose(R.T @ R, np.eye(3), rtol=0, atol=4e-15)
        assert abs(np.linalg.det(R) - 1.0) < 4e-15
        np.testing.assert_allclose(R[:, 0], u / np.linalg.norm(u), rtol=0, atol=4e-15)


OVERLAY_VALUES = st.one_of(st.sampled_from([0, 1, -1, 1e9, 1e-300, "1e9", "x", None, True, [1, 2], {"a": 1}]),
                           st.floats(allow_nan=True, allow_infinity=True),
                           # values the fields may take, so that overlays load too and their dynamics are checked
                           st.floats(0.01, 10.0), st.sampled_from([[0, 0, 1], [1, 1, 0], [-1, 1e-9, 0], {"y": 2, "z": 0},
                                                                   {"y": 1, "z": 1, "torsion": 1}]))
URDF_TWO = ('<robot name="r"><link name="b"/>'
            '<link name="a"><inertial><origin xyz="0.1 0 0"/><mass value="1"/><inertia ixx="0.01" iyy="0.02" izz="0.02"/>'
            '</inertial></link><link name="c"><inertial><origin xyz="0.1 0 0"/><mass value="1"/>'
            '<inertia ixx="0.01" iyy="0.02" izz="0.02"/></inertial></link>'
            '<joint name="j1" type="revolute"><parent link="b"/><child link="a"/><axis xyz="0 0 1"/></joint>'
            '<joint name="j2" type="revolute"><parent link="a"/><child link="c"/><origin xyz="0.5 0 0"/>'
            '<axis xyz="0 0 1"/></joint></robot>')


@FUZZ
@given(st.sampled_from(["length", "mass_per_length", "EI", "modes", "axis", "damping", "GJ"]), OVERLAY_VALUES,
       st.sampled_from(["a", "c", "nope"]))
def test_overlay_fields_work_or_are_refused_in_one_line(field, value, link):
    overlay = {"links": {link: {"beam": {"length": 0.5, "mass_per_length": 2.0, "EI": 50.0,
                                         "modes": {"y": 1, "z": 1}, field: value}}}}
    try:
        robot = apply_overlay(robot_from_urdf(URDF_TWO, check=False), overlay)
    except ModelError as exc:
        one_line(str(exc))
        return
    q = np.zeros(robot.nq)
    M = robot.mass_matrix(q)
    assert np.all(np.isfinite(M)) and np.linalg.eigvalsh(M).min() > 0


# ----- numbers ----------------------------------------------------------------------------------
FLOATS = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12)


def spellings(x: float):
    """Ways people write a number: plain, exponent (upper, lower, signed), leading dot."""
    mantissa, exponent = f"{x:.6e}".split("e")
    return [repr(x), f"{x:.6e}", f"{x:.3E}", f"{mantissa}e{int(exponent)}", f"{x:g}"]


@FUZZ
@given(FLOATS)
def test_yaml_reads_every_number_spelling_as_a_number(x):
    for text in spellings(x):
        assert parse(f"v: {text}\n", "yaml")["v"] == pytest.approx(float(text), rel=0, abs=0), text


@FUZZ
@given(st.lists(FLOATS, min_size=2, max_size=2), st.integers(0, 4))
def test_command_line_reads_negative_numbers_in_every_spelling(values, form):
    texts = [spellings(-abs(v) - 1e-6)[form] for v in values]
    args = cli.build_parser().parse_args(["simulate", "m", "--torque", *texts, "--q0", *texts])
    assert args.torque == [float(t) for t in texts] and args.q0 == args.torque


@FUZZ
@given(st.sampled_from(["--torque", "--q0", "--dt", "--t-final", "--rtol"]),
       st.sampled_from(["nan", "-nan", "inf", "-inf", "1e400", "-1e400", "x", "--", "1e", "0x1p3"]))
def test_command_line_refuses_non_numbers_in_one_line(option, text):
    with pytest.raises(cli.UsageError) as info:
        cli.build_parser().parse_args(["simulate", "m", option, text])
    one_line(str(info.value))
    assert str(info.value).startswith(f"argument {option}: "), str(info.value)  # names the option


# ----- sweep specifications ---------------------------------------------------------------------
SPEC_VALUES = st.one_of(st.lists(st.one_of(FLOATS, st.sampled_from([math.nan, math.inf, "x", None, True])),
                                 max_size=30),
                        st.fixed_dictionaries({"min": st.one_of(FLOATS, st.just(math.nan)),
                                               "max": st.one_of(FLOATS, st.just(math.inf))}),
                        st.sampled_from([None, 1, "x", [], {}]))
SPEC_NAMES = st.sampled_from(["links.0.beam.EI", "payload.mass", "a", "b", "c", "d", "e"])
HOSTILE_SPECS = st.tuples(st.dictionaries(SPEC_NAMES, SPEC_VALUES, max_size=7),
                          st.sampled_from(["grid", "latin_hypercube", "monte_carlo", "nope"]),
                          st.one_of(st.none(), st.sampled_from([1, 10, 1e5, 1e6, 1e12, math.inf, math.nan, -3, 2.5,
                                                                True])))
# specifications that give points (or meet the limit): the hostile ones alone almost never do
VALID_SPECS = st.tuples(st.dictionaries(SPEC_NAMES, st.one_of(st.lists(FLOATS, min_size=1, max_size=6),
                                                              st.tuples(FLOATS, FLOATS).map(
                                                                  lambda ab: {"min": min(ab), "max": max(ab)})),
                                        min_size=1, max_size=7),
                        st.sampled_from(["grid", "latin_hypercube", "monte_carlo"]),
                        st.sampled_from([1, 10, 1e3, 1e5, 2e5]))


@FUZZ
@given(st.one_of(HOSTILE_SPECS, VALID_SPECS))
def test_sweep_specs_give_points_within_the_limit_or_one_line(spec):
    parameters, sampling, samples = spec
    try:
        with bounded(cpu_s=SECONDS):
            pts = sweeps.points(parameters, sampling, samples)
    except sweeps.SweepError as exc:
        one_line(str(exc))
    else:
        assert 1 <= len(pts) <= 100_000
        assert len(pts) == (math.prod(len(v) for v in parameters.values()) if sampling == "grid" else samples)
        assert all(set(p) == set(parameters) for p in pts)
        assert all(math.isfinite(v) for p in pts for x in p.values() for v in (x if isinstance(x, list) else [x]))
        for name, spec in parameters.items():  # every value is one of its list or within its range
            if isinstance(spec, dict):
                slack = 1e-12 * (abs(spec["min"]) + abs(spec["max"]))
                assert all(spec["min"] - slack <= p[name] <= spec["max"] + slack for p in pts), name
            else:
                assert all(p[name] in spec for p in pts), name


# ----- signals ----------------------------------------------------------------------------------
SIGNAL_SCRIPT = """
import importlib.util, sys, time
spec = importlib.util.spec_from_file_location("outputs", sys.argv[-1])  # the module alone: a fast start
outputs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(outputs)
staged = outputs.staged
out, n, sleep = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
with staged() as files:
    for k in range(n):
        open(files.path(out + f"/f{k}.txt"), "w").write("x" * 1000)
    print("ready", flush=True)
    time.sleep(sleep)
"""


@settings(FUZZ, max_examples=6 * SCALE)
@given(st.sampled_from([signal.SIGTERM, signal.SIGHUP, signal.SIGINT]), st.integers(1, 4), st.sampled_from([0.0, 5.0]))
def test_signals_during_staged_writes_leave_old_files_or_new_ones(tmp_path_factory, sig, n, sleep):
    """Signal a writer once its files are staged: afterwards the folder holds the finished files
    (the signal came after the rename) or none; never a .partial file."""
    out = tmp_path_factory.mktemp("sig")
    proc = subprocess.Popen([sys.executable, "-c", SIGNAL_SCRIPT, str(out), str(n), str(sleep), OUTPUTS],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env={**os.environ, "PYTHONPATH": SRC})
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(sig)
    proc.communicate(timeout=30)
    left = sorted(p.name for p in out.iterdir())
    assert not [name for name in left if ".partial" in name], left
    assert left in ([], [f"f{k}.txt" for k in range(n)]), left


# ----- issue 34: the newest doors under hostile input, each bounded in CPU time and memory -------------
def _chain_file(folder, n):
    """A rigid chain of n links as a model file (written, not derived: cheap at any n)."""
    links = "".join(f"  - {{a: 0.5, alpha: {1.5707963 if k % 2 == 0 else 0.0}, mass: 1.0, com: [-0.25, 0, 0], "
                    "inertia: [0.001, 0.03, 0.03]}\n" for k in range(n))
    path = folder / f"chain{n}.yaml"
    path.write_text(f"name: chain{n}\nlinks:\n{links}")
    return path


def _wide_csv(folder):
    path = folder / "wide.csv"
    path.write_text(",".join(["t"] + [f"c{k}" for k in range(100_000)]) + "\n" + ",".join(["0"] * 100_001) + "\n")
    return path


def _xacro_bomb(folder):
    """Thirty macros, each calling the one before twice: 2^30 links once expanded."""
    lines = ['<robot name="bomb" xmlns:xacro="http://www.ros.org/wiki/xacro">',
             '<xacro:macro name="m0"><link name="x"/></xacro:macro>']
    lines += [f'<xacro:macro name="m{k}"><xacro:m{k - 1}/><xacro:m{k - 1}/></xacro:macro>' for k in range(1, 31)]
    path = folder / "bomb.urdf.xacro"
    path.write_text("\n".join(lines + ['<link name="base"/><xacro:m30/></robot>']))
    return path


def _xacro_expression(expression):
    """One property whose value is ``expression``, used in a joint's origin."""
    def make(folder):
        path = folder / "expr.urdf.xacro"
        path.write_text('<robot name="b" xmlns:xacro="http://www.ros.org/wiki/xacro">'
                        f'<xacro:property name="v" value="${{{expression}}}"/><link name="base"/><link name="l"/>'
                        '<joint name="j" type="revolute"><origin xyz="0 0 ${v*0}"/><parent link="base"/>'
                        '<child link="l"/><axis xyz="0 0 1"/></joint></robot>')
        return path
    return make


def _plan(**kw):
    import flexman as fm

    robot = fm.examples.load(kw.pop("model", "dynaman_2r"))
    return lambda folder: fm.plan(robot, kw.pop("start", [0.0] * robot.n_joints), kw.pop("goal"), **kw)


def _python(call):
    return lambda folder: call()


def _cli(*argv, files=None):
    """`flexman argv...` (``{name}`` in an argument: the file ``files[name](folder)``): must exit 2
    with one line; the line is returned for the message check."""
    def run(folder):
        import contextlib
        import io

        made = {name: str(make(folder)) for name, make in (files or {}).items()}
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = cli.main([a.format(out=folder, **made) for a in argv])
        assert code == 2, err.getvalue()
        raise ValueError(err.getvalue().strip().removeprefix("flexman: error: "))
    return run


def _shaper(**kw):
    import flexman as fm
    from flexman.control import shaper

    robot = fm.examples.load("flx_flexible_pendulum")
    return lambda folder: shaper(robot, [0.0], **kw)


def _from_csv(text):
    def run(folder):
        import flexman as fm

        path = folder / "ref.csv"
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        return fm.trajectory.from_csv(path)
    return run


DOORS = {
    # plan: magnitudes, a zero minimum-time move, a grid too coarse, the solver's budgets
    "plan goal 1e300": (_plan(goal=[1e300, 0.0], duration=1.0), r"q_goal: joint 1 = 1e\+300 is beyond"),
    "plan zero move": (_plan(goal=[0.0, 0.0], limits={"torque": [5.0, 5.0]}), r"a zero move"),
    "plan 4 knots, 4 flexible coordinates": (_plan(model="flx_three_link", goal=[0.5] * 3, duration=1.0, knots=4),
                                             r"knots: 4 intervals are too coarse"),
    "plan time limit 0": (_plan(goal=[0.5, 0.5], duration=1.0, time_limit=0.0), r"time_limit: expected a finite"),
    "plan max_iter True": (_plan(goal=[0.5, 0.5], duration=1.0, max_iter=True), r"max_iter: expected a whole number"),
    "plan --time-limit -1": (_cli("plan", "dynaman_2r", "--to", "1", "1", "--duration", "1", "--time-limit", "-1",
                                  "--out", "{out}/p"), r"--time-limit: must be a number of seconds > 0"),
    # FMU export: a model too large is refused before the derivation
    "fmu of 200 links": (_cli("export", "{chain}", "--fmu", "{out}/c.fmu", files={"chain": lambda f: _chain_file(f, 200)}),
                         r"FMU: 'chain200' has 200 coordinates; an FMU takes at most 80"),
    "fmu step 1e-300": (_cli("export", "dynaman_2r", "--fmu", "{out}/c.fmu", "--step-size", "1e-300"),
                        r"step_size: must be a number of seconds in \[1e-09, 1\]"),
    # excite: sizes before allocation
    "excite period 1e9": (_cli("excite", "dynaman_2r", "--period", "1e9", "--out", "{out}/e.csv"), r"--period"),
    "excite starts 1e9": (_cli("excite", "dynaman_2r", "--period", "2", "--starts", "1000000000", "--out",
                               "{out}/e.csv"), r"--starts"),
    "excite seed -1": (_cli("excite", "dynaman_2r", "--period", "2", "--seed", "-1", "--out", "{out}/e.csv"),
                       r"--seed"),
    # identify: 100,000 columns refused at the header, a record too long for the regressor before it is built
    "identify 100000 columns": (lambda folder: __import__("flexman.analysis.measurements", fromlist=["x"]).read_table(
        _wide_csv(folder)), r"100,001 columns; a measurement file may have at most 1,000"),
    "identify 1e6 samples of 6 joints": (_python(lambda: __import__("flexman").identify(
        __import__("flexman").examples.load("puma560"), np.arange(1_000_000) * 1e-3,
        *[np.random.default_rng(k).standard_normal((1_000_000, 6)) for k in (1, 2)])),
        r"t: 1e\+06 samples would need about .* GB; the limit is 4 GB"),
    # from_csv and shapers
    "from_csv text": (_from_csv("t,q1,qd1,qdd1\n0,x,0,0\n"), r"ref.csv"),
    "from_csv latin-1": (_from_csv(b"t,q1,qd1,qdd1\n0,\xe9,0,0\n"), r"ref.csv"),
    "shaper samples 1e6": (_shaper(samples=10**6), r"samples"),
    "shaper t nan": (_shaper(t=float("nan")), r"^t: "),
    # xacro: a macro bomb stops at the call limit
    "xacro bomb": (_cli("info", "{bomb}", files={"bomb": _xacro_bomb}),
                   r"the expansion makes more than 10,000 macro calls"),
    # xacro: one expression whose value is astronomically large (CPU or memory)
    **{f"xacro expression {e}": (_cli("info", "{x}", files={"x": _xacro_expression(e)}),
                                 r"expr.urdf.xacro: an expression's value would exceed 1,000,000 items or digits")
       for e in ("10**10**10", "'x' * 10**10", "[0] * 10**9", "1 &lt;&lt; 10**9", "(7**1000000) * (7**1000000)")},
}


@pytest.mark.parametrize("door", list(DOORS))
def test_newest_doors_refuse_hostile_input_in_one_line_within_a_budget(tmp_path, door):
    """Each input of issue 34 against the plan, FMU, excite, identify, from_csv, shaper and xacro
    doors: a one-line refusal naming the field, within 10 s of CPU and 1.5 GB more memory."""
    make, pattern = DOORS[door]
    with bounded(cpu_s=10, memory_mb=1500), pytest.raises(ValueError) as info:
        make(tmp_path)
    message = str(info.value)
    one_line(message)
    assert __import__("re").search(pattern, message), message
