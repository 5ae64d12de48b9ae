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
command; natively compiled entries (``-march=native``, the default: ``cbuild.default_flags``)
also the processor's ``cbuild.cpu_fingerprint``, which their manifest records too (``"cpu"``), so
a cache folder shared by different processors never loads one's code on another. Entries are written with ``cbuild.publish`` under ``cbuild.locked`` and used only when
the library still has the digest its manifest records; anything else is rebuilt.

Loading an entry from disk sets its manifest's mtime ("last used"). :func:`entries`,
:func:`prune` and :func:`clear` list and remove entries (``flexman cache``); a removal takes the
entry's build lock without waiting (an entry being built is skipped) and deletes the manifest
before the library, so a process never loads half an entry: it rebuilds the removed one.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..model import tracking
from . import cbuild

FORMAT = 8  # bump when the generated code or the manifest changes meaning (8: mass matrix by composite bodies)
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
        if link.joint_coulomb:
            raise NotCompilable(f"links[{i}].{'coulomb' if link.coulomb else 'drive.coulomb'}: Coulomb friction is not in the generated code "
                                "(it branches on the sign of qd)")


def structure(robot) -> dict:
    """The model-file data of ``robot`` without its parameter values (see the module docstring)."""
    from ..model.io import robot_to_dict

    data = robot_to_dict(robot)
    for key in DYNAMICS_FREE:
        data.pop(key, None)
    for link in data["links"]:
        link.pop("name", None)
        link.get("drive", {}).pop("torque_limit", None)  # (applied by the loops, not in the equations)
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


def model_key(robot, formulation="newton_euler", flags=None, extension=True, derivatives=False) -> tuple:
    """(cache key, parameter values {name: value}) of ``robot``'s compiled model (``derivatives``:
    the variant that also holds the partial derivatives, an entry of its own)."""
    from ..version import __version__
    from ..symbolic.params import parameter_values

    values = dict(robot.derived("parameter_values", parameter_values))  # once per content (a clamped-mass arm: seconds)
    cmd, suffix, tag = cbuild.compile_command(flags, extension)
    text = json.dumps({"format": FORMAT, "flexman": __version__, "formulation": formulation,
                       "structure": structure(robot), "parameters": list(values),
                       "compiler": cmd, "suffix": suffix, "tag": tag}
                      | ({"derivatives": True} if derivatives else {}), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32], values


def models_dir() -> Path:
    path = cbuild.cache_dir() / "models"
    path.mkdir(parents=True, exist_ok=True)
    return path


def compiled_model(robot, formulation="newton_euler", flags=None, extension=None, progress=None, derivatives=False):
    """A CompiledModel of ``robot`` (C; its parameter vector set to ``robot``'s values), from
    this process's memory, the disk cache, or built now (derive with symbolic parameters,
    generate, compile). ``extension``: also the CPython single-call fast path (default: unless
    ``FLEXMAN_NO_EXT=1``; falls back to ctypes when it cannot be built). ``progress``: a
    callable(str) told about a build (e.g. to print one line). ``derivatives``: the entry whose
    code also has the partial derivatives (``codegen.PARTIALS``). Raises NotCompilable,
    RuntimeError (no compiler, compiler failure)."""
    from . import CompiledModel

    check_compilable(robot)
    cbuild.compiler()
    if extension is None:
        extension = os.environ.get("FLEXMAN_NO_EXT", "") in ("", "0")
    if extension:
        try:
            key, values = model_key(robot, formulation, flags, True, derivatives)
        except RuntimeError:  # no Python or NumPy headers: ctypes only
            extension = False
    if not extension:
        key, values = model_key(robot, formulation, flags, False, derivatives)
    entry = _loaded.get(key)
    if entry is None:
        try:
            entry = _load_or_build(key, robot, formulation, flags, extension, progress, derivatives)
        except (RuntimeError, ImportError):
            if not extension:
                raise
            # the extension did not build or load: the plain library (ctypes) still serves
            key, values = model_key(robot, formulation, flags, False, derivatives)
            entry = _loaded.get(key) or _load_or_build(key, robot, formulation, flags, False, progress, derivatives)
        _loaded[key] = entry
        tracking.model_loaded()
    layout, names, funcs, module = entry
    if names != list(values):  # cannot happen with equal keys; guards the key's definition
        raise RuntimeError(f"model cache entry {key}: parameter names differ from the robot's")
    return CompiledModel(None, "c", funcs, None, module, robot=robot, layout=layout, param_values=values)


def _size_built(nq) -> bool:
    """Whether a model of ``nq`` coordinates is loaded by this process or in the disk cache
    (memory first: reading the cache's manifests costs milliseconds, at every run)."""
    return (any(layout["mass_matrix"]["out_shape"][0] == nq for layout, *_ in _loaded.values())
            or any(e.nq == nq for e in entries()))


