"""URDF export: the rigid part of a robot as a URDF file (:func:`robot_to_urdf`).

``flexman.save(robot, "arm.urdf")`` writes it. Reading URDF files (and the overlay that makes
chosen links flexible) is :mod:`flexman.model.urdf`; the export needs the kinematics and the
beams' rigid second moments of :mod:`flexman.dynamics`, so it lives above both.
"""
from __future__ import annotations


import numpy as np

from .dynamics import dh
from .dynamics.beam_tensors import rod_second_moments
from .model.robot import RigidBody, Robot
from .model.rotations import matrix_rpy
from .model.urdf import urdf_identifier

__all__ = ["robot_to_urdf", "unique_link_names"]


def _fmt(values) -> str:
    return " ".join(repr(float(v)) for v in np.ravel(values))


def unique_link_names(robot: Robot) -> list:
    """URDF link names for the robot's links: identifiers, distinct from each other and from
    ``base_link`` (two links named alike, or alike once sanitised, get ``_2``, ``_3``), so that
    the file written always loads again."""
    taken, out = {"base_link"}, []
    for i, link in enumerate(robot.links):
        name = base = urdf_identifier(link.name) if link.name else f"link{i + 1}"
        k = 1
        while name in taken:
            k += 1
            name = f"{base}_{k}"
        taken.add(name)
        out.append(name)
    return out


def _joint_names(robot: Robot) -> list:
    """The URDF joint names: the robot's own (``link.joint_name``, a URDF robot's) where every link
    has a distinct one and, on a tree, siblings sorted by them come in the robot's order (urdfdom
    sorts a link's child joints by name, which decides the coordinates' order when read back);
    else ``joint1``, ``joint2``... (zero-padded on a tree, for the same reason)."""
    own = [urdf_identifier(link.joint_name) if link.joint_name else "" for link in robot.links]
    parents = robot.parents
    ordered = all(sorted(kids) == kids for kids in (
        [own[i] for i in range(len(own)) if parents[i] == p] for p in set(parents)))
    if all(own) and len(set(own)) == len(own) and (robot.is_serial or ordered):
        return own
    fmt = "joint{}" if robot.is_serial else "joint{:0%dd}" % len(str(len(robot.links)))
    return [fmt.format(i + 1) for i in range(len(robot.links))]


def robot_to_urdf(robot: Robot) -> str:
    """URDF text for the rigid part of a robot: beams become rigid rods, hubs and the payload
    join their link's inertial. Gravity, joint armature and the beams' flexibility are not
    expressible in URDF and are left out. Mimic joints (:class:`~flexman.model.MimicRobot`): every
    link is written, each follower's joint with ``<mimic joint= multiplier= offset=>``."""
    mimic = getattr(robot, "mimic", None) or {}
    index = {link.name: i for i, link in enumerate(robot.links)}
    names = unique_link_names(robot)
    lines = ['<?xml version="1.0"?>', f'<robot name="{urdf_identifier(robot.name)}">', '  <link name="base_link"/>']
    parents, to_urdfs = robot.parents, []
    joint_name = _joint_names(robot)
    for i, link in enumerate(robot.links):
        prev_N = np.eye(4) if parents[i] < 0 else to_urdfs[parents[i]]
        prev = "base_link" if parents[i] < 0 else names[parents[i]]
        P, N, offset = dh.split(link, robot.dh)
        if link.placement is not None:  # URDF frame = the link's own frame, axis as given
            O = prev_N @ dh.trans(*link.placement.xyz) @ dh.rpy_matrix(link.placement.rpy)
            axis, to_urdf = link.placement.axis, np.eye(4)
        else:  # URDF frame = the joint frame after J; axis z; the offset goes into the origin
            O = prev_N @ P @ dh.joint_motion(np.array(offset), link.joint == "revolute")
            axis, to_urdf = np.array([0.0, 0.0, 1.0]), N
        J = link.body.pseudo_inertia()
        if link.hub is not None:
            J = J + link.hub.pseudo_inertia()
        if link.beam is not None:
            J = J + rod_second_moments(link, robot.dh)
        if i == len(robot.links) - 1 and robot.payload is not None:
            J = J + robot.payload.pseudo_inertia()
        body = RigidBody.from_second_moments(to_urdf @ J @ to_urdf.T)
        I = body.inertia
        lines += [
            f'  <link name="{names[i]}">',
            "    <inertial>",
            f'      <origin xyz="{_fmt(body.com)}" rpy="0 0 0"/>',
            f'      <mass value="{_fmt(body.mass)}"/>',
            f'      <inertia ixx="{_fmt(I[0, 0])}" ixy="{_fmt(I[0, 1])}" ixz="{_fmt(I[0, 2])}" '
            f'iyy="{_fmt(I[1, 1])}" iyz="{_fmt(I[1, 2])}" izz="{_fmt(I[2, 2])}"/>',
            "    </inertial>",
            "  </link>",
        ]
        kind = link.joint if link.limits is not None or link.joint == "prismatic" else "continuous"
        lines.append(f'  <joint name="{joint_name[i]}" type="{kind}">')
        lines += [
            f'    <parent link="{prev}"/>',
            f'    <child link="{names[i]}"/>',
            f'    <origin xyz="{_fmt(O[:3, 3])}" rpy="{_fmt(matrix_rpy(O[:3, :3]))}"/>',
            f'    <axis xyz="{_fmt(axis)}"/>',
        ]
        if kind != "continuous":
            lo, hi = link.limits if link.limits is not None else (-1e3, 1e3)
            lines.append(f'    <limit lower="{_fmt(lo)}" upper="{_fmt(hi)}" effort="1e6" velocity="1e3"/>')
        if link.viscous or link.coulomb:
            lines.append(f'    <dynamics damping="{_fmt(link.viscous)}" friction="{_fmt(link.coulomb)}"/>')
        if link.name in mimic:
            source, multiplier, offset = mimic[link.name]
            lines.append(f'    <mimic joint="{joint_name[index[source]]}" multiplier="{_fmt(multiplier)}" '
                         f'offset="{_fmt(offset)}"/>')
        lines.append("  </joint>")
        to_urdfs.append(to_urdf)
    taken = set(names) | {"base_link"}
    for name, (i, T) in robot.frames.items():  # named frames: fixed joints to empty links
        frame = urdf_identifier(name)
        while frame in taken:
            frame += "_frame"
        taken.add(frame)
        O = T if i < 0 else to_urdfs[i] @ T  # in the URDF frame of its link
        lines += [f'  <link name="{frame}"/>', f'  <joint name="{frame}_fixed" type="fixed">',
                  f'    <parent link="{"base_link" if i < 0 else names[i]}"/>', f'    <child link="{frame}"/>',
                  f'    <origin xyz="{_fmt(O[:3, 3])}" rpy="{_fmt(matrix_rpy(O[:3, :3]))}"/>', "  </joint>"]
    lines.append("</robot>")
    return "\n".join(lines) + "\n"
