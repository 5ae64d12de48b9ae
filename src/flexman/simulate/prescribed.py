"""Prescribed joint motion: the joints follow a given q_r(t) exactly, the flexible
coordinates respond, and the joint torques that the motion needs are recorded.

With q = [q_r; q_f] the equations of motion M qdd + b = S tau split into a joint block and a
flexible block::

    M_rr qdd_r + M_rf qdd_f + b_r = tau      (joint rows: the torques, unknown)
    M_fr qdd_r + M_ff qdd_f + b_f = 0        (flexible rows: no actuator)

With qdd_r given, the flexible rows alone fix qdd_f = -M_ff^-1 (b_f + M_fr qdd_r); the joint
rows then give tau. Only (q_f, qd_f) are integrated, so the joints never drift from the
prescription. The work of the joint torques, W' = tau . qd_r, is integrated beside them,
so that the energy balance E(t) - E(0) = W(t) (undamped arm) can be checked at the
integrator's own accuracy.
"""
from __future__ import annotations

import numbers
import time

import numpy as np

from ..model import inputs
from ..model.errors import SingularMatrixError
from ..model.limits import MAX_JOINT_ACCELERATION, MAX_JOINT_POSITION, MAX_JOINT_RATE
from .backend import evaluator, fixed_step_work, mass_and_bias
from .compiled_loop import plan, trajectory_struct
from .integrators import RHO_INF, finished
from .result import Result
from .run import backend_name, check_start, energy, prepare, run_loop

__all__ = ["motion_input", "check_resolved", "split_dynamics", "simulate_prescribed", "MOTION_LIMITS"]


def motion_input(prescribed, n_joints):
    """``prescribed`` as a checked function t -> (q_r, qd_r, qdd_r), each (n_joints,).

    Anything callable as ``traj(t)`` returning three arrays of n_joints values (positions,
    rates, accelerations) is accepted: the :mod:`flexman.trajectory` objects, or a plain
    function. A wrong shape or a non-finite value is one ``ValueError`` naming the time.
    """
    if not callable(prescribed):
        raise ValueError(f"prescribed: expected a function traj(t) -> (q, qd, qdd) (e.g. a flexman.trajectory "
                         f"object), got {type(prescribed).__name__}")

    def motion(t):
        out = None
        try:
            out = prescribed(t)
            parts = list(out) if isinstance(out, (tuple, list)) else None
        except TypeError:
            parts = None
        if parts is None or len(parts) != 3:
            raise ValueError(f"prescribed: traj(t) must return (q, qd, qdd), three arrays of n_joints = {n_joints} "
                             f"values; at t = {t:g} s it returned {_describe(out)}")
        checked = []
        for name, value in zip(("q", "qd", "qdd"), parts):
            arr = inputs.real(inputs.array(value, f"prescribed {name}"), f"prescribed {name}")
            if arr.size != n_joints or arr.ndim > 1 and arr.shape != (n_joints, 1):
                raise ValueError(f"prescribed: {name} at t = {t:g} s has shape {arr.shape}; expected n_joints = "
                                 f"{n_joints} values (one per joint)")
            arr = arr.reshape(n_joints)
            if not np.all(np.isfinite(arr)):
                i = int(np.argmin(np.isfinite(arr)))
                raise ValueError(f"prescribed: {name}[{i}] at t = {t:g} s is {float(arr[i])!r}; every entry must be a finite number")
            limit, unit = MOTION_LIMITS[name]
            if np.any(np.abs(arr) > limit):
                i = int(np.argmax(np.abs(arr)))
                raise ValueError(f"prescribed: {name}[{i}] at t = {t:g} s is {float(arr[i]):g}; beyond the supported "
                                 f"magnitude {limit:g} {unit} (README, Limits)")
            checked.append(arr)
        return checked

    return motion


#: the largest prescribed position, rate and acceleration (rad or m, per s, per s^2): past them the
#: dynamics overflow (an acceleration of 1e308) or sin and cos lose every digit (a start at 1e300)
MOTION_LIMITS = {"q": (MAX_JOINT_POSITION, "rad (m)"), "qd": (MAX_JOINT_RATE, "rad/s (m/s)"),
                 "qdd": (MAX_JOINT_ACCELERATION, "rad/s^2 (m/s^2)")}


#: the fewest output steps a prescribed move may last. RK4 sees the joint acceleration only at whole
#: and half steps: a quintic move of flx_three_link's first joint over 1.5 steps gives a tip
#: deflection 2.6 times the converged one, over 3 steps 19 % off, 4 steps 11 %, 5 steps 1.3 %,
#: 10 steps 0.08 % (dt = 1 ms against dt = 10 us)
MIN_MOVE_STEPS = 5


