"""Compile C source into a shared library with the system compiler, cached by content hash.

The cache lives in ``$FLEXMAN_CACHE``, else ``$XDG_CACHE_HOME/flexman``, else
``~/.cache/flexman``; a library is named by the SHA-256 of its source and compiler command,
so regenerating identical code costs nothing and different models never collide.

**Native code.** Libraries built for this machine's own cache (:func:`default_flags`: models,
the compiled loop) are compiled with ``-march=native -ffp-contract=off``: the processor's own
instruction set (AVX and the like), but no contraction of a * b + c into fused multiply-adds, so
they round exactly as the portable build does (the same numbers, bit for bit, on x86-64; with
contraction, which is faster still, a stiff closed loop drifted from the Python loop by 5e-10
relative within 0.3 s, beyond the tests' 1e-10). Their cache key carries
:func:`cpu_fingerprint` (the processor's architecture, model and instruction-set flags): a cache
folder shared between machines (a network home folder) never hands one processor's code to
another, which builds its own. Where the processor cannot be read (no ``/proc/cpuinfo``),
``FLEXMAN_NATIVE=0`` is set, or the compiler refuses the flag (tested once per compiler), the
portable :data:`CFLAGS` are used. Artefacts made for other machines (FMUs) always use
:data:`CFLAGS`.

Every cache entry is written the same way (:func:`publish`): compiled under a temporary name,
renamed into place (atomic: nobody sees a partial file), then its SHA-256 recorded beside it.
An entry is used only when its file still has that digest (:func:`verified`); a truncated or
corrupted one is rebuilt. Builders of one entry take turns (:func:`locked`, an advisory file
lock), so concurrent processes compile it once.
"""
from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import importlib.machinery
import importlib.util
import os
import sysconfig
from pathlib import Path

import numpy

CFLAGS = ["-O2", "-shared", "-fPIC"]  # portable: what exported artefacts (FMUs) are compiled with
NATIVE = "-march=native"  # added by default_flags() for libraries of this machine's cache
NO_CONTRACT = "-ffp-contract=off"  # beside it: no fused multiply-adds, so native code rounds as portable code does
CPU_KEYS = ("vendor_id", "cpu family", "model", "model name", "flags",  # x86
            "CPU implementer", "CPU architecture", "CPU variant", "CPU part", "Features",  # ARM
            "cpu", "isa", "uarch", "cpu model", "features", "hart isa")  # POWER, RISC-V, others


@functools.lru_cache(maxsize=1)
def cpu_fingerprint():
    """A short name of this processor type (``x86_64-<hash>``: the machine name and a hash of
    /proc/cpuinfo's model and instruction-set lines, all distinct values over the CPUs), read
    once per process; None when /proc/cpuinfo cannot be read (then no native code is built)."""
    import platform

    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    lines = set()
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in CPU_KEYS:
            lines.add(key.strip() + ":" + " ".join(value.split()))
    if not lines:
        return None
    digest = hashlib.sha256("\n".join(sorted(lines)).encode()).hexdigest()[:16]
    return f"{platform.machine() or 'cpu'}-{digest}"


def native_enabled() -> bool:
    """Whether :func:`default_flags` asks for native code: unless ``FLEXMAN_NATIVE=0`` or the
    processor cannot be fingerprinted."""
    if os.environ.get("FLEXMAN_NATIVE", "").strip().lower() in ("0", "no", "false", "off"):
        return False
    return cpu_fingerprint() is not None


def default_flags() -> list:
    """The flags of libraries built for this machine's cache: :data:`CFLAGS` plus ``-march=native``
    (see the module doc; a compiler that refuses it gets :data:`CFLAGS` when it compiles)."""
    return CFLAGS + [NATIVE, NO_CONTRACT] if native_enabled() else list(CFLAGS)


