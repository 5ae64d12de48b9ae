"""The shared machinery of every simulation entry point (:func:`~flexman.simulate.simulate`,
prescribed motion, ``simulate_batch``): torque inputs and controller parts, the progress bar,
output times, checked inputs (:func:`prepare`, :func:`check_start`), :func:`integrate` and
:func:`run_loop` (a run in the compiled loop or in :func:`integrate`).

The state is x = [q, qd, z], where z holds the internal states a controller declares
(``n_states``, e.g. the integral of a PID's error). Integrating z with the robot instead of
updating it inside the right-hand side keeps adaptive methods correct: they evaluate the
right-hand side at trial points and reject steps.
"""
from __future__ import annotations

import sys
import time
import warnings

import numpy as np

from ..model import inputs
from ..model.checks import check_mass_matrix
from ..model.errors import FlexmanRuntimeWarning
from ..model.limits import check_run_size
from . import integrators

__all__ = ["saturate", "drive_limits", "energy", "Progress", "show_progress", "torque_values", "torque_input", "controller_parts", "output_times",
           "prepare", "check_start", "check_first_torque", "warn_fault", "integrate", "backend_name", "run_loop"]


# ----- inputs ------------------------------------------------------------------------
def saturate(tau, limit):
    """``tau`` clipped to +-``limit`` per joint (unchanged when ``limit`` is None): the one
    saturation of the Python loops, a controller's ``tau_max`` and the drives' torque limits
    (the C loops' twin is ``fm_saturate``, :mod:`flexman.codegen.loop`)."""
    return tau if limit is None else np.clip(tau, -limit, limit)


def drive_limits(model):
    """The drives' joint-side torque limits of ``model`` (a robot or its compiled model), or None."""
    return getattr(getattr(model, "robot", model), "torque_limits", None)


def torque_values(torque, t_grid, n_joints):
    """(kind, values) of the ``torque`` argument: ("none", None), ("constant", (n_joints,)),
    ("samples", (len(t_grid), n_joints)) or ("callable", torque); see :func:`torque_input`."""
    if torque is None:
        return "none", None
    if callable(torque):
        return "callable", torque
    arr = np.asarray(torque, dtype=float)
    n_t = len(t_grid)
    if arr.ndim == 1 and n_joints == 1 and arr.size == n_t and n_t > 1:
        arr = arr[:, None]
    if arr.ndim <= 1:
        return "constant", np.broadcast_to(arr, (n_joints,)).copy()
    if arr.shape != (n_t, n_joints):
        raise ValueError(f"torque: expected shape ({n_t}, {n_joints}) (output times x joints), "
                         f"got {arr.shape}")
    return "samples", arr


def torque_input(torque, t_grid, n_joints):
    """Turn the ``torque`` argument into a function (t, q, qd) -> (n_joints,).

    None: zero. Scalar or (n_joints,): constant. (len(t_grid), n_joints) array (or (len(t_grid),)
    for a one-joint arm): samples on the output grid, interpolated linearly in time (held
    constant outside it). Callable: ``torque(t, q, qd)``.
    """
    kind, arr = torque_values(torque, t_grid, n_joints)
    if kind == "none":
        zero = np.zeros(n_joints)
        return lambda t, q, qd: zero
    if kind == "callable":
        return lambda t, q, qd: np.broadcast_to(np.asarray(torque(t, q, qd), float), (n_joints,))
    if kind == "constant":
        return lambda t, q, qd: arr
    n_t = len(t_grid)
    t_grid = np.asarray(t_grid, dtype=float)

    def sampled(t, q, qd):
        k = int(np.clip(np.searchsorted(t_grid, t, side="right") - 1, 0, n_t - 2))
        w = np.clip((t - t_grid[k]) / (t_grid[k + 1] - t_grid[k]), 0.0, 1.0)
        return (1.0 - w) * arr[k] + w * arr[k + 1]

    return sampled


