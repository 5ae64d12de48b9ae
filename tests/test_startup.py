"""What a short command pays before its run: the heavy packages a run does not use stay
unimported, and a loaded model's numeric model (built by the load's mass-matrix check) is built
once, not again by the run."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

import flexman as fm

HEAVY = ["scipy", "sympy", "matplotlib", "casadi", "dask", "pinocchio", "pandas", "rich", "tomllib",
         "subprocess", "tempfile", "shutil", "flexman.analysis.modal_convergence", "flexman.symbolic.eom", "flexman.symbolic.emit"]


def test_a_run_imports_no_heavy_package():
    code = ("import sys, json, flexman.cli, flexman; r = flexman.load('flx_three_link'); "
            "flexman.simulate(r, 0.01, progress=False, backend='numeric'); "
            f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    src = os.path.dirname(os.path.dirname(os.path.abspath(fm.__file__)))
    env = dict(os.environ, PYTHONPATH=src + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_a_run_on_the_default_backend_with_a_cached_model_imports_no_heavy_package():
    """What users run: the default backend finds the compiled model in the cache and loads it
    without the code generators, SciPy, SymPy or the process and file modules of a build."""
    fm.simulate(fm.load("flx_three_link"), 0.01, progress=False, backend="compiled")  # in the cache now
    code = ("import sys, json, flexman.cli, flexman; r = flexman.load('flx_three_link'); "
            "res = flexman.simulate(r, 0.01, progress=False); "
            f"print(json.dumps([res.stats['backend'], [m for m in {HEAVY!r} if m in sys.modules]]))")
    src = os.path.dirname(os.path.dirname(os.path.abspath(fm.__file__)))
    env = dict(os.environ, PYTHONPATH=src + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("FLEXMAN_BACKEND", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == ["compiled", []]


def test_the_load_checks_model_is_the_runs(monkeypatch):
    from flexman.dynamics import structure

    calls = []
    real = structure.build
    monkeypatch.setattr(structure, "build", lambda robot, beams=True: calls.append(beams) or real(robot, beams))
    robot = fm.load("flx_three_link")  # checks M at rest: builds the numeric model (or finds it)
    robot.mass_matrix(np.zeros(robot.nq))
    robot.natural_frequencies(np.zeros(robot.nq))
    assert calls.count(True) <= 1