def check_resolved(prescribed, step: float) -> None:
    """A move shorter than MIN_MOVE_STEPS steps is integrated with large errors (less than one
    step: the joints jump between two samples), silently. Refuse it (trajectories that say how
    long they move: ``t_start``, ``t_end``)."""
    try:
        duration = float(prescribed.t_end) - float(prescribed.t_start)
    except (AttributeError, TypeError, ValueError):
        return
    if 0 < duration < MIN_MOVE_STEPS * step * (1 - 1e-9):
        raise ValueError(f"prescribed: the move lasts {duration:g} s, {duration / step:.3g} steps of dt = {step:g} s; "
                         f"a move needs at least {MIN_MOVE_STEPS} steps (the integrator samples its acceleration only "
                         f"at whole and half steps: over 1.5 steps a tip deflection comes out 2.6 times too large); "
                         f"use dt <= {duration / 10:.3g} s or a slower move")


def _describe(value) -> str:
    if isinstance(value, numbers.Number):
        return "a single number"
    shape = getattr(value, "shape", None)
    return f"an array of shape {shape}" if shape is not None else type(value).__name__


def split_dynamics(model, n_joints):
    """A function (q, qd, qdd_r) -> (qdd_f, tau): the flexible accelerations and the joint
    torques of the motion with joint accelerations qdd_r (the partition in the module doc)."""
    r = slice(0, n_joints)
    f = slice(n_joints, None)

    def solve(q, qd, qdd_r):
        M, b = mass_and_bias(model, q, qd)
        M, b = np.asarray(M, dtype=float), np.asarray(b, dtype=float)
        rhs = -(b[f] + M[f, r] @ qdd_r)
        try:
            qdd_f = np.linalg.solve(M[f, f], rhs) if rhs.size else rhs
        except np.linalg.LinAlgError:
            raise SingularMatrixError("prescribed motion: the flexible block of the mass matrix is singular at "
                                      "this state") from None
        return qdd_f, M[r, r] @ qdd_r + M[r, f] @ qdd_f + b[r]

    return solve


def _joint_samples(prescribed, motion, t_grid, nj):
    """(q_r, qd_r, qdd_r) at every output time, each (len(t_grid), nj), checked: a built-in
    trajectory in one vectorized call, anything else (or a non-finite value or one beyond
    MOTION_LIMITS, to name its time) time by time through ``motion``."""
    if trajectory_struct(prescribed, nj, []) is not None:
        parts = [np.asarray(a, dtype=float) for a in prescribed(t_grid)]
        if all(p.shape == (len(t_grid), nj) and np.all(np.isfinite(p)) and np.all(np.abs(p) <= MOTION_LIMITS[k][0])
               for k, p in zip(("q", "qd", "qdd"), parts)):
            return parts
    rows = [motion(float(t)) for t in t_grid]
    return [np.array([r[k] for r in rows]).reshape(len(t_grid), nj) for k in range(3)]


def _rigid_run(robot, model, prescribed, motion, t_grid, joint_samples, why):
    """A rigid arm on a prescribed motion has no state to integrate: its coordinates are the
    prescription and its torques the inverse dynamics, one batched call at the output times and
    the half steps. The work of the torques is RK4's own quadrature of the power (for a rate that
    depends on time only, RK4 is Simpson's rule), so the result equals the stepped run's to
    round-off. None (the stepped run then says what is wrong) when a torque is not finite."""
    start = time.perf_counter()
    nj = robot.n_joints
    q, qd, qdd = joint_samples
    mid = 0.5 * (t_grid[1:] + t_grid[:-1])
    half = _joint_samples(prescribed, motion, mid, nj) if len(mid) else [np.zeros((0, nj))] * 3
    with np.errstate(all="ignore"):
        tau = np.asarray(model.inverse_dynamics(q, qd, qdd), dtype=float).reshape(len(t_grid), nj)
        tau_half = np.asarray(model.inverse_dynamics(*half), dtype=float).reshape(len(mid), nj) if len(mid) else half[0]
    if not (np.all(np.isfinite(tau)) and np.all(np.isfinite(tau_half))):
        return None
    power, power_half = np.sum(tau * qd, axis=1), np.sum(tau_half * half[1], axis=1)
    work = np.concatenate([[0.0], np.cumsum(np.diff(t_grid) / 6.0 * (power[:-1] + 4.0 * power_half + power[1:]))])
    stats = {"steps": len(t_grid) - 1, **finished("a rigid arm on its prescription: nothing to integrate"),
             "rhs_evaluations": 0, "wall_time": time.perf_counter() - start, "loop": "python",
             "loop_reason": why, "backend": backend_name(model), "method": "rk4"}
    return Result(t=np.asarray(t_grid), q=q, qd=qd, tau=tau, energy=energy(robot, model, q, qd), robot=robot,
                  method="rk4", stats=stats, diverged=False, t_diverged=None, work=work, prescribed=prescribed)


