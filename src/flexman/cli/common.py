"""Helpers shared by the ``flexman`` command modules: the one-line usage error and the parser that
raises it, the options every command shares, loading a model, compact numbers, JSON
output and the console tables are printed on."""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys

import numpy as np

from ..model import limits as lim


class UsageError(Exception):
    """A bad command line: reported as one line, exit status 2."""


def console():
    """Rich console; when piped, wide enough that tables do not wrap names and citations."""
    from rich.console import Console

    con = Console()
    return con if con.is_terminal else Console(width=160)


def to_plain(value):
    """NumPy values to JSON-ready Python values."""
    if isinstance(value, dict):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return to_plain(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else str(value)
    return value


def print_json(data) -> None:
    """``data`` as indented JSON on stdout."""
    print(json.dumps(to_plain(data), indent=2))


def load_model(spec: str):
    """A robot from a model file or a bundled example name."""
    from .. import load

    return load(spec)


def fmt(x) -> str:
    """Compact text for a number or an array of numbers."""
    arr = np.asarray(x, dtype=float) if not isinstance(x, str) else None
    if arr is None:
        return x
    if arr.ndim == 0:
        return f"{float(arr):.6g}"
    return "[" + ", ".join(f"{v:.6g}" for v in arr.reshape(-1)) + "]"


#: the largest magnitude a command-line joint value may have, by the option's kind (rad or m and
#: their rates; torques in N m or N): past these a run or an analysis only produces overflow
MAGNITUDES = {"position": lim.MAX_JOINT_POSITION, "rate": lim.MAX_JOINT_RATE,
              "acceleration": lim.MAX_JOINT_ACCELERATION, "torque": lim.MAX_FORCE}


def vector(values, n_allowed, what: str, kind: str = "position"):
    """A command-line vector, checked against the allowed lengths and the magnitude of its
    ``kind`` (:data:`MAGNITUDES`: 1e300 as a joint angle is refused, not run into NaN)."""
    if values is None:
        return None
    arr = np.asarray(values, dtype=float)
    if arr.size not in n_allowed:
        want = " or ".join(str(n) for n in sorted(set(n_allowed)))
        noun = "value" if want == "1" else "values"
        raise UsageError(f"{what}: expected {want} {noun} (got {arr.size})")
    bound = MAGNITUDES[kind]
    if arr.size and np.abs(arr).max() > bound:
        k = int(np.argmax(np.abs(arr)))
        raise UsageError(f"{what}: value {k + 1} ({arr[k]:g}) is beyond the supported magnitude {bound:g} of a joint "
                         f"{kind}; give a physical value")
    return arr


def state_vector(robot, values, what: str, kind: str = "position"):
    """Joint values (the flexible coordinates at rest, zero) or a whole coordinate vector, from
    the command line; None when not given."""
    v = vector(values, (robot.n_joints, robot.nq), what, kind)
    return None if v is None else np.concatenate([v, np.zeros(robot.nq - v.size)])


FORMULATIONS = ("book", "newton_euler", "denoc", "lagrange")


# What argparse must read as a value, not an option: a negative number in any form a number
# option accepts (argparse's own pattern misses exponents: `--torque -1e-3 0` failed).
NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-(inf|infinity|nan)$", re.IGNORECASE)


def finite_number(text: str) -> float:
    """A command-line number: any float spelling (``1e9``, ``-1.5E-3``), finite."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def whole_number(text: str) -> int:
    """A command-line count: ``37``, ``1e3`` (a whole number in any float spelling)."""
    try:
        return int(text)
    except ValueError:
        value = finite_number(text)
    if not value.is_integer():
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}")
    return int(value)


class _Formatter(argparse.HelpFormatter):
    """argparse's help formatter, with the terminal width read as ``shutil.get_terminal_size``
    reads it (COLUMNS, else the terminal, else 80) but without importing shutil: argparse makes
    a formatter for every option it adds, and every command starts with the whole parser."""

    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None):
        if width is None:
            try:
                width = int(os.environ.get("COLUMNS", "0"))
            except ValueError:
                width = 0
            if width <= 0:
                try:
                    width = os.get_terminal_size(sys.__stdout__.fileno()).columns
                except (AttributeError, ValueError, OSError):
                    width = 0
            width = (width or 80) - 2
        super().__init__(prog, indent_increment, max_help_position, width)


class Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors are one line (no usage dump) and exit 2, that reads negative
    numbers in exponent form as values, and whose number options (``type=float`` or ``int``) read
    every float spelling and refuse nan and inf: one way to read numbers for every command
    (subcommand parsers are of this class too)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = NEGATIVE_NUMBER

    def add_argument(self, *args, **kwargs):
        return super().add_argument(*args, **_number_type(kwargs))

    def error(self, message):
        raise UsageError(message)


def _number_type(kwargs: dict) -> dict:
    kind = kwargs.get("type")
    if kind is float or kind is int:
        kwargs["type"] = finite_number if kind is float else whole_number
    return kwargs


def subcommand(sub, name: str, func, help: str, model: bool = True, optional_model: bool = False):
    """Register a subcommand with the common MODEL and --json arguments."""
    parser = sub.add_parser(name, help=help, description=help)
    if model:
        parser.add_argument("model", metavar="MODEL", nargs="?" if optional_model else None,
                            help="model file (.yaml/.toml/.json) or bundled example name")
    parser.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    parser.set_defaults(func=func)
    return parser
