"""``simulate``: integrate M(q) qdd + b(q, qd) = S tau under prescribed torques and controllers.

The state is x = [q, qd, z], where z holds the internal states a controller declares
(``n_states``, e.g. the integral of a PID's error). Integrating z with the robot instead of
updating it inside the right-hand side keeps adaptive methods correct: they evaluate the
right-hand side at trial points and reject steps. The machinery shared with the other entry
points (inputs, progress, output times, integration) is :mod:`flexman.simulate.run`.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..model.checks import require_invertible
from ..model.errors import FlexmanRuntimeWarning
from .backend import evaluator, fixed_step_work, notice
from .compiled_loop import first_torque, plan
from .result import Result
from .run import backend_name, check_start, controller_parts, drive_limits, energy, prepare, run_loop, saturate
from .integrators import RHO_INF, alpha_parameters
from .stability import check_step, loop_step_check, plant_step_check


def _own_laws(controller, torque) -> bool:
    """Whether everything in the loop is flexman's own (a built-in controller law, a constant or
    sampled torque): only then does the step check linearize the loop, since it evaluates the
    laws at states and times of its own; a Python function is called by its run only."""
    own = controller is None or type(controller).__module__.startswith("flexman.")
    return own and not callable(torque)


def _frame_name(robot, name):
    """``name`` when it names a link or frame of ``robot``; one line listing the names otherwise."""
    from ..model.inputs import frame_name

    return frame_name(robot, name, "ee_frame")


def simulate(robot, t_final, dt=1e-3, method="auto", rtol=1e-8, atol=1e-10, q0=None, qd0=None,
             controller=None, torque=None, progress=None, max_step=np.inf, backend=None, prescribed=None, loop="auto",
             rho_inf=RHO_INF, ee_frame=None):
    """Simulate ``robot`` from (q0, qd0) over [0, t_final], output every ``dt`` seconds.

    method: ``'auto'`` (default: RK4 at ``dt`` where the step check finds it stable for the
    closed loop, else generalized-alpha; ``res.stats["method"]`` says which ran), ``'rk4'``
    (fixed-step classic Runge-Kutta at ``dt``, as FLX), ``'generalized_alpha'`` (fixed-step,
    implicit, A-stable, second order, for stiff arms; ``rho_inf`` in [0, 1] its damping of the
    unresolved modes, see :func:`.integrators.generalized_alpha`), ``'radau5'`` (Radau IIA of
    order 5 with step-size control for ``rtol``, ``atol``, ``max_step``, in the compiled loop
    only: :mod:`flexman.codegen.loop_radau`) or one of
    ``'RK45', 'DOP853', 'Radau', 'BDF', 'LSODA'`` (``solve_ivp`` with ``rtol``, ``atol``,
    ``max_step``). The applied joint torque is ``torque`` (None, constant, sampled array or
    ``torque(t, q, qd)``, see :func:`.run.torque_input`) plus the ``controller``'s output,
    saturated at the drives' torque limits (``robot.torque_limits``) where a drive gives one.
    A plain callable controller is called once per RK4 stage, in time order. ``progress``:
    True/False, or None to show a bar only on a terminal for runs longer than about 1 s.
    ``backend``: ``"auto"`` (default, from ``FLEXMAN_BACKEND``), ``"compiled"`` or ``"numeric"``:
    what evaluates the dynamics (see :mod:`flexman.simulate.backend`).
    ``prescribed``: a joint motion ``traj(t) -> (q, qd, qdd)`` that the joints follow exactly
    (a :mod:`flexman.trajectory` object or any function); the flexible coordinates respond and
    ``res.tau`` holds the joint torques the motion needs (:mod:`flexman.simulate.prescribed`).
    ``loop``: ``"auto"`` (default) runs the whole RK4 loop in C when the controller, trajectory
    and torque are built-in ones and the model is compiled, else in Python; ``"python"`` or
    ``"compiled"`` insist (see :mod:`flexman.simulate.compiled_loop`; a sampled controller's run:
    :mod:`flexman.simulate.compiled_sampled`). ``res.stats["loop"]`` says which ran (and
    ``"loop_reason"`` why not compiled).
    A reduced model (``fm.reduce(robot, above_hz=...)``) runs its active coordinates (RK4,
    generalized-alpha and radau5 in the compiled loop when the full robot's run would take it);
    ``q0``, ``qd0`` give the full robot's coordinates or the active ones, and the result holds the
    full coordinates (:mod:`flexman.simulate.reduced`).
    ``ee_frame``: the end effector of the result's figures, plots and report (a link's or a named
    frame's name, e.g. a URDF's ``tool0``); None: the robot's own (``robot.end_effector``, else the
    last link). ``res.robot`` is then the robot with that end effector.
    """
    if getattr(robot, "is_reduced", False):  # fm.reduce: the active coordinates integrated, the dropped ones solved
        from .reduced import simulate_reduced

        if method == "rk4":
            check_step(robot, dt, method)
        alpha_parameters(rho_inf)
        if getattr(controller, "sample", None) is not None and hasattr(controller, "period") and prescribed is None:
            res = _simulate_sampled(robot, t_final, dt, method, q0, qd0, controller, torque, backend, loop)
            if ee_frame is not None:
                res.robot = res.robot.with_end_effector(_frame_name(res.robot, ee_frame))
            return res
        return simulate_reduced(robot, t_final, dt, method, rtol, atol, q0, qd0, controller, torque, progress,
                                max_step, backend, prescribed, loop, rho_inf, ee_frame)
    require_invertible(robot)  # a robot loaded with a massless chain: refused in its one sentence
    if ee_frame is not None:
        name = _frame_name(robot, ee_frame)  # (an unknown name: one line before the run)
        res = simulate(robot, t_final, dt, method, rtol, atol, q0, qd0, controller, torque, progress, max_step,
                       backend, prescribed, loop, rho_inf)
        res.robot = robot.with_end_effector(name)
        return res
    if method == "rk4":  # an unstable RK4 step is flagged before the run
        sampled = getattr(controller, "sample", None) is not None and hasattr(controller, "period")
        check_step(robot, dt, method, prescribed is not None, sampled=sampled and prescribed is None)
    alpha_parameters(rho_inf)  # a damping outside [0, 1]: one line before anything runs
    if prescribed is not None:
        for name, value in (("controller", controller), ("torque", torque)):
            if value is not None:
                raise ValueError(f"{name}: not used with prescribed motion (the joints follow the prescription "
                                 f"and the torques are computed); give one or the other")
        from .prescribed import simulate_prescribed

        return simulate_prescribed(robot, prescribed, t_final, dt, method, rtol, atol, q0, qd0, progress,
                                   max_step, backend, loop, rho_inf)
    if getattr(controller, "sample", None) is not None and hasattr(controller, "period"):
        return _simulate_sampled(robot, t_final, dt, method, q0, qd0, controller, torque, backend, loop)
    method, q0, qd0, t_grid, applied, _ = prepare(robot, t_final, dt, method, q0, qd0, torque, controller)
    nq, nj = robot.nq, robot.n_joints
    asked = method
    model = evaluator(robot, backend, work=fixed_step_work("rk4" if method == "auto" else method, len(t_grid) - 1))
    bound = controller.using(model) if hasattr(controller, "using") else controller  # its M, b from the model
    n_z, z0, ctrl_torque, ctrl_deriv = controller_parts(bound, nj)

    limit = drive_limits(robot)  # the drives' torque limits saturate the sum

    def total_torque(t, x):
        q, qd, z = x[:nq], x[nq:2 * nq], x[2 * nq:]
        return saturate(applied(t, q, qd) + np.asarray(ctrl_torque(t, q, qd, z), dtype=float), limit)

    def rates(t, x, tau):
        q, qd, z = x[:nq], x[nq:2 * nq], x[2 * nq:]
        return model.forward_dynamics(q, qd, tau), (ctrl_deriv(t, q, qd, z) if n_z else z)

    x0 = np.concatenate([q0, qd0, z0])
    check_start(model, q0, {"rtol": rtol, "atol": atol, "max_step": max_step})  # M by the compiled model when there is one
    check = None
    if _own_laws(controller, torque) and (method == "auto" or (method == "rk4" and controller is not None)):
        check = loop_step_check(robot, model, rates, total_torque, x0, t_grid, nq, controller, dt, method)
    elif method == "auto":  # Python functions in the loop are called by their run only: the plant's check
        check = plant_step_check(robot, dt)
    if check is not None and method == "auto":
        method = check["method"]
        if method != "rk4" and getattr(model, "backend", None) != "c":  # the implicit run costs more: weigh again
            model = evaluator(robot, backend, work=fixed_step_work(method, len(t_grid) - 1))
            bound = controller.using(model) if hasattr(controller, "using") else controller
            n_z, z0, ctrl_torque, ctrl_deriv = controller_parts(bound, nj)
    compiled, why = plan(model, method, nj, bound, torque, t_grid, loop=loop)
    if compiled is not None:
        first_torque(total_torque, t_grid[0], x0)
    t_out, X, taus, stats = run_loop(compiled, why, model, progress, q0, qd0, f"simulate ({method})", rates,
                                     total_torque, x0, t_grid, nq, nj, method, rtol, atol, max_step, rho_inf)
    stats["method"] = method
    if check is not None:
        stats["step_check"] = {k: v for k, v in check.items() if k != "method"}
    if asked == "auto":
        stats["method_reason"] = check["reason"]
    q, qd = X[:, :nq], X[:, nq:2 * nq]
    return Result(t=np.asarray(t_out), q=q, qd=qd, tau=taus, energy=energy(robot, model, q, qd),
                  robot=robot, method=method, stats=stats, controller_state=X[:, 2 * nq:],
                  controller=controller, diverged=stats["diverged"], t_diverged=stats["t_fault"],
                  measurements=_measurements(robot, model, t_out, q, qd, taus))


def _measurements(robot, model, t, q, qd, taus):
    """What the robot's own sensors (its model file's ``sensors:``) read during a run, or None."""
    if not getattr(robot, "sensors", None) or len(t) < 2:
        return None
    from ..sensors import SensorSet, measure

    sset = SensorSet(robot, robot.sensors, model=model)
    return measure(sset, t, q, qd, np.asarray(model.forward_dynamics(q, qd, taus), dtype=float))


#: how much the linearized sampled loop may amplify an error over a run before the run is warned
#: (a loop whose radius is just above 1, e.g. flexible modes left undamped until an LQR takes over,
#: is not flagged on a short run)
UNSTABLE_GROWTH = 1e3


def _simulate_sampled(robot, t_final, dt, method, q0, qd0, controller, torque, backend, loop="auto"):
    """A run under a sampled controller: RK4 at ``dt`` between its samples, in the compiled loop
    when it can take the run (:mod:`.compiled_sampled`), else in the Python loop (:mod:`.sampled`).
    A reduced model (``fm.reduce``) integrates its active coordinates, the controller reading the
    full ones; the result holds the full robot's coordinates."""
    from ..sensors import Channel, Measurements
    from .compiled_sampled import NO_PARTIALS, plan_sampled
    from .reduced import active_values
    from .sampled import loop_growth, plant_substeps, refine, run_sampled, sample_steps

    if torque is not None:
        raise ValueError("torque: not used with a sampled controller (its torque is all that drives the joints); "
                         "leave torque out")
    if method not in ("auto", "rk4", "RK4"):
        raise ValueError(f"method: a sampled controller runs with RK4 between its samples; leave method out or give 'rk4' "
                         f"(got {method!r:.40})")
    reduced = robot if getattr(robot, "is_reduced", False) else None
    if reduced is not None:
        q0, qd0 = active_values(reduced, q0, "q0"), active_values(reduced, qd0, "qd0")
    asked = method
    method, q0, qd0, t_grid, _, _ = prepare(robot, t_final, dt, "rk4", q0, qd0, None, None)
    steps = sample_steps(controller, dt, t_final)
    full = robot if reduced is None else reduced.robot
    n_sub = 1
    if reduced is None and asked == "auto":  # (a reduced plant's fastest modes are the ones it dropped)
        n_sub = plant_substeps(full, dt)
    t_outputs, t_grid = t_grid, refine(t_grid, n_sub)
    steps *= n_sub
    nq, nj = full.nq, robot.n_joints
    model = evaluator(full, backend, work=fixed_step_work("rk4", len(t_grid) - 1))
    controller = controller.using(model) if hasattr(controller, "using") else controller
    slaved = None if reduced is None else reduced.using(model)
    check_start(model, q0 if slaved is None else slaved.solve(q0, qd0, qdd=np.zeros(len(q0)))[0])
    growth = None
    if reduced is None and hasattr(controller, "law_torque"):
        growth = loop_growth(model, controller, q0, qd0, nj)
        over_run = np.log(growth) * t_final / controller.period if growth is not None and growth > 1.0 else 0.0
        if over_run > np.log(UNSTABLE_GROWTH):
            warnings.warn(f"controller: the sampled loop at {controller.rate:g} Hz is unstable about the start state: "
                          f"linearized there, an error grows {growth:.4g} times per sample, beyond "
                          f"{UNSTABLE_GROWTH:g} times over the run; raise the rate or lower the gains (docs/lab.md)",
                          FlexmanRuntimeWarning, stacklevel=3)
    compiled, why = plan_sampled(model, controller, nj, t_grid, loop)
    # the controller (its filter) starts from the robot's state: a reduced one's under no torque yet
    start = None if slaved is None else slaved.full_state(q0, qd0, tau=np.zeros(nj))
    if compiled is not None:
        t_out, X, taus, record, stats = compiled.run(controller, t_grid, q0, qd0, nq, nj, steps, slaved, start)
    else:
        if why == NO_PARTIALS:
            notice(f"the sampled run takes the Python loop (much slower): {why}", key=("no partials", full.name))
        t_out, X, taus, record, stats = run_sampled(model, controller, t_grid, q0, qd0, nq, nj, steps, slaved, start)
        stats["loop_reason"] = why
    if n_sub > 1:  # the outputs on the asked grid
        t_out, X, taus = t_outputs[:(len(t_out) - 1) // n_sub + 1], X[::n_sub], taus[::n_sub]
    stats["substeps"], stats["loop_growth"] = n_sub, growth
    stats["method"], stats["backend"] = "rk4", backend_name(model)
    if stats["diverged"]:
        from .run import warn_fault

        warn_fault("simulate", "rk4", stats, t_out, stacklevel=2,
                   hint="use a smaller dt or method='auto' (RK4 steps within the plant's stability limit between "
                        "the controller's samples), or check the controller's gains at its sample rate")
    if slaved is None:
        q, qd = X[:, :nq], X[:, nq:]
    else:  # the dropped coordinates at the samples, from the run's last solution
        na = reduced.nq
        q, qd, _, _ = slaved.solve(X[:, :na], X[:, na:], tau=taus)
        stats["reduced"] = {"dropped": reduced.dropped_names, "above_hz": reduced.above_hz, "static": reduced.static}
    meas = None
    sensors = getattr(controller, "sensors", None)
    if sensors is not None and record["y"] is not None:
        meas = Measurements({name: Channel(record["t"], record["y"][:, i], record["true"][:, i])
                             for i, name in enumerate(sensors.names)})
    return Result(t=np.asarray(t_out), q=q, qd=qd, tau=taus, energy=energy(full, model, q, qd), robot=full,
                  method="rk4", stats=stats, controller=controller, diverged=stats["diverged"],
                  t_diverged=stats["t_fault"], measurements=meas,
                  estimate={"t": record["t"], "x": record["estimate"]})
