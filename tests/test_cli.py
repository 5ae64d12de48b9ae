"""The flexman command: output, --json, and one-line errors without tracebacks."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import flexman as fm
from flexman import cli
from flexman.model import io
from test_closed_loop import rigid_three_link


def pendulum() -> fm.Robot:
    link = fm.Link(a=0.5, name="arm", body=fm.RigidBody(1.0, [-0.25, 0.0, 0.0], [0.0, 0.0208, 0.0208]))
    return fm.Robot(links=[link], name="pendulum", gravity=[0.0, -9.81, 0.0])


def flexible_arm() -> fm.Robot:
    beam = fm.Beam(length=0.5, mass_per_length=2.0, EI=(29520.0, 29520.0), modes={"y": 2, "z": 0, "torsion": 0})
    return fm.Robot(links=[fm.Link(a=0.5, alpha=math.pi / 2, hub=fm.RigidBody(0.5, [0, 0, 0], [1e-3, 1e-3, 1e-3]),
                                   beam=beam)], name="flexible_one")


@pytest.fixture
def model(tmp_path) -> Path:
    return fm.save(pendulum(), tmp_path / "pendulum.yaml")


def run(*args, script=False):
    """Run the command in a fresh process, as a user would."""
    if script:
        exe = Path(sys.executable).parent / "flexman"
        if not exe.exists():
            pytest.skip("console script not installed next to this interpreter")
        cmd = [str(exe), *map(str, args)]
    else:
        cmd = [sys.executable, "-m", "flexman.cli", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def assert_user_error(proc, pattern=""):
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("flexman: error: "), lines[0]
    assert pattern in lines[0], lines[0]


# ----- info ------------------------------------------------------------------------------------
def test_info_text(model):
    proc = run("info", model, script=True)
    assert proc.returncode == 0, proc.stderr
    assert "pendulum" in proc.stdout and "q1" in proc.stdout and "revolute" in proc.stdout
    assert "DH table" in proc.stdout


def test_info_json(tmp_path):
    path = fm.save(flexible_arm(), tmp_path / "arm.toml")
    proc = run("info", path, "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["name"] == "flexible_one" and data["nq"] == 3 and data["nf"] == 2
    assert data["coordinate_names"] == ["q1", "ey1_1", "ey1_2"]
    assert data["links"][0]["alpha"] == pytest.approx(math.pi / 2)
    assert data["links"][0]["hub_mass"] == 0.5 and data["links"][0]["beam_mass"] == 1.0
    assert data["total_mass"] == pytest.approx(1.5)


# ----- errors ----------------------------------------------------------------------------------
def test_missing_model_is_one_line(tmp_path):
    assert_user_error(run("info", tmp_path / "nope.yaml"), "nope.yaml: no such model file")


def test_bad_model_is_one_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("links:\n  - mass: 1\n  - mass: -1.0\n")
    assert_user_error(run("info", path, script=True), "links[1].mass: must be a finite number >= 0 (got -1.0)")


def test_bad_yaml_is_one_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("links: [\n  {mass: 1\n")
    assert_user_error(run("info", path), "invalid YAML at line")


@pytest.mark.parametrize("argv,pattern", [
    ([], "required: COMMAND"),
    (["bogus"], "invalid choice: 'bogus'"),
    (["info"], "required: MODEL"),
    (["simulate", "MODEL", "--dt", "abc"], "--dt: expected a number, got 'abc'"),
    (["simulate", "MODEL", "--method", "euler"], "invalid choice: 'euler'"),
    (["simulate", "MODEL", "--dt", "-1"], "--dt: must be > 0"),
    (["simulate", "MODEL", "--t-final", "0"], "--t-final: must be > 0"),
    (["simulate", "MODEL", "--q0", "1", "2", "3"], "--q0: expected 1 value (got 3)"),
    (["frequencies", "MODEL", "--q", "1", "2"], "--q: expected 1 value (got 2)"),
])
def test_bad_options_in_process(model, capsys, argv, pattern):
    argv = [str(model) if a == "MODEL" else a for a in argv]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("flexman: error: ") and pattern in err[0], err


def test_bad_option_subprocess(model):
    assert_user_error(run("simulate", model, "--dt", "-1"), "--dt: must be > 0")


def test_internal_error_is_one_line(model, capsys, monkeypatch):
    def boom(args):
        raise RuntimeError("unexpected\nstate")

    monkeypatch.setattr(cli.info, "cmd_info", boom)
    assert cli.main(["info", str(model)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["flexman: error: internal error: RuntimeError: unexpected state (set FLEXMAN_DEBUG=1 for a traceback)"]


# ----- validate (fake cases until flexman.literature.cases exists) --------------------------------
def fake_case(name, expected, obtained, tolerance=0.01):
    def run_case():
        if isinstance(obtained, Exception):
            raise obtained
        return obtained

    return SimpleNamespace(name=name, source=f"doc {name}, Table 1", expected=expected,
                           obtained=run_case, tolerance=tolerance)


FAKE_CASES = [
    fake_case("pendulum_period", 1.42, 1.421),
    fake_case("flex_frequencies", [208.64, 1307.5], np.array([208.66, 1307.0])),
    fake_case("closure", 0.0, 1e-15, tolerance=1e-12),
]


def test_validate_all_pass(monkeypatch, capsys):
    monkeypatch.setattr(cli.validate, "validation_cases", lambda: list(FAKE_CASES[:2]))
    assert cli.main(["validate"]) == 0
    out = capsys.readouterr().out
    assert "pendulum_period" in out and "doc flex_frequencies" in out and "2 passed, 0 failed" in out


def test_validate_failures_exit_1(monkeypatch, capsys):
    cases = FAKE_CASES + [fake_case("wrong", 10.0, 11.0), fake_case("crash", 1.0, ZeroDivisionError("x"))]
    monkeypatch.setattr(cli.validate, "validation_cases", lambda: cases)
    assert cli.main(["validate", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    passed = {c["name"]: c["passed"] for c in data["cases"]}
    assert passed == {"pendulum_period": True, "flex_frequencies": True, "closure": False,
                      "wrong": False, "crash": False}
    crash = next(c for c in data["cases"] if c["name"] == "crash")
    assert crash["error"] == "ZeroDivisionError: x"
    assert data["failed"] == 3


def test_validate_one_case(monkeypatch, capsys):
    monkeypatch.setattr(cli.validate, "validation_cases", lambda: list(FAKE_CASES))
    assert cli.main(["validate", "--case", "pendulum_period", "--json"]) == 0
    assert [c["name"] for c in json.loads(capsys.readouterr().out)["cases"]] == ["pendulum_period"]
    assert cli.main(["validate", "--case", "nope"]) == 2
    assert "unknown case 'nope'" in capsys.readouterr().err


def test_validate_case_with_own_check(monkeypatch, capsys):
    case = fake_case("custom", 1.0, 5.0)
    case.passes = lambda obtained: obtained > 4
    monkeypatch.setattr(cli.validate, "validation_cases", lambda: [case])
    assert cli.main(["validate"]) == 0


def test_validate_real_registry_when_present():
    pytest.importorskip("flexman.literature.cases")
    assert len(cli.validation_cases()) > 0


# ----- simulate, frequencies, examples (need other modules) ---------------------------------------
def test_simulate_writes_results(model, tmp_path):
    pytest.importorskip("flexman.simulate")
    out = tmp_path / "run"
    proc = run("simulate", model, "--t-final", "0.2", "--dt", "0.01", "--q0", "0.3", "--out", out, "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["t_final"] == pytest.approx(0.2) and summary["samples"] == 21
    assert summary["energy_drift_relative"] < 1e-6 and not summary["diverged"]
    for name in ("result.npz", "result.csv", "result.png"):
        assert (out / name).stat().st_size > 0
    with np.load(out / "result.npz") as data:
        assert data["q"][0, 0] == pytest.approx(0.3)


def test_simulate_text_and_torque(model, capsys):
    pytest.importorskip("flexman.simulate")
    assert cli.main(["simulate", str(model), "--t-final", "0.05", "--dt", "0.01", "--method", "RK45",
                     "--rtol", "1e-6", "--torque", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "pendulum" in out and "q1=" in out and "energy" in out


@pytest.mark.parametrize("method,work", [("rk4", 5), ("DOP853", None)])
def test_simulate_weighs_the_build_as_simulate_does(model, capsys, monkeypatch, method, work):
    """The model is built before the clock starts, weighed against the run's steps only for a
    fixed-step run (an adaptive method's steps are unknown: simulate() then compiles anyway, so a
    weighing here would say 'interpreted' and compile inside the timed run)."""
    from flexman.simulate import backend

    seen = []
    monkeypatch.setattr(backend, "evaluator", lambda robot, choice, work=None: seen.append(work) or robot)
    assert cli.main(["simulate", str(model), "--t-final", "0.05", "--dt", "0.01", "--method", method,
                     "--backend", "numeric", "--json"]) == 0
    assert seen == [work]
    capsys.readouterr()


def test_simulate_refuses_a_run_too_long_before_building_the_model(model, capsys, monkeypatch):
    from flexman.simulate import backend

    monkeypatch.setattr(backend, "evaluator", lambda *a, **k: pytest.fail("built before the run size was checked"))
    assert cli.main(["simulate", str(model), "--dt", "1e-12", "--t-final", "1", "--backend", "auto"]) == 2
    assert "dt: 1e+12 output samples; the limit is 1e+07" in capsys.readouterr().err


def test_frequencies(tmp_path, capsys):
    pytest.importorskip("flexman.analysis.frequencies")
    path = fm.save(flexible_arm(), tmp_path / "arm.json")
    assert cli.main(["frequencies", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    hz = [row["hz"] for row in data["frequencies"]]
    assert all(h >= 0 for h in hz)
    rad = [row["rad_per_s"] for row in data["frequencies"]]
    assert rad == pytest.approx([2 * math.pi * h for h in hz])
    assert cli.main(["frequencies", str(path), "--q", "0.3"]) == 0
    assert "Hz" in capsys.readouterr().out


needs_examples = pytest.mark.skipif(fm.bundled_examples() is None or not fm.bundled_examples().names(),
                                    reason="flexman.examples not written yet")


@needs_examples
def test_examples_list_and_copy(tmp_path, capsys):
    names = fm.bundled_examples().names()
    assert cli.main(["examples", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [e["name"] for e in listed] == list(names)
    assert all(not e["description"].startswith("(invalid") for e in listed)
    name = names[0]
    dest = tmp_path / "copy.toml"
    assert cli.main(["examples", name, "--copy", str(dest)]) == 0
    assert fm.load(dest).nq == fm.load(name).nq
    assert cli.main(["examples", name, "--copy", str(dest)]) == 2  # no silent overwrite
    assert cli.main(["examples", "no_such_example"]) == 2


@needs_examples
def test_commands_accept_example_names(capsys):
    name = fm.bundled_examples().names()[0]
    assert cli.main(["info", name, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["nq"] >= 1


@pytest.fixture
def fake_examples(tmp_path, monkeypatch):
    """A stand-in for flexman.examples with one bundled model (the real one may be empty)."""
    folder = tmp_path / "bundled"
    folder.mkdir()
    robot = pendulum()
    robot.description = "A rigid rod pendulum.\nMore text."
    fm.save(robot, folder / "demo_pendulum.yaml")
    module = SimpleNamespace(names=lambda: ["demo_pendulum"], path=lambda n: folder / f"{n}.yaml",
                             load=lambda n: io.load(folder / f"{n}.yaml"))
    monkeypatch.setattr(fm, "bundled_examples", lambda: module)
    return module


def test_examples_with_stand_in(fake_examples, tmp_path, capsys):
    assert cli.main(["examples", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"name": "demo_pendulum", "description": "A rigid rod pendulum."}]
    assert cli.main(["examples"]) == 0
    assert "A rigid rod pendulum." in capsys.readouterr().out
    assert cli.main(["examples", "demo_pendulum"]) == 0
    assert "name: pendulum" in capsys.readouterr().out  # prints the file
    dest = tmp_path / "mine.json"
    assert cli.main(["examples", "demo_pendulum", "--copy", str(dest)]) == 0
    assert fm.load(dest).name == "pendulum"
    assert cli.main(["examples", "demo_pendulum", "--copy", str(dest)]) == 2
    assert "exists" in capsys.readouterr().err
    assert cli.main(["examples", "demo_pendulum", "--copy", str(dest), "--force"]) == 0
    folder = tmp_path / "dir"
    folder.mkdir()
    assert cli.main(["examples", "demo_pendulum", "--copy", str(folder)]) == 0
    assert (folder / "demo_pendulum.yaml").read_text() == fake_examples.path("demo_pendulum").read_text()
    assert cli.main(["examples", "--copy", str(dest)]) == 2
    assert cli.main(["examples", "nope"]) == 2


def test_model_argument_accepts_example_name(fake_examples, capsys):
    assert fm.load("demo_pendulum").name == "pendulum"
    assert cli.main(["info", "demo_pendulum", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["name"] == "pendulum"
    assert cli.main(["info", "demo_pendulumm"]) == 2
    assert "bundled examples: demo_pendulum" in capsys.readouterr().err


# ----- derive --compare: our operation counts beside the documents' --------------------------------
def test_derive_without_model_or_compare_is_one_line():
    assert_user_error(run("derive"), "derive: give a MODEL")


def test_document_tables_need_numeric_parameters(capsys):
    assert cli.main(["derive", "--compare", "--parameters", "symbolic"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["flexman: error: --parameters: the document tables count numeric models; "
                   "give a MODEL for symbolic ones"]


def test_derive_model_compare_lists_every_formulation(model, capsys):
    assert cli.main(["derive", str(model), "--compare", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["model"] == "pendulum" and [r["formulation"] for r in data["formulations"]] == list(cli.FORMULATIONS)


def test_document_tables_text_marks_met_counts(monkeypatch, capsys):
    """Rendering only (fake rows): '*' after each count at or below the paper's, sources cited."""
    from flexman.literature import table2, table_4_1

    fake_4_1 = [{"arm": "rigid", "nq": 3, **table2.versus_paper((445, 213), {"mul": 65, "add": 300}),
                 "ours_formulation": "newton_euler"}]
    fake_2 = [{"arm": "RR", "discretization": disc, "nq": nq, "ours_dh": "standard", "ours_formulation": "book",
               **table2.versus_paper(table2.PAPER["RR", disc], counts)}
              for disc, nq, counts in (("assumed_modes", 6, {"mul": 162, "add": 79}),
                                       ("finite_elements", 10, {"mul": 157, "add": 80}))]
    monkeypatch.setattr(table_4_1, "comparison", lambda: fake_4_1)
    monkeypatch.setattr(table2, "comparison", lambda: fake_2)
    assert cli.main(["derive", "--compare"]) == 0
    out = capsys.readouterr().out
    assert "445 / 213" in out and "65* / 300 " in out and "newton_euler" in out
    assert "405 / 168" in out and "162* / 79*" in out and "156 / 80" in out and "157  / 80*" in out
    assert "6 / 10" in out and "000 Table 4.1, p. 87" in out and "004 Table 2 (present study, inertia matrix)" in out


