"""One input normalisation for every public function that takes states, torques or links.

Accepted: NumPy arrays, lists and tuples (nested for batches), ints, and a plain number where
a single value is expected (nq = 1). Every array gets the leading batch dimensions the
dynamics accept, ``(..., n)``; a column vector ``(n, 1)`` is read as one state. Complex
arrays are kept (complex-step derivatives) and so are arrays of symbols (symbolic tracing).

Anything else is a ``ValueError`` with one line that names the argument and what it must be,
e.g. ``q: expected nq = 7 values per state (last axis), got shape (8,)``.
"""
from __future__ import annotations

import numbers

import numpy as np

__all__ = ["real", "array", "vector", "state", "joint_values", "states", "link_index", "link_frame", "point", "positive", "finite"]


def _shape_text(arr) -> str:
    return "a single number" if arr.ndim == 0 else f"shape {arr.shape}"


def _is_symbol(x) -> bool:
    """A symbolic scalar (SymEngine, SymPy, the tracer's): not a number, but has arithmetic."""
    if isinstance(x, (numbers.Number, np.generic, str, bytes, type(None), dict, list, tuple, set)):
        return False
    return all(hasattr(x, op) for op in ("__add__", "__mul__", "__radd__", "__rmul__", "__neg__"))


def array(value, name: str) -> np.ndarray:
    """A float (or complex, or symbolic object) array of any shape; text, None, mappings,
    booleans and ragged lists are refused."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "fc":
        return value.astype(float) if value.dtype.kind == "f" and value.dtype != np.float64 else value
    if value is None or isinstance(value, (str, bytes, dict, set)):
        raise ValueError(f"{name}: expected numbers (a list or array), got {type(value).__name__}")
    try:
        arr = np.asarray(value)
    except ValueError:  # ragged nesting
        raise ValueError(f"{name}: expected a rectangular array of numbers (rows of equal length)") from None
    kind = arr.dtype.kind
    if kind in "iuf":
        return arr.astype(float)
    if kind == "c":
        return arr
    if kind == "b":
        raise ValueError(f"{name}: expected numbers, got booleans")
    if kind == "O":
        flat = arr.reshape(-1)
        if all(isinstance(x, numbers.Real) and not isinstance(x, bool) for x in flat):
            return arr.astype(float)
        if flat.size and all(_is_symbol(x) or isinstance(x, numbers.Real) for x in flat):
            return arr  # symbols (among numbers): traced by the same algorithms
    found = {"U": "text", "S": "text", "O": "other objects"}.get(kind, arr.dtype.name)
    raise ValueError(f"{name}: expected numbers, got {found}")


def vector(value, n: int, name: str, what: str = "") -> np.ndarray:
    """``value`` as an array (..., n): ``what`` names n in the message ("nq", "n_joints")."""
    arr = array(value, name)
    what = f"{what} = " if what else ""
    if arr.ndim == 0:
        if n != 1:
            raise ValueError(f"{name}: expected {what}{n} values per state, got a single number")
        return arr.reshape(1)
    if arr.shape[-1] != n:
        if arr.ndim == 2 and arr.shape == (n, 1):
            return arr.reshape(n)  # a column vector: one state
        raise ValueError(f"{name}: expected {what}{n} values per state (last axis), got {_shape_text(arr)}")
    return arr


def state(robot, value, name: str = "q") -> np.ndarray:
    """Coordinates (..., nq): q, qd or qdd."""
    return vector(value, robot.nq, name, "nq")


def joint_values(robot, value, name: str = "tau") -> np.ndarray:
    """One value per joint (..., n_joints): joint torques and forces."""
    return vector(value, robot.n_joints, name, "n_joints")


def states(robot, **named) -> list:
    """Several coordinate arrays at once, checked to share a batch shape (broadcasting).
    ``tau`` is read per joint, everything else per coordinate."""
    out = [joint_values(robot, v, k) if k == "tau" else state(robot, v, k) for k, v in named.items()]
    batch_shape(dict(zip(named, out)))
    return out


def batch_shape(arrays: dict) -> tuple:
    """The common batch shape of ``{name: array (..., n)}`` (broadcast), or a one-line error naming
    every shape."""
    try:
        return np.broadcast_shapes(*(a.shape[:-1] for a in arrays.values()))
    except ValueError:
        shapes = ", ".join(f"{k} {a.shape}" for k, a in arrays.items())
        raise ValueError(f"batch shapes do not match: {shapes}; give one state or equal batches") from None


def link_index(robot, link) -> int:
    """A link number in [-n, n) (negative counts from the end), as a Python int: an index into
    ``robot.links`` (a robot with mimic joints has more links than coordinates)."""
    n = len(robot.links)
    if isinstance(link, bool) or not isinstance(link, (numbers.Integral,)):
        raise ValueError(f"link: expected a link number from {-n} to {n - 1}, got {link!r}")
    if not -n <= int(link) < n:
        raise ValueError(f"link: {link} out of range for {n} links (use {-n} to {n - 1})")
    return int(link) % n


def end_effector(robot, frame=None):
    """The end effector to use: ``frame`` (a link's number or name, or a named frame such as a
    URDF's ``tool0``) when given, else the robot's default (``robot.end_effector``, a model
    file's ``end_effector:``), else the last link (-1). Checked: an unknown name is one line
    listing the names."""
    if frame is None:
        frame = getattr(robot, "end_effector", None)
    if frame is None:
        return -1
    link_frame(robot, frame)
    return frame


def frame_name(robot, name, field: str) -> str:
    """``name`` when it names a link or frame of ``robot`` (a URDF's ``tool0``); else one line,
    prefixed by ``field`` (the argument or option that gave it), listing the names."""
    if not isinstance(name, str):
        raise ValueError(f"{field}: give the name of a link or frame (got {type(name).__name__})")
    try:
        link_frame(robot, name)
    except ValueError as exc:
        raise ValueError(f"{field}: {str(exc).removeprefix('link: ')}") from None
    return name


def link_frame(robot, link) -> tuple:
    """(link index, fixed 4x4 transform or None) of a link given by number (as
    :func:`link_index`), by name, or of a named frame of the robot (``robot.frames``: index -1
    for a frame on the base)."""
    if isinstance(link, str):
        names = [lk.name for lk in robot.links]
        if link in names:
            return names.index(link), None
        if link in robot.frames:
            return robot.frames[link]
        known = [n for n in names if n] + list(robot.frames)
        n = len(names)
        raise ValueError(f"link: expected a link number from {-n} to {n - 1} or the name of a link or frame; "
                         f"no link or frame is named {link!r} (names: {', '.join(known) or 'none'})")
    return link_index(robot, link), None


def point(value, name: str = "point"):
    """A point (3,) in a link frame, or None."""
    if value is None:
        return None
    arr = real(array(value, name), name)
    if arr.shape != (3,):
        raise ValueError(f"{name}: expected 3 numbers [x, y, z], got {_shape_text(arr)}")
    return arr


def real(arr, name: str) -> np.ndarray:
    """``arr`` when it holds real numbers (where complex values have no meaning)."""
    if np.iscomplexobj(arr):
        raise ValueError(f"{name}: expected real numbers, got complex ones")
    return arr


def positive(value, name: str, allow_zero: bool = False) -> float:
    """A finite number > 0 (or >= 0): step sizes, tolerances, times."""
    bound = ">= 0" if allow_zero else "> 0"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name}: expected a number {bound}, got {type(value).__name__}")
    value = float(value)
    if not np.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"{name}: expected a finite number {bound}, got {value!r}")
    return value


def physical_state(arr, name: str, kind: str) -> np.ndarray:
    """``arr`` (finite) when no entry is beyond the supported magnitude of a joint ``kind``
    ("position", "rate", "acceleration": README, Limits), so that 1e308 is refused rather than
    overflowing to NaN in the dynamics."""
    from .limits import MAX_JOINT_ACCELERATION, MAX_JOINT_POSITION, MAX_JOINT_RATE

    bound = {"position": MAX_JOINT_POSITION, "rate": MAX_JOINT_RATE, "acceleration": MAX_JOINT_ACCELERATION}[kind]
    arr = finite(arr, name)
    if arr.size and np.abs(arr).max() > bound:
        k = int(np.argmax(np.abs(arr)))
        raise ValueError(f"{name}[{k}] = {arr.flat[k]:g} is beyond the supported magnitude {bound:g} of a joint {kind} "
                         "(README, Limits); give a physical value")
    return arr


def finite(arr, name: str) -> np.ndarray:
    """``arr`` when every entry is finite; else say which entry is not."""
    arr = np.asarray(arr)
    if arr.dtype.kind in "fc" and not np.all(np.isfinite(arr)):
        index = tuple(int(i) for i in np.argwhere(~np.isfinite(arr))[0])
        at = f"[{', '.join(map(str, index))}]" if index else ""
        bad = arr[index].item()
        raise ValueError(f"{name}{at} is {bad!r}; every entry must be a finite number")
    return arr
