"""Managing the disk cache of compiled models (issue 16): list, prune by size or age, clear,
leftovers of interrupted builds, entries being built left alone, and ``flexman cache``."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import flexman as fm
from flexman.cli import main
from flexman.cli.cache import parse_size
from flexman.codegen import cbuild, modelcache

pytestmark = pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")), reason="no C compiler")

NAMES = ("flx_flexible_pendulum", "dynaman_2r")


@pytest.fixture
def two(monkeypatch, tmp_path):
    """An empty cache with the two small models built: {name: (robot, model)}; the folder."""
    monkeypatch.setenv("FLEXMAN_CACHE", str(tmp_path / "cache"))
    modelcache.clear_memory()
    built = {}
    for name in NAMES:
        robot = fm.examples.load(name)
        built[name] = robot, modelcache.compiled_model(robot)
    yield built, tmp_path / "cache" / "models"
    modelcache.clear_memory()


def key_of(built, name):
    return modelcache.model_key(built[name][0])[0]


def set_used(folder, key, t):
    os.utime(folder / f"{key}.json", (t, t))


def forward(robot, model):
    rng = np.random.default_rng(3)
    q, qd, tau = rng.standard_normal(robot.nq), rng.standard_normal(robot.nq), rng.standard_normal(robot.n_joints)
    return model.forward_dynamics(q, qd, tau)


def test_entries_list_both_models(two):
    built, folder = two
    listed = {e.robot: e for e in modelcache.entries()}
    assert set(listed) == set(NAMES)
    for name, (robot, _) in built.items():
        e = listed[name]
        assert e.key == key_of(built, name) and e.nq == robot.nq and e.flexman == fm.__version__
        assert e.size == (folder / f"{e.key}.so").stat().st_size + (folder / f"{e.key}.json").stat().st_size > 0


def test_loading_from_disk_marks_the_entry_used(two):
    built, folder = two
    key = key_of(built, "dynaman_2r")
    set_used(folder, key, 1.0e9)
    modelcache.clear_memory()
    modelcache.compiled_model(built["dynaman_2r"][0])
    assert abs((folder / f"{key}.json").stat().st_mtime - time.time()) < 3600


def test_prune_by_size_keeps_the_most_recently_used(two):
    built, folder = two
    now = time.time()
    old, new = key_of(built, "flx_flexible_pendulum"), key_of(built, "dynaman_2r")
    set_used(folder, old, now - 1000)
    set_used(folder, new, now - 10)
    sizes = {e.key: e.size for e in modelcache.entries()}
    dry = modelcache.prune(max_bytes=sizes[new], dry_run=True)
    assert [e.key for e in dry.removed] == [old] and len(modelcache.entries()) == 2
    res = modelcache.prune(max_bytes=sizes[new])
    assert [e.key for e in res.removed] == [old] and res.freed == sizes[old] and not res.skipped
    assert [e.key for e in modelcache.entries()] == [new]
    assert not (folder / f"{old}.so").exists() and not (folder / f"{old}.json").exists()
    assert modelcache.prune(max_bytes=sizes[new]).removed == []


def test_prune_by_age(two):
    built, folder = two
    now = time.time()
    old, new = key_of(built, "flx_flexible_pendulum"), key_of(built, "dynaman_2r")
    set_used(folder, old, now - 3 * 86400)
    set_used(folder, new, now - 3600)
    res = modelcache.prune(older_than_s=2 * 86400)
    assert [e.key for e in res.removed] == [old]
    assert [e.key for e in modelcache.entries()] == [new]
    with pytest.raises(ValueError, match="older_than_s"):
        modelcache.prune(older_than_s=-1)


def test_clear_then_rebuild_gives_the_same_numbers(two):
    built, folder = two
    robot, model = built["flx_flexible_pendulum"]
    before = forward(robot, model)
    res = modelcache.clear()
    assert len(res.removed) == 2 and modelcache.entries() == []
    assert not list(folder.glob("*.so")) and not list(folder.glob("*.json")) and not list(folder.glob("*.lock"))
    assert np.array_equal(forward(robot, model), before)  # loaded here: still mapped
    again = modelcache.compiled_model(robot)  # not taken from memory: built anew
    assert len(modelcache.entries()) == 1
    assert np.array_equal(forward(robot, again), before)


def test_entry_being_built_is_skipped(two):
    built, folder = two
    key = key_of(built, "dynaman_2r")
    with cbuild.locked(folder / f"{key}.so"):  # as a builder holds it
        res = modelcache.clear()
        assert [e.key for e in res.skipped] == [key] and len(res.removed) == 1
        assert [e.key for e in modelcache.entries()] == [key]
    assert [e.key for e in modelcache.clear().removed] == [key]


def test_waiter_takes_the_new_lock_after_the_holder_deletes_the_file(tmp_path):
    """A process waiting on an entry's lock while the holder removes the entry (and its lock
    file) must not end up holding a lock nobody else can see."""
    path = tmp_path / "entry.so"
    got = threading.Event()
    release = threading.Event()

    def waiter():
        with cbuild.locked(path):
            got.set()
            release.wait(10)

    with cbuild.locked(path):
        thread = threading.Thread(target=waiter)
        thread.start()
        time.sleep(0.2)  # let it block on the lock (the test passes either way)
        cbuild.lock_path(path).unlink()
    assert got.wait(10)
    with pytest.raises(BlockingIOError):  # the waiter holds the lock of the file that exists now
        with cbuild.locked(path, wait=False):
            pass
    release.set()
    thread.join()


def test_leftovers_of_interrupted_builds(two):
    built, folder = two
    old = time.time() - 2 * modelcache.STRAY_AGE_S
    tmp = folder / "tmpabc123"
    tmp.mkdir()
    (tmp / "model.c").write_text("int x;")
    half_so, half_json, fresh = folder / ("a" * 32 + ".so"), folder / ("b" * 32 + ".json"), folder / ("c" * 32 + ".so")
    for p in (half_so, half_json, fresh):
        p.write_text("x")
    other = folder / "notes.txt"  # not ours: never touched
    other.write_text("keep")
    for p in (tmp / "model.c", tmp, half_so, half_json, other):
        os.utime(p, (old, old))
    res = modelcache.prune()
    assert res.removed == [] and len(modelcache.entries()) == 2
    assert not tmp.exists() and not half_so.exists() and not half_json.exists()
    assert fresh.exists() and other.exists()
    assert set(res.strays) == {tmp, half_so, half_json}


@pytest.mark.parametrize("text, value", [("500M", 500 * 2 ** 20), ("2G", 2 * 2 ** 30), ("10000K", 10000 * 1024),
                                         ("123456", 123456), ("1.5GB", int(1.5 * 2 ** 30)), ("64 kib", 65536)])
def test_parse_size(text, value):
    assert parse_size(text) == value


def test_cli_list_json_clear(two, capsys):
    built, folder = two
    assert main(["cache"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in NAMES) and "2 entries" in out and str(folder) in out
    assert main(["cache", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["folder"] == str(folder) and {e["robot"] for e in data["entries"]} == set(NAMES)
    assert data["total_bytes"] == sum(e["size"] for e in data["entries"]) > 0
    assert main(["cache", "--clear", "--dry-run", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["dry_run"] and len(data["removed"]) == 2 and len(modelcache.entries()) == 2
    assert main(["cache", "--max-size", "1G"]) == 0
    assert "removed 0 entries" in capsys.readouterr().out and len(modelcache.entries()) == 2
    assert main(["cache", "--clear", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["removed"]) == 2 and data["total_bytes"] == 0 and modelcache.entries() == []
    assert main(["cache"]) == 0
    assert "0 entries" in capsys.readouterr().out


@pytest.mark.parametrize("argv, words", [(["--max-size", "lots"], ["--max-size", "500M"]),
                                         (["--older-than", "-1"], ["--older-than", ">= 0"]),
                                         (["--older-than", "soon"], ["--older-than", "days"]),
                                         (["--clear", "--max-size", "1G"], ["--clear", "alone"]),
                                         (["--dry-run"], ["--dry-run", "--clear"])])
def test_cli_bad_options(two, capsys, argv, words):
    assert main(["cache"] + argv) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.startswith("flexman: error:") and "\n" not in err and "Traceback" not in err
    assert all(w in err for w in words), err
    assert len(modelcache.entries()) == 2


RACE = """
import json, sys
import numpy as np
import flexman as fm
from flexman.codegen import modelcache

