"""A floating base as six coordinates: translations along the base frame's x, y, z, then the
rotations yaw (about z), pitch (about the new y) and roll (about the newest x).

A free body is exactly a chain of three prismatic joints along fixed axes and three revolute
joints about the intermediate axes (Z-Y-X Euler angles, a minimal set), with massless links
between them and the body on the last. Written that way, every algorithm (the recursions on
floats, batches and symbols, code generation, simulation) takes a floating base without change.
The angles are singular where pitch = +-90 degrees (yaw and roll turn about the same axis):
keep a free-flying simulation away from there, or re-zero the angles.
"""
from __future__ import annotations

from .robot import Link, Placement, RigidBody

AXES = (("x", "prismatic", (1.0, 0.0, 0.0)), ("y", "prismatic", (0.0, 1.0, 0.0)), ("z", "prismatic", (0.0, 0.0, 1.0)),
        ("yaw", "revolute", (0.0, 0.0, 1.0)), ("pitch", "revolute", (0.0, 1.0, 0.0)), ("roll", "revolute", (1.0, 0.0, 0.0)))


def floating_links(body: RigidBody, name: str = "base") -> list:
    """The six links of a floating base carrying ``body`` (in the base frame, after the rotations).
    The first five are massless and named ``<name>_x``, ..., ``<name>_pitch``; the sixth,
    ``name``, carries the body: children of the floating body hang from it."""
    links = []
    for k, (coordinate, joint, axis) in enumerate(AXES):
        last = k == len(AXES) - 1
        links.append(Link(joint=joint, placement=Placement(axis=axis), body=body if last else RigidBody(),
                          name=name if last else f"{name}_{coordinate}"))
    return links
