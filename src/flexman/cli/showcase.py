"""The same move three ways (`flexman report --compare`): the controller's own profile, its
input-shaped version and the optimal plan, each under the same kind of control, simulated over
the same time; the end-effector's distance from the rigid arm's path for each."""
from __future__ import annotations

import numpy as np

from .common import UsageError


def _rigid_tip(robot, traj, t):
    """End-effector of the rigid arm (flexible coordinates zero) along ``traj`` at times t."""
    q_r = traj(np.asarray(t, dtype=float))[0]
    q = np.zeros((len(q_r), robot.nq))
    q[:, robot.joint_index] = q_r
    return robot.frame(q)[:, :3, 3]


def variants(robot, controller, kwargs, t_final):
    """[(name, result)] for the profile (``controller`` as given), the shaped profile (the same
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
    lqr_at = None if controller.lqr_at is None else controller.lqr_at + (shaped.t_end - traj.t_end)
    shaped_ctrl = Decoupling(robot, shaped, controller.gp, controller.gv, lqr_at=lqr_at,
                             lqr_weights=getattr(controller, "lqr_weights", None))
    if shaped_ctrl.G_lqr is not None and controller.G_lqr is not None:
        shaped_ctrl.G_lqr = controller.G_lqr  # the same vibration loop (designed at the same final pose)
    optimal = plan(robot, traj.q_start, traj.q_end, duration=traj.duration,
                   limits={k: settings[f"{k}_limit"] for k in ("torque", "rate") if f"{k}_limit" in settings} or None,
                   objective=settings.get("objective"), knots=settings.get("knots", 60))
    options = {k: v for k, v in kwargs.items() if k != "controller"}
    runs = [("profile", controller), (f"{kind}-shaped", shaped_ctrl), ("optimal", PlanTracking(robot, optimal))]
    return [(name, simulate(robot, t_final, controller=ctrl, **options)) for name, ctrl in runs], traj


def path_errors(robot, results, traj):
    """{name: (t, distance of the end-effector from the rigid arm's path along ``traj``)}."""
    out = {}
    for name, res in results:
        t = np.asarray(res.t)
        tip = robot.frame(np.asarray(res.q))[:, :3, 3]
        out[name] = (t, np.linalg.norm(tip - _rigid_tip(robot, traj, t), axis=1))
    return out
