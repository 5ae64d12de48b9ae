"""What a lab's sensors read: joint encoders, strain gauges on the beams, joint torque sensors,
accelerometers and gyroscopes on a link, a tool-position sensor (camera, laser tracker).

Each sensor is an output ``y = h(q, qd, qdd)`` of the arm's state (and acceleration), with its
noise (standard deviation), bias and, for encoders, quantisation. :class:`Sensors` gathers the
sensors of a robot: :meth:`~Sensors.h` (noise-free outputs), :meth:`~Sensors.jacobians` (dh/dq,
dh/dqd, dh/dqdd, for linearised models and Kalman filters), :meth:`~Sensors.read` (what the lab
reads: bias, a seeded noise stream, counts) and :meth:`~Sensors.noise_covariance`.

Conventions: a strain gauge at distance ``x`` from the beam's root on the +y (or +z) face of a
section of height ``height`` reads the surface strain ``-(h/2) v''`` (``(h/2) w''`` on +z), the
Euler-Bernoulli strain of :mod:`flexman.analysis.strain` (001's gauges); an accelerometer reads
the proper acceleration ``a - g`` of its point in its link's frame (at rest under gravity it reads
+9.81 up), a gyroscope the link's angular velocity in the link's frame; a tool-position sensor the
point's position in the base frame.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..model import inputs

STEP = 1e-7  # relative step of the central differences of the nonlinear outputs


def _nonnegative(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name}: expected a finite number >= 0, got {value!r}")
    return float(value)


def _joint(robot, joint, name):
    """A joint index from an index or a joint (link) name."""
    names = [link.name for link in robot.links]
    if isinstance(joint, str):
        if joint not in names:
            raise ValueError(f"{name}: no joint named {joint!r}; the robot's joints are {', '.join(names)}")
        return names.index(joint)
    if isinstance(joint, bool) or not isinstance(joint, (int, np.integer)) or not -robot.n_joints <= joint < robot.n_joints:
        raise ValueError(f"{name}: joint {joint!r} does not exist; give an index below {robot.n_joints} or a name")
    return int(joint) % robot.n_joints


@dataclass
class Encoder:
    """A joint encoder: the joint's angle (or travel), quantised to ``counts`` per revolution
    (per metre on a prismatic joint; None: not quantised). ``side="motor"``: on the motor of an
    elastic joint, its angle reflected to the link side (the motor coordinate)."""
    joint: int | str
    counts: int | None = 2 ** 16
    noise: float = 0.0
    bias: float = 0.0
    side: str = "link"

    size = 1

    def bind(self, robot):
        joint = _joint(robot, self.joint, "Encoder.joint")
        if self.side not in ("link", "motor"):
            raise ValueError(f"Encoder.side: use 'link' or 'motor', got {self.side!r}")
        self.index = joint
        if self.side == "motor":
            actuated = getattr(robot, "actuated", tuple(range(robot.n_joints)))
            if actuated[joint] == joint:
                raise ValueError(f"Encoder.side: joint {self.joint!r} has no motor coordinate (no elastic drive); "
                                 "read it on the link side, or give its drive a stiffness")
            self.index = actuated[joint]
        if self.counts is not None and (isinstance(self.counts, bool) or not isinstance(self.counts, (int, np.integer))
                                        or self.counts < 2):
            raise ValueError(f"Encoder.counts: expected an integer >= 2 (or None: not quantised), got {self.counts!r}")
        revolute = robot.links[joint].joint != "prismatic"
        self.quantum = None if self.counts is None else (2 * math.pi if revolute else 1.0) / self.counts
        self.names = [f"encoder_{robot.coordinate_names[self.index]}"]

    def h(self, robot, q, qd, qdd):
        return q[..., self.index:self.index + 1]

    def jacobians(self, robot, q, qd, qdd):
        row = np.zeros((1, robot.nq))
        row[0, self.index] = 1.0
        return row, np.zeros_like(row), np.zeros_like(row)


@dataclass
class StrainGauge:
    """A strain gauge on the beam of ``link``, ``x`` metres from its root, on the +y or +z face of
    a section ``height`` metres high."""
    link: int | str
    x: float
    height: float
    face: str = "y"
    noise: float = 0.0
    bias: float = 0.0

    size = 1
    quantum = None

    def bind(self, robot):
        from ..analysis import strain

        self.index = _joint(robot, self.link, "StrainGauge.link")
        if not robot.links[self.index].is_flexible:
            raise ValueError(f"StrainGauge.link: link {self.link!r} has no flexible beam; put the gauge on one of "
                             f"{', '.join(str(i) for i, l in enumerate(robot.links) if l.is_flexible) or 'none'}")
        if self.face not in ("y", "z"):
            raise ValueError(f"StrainGauge.face: use 'y' or 'z', got {self.face!r}")
        _nonnegative(self.height, "StrainGauge.height")
        if not self.height > 0:
            raise ValueError("StrainGauge.height: the section height must be > 0")
        # strain is linear in the beam's coordinates: its row is the strain of each unit coordinate
        unit = np.eye(robot.nq)
        self.row = strain.surface_strain(strain.curvature(robot, unit, self.index, float(self.x)), self.height,
                                         self.face).reshape(1, robot.nq)
        self.names = [f"strain_{robot.links[self.index].name or self.index}_{float(self.x):g}m"]

    def h(self, robot, q, qd, qdd):
        return q @ self.row.T

    def jacobians(self, robot, q, qd, qdd):
        return self.row.copy(), np.zeros_like(self.row), np.zeros_like(self.row)


@dataclass
class JointTorque:
    """A joint torque sensor: the torque the drive applies at the joint (M qdd + b, its row)."""
    joint: int | str
    noise: float = 0.0
    bias: float = 0.0

    size = 1
    quantum = None

    def bind(self, robot):
        self.index = _joint(robot, self.joint, "JointTorque.joint")
        self.names = [f"torque_{robot.coordinate_names[self.index]}"]

    def h(self, robot, q, qd, qdd):
        return robot.inverse_dynamics(q, qd, qdd)[..., self.index:self.index + 1]

    def jacobians(self, robot, q, qd, qdd):
        d = robot.inverse_dynamics_derivatives(q, qd, qdd)
        i = slice(self.index, self.index + 1)
        return d.dq[i], d.dqd[i], d.dqdd[i]


@dataclass
class ToolPosition:
    """A position sensor (camera, laser tracker) of a point on ``link`` (coordinates in its
    distal frame), in the base frame; ``latency``: seconds before a reading is available."""
    link: int | str = -1
    point: tuple = (0.0, 0.0, 0.0)
    noise: float = 0.0
    bias: float = 0.0
    latency: float = 0.0

    size = 3
    quantum = None

    def bind(self, robot):
        self.index = _joint(robot, self.link, "ToolPosition.link")
        self.at = inputs.point(self.point)
        _nonnegative(self.latency, "ToolPosition.latency")
        self.names = [f"tool_{a}" for a in "xyz"]

    def h(self, robot, q, qd, qdd):
        T = robot.frame(q, self.index)
        return T[..., :3, :3] @ self.at + T[..., :3, 3]

    def jacobians(self, robot, q, qd, qdd):
        J = robot.jacobian(q, self.index, point=self.at)[:3]
        return J, np.zeros_like(J), np.zeros_like(J)


@dataclass
class Accelerometer:
    """A three-axis accelerometer at a point of ``link``: the proper acceleration ``a - g`` in
    the link's frame (J qdd + J' qd from the kinematics)."""
    link: int | str = -1
    point: tuple = (0.0, 0.0, 0.0)
    noise: float = 0.0
    bias: float = 0.0

    size = 3
    quantum = None

    def bind(self, robot):
        self.index = _joint(robot, self.link, "Accelerometer.link")
        self.at = inputs.point(self.point)
        self.names = [f"acc_{a}" for a in "xyz"]

    def h(self, robot, q, qd, qdd):
        # J' qd = (dJ/dq . qd) qd: the derivative of J along qd by the complex step (exact)
        Jc = robot.jacobian(q + 1j * 1e-30 * qd, self.index, point=self.at)[:3]
        a = Jc.real @ qdd + (Jc.imag / 1e-30) @ qd - robot.gravity
        R = robot.frame(q, self.index)[:3, :3]
        return R.T @ a

    def jacobians(self, robot, q, qd, qdd):
        return _central(lambda *x: self.h(robot, *x), q, qd, qdd)


@dataclass
class Gyroscope:
    """A three-axis rate gyroscope on ``link``: its angular velocity in the link's frame."""
    link: int | str = -1
    noise: float = 0.0
    bias: float = 0.0

    size = 3
    quantum = None

    def bind(self, robot):
        self.index = _joint(robot, self.link, "Gyroscope.link")
        self.names = [f"gyro_{a}" for a in "xyz"]

    def h(self, robot, q, qd, qdd):
        w = robot.jacobian(q, self.index)[3:] @ qd
        return robot.frame(q, self.index)[:3, :3].T @ w

    def jacobians(self, robot, q, qd, qdd):
        return _central(lambda *x: self.h(robot, *x), q, qd, qdd)


