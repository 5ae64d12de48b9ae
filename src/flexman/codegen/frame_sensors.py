"""The frame sensors' program in C: a library with two entry points generated from the traced
programs of :mod:`flexman.symbolic.frame_sensors` (the same emit and build path as a model's
functions, large programs split into parts as theirs are):

- ``void fm_frame_sensors(const double *q, const double *qd, const double *qdd, double *y)``:
  the readings, 3 per frame sensor (``y = h(q, qd, qdd)``);
- ``void fm_frame_sensor_jacobians(q, qd, qdd, double *y, double *Hq, double *Hqd, double *Hqdd)``:
  the readings and their exact Jacobians, each row-major (3 per sensor) x nq;

each with a ``_batch(long n, ...)`` variant over n states. The compiled sampled loop reads the
sensors through the first (:mod:`flexman.codegen.loop_sampled`); a filter that relinearizes in
C can take the second.
"""
from __future__ import annotations

import ctypes

import numpy as np

from ..symbolic import emit
from . import cbuild

#: the C names of the two entry points
READINGS, JACOBIANS = "fm_frame_sensors", "fm_frame_sensor_jacobians"


def c_source(readings, jacobians) -> str:
    """C source of the two entry points from the programs of the readings and of the readings
    with their Jacobians."""
    parts = ["// the frame sensors' readings and their Jacobians (flexman.symbolic.frame_sensors)",
             "#include <math.h>\n#include <stdlib.h>\n"]
    for prog, name in ((readings, READINGS), (jacobians, JACOBIANS)):
        if len(prog.body) > emit.SPLIT_ABOVE:
            parts.append(emit.c_split_source(prog, name))
        else:
            parts.append(emit.function_source("c", prog, name))
        parts.append(emit.c_batch_source(prog, name))
    return "\n".join(parts)


class FrameSensorLibrary:
    """The compiled frame-sensor program of one sensor set: :meth:`readings`, :meth:`jacobians`
    (one state or a batch) and :meth:`address` of an entry point for C callers."""

    def __init__(self, readings, jacobians, flags=None):
        self.nq = len(readings.inputs["q"])
        self.m = int(readings.outputs["y"][0][0])
        self.source = c_source(readings, jacobians)
        self.lib = cbuild.load(cbuild.build_shared(self.source, flags))
        P, L = ctypes.c_void_p, ctypes.c_long
        self.lib.fm_frame_sensors_batch.argtypes = [L] + [P] * 4
        self.lib.fm_frame_sensor_jacobians_batch.argtypes = [L] + [P] * 7
        for fn in (self.lib.fm_frame_sensors_batch, self.lib.fm_frame_sensor_jacobians_batch):
            fn.restype = None

    def address(self, name=READINGS) -> int:
        """The address of an entry point (``fm_frame_sensors`` or ``fm_frame_sensor_jacobians``)."""
        return ctypes.cast(getattr(self.lib, name), ctypes.c_void_p).value

    def _call(self, fn, q, qd, qdd, shapes):
        q, qd, qdd = (np.ascontiguousarray(a, dtype=float) for a in np.broadcast_arrays(q, qd, qdd))
        batch = q.shape[:-1]
        n = int(np.prod(batch, dtype=int))
        outs = [np.empty(batch + s) for s in shapes]
        fn(n, *(a.ctypes.data for a in (q, qd, qdd)), *(o.ctypes.data for o in outs))
        return outs

    def readings(self, q, qd, qdd) -> np.ndarray:
        """y (..., m) at a state or a batch of states."""
        return self._call(self.lib.fm_frame_sensors_batch, q, qd, qdd, [(self.m,)])[0]

    def jacobians(self, q, qd, qdd) -> tuple:
        """(y, dy/dq, dy/dqd, dy/dqdd): (..., m) and three (..., m, nq)."""
        s = (self.m, self.nq)
        return tuple(self._call(self.lib.fm_frame_sensor_jacobians_batch, q, qd, qdd, [(self.m,), s, s, s]))
