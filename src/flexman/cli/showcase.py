"""The same move three ways (`flexman report --compare`): the controller's own profile, its
input-shaped version and the optimal plan, each under the same kind of control, simulated over
the same time; for each, the end-effector's distance from the rigid arm moved along that run's
own joint command (during the move: how far the links bend; after it: the residual vibration)."""
from __future__ import annotations

import copy

import numpy as np

from .common import UsageError


def variants(robot, controller, kwargs, t_final):
    """[(name, result, joint command)] for the profile (``controller`` as given), the shaped profile (the same
    decoupling law and LQR, switched on when the shaped command ends) and the optimal plan
    (feed-forward + LQR, :class:`flexman.control.PlanTracking`); ``kwargs``: the run's options."""
    from ..control import Decoupling, PlanTracking, shaper
    from ..planning import plan
    from ..simulate import simulate

    traj = getattr(controller, "traj", None)
    if not isinstance(controller, Decoupling) or not hasattr(traj, "q_end"):
        raise UsageError("--compare: needs the model's decoupling controller with a rest_to_rest trajectory")
    settings = getattr(robot, "plan_settings", None) or {}
    kind = str(settings.get("shaper", "zvd")).upper()
    shaped = shaper(robot, traj, kind=kind)(traj)
    shaped_ctrl = copy.copy(controller)  # the same law, gains, limits and LQR gain (the same final pose)
    shaped_ctrl.traj = shaped
    if controller.lqr_at is not None:  # switched on when the shaped command ends
        shaped_ctrl.lqr_at = controller.lqr_at + (shaped.t_end - traj.t_end)
    optimal = plan(robot, traj.q_start, traj.q_end, duration=traj.duration,
                   limits={k: settings[f"{k}_limit"] for k in ("torque", "rate") if f"{k}_limit" in settings} or None,
                   objective=settings.get("objective"), knots=settings.get("knots", 60))
    options = {k: v for k, v in kwargs.items() if k != "controller"}
    runs = [("profile", controller, traj), (f"{kind}-shaped", shaped_ctrl, shaped),
            ("optimal", PlanTracking(robot, optimal), optimal.trajectory)]
    return [(name, simulate(robot, t_final, controller=ctrl, **options), command) for name, ctrl, command in runs]


def path_errors(robot, runs):
    """{name: (t, distance of the end-effector from the rigid arm along that run's own joint
    command, end of that command)} for ``runs`` = [(name, result, command)]."""
    from ..analysis.tip import tip_offset

    out = {}
    for name, res, command in runs:
        t = np.asarray(res.t)
        error = tip_offset(robot, np.asarray(res.q), joints=command(t)[0])
        out[name] = (t, np.linalg.norm(error, axis=1), float(command.t_end))
    return out
