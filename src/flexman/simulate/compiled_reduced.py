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
import os
import time

import numpy as np

from ..codegen import loop, loop_reduced
from ..codegen.loop_radau import COUNTS
from .compiled_loop import LoopUnavailable, radau_stats, plan, run_info
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

    def batch(self, X0, t_grid, every, n_samples, threads=None, method="rk4", rho_inf=RHO_INF, rtol=1e-8, atol=1e-10,
              max_step=np.inf):
        """(X (B, n_samples, nx), TAU (B, n_samples, nj), status, counts (B, 7), last (B, nd)): B runs
        from the rows of X0 = [q_a, qd_a, z] on one grid, every ``every``-th time sampled, in one C
        call per thread (``fm_reduced_batch``; as ``CompiledLoop.batch``). Every run starts its
        iteration from q_d = 0, so a run is the same arithmetic alone or in a batch; ``last``: its
        dropped coordinates at its end. Samples after a run's fault stay NaN."""
        X0, t_grid = (np.ascontiguousarray(v, dtype=float) for v in (X0, t_grid))
        B, nx = X0.shape
        nj, nd = self.slaved.n_joints, len(self.dropped)
        X, TAU = np.full((B, n_samples, nx), np.nan), np.full((B, n_samples, nj), np.nan)
        status, n_out, t_fault = np.zeros(B, np.intc), np.zeros(B, np.int_), np.zeros(B)
        counts, last = np.zeros((B, len(COUNTS)), np.int_), np.zeros((B, nd))
        P, L = ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_long)
        method_code = {"rk4": 0, "generalized_alpha": 1, "radau5": 2}[method]

        def runs(lo, hi, struct):
            self.lib.fm_reduced_batch(ctypes.byref(struct), ctypes.byref(self.compiled.control), method_code,
                                      t_grid.ctypes.data_as(P), len(t_grid), hi - lo, X0[lo:hi].ctypes.data_as(P), nx,
                                      int(every), n_samples, float(rho_inf), float(rtol), float(atol), float(max_step),
                                      X[lo:hi].ctypes.data_as(P), TAU[lo:hi].ctypes.data_as(P),
                                      status[lo:hi].ctypes.data_as(ctypes.POINTER(ctypes.c_int)),
                                      n_out[lo:hi].ctypes.data_as(L), t_fault[lo:hi].ctypes.data_as(P),
                                      counts[lo:hi].ctypes.data_as(L), last[lo:hi].ctypes.data_as(P))

        n_threads = max(1, min(B, threads or os.cpu_count() or 1))
        if n_threads == 1:
            runs(0, B, self.struct)
        else:
            from concurrent.futures import ThreadPoolExecutor

            cuts = np.linspace(0, B, n_threads + 1).astype(int)
            structs = [loop.ReducedPlant.from_buffer_copy(self.struct) for _ in range(n_threads)]  # own counters
            with ThreadPoolExecutor(max_workers=n_threads) as pool:
                list(pool.map(runs, cuts[:-1], cuts[1:], structs))
        if np.any(status == loop_reduced.NOT_CONVERGED):
            raise ValueError(self.slaved.not_converged())
        if np.any(status == 4):
            raise MemoryError("the compiled loop could not allocate its work space")
        return X, TAU, status, counts, last, n_out, t_fault

    def run(self, x0, t_grid, label="simulate", stacklevel=3, method="rk4", rho_inf=RHO_INF, rtol=1e-8, atol=1e-10,
            max_step=np.inf):
        """(t, X, taus, stats) of one RK4, generalized-alpha or radau5 run from x0 = [q_a, qd_a, z]
        over t_grid (as ``CompiledLoop.run``): a batch of one (:meth:`batch`), its last dropped
        coordinates written into the reduced model's warm start. The one-line error of
        ``Reduced.solve`` when the dropped coordinates do not converge.
        ``stats["rhs_evaluations"]``: the reduced right-hand sides evaluated (each one solve of the
        dropped coordinates), counted in C."""
        t_grid = np.ascontiguousarray(t_grid, dtype=float)
        self.struct.solves = self.struct.iterations = 0
        start = time.perf_counter()
        X, taus, status, counts, last, n_out, t_fault = self.batch(np.atleast_2d(x0), t_grid, 1, len(t_grid),
                                                                    threads=1, method=method, rho_inf=rho_inf,
                                                                    rtol=rtol, atol=atol, max_step=max_step)
        wall = time.perf_counter() - start
        self.last[:] = last[0]
        k, status, c = int(n_out[0]), int(status[0]), dict(zip(COUNTS, (int(v) for v in counts[0])))
        t_out, X, taus = t_grid[:k], X[0, :k], taus[0, :k]
        info = run_info(status, t_fault[0], c["steps"], method, rho_inf)
        if status:
            warn_fault(label, method, info, t_out, stacklevel)
        solves = max(self.struct.solves, 1)
        stats = {"wall_time": wall, "loop": "compiled", "reduced_iterations": self.struct.iterations / solves, **info}
        if method == "generalized_alpha":
            stats.update(newton_iterations=c["newton_iterations"], jacobians=c["jacobians"],
                         jacobian=_jacobian_kind(c["jacobians"], c["analytic_jacobians"]))
        elif method == "radau5":
            stats.update(radau_stats(counts[0]))
        stats["rhs_evaluations"] = c["rhs_evaluations"]
        return t_out, X, taus, stats


def _jacobian_kind(jacobians, analytic):
    return ("analytic" if analytic == jacobians else "finite differences" if not analytic else
            "analytic where the law allows")


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
