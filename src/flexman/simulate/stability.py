"""The step-size check of fixed-step runs: an RK4 step above the stability limit of the model's
highest mode is flagged before the run, with the largest stable step named.

Why: classic RK4 applied to an undamped oscillation of frequency w is stable only while
``|h w| <= 2 sqrt(2)`` (its stability region meets the imaginary axis at +-2.83 i). A flexible
arm's highest mode (a stiff second bending mode can be 1e4 rad/s) sets that limit, not the motion
the user looks at; past it the run grows without bound, usually after a stretch that looks fine.

The highest frequency is the largest of the linearised arm at rest (``M^-1 K``, elastic and
gravity stiffness; joints free, or locked when the joints are prescribed, which can only lower
it), computed once per model content.

A run under a controller is checked on its *closed loop* as well (:func:`closed_loop_step`):
the Jacobian of the whole right-hand side (plant, controller law and the controller's own states)
at the start state and at a few points along the reference, its eigenvalues, and for each the
largest step h with |R(h lambda)| <= 1 for RK4's stability polynomial R. A controller whose
poles are faster than the plant's (with the torque held) is named as the cause.
"""
from __future__ import annotations


import warnings

import numpy as np

from ..model import engine
from ..model.errors import FlexmanWarning

RK4_BOUNDARY = 2.0 * np.sqrt(2.0)  # |h lambda| where RK4's stability region crosses the imaginary axis


class StepWarning(FlexmanWarning):
    """A fixed step above the stability limit of the model's highest mode."""


def highest_frequency(robot, locked=False) -> float:
    """Largest natural frequency (rad/s) of the arm linearised at rest (0 for a rigid arm without
    elastic joints)."""
    if robot.nf == 0 and not getattr(robot, "n_motors", 0):
        return 0.0

    def build(r):  # the analyses' frequencies, through the model's engine slot (no import across packages)
        natural_frequencies = engine.require("natural_frequencies")
        w = np.asarray(natural_frequencies(r, None, joints="locked" if locked else "free"), dtype=float)
        return float(w.max(initial=0.0))

    return robot.derived("highest_frequency_locked" if locked else "highest_frequency", build)


def largest_stable_step(robot, locked=False) -> float:
    """The largest RK4 step (s) that keeps the model's highest mode stable (inf for rigid arms)."""
    w = highest_frequency(robot, locked)
    return RK4_BOUNDARY / w if w > 0 else np.inf


def rk4_substeps(robot, interval) -> int:
    """RK4 steps that keep an integration over ``interval`` s stable on ``robot``'s highest mode
    (:func:`largest_stable_step`, with a 10 % margin): 1 for soft or rigid arms, more for the
    stiff beams and drives of real arms (a sampled plant between its samples, a filter's
    prediction over one)."""
    if not (hasattr(robot, "derived") and getattr(robot, "nf", 0) + getattr(robot, "n_motors", 0)):
        return 1
    h = largest_stable_step(robot)
    return max(1, int(np.ceil(interval / (0.9 * h) - 1e-9))) if np.isfinite(h) else 1


def check_step(robot, dt, method, prescribed=False, sampled=False) -> str:
    """Warn (:class:`StepWarning`) and return the message when a fixed RK4 step ``dt`` exceeds
    :func:`largest_stable_step`; '' otherwise. Inputs that are not a positive step are left to
    the run's own checks (so is an argument that is not a robot: its message comes from there).
    ``sampled``: the plant between a sampled controller's samples (RK4 only; ``method='auto'``
    divides dt there)."""
    if method != "rk4" or not hasattr(robot, "derived") or getattr(robot, "nf", 0) + getattr(robot, "n_motors", 0) == 0:
        return ""
    try:
        dt = float(dt)
    except (TypeError, ValueError):
        return ""
    if not (np.isfinite(dt) and dt > 0):
        return ""
    h = largest_stable_step(robot, locked=prescribed)
    if dt <= h:
        return ""
    w = highest_frequency(robot, prescribed)
    text = (f"dt: {dt:g} s is above RK4's stability limit for this model: its highest mode "
            f"({w:.4g} rad/s{', joints prescribed' if prescribed else ''}) needs dt <= 2*sqrt(2)/w = {h:.3g} s; "
            f"the run will likely blow up - use dt <= {h:.3g} s or "
            + ("method='auto' (RK4 steps within the limit between the controller's samples)" if sampled else
               "an implicit method (method='Radau')") + reduction_hint(robot, dt))
    warnings.warn(text, StepWarning, stacklevel=3)
    return text


