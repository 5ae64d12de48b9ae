"""Generated code: compiled C and NumPy equal the numeric API (rigid and flexible arms, batched),
the content-hash cache, exported sources in every language, the stand-alone RK4 simulator."""
import shutil
import subprocess

import numpy as np
import pytest

import flexman as fm
from flexman.codegen import cbuild, program, write_input

from test_symbolic import flexible_arm, planar_2r, random_rigid, rel, state

HAVE_CC = shutil.which("cc") or shutil.which("gcc")
needs_cc = pytest.mark.skipif(not HAVE_CC, reason="no C compiler")


@pytest.fixture(autouse=True)
def cache(tmp_path_factory, monkeypatch):
    path = tmp_path_factory.getbasetemp() / "flexman_cache"
    monkeypatch.setenv("FLEXMAN_CACHE", str(path))
    return path


def check(robot, fast, rng, batch=(2, 3), tol=1e-10):
    q, qd, qdd, tau = state(rng, robot, batch)
    M = fast.mass_matrix(q)
    assert M.shape == batch + (robot.nq, robot.nq)
    assert rel(M, robot.mass_matrix(q)) < tol
    assert rel(fast.bias_forces(q, qd), robot.bias_forces(q, qd)) < tol
    assert rel(fast.inverse_dynamics(q, qd, qdd), robot.inverse_dynamics(q, qd, qdd)) < tol
    assert rel(fast.forward_dynamics(q, qd, tau), robot.forward_dynamics(q, qd, tau)) < tol
    # single state and broadcasting of a shared q
    assert rel(fast.mass_matrix(q[0, 0]), robot.mass_matrix(q[0, 0])) < tol
    assert rel(fast.bias_forces(q[0, 0], qd), robot.bias_forces(q[0, 0], qd)) < tol


@needs_cc
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("parameters", ["numeric", "symbolic"])
def test_c_rigid(seed, parameters):
    rng = np.random.default_rng(seed)
    robot = random_rigid(rng, 4, dh=["standard", "modified"][seed])
    eom = fm.derive(robot, formulation="newton_euler", parameters=parameters)
    check(robot, eom.compile("c"), rng)
    check(robot, eom.compile("numpy"), rng)


@needs_cc
@pytest.mark.parametrize("prismatic", [False, True])
def test_c_flexible(prismatic):
    robot = flexible_arm(prismatic)
    eom = fm.derive(robot, formulation="book", parameters="symbolic" if prismatic else "numeric")
    rng = np.random.default_rng(2)
    check(robot, eom.compile("c"), rng)
    check(robot, eom.compile("numpy"), rng)


@needs_cc
def test_symbolic_parameters_can_change(cache):
    robot, _ = planar_2r()
    fast = fm.derive(robot, formulation="book", parameters="symbolic").compile("c")
    heavier, _ = planar_2r(m2=1.6, l2=0.9)
    values = fm.derive(heavier, formulation="book", parameters="symbolic").param_values
    assert list(values) == fast.param_names  # same structure, new numbers: no new code
    fast.params[:] = list(values.values())
    q = np.array([0.3, -0.4])
    assert rel(fast.mass_matrix(q), heavier.mass_matrix(q)) < 1e-12


@needs_cc
def test_cache_by_content_hash(cache):
    robot, _ = planar_2r()
    eom = fm.derive(robot)
    eom.compile("c")
    libs = sorted(p.name for p in cache.glob("fm_*.so"))
    assert libs
    stamp = {p: p.stat().st_mtime_ns for p in cache.glob("fm_*.so")}
    fm.derive(robot).compile("c")  # same source: loaded from the cache, not rebuilt
    assert {p: p.stat().st_mtime_ns for p in cache.glob("fm_*.so")} == stamp
    fm.derive(planar_2r(m1=2.0)[0]).compile("c")
    assert len(list(cache.glob("fm_*.so"))) == len(libs) + 1


def test_cache_dir_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("FLEXMAN_CACHE", str(tmp_path / "a"))
    assert cbuild.cache_dir() == tmp_path / "a"
    monkeypatch.delenv("FLEXMAN_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert cbuild.cache_dir() == tmp_path / "x" / "flexman"


def test_export_python_runs(tmp_path):
    robot = random_rigid(np.random.default_rng(3), 3)
    eom = fm.derive(robot)
    path = eom.export("python", tmp_path / "arm.py")
    env = {}
    exec(compile(path.read_text(), str(path), "exec"), env)  # the file we just generated
    q, qd, qdd, _ = state(np.random.default_rng(4), robot)
    assert rel(env["arm_mass_matrix"](q)[0], robot.mass_matrix(q)) < 1e-10
    assert rel(env["arm_inverse_dynamics"](q, qd, qdd)[0], robot.inverse_dynamics(q, qd, qdd)) < 1e-10


@pytest.mark.parametrize("lang,ext", [("c", "c"), ("fortran", "f90"), ("matlab", "m"), ("julia", "jl")])
def test_export_languages(tmp_path, lang, ext):
    robot = flexible_arm()
    eom = fm.derive(robot, parameters="symbolic")
    path = eom.export(lang, tmp_path / f"flexarm.{ext}")
    text = path.read_text()
    assert "mass matrix" in text and "q1" in text and "Z1" in text
    if lang == "c" and HAVE_CC:
        subprocess.run([HAVE_CC, "-c", "-Wall", "-Werror", "-o", str(tmp_path / "a.o"), str(path)], check=True)
    if lang == "fortran":
        if not shutil.which("gfortran"):
            pytest.skip("gfortran not installed: Fortran export written but not parsed")
        subprocess.run(["gfortran", "-fsyntax-only", str(path)], check=True, cwd=tmp_path)


@needs_cc
def test_standalone_simulator(tmp_path):
    robot, _ = planar_2r()
    eom = fm.derive(robot, formulation="newton_euler")
    src = program(eom, tmp_path / "sim.c")
    exe = cbuild.build_executable(src, tmp_path / "sim")
    q0, qd0, tau, dt, steps = np.array([0.4, -0.3]), np.array([0.1, 0.2]), np.array([1.0, -0.5]), 1e-3, 50
    inp = write_input(tmp_path / "in.txt", q0, qd0, tau, dt=dt, steps=steps, every=10)
    out = subprocess.run([str(exe), str(inp)], capture_output=True, text=True, check=True).stdout
    rows = np.array([[float(v) for v in line.split()] for line in out.strip().splitlines()])
    assert rows.shape == (steps // 10 + 1, 1 + 2 * robot.nq)

    def f(x):
        return np.concatenate([x[2:], robot.forward_dynamics(x[:2], x[2:], tau)])

    from rk4_reference import rk4_path

    ref = rk4_path(f, np.concatenate([q0, qd0]), dt, steps)[::10]
    assert np.allclose(rows[:, 0], np.arange(0, steps + 1, 10) * dt)
    assert np.abs(rows[:, 1:] - ref).max() < 1e-12


def test_generated_source_is_readable():
    robot, _ = planar_2r()
    fast = fm.derive(robot).compile("numpy")
    assert "q1 = q[..., 0]" in fast.source and "Z1 = " in fast.source
