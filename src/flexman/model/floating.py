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


def floating_links(body: RigidBody, name: str = "base", named: bool = False) -> list:
    """The six links of a floating base carrying ``body`` (in the base frame, after the rotations).
    The first five are massless and named ``<name>_x``, ..., ``<name>_pitch``; the sixth,
    ``name``, carries the body: children of the floating body hang from it. ``named``: the six
    coordinates are named ``<name>_x`` ... ``<name>_roll`` (``joint_name``), as a URDF robot's are."""
    links = []
    for k, (coordinate, joint, axis) in enumerate(AXES):
        last = k == len(AXES) - 1
        links.append(Link(joint=joint, placement=Placement(axis=axis), body=body if last else RigidBody(),
                          name=name if last else f"{name}_{coordinate}",
                          joint_name=f"{name}_{coordinate}" if named else ""))
    return links


#: the fields a model file's ``joint: floating`` link takes (the free body; nothing acts on its joint)
#: (``named: true``: its six coordinates carry names, ``<name>_x`` ... ``<name>_roll``, as a URDF robot's do)
FIELDS = ("name", "joint", "parent", "mass", "com", "inertia", "beam", "named")


def _plain_axis_link(link, coordinate, joint, axis) -> bool:
    pl = link.placement
    return (link.joint == joint and pl is not None and not pl.xyz.any() and not pl.rpy.any()
            and list(pl.axis) == list(axis) and link.hub is None and not link.armature and not link.viscous
            and not link.coulomb and link.limits is None and link.drive is None)


def floating_starts(robot) -> list:
    """Indices i where links i..i+5 are a floating base exactly as :func:`floating_links` writes
    it (a root, five massless links named ``<name>_x`` ... ``<name>_pitch`` in a chain, the body
    ``<name>``; nothing else hangs from, is fixed to or follows the five), so a model file can
    write them as one ``joint: floating`` link."""
    links, parents = robot.links, robot.parents
    names = [link.name for link in links]
    mimic = getattr(robot, "mimic", None) or {}
    touched = {i for i, _ in (robot.frames or {}).values()}
    touched |= {names.index(n) for n in mimic} | {names.index(v[0]) for v in mimic.values()}
    out = []
    for s in range(len(links) - 5):
        name, five = links[s + 5].name, range(s, s + 5)
        if not name or parents[s] != -1 or names.count(name) != 1:
            continue
        ok = all(_plain_axis_link(links[s + k], *AXES[k]) for k in range(6))
        ok = ok and len({links[s + k].joint_name == (f"{name}_{AXES[k][0]}" if links[s].joint_name else "")
                         for k in range(6)} - {True}) == 0
        ok = ok and all(links[s + k].name == f"{name}_{AXES[k][0]}" and links[s + k].beam is None
                        and links[s + k].body.mass == 0.0 and not links[s + k].body.inertia.any()
                        and not links[s + k].body.com.any() for k in range(5))
        ok = ok and all(parents[s + k] == s + k - 1 for k in range(1, 6))
        ok = ok and not any(p in five and k != p + 1 for k, p in enumerate(parents))
        if ok and not touched & set(five):
            out.append(s)
    return out
