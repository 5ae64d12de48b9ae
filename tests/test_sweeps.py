"""Sweeps on Dask: a LocalCluster with two workers, a worker killed mid-sweep, resuming after an
interruption, the figures against a direct simulation, the specification's errors."""
from __future__ import annotations

import json
import os
import signal
import threading
import time

import numpy as np
import pytest

import flexman as fm
from flexman import sweeps
from flexman.analysis.tip import tip_offset
from flexman.model.serialize import robot_from_dict, robot_to_dict

RUN = {"t_final": 0.3, "dt": 1e-3, "torque": [1.0]}
GRID = {"links.0.beam.EI": [400.0, 800.0, 1600.0], "links.0.beam.mass_per_length": [0.5, 1.0]}


@pytest.fixture(scope="module")
def client():
    """One LocalCluster of two worker processes for the tests that need to reach it."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0")
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def direct_figures(ei, mu):
    """The figures of one point, computed here without the sweep machinery."""
    data = robot_to_dict(fm.examples.load("flx_flexible_pendulum"))
    data["links"][0]["beam"]["EI"] = [ei, ei]
    data["links"][0]["beam"]["mass_per_length"] = mu
    robot = robot_from_dict(data)
    res = fm.simulate(robot, RUN["t_final"], dt=RUN["dt"], torque=RUN["torque"])
    dist = np.linalg.norm(tip_offset(robot, res.q), axis=-1)
    return dist.max(), np.abs(res.tau).max(), np.sort(fm.analysis.natural_frequencies(robot, res.q[0], joints="locked"))


@pytest.mark.slow
def test_sweep_on_local_cluster(tmp_path):
    """The default scheduler: a LocalCluster (two workers); a 3 x 2 grid in one Parquet file."""
    robot = fm.examples.load("flx_flexible_pendulum")
    res = fm.sweep(robot, parameters=GRID, run=RUN, out=tmp_path / "s.parquet", n_workers=2, progress=False)
    assert res.computed == 6 and res.reused == 0 and len(res) == 6
    table = sweeps.read(tmp_path / "s.parquet")
    assert table.column("point").to_pylist() == list(range(6))
    assert not any(table.column("error").to_pylist())
    ei, mu = table.column("links.0.beam.EI").to_pylist(), table.column("links.0.beam.mass_per_length").to_pylist()
    assert sorted(zip(ei, mu)) == sorted((a, b) for a in GRID["links.0.beam.EI"]
                                         for b in GRID["links.0.beam.mass_per_length"])
    peak = np.array(table.column("peak_tip_deflection").to_pylist())
    k = ei.index(800.0) if mu[ei.index(800.0)] == 1.0 else ei.index(800.0) + 1
    want_peak, want_tau, w = direct_figures(ei[k], mu[k])
    assert abs(peak[k] - want_peak) <= 1e-12 * want_peak
    assert table.column("torque_peak_q1").to_pylist()[k] == pytest.approx(want_tau, rel=1e-12)
    assert table.column("lowest_frequency").to_pylist()[k] == pytest.approx(w[w > 1e-9][0] / (2 * np.pi), rel=1e-12)
    for m in (0.5, 1.0):  # a stiffer beam deflects less under the same torque
        sel = [i for i in range(6) if mu[i] == m]
        order = np.argsort([ei[i] for i in sel])
        assert np.all(np.diff(peak[np.array(sel)[order]]) < 0)
    fig = res.plot("peak_tip_deflection", "links.0.beam.EI", "links.0.beam.mass_per_length", tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 1000 and fig.axes
    one = res.plot("peak_tip_deflection", "links.0.beam.EI", path=tmp_path / "p1.png")  # one parameter: a curve
    line = one.axes[0].lines[0]
    assert (tmp_path / "p1.png").stat().st_size > 1000 and len(line.get_xdata()) == 6
    np.testing.assert_array_equal(np.sort(line.get_xdata()), np.sort(ei))
    frame = res.to_pandas()
    assert list(frame["point"]) == list(range(6)) and len(frame.columns) == table.num_columns
    np.testing.assert_array_equal(frame["peak_tip_deflection"].to_numpy(), peak)
    assert repr(res).startswith("<SweepResult 6 points")


def test_resume_reuses_finished_points(tmp_path, client):
    """An interrupted sweep (its final file and two finished points missing) computes only the
    missing points and gives the same table."""
    robot = fm.examples.load("flx_flexible_pendulum")
    out = tmp_path / "s.parquet"
    run = {**RUN, "t_final": 0.1}
    first = fm.sweep(robot, parameters=GRID, run=run, out=out, scheduler=client, progress=False)
    before = first.table.to_pydict()
    out.unlink()
    for k in (1, 4):
        (tmp_path / "s.parquet.parts" / f"point_{k}.json").unlink()
    again = fm.sweep(robot, parameters=GRID, run=run, out=out, scheduler=client, progress=False)
    assert (again.computed, again.reused) == (2, 4)
    after = again.table.to_pydict()
    for name in ("links.0.beam.EI", "peak_tip_deflection", "settling_time", "lowest_frequency"):
        assert after[name] == pytest.approx(before[name], rel=1e-12)
    with pytest.raises(sweeps.SweepError, match="parts of another sweep"):
        fm.sweep(robot, parameters={"links.0.beam.EI": [1.0e3]}, run=run, out=out, scheduler=client)


@pytest.mark.slow
def test_worker_killed_mid_sweep_loses_nothing(tmp_path, client):
    """SIGKILL one worker once points have started to finish: Dask reruns its tasks elsewhere
    (the nanny restarts it), and every point arrives with its correct figures."""
    robot = fm.examples.load("flx_flexible_pendulum")
    grid = {"links.0.beam.EI": [300.0, 500.0, 700.0, 900.0, 1100.0, 1300.0, 1500.0, 1700.0]}
    run = {**RUN, "t_final": 0.6}
    parts = tmp_path / "s.parquet.parts"
    pids = client.run(os.getpid)
    victim = next(iter(pids.values()))
    killed = []

    def killer():
        deadline = time.time() + 120
        while time.time() < deadline and not list(parts.glob("point_*.json")):
            time.sleep(0.02)
        os.kill(victim, signal.SIGKILL)
        killed.append(victim)

    thread = threading.Thread(target=killer)
    thread.start()
    res = fm.sweep(robot, parameters=grid, run=run, out=tmp_path / "s.parquet", scheduler=client, progress=False)
    thread.join()
    assert killed and len(res) == 8 and not any(res.table.column("error").to_pylist())
    assert res.computed == 8
    peaks = res.table.column("peak_tip_deflection").to_pylist()
    assert all(np.isfinite(peaks)) and np.all(np.diff(peaks) < 0)
    client.wait_for_workers(2, timeout=60)


def test_sampling_and_spec_errors(tmp_path):
    lhs = sweeps.points({"a": {"min": 0.0, "max": 1.0}, "b": {"min": 10.0, "max": 20.0}}, "latin_hypercube", 8, seed=1)
    a = np.sort([p["a"] for p in lhs])
    assert len(lhs) == 8 and np.all((a >= np.arange(8) / 8) & (a < np.arange(1, 9) / 8))  # one per stratum
    mc = sweeps.points({"a": {"min": 2.0, "max": 3.0}}, "monte_carlo", 50, seed=1)
    assert all(2.0 <= p["a"] <= 3.0 for p in mc)
    assert len(sweeps.points({"a": [1, 2], "b": [3, 4, 5]})) == 6
    robot = fm.examples.load("flx_flexible_pendulum")
    with pytest.raises(sweeps.SweepError, match=r"parameters.links.5.mass: 'links.5' is not an index"):
        fm.sweep(robot, parameters={"links.5.mass": [1.0]}, out=tmp_path / "x.parquet")
    with pytest.raises(sweeps.SweepError, match="grid needs a list"):
        sweeps.points({"a": {"min": 0.0, "max": 1.0}})
    with pytest.raises(sweeps.SweepError, match="run: unknown field"):
        fm.sweep(robot, parameters={"links.0.mass": [1.0]}, run={"tfinal": 1}, out=tmp_path / "x.parquet")
    data = robot_to_dict(robot)
    sweeps.apply(data, "links.0.beam.EI", 5.0)  # a scalar for a list field sets every entry
    assert data["links"][0]["beam"]["EI"] == [5.0, 5.0]
    row = sweeps.run_point(robot_to_dict(robot), {"links.0.beam.length": -1.0}, RUN)
    assert "length" in row["error"]  # a bad variant is a row with its reason, not a crash


def test_cli_sweep(tmp_path, client, capsys):
    from flexman.cli import main

    spec = tmp_path / "spec.yaml"
    spec.write_text("parameters:\n  links.0.beam.EI: {min: 400, max: 1600}\n  links.0.beam.mass_per_length: "
                    "{min: 0.5, max: 1.0}\nsampling: latin_hypercube\nsamples: 5\n"
                    "run: {t_final: 0.1, dt: 0.001, torque: [1.0]}\n")
    addr = client.scheduler.address
    assert main(["sweep", "flx_flexible_pendulum", str(spec), "--scheduler", addr, "--json",
                 "--plot", "peak_tip_deflection", "links.0.beam.EI", "links.0.beam.mass_per_length"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["points"] == 5 and summary["failed"] == 0 and len(summary["files"]) == 2
    assert (tmp_path / "spec.parquet").exists() and (tmp_path / "spec.png").exists()
    spec.write_text("parameters: {links.0.mass: [1.0]}\nsampling: sobol\n")
    assert main(["sweep", "flx_flexible_pendulum", str(spec), "--scheduler", addr]) == 2
    assert "sampling: unknown 'sobol'" in capsys.readouterr().err


def test_figures_of_an_arm_under_gravity_settle_about_its_sag_and_use_flexible_modes():
    """The 4 m pendulum moved to 0.8 rad by a PID and held there under gravity: its tip settles
    about the static sag (not about zero, where it never returns), well before the run ends; the
    lowest frequency is the flexible one with the joint locked (issue 35)."""
    data = robot_to_dict(fm.examples.load("flx_flexible_pendulum"))
    run = {"t_final": 3.0, "dt": 1e-3, "controller": {
        "type": "pid", "kp": [4000.0], "ki": [0.0], "kd": [800.0],
        "trajectory": {"type": "rest_to_rest", "start": [0.0], "end": [0.8], "duration": 1.0}}}
    row = sweeps.run_point(data, {"links.0.beam.damping": 0.02}, run)
    assert row["error"] == ""
    assert 1.0 < row["settling_time"] < 2.0  # after the 1 s move, far before the 3 s end
    robot = robot_from_dict({**data, "links": [{**data["links"][0], "beam": {**data["links"][0]["beam"], "damping": 0.02}}]})
    from flexman.control import from_spec

    res = fm.simulate(robot, 3.0, dt=1e-3, controller=from_spec(robot, run["controller"]), progress=False)
    sag = np.linalg.norm(tip_offset(robot, res.q[-1]))
    assert sag > 0.1 * np.linalg.norm(tip_offset(robot, res.q), axis=-1).max()  # settled, but not at zero:
    # measured from zero, the tip never comes within 2 % of its peak - the old figure was the run's length
    w = fm.analysis.natural_frequencies(robot, res.q[0], joints="locked")
    assert row["lowest_frequency"] == pytest.approx(np.sort(w[w > 1e-9])[0] / (2 * np.pi), rel=1e-12)
    free = np.asarray(robot.natural_frequencies(res.q[0]), dtype=float)
    assert np.sort(free[free > 1e-9])[0] / (2 * np.pi) < 0.9 * row["lowest_frequency"]  # the free joint's mode is lower


def test_a_sweep_whose_every_point_fails_exits_non_zero_in_one_line(tmp_path, client, capsys):
    """Issue 34: every point failing (here a negative mass in each) exited 0; now one line, exit 2."""
    from flexman.cli import main

    spec = tmp_path / "spec.yaml"
    spec.write_text("parameters: {links.0.mass: [-1.0, -2.0]}\nrun: {t_final: 0.01, dt: 0.001}\n")
    assert main(["sweep", "flx_flexible_pendulum", str(spec), "--scheduler", client.scheduler.address]) == 2
    err = capsys.readouterr().err
    assert err.startswith("flexman: error: every one of the 2 points failed") and err.count("\n") == 1, err
    assert "links[0].mass" in err


def test_a_run_too_large_for_every_point_is_refused_before_any_worker(tmp_path):
    """Issue 34: a run size every point would refuse is refused once, up front (no cluster)."""
    with pytest.raises(sweeps.SweepError, match=r"^run\.dt: .*output samples"):
        sweeps.sweep(fm.examples.load("flx_flexible_pendulum"), GRID, run={"t_final": 1e4, "dt": 1e-6},
                     out=tmp_path / "s.parquet")
    assert not (tmp_path / "s.parquet.parts").exists()


UNGUARDED = """import flexman as fm
robot = fm.examples.load("flx_flexible_pendulum")
fm.sweep(robot, {"links.0.mass": [1.0]}, run={"t_final": 0.01}, out=%r)
"""
GUARDED = """from flexman import sweeps

