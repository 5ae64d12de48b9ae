"""The ``flexman`` command: one module per command group, each with a ``register(sub)`` that adds its
subcommands, and this entry point.

Each subcommand is one ``cmd_<name>(args) -> int`` function. Every command takes a model path or a
bundled example name and ``--json`` for machine-readable output on stdout. User errors (bad model
files, missing files, bad option values) print one line ``flexman: error: <message>`` to stderr and
exit 2.
"""
from __future__ import annotations

import os
import sys

import numpy as np

from . import cache, derive, export, frequencies, info, new, parameters, plan, simulate, statics, sweep, validate
from .common import FORMULATIONS, Parser, UsageError
from .validate import validation_cases
from ..extras import MissingExtra
from ..model.errors import ModelError
from ..model.names import printable
from ..outputs import Terminated, remove_unused_folders, terminable

__all__ = ["FORMULATIONS", "build_parser", "main", "validation_cases"]

# The order of the commands in `flexman --help`.
COMMAND_GROUPS = (info, simulate, plan, sweep, frequencies, statics, derive, export, parameters, new, validate, cache)


def build_parser() -> Parser:
    """The whole ``flexman`` parser: every command group registers its subcommands."""
    from ..version import __version__

    parser = Parser(prog="flexman", description="Robot manipulators with rigid and flexible links.")
    parser.add_argument("--version", action="version", version=f"flexman {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in COMMAND_GROUPS:
        group.register(sub)
    return parser


def main(argv=None) -> int:
    """Entry point of the ``flexman`` console script; returns the exit status."""
    try:
        args = build_parser().parse_args(argv)
        # a termination signal anywhere in the command runs its cleanup (Terminated, below)
        with np.errstate(all="ignore"), terminable():  # overflow in a diverging run is reported once, as a result
            return args.func(args)
    except BrokenPipeError:  # e.g. `flexman info arm.yaml | head`: not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (UsageError, ModelError, ValueError, OSError, MissingExtra) as exc:
        message = " ".join(str(exc).split()) or type(exc).__name__
        if isinstance(exc, OSError) and exc.strerror:
            message = f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
        print(f"flexman: error: {printable(message, limit=2000)}", file=sys.stderr)  # names from files escaped
        remove_unused_folders()
        if os.environ.get("FLEXMAN_DEBUG"):
            raise
        return 2
    except KeyboardInterrupt:
        remove_unused_folders()
        print("flexman: interrupted", file=sys.stderr)
        return 130
    except Terminated as exc:  # SIGTERM/SIGHUP: files being written were removed, and empty new folders
        remove_unused_folders()
        print(f"flexman: {exc}; no partial files left", file=sys.stderr)
        return 128 + exc.signum
    except Exception as exc:  # a bug: still one line, with a way to see the traceback
        remove_unused_folders()
        if os.environ.get("FLEXMAN_DEBUG"):
            raise
        print(f"flexman: error: internal error: {type(exc).__name__}: {printable(' '.join(str(exc).split()), 2000)} "
              "(set FLEXMAN_DEBUG=1 for a traceback)", file=sys.stderr)
        return 1
