"""Which loop a run takes, and the compiled one: a whole fixed-step RK4 run in one C call.

A run goes through the **compiled loop** (:mod:`flexman.codegen.loop`: the controller law, its
reference trajectory, the dynamics and RK4 all in C, output sampling included) when everything
in it is known to C: the method is ``"rk4"``, the dynamics are a compiled C model, the controller
is none or a built-in one (:class:`~flexman.control.PID`, ``ComputedTorque``, ``Decoupling``,
also from a model file; their saturation and switch-off times included) whose reference is a
built-in trajectory (``rest_to_rest``, ``spline``, ``spin_up``, a ``FourierSeries``, model-file
manoeuvres, any of them input-shaped), and the applied ``torque`` is none, constant or sampled. Prescribed motion
with a built-in trajectory runs there too. Anything written in Python (a controller or torque
function, a hand-written trajectory, a subclass overriding a law) keeps the **Python loop**
(:func:`flexman.simulate.run.integrate`), which calls it at every stage.

:func:`plan` says which, and why not compiled; ``loop="python"`` forces the Python loop (the
reference the tests compare against), ``loop="compiled"`` makes "not compiled" an error.
"""
from __future__ import annotations

import ctypes
import os
import sys
import time

import numpy as np

from ..codegen import loop as cloop
from ..codegen.loop_radau import BATCH_METHODS, COUNTS
from .integrators import RHO_INF
from .run import check_first_torque, torque_values, warn_fault

LOOPS = ("auto", "compiled", "python")
IMPLICIT = tuple(BATCH_METHODS)  # the implicit methods of the compiled loop (Newton with the model's partials)
_P = ctypes.POINTER(ctypes.c_double)


def _ptr(a):
    return None if a is None else a.ctypes.data_as(_P)


def _array(a):
    return np.ascontiguousarray(a, dtype=float)


def trajectory_struct(traj, n, keep):
    """A ``loop.Traj`` for a built-in trajectory of ``n`` joints (arrays it points to go into
    ``keep``), or None when the trajectory is not one C knows. An input-shaped trajectory
    (:class:`flexman.control.shaping.ShapedTrajectory`) is its base's struct plus the impulses
    (amplitudes and delays as data: a new shaper never recompiles)."""
    from ..trajectory import FourierSeries, SpinUp, Trajectory

    shaping = sys.modules.get("flexman.control.shaping")  # not imported: no shaped trajectory exists
    if shaping is not None and type(traj) is shaping.ShapedTrajectory:
        s = trajectory_struct(traj.base, n, keep)
        if s is None or s.n_shift or getattr(traj, "n", None) != n:
            return None  # a base C does not know, or shaped twice
        amplitudes, times = (_array(v) for v in traj.impulses)
        if amplitudes.ndim != 1 or amplitudes.shape != times.shape or not amplitudes.size:
            return None
        keep.extend((amplitudes, times))
        s.n_shift, s.shift_a, s.shift_t = amplitudes.size, _ptr(amplitudes), _ptr(times)
        return s
    kind = getattr(traj, "kind", None)
    if type(traj) not in (Trajectory, SpinUp, FourierSeries) or kind not in cloop.TRAJ_KINDS or getattr(traj, "n", None) != n:
        return None
    s = cloop.Traj(kind=cloop.TRAJ_KINDS[kind], n=n, t_start=traj.t_start, t_end=traj.t_end)
    if kind == "rest_to_rest":
        if traj.profile not in cloop.PROFILES:
            return None
        s.profile = cloop.PROFILES[traj.profile]
        data = np.concatenate([traj.q_start, traj.q_end - traj.q_start])
    elif kind == "spin_up":
        data = np.concatenate([traj.q_start, traj.rate])
    elif kind == "fourier":
        if traj.a.shape != (n, traj.harmonics) or traj.b.shape != traj.a.shape or traj.q0.shape != (n,):
            return None
        s.pieces, s.t_end = traj.harmonics, traj.period
        data = np.concatenate([traj.q0, traj.a.ravel(), traj.b.ravel()])
    else:
        c, c1, c2 = traj.pieces
        m = len(traj.times) - 1
        if c.shape != (4, m, n) or c1.shape != (3, m, n) or c2.shape != (2, m, n):
            return None
        s.pieces = m
        data = np.concatenate([np.ravel(traj.times), c.ravel(), c1.ravel(), c2.ravel()])
    data = _array(data)
    keep.append(data)
    s.a = _ptr(data)
    return s


