"""Compiled by default: the on-disk model cache (parameters as inputs, verification, concurrent
builders) and the simulation backend choice (auto / compiled / numeric, the fall-back notice)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

import flexman as fm
from flexman.codegen import cbuild, modelcache
from flexman.model.serialize import robot_from_dict, robot_to_dict

pytestmark = pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")), reason="no C compiler")


@pytest.fixture
def fresh_cache(monkeypatch, tmp_path):
    """An empty cache folder, and no model remembered by this process."""
    monkeypatch.setenv("FLEXMAN_CACHE", str(tmp_path / "cache"))
    modelcache.clear_memory()
    yield tmp_path / "cache" / "models"
    modelcache.clear_memory()


def variant(robot, changes):
    """A fresh robot from ``robot``'s model data with link fields changed: {(i, key): value},
    keys "a", "mass", "beam.length", ..."""
    data = robot_to_dict(robot)
    for (i, key), value in changes.items():
        node = data["links"][i]
        *path, last = key.split(".")
        for k in path:
            node = node[k]
        node[last] = value
    return robot_from_dict(data)


def states(robot, n, seed=0):
    rng = np.random.default_rng(seed)
    return (0.5 * rng.standard_normal((n, robot.nq)), rng.standard_normal((n, robot.nq)),
            rng.standard_normal((n, robot.n_joints)))


def assert_same_dynamics(model, robot, rtol=1e-10):
    """Compiled == interpreted (relative to each output's largest magnitude), batched and single."""
    q, qd, tau = states(robot, 6)
    qdd = states(robot, 6, seed=1)[1]
    for name, args in (("mass_matrix", (q,)), ("bias_forces", (q, qd)), ("forward_dynamics", (q, qd, tau)),
                       ("inverse_dynamics", (q, qd, qdd))):
        want = getattr(robot, name)(*args)
        got = getattr(model, name)(*args)
        assert np.abs(got - want).max() <= rtol * np.abs(want).max(), name
        one = getattr(model, name)(*(a[0] for a in args))
        assert np.abs(one - want[0]).max() <= rtol * np.abs(want).max(), name


def test_parameters_are_inputs_one_library_per_structure(fresh_cache):
    """Changing lengths, masses and stiffness changes the parameter vector only: the same
    library serves both robots, and each equals its own interpreted model."""
    robot = fm.examples.load("flx_three_link")
    other = variant(robot, {(1, "a"): 3.0, (1, "beam.length"): 3.0, (2, "beam.EI"): [1.0e4, 2.0e4],
                              (2, "beam.mass_per_length"): 1.5, (0, "mass"): 5.0})
    m1 = modelcache.compiled_model(robot)
    m2 = modelcache.compiled_model(other)
    assert len(list(fresh_cache.glob("*.so"))) == 1
    assert m1.param_names == m2.param_names and not np.allclose(m1.params, m2.params)
    assert_same_dynamics(m1, robot)
    assert_same_dynamics(m2, other)
    assert m2.robot is other


def test_structure_change_is_another_model(fresh_cache):
    """A parameter that becomes zero (folded away) or a changed DH angle is another structure."""
    robot = fm.examples.load("flx_flexible_pendulum")
    modelcache.compiled_model(robot)
    key = modelcache.model_key(robot)[0]
    assert modelcache.model_key(variant(robot, {(0, "alpha"): 0.3}))[0] != key
    assert modelcache.model_key(variant(robot, {(0, "beam.length"): 0.7}))[0] == key
    robot.gravity = np.zeros(3)
    assert modelcache.model_key(robot)[0] != key


@pytest.mark.slow
def test_sliding_beam_parameters(fresh_cache):
    """A prismatic flexible link (sliding beam, finite elements): the parameter vector carries
    its properties too. With clamped-mass shapes (which follow the loads) every value is structure."""
    clamped = fm.examples.load("theodore_rrp")
    assert modelcache.model_key(variant(clamped, {(2, "beam.EI"): [1.0, 1.0]}))[0] != modelcache.model_key(clamped)[0]
    robot = fm.examples.load("theodore_rrp_fem")
    i = next(k for k, lk in enumerate(robot.links) if lk.beam is not None and lk.joint == "prismatic")
    other = variant(robot, {(i, "beam.mass_per_length"): 0.8 * robot.links[i].beam.mass_per_length,
                              (i, "beam.EI"): [2.0 * e for e in robot.links[i].beam.EI]})
    assert modelcache.model_key(other)[0] == modelcache.model_key(robot)[0]
    assert_same_dynamics(modelcache.compiled_model(other), other, rtol=1e-9)


def test_corrupt_entry_is_rebuilt(fresh_cache):
    robot = fm.examples.load("flx_flexible_pendulum")
    modelcache.compiled_model(robot)
    lib, = fresh_cache.glob("*.so")
    broken = lib.with_name("broken")
    broken.write_bytes(lib.read_bytes()[:1000])  # a truncated copy (the loaded file stays mapped)
    broken.replace(lib)
    modelcache.clear_memory()
    assert_same_dynamics(modelcache.compiled_model(robot), robot)
    manifest = json.loads(lib.with_suffix(".json").read_text())
    assert manifest["sha256"] == cbuild.file_digest(lib) and len(list(fresh_cache.glob("*.so"))) == 1
    lib.with_suffix(".json").write_text("{not json")  # a broken manifest: rebuilt as well
    modelcache.clear_memory()
    assert_same_dynamics(modelcache.compiled_model(robot), robot)


BUILD = """
import sys, flexman as fm
from flexman.codegen import cbuild, modelcache
lines = []
m = modelcache.compiled_model(fm.examples.load("flx_flexible_pendulum"), progress=lines.append)
print(len(lines), m.forward_dynamics([0.1] * m.nq, [0.0] * m.nq, [1.0]).tolist())
"""


def test_concurrent_processes_build_once(fresh_cache, monkeypatch):
    """Two processes asking for the same model at once: one compiles, the other waits for it."""
    procs = [subprocess.Popen([sys.executable, "-c", BUILD], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    builds = sorted(int(o[0].split()[0]) for o in outs)
    assert builds == [0, 1]
    assert len({o[0].split(" ", 1)[1] for o in outs}) == 1  # the same numbers
    assert len(list(fresh_cache.glob("*.so"))) == 1


def test_simulate_compiled_equals_numeric(compiled_backend):
    robot = fm.examples.load("flx_three_link")
    kw = dict(controller=fm.control.from_spec(robot, robot.controller), dt=2e-3)
    fast = fm.simulate(robot, 0.3, **kw)
    slow = fm.simulate(robot, 0.3, backend="numeric", **kw)
    assert fast.stats["backend"] == "compiled" and slow.stats["backend"] == "numeric"
    assert np.abs(fast.q - slow.q).max() <= 1e-10 * np.abs(slow.q).max()


def test_fallback_notice_and_compiled_error(compiled_backend, monkeypatch, capsys):
    from flexman.simulate import backend

    robot = fm.examples.load("flx_flexible_pendulum")
    monkeypatch.setenv("CC", "/nonexistent/cc")
    monkeypatch.setattr(backend, "_said", set())
    res = fm.simulate(robot, 0.01)
    assert res.stats["backend"] == "numeric"
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "using the interpreted model" in err[0] and "CC=" in err[0]
    with pytest.raises(ValueError, match="backend='compiled': no C compiler"):
        fm.simulate(robot, 0.01, backend="compiled")
    monkeypatch.delenv("CC")
    robot.links[0].coulomb = 0.1
    with pytest.raises(ValueError, match=r"links\[0\].coulomb"):
        fm.simulate(robot, 0.01, backend="compiled")
    with pytest.raises(ValueError, match="backend: unknown 'fast'"):
        fm.simulate(robot, 0.01, backend="fast")


def test_cli_backend(compiled_backend, capsys):
    from flexman.cli import main

    assert main(["simulate", "flx_flexible_pendulum", "--t-final", "0.05", "--json", "--backend", "compiled"]) == 0
    assert json.loads(capsys.readouterr().out)["backend"] == "compiled"
    assert main(["simulate", "flx_flexible_pendulum", "--t-final", "0.05", "--json", "--backend", "numeric"]) == 0
    assert json.loads(capsys.readouterr().out)["backend"] == "numeric"
    assert main(["simulate", "flx_flexible_pendulum", "--backend", "fast"]) == 2


def test_build_shared_verifies_its_entries(fresh_cache):
    """cbuild's source-keyed cache: a damaged library is rebuilt, not loaded."""
    source = "double fm_twice(double x) { return 2.0 * x; }\n"
    lib = cbuild.build_shared(source)
    assert cbuild.verified(lib)
    broken = lib.with_name("broken")
    broken.write_bytes(b"\x7fELF garbage")
    broken.replace(lib)
    assert not cbuild.verified(lib)
    again = cbuild.build_shared(source)
    assert again == lib and cbuild.verified(lib)
    f = cbuild.load(lib).fm_twice
    import ctypes

    f.restype, f.argtypes = ctypes.c_double, [ctypes.c_double]
    assert f(1.5) == 3.0


def test_split_code_equals_the_interpreted_model(fresh_cache, monkeypatch):
    """Large programs are emitted as several part functions passing values through a scratch
    array, and a large forward dynamics calls M and b and solves M qdd = S tau - b by LDL^T in a
    loop; forced on a small arm (parts of 200 instructions), the code equals the robot."""
    from flexman.codegen import c_source
    from flexman.symbolic import emit

    monkeypatch.setattr(emit, "SPLIT_ABOVE", 300)
    monkeypatch.setattr(emit, "SPLIT_PART", 200)
    robot = fm.examples.load("flx_three_link")
    eom = fm.derive(robot)
    source = c_source(eom)
    assert "fm_forward_dynamics_part5(" in source and "malloc(" in source
    assert_same_dynamics(eom.compile("c"), robot)
    monkeypatch.setattr(emit, "SOLVE_ABOVE", 300)
    source = c_source(eom)
    assert "fm_ldl_solve(7, M, qdd)" in source and "fm_forward_dynamics_part" not in source
    assert_same_dynamics(eom.compile("c"), robot)
    units = []
    c_source(eom, units=units)  # the parts as translation units of their own ...
    assert len(units) >= 4 and all(u.startswith("#include <math.h>") for u in units)
    model = modelcache.compiled_model(robot)  # ... compiled in parallel by the model cache
    assert_same_dynamics(model, robot)


def test_extension_failure_falls_back_to_ctypes(fresh_cache, monkeypatch):
    """When the CPython extension does not compile, the plain library (ctypes) is built instead."""
    from flexman.codegen import pyext

    monkeypatch.setattr(pyext, "source", lambda *args, **kw: "#error the extension cannot be built here\n")
    robot = fm.examples.load("flx_flexible_pendulum")
    model = modelcache.compiled_model(robot)
    assert model.ext is None
    assert_same_dynamics(model, robot)


# ----- native code (-march=native) and the processor in the cache key ----------------------------
def test_native_flags_and_cpu_in_the_key(fresh_cache, monkeypatch):
    """Models of this machine's cache are compiled with -march=native and keyed by the processor;
    FLEXMAN_NATIVE=0 gives the portable flags (and the key of a portable build)."""
    monkeypatch.delenv("FLEXMAN_NATIVE", raising=False)
    robot = fm.examples.load("flx_flexible_pendulum")
    fingerprint = cbuild.cpu_fingerprint()
    if fingerprint is None:
        pytest.skip("no /proc/cpuinfo: portable flags only")
    import platform

    assert fingerprint.startswith(platform.machine()) and fingerprint == cbuild.cpu_fingerprint()
    cmd, _, tag = cbuild.compile_command()
    assert cbuild.NATIVE in cmd and fingerprint in tag
    native_key = modelcache.model_key(robot)[0]
    monkeypatch.setattr(cbuild, "cpu_fingerprint", lambda: "x86_64-0123456789abcdef")  # another processor type
    assert modelcache.model_key(robot)[0] != native_key
    monkeypatch.undo()
    monkeypatch.setenv("FLEXMAN_CACHE", str(fresh_cache.parent))
    monkeypatch.setenv("FLEXMAN_NATIVE", "0")
    cmd, _, tag = cbuild.compile_command()
    assert cbuild.NATIVE not in cmd and "cpu" not in tag and cmd[1:] == cbuild.CFLAGS
    assert modelcache.model_key(robot)[0] != native_key
    assert cbuild.compile_command(["-O1", "-shared", "-fPIC"])[0][1:] == ["-O1", "-shared", "-fPIC"]  # given flags as given


def test_native_entry_is_not_loaded_on_another_cpu(fresh_cache, monkeypatch):
    """A native entry records its processor; a process on another processor type (same cache
    folder: a network home) neither finds it under its key nor accepts its manifest: it builds its own."""
    monkeypatch.delenv("FLEXMAN_NATIVE", raising=False)
    if cbuild.cpu_fingerprint() is None:
        pytest.skip("no /proc/cpuinfo: portable flags only")
    robot = fm.examples.load("flx_flexible_pendulum")
    model = modelcache.compiled_model(robot)
    key = modelcache.model_key(robot)[0]
    manifest = json.loads((fresh_cache / f"{key}.json").read_text())
    assert manifest["cpu"] == cbuild.cpu_fingerprint() and cbuild.NATIVE in manifest["compiler"]
    assert_same_dynamics(model, robot)
    real = cbuild.cpu_fingerprint()
    monkeypatch.setattr(cbuild, "cpu_fingerprint", lambda: real[:-4] + "beef")
    assert modelcache._read_entry(key) is None  # the manifest's processor is not this one
    modelcache.clear_memory()
    assert modelcache.existing_model(robot) is None  # nothing built for this processor
    other = modelcache.compiled_model(robot)
    assert len(list(fresh_cache.glob("*.so"))) == 2  # its own entry beside the first
    assert_same_dynamics(other, robot)


def test_compiler_refusing_native_gets_portable_flags(fresh_cache, monkeypatch, tmp_path):
    """A compiler that refuses -march=native (some clang / ARM setups) builds with the portable
    flags (asked once per compiler); the entry stays keyed by the processor."""
    cc = shutil.which("cc") or shutil.which("gcc")
    wrapper = tmp_path / "no-native-cc"
    wrapper.write_text(f'#!/bin/sh\nfor a in "$@"; do [ "$a" = "-march=native" ] && {{ echo "unsupported" >&2; exit 1; }}; done\n'
                       f'exec {cc} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("CC", str(wrapper))
    monkeypatch.delenv("FLEXMAN_NATIVE", raising=False)
    assert not cbuild._accepts_native(str(wrapper))
    assert cbuild._accepts_native(cc)
    assert cbuild.buildable([str(wrapper), "-O2", cbuild.NATIVE]) == [str(wrapper), "-O2"]
    lib = cbuild.build_shared("double fm_thrice(double x) { return 3.0 * x; }\n")
    import ctypes

    f = cbuild.load(lib).fm_thrice
    f.restype, f.argtypes = ctypes.c_double, [ctypes.c_double]
    assert f(1.5) == 4.5
    robot = fm.examples.load("flx_flexible_pendulum")
    model = modelcache.compiled_model(robot)
    manifest, = [json.loads(p.read_text()) for p in fresh_cache.glob("*.json")]
    assert cbuild.NATIVE not in manifest["compiler"]
    assert_same_dynamics(model, robot)


def test_exported_artefacts_stay_portable():
    """FMUs (built for other machines) never get -march=native: their flags are the portable ones."""
    from flexman.codegen import fmu

    assert cbuild.NATIVE not in cbuild.CFLAGS and cbuild.NATIVE not in fmu.FLAGS
    assert fmu.FLAGS[:len(cbuild.CFLAGS)] == cbuild.CFLAGS
