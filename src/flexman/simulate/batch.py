"""``simulate_batch``: many runs of one robot structure integrated together.

All runs share the time grid and one right-hand side evaluated on the whole batch at once: the
compiled model's batched forward dynamics (one C loop over the states; with ``robots``, each
state with its own parameter vector) and the controller's batched torque law. Two integrators:

* ``"rk4"``: classic fixed-step Runge-Kutta at ``dt`` (the same arithmetic as
  :func:`flexman.simulate` per run, so a batch reproduces single runs to round-off);
* ``"dopri5"``: Dormand-Prince 5(4) with error control; one step size for the whole batch,
  accepted when every run meets ``rtol``/``atol`` (the error norm is the worst run's), and steps
  end on the output times, so no interpolation is involved;
* ``"generalized_alpha"`` and ``"radau5"``: the implicit methods of stiff arms, each run one call
  of the compiled loop (:mod:`.compiled_loop`; ``fm_implicit_batch``, runs shared among threads),
  the same arithmetic as :func:`flexman.simulate` per run; they need the compiled loop (a compiled
  model, a built-in controller or none, no torque function);
* ``"auto"``: RK4 where the step check of :func:`flexman.simulate` (on the robot's own
  parameters and the first run's start state) finds it stable at ``dt``, else generalized-alpha.

A reduced model (``fm.reduce``) runs its batch in the compiled loop only, one C call for all runs
(:func:`flexman.simulate.reduced.simulate_batch_reduced`): each run is :func:`flexman.simulate`'s
arithmetic, and the result holds the full robot's coordinates.

Memory is bounded by the output: only every ``output_every``-th grid sample is stored
(``B x N x nq`` numbers), the stages hold a few ``B x (2 nq + n_states)`` arrays.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..model import inputs
from ..model.checks import require_invertible
from .backend import evaluator, fixed_step_work
from ..codegen.loop_radau import COUNTS
from .compiled_loop import IMPLICIT, LoopUnavailable, plan
from .integrators import RADAU_MIN_RTOL, RHO_INF, alpha_parameters
from .run import Progress, backend_name, controller_parts, drive_limits, output_times, saturate

METHODS = ("rk4", "dopri5") + IMPLICIT

# Dormand-Prince 5(4) tableau (Hairer, Norsett & Wanner, Solving ODEs I, Table 5.2)
_C = np.array([0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0])
_A = [[],
      [1 / 5],
      [3 / 40, 9 / 40],
      [44 / 45, -56 / 15, 32 / 9],
      [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729],
      [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656],
      [35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84]]
_B5 = np.array([35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0])
_B4 = np.array([5179 / 57600, 0.0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100, 1 / 40])


@dataclass
class BatchResult:
    """Time histories of B runs: ``t`` (N,), ``q``/``qd`` (B, N, nq), ``tau`` (B, N, n_joints)
    the torques applied at the output times, ``controller_state`` (B, N, n_states); ``params``
    (B, n_params) the parameter vectors (None: the robot's own); ``stats``."""

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    tau: np.ndarray
    controller_state: np.ndarray
    robot: object = None
    params: np.ndarray | None = None
    method: str = "rk4"
    stats: dict = field(default_factory=dict)

    def __len__(self):
        return self.q.shape[0]


def _batch_inputs(robot, q0, qd0, robots, n):
    nq = robot.nq
    arrays = [np.zeros((1, nq)) if a is None else np.atleast_2d(inputs.finite(inputs.real(inputs.state(robot, a, name), name), name))
              for a, name in ((q0, "q0"), (qd0, "qd0"))]
    for name, a in zip(("q0", "qd0"), arrays):
        if a.ndim != 2 or a.shape[1] != nq:
            raise ValueError(f"{name}: expected shape (batch, {nq}) or ({nq},), got {a.shape}")
    sizes = {len(a) for a in arrays if len(a) > 1} | ({n} if n > 1 else set())
    if len(sizes) > 1:
        raise ValueError(f"q0, qd0, robots: batch sizes differ ({sorted(sizes)})")
    b = sizes.pop() if sizes else 1
    return [np.broadcast_to(a, (b, nq)).copy() for a in arrays], b


def simulate_batch(robot, t_final, dt=1e-3, q0=None, qd0=None, robots=None, controller=None, torque=None,
                   method="rk4", rtol=1e-6, atol=1e-8, output_every=1, progress=None, backend=None,
                   max_steps=10_000_000, loop="auto", rho_inf=RHO_INF, max_step=np.inf):
    """Integrate a batch of runs of ``robot`` over [0, t_final]; see the module docstring.

    ``q0``, ``qd0``: (B, nq) initial states (or one (nq,) state for every run). ``robots``: a
    list of B robots of ``robot``'s structure (other masses, lengths, stiffnesses...): run k uses
    the parameters of ``robots[k]`` (their compiled parameter vectors; interpreted: each its own
    model). ``controller``: one controller whose torque law accepts batched (B, nq) states (the
    PID, computed-torque and decoupling controllers do); ``torque``: a constant (n_joints,) or
    (B, n_joints) torque, or a callable ``torque(t, q, qd)`` on the batch. ``dt``: the RK4
    step and the output grid (``output_every``: keep every k-th grid time). ``progress``: a
    bar over simulated time (None: on a terminal only). ``loop``: with RK4, a compiled model, a
    built-in controller (or none) and no torque function, each run is one call of the compiled
    loop (:mod:`.compiled_loop`, runs shared among threads); ``"python"`` keeps the batched Python
    loop, ``"compiled"`` insists. A model-based controller uses the robot's own model (nominal)
    while each run's plant has its parameters. ``method``: see the module docstring;
    ``rho_inf``: generalized-alpha's damping; ``rtol``, ``atol``: dopri5's and radau5's
    tolerances, ``max_step`` radau5's longest step. ``stats["method"]`` says what ran. A reduced
    model (``fm.reduce``) runs in one call of the compiled loop, every run as :func:`flexman.simulate`
    runs it, the result in the full robot's coordinates (:mod:`flexman.simulate.reduced`).
    """
    reduced = getattr(robot, "is_reduced", False)
    if not reduced:
        require_invertible(robot)
    if method not in METHODS + ("auto",):
        raise ValueError(f"method: unknown {method!r:.40}; use one of auto, {', '.join(METHODS)}")
    alpha_parameters(rho_inf)  # a damping outside [0, 1]: one line before anything runs
    for name, value in (("rtol", rtol), ("atol", atol)) + ((("max_step", max_step),) if max_step != np.inf else ()):
        inputs.positive(value, name)
    if method == "radau5" and rtol < RADAU_MIN_RTOL:
        raise ValueError(f"rtol: {rtol!r:.40} is below round-off for radau5 (its error estimate needs rtol >= "
                         f"{RADAU_MIN_RTOL:.3g}); use a larger rtol")
    if int(output_every) != output_every or output_every < 1:
        raise ValueError(f"output_every: a whole number >= 1 (got {output_every})")
    if reduced:  # fm.reduce: one C call for the batch, the runs equal to fm.simulate's
        from .reduced import simulate_batch_reduced

        return BatchResult(**simulate_batch_reduced(robot, t_final, dt, q0, qd0, robots, controller, torque, method,
                                                    rtol, atol, output_every, backend, loop, rho_inf, max_step))
    nq, nj = robot.nq, robot.n_joints
    robots = list(robots) if robots is not None else None
    (Q0, QD0), B = _batch_inputs(robot, q0, qd0, robots, len(robots) if robots else 0)
    if robots is not None and len(robots) == 1 and B > 1:
        robots = robots * B
    grid = output_times(float(t_final), float(dt))
    model = evaluator(robot, backend, work=fixed_step_work("rk4" if method == "auto" else method,
                                                              B * (len(grid) - 1)))
    params, fd = _dynamics(model, robot, robots, B)
    controller = controller.using(model) if hasattr(controller, "using") else controller  # M, b from the model
    n_z, z0, ctrl_torque, ctrl_deriv = controller_parts(controller, nj)
    applied = _applied(torque, B, nj)
    check = None
    if method == "auto":
        check = _step_check(robot, model, controller, torque, n_z, z0, ctrl_torque, ctrl_deriv,
                            np.concatenate([Q0[0], QD0[0], z0]), grid, dt)
        method = check["method"]
    if torque is not None and not callable(torque) and np.ndim(torque) == 2:  # (B, n_joints): not in C
        why = "per-run torques (B, n_joints) run in the Python loop"
        if loop == "compiled":
            raise LoopUnavailable(f"loop='compiled': {why}")
        compiled = None
    else:
        compiled, why = plan(model, method, nj, controller, torque, grid, loop=loop)
    if compiled is None and method in IMPLICIT:
        raise ValueError(f"method: {method!r} in simulate_batch runs in the compiled loop only, and this batch "
                         f"cannot ({why}); use method='rk4' or 'dopri5', or fm.simulate per run")

    limit = _same_limits(robot, robots)

    def rhs(t, x, tau_out=None):
        q, qd, z = x[:, :nq], x[:, nq:2 * nq], x[:, 2 * nq:]
        tau = saturate(np.broadcast_to(applied(t, q, qd) + np.asarray(ctrl_torque(t, q, qd, z), dtype=float),
                                       (B, nj)), limit)
        if tau_out is not None:
            tau_out[...] = tau
        dx = np.empty_like(x)
        dx[:, :nq] = qd
        dx[:, nq:2 * nq] = fd(q, qd, np.ascontiguousarray(tau))
        if n_z:
            dx[:, 2 * nq:] = ctrl_deriv(t, q, qd, z)
        return dx

    t_out = grid[::int(output_every)]
    if t_out[-1] != grid[-1]:
        t_out = np.append(t_out, grid[-1])
    x = np.concatenate([Q0, QD0, np.broadcast_to(z0, (B, n_z))], axis=1)
    if compiled is not None:
        start = time.perf_counter()
        X, TAU, status, counts = compiled.batch(x, grid, int(output_every), len(t_out), params, method=method,
                                                rho_inf=rho_inf, rtol=rtol, atol=atol, max_step=max_step)
        stats = {"steps": len(grid) - 1, "rhs_evaluations": 4 * (len(grid) - 1) + 1, "success": bool(np.all(status == 0)),
                 "failed_runs": np.flatnonzero(status).tolist(), "wall_time": time.perf_counter() - start, "runs": B,
                 "backend": backend_name(model), "loop": "compiled", "method": method}
        if counts is not None:  # per run: the implicit methods' work
            stats.update({("steps_per_run" if name == "steps" else name): counts[:, k].tolist()
                          for k, name in enumerate(COUNTS) if name != "analytic_jacobians"})
            stats["steps"] = int(counts[:, 0].max())
            stats["rhs_evaluations"] = None if method == "generalized_alpha" else int(counts[:, 6].sum())
        if check is not None:
            stats["method_reason"] = check["reason"]
        return BatchResult(t=t_out, q=X[:, :, :nq], qd=X[:, :, nq:2 * nq], tau=TAU, controller_state=X[:, :, 2 * nq:],
                           robot=robot, params=params, method=method, stats=stats)
    X = np.empty((len(t_out), B, x.shape[1]))
    TAU = np.empty((len(t_out), B, nj))
    bar = Progress(_show(progress, B, len(grid)), float(grid[-1]), f"simulate_batch ({B} runs, {method})")
    start = time.perf_counter()
    try:
        if method == "rk4":
            stats = _rk4(rhs, grid, t_out, x, X, TAU, bar)
        else:
            stats = _dopri5(rhs, t_out, x, X, TAU, rtol, atol, float(dt), bar, max_steps)
    finally:
        bar.close()
    stats.update(wall_time=time.perf_counter() - start, runs=B, backend=backend_name(model), loop="python",
                 loop_reason=why, method=method)
    if check is not None:
        stats["method_reason"] = check["reason"]
    X = X.transpose(1, 0, 2)
    return BatchResult(t=t_out, q=X[:, :, :nq], qd=X[:, :, nq:2 * nq], tau=TAU.transpose(1, 0, 2),
                       controller_state=X[:, :, 2 * nq:], robot=robot, params=params, method=method, stats=stats)


def _step_check(robot, model, controller, torque, n_z, z0, ctrl_torque, ctrl_deriv, x0, grid, dt):
    """``method="auto"``: the step check of :func:`flexman.simulate` on one run (the robot's own
    parameters, the first start state): the closed loop where every law is flexman's own, else the
    plant's modes."""
    from .stability import loop_step_check, plant_step_check

    nq, nj = robot.nq, robot.n_joints
    own = (controller is None or type(controller).__module__.startswith("flexman.")) and not callable(torque)
    if not own:
        return plant_step_check(robot, dt)
    held = np.zeros(nj) if torque is None else np.asarray(torque, dtype=float)
    held = np.broadcast_to(held[0] if held.ndim == 2 else held, (nj,))  # per-run torques: the first run's

    def total_torque(t, x):
        return held + np.asarray(ctrl_torque(t, x[:nq], x[nq:2 * nq], x[2 * nq:]), dtype=float)

    def rates(t, x, tau):
        q, qd, z = x[:nq], x[nq:2 * nq], x[2 * nq:]
        return model.forward_dynamics(q, qd, tau), (ctrl_deriv(t, q, qd, z) if n_z else z)

    return loop_step_check(robot, model, rates, total_torque, x0, grid, nq, controller, dt, "auto")


def _same_limits(robot, robots):
    """The drives' torque limits every run shares (the compiled loop holds one set), or a
    one-line error when the runs' robots differ in them."""
    limit = drive_limits(robot)
    for k, other in enumerate(robots or ()):
        theirs = drive_limits(other)
        if (theirs is None) != (limit is None) or (limit is not None and not np.array_equal(theirs, limit)):
            raise ValueError(f"robots[{k}]: its drives' torque limits differ from the robot's; a batch shares one "
                             "set of limits, so run the robots with other limits in a batch of their own")
    return limit


def _show(progress, b, n_steps):
    if progress is not None:
        return bool(progress)
    import sys

    return hasattr(sys.stderr, "isatty") and sys.stderr.isatty() and b * n_steps > 1e6


def _applied(torque, b, nj):
    if torque is None:
        zero = np.zeros(nj)
        return lambda t, q, qd: zero
    if callable(torque):
        return lambda t, q, qd: np.asarray(torque(t, q, qd), dtype=float)
    arr = np.asarray(torque, dtype=float)
    try:
        arr = np.broadcast_to(arr, (b, nj)).copy()
    except ValueError:
        raise ValueError(f"torque: expected ({nj},) or ({b}, {nj}), got {arr.shape}") from None
    return lambda t, q, qd: arr


def _dynamics(model, robot, robots, b):
    """(parameter vectors or None, forward dynamics on the batch (q, qd, tau) -> qdd)."""
    if robots is None:
        return None, model.forward_dynamics
    if hasattr(model, "evaluate"):  # compiled: one library, a parameter vector per run
        from ..codegen.modelcache import model_key

        key = model_key(robot, extension=False)[0]  # a structure test: any consistent key
        rows = []
        for k, r in enumerate(robots):
            r_key, values = model_key(r, extension=False) if r is not robot else (key, None)
            if r.nq != robot.nq or r.n_joints != robot.n_joints or r_key != key:
                raise ValueError(f"robots[{k}]: another structure than robot's (joints, angles, beam shapes "
                                 "and modes, or which parameters are zero differ); simulate it separately")
            rows.append(model.params.copy() if values is None else list(values.values()))
        params = np.array(rows, dtype=float).reshape(b, len(model.param_names))
        return params, lambda q, qd, tau: model.evaluate("forward_dynamics", params, q, qd, tau)

    def each(q, qd, tau):  # interpreted: every run its own model
        return np.stack([r.forward_dynamics(q[k], qd[k], tau[k]) for k, r in enumerate(robots)])

    return None, each


def _rk4(rhs, grid, t_out, x, X, TAU, bar):
    keep = {float(t): k for k, t in enumerate(t_out)}
    X[0], j = x, 1
    tau = np.empty(TAU.shape[1:])
    for k in range(len(grid) - 1):
        t, h = grid[k], grid[k + 1] - grid[k]
        k1 = rhs(t, x, tau)
        if float(t) in keep:
            TAU[keep[float(t)]] = tau
        k2 = rhs(t + 0.5 * h, x + 0.5 * h * k1)
        k3 = rhs(t + 0.5 * h, x + 0.5 * h * k2)
        k4 = rhs(t + h, x + h * k3)
        x = x + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        if float(grid[k + 1]) in keep:
            X[j] = x
            j += 1
        bar(t + h)
    rhs(grid[-1], x, tau)
    TAU[-1] = tau
    return {"steps": len(grid) - 1, "rhs_evaluations": 4 * (len(grid) - 1) + 1, "success": True}


def _dopri5(rhs, t_out, x, X, TAU, rtol, atol, h, bar, max_steps):
    """Error-controlled Dormand-Prince 5(4) with FSAL, steps ending on the output times."""
    tau = np.empty(TAU.shape[1:])
    X[0] = x
    k1 = rhs(t_out[0], x, tau)
    TAU[0] = tau
    t, n_eval, accepted, rejected = float(t_out[0]), 1, 0, 0
    stages = [None] * 7
    for j in range(1, len(t_out)):
        target = float(t_out[j])
        while t < target:
            if accepted + rejected >= max_steps:
                raise RuntimeError(f"simulate_batch: more than {max_steps} steps before t = {target:g} s")
            last = t + h >= target * (1 - 1e-14) or target - (t + h) < 1e-12 * max(1.0, abs(target))
            step = target - t if last else h
            stages[0] = k1
            for s in range(1, 7):
                xs = x + step * sum(a * stages[i] for i, a in enumerate(_A[s]) if a)
                stages[s] = rhs(t + _C[s] * step, xs)
            n_eval += 6
            x5 = xs  # the 7th stage's point is the 5th-order solution (FSAL)
            err = step * sum((b5 - b4) * stages[i] for i, (b5, b4) in enumerate(zip(_B5, _B4)) if b5 != b4)
            scale = atol + rtol * np.maximum(np.abs(x), np.abs(x5))
            norm = float(np.sqrt(np.mean((err / scale) ** 2, axis=1)).max())  # the worst run decides
            if not np.isfinite(norm):
                rejected += 1
                h = 0.2 * step
                if h < 1e-12 * max(1.0, abs(t)):
                    raise FloatingPointError(f"simulate_batch: non-finite state at t = {t:g} s (diverged)")
                continue
            if norm <= 1.0:
                t = target if last else t + step
                x, k1 = x5, stages[6]
                accepted += 1
                factor = 5.0 if norm == 0 else min(5.0, max(0.2, 0.9 * norm ** -0.2))
                if not last or factor < 1.0:
                    h = step * factor
                bar(t)
            else:
                rejected += 1
                h = step * max(0.2, 0.9 * norm ** -0.2)
        X[j] = x
        rhs(t, x, tau)
        TAU[j] = tau
        n_eval += 1
    return {"steps": accepted, "rejected_steps": rejected, "rhs_evaluations": n_eval, "success": True}
