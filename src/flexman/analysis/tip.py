"""Where a deflected link's tip is, against the undeformed arm."""
from __future__ import annotations

import numpy as np

from ..model import inputs


def tip_offset(robot, q, joints=None, link=None):
    """Origin of ``link``'s distal frame (a link's number or name, or a named frame; None: the
    robot's end effector, :func:`~flexman.model.inputs.end_effector`) at q minus its position on
    the undeformed arm (q_f = 0) at the same joint values, or at ``joints`` (e.g. the desired
    ones: then its norm is the end-effector error); (..., 3) in the base frame, m."""
    link = inputs.end_effector(robot, link)
    q = inputs.state(robot, q)
    if joints is not None:
        joints = inputs.joint_values(robot, joints, "joints")
    ref = np.zeros_like(q)
    ref[..., robot.joint_index] = q[..., robot.joint_index] if joints is None else joints
    return robot.frame(q, link)[..., :3, 3] - robot.frame(ref, link)[..., :3, 3]
