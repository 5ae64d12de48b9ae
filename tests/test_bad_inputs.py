"""Every public command and function has its bad-input case (issue 14): one line, exit 2 on
the command line, ModelError or ValueError from Python."""
from __future__ import annotations

import numpy as np
import pytest

import flexman as fm
from flexman import cli
from flexman.model.errors import ModelError


@pytest.fixture
def model(tmp_path):
    return str(fm.save(fm.examples.load("flx_rigid_pendulum"), tmp_path / "m.yaml"))


CLI_CASES = [
    (["info", "{tmp}/none.yaml"], "no such model file or bundled example"),
    (["info", "{tmp}"], "is a directory, not a model file"),
    (["info", "{model}.txt"], "no such model file"),
    (["info", ""], "model: empty name"),
    (["examples", "nope"], "unknown example 'nope'"),
    (["examples", "flx_rigid_pendulum", "--copy", ""], "--copy: empty path"),
    (["simulate", "{model}", "--dt", "0"], "--dt: must be > 0"),
    (["simulate", "{model}", "--dt", "0.5", "--t-final", "0.1"], "dt: 0.5 s is longer than t_final = 0.1 s"),
    (["simulate", "{model}", "--dt", "1e-9", "--t-final", "1e6"], "output samples; the limit is 1e+07"),
    (["simulate", "{model}", "--q0", "0.1", "0.2", "0.3"], "--q0: expected 1 value (got 3)"),
    (["simulate", "{model}", "--torque", "nan"], "argument --torque: expected a finite number, got 'nan'"),
    (["simulate", "{model}", "--rtol", "-1", "--method", "RK45"], "--rtol: must be > 0"),
    (["simulate", "{model}", "--controller", "{tmp}/none.yaml"], "--controller: no such file"),
    (["simulate", "{model}", "--out", ""], "--out: empty path"),
    (["sweep", "{model}", "{tmp}/none.yaml"], "SPEC: no such file"),
    (["report", "{model}", "--out", ""], "--out: empty path"),
    (["report", "{model}", "--out", "{tmp}/r", "--magnify", "-1"], "--magnify: must be a number >= 0"),
    (["frequencies", "{model}", "--q", "0.1", "0.2", "0.3"], "--q: expected 1 value (got 3)"),
    (["frequencies", "{model}", "--q", "nan"], "argument --q: expected a finite number, got 'nan'"),
    (["derive"], "derive: give a MODEL"),
    (["derive", "{model}", "--formulation", "x"], "argument --formulation: invalid choice"),
    (["codegen", "{model}", "--out", "{model}"], "is the input file itself"),
    (["codegen", "{model}", "--out", "{tmp}/a.c", "--lang", "cobol"], "argument --lang: invalid choice"),
    (["analyze", "{model}"], "analyze: choose an analysis"),
    (["closure", "{model}", "--dt", "0"], "--dt: must be a finite number > 0"),
    (["closure", "{model}"], "controller: the model has no controller section"),
    (["validate", "--case", "nope"], "unknown case 'nope'"),
    (["nope"], "argument COMMAND: invalid choice"),
]


@pytest.mark.parametrize("argv,expected", CLI_CASES, ids=[" ".join(a[:1] + [e[:20]]) for a, e in CLI_CASES])
def test_every_command_refuses_bad_input_in_one_line(model, tmp_path, capsys, argv, expected):
    argv = [a.format(model=model, tmp=tmp_path) for a in argv]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("flexman: error: ") and err.count("\n") == 1, err
    assert expected in err, err


def robot():
    return fm.examples.load("flx_double_pendulum")