def controller_parts(controller, n_joints):
    """(n_states, z0, torque(t, q, qd, z), state_derivative(t, q, qd, z)) of a controller.

    A controller is either a plain callable ``controller(t, q, qd) -> tau`` (no states) or an
    object declaring ``n_states`` > 0 with ``torque(t, q, qd, z)`` and
    ``state_derivative(t, q, qd, z)`` (and optionally ``initial_state()``).
    """
    if controller is None:
        zero = np.zeros(n_joints)
        return 0, np.zeros(0), (lambda t, q, qd, z: zero), None
    n_states = int(getattr(controller, "n_states", 0) or 0)
    if n_states == 0:
        if not callable(controller):
            raise ValueError("controller: give a callable controller(t, q, qd) -> tau or an object "
                            "with n_states, torque(t, q, qd, z) and state_derivative(t, q, qd, z)")
        return 0, np.zeros(0), (lambda t, q, qd, z: controller(t, q, qd)), None
    z0 = (np.asarray(controller.initial_state(), dtype=float) if hasattr(controller, "initial_state")
          else np.zeros(n_states))
    return n_states, z0, controller.torque, controller.state_derivative


def energy(robot, model, q, qd):
    """Kinetic + potential energy at the samples (N,): the kinetic part as 1/2 qd^T M(q) qd with
    the compiled mass matrix when ``model`` is compiled (equal to the robot's kinetic energy to
    round-off, and a hundred times cheaper than the interpreted recursion), else the robot's."""
    with np.errstate(over="ignore", invalid="ignore"):  # the last samples of a run that blew up: inf
        if getattr(model, "backend", None) == "c":
            kinetic = 0.5 * np.einsum("ni,nij,nj->n", qd, model.mass_matrix(q), qd)
        else:
            kinetic = robot.kinetic_energy(q, qd)
        return np.asarray(kinetic + robot.potential_energy(q), dtype=float).reshape(len(q))


# ----- progress ----------------------------------------------------------------------
class Progress:
    """A rich progress bar over simulated time; a no-op when disabled."""

    def __init__(self, enabled, t_final, label):
        self.bar = None
        self.t_final = t_final
        self.shown = 0.0
        if enabled:
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(TextColumn("{task.description}"), BarColumn(),
                                TextColumn("t = {task.completed:.3f} / {task.total:.3f} s"),
                                TimeRemainingColumn(), console=Console(stderr=True), transient=True)
            self.task = self.bar.add_task(label, total=t_final)
            self.bar.start()

    def __call__(self, t):
        if self.bar is not None and t - self.shown >= 1e-3 * self.t_final:
            self.shown = t
            self.bar.update(self.task, completed=min(t, self.t_final))

    def close(self):
        if self.bar is not None:
            self.bar.stop()


def show_progress(progress, robot, q0, qd0, n_steps):
    """Auto mode: a bar only on a terminal and when the run should take over a second."""
    if progress is not None:
        return bool(progress)
    if not (hasattr(sys.stderr, "isatty") and sys.stderr.isatty()):
        return False
    start = time.perf_counter()
    robot.forward_dynamics(q0, qd0, np.zeros(robot.n_joints))
    return (time.perf_counter() - start) * 4 * n_steps > 1.0


# ----- output times and checked inputs ------------------------------------------------
def output_size(t_final, dt, floats_each=1) -> tuple:
    """(t_final, dt) checked: numbers > 0, dt <= t_final, and t_final / dt output samples within
    the run-size limits (``floats_each``: floats kept per sample); the one check of a run's size,
    also made by a sweep before it starts a worker."""
    t_final, dt = inputs.positive(t_final, "t_final"), inputs.positive(dt, "dt")
    if dt > t_final:
        raise ValueError(f"dt: {dt:g} s is longer than t_final = {t_final:g} s; use dt <= t_final")
    check_run_size(t_final / dt, floats_each, "output samples", "dt",
                   hint="t_final / dt samples: use a larger dt; an adaptive method still takes the steps it needs between them")
    return t_final, dt


def run_floats(robot) -> int:
    """Floats a run keeps per output sample: q, qd, energy parts, tau, t, work."""
    return 3 * robot.nq + robot.n_joints + 2


