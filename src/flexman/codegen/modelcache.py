"""Compiled models of robots, built on first use and kept on disk for every later process.

:func:`compiled_model` returns a :class:`~flexman.codegen.CompiledModel` of a robot whose
physical parameters (DH lengths, masses, inertias, beam properties, gravity, payload; see
:mod:`flexman.symbolic.params`) are an input vector, so every robot of the same *structure*
shares one compiled library and only that vector differs. A parameter sweep therefore
compiles once.

The structure of a robot is everything its equations depend on except those values: joint
types, DH angles, beam shapes and mode counts, friction, and which parameters are non-zero
(zeros are folded into the code). Beams with clamped-mass shapes are the exception: their
shapes follow from the loads they carry, so for them every value is part of the structure.

On disk (``cbuild.cache_dir()/models``) an entry is the library ``<key>.so`` and its manifest
``<key>.json`` (calling layout, parameter names, the library's SHA-256, flexman version); the
key hashes the structure, the formulation, the code generator's version and the compiler
command. Entries are written with ``cbuild.publish`` under ``cbuild.locked`` and used only when
the library still has the digest its manifest records; anything else is rebuilt.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from pathlib import Path

from . import cbuild

FORMAT = 7  # bump when the generated code or the manifest changes meaning
DYNAMICS_FREE = ("name", "description", "source", "controller")  # model-file fields the equations ignore
LINK_VALUES = ("a", "d", "mass", "com", "inertia", "armature", "hub")
BEAM_VALUES = ("length", "mass_per_length", "EI", "GJ", "polar_inertia_per_length", "damping")
ROBOT_VALUES = ("gravity", "payload")

_loaded = {}  # key -> (layout, parameter names, ctypes functions, extension module or None), this process


class NotCompilable(ValueError):
    """The robot has a feature the generated code does not model (the message says which)."""


def check_compilable(robot):
    """Raise :class:`NotCompilable` when generated code would not model ``robot`` exactly."""
    for i, link in enumerate(robot.links):
        if link.coulomb:
            raise NotCompilable(f"links[{i}].coulomb: Coulomb friction is not in the generated code "
                                "(it branches on the sign of qd)")


def structure(robot) -> dict:
    """The model-file data of ``robot`` without its parameter values (see the module docstring)."""
    from ..model.io import robot_to_dict

    data = robot_to_dict(robot)
    for key in DYNAMICS_FREE:
        data.pop(key, None)
    for link in data["links"]:
        link.pop("name", None)
    if any(link.get("beam", {}).get("shapes") == "clamped_mass" for link in data["links"]):
        return data  # the shapes depend on every load: all values are structure
    for key in ROBOT_VALUES:
        data.pop(key, None)
    for link in data["links"]:
        for key in LINK_VALUES:
            link.pop(key, None)
        for key in BEAM_VALUES:
            link.get("beam", {}).pop(key, None)
    return data


def model_key(robot, formulation="newton_euler", flags=None, extension=True) -> tuple:
    """(cache key, parameter values {name: value}) of ``robot``'s compiled model."""
    from ..version import __version__
    from ..symbolic.params import parameter_values

    values = parameter_values(robot)
    cmd, suffix, tag = cbuild.compile_command(flags, extension)
    text = json.dumps({"format": FORMAT, "flexman": __version__, "formulation": formulation,
                       "structure": structure(robot), "parameters": list(values),
                       "compiler": cmd, "suffix": suffix, "tag": tag}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32], values


def models_dir() -> Path:
    path = cbuild.cache_dir() / "models"
    path.mkdir(parents=True, exist_ok=True)
    return path


