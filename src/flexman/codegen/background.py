"""Compile a model in the background for the next run: when ``backend="auto"`` runs a model
interpreted because building it would cost more than this run, a detached process builds it into
the model cache (:mod:`.modelcache`: under its lock, published atomically), so the next run, in
any process, finds it compiled.

The build never holds up the run or the interpreter's exit: it is a separate process in its own
session (Ctrl-C in the terminal does not reach it), at a lower priority, with no output. It gets
the robot as model-file data in a job file of the cache folder (``background/``); the job file
doubles as the marker that a build is under way, so repeated runs start one build, not one each
(a marker older than :data:`STALE_SECONDS` is a crashed build's and is replaced). A finished
job is kept as ``<name>.done`` for as long: a run that still does not find the model (say its
model-file form loses something the cache key sees) starts no second build.

``FLEXMAN_BACKGROUND_COMPILE``: ``1`` (default) or ``0`` (never; the test suite sets it).
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time

#: builds estimated above this (s) are not started in the background (they would load the
#: machine for longer than anyone waits for "next time"); backend="compiled" still builds them
MAX_SECONDS = 600.0
#: a job file older than this (s) belongs to a build that died: a new one may start
STALE_SECONDS = 3600.0
_started = {}  # job name -> Popen: this process's builds (kept, so nothing warns about a running child)


def enabled() -> bool:
    """Whether background builds are on (``FLEXMAN_BACKGROUND_COMPILE``, default on)."""
    value = os.environ.get("FLEXMAN_BACKGROUND_COMPILE", "1").strip().lower()
    if value in ("1", "on", "yes", "true", ""):
        return True
    if value in ("0", "off", "no", "false"):
        return False
    raise ValueError(f"FLEXMAN_BACKGROUND_COMPILE: unknown '{value}'; use 1 (build in the background) or 0 (never)")


def jobs_dir():
    from .cbuild import cache_dir

    path = cache_dir() / "background"
    path.mkdir(parents=True, exist_ok=True)
    return path


def start(robot, formulation="newton_euler", estimated_seconds=0.0, derivatives=False):
    """Start building ``robot``'s compiled model (``derivatives``: its variant with the partial
    derivatives) in a detached process; True when a build is under way (started now, or earlier
    by any process), False when none was started (off, too long, the robot has no model-file
    form, or the process could not start)."""
    if not enabled() or estimated_seconds > MAX_SECONDS:
        return False
    try:
        from ..model.io import robot_to_dict
        from ..version import __version__

        data = {"robot": robot_to_dict(robot), "formulation": formulation, "flexman": __version__}
        if derivatives:
            data["derivatives"] = True
        text = json.dumps(data, sort_keys=True)
        name = hashlib.sha256(text.encode()).hexdigest()[:24]
        if name in _started:
            return True
        job = jobs_dir() / f"{name}.json"
        done = job.with_suffix(".done")
        try:  # built within the hour, yet not found (its cache key differs): do not build it again and again
            if time.time() - done.stat().st_mtime < STALE_SECONDS:
                return False
        except FileNotFoundError:
            pass
        try:
            if time.time() - job.stat().st_mtime < STALE_SECONDS:
                return True  # another process's build of this model is under way
            job.unlink()
        except FileNotFoundError:
            pass
        tmp = job.with_name(f".{name}.{os.getpid()}.tmp")
        tmp.write_text(text)
        try:
            os.link(tmp, job)  # atomic and exclusive: of two processes at once, one starts the build
        except FileExistsError:
            return True
        finally:
            tmp.unlink()
        if not _started:
            import atexit

            atexit.register(_detach)
        _started[name] = _spawn(job)
        return True
    except (OSError, ValueError, TypeError):
        return False


def _spawn(job):
    import subprocess

    env = dict(os.environ, FLEXMAN_BACKGROUND_COMPILE="0")
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # above flexman/
    env["PYTHONPATH"] = os.pathsep.join([package_root] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    try:
        return subprocess.Popen([sys.executable, "-m", "flexman.codegen.background", str(job)], env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True, close_fds=True)
    except OSError:
        job.unlink(missing_ok=True)
        raise


def _detach():
    """At exit: builds still running go on without us (their own session), on purpose; marking
    them reaped keeps Python from warning about a child it did not wait for."""
    for proc in _started.values():
        if proc.poll() is None:
            proc.returncode = 0


def wait(timeout=None) -> bool:
    """Wait for this process's background builds (tests, benchmarks); True when all finished."""
    import subprocess

    for proc in list(_started.values()):
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
    return True


def build(job_path) -> int:
    """The background process: build the job's model into the cache, then remove the job."""
    try:
        os.nice(10)
    except (AttributeError, OSError):
        pass
    try:
        data = json.loads(open(job_path, encoding="utf-8").read())
        from ..model.serialize import robot_from_dict
        from .modelcache import compiled_model

        compiled_model(robot_from_dict(data["robot"]), data["formulation"], derivatives=bool(data.get("derivatives")))
        return 0
    except Exception:  # nobody is there to read it: the next run simply runs interpreted again
        return 1
    finally:
        try:  # the job becomes the record that this model was built (see start)
            os.replace(job_path, os.path.splitext(job_path)[0] + ".done")
        except OSError:
            pass


if __name__ == "__main__":
    sys.exit(build(sys.argv[1]))
