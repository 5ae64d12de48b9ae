"""Tracking a planned motion: the plan's torques as feed-forward, decoupling + LQR as feedback.

A plan from :func:`flexman.plan` holds the whole motion, flexible coordinates included, and the
torques that produce it. Applied open loop those torques reproduce the plan only on a perfect
model; :class:`PlanTracking` adds feedback on the error from the planned state:

    ``tau = tau_plan(t) + M_eq(q) u``,  ``u = -G dx``,  ``dx = (q - q_plan(t), qd - qd_plan(t))``,

where ``M_eq`` is the decoupled joint inertia of 004 eq. (31) (:class:`flexman.control.Decoupling`),
so that ``u`` acts as a joint acceleration, and G is the LQR gain of the decoupled arm linearized
at the goal (:func:`flexman.control.closed_loop_linearization`, 004 eqs. 35-37). On the plan
(dx = 0) the torque is the planned one; after the plan the same loop holds the arm at the goal.
"""
from __future__ import annotations

import numpy as np

from ..simulate.backend import evaluator
from . import Controller, closed_loop_linearization, lqr_gain

#: default LQR weights: positions (joint errors and flexible coordinates), rates, inputs
DEFAULT_WEIGHTS = (1.0e6, 1.0e2, 1.0e-2)


class PlanTracking(Controller):
    """Feed-forward of a plan's torques plus decoupling + LQR feedback on its joint and flexible
    trajectories (see the module docstring). ``plan``: anything with ``state(t) -> (q, qd, qdd)``
    of all coordinates, ``torque(t)`` and ``q_goal`` (a :class:`flexman.planning.Plan`).
    ``lqr_weights``: (Q, R) as for :class:`flexman.control.Decoupling`; default: 1e6 on positions,
    1e2 on rates, 1e-2 on the inputs. ``backend``: what evaluates M(q) in the loop (as for
    :func:`flexman.simulate`: the compiled model by default)."""

    def __init__(self, robot, plan, lqr_weights=None, backend=None):
        self.robot, self.plan = robot, plan
        self.model = evaluator(robot, backend, quiet=True)
        q_goal = np.zeros(robot.nq)
        q_goal[robot.joint_index] = plan.q_goal
        self.A, self.B = closed_loop_linearization(robot, q_goal)
        if lqr_weights is None:
            pos, rate, inp = DEFAULT_WEIGHTS
            lqr_weights = (np.concatenate([np.full(robot.nq, pos), np.full(robot.nq, rate)]), inp)
        self.G = lqr_gain(self.A, self.B, *lqr_weights)

    def joint_inertia(self, q):
        """M_eq = M_rr - M_rf M_ff^-1 M_fr: the joints' inertia once the flexible accelerations
        are eliminated (004 eq. 31)."""
        M = self.model.mass_matrix(q)
        r, f = self.robot.joint_index, self.robot.flex_index
        if self.robot.nf == 0:
            return M[..., r, r]
        return M[..., r, r] - M[..., r, f] @ np.linalg.solve(M[..., f, f], M[..., f, r])

    def torque(self, t, q, qd, z=None):
        q_p, qd_p, _ = self.plan.state(t)
        dx = np.concatenate([q - q_p, qd - qd_p], axis=-1)
        u = -dx @ self.G.T
        return self.plan.torque(t) + (self.joint_inertia(q) @ u[..., None])[..., 0]
