"""Compile C source into a shared library with the system compiler, cached by content hash.

The cache lives in ``$FLEXMAN_CACHE``, else ``$XDG_CACHE_HOME/flexman``, else
``~/.cache/flexman``; a library is named by the SHA-256 of its source and compiler command,
so regenerating identical code costs nothing and different models never collide.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

CFLAGS = ["-O2", "-shared", "-fPIC"]


def cache_dir() -> Path:
    if os.environ.get("FLEXMAN_CACHE"):
        path = Path(os.environ["FLEXMAN_CACHE"])
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        path = Path(base) / "flexman"
    path.mkdir(parents=True, exist_ok=True)
    return path


def compiler() -> str:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        raise RuntimeError("no C compiler found (set CC, or use compile('numpy'))")
    return cc


def build_shared(source: str, flags=None) -> Path:
    """Path of the compiled library of ``source`` (compiling it if it is not cached)."""
    cmd = [compiler()] + list(flags or CFLAGS)
    key = hashlib.sha256(("\0".join(cmd) + "\0" + source).encode()).hexdigest()[:24]
    lib = cache_dir() / f"fm_{key}.so"
    if lib.exists():
        return lib
    with tempfile.TemporaryDirectory(dir=cache_dir()) as tmp:
        src = Path(tmp) / "model.c"
        src.write_text(source)
        out = Path(tmp) / "model.so"
        res = subprocess.run(cmd + ["-o", str(out), str(src), "-lm"], capture_output=True, text=True)
        if res.returncode:
            raise RuntimeError(f"C compilation failed ({' '.join(cmd)}):\n{res.stderr[-4000:]}")
        os.replace(out, lib)  # atomic: concurrent builders never see a partial file
    return lib


def build_executable(source_path, exe_path, flags=("-O2",)):
    cmd = [compiler(), *flags, "-o", str(exe_path), str(source_path), "-lm"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode:
        raise RuntimeError(f"C compilation failed:\n{res.stderr[-4000:]}")
    return Path(exe_path)


def load(path) -> ctypes.CDLL:
    return ctypes.CDLL(str(path))
