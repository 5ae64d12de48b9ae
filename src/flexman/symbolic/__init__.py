"""Symbolic equations of motion by tracing the numeric algorithms (see :mod:`.tracer`).

``derive(robot, formulation, parameters)`` -> :class:`EOM` with M, b as SymPy matrices,
straight-line programs, operation counts, text/LaTeX, GIM structure, compiled code and export.
The names are imported on first use: reading a model's parameter vector (:mod:`.params`, at
every compiled run) needs the tracer only.
"""
from ..lazy import lazy_names

_WHERE = {"EOM": "eom", "FORMULATIONS": "eom", "derive": "eom", "Program": "program", "Tape": "tracer",
          "Tracer": "tracer"}


__getattr__, __dir__ = lazy_names(__name__, _WHERE)


__all__ = ["EOM", "FORMULATIONS", "Program", "Tape", "Tracer", "derive"]
