"""Simulation: integrators (fixed-step RK4, SciPy's adaptive and stiff methods) and results.

``flexman.simulate`` is also callable, so ``fm.simulate(robot, ...)`` works whether the
attribute holds the function or (once this package is imported) the package itself.
"""
import sys
import types

from .batch import BatchResult, simulate_batch
from .core import simulate
from .run import torque_input
from .integrators import METHODS
from .result import Result

__all__ = ["simulate", "simulate_batch", "Result", "BatchResult", "METHODS", "torque_input"]


class _CallableModule(types.ModuleType):
    """Importing a subpackage rebinds ``flexman.simulate`` to it; keep it callable."""

    def __call__(self, *args, **kwargs):
        return simulate(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