def simulate_prescribed(robot, prescribed, t_final, dt, method, rtol, atol, q0, qd0, progress, max_step, backend,
                        loop="auto", rho_inf=RHO_INF):
    """The prescribed-motion run behind ``simulate(..., prescribed=traj)``: see the module doc.
    ``q0``, ``qd0`` (nq values, optional) give the initial flexible state; their joint entries,
    when given, must agree with the prescription at t = 0. A built-in trajectory on a compiled
    model runs in the compiled loop (:mod:`.compiled_loop`)."""
    if getattr(getattr(robot, "robot", robot), "n_motors", 0):
        raise ValueError("prescribed: prescribed joint motion is not supported with elastic joints yet (their "
                         "torques act on the motor coordinates); drive the run with a controller or a torque instead")
    method, q0, qd0, t_grid, _, _ = prepare(robot, t_final, dt, method, q0, qd0, None, None)
    check = None
    if method == "auto":  # the flexible subsystem with the joints held sets RK4's step
        from .stability import plant_step_check

        check = plant_step_check(robot, dt, locked=True)
        method = check["method"]
    nj, nq = robot.n_joints, robot.nq
    nf = nq - nj
    motion = motion_input(prescribed, nj)
    if len(t_grid) > 1:
        check_resolved(prescribed, float(t_grid[1] - t_grid[0]))
    joint_samples = _joint_samples(prescribed, motion, t_grid, nj)  # shapes, finiteness, magnitudes before any dynamics
    start = motion(0.0)
    for name, given, value in (("q0", q0, start[0]), ("qd0", qd0, start[1])):
        gap = np.abs(given[:nj] - value)
        if np.any(given[:nj] != 0.0) and np.any(gap > 1e-9 * (1.0 + np.abs(value))):
            raise ValueError(f"{name}: its joint entries {given[:nj].tolist()} differ from the prescribed motion at "
                             f"t = 0 ({value.tolist()}); leave them 0 (the prescription sets them) or match them")
    model = evaluator(robot, backend, work=fixed_step_work(method, len(t_grid) - 1))
    compiled, why = plan(model, method, nj, prescribed=prescribed, loop=loop)
    solve = split_dynamics(model, nj)
    latest = {}

    def full_state(t, x):
        q_r, qd_r, qdd_r = motion(t)
        return np.concatenate([q_r, x[:nf]]), np.concatenate([qd_r, x[nf:2 * nf]]), qdd_r

    def needed_torque(t, x):
        q, qd, qdd_r = full_state(t, x)
        qdd_f, tau = solve(q, qd, qdd_r)
        latest.update(t=t, x=x, qdd_f=qdd_f, power=float(tau @ qd[:nj]))
        return tau

    def rates(t, x, tau):
        if latest.get("x") is not x or latest["t"] != t:  # integrate always asks for tau first; be safe
            needed_torque(t, x)
        return latest["qdd_f"], np.array([latest["power"]])

    q_start = np.concatenate([start[0], q0[nj:]])
    check_start(model, q_start, {"rtol": rtol, "atol": atol, "max_step": max_step})
    if nf == 0 and method == "rk4" and compiled is None:
        direct = _rigid_run(robot, model, prescribed, motion, t_grid, joint_samples, why)
        if direct is not None:
            if check is not None:
                direct.stats["method_reason"] = check["reason"]
            return direct
    x0 = np.concatenate([q0[nj:], qd0[nj:], [0.0]])
    t_out, X, taus, stats = run_loop(compiled, why, model, progress, q_start, np.concatenate([start[1], qd0[nj:]]),
                                     f"simulate prescribed ({method})", rates, needed_torque, x0, t_grid, nf, nj,
                                     method, rtol, atol, max_step, rho_inf)
    stats["method"] = method
    if check is not None:
        stats["method_reason"] = check["reason"]
    n = len(t_out)  # every method's outputs are the first n grid times
    q = np.column_stack([joint_samples[0][:n], X[:, :nf]])
    qd = np.column_stack([joint_samples[1][:n], X[:, nf:2 * nf]])
    return Result(t=np.asarray(t_out), q=q, qd=qd, tau=taus, energy=energy(robot, model, q, qd), robot=robot,
                  method=method, stats=stats, diverged=stats["diverged"], t_diverged=stats["t_fault"],
                  work=X[:, 2 * nf], prescribed=prescribed)