def output_times(t_final, dt, floats_each=1):
    """0, dt, 2 dt, ... up to t_final (t_final itself is always the last time); refused before
    allocation past the run-size limits (:func:`output_size`)."""
    t_final, dt = output_size(t_final, dt, floats_each)
    n = int(np.floor(t_final / dt * (1 + 1e-12)))
    t = dt * np.arange(n + 1)
    if t_final - t[-1] > 1e-9 * dt:
        t = np.append(t, t_final)
    t[-1] = t_final
    return t


def prepare(robot, t_final, dt, method, q0, qd0, torque, controller):
    """Checked inputs of a run: method, initial state, output times, torque input and the
    controller's parts (shared by every simulation entry point)."""
    if not all(hasattr(robot, a) for a in ("nq", "n_joints", "forward_dynamics")):
        raise ValueError(f"simulate: expected a Robot (or its compiled model), got {type(robot).__name__}")
    method = {"RK4": "rk4"}.get(method, method)
    if method not in integrators.METHODS + ("auto",):
        raise ValueError(f"method: unknown {method!r:.40}; use one of auto, {', '.join(integrators.METHODS)}")
    nq, nj = robot.nq, robot.n_joints
    q0, qd0 = (np.zeros(nq) if x is None else inputs.finite(inputs.state(robot, x, name), name)
               for x, name in ((q0, "q0"), (qd0, "qd0")))
    if q0.shape != (nq,) or qd0.shape != (nq,):
        raise ValueError(f"q0, qd0: expected one state of nq = {nq} values each ({', '.join(robot.coordinate_names)})")
    t_grid = output_times(t_final, dt, run_floats(robot))
    if torque is not None and not callable(torque):
        inputs.finite(inputs.array(torque, "torque"), "torque")
    return method, q0, qd0, t_grid, torque_input(torque, t_grid, nj), controller_parts(controller, nj)


def check_start(robot, q0, tolerances=None):
    """Before a run: tolerances > 0 and a usable mass matrix at q0 (the coordinate that
    carries no mass is named). The applied torque is checked at the first evaluation
    (:func:`integrate`), so a torque function or controller is not called an extra time."""
    for name, value in (tolerances or {}).items():
        if name == "max_step" and value == np.inf:
            continue
        inputs.positive(value, name)
    check_mass_matrix(robot, q0)


# ----- integration -------------------------------------------------------------------
TORQUE_PARTS = "torque argument plus controller output"


def check_first_torque(t, tau):
    """The torque of a run's first evaluation: a non-finite value there is bad input (NaN gains,
    a NaN torque), a one-line ValueError, not a divergence."""
    inputs.finite(np.asarray(tau, dtype=float), f"torque at t = {t:g} s ({TORQUE_PARTS})")


def warn_fault(label, method, info, t_out, stacklevel=3, hint=None):
    """The one warning of a run that stopped early (``result.diverged``); ``hint``: what to do,
    when the method's own advice does not apply (a sampled controller's run)."""
    hint = hint or {"rk4": "use a smaller dt, method='auto' or an implicit method ('generalized_alpha', Radau, BDF)",
                    "generalized_alpha": "use a smaller dt (the Newton iteration of a step did not converge)",
                    "radau5": "check the model and its inputs at that time, or loosen rtol/atol"}.get(
        method, "loosen the tolerances or check the model")
    warnings.warn(f"{label}: {method} stopped at t = {info['t_fault']:g} s: {info['message']}; the result "
                  f"holds the {len(t_out)} samples up to t = {t_out[-1]:g} s (result.diverged is True); {hint}",
                  FlexmanRuntimeWarning, stacklevel=stacklevel + 1)


