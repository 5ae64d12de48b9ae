"""Files flexman writes: checked before the work, published whole or not at all.

* :func:`output_folder` / :func:`output_file` check an output location before a long run or
  derivation (an empty name, a file where a folder is wanted, a folder that cannot be
  written, an existing file without ``force``), so the failure comes first, not last.
* :class:`staged` writes files under temporary names in their own folders and renames them
  into place together when the block ends without error; on an error, Ctrl-C or a termination
  signal (SIGTERM, SIGHUP: turned into :class:`Terminated` while files are staged) the temporary
  files are removed and the old files stay as they were. Renaming within a folder is atomic,
  so a reader sees the old file or the new one, never half of one. (SIGKILL cannot be caught:
  it may leave a ``.partial`` file, never a half-written final one.)
"""
from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

#: signals whose default action ends the process without cleaning up; caught while files are staged
CLEANUP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


class Terminated(SystemExit):
    """A termination signal received while files were being written: raised so that every
    ``finally`` runs (the temporary files are removed). A SystemExit with status 128 + signum:
    a script that does not catch it ends as the signal would have ended it, without a traceback."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(128 + signum)

    def __str__(self):
        return f"terminated by {signal.Signals(self.signum).name}"


def _terminate(signum, frame):
    raise Terminated(signum)


class terminable:
    """While the block runs (in the main thread, where signals are handled), SIGTERM and SIGHUP
    raise :class:`Terminated`, so that every ``finally`` inside it runs; a handler a caller set
    (or an outer block) stays."""

    def __enter__(self):
        self.handlers = {}
        _install(CLEANUP_SIGNALS, _terminate, lambda current: current == signal.SIG_DFL, self.handlers)
        return self

    def __exit__(self, kind, exc, tb):
        _restore(self.handlers)
        return False


def _install(signals, handler, replaces, previous: dict) -> None:
    """Set ``handler`` for each of ``signals`` whose current handler ``replaces(current)`` accepts
    (signals are handled in the main thread only: elsewhere nothing), recording each previous
    handler in ``previous`` as it goes (a signal arriving midway leaves a record to restore)."""
    if threading.current_thread() is threading.main_thread():
        for sig in signals:
            if replaces(signal.getsignal(sig)):
                previous[sig] = signal.signal(sig, handler)


def _restore(previous: dict) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)


def _nonempty(path, option: str) -> Path:
    if path is None or not str(path).strip():
        raise ValueError(f"{option}: empty path; give a file or folder name")
    return Path(path)


def _writable(folder: Path, option: str) -> None:
    """Create and remove a probe file: the one test that covers permissions, read-only
    mounts and full disks alike."""
    probe = folder / f".flexman-probe-{os.urandom(4).hex()}"
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ValueError(f"{option}: cannot write in {folder} ({exc.strerror or exc})") from None


#: folders :func:`output_folder` created in this process (for :func:`remove_unused_folders`)
_CREATED: list = []


def output_folder(path, option: str = "--out") -> Path:
    """A folder that exists (created here) and can be written."""
    folder = _nonempty(path, option)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{option}: {folder} is a file; give a folder")
    new = [p for p in (folder, *folder.parents) if not p.exists()]
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"{option}: cannot create the folder {folder} ({exc.strerror or exc})") from None
    _CREATED.extend(new)
    _writable(folder, option)
    return folder


def remove_unused_folders() -> None:
    """Remove the folders :func:`output_folder` created that are still empty: a command stopped
    (an error, Ctrl-C, a termination signal) before it wrote anything leaves no empty folder."""
    for folder in sorted(set(_CREATED), key=lambda p: len(p.parts), reverse=True):
        try:
            folder.rmdir()  # only an empty folder goes
        except OSError:
            pass
    _CREATED.clear()


def output_file(path, option: str = "--out", force: bool = False, protect=()) -> Path:
    """A file that may be written: its folder exists and is writable; an existing file is
    replaced only with ``force``; the files in ``protect`` (the model being read) never."""
    target = _nonempty(path, option)
    if target.is_dir():
        raise ValueError(f"{option}: {target} is a folder; give a file name")
    for other in protect:
        if other is not None and target.exists() and Path(other).exists() and target.samefile(other):
            raise ValueError(f"{option}: {target} is the input file itself; choose another name")
    if target.exists() and not force:
        raise ValueError(f"{option}: {target} exists; remove it or add --force")
    parent = target.parent
    if not parent.is_dir():
        raise ValueError(f"{option}: the folder {parent} does not exist")
    _writable(parent, option)
    return target


class staged:
    """Publish several files together (see the module doc)::

        with staged() as files:
            np.savez(files.path(out / "result.npz"), ...)
            fig.savefig(files.path(out / "result.png"))
    """

    def __init__(self):
        self.pending = []

    def path(self, final) -> Path:
        """The temporary name to write ``final`` under (same folder and extension)."""
        final = Path(final)
        tmp = final.with_name(f".{final.stem}.{os.urandom(4).hex()}.partial{final.suffix}")
        self.pending.append((tmp, final))
        return tmp

    def write_text(self, final, text: str) -> Path:
        self.path(final).write_text(text, encoding="utf-8")
        return Path(final)

    def __enter__(self):
        self.signals = terminable().__enter__()
        return self

    def __exit__(self, kind, exc, tb):
        held = _held_signals()
        try:
            held.hold()
            if kind is None:
                for tmp, final in self.pending:
                    os.replace(tmp, final)
        finally:
            for tmp, _ in self.pending:  # after an error (or a failed rename): no partial files left
                tmp.unlink(missing_ok=True)
            held.release()
            self.signals.__exit__(kind, exc, tb)
            held.deliver()
        return False


class _held_signals:
    """Hold Ctrl-C and termination signals while the staged files are renamed, so that a signal
    cannot publish some of them and not the others; :meth:`deliver` re-raises the first held one
    once the handlers a caller had are back (the files are then complete)."""

    SIGNALS = (signal.SIGINT,) + CLEANUP_SIGNALS

    def __init__(self):
        self.received = []
        self.handlers = {}

    def hold(self):  # (a handler set outside Python, None, is left alone)
        _install(self.SIGNALS, lambda signum, frame: self.received.append(signum), lambda current: current is not None,
                 self.handlers)

    def release(self):
        _restore(self.handlers)
        self.handlers = {}

    def deliver(self):
        if self.received:
            signal.raise_signal(self.received[0])


def write_text(path, text: str) -> Path:
    """Write one text file atomically."""
    with staged() as files:
        files.write_text(path, text)
    return Path(path)