def reduction_hint(robot, dt) -> str:
    """The clause that names ``fm.reduce`` where it would help: the arm's highest mode is above
    what RK4 at ``dt`` resolves while some of its modes are below that (so a reduced model keeps
    those and RK4 at dt runs); '' otherwise (a reduced model already, no assumed-mode beams)."""
    links = getattr(robot, "links", None)
    if getattr(robot, "is_reduced", False) or not links or not hasattr(robot, "derived") or getattr(robot, "nf", 0) == 0:
        return ""
    if any(link.beam is not None and link.beam.nf and (link.beam.shapes == "finite_elements" or link.joint == "prismatic")
           for link in links):
        return ""

    def build(r):
        natural_frequencies = engine.require("natural_frequencies")
        return np.asarray(natural_frequencies(r, None, joints="free"), dtype=float)

    try:
        w = robot.derived("free_frequencies", build)
    except (ValueError, ArithmeticError, np.linalg.LinAlgError):
        return ""
    resolved = 0.9 * RK4_BOUNDARY / float(dt)  # rad/s
    flexible = w[w > 1e-6 * max(1.0, w.max(initial=0.0))]
    if not flexible.size or flexible.max() <= resolved or flexible.min() >= resolved:
        return ""
    hz = resolved / (2 * np.pi)
    cutoff = float(f"{hz:.2g}")
    return (f", or drop the modes above {cutoff:g} Hz, which dt does not resolve, with "
            f"fm.reduce(robot, above_hz={cutoff:g}) (docs/stiff.md)")


# ----- the closed loop ---------------------------------------------------------------------------
def rk4_amplification(z):
    """RK4's stability polynomial R(z) = 1 + z + z^2/2 + z^3/6 + z^4/24."""
    return 1.0 + z * (1.0 + z * (0.5 + z * (1.0 / 6.0 + z / 24.0)))


def rk4_step_limit(eigenvalues) -> float:
    """The largest h with |R(h lambda)| <= 1 for every eigenvalue lambda of a stable linear system
    (inf when there are none); eigenvalues with a clearly positive real part (a physically
    unstable motion, which no step makes stable) and those at zero are skipped."""
    limit = np.inf
    for lam in np.asarray(eigenvalues, dtype=complex).ravel():
        size = abs(lam)
        if size < 1e-9 or lam.real > 1e-6 * size + 1e-9:
            continue
        lam = complex(min(lam.real, 0.0), lam.imag)
        lo, hi = 0.0, 3.0 / size  # RK4's region reaches no farther than |z| = 2.79 on the real axis, 2.83 on the imaginary
        while abs(rk4_amplification(hi * lam)) <= 1.0 + 1e-12:
            hi *= 2.0
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if abs(rk4_amplification(mid * lam)) <= 1.0 + 1e-12 else (lo, mid)
        limit = min(limit, lo)
    return limit


def jacobian_eigenvalues(f, t, x):
    """Eigenvalues of df/dx at (t, x) (forward differences)."""
    from .integrators import jacobian

    x = np.asarray(x, dtype=float)
    return np.linalg.eigvals(jacobian(f, t, x, f(t, x)))


def closed_loop_step(rhs, open_rhs, points):
    """(h_closed, h_plant, (t, lambda) of the eigenvalue that sets h_closed) over ``points``
    [(t, x), ...]: the largest RK4 step of the closed loop ``rhs(t, x)`` and of the plant alone
    ``open_rhs(t, x)`` (the torque held at its value there), each the smallest over the points."""
    h_closed, h_plant, worst = np.inf, np.inf, None
    for t, x in points:
        lam = jacobian_eigenvalues(rhs, t, x)
        h = rk4_step_limit(lam)
        if h < h_closed:
            h_closed = h
            finite = [v for v in lam if abs(v) > 1e-9 and v.real <= 1e-6 * abs(v) + 1e-9]
            worst = (t, max(finite, key=abs)) if finite else None
        if open_rhs is not None:
            h_plant = min(h_plant, rk4_step_limit(jacobian_eigenvalues(open_rhs(t, x), t, x)))
    return h_closed, h_plant, worst


def closed_loop_message(dt, h_closed, h_plant, worst, hint=""):
    """The one line of an RK4 step above the closed loop's limit (the controller named where its
    poles, not the plant's, set the limit)."""
    t, lam = worst if worst is not None else (0.0, complex(np.nan))
    cause = ""
    if h_plant > 1.5 * h_closed:
        cause = (f"; the controller's poles are faster than the plant's (the plant alone allows dt <= {h_plant:.3g} s): "
                 "lower its gains or integrate implicitly")
    return (f"dt: {dt:g} s is above RK4's stability limit for this closed loop: its fastest eigenvalue "
            f"({abs(lam):.4g} rad/s at t = {t:g} s) needs dt <= {h_closed:.3g} s{cause}; "
            f"the run will likely blow up - use dt <= {0.9 * h_closed:.3g} s, "
            f"method='auto' or method='generalized_alpha' (implicit, in the compiled loop){hint}")


