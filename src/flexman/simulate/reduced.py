"""``fm.simulate`` and ``fm.simulate_batch`` of a reduced model (``fm.reduce``): the active
coordinates integrated, the dropped ones solved at every evaluation and filled into the result.

The state is x = [q_a, qd_a, z]. At each evaluation the reduced model solves its dropped
coordinates together with the active accelerations; the applied torque (the torque argument plus
the controller's output) is evaluated inside that solve at the full coordinates, so a controller
reading the deflections sees the slaved ones. The controller is the full robot's: it gets the
full coordinates (dropped rates zero); the drives' torque limits saturate the sum. An RK4,
generalized-alpha or radau5 run whose full robot's run would take the compiled loop (a compiled
model, built-in controller and torque) takes it (:mod:`.compiled_reduced`: the same iteration in
C, Newton's Jacobian from the full model's partial derivatives); any other run takes the Python
loop. A batch runs in the compiled loop only, one C call for all runs. The result holds the full
coordinates and the full robot, so plots, reports and tip deflections see the dropped
coordinates' static share.
"""
from __future__ import annotations

import time

import numpy as np

from ..codegen.loop_radau import COUNTS
from ..model import inputs
from ..model.checks import check_mass_matrix
from .backend import evaluator, fixed_step_work
from .compiled_loop import first_torque
from .compiled_reduced import METHODS, plan_reduced
from .integrators import COMPILED_METHODS, RADAU_MIN_RTOL
from .result import Result
from .run import backend_name, controller_parts, drive_limits, energy, prepare, run_loop, saturate
from .stability import loop_step_check, plant_step_check


def active_values(reduced, value, name):
    """Active values from ``value``: the full robot's nq (the dropped entries are left out) or
    the reduced model's own nq; None stays None."""
    if value is None:
        return None
    arr = np.asarray(value, dtype=float)
    if arr.shape == (reduced.robot.nq,):
        return arr[list(reduced.active)]
    if arr.shape != (reduced.nq,):
        raise ValueError(f"{name}: expected {reduced.robot.nq} values (the full robot's coordinates) or {reduced.nq} "
                         f"(the reduced model's: {', '.join(reduced.coordinate_names)}), got shape {arr.shape}")
    return arr


def _refuse(prescribed):
    if prescribed is not None:
        raise ValueError("prescribed: prescribed motion is not run on a reduced model yet; simulate the full robot "
                         "(reduced.robot) or drive the reduced one with a controller")


def _setup(reduced, t_final, dt, method, q0, qd0, controller, torque, backend, loop, runs=1):
    """Everything of a run before its integration, as a dict: the checked inputs, the model, the
    slaved reduction and the bound controller, the Python loop's ``rates`` and ``total_torque``,
    the step check (it picks ``method="auto"``'s method) and the compiled loop (or None and why).
    ``runs``: how many runs of this setup a batch makes (weighs the model's build)."""
    full = reduced.robot
    method, q0, qd0, t_grid, applied, _ = prepare(reduced, t_final, dt, method, active_values(reduced, q0, "q0"),
                                                 active_values(reduced, qd0, "qd0"), torque, controller)
    nq, nj = reduced.nq, reduced.n_joints
    asked = method
    work = fixed_step_work("rk4" if method == "auto" else method, runs * (len(t_grid) - 1))
    model = evaluator(full, backend, work=None if work is None else 3 * work)  # about three solves per evaluation
    slaved = reduced.using(model)
    bound = controller.using(model) if hasattr(controller, "using") else controller
    n_z, z0, ctrl_torque, ctrl_deriv = controller_parts(bound, nj)
    memo = {}
    limit = drive_limits(full)  # the drives' torque limits saturate the sum

    def solve(t, x):
        key = (t, x.tobytes())
        if memo.get("key") != key:
            q, qd, z = x[:nq], x[nq:2 * nq], x[2 * nq:]

            def law(q_full, qd_full):
                return saturate(applied(t, q_full, qd_full) + np.asarray(ctrl_torque(t, q_full, qd_full, z), dtype=float),
                                limit)

            memo["key"], memo["value"] = key, slaved.solve(q, qd, tau=law)
        return memo["value"]

    def total_torque(t, x):
        return solve(t, x)[3]

    def rates(t, x, tau):
        q_full, qd_full, acc, used = solve(t, x)
        if not np.array_equal(used, tau):  # a torque other than the law's (the step check's held torque)
            q_full, qd_full, acc, _ = slaved.solve(x[:nq], x[nq:2 * nq], tau=tau)
        return acc, (ctrl_deriv(t, q_full, qd_full, x[2 * nq:]) if n_z else x[2 * nq:])

    x0 = np.concatenate([q0, qd0, z0])
    check_mass_matrix(full, slaved.solve(q0, qd0, qdd=np.zeros(nq))[0])
    own = (controller is None or type(controller).__module__.startswith("flexman.")) and not callable(torque)
    check = None
    if own and (method == "auto" or (method == "rk4" and controller is not None)):
        check = loop_step_check(reduced, model, rates, total_torque, x0, t_grid, nq, controller, dt, method)
    elif method == "auto":
        check = plant_step_check(reduced, dt)
    if check is not None and method == "auto":
        method = check["method"]
    compiled, why = plan_reduced(slaved, model, method, nj, bound, torque, t_grid, loop)
    if compiled is not None:
        first_torque(total_torque, t_grid[0], x0)
    return dict(method=method, asked=asked, q0=q0, qd0=qd0, t_grid=t_grid, model=model, slaved=slaved, x0=x0,
                rates=rates, total_torque=total_torque, check=check, compiled=compiled, why=why, z0=z0)


