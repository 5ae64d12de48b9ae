"""A reduced model's run in the compiled loop (:mod:`flexman.codegen.loop_reduced`): RK4,
generalized-alpha or Radau IIA (radau5), the dropped coordinates iterated in C as
:meth:`flexman.analysis.reduction.Reduced.solve` does. The implicit methods' Newton Jacobian
comes from the full model's partial derivatives when its derivative variant is built
(``compiled_loop.partials_model``), else by forward differences of the reduced right-hand side.

The full robot's compiled loop (:func:`flexman.simulate.compiled_loop.plan`: its compiled model,
its built-in controller and torque) is wrapped with the reduction's split of the coordinates,
its Newton matrix, its tolerances and its warm start; the run writes the last solution back into
the reduced model, so the Python solve that fills the samples' dropped coordinates afterwards
starts where the C loop ended.
"""
from __future__ import annotations

import ctypes
import time

import numpy as np

from ..codegen import loop, loop_reduced
from ..codegen.loop_radau import COUNTS
from .compiled_loop import LoopUnavailable, _radau_stats, plan, run_info
from .integrators import RHO_INF
from .run import warn_fault

METHODS = ("rk4", "generalized_alpha", "radau5")  # the methods of a reduced model's compiled loop


class ReducedLoop:
    """The compiled loop of one run of ``slaved`` (a :class:`~flexman.analysis.reduction.Reduced`
    whose M and b come from the full robot's compiled model), around ``compiled``, the full
    robot's :class:`~flexman.simulate.compiled_loop.CompiledLoop` (its plant and controller)."""

    def __init__(self, compiled, slaved):
        self.compiled, self.slaved, self.lib = compiled, slaved, compiled.lib
        nq, nj = slaved.robot.nq, slaved.n_joints
        self.active = np.ascontiguousarray(slaved.active, dtype=np.intc)
        self.dropped = np.ascontiguousarray(slaved.dropped, dtype=np.intc)
        self.newton = np.ascontiguousarray(slaved.newton_matrix, dtype=float)
        self.last = slaved.warm_start  # written in place by both loops: the warm start goes on
        self.scratch = np.zeros(self.lib.fm_reduced_work_size(nq, nj))
        ints, doubles = ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_double)
        self.struct = loop.ReducedPlant(
            full=compiled.plant, na=len(self.active), nd=len(self.dropped), slaved=int(slaved.static),
            max_iterations=slaved.max_iterations, active=self.active.ctypes.data_as(ints),
            dropped=self.dropped.ctypes.data_as(ints), newton=self.newton.ctypes.data_as(doubles),
            tol=slaved.tol, floor=slaved.floor, last=self.last.ctypes.data_as(doubles),
            scratch=self.scratch.ctypes.data_as(doubles))

    def run(self, x0, t_grid, label="simulate", stacklevel=3, method="rk4", rho_inf=RHO_INF, rtol=1e-8, atol=1e-10,
            max_step=np.inf):
        """(t, X, taus, stats) of one RK4, generalized-alpha or radau5 run from x0 = [q_a, qd_a, z]
        over t_grid (as ``CompiledLoop.run``); the one-line error of ``Reduced.solve`` when the
        dropped coordinates do not converge. ``stats["rhs_evaluations"]``: the reduced right-hand
        sides evaluated (each one solve of the dropped coordinates), counted in C."""
        x0, t_grid = (np.ascontiguousarray(v, dtype=float) for v in (x0, t_grid))
        n_t, nx, nj = len(t_grid), len(x0), self.slaved.n_joints
        X, taus = np.empty((n_t, nx)), np.empty((n_t, nj))
        n_out, t_fault = ctypes.c_long(0), ctypes.c_double(np.nan)
        P = ctypes.POINTER(ctypes.c_double)
        self.struct.solves = self.struct.iterations = 0
        start = time.perf_counter()
        counts = [ctypes.c_long(0) for _ in range(3)]  # Newton iterations, Jacobians, analytic ones
        common = (ctypes.byref(self.struct), ctypes.byref(self.compiled.control), t_grid.ctypes.data_as(P), n_t,
                  x0.ctypes.data_as(P), nx, 1)
        out = (X.ctypes.data_as(P), taus.ctypes.data_as(P), ctypes.byref(n_out), ctypes.byref(t_fault))
        radau = np.zeros(len(COUNTS), dtype=np.int_)
        if method == "generalized_alpha":
            status = self.lib.fm_reduced_galpha_run(*common, float(rho_inf), *out, *(ctypes.byref(v) for v in counts))
        elif method == "radau5":
            status = self.lib.fm_reduced_radau_run(*common, float(rtol), float(atol), float(max_step), *out,
                                                   radau.ctypes.data_as(ctypes.POINTER(ctypes.c_long)))
        else:
            status = self.lib.fm_reduced_rk4_run(*common, *out)
        wall = time.perf_counter() - start
        if status == loop_reduced.NOT_CONVERGED:
            raise ValueError(self.slaved.not_converged())
        if status == 4:
            raise MemoryError("the compiled loop could not allocate its work space")
        k = n_out.value
        t_out, X, taus = t_grid[:k], X[:k], taus[:k]
        steps = int(radau[0]) if method == "radau5" else n_t - 1 if status == 0 else k - 1
        info = run_info(status, t_fault.value, steps, method, rho_inf)
        if status:
            warn_fault(label, method, info, t_out, stacklevel)
        solves = max(self.struct.solves, 1)
        stats = {"wall_time": wall, "loop": "compiled", "reduced_iterations": self.struct.iterations / solves, **info}
        if method == "generalized_alpha":
            iterations, jacobians, analytic = (v.value for v in counts)
            stats.update(newton_iterations=iterations, jacobians=jacobians,
                         jacobian="analytic" if analytic == jacobians else "finite differences" if not analytic
                         else "analytic where the law allows")
        elif method == "radau5":
            stats.update(_radau_stats(radau))
        stats["rhs_evaluations"] = int(self.struct.solves)
        return t_out, X, taus, stats


def plan_reduced(slaved, model, method, nj, controller, torque, t_grid, loop="auto"):
    """(ReducedLoop or None, reason) of a reduced model's run, as ``compiled_loop.plan`` (its
    ``loop`` choices): compiled when the full robot's run would be and the method is one of
    :data:`METHODS` (an implicit method's plant carries the full model's partial derivatives,
    which fm_reduced_jacobian turns into the reduced right-hand side's)."""
    choice = "auto" if loop is None else str(loop).lower()  # other values: plan's one-line error
    if choice in ("auto", "compiled") and method not in METHODS:
        why = f"method {method!r}: a reduced model's compiled loop runs rk4, generalized_alpha and radau5"
        if choice == "compiled":
            raise LoopUnavailable(f"loop='compiled': {why}")
        return None, why
    compiled, why = plan(model, method, nj, controller, torque, t_grid, loop=loop)
    if compiled is None:
        return None, why
    return ReducedLoop(compiled, slaved), why