def compiled_model(robot, formulation="newton_euler", flags=None, extension=None, progress=None):
    """A CompiledModel of ``robot`` (C; its parameter vector set to ``robot``'s values), from
    this process's memory, the disk cache, or built now (derive with symbolic parameters,
    generate, compile). ``extension``: also the CPython single-call fast path (default: unless
    ``FLEXMAN_NO_EXT=1``; falls back to ctypes when it cannot be built). ``progress``: a
    callable(str) told about a build (e.g. to print one line). Raises NotCompilable,
    RuntimeError (no compiler, compiler failure)."""
    from . import CompiledModel

    check_compilable(robot)
    cbuild.compiler()
    if extension is None:
        extension = os.environ.get("FLEXMAN_NO_EXT", "") in ("", "0")
    if extension:
        try:
            key, values = model_key(robot, formulation, flags, True)
        except RuntimeError:  # no Python or NumPy headers: ctypes only
            extension = False
    if not extension:
        key, values = model_key(robot, formulation, flags, False)
    entry = _loaded.get(key)
    if entry is None:
        try:
            entry = _load_or_build(key, robot, formulation, flags, extension, progress)
        except (RuntimeError, ImportError):
            if not extension:
                raise
            # the extension did not build or load: the plain library (ctypes) still serves
            key, values = model_key(robot, formulation, flags, False)
            entry = _loaded.get(key) or _load_or_build(key, robot, formulation, flags, False, progress)
        _loaded[key] = entry
    layout, names, funcs, module = entry
    if names != list(values):  # cannot happen with equal keys; guards the key's definition
        raise RuntimeError(f"model cache entry {key}: parameter names differ from the robot's")
    return CompiledModel(None, "c", funcs, None, module, robot=robot, layout=layout, param_values=values)


def _paths(key):
    d = models_dir()
    return d / f"{key}.so", d / f"{key}.json"


def _read_entry(key):
    """(manifest, library path) of a verified entry, else None."""
    lib, manifest = _paths(key)
    try:
        data = json.loads(manifest.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("key") != key or data.get("format") != FORMAT:
        return None
    try:
        if cbuild.file_digest(lib) != data.get("sha256"):
            return None
    except OSError:
        return None
    return data, lib


def _load_or_build(key, robot, formulation, flags, extension, progress):
    found = _read_entry(key)
    if found is None:
        lib, _ = _paths(key)
        with cbuild.locked(lib):
            found = _read_entry(key)  # built by another process while we waited?
            if found is None:
                _build(key, robot, formulation, flags, extension, progress)
                found = _read_entry(key)
                if found is None:
                    raise RuntimeError(f"model cache: entry {key} unreadable right after building it")
    data, lib = found
    from . import ctypes_functions

    library = cbuild.load(lib)
    module = cbuild.load_extension(lib, data["module"]) if data.get("module") else None
    return data["layout"], data["parameters"], ctypes_functions(library, data["layout"]), module


def _build(key, robot, formulation, flags, extension, progress):
    """Derive, generate and compile the entry ``key``; write library, then manifest."""
    from ..version import __version__
    from . import WHATS, c_source, calling_layout, pyext
    from ..symbolic import derive

    start = time.perf_counter()
    if progress:
        progress(f"flexman: compiling the model of '{robot.name}' ({robot.nq} coordinates; once, then cached)")
    eom = derive(robot, formulation=formulation, parameters="symbolic", external=False)
    layout = calling_layout(eom)
    t_derive = time.perf_counter() - start
    units = []  # parts of split large functions: compiled in parallel
    source = c_source(eom, units=units)
    module = None
    lib_path, manifest = _paths(key)
    with tempfile.TemporaryDirectory(dir=models_dir()) as tmp:
        tmp = Path(tmp)
        text = source
        cmd, suffix, _ = cbuild.compile_command(flags, extension)
        if extension:
            module = f"fm_model_{key[:16]}"
            text = pyext.source(source, {w: eom.program(w) for w in WHATS}, module, eom.param_values.values())
        src = tmp / "model.c"
        src.write_text(text)
        files = [src]
        for k, unit in enumerate(units):
            files.append(tmp / f"part{k + 1}.c")
            files[-1].write_text(unit)
        t0 = time.perf_counter()
        out = cbuild.compile_into(files, tmp / f"model{suffix}", cmd)
        t_compile = time.perf_counter() - t0
        digest = cbuild.file_digest(out)
        os.replace(out, lib_path)
        data = {"format": FORMAT, "key": key, "flexman": __version__, "robot": robot.name,
                "formulation": formulation, "nq": robot.nq, "parameters": list(eom.param_values),
                "layout": layout, "module": module, "sha256": digest, "compiler": cmd,
                "derive_seconds": t_derive, "compile_seconds": t_compile}
        tmp_manifest = tmp / "manifest.json"
        tmp_manifest.write_text(json.dumps(data, indent=1))
        os.replace(tmp_manifest, manifest)


def clear_memory():
    """Forget the models loaded by this process (tests; the disk cache stays)."""
    _loaded.clear()
