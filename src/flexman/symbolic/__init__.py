"""Symbolic equations of motion by tracing the numeric algorithms (see :mod:`.tracer`).

``derive(robot, formulation, parameters)`` -> :class:`EOM` with M, b as SymPy matrices,
straight-line programs, operation counts, text/LaTeX, GIM structure, compiled code and export.
The names are imported on first use: reading a model's parameter vector (:mod:`.params`, at
every compiled run) needs the tracer only.
"""
import importlib

_WHERE = {"EOM": "eom", "FORMULATIONS": "eom", "derive": "eom", "Program": "program", "Tape": "tracer",
          "Tracer": "tracer"}


def __getattr__(name):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_WHERE))


__all__ = ["EOM", "FORMULATIONS", "Program", "Tape", "Tracer", "derive"]