def _central(h, q, qd, qdd):
    """(dh/dq, dh/dqd, dh/dqdd) by central differences."""
    out = []
    for k in range(3):
        x = [q, qd, qdd]
        cols = []
        for j in range(len(x[k])):
            step = STEP * max(1.0, abs(x[k][j]))
            e = np.zeros(len(x[k]))
            e[j] = step
            plus, minus = list(x), list(x)
            plus[k], minus[k] = x[k] + e, x[k] - e
            cols.append((np.asarray(h(*plus)) - np.asarray(h(*minus))) / (2 * step))
        out.append(np.array(cols).T)
    return tuple(out)


KINDS = {"encoder": Encoder, "strain_gauge": StrainGauge, "joint_torque": JointTorque, "tool_position": ToolPosition,
         "accelerometer": Accelerometer, "gyroscope": Gyroscope}


class Sensors:
    """The sensors of one robot, read together (outputs in the order given)."""

    def __init__(self, robot, sensors, seed=0):
        self.robot = robot
        self.items = list(sensors)
        if not self.items:
            raise ValueError("sensors: give at least one sensor (Encoder, StrainGauge, JointTorque, ToolPosition, "
                             "Accelerometer, Gyroscope)")
        for k, s in enumerate(self.items):
            if not hasattr(s, "bind"):
                raise ValueError(f"sensors[{k}]: {type(s).__name__} is not a sensor (use Encoder, StrainGauge, "
                                 "JointTorque, ToolPosition, Accelerometer or Gyroscope)")
            s.bind(robot)
            _nonnegative(s.noise, f"sensors[{k}].noise")
            if not math.isfinite(float(s.bias)):
                raise ValueError(f"sensors[{k}].bias: expected a finite number, got {s.bias!r}")
        self.names = [n for s in self.items for n in s.names]
        self.size = len(self.names)
        self.rng = np.random.default_rng(seed)

    def _args(self, q, qd, qdd):
        nq = self.robot.nq
        q = inputs.finite(inputs.real(inputs.state(self.robot, q), "q"), "q")
        qd = np.zeros(nq) if qd is None else inputs.finite(inputs.state(self.robot, qd, "qd"), "qd")
        qdd = np.zeros(nq) if qdd is None else inputs.finite(inputs.state(self.robot, qdd, "qdd"), "qdd")
        return q, qd, qdd

    def h(self, q, qd=None, qdd=None):
        """The noise-free, unquantised outputs (m,) at one state."""
        q, qd, qdd = self._args(q, qd, qdd)
        return np.concatenate([np.ravel(s.h(self.robot, q, qd, qdd)) for s in self.items])

    def jacobians(self, q, qd=None, qdd=None):
        """(dh/dq, dh/dqd, dh/dqdd), each (m, nq)."""
        q, qd, qdd = self._args(q, qd, qdd)
        parts = [s.jacobians(self.robot, q, qd, qdd) for s in self.items]
        return tuple(np.vstack([np.atleast_2d(p[k]) for p in parts]) for k in range(3))

    def noise_covariance(self):
        """R (m, m): each output's noise variance, plus an encoder's quantisation (quantum^2 / 12)."""
        var = []
        for s in self.items:
            quantum = getattr(s, "quantum", None) or 0.0
            var += [s.noise ** 2 + quantum ** 2 / 12.0] * s.size
        return np.diag(var)

    def read(self, q, qd=None, qdd=None, rng=None):
        """What the sensors read: h + bias + noise (the seeded stream, or ``rng``), encoders
        rounded to their counts."""
        rng = self.rng if rng is None else rng
        y = self.h(q, qd, qdd)
        out, k = [], 0
        for s in self.items:
            v = y[k:k + s.size] + s.bias + (rng.standard_normal(s.size) * s.noise if s.noise else 0.0)
            if getattr(s, "quantum", None):
                v = np.round(v / s.quantum) * s.quantum
            out.append(v)
            k += s.size
        return np.concatenate(out)
