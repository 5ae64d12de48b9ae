"""``fm.simulate`` of a reduced model (``fm.reduce``): the active coordinates integrated, the
dropped ones solved at every evaluation and filled into the result.

The state is x = [q_a, qd_a, z]. At each evaluation the reduced model solves its dropped
coordinates together with the active accelerations; the applied torque (the torque argument plus
the controller's output) is evaluated inside that solve at the full coordinates, so a controller
reading the deflections sees the slaved ones. The controller is the full robot's: it gets the
full coordinates (dropped rates zero); the drives' torque limits saturate the sum. An RK4 run
whose full robot's run would take the compiled loop (a compiled model, built-in controller and
torque) takes it (:mod:`.compiled_reduced`: the same iteration in C); any other run takes the
Python loop. The result holds the full coordinates and the full robot, so plots, reports and tip
deflections see the dropped coordinates' static share.
"""
from __future__ import annotations

import numpy as np

from ..model.checks import check_mass_matrix
from .backend import evaluator, fixed_step_work
from .result import Result
from .compiled_loop import first_torque
from .compiled_reduced import plan_reduced
from .run import backend_name, controller_parts, drive_limits, energy, prepare, run_loop, saturate
from .stability import loop_step_check, plant_step_check

def _active(reduced, value, name):
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


def simulate_reduced(reduced, t_final, dt, method, rtol, atol, q0, qd0, controller, torque, progress, max_step,
                     backend, prescribed, loop, rho_inf, ee_frame):
    """A run of the reduced model (module doc); arguments as :func:`flexman.simulate`."""
    if prescribed is not None:
        raise ValueError("prescribed: prescribed motion is not run on a reduced model yet; simulate the full robot "
                         "(reduced.robot) or drive the reduced one with a controller")
    if getattr(controller, "sample", None) is not None and hasattr(controller, "period"):
        raise ValueError("controller: a sampled controller is not run on a reduced model yet; use a continuous one "
                         "or the full robot (reduced.robot)")
    full = reduced.robot
    method, q0, qd0, t_grid, applied, _ = prepare(reduced, t_final, dt, method, _active(reduced, q0, "q0"),
                                                 _active(reduced, qd0, "qd0"), torque, controller)
    nq, nj = reduced.nq, reduced.n_joints
    asked = method
    work = fixed_step_work("rk4" if method == "auto" else method, len(t_grid) - 1)
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
    t_out, X, taus, stats = run_loop(compiled, why, slaved, progress, q0, qd0, f"simulate reduced ({method})", rates,
                                     total_torque, x0, t_grid, nq, nj, method, rtol, atol, max_step, rho_inf)
    q, qd, _, _ = slaved.solve(X[:, :nq], X[:, nq:2 * nq], tau=taus)  # the dropped coordinates at the samples
    stats["method"], stats["backend"] = method, backend_name(model)
    stats["reduced"] = {"dropped": reduced.dropped_names, "above_hz": reduced.above_hz, "static": reduced.static}
    if check is not None:
        stats["step_check"] = {k: v for k, v in check.items() if k != "method"}
    if asked == "auto":
        stats["method_reason"] = check["reason"]
    res = Result(t=np.asarray(t_out), q=q, qd=qd, tau=taus, energy=energy(full, model, q, qd), robot=full,
                 method=method, stats=stats, controller_state=X[:, 2 * nq:], controller=controller,
                 diverged=stats["diverged"], t_diverged=stats["t_fault"])
    if ee_frame is not None:
        from ..model.inputs import frame_name

        res.robot = full.with_end_effector(frame_name(full, ee_frame, "ee_frame"))
    return res