real = modelcache._read_entry
calls = []

def racing(key):  # another process clears the cache right after this one verified the entry
    found = real(key)
    if not calls:
        assert modelcache.clear().removed
    calls.append(found is not None)
    return found

modelcache._read_entry = racing
robot = fm.examples.load("dynaman_2r")
model = modelcache.compiled_model(robot)
rng = np.random.default_rng(3)
q, qd, tau = rng.standard_normal(robot.nq), rng.standard_normal(robot.nq), rng.standard_normal(robot.n_joints)
print(json.dumps({"calls": calls, "qdd": model.forward_dynamics(q, qd, tau).tolist()}))
"""


def test_entry_removed_between_check_and_load_is_rebuilt(two):
    """A fresh process verifies an entry, which is then removed before it loads it: the load
    fails and the model is built again under the lock (same numbers)."""
    built, folder = two
    robot, model = built["dynaman_2r"]
    env = {**os.environ, "FLEXMAN_BACKEND": "numeric"}  # the robot's own methods stay off the cache: one lookup
    res = subprocess.run([sys.executable, "-c", RACE], capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["calls"] == [True, False, True]  # verified; gone under the lock; built
    assert np.array_equal(np.array(data["qdd"]), forward(robot, model))
    assert [e.robot for e in modelcache.entries()] == ["dynaman_2r"]
