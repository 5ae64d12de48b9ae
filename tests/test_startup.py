"""What a short command pays before its run: the heavy packages a run does not use stay
unimported, and a loaded model's numeric model (built by the load's mass-matrix check) is built
once, not again by the run."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import flexman as fm

HEAVY = ["scipy", "sympy", "matplotlib", "casadi", "dask", "pinocchio", "pandas", "rich", "tomllib",
         "subprocess", "tempfile", "shutil", "flexman.analysis.convergence", "flexman.symbolic.eom", "flexman.codegen.emit"]


COMPILING = {"subprocess", "tempfile", "shutil"}  # what the default backend needs to find, load or build C


@pytest.mark.parametrize("backend", ["numeric", "default-cold", "default-warm"])
def test_a_run_imports_no_heavy_package(backend, tmp_path, monkeypatch):
    """On the numeric backend nothing heavy is imported; on the default one (a cold cache: the run
    is weighed and runs interpreted; a warm one: the compiled model is loaded) only the modules
    that find, load or build compiled code."""
    env = dict(os.environ)
    env.pop("FLEXMAN_BACKEND", None)
    arg = ", backend='numeric'" if backend == "numeric" else ""
    if backend != "numeric":
        env["FLEXMAN_CACHE"] = str(tmp_path)
    if backend == "default-warm":
        from flexman.codegen.modelcache import compiled_model

        with monkeypatch.context() as m:
            m.setenv("FLEXMAN_CACHE", str(tmp_path))
            compiled_model(fm.load("flx_three_link"))
    code = ("import sys, json, flexman.cli, flexman; r = flexman.load('flx_three_link'); "
            f"res = flexman.simulate(r, 0.01, progress=False{arg}); "
            f"print(json.dumps([res.stats['backend'], [m for m in {HEAVY!r} if m in sys.modules]]))")
    src = os.path.dirname(os.path.dirname(os.path.abspath(fm.__file__)))
    env["PYTHONPATH"] = src + os.pathsep + os.environ.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    used, imported = json.loads(out.stdout.strip().splitlines()[-1])
    assert used == ("compiled" if backend == "default-warm" else "numeric"), out.stderr
    assert set(imported) <= (set() if backend == "numeric" else COMPILING), imported


def test_the_load_checks_model_is_the_runs(monkeypatch):
    from flexman.dynamics import structure

    calls = []
    real = structure.build
    monkeypatch.setattr(structure, "build", lambda robot, beams=True: calls.append(beams) or real(robot, beams))
    robot = fm.load("flx_three_link")  # checks M at rest: builds the numeric model (or finds it)
    robot.mass_matrix(np.zeros(robot.nq))
    robot.natural_frequencies(np.zeros(robot.nq))
    assert calls.count(True) <= 1