def _stats(reduced, run, stats):
    """The stats a reduced run adds: method, backend, the reduction, the step check."""
    stats["method"], stats["backend"] = run["method"], backend_name(run["model"])
    stats["reduced"] = {"dropped": reduced.dropped_names, "above_hz": reduced.above_hz, "static": reduced.static}
    if run["check"] is not None:
        stats["step_check"] = {k: v for k, v in run["check"].items() if k != "method"}
    if run["asked"] == "auto":
        stats["method_reason"] = run["check"]["reason"]
    return stats


def simulate_reduced(reduced, t_final, dt, method, rtol, atol, q0, qd0, controller, torque, progress, max_step,
                     backend, prescribed, loop, rho_inf, ee_frame):
    """A run of the reduced model (module doc); arguments as :func:`flexman.simulate`."""
    _refuse(prescribed)
    full = reduced.robot
    run = _setup(reduced, t_final, dt, method, q0, qd0, controller, torque, backend, loop)
    method, slaved, model, nq, nj = run["method"], run["slaved"], run["model"], reduced.nq, reduced.n_joints
    t_out, X, taus, stats = run_loop(run["compiled"], run["why"], slaved, progress, run["q0"], run["qd0"],
                                     f"simulate reduced ({method})", run["rates"], run["total_torque"], run["x0"],
                                     run["t_grid"], nq, nj, method, rtol, atol, max_step, rho_inf)
    q, qd, _, _ = slaved.solve(X[:, :nq], X[:, nq:2 * nq], tau=taus)  # the dropped coordinates at the samples
    stats = _stats(reduced, run, stats)
    res = Result(t=np.asarray(t_out), q=q, qd=qd, tau=taus, energy=energy(full, model, q, qd), robot=full,
                 method=method, stats=stats, controller_state=X[:, 2 * nq:], controller=controller,
                 diverged=stats["diverged"], t_diverged=stats["t_fault"])
    if ee_frame is not None:
        from ..model.inputs import frame_name

        res.robot = full.with_end_effector(frame_name(full, ee_frame, "ee_frame"))
    return res


