"""A build killed with SIGTERM or SIGKILL (issue 34): the compiler dies with flexman, and no work
folder survives that the next run or `flexman cache --clear` does not remove. Real processes:
`flexman export --fmu` and `fm.simulate(backend="compiled")` in a subprocess, with a stand-in
compiler (a shell whose child sleeps, as gcc's cc1 runs under its driver) that records its pids."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flexman import cli
from flexman.codegen import workdir

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")

FAKE_CC = """#!/bin/sh
case "$*" in *probe.c*) exit 0;; esac
echo $$ >> "$FAKE_PIDS"
sleep 60 &
echo $! >> "$FAKE_PIDS"
wait
"""
COMMANDS = {
    "fmu": [sys.executable, "-m", "flexman", "export", "dynaman_2r", "--fmu", "{out}/arm.fmu"],
    "compiled": [sys.executable, "-c", "import flexman as fm; fm.simulate(fm.examples.load('dynaman_2r'), 0.01, "
                                       "backend='compiled')"],
}


def running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def work_folders(cache: Path) -> list:
    return [p for folder in (cache, cache / "models") if folder.is_dir()
            for p in folder.iterdir() if p.name.startswith(workdir.PREFIX)]


def start_build(tmp_path, kind):
    """The build of ``kind`` started and waited for until the stand-in compiler runs: (process,
    the compiler's pids, the cache folder, the temporary folder it was given)."""
    cc = tmp_path / "fake-cc"
    cc.write_text(FAKE_CC)
    cc.chmod(0o755)
    pids, cache, tmp = tmp_path / "pids", tmp_path / "cache", tmp_path / "tmp"
    tmp.mkdir()
    root = Path(__file__).resolve().parents[1] / "src"
    env = {**os.environ, "CC": str(cc), "FAKE_PIDS": str(pids), "FLEXMAN_CACHE": str(cache), "TMPDIR": str(tmp),
           "FLEXMAN_BACKGROUND_COMPILE": "0", "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    cmd = [c.format(out=tmp_path) for c in COMMANDS[kind]]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (pids.exists() and len(pids.read_text().split()) >= 2):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the stand-in compiler never started"
        time.sleep(0.05)
    return proc, [int(p) for p in pids.read_text().split()], cache, tmp


def wait_dead(pids, seconds=10.0):
    deadline = time.monotonic() + seconds
    while any(running(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [p for p in pids if running(p)]


@pytest.mark.parametrize("kind", list(COMMANDS))
def test_sigterm_kills_the_compiler_and_removes_the_work_folder(tmp_path, kind):
    proc, pids, cache, tmp = start_build(tmp_path, kind)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode in (128 + signal.SIGTERM, -signal.SIGTERM), err
    if kind == "fmu":
        assert err.strip().splitlines()[-1] == "flexman: terminated by SIGTERM; no partial files left", err
    assert wait_dead(pids) == []
    assert work_folders(cache) == [] and list(tmp.iterdir()) == []
    assert not (tmp_path / "arm.fmu").exists()


@pytest.mark.parametrize("kind", list(COMMANDS))
def test_sigkill_takes_the_compiler_along_and_cache_clear_removes_the_leftover(tmp_path, kind, monkeypatch, capsys):
    proc, pids, cache, tmp = start_build(tmp_path, kind)
    proc.kill()
    proc.communicate(timeout=30)
    assert wait_dead(pids) == []  # the watcher heard of its parent's death and killed the compiler's group
    left = work_folders(cache)
    assert len(left) == 1 and workdir.owner(left[0]) == proc.pid and workdir.stale(left[0])
    assert list(tmp.iterdir()) == []  # nothing in the system's temporary folder
    monkeypatch.setenv("FLEXMAN_CACHE", str(cache))
    assert cli.main(["cache", "--clear"]) == 0
    assert "removed 1 leftovers of interrupted builds" in capsys.readouterr().out
    assert work_folders(cache) == []


def test_a_live_owners_folder_is_kept_and_a_dead_owners_swept(tmp_path):
    """sweep removes work folders of processes that are gone, keeps those of running ones."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    gone = tmp_path / f"{workdir.PREFIX}{int(dead.stdout)}-abc"
    mine = tmp_path / f"{workdir.PREFIX}{os.getpid()}-abc"
    other = tmp_path / "tmp-not-ours"
    for p in (gone, mine, other):
        p.mkdir()
    assert workdir.sweep(tmp_path) == [gone]
    assert mine.exists() and other.exists()
