"""Files written (issue 14): output locations are checked before the work, existing files are
replaced only with --force, and an interrupted save leaves the old files as they were."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import flexman as fm
from bounds import bounded
from flexman import cli, outputs
from flexman.simulate import Result


def one_line_error(capsys, argv, pattern, seconds=5.0):
    with bounded(cpu_s=seconds):
        assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("flexman: error: "), err
    assert pattern in err, err
    return err


@pytest.fixture
def model(tmp_path):
    return str(fm.save(fm.examples.load("flx_double_pendulum"), tmp_path / "m.yaml"))


# ----- checked before the work ------------------------------------------------------------------
def test_simulate_out_is_checked_before_the_run(model, tmp_path, capsys):
    # a run of 1e6 s would take hours: the bad --out must be found first
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    one_line_error(capsys, ["simulate", model, "--t-final", "1e6", "--out", ""], "--out: empty path")
    one_line_error(capsys, ["simulate", model, "--t-final", "1e6", "--out", str(blocker)], "is a file; give a folder")
    one_line_error(capsys, ["simulate", model, "--t-final", "1e6", "--out", str(blocker / "sub")], "--out: cannot create the folder")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes anywhere")
def test_simulate_out_read_only(model, tmp_path, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        one_line_error(capsys, ["simulate", model, "--t-final", "1e6", "--out", str(ro)], "--out: cannot write in")
    finally:
        ro.chmod(0o700)


def test_simulate_writes_all_files_and_no_partial_names(model, tmp_path, capsys):
    out = tmp_path / "res"
    assert cli.main(["simulate", model, "--t-final", "0.05", "--dt", "0.01", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["result.csv", "result.npz", "result.png"]
    assert Result.load(out / "result.npz").t[-1] == 0.05


def test_codegen_refuses_to_overwrite_without_force(model, tmp_path, capsys):
    target = tmp_path / "arm.c"
    target.write_text("// mine\n")
    one_line_error(capsys, ["codegen", model, "--out", str(target)], f"--out: {target} exists; remove it or add --force")
    assert target.read_text() == "// mine\n"
    assert cli.main(["codegen", model, "--out", str(target), "--force"]) == 0
    assert "arm_mass_matrix" in target.read_text()


def test_codegen_never_overwrites_the_model_file(model, capsys):
    before = open(model).read()
    one_line_error(capsys, ["codegen", model, "--out", model, "--force"], "is the input file itself")
    assert open(model).read() == before


@pytest.mark.parametrize("out,pattern", [
    ("", "--out: empty path"),
    ("{tmp}/missing/arm.c", "the folder {tmp}/missing does not exist"),
    ("{tmp}", "is a folder; give a file name"),
])
def test_codegen_bad_out(model, tmp_path, capsys, out, pattern):
    one_line_error(capsys, ["codegen", model, "--out", out.format(tmp=tmp_path)], pattern.format(tmp=tmp_path))


@pytest.mark.parametrize("argv,pattern", [
    (["--dt", "0"], "--dt: must be a finite number > 0 (got 0.0)"),
    (["--dt=-1e-3"], "--dt: must be a finite number > 0"),
    (["--dt", "nan"], "argument --dt: expected a finite number, got 'nan'"),
    (["--t-final", "0"], "--t-final: must be a finite number > 0"),
    (["--out", ""], "--out: empty path"),
])
def test_closure_options(capsys, argv, pattern):
    one_line_error(capsys, ["closure", "flx_three_link", *argv], pattern)


def test_examples_copy_empty_destination(capsys):
    one_line_error(capsys, ["examples", "flx_rigid_pendulum", "--copy", ""], "--copy: empty path")


# ----- whole or not at all ----------------------------------------------------------------------
def test_staged_files_replace_old_ones_together(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("old a")
    b.write_text("old b")
    with outputs.staged() as files:
        files.write_text(a, "new a")
        files.write_text(b, "new b")
        assert a.read_text() == "old a"  # nothing visible until the block ends
    assert (a.read_text(), b.read_text()) == ("new a", "new b")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt"]


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, RuntimeError])
def test_interrupted_staging_keeps_the_old_files(tmp_path, interrupt):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("old a")
    b.write_text("old b")
    with pytest.raises(interrupt):
        with outputs.staged() as files:
            files.write_text(a, "new a")
            raise interrupt()
    assert (a.read_text(), b.read_text()) == ("old a", "old b")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt"]


def test_ctrl_c_while_saving_a_result_keeps_the_old_file(tmp_path, monkeypatch):
    res = fm.simulate(fm.examples.load("flx_rigid_pendulum"), 0.05, dt=0.01)
    path = res.save(tmp_path / "r.npz")
    before = path.read_bytes()

    def interrupted(file, **arrays):
        with open(file, "wb") as f:
            f.write(b"PK\x03\x04 half a zip")
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "savez", interrupted)
    with pytest.raises(KeyboardInterrupt):
        res.save(path)
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["r.npz"]


def test_model_save_is_atomic(tmp_path, monkeypatch):
    robot = fm.examples.load("flx_rigid_pendulum")
    path = fm.save(robot, tmp_path / "m.yaml")
    before = path.read_text()
    real = outputs.Path.write_text

    def half(self, text, *a, **k):
        real(self, text[: len(text) // 2], *a, **k)
        raise KeyboardInterrupt

    monkeypatch.setattr(outputs.Path, "write_text", half)
    with pytest.raises(KeyboardInterrupt):
        fm.save(robot, path)
    monkeypatch.undo()
    assert path.read_text() == before and [p.name for p in tmp_path.iterdir()] == ["m.yaml"]


def test_diverged_cli_run_exits_1_with_one_warning_and_keeps_its_samples(tmp_path, capsys):
    # a stiff flexible link (second mode about 1.2e4 rad/s) under RK4 at dt = 1 ms blows up
    beam = fm.Beam(length=0.5, mass_per_length=2.0, EI=(2e4, 2e4), modes={"y": 2, "z": 0, "torsion": 0})
    robot = fm.Robot(links=[fm.Link(a=0.5, hub=fm.RigidBody(0.5, [0, 0, 0], [1e-3, 1e-3, 1e-3]), beam=beam)],
                     name="stiff", gravity=[0, -9.81, 0])
    model = fm.save(robot, tmp_path / "stiff.yaml")
    out = tmp_path / "res"
    status = cli.main(["simulate", str(model), "--t-final", "0.5", "--dt", "1e-3", "--q0", "0", "1e-3", "0",
                       "--out", str(out), "--no-plot", "--json", "--method", "rk4"])
    captured = capsys.readouterr()
    assert status == 1
    warning = [line for line in captured.err.splitlines() if line.startswith("flexman: warning:")]
    assert len(warning) == 1 and "the run stopped at t = " in warning[0] and "are kept" in warning[0]
    import json

    summary = json.loads(captured.out)
    assert summary["diverged"] and 0 < summary["t_diverged"] < 0.5 and summary["t_final"] < summary["t_diverged"]
    kept = Result.load(out / "result.npz")
    assert kept.diverged and len(kept.t) == summary["samples"] and np.all(np.isfinite(kept.q))


def test_a_terminated_command_leaves_no_empty_output_folder(tmp_path):
    """Issue 34: SIGTERM during a run left the (new, empty) output folder behind; the command now
    removes the folders it created and never wrote in, exits 128 + 15 and says so in one line. A
    folder that existed before stays."""
    import signal
    import subprocess
    import sys
    import time

    kept = tmp_path / "kept"
    kept.mkdir()
    out = kept / "new" / "run"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src"), "FLEXMAN_BACKEND": "numeric"}
    proc = subprocess.Popen([sys.executable, "-m", "flexman", "simulate", "flx_three_link", "--t-final", "60",
                             "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    for _ in range(600):  # the folder is made (and checked writable) before the run starts
        if out.exists() or proc.poll() is not None:
            break
        time.sleep(0.05)
    assert out.exists()
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert err.strip().splitlines()[-1] == "flexman: terminated by SIGTERM; no partial files left"
    assert kept.is_dir() and not (kept / "new").exists()
