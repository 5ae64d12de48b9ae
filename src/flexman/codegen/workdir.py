"""Work folders and compiler processes that outlive no end of flexman, however it ends.

A build (a compiled model, an FMU) writes its C files and objects in a work folder inside the
cache (:func:`work_folder`), named ``.flexman-work-<pid>-<random>`` after the process that owns
it. The folder is removed when the build ends, also on an error, Ctrl-C or a SIGTERM/SIGHUP
(turned into :class:`flexman.outputs.Terminated` while the folder exists). A SIGKILL cannot be
caught: the next build in that folder and ``flexman cache --clear`` remove the work folders
whose owner process is gone (or older than :data:`STALE_S`, should its pid have been reused).

The compiler runs under a small watcher process (:func:`run`), in a process group of its own:
when flexman stops the build (an error, a signal) it kills the whole group (the compiler driver
and the cc1/as it started); when flexman is killed outright, Linux tells the watcher
(``PR_SET_PDEATHSIG``), which kills the group. Without that the compiler of a large model would
run on for minutes after flexman is gone.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from ..outputs import terminable

PREFIX = ".flexman-work-"
#: a work folder whose owner pid still runs is stale only after this long (the pid may be reused)
STALE_S = 3600.0

# Runs the command in its own process group (the watcher's); on SIGTERM, or when its parent dies
# (Linux: prctl PR_SET_PDEATHSIG = 1), kills that group. Standard library only: it starts in ~20 ms.
WATCHER = r"""
import ctypes, os, signal, subprocess, sys
def stop(*_):
    os.killpg(0, signal.SIGKILL)
signal.signal(signal.SIGTERM, stop)
try:
    ctypes.CDLL(None).prctl(1, signal.SIGTERM)
except (AttributeError, OSError):
    pass
if os.getppid() != int(sys.argv[1]):
    stop()
sys.exit(subprocess.call(sys.argv[2:]))
"""

_groups = set()  # process groups of the compilers this process runs now
_lock = threading.Lock()


def owner(path) -> int | None:
    """The pid in a work folder's name, or None for another name."""
    name = Path(path).name
    if not name.startswith(PREFIX):
        return None
    pid = name[len(PREFIX):].split("-")[0]
    return int(pid) if pid.isdigit() else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def stale(path, now=None) -> bool:
    """Whether a work folder belongs to no running build: its owner process is gone, or it is
    older than STALE_S."""
    pid = owner(path)
    if pid is None:
        return False
    if pid != os.getpid() and not _alive(pid):
        return True
    try:
        return (now or time.time()) - Path(path).stat().st_mtime > STALE_S
    except OSError:
        return False


def sweep(parent) -> list:
    """Remove the stale work folders in ``parent``; the paths removed."""
    gone = []
    try:
        listed = list(Path(parent).iterdir())
    except OSError:
        return gone
    now = time.time()
    for path in listed:
        if path.is_dir() and stale(path, now):
            shutil.rmtree(path, ignore_errors=True)
            if not path.exists():
                gone.append(path)
    return gone


@contextmanager
def work_folder(parent):
    """A new work folder in ``parent`` (stale ones there removed first), removed when the block
    ends in any way but SIGKILL."""
    parent = Path(parent)
    parent.mkdir(parents=True, exist_ok=True)
    sweep(parent)
    with terminable():
        path = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=parent))
        try:
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)


def kill_all() -> None:
    """Kill the compilers this process runs (every thread's): their groups, SIGKILL."""
    with _lock:
        groups = list(_groups)
    for group in groups:
        try:
            os.killpg(group, signal.SIGKILL)
        except OSError:
            pass


def run(cmd) -> subprocess.CompletedProcess:
    """``subprocess.run(cmd, capture_output=True, text=True)`` under the watcher (module doc):
    the command and everything it starts die with the build or with this process."""
    if os.name != "posix" or not sys.executable:  # (an embedded interpreter: no Python to run the watcher)
        return subprocess.run(cmd, capture_output=True, text=True)
    proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", WATCHER, str(os.getpid()), *map(str, cmd)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    with _lock:
        _groups.add(proc.pid)
    try:
        out, err = proc.communicate()
    except BaseException:  # an error, Ctrl-C, SIGTERM (Terminated) in this thread
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.wait()
        raise
    finally:
        with _lock:
            _groups.discard(proc.pid)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)
