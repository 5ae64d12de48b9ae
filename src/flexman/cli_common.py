"""Helpers shared by the ``flexman`` command modules (:mod:`flexman.cli` and
:mod:`flexman.cli_parameters`): the usage error, loading a model, compact numbers, JSON output
and the console tables are printed on."""
from __future__ import annotations

import json
import math

import numpy as np


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
    from . import load

    return load(spec)


def fmt(x) -> str:
    """Compact text for a number or an array of numbers."""
    arr = np.asarray(x, dtype=float) if not isinstance(x, str) else None
    if arr is None:
        return x
    if arr.ndim == 0:
        return f"{float(arr):.6g}"
    return "[" + ", ".join(f"{v:.6g}" for v in arr.reshape(-1)) + "]"


def vector(values, n_allowed, what: str):
    """A command-line vector, checked against the allowed lengths."""
    if values is None:
        return None
    arr = np.asarray(values, dtype=float)
    if arr.size not in n_allowed:
        want = " or ".join(str(n) for n in sorted(set(n_allowed)))
        noun = "value" if want == "1" else "values"
        raise UsageError(f"{what}: expected {want} {noun} (got {arr.size})")
    return arr