def reference_points(controller, x0, nq, t_final, count=3):
    """(t, x) where the closed loop is checked: the start, and ``count`` times along the
    controller's reference (joints and rates on it, the rest as at the start)."""
    points = [(0.0, np.asarray(x0, dtype=float))]
    traj = getattr(controller, "traj", None)
    if not callable(traj):
        return points
    end = min(float(t_final), float(getattr(traj, "t_end", t_final) or t_final))
    for k in range(1, count + 1):
        t = end * k / (count + 1)
        try:
            q_r, qd_r, _ = traj(t)
        except Exception:  # a hand-written reference that cannot be sampled here: the start only
            return points
        x = np.array(x0, dtype=float)
        nj = len(np.atleast_1d(q_r))
        x[:nj], x[nq:nq + nj] = q_r, qd_r
        points.append((t, x))
    return points


def loop_step_check(robot, model, rates, total_torque, x0, t_grid, nq, controller, dt, method) -> dict:
    """The closed-loop step check of one run (see the module doc): {"method": what ``auto``
    runs, "reason", "rk4_limit", "plant_limit"}. For ``method="rk4"`` a step above the limit is
    warned (:class:`StepWarning`) before the run; for ``"auto"`` it selects generalized-alpha."""
    def loop(torque):  # x' = [qd, qdd, z'] under the joint torques torque(t, x)
        def f(t, x):
            out = np.empty_like(x)
            out[:nq] = x[nq:2 * nq]
            out[nq:2 * nq], out[2 * nq:] = rates(t, x, torque(t, x))
            return out
        return f

    rhs = loop(total_torque)

    def open_rhs(t0, x0_):  # the plant alone: the torque held at its value at (t0, x0_)
        held = np.asarray(total_torque(t0, x0_), dtype=float)
        return loop(lambda t, x: held)

    dt = float(dt)
    try:
        with np.errstate(all="ignore"):
            points = reference_points(controller, x0, nq, t_grid[-1])
            h, h_plant, worst = closed_loop_step(rhs, open_rhs if controller is not None else None, points)
    except (ValueError, ArithmeticError, np.linalg.LinAlgError):  # a state the linearization cannot take: the run says
        return {"method": "rk4" if method == "rk4" else "generalized_alpha", "reason": "the step check could not "
                "linearize the loop; the implicit method is the safe choice", "rk4_limit": None, "plant_limit": None}
    out = {"rk4_limit": None if not np.isfinite(h) else float(h),
           "plant_limit": None if not np.isfinite(h_plant) else float(h_plant)}
    if dt <= 0.9 * h:
        return {"method": "rk4", "reason": f"RK4 at dt = {dt:g} s is stable (the loop allows dt <= {h:.3g} s)", **out}
    if controller is None:
        h_plant = h  # no controller: the loop is the plant
    if method == "rk4":
        text = closed_loop_message(dt, h, h_plant, worst, reduction_hint(robot, dt))
        warnings.warn(text, StepWarning, stacklevel=4)
        return {"method": "rk4", "reason": text, **out}
    from .backend import notice

    fastest = abs(worst[1]) if worst else float("nan")
    cause = ", set by the controller's poles" if h_plant > 1.5 * h else ""
    notice(f"method='auto': generalized-alpha (implicit) at dt = {dt:g} s; RK4 would need dt <= {h:.3g} s "
           f"(the loop's fastest eigenvalue, {fastest:.3g} rad/s{cause}){reduction_hint(robot, dt)}",
           key=("auto", getattr(robot, "name", ""), dt))
    return {"method": "generalized_alpha", "reason": f"RK4 at dt = {dt:g} s is above the loop's stability limit "
            f"{h:.3g} s (its fastest eigenvalue {fastest:.4g} rad/s{cause})", **out}


def plant_step_check(robot, dt, locked=False) -> dict:
    """``method="auto"``'s choice from the plant's highest mode alone (:func:`largest_stable_step`;
    ``locked``: the joints held, as under prescribed motion): RK4 where it allows ``dt``, else
    generalized-alpha. Used for prescribed motion and when the loop holds Python functions
    (never called outside their run)."""
    dt = float(dt)
    springs = getattr(robot, "nf", 0) + getattr(robot, "n_motors", 0)  # beams and elastic joints
    h = largest_stable_step(robot, locked) if hasattr(robot, "derived") and springs else np.inf
    out = {"rk4_limit": None if not np.isfinite(h) else float(h), "plant_limit": None if not np.isfinite(h) else float(h)}
    seen = ("the plant's modes with the joints held" if locked else
            "the plant's modes; a Python controller or torque function is not linearized, its own poles are not seen")
    if dt <= 0.9 * h:
        return {"method": "rk4", "reason": f"RK4 at dt = {dt:g} s is stable for {seen}", **out}
    from .backend import notice

    notice(f"method='auto': generalized-alpha (implicit) at dt = {dt:g} s; RK4 would need dt <= {h:.3g} s"
           f"{reduction_hint(robot, dt)}", key=("auto", getattr(robot, "name", ""), dt))
    return {"method": "generalized_alpha", "reason": f"RK4 at dt = {dt:g} s is above the limit {h:.3g} s of {seen}",
            **out}