def integrate(label, rates, total_torque, x0, t_grid, nq, nj, method, rtol, atol, max_step, progress=None,
              stacklevel=3, rho_inf=integrators.RHO_INF):
    """Integrate the state x = [q, qd, rest] (rest: controller states and whatever the caller
    adds) over ``t_grid``: ``rates(t, x, tau) -> (qdd, rest')`` at the applied joint torques
    ``total_torque(t, x)``. RK4 at the grid, or a ``solve_ivp`` method with its output on the
    grid. Returns (t, X, torques (len(t), nj), stats); ``label`` names the caller in warnings
    (``stacklevel``: their frame, counted from this function)."""
    counter = {"rhs": 0, "tau": None}

    def rhs(t, x):
        counter["rhs"] += 1
        tau = total_torque(t, x)
        if not np.all(np.isfinite(tau)):
            if counter["rhs"] == 1:  # at the initial state: bad input (NaN gains, a NaN torque), not divergence
                check_first_torque(t, tau)
            raise FloatingPointError(f"the applied torque is not finite at t = {t:g} s ({TORQUE_PARTS})")
        counter["tau"] = tau
        out = np.empty_like(x)
        out[:nq] = x[nq:2 * nq]
        out[nq:2 * nq], out[2 * nq:] = rates(t, x, tau)
        return out

    start = time.perf_counter()
    if method in ("rk4", "generalized_alpha"):
        taus = np.empty((len(t_grid), nj))

        def record(k):
            taus[k] = counter["tau"]

        if method == "rk4":
            X, info = integrators.rk4(rhs, t_grid, x0, after_first_stage=record, progress=progress)
        else:
            X, info = integrators.generalized_alpha(rhs, t_grid, x0, rho_inf, after_first_stage=record,
                                                    progress=progress)
        t_out, taus = t_grid[: len(X)], taus[: len(X)]
        taus[-1] = total_torque(t_out[-1], X[-1])
    else:
        def rhs_progress(t, x):
            progress(t)
            return rhs(t, x)

        f = rhs if progress is None else rhs_progress
        t_out, X, info = integrators.adaptive(f, t_grid, x0, method, rtol, atol, max_step)
        taus = np.array([total_torque(t, x) for t, x in zip(t_out, X)]).reshape(len(t_out), nj)
    if not info["success"]:
        warn_fault(label, method, info, t_out, stacklevel)
    return t_out, X, taus, {"rhs_evaluations": counter["rhs"], "wall_time": time.perf_counter() - start,
                            "loop": "python", **info}


def backend_name(model) -> str:
    """``stats["backend"]``: what evaluated a run's dynamics."""
    return {"c": "compiled", "numpy": "generated NumPy"}.get(getattr(model, "backend", None), "numeric")


def run_loop(compiled, why, model, progress, q0, qd0, title, rates, total_torque, x0, t_grid, nq, nj, method, rtol,
             atol, max_step, rho_inf=integrators.RHO_INF):
    """(t, X, taus, stats) of one run: one call of ``compiled`` (the loop that
    ``compiled_loop.plan`` made) when there is one, else :func:`integrate` under a progress bar
    (``progress``, from the start state q0, qd0) with ``stats["loop_reason"]`` = ``why``; and
    ``stats["backend"]``. The tail that ``simulate`` and prescribed motion share; a fault's
    warning names their caller."""
    if compiled is None and method in integrators.COMPILED_METHODS:
        raise ValueError(f"method: {method!r} runs in the compiled loop only, and this run cannot ({why}); "
                         "use method='Radau' (SciPy's Radau IIA) for it")
    if method in integrators.COMPILED_METHODS and not rtol >= integrators.RADAU_MIN_RTOL:
        raise ValueError(f"rtol: {rtol!r:.40} is below round-off for {method} (its error estimate needs rtol >= "
                         f"{integrators.RADAU_MIN_RTOL:.3g}); use a larger rtol")
    if compiled is not None:
        t_out, X, taus, stats = compiled.run(x0, t_grid, stacklevel=4, method=method, rho_inf=rho_inf, rtol=rtol,
                                             atol=atol, max_step=max_step)
    else:
        bar = Progress(show_progress(progress, model, q0, qd0, len(t_grid) - 1), t_grid[-1], title)
        try:
            t_out, X, taus, stats = integrate("simulate", rates, total_torque, x0, t_grid, nq, nj, method, rtol,
                                              atol, max_step, bar, stacklevel=4, rho_inf=rho_inf)
        finally:
            bar.close()
        stats["loop_reason"] = why
    stats["backend"] = backend_name(model)
    return t_out, X, taus, stats