def simulate_batch_reduced(reduced, t_final, dt, q0, qd0, robots, controller, torque, method, rtol, atol,
                           output_every, backend, loop, rho_inf, max_step):
    """``fm.simulate_batch`` of a reduced model: B runs from the rows of q0, qd0 (each the full
    robot's coordinates or the active ones), in one call of the compiled loop
    (:meth:`~flexman.simulate.compiled_reduced.ReducedLoop.batch`); each run is the arithmetic of
    :func:`flexman.simulate` on it (the same grid, steps and iteration), so the batch equals the
    single runs. The first run's setup (step check, ``method="auto"``) serves all. Runs that the
    compiled loop cannot take (a Python function in the loop, per-run torques) are refused in one
    line, as are other parameters per run (``robots``) and ``dopri5``. Returns the fields of the
    :class:`~flexman.simulate.batch.BatchResult`."""
    if robots is not None:
        raise ValueError("robots: a reduced model's batch runs its own robot's parameters; reduce each robot "
                         "(fm.reduce) and run a batch of it")
    if method not in METHODS + ("auto",):
        raise ValueError(f"method: {method!r:.40} is not run on a reduced model's batch; use one of auto, "
                         f"{', '.join(METHODS)}")
    if torque is not None and not callable(torque) and np.ndim(torque) == 2:
        raise ValueError("torque: per-run torques (B, n_joints) are not run on a reduced model's batch; give one "
                         "torque for every run, or run fm.simulate per run")
    rows = [np.atleast_2d(np.zeros(reduced.nq) if v is None else np.asarray(v, dtype=float)) for v in (q0, qd0)]
    B = max(len(rows[0]), len(rows[1]))
    if len(rows[0]) not in (1, B) or len(rows[1]) not in (1, B):
        raise ValueError(f"q0, qd0: batch sizes differ ({len(rows[0])} and {len(rows[1])} rows)")
    starts = [[inputs.finite(active_values(reduced, r, name), name) for r in np.broadcast_to(a, (B, a.shape[1]))]
              for a, name in zip(rows, ("q0", "qd0"))]
    run = _setup(reduced, t_final, dt, method, starts[0][0], starts[1][0], controller, torque, backend, loop, runs=B)
    method, compiled, slaved, nq = run["method"], run["compiled"], run["slaved"], reduced.nq
    if compiled is None:
        raise ValueError(f"simulate_batch: a reduced model's batch runs in the compiled loop only, and this one "
                         f"cannot ({run['why']}); use fm.simulate per run")
    if method in COMPILED_METHODS and not rtol >= RADAU_MIN_RTOL:
        raise ValueError(f"rtol: {rtol!r:.40} is below round-off for {method} (its error estimate needs rtol >= "
                         f"{RADAU_MIN_RTOL:.3g}); use a larger rtol")
    X0 = np.array([np.concatenate([q, qd, run["z0"]]) for q, qd in zip(*starts)])
    grid = run["t_grid"]
    keep = np.unique(np.append(np.arange(0, len(grid), int(output_every)), len(grid) - 1))
    start = time.perf_counter()
    X, TAU, status, counts, last, n_out, _ = compiled.batch(X0, grid, int(output_every), len(keep), method=method,
                                                             rho_inf=rho_inf, rtol=rtol, atol=atol, max_step=max_step)
    wall = time.perf_counter() - start
    full = reduced.robot
    Q, QD = np.full((B, len(keep), full.nq), np.nan), np.full((B, len(keep), full.nq), np.nan)
    for k in range(B):  # the dropped coordinates at each run's samples, from its own last solution
        slaved.warm_start[:] = last[k]
        n = int(n_out[k])
        Q[k, :n], QD[k, :n], _, _ = slaved.solve(X[k, :n, :nq], X[k, :n, nq:2 * nq], tau=TAU[k, :n])
    stats = {"success": bool(np.all(status == 0)), "failed_runs": np.flatnonzero(status).tolist(), "wall_time": wall,
             "runs": B, "loop": "compiled"}
    if method != "rk4":  # per run: the implicit methods' work
        stats.update({("steps_per_run" if name == "steps" else name): counts[:, j].tolist()
                      for j, name in enumerate(COUNTS) if name not in ("analytic_jacobians", "rhs_evaluations")})
    stats.update(steps=int(counts[:, 0].max()), rhs_evaluations=int(counts[:, 6].sum()))  # all runs' solves
    return dict(t=grid[keep], q=Q, qd=QD, tau=TAU, controller_state=X[:, :, 2 * nq:], robot=full, params=None,
                method=method, stats=_stats(reduced, run, stats))
