"""backend="auto" that runs a model interpreted (the build would cost more than the run) builds it
in a detached background process for the next run: the notice says so, the run does not wait,
one build starts however many runs ask, and a later run (a fresh process's view: memory cleared)
finds the compiled model in the cache. Off with FLEXMAN_BACKGROUND_COMPILE=0 (the suite's default)."""
from __future__ import annotations

import shutil

import pytest

import flexman as fm

pytestmark = pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")), reason="no C compiler")


@pytest.fixture
def cold(monkeypatch, tmp_path):
    """An empty cache, backend auto, every build judged not worth it for the run at hand."""
    from flexman.codegen import background, modelcache
    from flexman.simulate import backend

    monkeypatch.setenv("FLEXMAN_CACHE", str(tmp_path))
    monkeypatch.setenv("FLEXMAN_BACKEND", "auto")
    monkeypatch.setattr(backend, "_said", set())
    monkeypatch.setattr(backend, "worth_compiling", lambda robot, work: (False, "the run is shorter than the build"))
    monkeypatch.setattr(background, "_started", {})
    modelcache.clear_memory()
    yield tmp_path
    background.wait(600)
    modelcache.clear_memory()


def test_a_later_run_finds_the_model_built_in_the_background(cold, monkeypatch, capsys):
    from flexman.codegen import background, modelcache

    monkeypatch.setenv("FLEXMAN_BACKGROUND_COMPILE", "1")
    robot = fm.examples.load("dynaman_2r")
    res = fm.simulate(robot, 0.005, progress=False)
    assert res.stats["backend"] == "numeric" and res.stats["loop"] == "python"  # this run did not wait
    err = capsys.readouterr().err
    assert "running the interpreted model: the run is shorter than the build; compiling it in the background" in err
    fm.simulate(robot, 0.005, progress=False)
    assert len(background._started) == 1  # one build, however many runs ask
    assert background.wait(600)
    assert [p.suffix for p in (cold / "background").iterdir()] == [".done"]  # the job, now the record of the build
    assert [e.robot for e in modelcache.entries()] == ["dynaman_2r"]
    modelcache.clear_memory()  # as a new process sees it
    later = fm.simulate(robot, 0.005, progress=False)
    assert later.stats["backend"] == "compiled" and later.stats["loop"] == "compiled"
    assert len(background._started) == 1
    modelcache.clear()  # gone again (as if its cache key had differed): no second build within the hour
    modelcache.clear_memory()
    monkeypatch.setattr(background, "_started", {})
    assert not background.start(robot) and background._started == {}


def test_off_builds_nothing(cold, capsys):
    from flexman.codegen import modelcache

    res = fm.simulate(fm.examples.load("dynaman_2r"), 0.005, progress=False)  # the suite sets it to 0
    assert res.stats["backend"] == "numeric"
    assert "background" not in capsys.readouterr().err
    assert not (cold / "background").exists() and modelcache.entries() == []


def test_bad_setting_is_one_clear_error(cold, monkeypatch):
    monkeypatch.setenv("FLEXMAN_BACKGROUND_COMPILE", "maybe")
    with pytest.raises(ValueError, match="FLEXMAN_BACKGROUND_COMPILE: unknown 'maybe'; use 1"):
        fm.simulate(fm.examples.load("dynaman_2r"), 0.005, progress=False)


def test_exit_with_a_build_running_prints_no_resource_warning(tmp_path):
    """A short run starts a background build and exits at once: the build goes on (and finishes),
    and Python prints no 'subprocess ... is still running' at exit (issue 35)."""
    import os
    import subprocess
    import sys
    import time

    env = dict(os.environ, FLEXMAN_CACHE=str(tmp_path / "cache"), FLEXMAN_BACKGROUND_COMPILE="1")
    env.pop("FLEXMAN_BACKEND", None)
    code = ("import flexman as fm; r = fm.examples.load('flx_three_link'); "
            "print(fm.simulate(r, 0.02, progress=False).stats['backend'])")
    out = subprocess.run([sys.executable, "-X", "dev", "-W", "default", "-c", code], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "numeric", out.stderr
    assert "ResourceWarning" not in out.stderr and "still running" not in out.stderr, out.stderr
    jobs = tmp_path / "cache" / "background"
    for _ in range(600):  # the detached build completes on its own
        if list(jobs.glob("*.done")):
            break
        time.sleep(0.1)
    assert list(jobs.glob("*.done"))