class CompiledLoop:
    """The C description of one run's plant and controller (structs and the arrays they point
    to), and its integration: :meth:`run` (one run), :meth:`batch` (many)."""

    def __init__(self, model, control, keep, prescribed):
        self.model, self.control, self.keep, self.prescribed = model, control, keep, prescribed
        entries = {w: model.c_entry(w) for w in ("mass_matrix", "bias_forces")}
        takes_p = entries["mass_matrix"][1]
        self.params = _array(model.params) if takes_p else np.zeros(1)
        self.plant = cloop.Plant(nq=model.nq, nj=model.n_joints, has_p=int(takes_p), p=_ptr(self.params),
                                 **{w: address for w, (address, _) in entries.items()})
        if model.robot.n_motors:  # elastic joints: each torque on its motor coordinate (S)
            self.act = np.ascontiguousarray(model.robot.actuated, dtype=np.intc)
            self.plant.act = self.act.ctypes.data_as(ctypes.POINTER(ctypes.c_int))
        limit = model.robot.torque_limits  # the drives' limits on the applied torque (fm_saturate)
        if limit is not None:
            self.tau_limit = _array(limit)
            self.plant.tau_limit = _ptr(self.tau_limit)
        self.lib = cloop.library()

    def use_partials(self, model):
        """Newton's Jacobian from the partial derivatives of ``model`` (the variant of this run's
        model compiled with them: same structure and parameters), not by forward differences;
        False (nothing changed) when that model does not fit."""
        from ..codegen import PARTIALS

        if getattr(model, "backend", None) != "c" or not getattr(model, "has_derivatives", False):
            return False
        if list(model.param_names) != list(self.model.param_names) or model.nq != self.model.nq:
            return False
        (id_, id_p), (fd, fd_p) = (model.c_entry(w) for w in PARTIALS)
        if fd_p != id_p or (fd_p and not self.plant.has_p):
            return False
        self.keep.append(model)  # its library stays loaded while the run holds its addresses
        self.plant.fd_partials, self.plant.id_partials, self.plant.has_p_partials = fd, id_, int(fd_p)
        return True

    def run(self, x0, t_grid, label="simulate", stacklevel=3, method="rk4", rho_inf=RHO_INF, rtol=1e-8, atol=1e-10,
            max_step=np.inf):
        """(t, X, taus, stats) of one RK4, generalized-alpha (``rho_inf``: its spectral radius at
        infinity) or Radau IIA run (``radau5``: ``rtol``, ``atol``, ``max_step``) from x0 over
        t_grid (see ``run.integrate``, its ``label`` and ``stacklevel``)."""
        x0, t_grid = _array(x0), _array(t_grid)
        n_t, nx, nj = len(t_grid), len(x0), self.model.n_joints
        X, taus = np.empty((n_t, nx)), np.empty((n_t, nj))
        n_out, t_fault = ctypes.c_long(0), ctypes.c_double(np.nan)
        iterations, jacobians, analytic = ctypes.c_long(0), ctypes.c_long(0), ctypes.c_long(0)
        counts = np.zeros(len(COUNTS), dtype=np.int_)
        start = time.perf_counter()
        if method == "radau5":
            status = self.lib.fm_radau_run(ctypes.byref(self.plant), ctypes.byref(self.control), int(self.prescribed),
                                           _ptr(t_grid), n_t, _ptr(x0), nx, 1, float(rtol), float(atol),
                                           float(max_step), _ptr(X), _ptr(taus), ctypes.byref(n_out),
                                           ctypes.byref(t_fault), counts.ctypes.data_as(ctypes.POINTER(ctypes.c_long)))
        elif method == "generalized_alpha":
            status = self.lib.fm_galpha_run(ctypes.byref(self.plant), ctypes.byref(self.control), int(self.prescribed),
                                            _ptr(t_grid), n_t, _ptr(x0), nx, 1, float(rho_inf), _ptr(X), _ptr(taus),
                                            ctypes.byref(n_out), ctypes.byref(t_fault), ctypes.byref(iterations),
                                            ctypes.byref(jacobians), ctypes.byref(analytic))
        else:
            status = self.lib.fm_rk4_run(ctypes.byref(self.plant), ctypes.byref(self.control), int(self.prescribed),
                                         _ptr(t_grid), n_t, _ptr(x0), nx, 1, _ptr(X), _ptr(taus), ctypes.byref(n_out),
                                         ctypes.byref(t_fault))
        wall = time.perf_counter() - start
        k = n_out.value
        if status == 4:
            raise MemoryError("the compiled loop could not allocate its work space")
        t_out, X, taus = t_grid[:k], X[:k], taus[:k]
        steps = n_t - 1 if status == 0 else k - 1
        if method == "radau5":
            steps = int(counts[0])
        info = run_info(status, t_fault.value, steps, method, rho_inf)
        if status:
            warn_fault(label, method, info, t_out, stacklevel)
        stats = {"rhs_evaluations": 4 * steps + 1, "wall_time": wall, "loop": "compiled", **info}
        if method == "radau5":
            stats.update(radau_stats(counts))
        elif method == "generalized_alpha":
            # per step the rates at its start and one per Newton iteration; nx per Jacobian by forward
            # differences (none for one from the partial derivatives); the last torque
            fd = jacobians.value - analytic.value
            stats.update(rhs_evaluations=1 + steps + fd * nx + iterations.value, newton_iterations=iterations.value,
                         jacobians=jacobians.value,
                         jacobian="analytic" if analytic.value and not fd else
                         "finite differences" if not analytic.value else "analytic where the law allows")
        return t_out, X, taus, stats

    def batch(self, X0, t_grid, every, n_samples, params=None, threads=None, method="rk4", rho_inf=RHO_INF,
              rtol=1e-6, atol=1e-8, max_step=np.inf):
        """(X (B, n_samples, nx), TAU (B, n_samples, nj), status per run, counts (B, 7) or None): B
        runs from the rows of X0 on one grid, every ``every``-th time sampled; ``params``: one
        parameter vector per run (the plants'; a model-based controller keeps the model's own as its
        nominal model). ``method``: rk4, or generalized_alpha / radau5 (their ``rho_inf``, ``rtol``,
        ``atol``, ``max_step``; counts: fm_radau_run's per run). A run that faults keeps NaN after its
        last good sample. The runs are shared among ``threads`` (default: one per CPU; the C loop runs
        without Python's lock)."""
        X0, t_grid = _array(X0), _array(t_grid)
        B, nx = X0.shape
        nj = self.model.n_joints
        X, TAU = np.full((B, n_samples, nx), np.nan), np.full((B, n_samples, nj), np.nan)
        P = None if params is None or not self.plant.has_p else _array(params)
        status, n_out, t_fault = np.zeros(B, np.intc), np.zeros(B, np.int_), np.zeros(B)
        counts = np.zeros((B, len(COUNTS)), np.int_) if method in IMPLICIT else None

        def runs(lo, hi):
            common = (ctypes.byref(self.plant), ctypes.byref(self.control), int(self.prescribed), _ptr(t_grid),
                      len(t_grid), hi - lo, _ptr(X0[lo:hi]), None if P is None else _ptr(P[lo:hi]),
                      0 if P is None else P.shape[1], nx, int(every), n_samples)
            out = (_ptr(X[lo:hi]), _ptr(TAU[lo:hi]), status[lo:hi].ctypes.data_as(ctypes.POINTER(ctypes.c_int)),
                   n_out[lo:hi].ctypes.data_as(ctypes.POINTER(ctypes.c_long)), _ptr(t_fault[lo:hi]))
            if counts is None:
                self.lib.fm_rk4_batch(*common, *out)
            else:
                self.lib.fm_implicit_batch(*common, BATCH_METHODS[method], float(rho_inf), float(rtol), float(atol),
                                           float(max_step), *out,
                                           counts[lo:hi].ctypes.data_as(ctypes.POINTER(ctypes.c_long)))

        n_threads = max(1, min(B, threads or os.cpu_count() or 1))
        cuts = np.linspace(0, B, n_threads + 1).astype(int)
        if n_threads == 1:
            runs(0, B)
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=n_threads) as pool:
                list(pool.map(runs, cuts[:-1], cuts[1:]))
        return X, TAU, status, counts


