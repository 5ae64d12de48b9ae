"""Edits of model objects, counted: the cheap validity check of the robot's fast paths.

A robot's methods may route to its compiled model (:meth:`flexman.model.robot.Robot._fast_model`).
Checking the robot's full content key on every call costs several microseconds, more than the
compiled call itself, so the model objects count their edits instead:

* every attribute assignment on a model object (:class:`Tracked`: bodies, beams, placements,
  drives, links, robots) adds one to the process-wide :data:`EDITS`;
* the arrays they hold are read-only copies (edit a value by assigning a new array:
  ``body.com = [0.1, 0, 0]``), and their lists and dicts (``robot.links``, ``robot.frames``,
  ``beam.modes``) are :class:`TrackedList` / :class:`TrackedDict`, which count their edits too.

A fast path remembers :data:`EDITS` when it checked the content; while the count is unchanged,
nothing in any model can have changed. Any edit anywhere sends every robot back to the full check
once (cheap enough: it happens after edits, not per call).
"""
from __future__ import annotations

import numpy as np

#: the number of edits made to model objects in this process (one element: updated in place)
EDITS = [0]
#: the number of compiled models loaded in this process: a robot that had none looks again
BUILT = [0]


def edited() -> None:
    """Count an edit."""
    EDITS[0] += 1


def model_loaded() -> None:
    """Count a compiled model loaded (or built): robots without one look for theirs again."""
    BUILT[0] += 1
    EDITS[0] += 1


def frozen(value):
    """``value`` as a model object holds it: a read-only copy of an array, a tracked list or dict
    (a copy: the caller's own object stays theirs), tuples with their arrays frozen."""
    kind = type(value)
    if kind is np.ndarray:
        out = value.copy()
        out.flags.writeable = False
        return out
    if kind is list:
        return TrackedList(value)
    if kind is dict:
        return TrackedDict(value)
    if kind is tuple and any(type(v) is np.ndarray for v in value):
        return tuple(frozen(v) if type(v) is np.ndarray else v for v in value)
    return value


class Tracked:
    """Mixin of the model's data classes: assignments are counted and their values frozen."""

    def __setattr__(self, name, value):
        EDITS[0] += 1
        object.__setattr__(self, name, frozen(value))

    def __getstate__(self):  # a cached compiled model is not copied or pickled with the object
        return {k: v for k, v in self.__dict__.items() if k != "_fast"}

    def __setstate__(self, state):  # unpickled or deep-copied: arrays frozen again
        EDITS[0] += 1
        for key, value in state.items():
            self.__dict__[key] = frozen(value) if not key.startswith("_") else value


def _counted(base, name):
    """``base.name`` (a list or dict method that edits in place), counting the edit."""
    edit = getattr(base, name)

    def method(self, *args, **kwargs):
        EDITS[0] += 1
        return edit(self, *args, **kwargs)
    method.__name__ = name
    return method


class TrackedList(list):
    """A list whose edits are counted (:data:`EDITS`)."""

    def __reduce_ex__(self, protocol):  # copies and pickles stay tracked lists
        return TrackedList, (list(self),)


class TrackedDict(dict):
    """A dict whose edits are counted (:data:`EDITS`); arrays inside its values are frozen."""

    def __init__(self, *args, **kwargs):
        super().__init__()
        for key, value in dict(*args, **kwargs).items():
            dict.__setitem__(self, key, frozen(value))

    def __setitem__(self, key, value):
        EDITS[0] += 1
        dict.__setitem__(self, key, frozen(value))

    def update(self, *args, **kwargs):
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return dict.__getitem__(self, key)

    def __ior__(self, other):
        self.update(other)
        return self

    def __reduce_ex__(self, protocol):
        return TrackedDict, (dict(self),)


for _name in ("__setitem__", "__delitem__", "__iadd__", "__imul__", "append", "extend", "insert", "pop", "remove",
              "clear", "sort", "reverse"):
    setattr(TrackedList, _name, _counted(list, _name))
for _name in ("__delitem__", "pop", "popitem", "clear"):  # (setting items freezes them: TrackedDict.__setitem__)
    setattr(TrackedDict, _name, _counted(dict, _name))
del _name