def existing_model(robot, formulation="newton_euler", derivatives=False):
    """The CompiledModel of ``robot`` when it is built already (loaded by this process or in the
    disk cache), else None. Never compiles: for callers that use compiled code only when it is
    there (controllers, ``backend="auto"`` weighing a build against a run)."""
    try:
        check_compilable(robot)
        cbuild.compiler()
    except (NotCompilable, RuntimeError):
        return None
    clamped_mass = any(link.beam is not None and link.beam.shapes == "clamped_mass" for link in robot.links)
    if clamped_mass and not _size_built(robot.nq):
        return None  # no model of this size is built: skip the key (a clamped-mass arm's takes seconds)
    kinds = (True, False) if os.environ.get("FLEXMAN_NO_EXT", "") in ("", "0") else (False,)
    for extension in kinds:
        try:
            key, _ = model_key(robot, formulation, None, extension, derivatives)
        except RuntimeError:  # no headers for the extension
            continue
        if key in _loaded or _read_entry(key) is not None:
            try:
                return compiled_model(robot, formulation, extension=extension, derivatives=derivatives)
            except (RuntimeError, ImportError, OSError):
                return None
    return None


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
    if data.get("cpu") is not None and data["cpu"] != cbuild.cpu_fingerprint():
        return None  # native code of another processor type (the key already says so; a second guard)
    try:
        if cbuild.file_digest(lib) != data.get("sha256"):
            return None
    except OSError:
        return None
    return data, lib


def _load_or_build(key, robot, formulation, flags, extension, progress, derivatives=False):
    found = _read_entry(key)
    if found is not None:
        try:
            return _load(found)
        except (OSError, ImportError):  # removed (``flexman cache``) since the check: build under the lock
            pass
    lib, _ = _paths(key)
    with cbuild.locked(lib):
        found = _read_entry(key)  # built by another process while we waited?
        if found is None:
            _build(key, robot, formulation, flags, extension, progress, derivatives)
            found = _read_entry(key)
            if found is None:
                raise RuntimeError(f"model cache: entry {key} unreadable right after building it")
        return _load(found)


def _load(found):
    """Load a verified entry and mark it used now (the manifest's mtime, for :func:`prune`)."""
    data, lib = found
    from . import ctypes_functions

    library = cbuild.load(lib)
    module = cbuild.load_extension(lib, data["module"]) if data.get("module") else None
    try:
        os.utime(lib.with_suffix(".json"))
    except OSError:  # a read-only cache still serves
        pass
    return data["layout"], data["parameters"], ctypes_functions(library, data["layout"]), module


def _build(key, robot, formulation, flags, extension, progress, derivatives=False):
    """Derive, generate and compile the entry ``key``; write library, then manifest."""
    from ..version import __version__
    from . import WHATS, c_source, calling_layout, pyext
    from ..symbolic import derive

    start = time.perf_counter()
    if progress:
        progress(f"flexman: compiling the model of '{robot.name}' ({robot.nq} coordinates; once, then cached)")
    eom = derive(robot, formulation=formulation, parameters="symbolic", external=False)
    layout = calling_layout(eom, derivatives)
    t_derive = time.perf_counter() - start
    units = []  # parts of split large functions: compiled in parallel
    source = c_source(eom, units=units, derivatives=derivatives)
    module = None
    lib_path, manifest = _paths(key)
    from . import workdir  # (the process and file modules of a build: not needed to load a model)

    with workdir.work_folder(models_dir()) as tmp:
        text = source
        cmd, suffix, _ = cbuild.compile_command(flags, extension)
        native = cbuild.NATIVE in cmd
        cmd = cbuild.buildable(cmd)  # what runs: without -march=native where the compiler refuses it
        if extension:
            module = f"fm_model_{key[:16]}"
            text = pyext.source(source, {w: eom.program(w) for w in WHATS}, module, eom.param_values.values(), layout)
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
                "cpu": cbuild.cpu_fingerprint() if native else None,
                "derive_seconds": t_derive, "compile_seconds": t_compile}
        tmp_manifest = tmp / "manifest.json"
        tmp_manifest.write_text(json.dumps(data, indent=1))
        os.replace(tmp_manifest, manifest)


def clear_memory():
    """Forget the models loaded by this process (tests; the disk cache stays)."""
    _loaded.clear()


# ----- managing the disk cache (``flexman cache``) ------------------------------------------------
STRAY_AGE_S = 3600.0  # leftovers of crashed builds (temporary folders, half entries) older than this go