@functools.lru_cache(maxsize=8)
def _accepts_native(cc) -> bool:
    """Whether the compiler ``cc`` compiles with -march=native here (asked once per compiler)."""
    import subprocess

    from .workdir import work_folder

    with work_folder(cache_dir()) as tmp:
        src = os.path.join(tmp, "probe.c")
        with open(src, "w") as f:
            f.write("double fm_probe(double a, double b, double c) { return a * b + c; }\n")
        try:
            res = subprocess.run([cc, NATIVE, "-O2", "-c", "-o", os.path.join(tmp, "probe.o"), src],
                                 capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.SubprocessError):
            return False
        return res.returncode == 0


def buildable(cmd) -> list:
    """``cmd`` as it can run here: without -march=native when the compiler refuses it."""
    cmd = list(cmd)
    if NATIVE in cmd and not _accepts_native(cmd[0]):
        cmd = [c for c in cmd if c != NATIVE]
    return cmd


def cache_dir() -> Path:
    if os.environ.get("FLEXMAN_CACHE"):
        path = Path(os.environ["FLEXMAN_CACHE"])
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        path = Path(base) / "flexman"
    path.mkdir(parents=True, exist_ok=True)
    return path


def compiler() -> str:
    """The C compiler: ``$CC`` when set (it must exist), else cc, gcc or clang on the PATH
    (looked up once per value of CC and PATH)."""
    return _compiler(os.environ.get("CC", "").strip(), os.environ.get("PATH", ""))


def _which(name, path):
    """The executable ``name`` (a path, or found on ``path``), else None: ``shutil.which`` on
    POSIX, without importing shutil into every run."""
    folders = [""] if os.sep in name else path.split(os.pathsep)
    for folder in folders:
        candidate = os.path.join(folder, name) if folder else name
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


@functools.lru_cache(maxsize=8)
def _compiler(cc, path) -> str:
    if cc:
        if not _which(cc, path):
            raise RuntimeError(f"no C compiler found: CC={cc!r} is not an executable on the PATH")
        return cc
    cc = _which("cc", path) or _which("gcc", path) or _which("clang", path)
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


def file_digest(path) -> str:
    """SHA-256 (hex) of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


_good = {}  # path -> (size, mtime_ns) of entries already verified by this process


def _digest_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def verified(path) -> bool:
    """True when the cache entry ``path`` exists and still has the digest recorded when it was
    published (so it is complete and unchanged)."""
    path = Path(path)
    try:
        st = path.stat()
        if _good.get(path) == (st.st_size, st.st_mtime_ns):
            return True
        ok = _digest_path(path).read_text().strip() == file_digest(path)
    except (OSError, ValueError):
        return False
    if ok:
        _good[path] = (st.st_size, st.st_mtime_ns)
    return ok


def publish(tmp, path) -> Path:
    """Move the finished file ``tmp`` to the cache entry ``path`` (atomic rename) and record
    its digest (written under a temporary name, then renamed, too)."""
    path = Path(path)
    digest = file_digest(tmp)
    os.replace(tmp, path)
    side = _digest_path(path)
    tmp_side = side.with_name(f".{side.name}.{os.getpid()}.tmp")
    tmp_side.write_text(digest + "\n")
    os.replace(tmp_side, side)
    return path


def lock_path(path) -> Path:
    """The lock file of the cache entry ``path`` (see :func:`locked`)."""
    return Path(str(path) + ".lock")


@contextlib.contextmanager
def locked(path, wait=True):
    """Hold an exclusive advisory lock on ``<path>.lock`` (POSIX; elsewhere a no-op, and the
    atomic renames alone keep entries whole). ``wait=False``: raise BlockingIOError at once when
    another process holds it. The holder may delete the lock file (removing the entry): a waiter
    that then gets the lock of the deleted file takes the lock of the current one instead."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    lock = lock_path(path)
    while True:
        f = open(lock, "a")
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            st = os.fstat(f.fileno())
            now = os.stat(lock)
            if (st.st_dev, st.st_ino) == (now.st_dev, now.st_ino):
                break
        except FileNotFoundError:
            pass
        except BaseException:
            f.close()
            raise
        f.close()  # the file was deleted while we waited: try again (closing releases the lock)
    try:
        yield
    finally:
        fcntl.flock(f.fileno(), fcntl.LOCK_UN)
        f.close()