def radau_stats(counts):
    """The stats of a radau5 run from fm_radau_run's counts."""
    c = dict(zip(COUNTS, (int(v) for v in counts)))
    analytic = c.pop("analytic_jacobians")
    fd = c["jacobians"] - analytic
    c["jacobian"] = ("analytic" if analytic and not fd else "finite differences" if not analytic else
                     "analytic where the law allows")
    return c


def run_info(status, t_fault, steps, method="rk4", rho_inf=RHO_INF):
    if status == 0:
        name = {"rk4": "fixed-step RK4", "radau5": "Radau IIA (order 5, step-size control)"}.get(
            method, f"fixed-step generalized-alpha (rho_inf = {float(rho_inf):g})")
        return {"steps": steps, "success": True, "diverged": False, "t_fault": None,
                "message": f"{name} finished (compiled loop)"}
    message = {1: "SingularMatrixError: a mass-matrix block is singular at this state",
               2: "FloatingPointError: the applied torque is not finite (torque argument plus controller output)",
               3: "the state became non-finite or an implicit step did not converge (the run diverged)"}[status]
    if status == 3 and method == "radau5":
        message = ("the state became non-finite, or Newton's iteration failed until the step size fell to "
                   "round-off (the run diverged)")
    return {"steps": steps, "success": False, "diverged": True, "t_fault": float(t_fault), "message": message}