@pytest.mark.slow  # the whole comparison: 13-25 s
@pytest.mark.xdist_group("table2")  # with tests/test_table2.py: table2.comparison() reads the derivations it cached
def test_document_tables_json_match_papers_and_independent_derivations(capsys):
    """Every 004 Table 2 row with the paper's numbers; ours is the derivation it names and no
    worse than Book's recursion in standard DH; 000 Table 4.1's 7-coordinate row is Book's."""
    from flexman.literature import table2

    assert cli.main(["derive", "--compare", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    rows = {(r["arm"], r["discretization"]): r for r in data["table_2"]}
    assert set(rows) == set(table2.PAPER)
    for key, (mul, add) in table2.PAPER.items():
        row = rows[key]
        assert (row["paper_mul"], row["paper_add"]) == (mul, add)
        assert row["met_mul"] == (row["ours_mul"] <= mul) and row["met_add"] == (row["ours_add"] <= add)
    row = rows["RRR", "assumed_modes"]
    assert row["nq"] == table2.arm("RRR", "assumed_modes").nq == 11
    book = fm.derive(table2.arm("RRR", "assumed_modes"), formulation="book", parameters="numeric").op_count("mass_matrix")
    named = book  # the derivation the row names; derived again only where it is not Book's in standard DH
    if (row["ours_dh"], row["ours_formulation"]) != ("standard", "book"):
        named = fm.derive(table2.arm("RRR", "assumed_modes", row["ours_dh"]), formulation=row["ours_formulation"],
                          parameters="numeric").op_count("mass_matrix")
    assert (row["ours_mul"], row["ours_add"]) == (named["mul"], named["add"])
    assert row["ours_mul"] + row["ours_add"] <= book["mul"] + book["add"]

    thesis = {r["arm"]: r for r in data["table_4_1"]}
    flexible, rigid = thesis["one mode per plane"], thesis["rigid"]
    counts = fm.derive(fm.examples.load("flx_three_link"), formulation="book").op_count("inverse_dynamics")
    assert flexible["nq"] == 7 and (flexible["paper_mul"], flexible["paper_add"]) == (2659, 1313)
    assert (flexible["ours_mul"], flexible["ours_add"]) == (counts["mul"], counts["add"])
    assert rigid["nq"] == 3 and (rigid["paper_mul"], rigid["paper_add"]) == (445, 213)
    by_form = {form: fm.derive(rigid_three_link(), formulation=form).op_count("inverse_dynamics")
               for form in cli.FORMULATIONS}
    cheapest = min(c["mul"] + c["add"] for c in by_form.values())
    ours = by_form[rigid["ours_formulation"]]
    assert (rigid["ours_mul"], rigid["ours_add"]) == (ours["mul"], ours["add"]) and ours["mul"] + ours["add"] == cheapest
