"""Compile C source into a shared library with the system compiler, cached by content hash.

The cache lives in ``$FLEXMAN_CACHE``, else ``$XDG_CACHE_HOME/flexman``, else
``~/.cache/flexman``; a library is named by the SHA-256 of its source and compiler command,
so regenerating identical code costs nothing and different models never collide.
"""
from __future__ import annotations

import ctypes
import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sysconfig
import tempfile
from pathlib import Path

import numpy

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


def python_include() -> Path:
    """Folder holding Python.h (RuntimeError when the headers are not installed)."""
    inc = Path(sysconfig.get_paths()["include"])
    if not (inc / "Python.h").exists():
        raise RuntimeError(f"Python.h not found in {inc} (install the Python development headers)")
    return inc


def numpy_include() -> Path:
    """Folder holding numpy/arrayobject.h (RuntimeError when NumPy ships no headers)."""
    inc = Path(numpy.get_include())
    if not (inc / "numpy" / "arrayobject.h").exists():
        raise RuntimeError(f"numpy/arrayobject.h not found in {inc}")
    return inc


def build_shared(source: str, flags=None, extension=False) -> Path:
    """Path of the compiled library of ``source`` (compiling it if it is not cached).

    ``extension=True``: a CPython extension module (Python and NumPy headers, platform
    suffix; the NumPy version is part of the cache key)."""
    cmd = [compiler()] + list(flags or CFLAGS)
    suffix = ".so"
    tag = ""
    if extension:
        cmd += [f"-I{python_include()}", f"-I{numpy_include()}"]
        suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
        tag = "numpy " + numpy.__version__
    key = hashlib.sha256(("\0".join(cmd + [tag]) + "\0" + source).encode()).hexdigest()[:24]
    lib = cache_dir() / f"fm_{key}{suffix}"
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


def load_extension(path, name):
    """Import the extension module ``name`` from the file ``path`` (not added to sys.modules)."""
    spec = importlib.util.spec_from_file_location(name, str(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