PYTHON_CASES = [
    ("load(int)", lambda: fm.load(42), ModelError, "expected a model file path or a bundled example name"),
    ("load(None)", lambda: fm.load(None), ModelError, "expected a model file path"),
    ("save(not a robot)", lambda: fm.save("robot", "x.yaml"), ValueError, "save: expected a Robot"),
    ("save(.txt)", lambda: fm.save(robot(), "x.txt"), ModelError, "unknown file type '.txt'"),
    ("derive(formulation)", lambda: fm.derive(robot(), formulation="x"), ValueError, "formulation"),
    ("derive(parameters)", lambda: fm.derive(robot(), parameters="x"), ValueError, "parameters"),
    ("simulate(robot)", lambda: fm.simulate("robot", 1.0), ValueError, "simulate: expected a Robot"),
    ("simulate(t_final)", lambda: fm.simulate(robot(), "1"), ValueError, "t_final: expected a number > 0, got str"),
    ("simulate(controller)", lambda: fm.simulate(robot(), 0.1, controller=3), ValueError, "controller"),
    ("compile(backend)", lambda: fm.derive(robot()).compile("fortran"), ValueError, "backend"),
    ("export(lang)", lambda: fm.derive(robot()).export("cobol", "x.cob"), ValueError, "lang: unknown 'cobol'"),
    ("examples.load", lambda: fm.examples.load("nope"), ModelError, "unknown example 'nope'"),
    ("natural_frequencies(joints)", lambda: fm.analysis.natural_frequencies(robot(), joints="x"), ValueError,
     "joints: use 'free' or 'locked'"),
    ("rest_to_rest(profile)", lambda: fm.trajectory.rest_to_rest([0, 0], [1, 1], 1.0, "x"), ValueError, "profile"),
    ("PID(gains)", lambda: fm.control.PID(robot(), fm.trajectory.rest_to_rest([0, 0], [1, 1], 1.0), kp=[1, 2, 3],
                                          ki=0, kd=0), ValueError, "kp"),
    ("shaper(kind)", lambda: fm.control.shaper(fm.examples.load("flx_three_link"), [0, 0, 0], kind="ZX"), ValueError,
     "kind: unknown shaper 'ZX'"),
    ("shaper(rigid robot)", lambda: fm.control.shaper(fm.examples.load("dynaman_2r"), [0, 0]), ValueError,
     "has no flexible modes"),
    ("tip_offset(q)", lambda: fm.analysis.tip_offset(fm.examples.load("flx_three_link"), np.zeros(8)), ValueError,
     "q: expected nq = 7 values"),
    ("quasi_static_deflection(q_r)", lambda: fm.analysis.quasi_static_deflection(fm.examples.load("flx_three_link"),
                                                                               [0.0, np.nan, 0.0]), ValueError,
     "q_r[1] is nan"),
    ("stiffness_margin(q)", lambda: fm.analysis.stiffness_margin(fm.examples.load("flx_three_link"), 1.1,
                                                                 np.zeros((2, 7))), ValueError,
     "q: expected one configuration of nq = 7"),
    ("Result.save(.txt)", lambda: fm.simulate(robot(), 0.02, dt=0.01).save("x.txt"), ValueError, "unknown extension"),
    ("Beam(modes)", lambda: fm.Beam(length=1.0, mass_per_length=1.0, EI=1.0, modes={"y": -1}), ModelError, "modes.y"),
    ("Link(joint)", lambda: fm.Link(joint="ball"), ModelError, "joint: unknown type 'ball'"),
    ("Robot(links)", lambda: fm.Robot(links=[]), ModelError, "links: a robot needs at least one link"),
    ("RigidBody(inertia)", lambda: fm.RigidBody(1.0, [0, 0, 0], [1, 1, 5]), ModelError, "triangle inequality"),
]


@pytest.mark.parametrize("name,call,error,expected", PYTHON_CASES, ids=[c[0] for c in PYTHON_CASES])
def test_every_public_function_refuses_bad_input(name, call, error, expected, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(error, match=None) as info:
        call()
    message = str(info.value)
    assert "\n" not in message and expected in message, message


def test_model_text_is_text_in_html_too():
    """A description is data: in the HTML report it is escaped, never markup or script."""
    from flexman.viz.summary import model_html

    robot = fm.examples.load("flx_rigid_pendulum")
    robot.description = "<script>alert(1)</script> [bold]x[/bold]"
    page = model_html(robot)
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
