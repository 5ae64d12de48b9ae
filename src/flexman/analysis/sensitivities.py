"""The public sensitivity entry: derivatives of a model quantity at one state
(:mod:`.design_sensitivity`) or of a figure of a simulated manoeuvre (:mod:`.motion_sensitivity`)."""
from __future__ import annotations

import numpy as np

from .design_sensitivity import QUANTITIES, Sensitivity, model_sensitivity
from .motion_sensitivity import FIGURES, motion_sensitivity

__all__ = ["Sensitivity", "sensitivity"]


def sensitivity(robot, quantity, parameters, q=None, qd=None, qdd=None, prescribed=None, t_final=None,
                dt=1e-3) -> Sensitivity:
    """Exact derivatives of ``quantity`` ("inverse_dynamics" at (q, qd, qdd), "mass_matrix" at q,
    "frequencies" at rest at q, joints free, or with ``qd`` about the steady motion at qd's joint
    rates as ``robot.natural_frequencies(q, qd)``) with respect to named physical parameters
    (:mod:`flexman.analysis.physical`: ``mass2``, ``cx2``, ``a2``, ``payload``, ``rhoA2``,
    ``EI2``, ``zeta2``, ``hub_Izz1`` ...). See :mod:`.design_sensitivity` for the method.

    Figures of a simulated manoeuvre, "peak_tip_deflection" and "final_tip_error", need the
    joint motion ``prescribed`` (traj(t) -> (q, qd, qdd)), ``t_final`` and the RK4 step ``dt``;
    ``q``/``qd`` then give the initial flexible state (see :mod:`.motion_sensitivity`)."""
    if quantity in FIGURES:
        if prescribed is None or t_final is None:
            raise ValueError(f"{quantity}: give the manoeuvre: prescribed=traj (joint motion) and t_final")
        return motion_sensitivity(robot, quantity, parameters, prescribed, t_final, dt, q0=q, qd0=qd)
    if quantity not in QUANTITIES:
        raise ValueError(f"quantity: unknown {quantity!r}; use one of {', '.join(QUANTITIES + FIGURES)}")
    with np.errstate(all="ignore"):
        out = model_sensitivity(robot, quantity, parameters, q=q, qd=qd, qdd=qdd)
    if not (np.all(np.isfinite(out.value)) and np.all(np.isfinite(out.derivative))):
        raise ValueError(f"{quantity}: the result at this state is not finite (an overflow); give smaller q, qd, qdd")
    return out
