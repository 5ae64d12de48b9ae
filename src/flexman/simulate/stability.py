"""The step-size check of fixed-step runs: an RK4 step above the stability limit of the model's
highest mode is flagged before the run, with the largest stable step named.

Why: classic RK4 applied to an undamped oscillation of frequency w is stable only while
``|h w| <= 2 sqrt(2)`` (its stability region meets the imaginary axis at +-2.83 i). A flexible
arm's highest mode (a stiff second bending mode can be 1e4 rad/s) sets that limit, not the motion
the user looks at; past it the run grows without bound, usually after a stretch that looks fine.

The highest frequency is the largest of the linearised arm at rest (``M^-1 K``, elastic and
gravity stiffness; joints free, or locked when the joints are prescribed, which can only lower
it), computed once per model content. Controller gains are not included: a stiff controller adds
its own fast poles, which this check cannot see.
"""
from __future__ import annotations

import warnings

import numpy as np

RK4_BOUNDARY = 2.0 * np.sqrt(2.0)  # |h lambda| where RK4's stability region crosses the imaginary axis


class StepWarning(UserWarning):
    """A fixed step above the stability limit of the model's highest mode."""


def highest_frequency(robot, locked=False) -> float:
    """Largest natural frequency (rad/s) of the arm linearised at rest (0 for a rigid arm)."""
    if robot.nf == 0:
        return 0.0

    def build(r):
        from ..analysis.frequencies import natural_frequencies

        w = np.asarray(natural_frequencies(r, None, joints="locked" if locked else "free"), dtype=float)
        return float(w.max(initial=0.0))

    return robot.derived("highest_frequency_locked" if locked else "highest_frequency", build)


def largest_stable_step(robot, locked=False) -> float:
    """The largest RK4 step (s) that keeps the model's highest mode stable (inf for rigid arms)."""
    w = highest_frequency(robot, locked)
    return RK4_BOUNDARY / w if w > 0 else np.inf


def check_step(robot, dt, method, prescribed=False) -> str:
    """Warn (:class:`StepWarning`) and return the message when a fixed RK4 step ``dt`` exceeds
    :func:`largest_stable_step`; '' otherwise. Inputs that are not a positive step are left to
    the run's own checks (so is an argument that is not a robot: its message comes from there)."""
    if method != "rk4" or not hasattr(robot, "derived") or getattr(robot, "nf", 0) == 0:
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
            f"the run will likely blow up - use dt <= {h:.3g} s or an implicit method (method='Radau')")
    warnings.warn(text, StepWarning, stacklevel=3)
    return text
