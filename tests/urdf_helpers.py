"""URDF material shared by the test modules: where ``example-robot-data`` keeps its robots,
Pinocchio's joint coordinates and its full model reduced by ``q_full = G q + c`` (mimic joints,
built from the XML here, not by flexman), and a small two-joint URDF for the overlay tests."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np


def robots_dir():
    """The ``robots`` folder of example-robot-data (the set Pinocchio's own tests use), or None."""
    for entry in sys.path:
        folder = Path(entry) / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
        if folder.is_dir():
            return folder
    return None


ROBOTS = robots_dir()


def pin_q(model, q):
    """Pinocchio's configuration for joint values q: continuous joints as (cos, sin), a joint of
    several coordinates (a composite root) as its values."""
    out, i = [], 0
    for joint in list(model.joints)[1:]:
        out += [np.cos(q[i]), np.sin(q[i])] if joint.nq == 2 and joint.nv == 1 else list(q[i:i + joint.nv])
        i += joint.nv
    return np.array(out)


def pinocchio_reduced(path):
    """Pinocchio's model of the file with every joint a coordinate (its mimic elements unread), and
    (names of the independent joints, G, c) with q_full = G q + c, built here from the XML."""
    import defusedxml.ElementTree as ET
    import pinocchio as pin

    model = pin.buildModelFromUrdf(str(path))
    names = [model.names[j] for j in range(1, model.njoints)]
    follows = {}
    for joint in ET.parse(path).getroot().findall("joint"):
        m = joint.find("mimic")
        if m is not None and joint.get("type") != "fixed":
            follows[joint.get("name")] = (m.get("joint"), float(m.get("multiplier", 1)), float(m.get("offset", 0)))
    free = [n for n in names if n not in follows]
    G, c = np.zeros((len(names), len(free))), np.zeros(len(names))
    for i, n in enumerate(names):
        if n in follows:
            G[i, free.index(follows[n][0])], c[i] = follows[n][1], follows[n][2]
        else:
            G[i, free.index(n)] = 1.0
    return model, free, G, c


def free_flight_momenta(robot, q, qd):
    """(linear, angular) momentum of a robot on a floating base (x, y, z, yaw, pitch, roll first):
    the generalized momenta M qd along a rigid translation, and along a rigid rotation of
    everything about each axis through the origin (spatial angular velocity = E (yaw', pitch', roll'))."""
    p = robot.mass_matrix(q) @ qd
    yaw, pitch = q[3], q[4]
    E = np.array([[0, -np.sin(yaw), np.cos(yaw) * np.cos(pitch)],
                  [0, np.cos(yaw), np.sin(yaw) * np.cos(pitch)], [1, 0, -np.sin(pitch)]])
    angular = []
    for e in np.eye(3):
        v = np.zeros(robot.nq)
        v[:3], v[3:6] = np.cross(e, q[:3]), np.linalg.solve(E, e)
        angular.append(v @ p)
    return p[:3], np.array(angular)


# Two revolute joints with rotated origins and inertials, the second about an oblique axis: the
# robot the overlay's beam.axis tests turn a beam on (link "a").
AXIS_URDF = """<robot name="r"><link name="b"/>
<link name="a"><inertial><origin xyz="0.05 -0.02 -0.2" rpy="0.3 -0.2 0.1"/><mass value="1.5"/>
  <inertia ixx="0.03" iyy="0.025" izz="0.02" ixy="0.001" ixz="-0.002" iyz="0.003"/></inertial></link>
<link name="c"><inertial><origin xyz="0.1 0.02 0.03" rpy="0 0 0"/><mass value="0.8"/>
  <inertia ixx="0.01" iyy="0.02" izz="0.015"/></inertial></link>
<joint name="j1" type="revolute"><parent link="b"/><child link="a"/><origin xyz="0.1 0 0.3" rpy="0.2 0.4 -0.3"/>
  <axis xyz="0 1 0"/></joint>
<joint name="j2" type="revolute"><parent link="a"/><child link="c"/><origin xyz="0.03 0.01 -0.4" rpy="-0.5 0.1 0.7"/>
  <axis xyz="1 0 1"/></joint>
</robot>"""


#: the UR5 of example-robot-data with its forearm an aluminium tube (one mode per bending plane)
FOREARM_OVERLAY = {"name": "ur5_flexible_forearm", "links": {"forearm_link": {
    "beam": {"length": 0.39225, "mass_per_length": 0.98, "EI": 1.07e4, "modes": {"y": 1, "z": 1}, "axis": [0, 0, 1]},
    "mass": 1.0, "com": [0.39225, 0.0, 0.0], "inertia": [0.002, 0.002, 0.0018]}}}


def bent_by_centreline(beam, p, points, h=1e-6):
    """Points (V, 3) of a bending beam's undeformed link frame moved as the cross-section at their
    station: the beam's own centre line (its shape functions) at the station, and the section
    turned by the centre line's slope (central differences); stations clamped to the beam."""
    e_ax = np.eye(3)[beam.axis]
    s = np.clip((points - beam.root) @ e_ax / beam.length, 0.0, 1.0)
    moved = lambda eta: beam.centreline(p, eta)[..., :3] - beam.centreline(0 * p, eta)[..., :3]
    lo, hi = np.clip(s - h, 0, 1), np.clip(s + h, 0, 1)
    slope = (moved(hi) - moved(lo)) / ((hi - lo) * beam.length)[:, None]
    arm = points - (beam.root + np.outer(s * beam.length, e_ax))
    return points + moved(s) + np.cross(np.cross(e_ax, slope), arm)


def pinocchio_floating(path):
    """Pinocchio's model of the URDF freed at its root by the composite joint PX PY PZ RZ RY RX:
    flexman's six base coordinates (x, y, z, then yaw, pitch, roll: Trans Rz Ry Rx)."""
    import pinocchio as pin

    root = pin.JointModelComposite()
    for joint in (pin.JointModelPX(), pin.JointModelPY(), pin.JointModelPZ(), pin.JointModelRZ(), pin.JointModelRY(),
                  pin.JointModelRX()):
        root.addJoint(joint)
    return pin.buildModelFromUrdf(str(path), root)
