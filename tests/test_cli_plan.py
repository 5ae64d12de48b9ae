"""`flexman plan`: one-line errors with nothing written, and a run's files and comparison."""
import json

import numpy as np
import pytest

from flexman.cli import main

pytest.importorskip("casadi")

HUB = """name: hub_arm
gravity: [0, 0, 0]
links:
  - joint: revolute
    a: 1.0
    mass: 0.0
    limits: [-1.5, 1.5]
    hub: {mass: 1.0, inertia: [0.05, 0.05, 0.05]}
    beam: {length: 1.0, mass_per_length: 1.0, EI: [50.0, 50.0], modes: {y: 1, z: 0, torsion: 0}}
plan:
  goal: [1.0]
  duration: 1.0
  knots: 30
  torque_limit: [20.0]
"""


@pytest.fixture
def hub(tmp_path):
    path = tmp_path / "hub.yaml"
    path.write_text(HUB)
    return path


@pytest.mark.parametrize("extra, message", [
    (["--to", "nan"], "--to: expected a finite number"),
    (["--to", "2.0"], "q_goal: joint 1 = 2 is outside its range [-1.5, 1.5]"),
    (["--duration", "1", "--min-time"], "--duration and --min-time: give one or the other"),
    (["--duration", "-1"], "duration: expected a finite number > 0"),
    (["--torque-limit", "0"], "limits.torque: every limit must be > 0"),
    (["--to", "1", "2"], "--to: expected 1 value"),
    (["--duration", "0.2", "--torque-limit", "1.0"], "plan: the limits cannot be met"),
    # issue 34: a grid too coarse for the dynamics, a zero minimum-time move, a goal of 1e300, the new options
    (["--knots", "4"], "knots: 4 intervals are too coarse for 2 coordinates (1 flexible): the dynamics then give "
                       "1 more equality constraints than unknowns; use at least 5 knots"),
    (["--min-time", "--to", "0"], "q_goal: equals q_start, a zero move, which has no least time"),
    (["--to", "1e300"], "--to: value 1 (1e+300) is beyond the supported magnitude"),
    (["--time-limit", "0"], "--time-limit: must be a number of seconds > 0"),
    (["--time-limit", "nan"], "--time-limit: expected a finite number"),
    (["--max-iter", "0"], "--max-iter: must be a whole number >= 1"),
])
def test_bad_input_one_line_nothing_written(hub, tmp_path, capsys, extra, message):
    out = tmp_path / "out"
    assert main(["plan", str(hub), "--out", str(out)] + extra) == 2
    err = capsys.readouterr().err
    assert err.startswith("flexman: error: ") and message in err and err.count("\n") == 1, err
    assert not out.exists()


def test_model_plan_section_is_validated(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(HUB.replace("knots: 30", "knots: 2"))
    assert main(["plan", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "plan.knots: expected a whole number" in capsys.readouterr().err
    bad.write_text(HUB.replace("duration: 1.0", "speed: 1.0"))
    assert main(["plan", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "plan" in capsys.readouterr().err and not (tmp_path / "o").exists()


@pytest.mark.slow
def test_plan_writes_trajectory_and_comparison(hub, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["plan", str(hub), "--out", str(out), "--shaper", "zv", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert sorted(p.name for p in out.iterdir()) == ["comparison.json", "plan.csv", "plan.npz", "plan.png"]
    runs = {r["name"]: r for r in summary["comparison"]}
    assert runs["optimal plan"]["residual_mm"] < 0.2 * runs["quintic profile"]["residual_mm"]
    assert runs["ZV-shaped"]["residual_mm"] < 0.2 * runs["quintic profile"]["residual_mm"]
    # the limits checked densely on the returned plan (and its simulation): the report says the peak
    dense = summary["plan"]["dense"]
    assert dense["points_per_interval"] == 20 and dense["within_limits"]
    assert dense["largest_ratio"] == pytest.approx(max(dense["torque_ratio"]), rel=1e-12) and dense["largest_ratio"] <= 1.001
    assert np.abs(np.load(out / "plan.npz")["tau"]).max() <= 20.0 * 1.001  # the torque limit of the hub model
    data = np.load(out / "plan.npz")
    assert data["q"].shape[1] == 2 and abs(data["q"][-1, 0] - 1.0) < 1e-9
    csv = np.loadtxt(out / "plan.csv", delimiter=",", skiprows=1)
    assert np.allclose(csv[:, 0], data["t"])


def test_plan_section_round_trips(hub, tmp_path):
    import flexman as fm

    robot = fm.load(str(hub))
    assert robot.plan_settings == {"goal": [1.0], "duration": 1.0, "knots": 30, "torque_limit": [20.0]}
    fm.save(robot, tmp_path / "again.yaml")
    assert fm.load(str(tmp_path / "again.yaml")).plan_settings == robot.plan_settings
