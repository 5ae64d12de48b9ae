"""Symbolic equations of motion by tracing the numeric algorithms (see :mod:`.tracer`).

``derive(robot, formulation, parameters)`` -> :class:`EOM` with M, b as SymPy matrices,
straight-line programs, operation counts, text/LaTeX, GIM structure, compiled code and export.
"""
from .eom import EOM, FORMULATIONS, derive
from .program import Program
from .tracer import Tape, Tracer

__all__ = ["EOM", "FORMULATIONS", "Program", "Tape", "Tracer", "derive"]