class LoopUnavailable(ValueError):
    """loop='compiled' was asked for a run the compiled loop cannot take (the message says why)."""


def plan(model, method, n_joints, controller=None, torque=None, t_grid=None, prescribed=None, loop="auto"):
    """(CompiledLoop or None, reason): the compiled loop of a run when it can take it (see the
    module doc), else None and why, in words. ``loop``: "auto", "compiled" (a ValueError naming
    the reason instead of None) or "python" (always None)."""
    loop = "auto" if loop is None else str(loop).lower()
    if loop not in LOOPS:
        raise ValueError(f"loop: unknown '{loop}'; use one of {', '.join(LOOPS)}")
    if loop == "python":
        return None, "loop='python' was asked for"
    keep = []
    made = _describe(model, method, n_joints, controller, torque, t_grid, prescribed, keep)
    if isinstance(made, str):
        if loop == "compiled":
            raise LoopUnavailable(f"loop='compiled': {made}")
        return None, made
    compiled = CompiledLoop(model, made, keep, prescribed is not None)
    if method in IMPLICIT:
        compiled.use_partials(partials_model(model))
    return compiled, "compiled"


def partials_model(model):
    """The variant of ``model`` compiled with partial derivatives, for the implicit method's
    Newton Jacobian: ``model`` itself when it has them, else the robot's when it is built already
    (this process or the disk cache). When it is not, it is built in the background for the next
    run (``FLEXMAN_BACKGROUND_COMPILE``) and this run differentiates by forward differences."""
    if getattr(model, "has_derivatives", False):
        return model
    robot = getattr(model, "robot", None)
    if robot is None:
        return None
    from ..codegen import background
    from ..codegen.modelcache import existing_model

    found = existing_model(robot, derivatives=True)
    if found is None:
        background.start(robot, derivatives=True)
    return found


def _describe(model, method, nj, controller, torque, t_grid, prescribed, keep):
    """The run's ``loop.Control``, or the reason it cannot be compiled."""
    if method not in ("rk4",) + IMPLICIT:
        return f"method {method!r}: the compiled loop runs rk4, generalized_alpha and radau5"
    if getattr(model, "backend", None) != "c" or not hasattr(model, "c_entry"):
        return "the dynamics are interpreted (no compiled model)"
    if len({model.c_entry(w)[1] for w in ("mass_matrix", "bias_forces")}) != 1:
        return "the compiled model's functions differ in their parameter inputs"
    control = cloop.Control(kind=0, off_at=np.inf, lqr_at=np.inf)
    if prescribed is not None:
        traj = trajectory_struct(prescribed, nj, keep)
        if traj is None:
            return "the prescribed motion is a Python function (not a built-in trajectory)"
        control.traj = traj
        return control
    kind, values = torque_values(torque, t_grid, nj)
    if kind == "callable":
        return "the torque is a Python function torque(t, q, qd)"
    if kind == "constant":
        values = _array(values)
        keep.append(values)
        control.tau_const = _ptr(values)
    elif kind == "samples":
        values, times = _array(values), _array(t_grid)
        keep.extend((values, times))
        control.tau_samples, control.t_samples, control.n_samples = _ptr(values), _ptr(times), len(times)
    if controller is None:
        return control
    spec = controller.loop_spec() if hasattr(controller, "loop_spec") else None
    if spec is None:
        return f"the controller ({type(controller).__name__}) is written in Python"
    if spec["kind"] != "pid" and not controller.designed_on(model):
        return "the controller's model is another robot than the one simulated (its M and b are its own)"
    traj = trajectory_struct(spec["traj"], nj, keep)
    if traj is None:
        return "the controller's reference trajectory is a Python function (not a built-in trajectory)"
    control.traj = traj
    control.kind = cloop.CONTROLLER_KINDS[spec["kind"]]
    for name in ("kp", "ki", "kd", "gp", "gv", "g_lqr", "tau_max"):
        value = spec.get(name)
        if value is not None:
            value = _array(value)
            keep.append(value)
            setattr(control, name, _ptr(value))
    if spec.get("off_at") is not None:
        control.off_at = float(spec["off_at"])
    if spec.get("lqr_at") is not None:
        control.lqr_at = float(spec["lqr_at"])
    return control


def first_torque(total_torque, t0, x0):
    """Bad input before the compiled loop starts: the run's torque at (t0, x0), evaluated by the
    Python laws once, must be finite (the one-line error the Python loop gives)."""
    check_first_torque(t0, total_torque(t0, x0))