def main():
    sweeps.check_main_guard()
    print("guard found")

if __name__ == "__main__":
    main()
"""


def test_a_script_without_the_main_guard_gets_one_line_not_a_traceback_per_worker(tmp_path):
    """Issue 34: fm.sweep at a script's top level printed six tracebacks (each spawned worker
    imports the script and starts the sweep again); now it is refused before any worker starts.
    Under `if __name__ == "__main__":` (through a function) the check passes."""
    import subprocess
    import sys
    from pathlib import Path

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    script = tmp_path / "unguarded.py"
    script.write_text(UNGUARDED % str(tmp_path / "s.parquet"))
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 1 and res.stderr.count("Traceback") == 1, res.stderr
    assert res.stderr.strip().splitlines()[-1].endswith(
        "fm.sweep: unguarded.py line 3 starts a sweep outside `if __name__ == \"__main__\":`; its worker processes "
        "import the script again and would each start it too: put the sweep under that guard")
    assert not (tmp_path / "s.parquet.parts").exists()
    script = tmp_path / "guarded.py"
    script.write_text(GUARDED)
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0 and res.stdout.strip() == "guard found", res.stderr


def test_python_dash_m_flexman_sweep_passes_the_main_guard(tmp_path):
    """`python -m flexman sweep` was refused by the main-guard check (flexman/__main__.py ran the
    command at its top level, which spawned workers would run again); here the run is too large
    for every point, so the answer is that refusal, after the guard and before any worker."""
    import subprocess
    import sys
    from pathlib import Path

    spec = tmp_path / "spec.yaml"
    spec.write_text("parameters:\n  links.0.mass: [1.0, 2.0]\nrun:\n  t_final: 1.0e4\n  dt: 1.0e-6\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    res = subprocess.run([sys.executable, "-m", "flexman", "sweep", "flx_flexible_pendulum", str(spec), "--out",
                          str(tmp_path / "s.parquet")], capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 2 and res.stderr.startswith("flexman: error: run.dt: "), res.stderr


def test_the_build_is_weighed_once_for_the_whole_sweep(monkeypatch, capsys):
    """A sweep too short to pay for a build runs interpreted, said in one line by the sweep (not
    once per point by each worker: the notice's timings differ from point to point)."""
    from flexman.codegen import background, modelcache
    from flexman.simulate import backend

    monkeypatch.setattr(modelcache, "existing_model", lambda *a, **k: None)
    monkeypatch.setattr(background, "start", lambda *a, **k: False)
    monkeypatch.setattr(backend, "_said", set())
    data = robot_to_dict(fm.examples.load("flx_flexible_pendulum"))
    pts = sweeps.points({"links.0.mass": [1.0, 2.0, 3.0]}, "grid", None)
    run = sweeps._decide_backend(data, pts, [0, 1, 2], {"t_final": 0.002, "dt": 0.001})
    assert run["backend"] == "numeric"
    for k in range(3):  # the same structure again, with other timings: no second line
        backend.evaluator(sweeps._point_robot(data, pts[k]), "auto", work=2)
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("flexman: running the interpreted model: compiling"), lines