def compile_command(flags=None, extension=False) -> tuple:
    """(compiler command without input and output, file suffix, cache tag) of a shared
    library, or of a CPython extension module (Python and NumPy headers, platform suffix; the
    NumPy version goes into the tag). ``flags``: default :func:`default_flags`. A command with
    -march=native has the processor's :func:`cpu_fingerprint` in its tag (so in every cache key);
    :func:`compile_into` drops the flag where the compiler refuses it."""
    cmd = [compiler()] + (list(flags) if flags else default_flags())
    cpu = f"cpu {cpu_fingerprint()}" if NATIVE in cmd else ""
    if not extension:
        return cmd, ".so", cpu
    cmd += [f"-I{python_include()}", f"-I{numpy_include()}"]
    return cmd, importlib.machinery.EXTENSION_SUFFIXES[0], " ".join(filter(None, ["numpy " + numpy.__version__, cpu]))


def _run(cmd):
    from . import workdir

    res = workdir.run(cmd)  # the compiler dies with this process (workdir's module doc)
    if res.returncode:
        raise RuntimeError(f"C compilation failed ({' '.join(cmd[:6])} ...):\n{res.stderr[-4000:]}")


PART_OPT = "-O1"  # parts of split functions: straight-line code, for which -O2 adds compile time, not speed


def compile_into(sources, out, cmd, n_jobs=None):
    """Compile the C files ``sources`` with ``cmd`` into the library ``out``. Several files are
    compiled to objects in parallel (``n_jobs`` processes, default: the CPU count), then linked;
    the files after the first (parts of split functions) with ``PART_OPT`` instead of -O2.
    -march=native is dropped where the compiler refuses it (:func:`buildable`)."""
    sources = [Path(s) for s in sources]
    cmd = buildable(cmd)
    if len(sources) == 1:
        _run(cmd + ["-o", str(out), str(sources[0]), "-lm"])
        return Path(out)
    from concurrent.futures import ThreadPoolExecutor

    objects = [s.with_suffix(".o") for s in sources]
    main_cmd = [c for c in cmd if c != "-shared"] + ["-c"]
    part_cmd = [PART_OPT if c == "-O2" else c for c in main_cmd]
    jobs = [(main_cmd if k == 0 else part_cmd) + ["-o", str(o), str(s)] for k, (s, o) in enumerate(zip(sources, objects))]
    with ThreadPoolExecutor(max_workers=n_jobs or os.cpu_count() or 1) as pool:
        try:
            list(pool.map(_run, jobs))
        except BaseException:  # Ctrl-C or SIGTERM here: stop the other compilers, or the pool waits for them
            from . import workdir

            workdir.kill_all()
            raise
    _run([cmd[0], "-shared", "-o", str(out)] + [str(o) for o in objects] + ["-lm"])
    return Path(out)


def build_shared(source: str, flags=None, extension=False) -> Path:
    """Path of the compiled library of ``source`` (compiling it if no verified copy is cached).

    ``extension=True``: a CPython extension module (see :func:`compile_command`)."""
    cmd, suffix, tag = compile_command(flags, extension)
    key = hashlib.sha256(("\0".join(cmd + [tag]) + "\0" + source).encode()).hexdigest()[:24]
    lib = cache_dir() / f"fm_{key}{suffix}"
    if verified(lib):
        return lib
    with locked(lib):
        if verified(lib):  # another process built it while we waited
            return lib
        from .workdir import work_folder

        with work_folder(cache_dir()) as tmp:
            src = Path(tmp) / "model.c"
            src.write_text(source)
            publish(compile_into([src], Path(tmp) / f"model{suffix}", cmd), lib)
    return lib


def build_executable(source_path, exe_path, flags=("-O2",)):
    from . import workdir

    cmd = [compiler(), *flags, "-o", str(exe_path), str(source_path), "-lm"]
    res = workdir.run(cmd)
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