@dataclass
class Entry:
    """One model in the disk cache. ``size``: bytes of library and manifest; ``created``: when
    the library was built, ``last_used``: when a process last loaded it (epoch seconds)."""
    key: str
    robot: str
    nq: int
    flexman: str
    size: int
    created: float
    last_used: float

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Removal:
    """What :func:`prune` or :func:`clear` removed (or would remove, ``dry_run``): entries,
    entries skipped because a process was building them, stray files and folders."""
    removed: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    strays: list = field(default_factory=list)

    @property
    def freed(self) -> int:
        return sum(e.size for e in self.removed)


def _is_key(name) -> bool:
    return len(name) == 32 and all(c in "0123456789abcdef" for c in name)


def entries() -> list:
    """The complete entries of the disk cache (library and manifest), least recently used first."""
    found = []
    for manifest in models_dir().glob("*.json"):
        key, lib = manifest.stem, manifest.with_suffix(".so")
        if not _is_key(key):
            continue
        try:
            st_lib, st_man = lib.stat(), manifest.stat()
        except OSError:  # half an entry (or removed meanwhile): a stray
            continue
        try:
            data = json.loads(manifest.read_text())
            data = data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            data = {}
        found.append(Entry(key, str(data.get("robot", "?")), data.get("nq"), str(data.get("flexman", "?")),
                           st_lib.st_size + st_man.st_size, st_lib.st_mtime, st_man.st_mtime))
    return sorted(found, key=lambda e: (e.last_used, e.key))


def prune(max_bytes=None, older_than_s=None, dry_run=False) -> Removal:
    """Remove the entries not used for ``older_than_s`` seconds, then the least recently used
    ones until the rest take at most ``max_bytes``; also the leftovers of crashed builds.
    An entry a process is building is skipped; ``dry_run``: only say what would go."""
    if max_bytes is not None and max_bytes < 0:
        raise ValueError(f"max_bytes must be >= 0 (got {max_bytes})")
    if older_than_s is not None and older_than_s < 0:
        raise ValueError(f"older_than_s must be >= 0 (got {older_than_s})")
    now = time.time()
    listed = entries()
    total = sum(e.size for e in listed)
    out = Removal()
    for entry in listed:  # least recently used first
        stale = older_than_s is not None and now - entry.last_used > older_than_s
        if not (stale or (max_bytes is not None and total > max_bytes)):
            continue
        if dry_run or _remove(entry.key):
            out.removed.append(entry)
            total -= entry.size
        else:
            out.skipped.append(entry)
    if not dry_run:
        from . import workdir

        out.strays = _remove_strays(now) + workdir.sweep(models_dir()) + workdir.sweep(cbuild.cache_dir())
    return out


def clear(dry_run=False) -> Removal:
    """Remove every entry of the disk cache (but those being built) and stale leftovers."""
    return prune(max_bytes=0, dry_run=dry_run)


def _unlink_entry(key):
    """Delete an entry's files, manifest first (the caller holds its lock)."""
    lib, manifest = _paths(key)
    for path in (manifest, lib, cbuild.lock_path(lib)):
        path.unlink(missing_ok=True)


def _remove(key) -> bool:
    """Remove one entry under its build lock (not waiting: False when held)."""
    try:
        with cbuild.locked(_paths(key)[0], wait=False):
            _unlink_entry(key)
    except BlockingIOError:
        return False
    _loaded.pop(key, None)  # a library this process loaded stays mapped; a new request rebuilds
    return True


def _remove_strays(now) -> list:
    """Temporary build folders and half entries (library, manifest or lock file alone) older
    than STRAY_AGE_S; half entries under their lock, so a build in progress keeps its files."""
    gone = []
    folder = models_dir()
    for path in folder.iterdir():
        try:
            if path.is_dir():
                if path.name.startswith("tmp") and now - _newest(path) > STRAY_AGE_S:
                    import shutil

                    shutil.rmtree(path)
                    gone.append(path)
                continue
            key = path.name.split(".")[0]
            if not _is_key(key) or path.name not in (f"{key}.so", f"{key}.json", f"{key}.so.lock"):
                continue
            lib, manifest = _paths(key)
            if (lib.exists() and manifest.exists()) or now - path.stat().st_mtime <= STRAY_AGE_S:
                continue
            with cbuild.locked(lib, wait=False):
                if not (lib.exists() and manifest.exists()):
                    gone += [p for p in (manifest, lib) if p.exists()]
                    _unlink_entry(key)
        except (BlockingIOError, FileNotFoundError):
            continue
    return gone


def _newest(folder) -> float:
    """The latest mtime of a folder and the files in it."""
    times = [folder.stat().st_mtime]
    for p in folder.rglob("*"):
        try:
            times.append(p.stat().st_mtime)
        except OSError:
            pass
    return max(times)
