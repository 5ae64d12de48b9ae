"""Sensors: what encoders, strain gauges, accelerometers, gyroscopes, position trackers and joint
torque sensors read on a robot, ``y = h(q, qd, qdd)``, their Jacobians, and noisy readings.

The sensors themselves are data (:class:`flexman.model.sensors.Sensor`, from a model file's
``sensors:`` list or the constructors here). :class:`SensorSet` evaluates a list of them:

- encoder: the joint coordinate (link side), read quantised to ``2 pi / counts_per_revolution``;
- strain gauge: the axial strain of the fibre at the section point (y, z) of a beam station,
  ``z kappa_y - y kappa_z`` from the curvatures of :func:`flexman.analysis.strain.curvature`
  (a gauge at c on the +y face reads ``-c v''``);
- accelerometer: the specific force ``R^T (a - g)`` in the frame, with ``a = J qdd + Jdot qd``
  the point's acceleration (second-order kinematics, the Jacobian of ``robot.frame(order=2)``);
- gyroscope: the angular velocity ``R^T J_w qd`` in the frame;
- position: the point's position in the base frame (a camera or laser tracker), ``latency``
  seconds old;
- torque: the torque the joint transmits to its link, ``[M qdd + b]_i + s_i``: the joint's row of
  the inverse dynamics plus, on an elastic joint, its spring and damper torque
  ``s_i = k (theta - q_i) + d (theta_dot - q_i_dot)`` (the row holds ``-s_i``; along a motion the
  reading is s_i, what a sensor between gearbox and link measures; 0 on a rigid joint).

Encoders and strain gauges are linear in q (their Jacobian rows are exact and computed once);
the frame sensors are read from the frame recursion exactly (:mod:`flexman.dynamics.sensing`) and
differentiated exactly on their traced program; torque sensors by the inverse dynamics' partial
derivatives plus the spring's rows (s_i is linear in q and qd). A reading adds the bias and Gaussian
noise of standard deviation ``noise`` from the sensor's own seeded stream (an encoder counts
after that: its noise is the jitter across count edges).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..analysis.strain import curvature
from ..dynamics.motors import motors, spring_rows
from ..dynamics.sensing import FRAME_KINDS, frame_readings, sensor_taps
from ..dynamics.structure import numeric_model
from ..model import ModelError
from ..model.sensors import CHANNELS, Sensor, check_sensor, unique_names

__all__ = ["SensorSet", "Measurements", "Channel", "encoder", "strain_gauge", "accelerometer", "gyroscope",
           "position", "torque", "measure", "sensor_set"]

LINEAR = ("encoder", "strain_gauge")


def _make(robot, kind, where, name, **kw):
    try:
        return check_sensor(robot, Sensor(type=kind, where=where, name=name, **kw), kind)
    except ModelError as exc:
        raise ValueError(str(exc)) from None


def encoder(robot, joint, counts_per_revolution=None, noise=0.0, bias=0.0, rate=None, seed=None, name="",
            side="link"):
    """A joint encoder, quantised to ``counts_per_revolution`` (None: exact); ``side="motor"``: on
    an elastic joint's motor (its motor coordinate, the motor angle reflected to the joint)."""
    return _make(robot, "encoder", joint, name, counts_per_revolution=counts_per_revolution, noise=noise,
                 bias=bias, rate=rate, seed=seed, side=side)


def strain_gauge(robot, link, station, offset, noise=0.0, bias=0.0, rate=None, seed=None, name=""):
    """A strain gauge on ``link``'s beam at ``station`` m from the root, on the fibre at ``offset``:
    (y, z) in the section, or a number c (the +y face: strain ``-c v''``)."""
    return _make(robot, "strain_gauge", link, name, station=station, offset=offset, noise=noise, bias=bias,
                 rate=rate, seed=seed)


def accelerometer(robot, frame, point=None, noise=0.0, bias=0.0, rate=None, seed=None, name=""):
    """A three-axis accelerometer at ``point`` of ``frame`` (a link or a named frame)."""
    return _make(robot, "accelerometer", frame, name, point=point, noise=noise, bias=bias, rate=rate, seed=seed)


def gyroscope(robot, frame, point=None, noise=0.0, bias=0.0, rate=None, seed=None, name=""):
    """A three-axis rate gyroscope on ``frame`` (its axes)."""
    return _make(robot, "gyroscope", frame, name, point=point, noise=noise, bias=bias, rate=rate, seed=seed)


def position(robot, frame, point=None, latency=0.0, noise=0.0, bias=0.0, rate=None, seed=None, name=""):
    """A position sensor (camera, laser tracker) of ``point`` of ``frame``, in the base frame,
    reporting the position ``latency`` seconds late."""
    return _make(robot, "position", frame, name, point=point, latency=latency, noise=noise, bias=bias, rate=rate,
                 seed=seed)


def torque(robot, joint, noise=0.0, bias=0.0, rate=None, seed=None, name=""):
    """A joint torque sensor: the torque the joint transmits to its link (on an elastic joint
    its spring and damper torque, between gearbox and link)."""
    return _make(robot, "torque", joint, name, noise=noise, bias=bias, rate=rate, seed=seed)


def sensor_set(robot, sensors=None, seed=0):
    """A :class:`SensorSet` of ``sensors`` (default: the robot's own, from its model file)."""
    return SensorSet(robot, getattr(robot, "sensors", None) or [] if sensors is None else sensors, seed=seed)


class SensorSet:
    """A list of sensors of one robot, evaluated together: ``h(q, qd, qdd)`` stacks their channels.

    ``model`` (optional) evaluates the inverse dynamics of torque sensors (a compiled model);
    ``seed`` picks the run's noise: sensor k draws from ``default_rng([sensor.seed or k, seed])``.
    """

    def __init__(self, robot, sensors, seed=0, model=None):
        sensors = list(sensors)
        for k, s in enumerate(sensors):
            if not isinstance(s, Sensor):
                raise ValueError(f"sensors[{k}]: expected a sensor (flexman.sensors.encoder(...) and the like), "
                                 f"got {type(s).__name__}")
        self.robot, self.sensors, self.model = robot, sensors, model or robot
        try:
            unique_names(robot, sensors)
        except ModelError as exc:
            raise ValueError(str(exc)) from None
        self.names = [ch for s in sensors for ch in s.channel_names]
        sizes = [CHANNELS[s.type] for s in sensors]
        self.slices = [slice(a, a + n) for a, n in zip(np.cumsum([0] + sizes)[:-1], sizes)]
        self.m = sum(sizes)
        self.noise = np.concatenate([s.noise for s in sensors]) if sensors else np.zeros(0)
        self.bias = np.concatenate([s.bias for s in sensors]) if sensors else np.zeros(0)
        self.quantum = np.concatenate([np.full(CHANNELS[s.type], s.quantum) for s in sensors]) if sensors else np.zeros(0)
        self.linear_rows = {k: self._linear_row(s) for k, s in enumerate(sensors) if s.type in LINEAR}
        drives = motors(robot) if getattr(robot, "motor_links", ()) else ()
        self.spring_rows = {k: spring_rows(drives, s.index, robot.nq) for k, s in enumerate(sensors)
                            if s.type == "torque"}  # (Hq, Hqd) of the joint's spring: s = Hq q + Hqd qd
        self.reseed(seed)

    def reseed(self, seed):
        """Restart every sensor's random stream for the run numbered ``seed``."""
        self.seed = int(seed)
        self.streams = [np.random.default_rng([s.seed if s.seed is not None else k, self.seed])
                        for k, s in enumerate(self.sensors)]

    @property
    def covariance(self) -> np.ndarray:
        """The readings' noise covariance: noise^2 plus the quantisation's quantum^2 / 12."""
        return np.diag(self.noise ** 2 + self.quantum ** 2 / 12.0)

    def _linear_row(self, s):
        nq = self.robot.nq
        if s.type == "encoder":  # the joint's coordinate, or on the motor side its motor's (an elastic joint)
            row = np.zeros(nq)
            row[self.robot.actuated[s.index] if getattr(s, "side", "link") == "motor" else s.index] = 1.0
            return row
        kappa = curvature(self.robot, np.eye(nq), s.index, s.station)  # (nq, 3): the curvature of each unit q
        y, z = s.offset
        return z * kappa[:, 1] - y * kappa[:, 2]

    def h(self, q, qd=None, qdd=None) -> np.ndarray:
        """What the sensors read without noise, bias or quantisation: (..., m) channels."""
        q = np.asarray(q, dtype=float)
        qd = np.zeros_like(q) if qd is None else np.asarray(qd, dtype=float)
        qdd = np.zeros_like(q) if qdd is None else np.asarray(qdd, dtype=float)
        out = np.zeros(np.broadcast_shapes(q.shape, qd.shape, qdd.shape)[:-1] + (self.m,))
        frames = iter(self._frame_readings(q, qd, qdd) if any(s.type in FRAME_KINDS for s in self.sensors) else ())
        for k, (s, sl) in enumerate(zip(self.sensors, self.slices)):
            if k in self.linear_rows:
                out[..., sl] = (q @ self.linear_rows[k])[..., None]
            elif s.type == "torque":  # the joint's row of M qdd + b, plus its spring's torque
                Hq, Hqd = self.spring_rows[k]
                tau = self.model.inverse_dynamics(q, qd, qdd)[..., s.index]
                out[..., sl] = (tau + q @ Hq + qd @ Hqd)[..., None]
            else:
                out[..., sl] = next(frames)
        return out

    def frame_taps(self) -> list:
        """The frame sensors as taps of :mod:`flexman.dynamics.sensing`, in order (:func:`sensor_taps`)."""
        return sensor_taps(self.robot, self.sensors)

    def _frame_readings(self, q, qd, qdd):
        """The frame sensors' readings (..., 3) each, exact (:func:`flexman.dynamics.sensing.frame_readings`)."""
        robot = self.robot
        if getattr(robot, "mimic", None):  # the full robot at G q + c, rates G qd, G qdd
            G, c = robot.mimic_map()
            robot, q, qd, qdd = robot.full, q @ G.T + c, qd @ G.T, qdd @ G.T
        q, qd, qdd = np.broadcast_arrays(q, qd, qdd)
        return frame_readings(numeric_model(robot), q, qd, qdd, self.frame_taps())

    def _derived(self, what, build):
        """``build(robot)`` cached on the robot (for its content) under this set's frame sensors and
        ``what``: sets of the same sensors on the same robot share their traced and compiled programs."""
        key = repr([(kind, link, T.tobytes().hex()) for kind, link, T in self.frame_taps()])
        return self.robot.derived(f"frame_sensors/{what}/{key}", build)

    def frame_program(self, jacobians=True):
        """The traced program of the frame sensors' readings (:mod:`flexman.symbolic.frame_sensors`),
        with their Jacobians when ``jacobians``."""
        from ..symbolic.frame_sensors import frame_sensor_program

        taps = self.frame_taps()
        return self._derived(f"program/{bool(jacobians)}",
                             lambda r: frame_sensor_program(r, taps, jacobians=jacobians))

    def frame_library(self):
        """The frame sensors' program compiled to C (:class:`flexman.codegen.frame_sensors.FrameSensorLibrary`:
        entry points ``fm_frame_sensors`` and ``fm_frame_sensor_jacobians``)."""
        from ..codegen.frame_sensors import FrameSensorLibrary

        return self._derived("c", lambda r: FrameSensorLibrary(self.frame_program(jacobians=False),
                                                               self.frame_program()))

    def _frame_jacobians(self, q, qd, qdd):
        """(dy/dq, dy/dqd, dy/dqdd) of the frame sensors' channels, from the traced program run as
        generated NumPy code (exact: forward derivatives of the tape)."""
        from ..symbolic.emit import function_source

        def build(robot):
            env = {"np": np}
            exec(compile(function_source("numpy", self.frame_program(), "f"), "<flexman frame sensors>", "exec"),
                 env)  # our own generated code
            return env["f"]

        return self._derived("numpy", build)(q, qd, qdd)[1:]

    def _torque_jacobians(self, q, qd, qdd):
        """(d tau/dq, d tau/dqd, M) of the model the torque sensors read: its own partial derivatives
        (a compiled model's or the robot's, complex-step exact), else the robot's."""
        model = self.model if hasattr(self.model, "inverse_dynamics_derivatives") else self.robot
        return tuple(np.asarray(a, dtype=float) for a in model.inverse_dynamics_derivatives(q, qd, qdd))

    def jacobians(self, q, qd=None, qdd=None):
        """(dh/dq, dh/dqd, dh/dqdd), each (m, nq), at one state, all exact: the rows of encoders
        and strain gauges (linear in q), the frame sensors' by forward differentiation of their
        traced program, the torque sensors' rows of the inverse dynamics' partial derivatives plus
        their springs' rows (Hq, Hqd)."""
        q = np.asarray(q, dtype=float)
        nq = q.shape[-1]
        qd = np.zeros(nq) if qd is None else np.asarray(qd, dtype=float)
        qdd = np.zeros(nq) if qdd is None else np.asarray(qdd, dtype=float)
        out = [np.zeros((self.m, nq)) for _ in range(3)]
        kinds = [s.type for s in self.sensors]
        frames = self._frame_jacobians(q, qd, qdd) if any(k in FRAME_KINDS for k in kinds) else None
        torque = self._torque_jacobians(q, qd, qdd) if "torque" in kinds else None
        row = 0  # the next row of the frame program's Jacobians
        for k, (s, sl) in enumerate(zip(self.sensors, self.slices)):
            for a in range(3):
                if k in self.linear_rows:
                    out[a][sl] = self.linear_rows[k] if a == 0 else 0.0
                elif s.type == "torque":
                    out[a][sl] = torque[a][s.index] + (self.spring_rows[k][a] if a < 2 else 0.0)
                else:
                    out[a][sl] = frames[a][row:row + 3]
            row += 3 if s.type in FRAME_KINDS else 0
        return tuple(out)

    def read(self, y_true) -> np.ndarray:
        """Readings from true values (..., m) of every channel: quantised, biased and noisy, each
        sensor drawing from its own stream."""
        y_true = np.asarray(y_true, dtype=float)
        out = np.empty_like(y_true)
        for k, sl in enumerate(self.slices):
            out[..., sl] = self.read_one(k, y_true[..., sl])
        return out

    def loop_spec(self):
        """The readings as data for the compiled sampled loop (:mod:`flexman.simulate.compiled_sampled`),
        or None when this set's evaluation is overridden: per channel its sensor's ``types``, its
        rows ``H`` in q and ``Hd`` in qd (encoders, strain gauges: H; a torque sensor: its joint's
        spring and damper, zero on a rigid joint; zero otherwise), ``coordinate`` (a torque
        sensor's row of the inverse dynamics, added to those, -1 otherwise), ``frame_at`` (a frame sensor's output of
        :meth:`frame_program`, -1 otherwise), ``bias``, ``noise``, ``quantum``; the ``model``
        torque sensors evaluate and the set itself (``sensors``: its compiled frame program, its lags)."""
        kind = type(self)
        if any(getattr(kind, name) is not getattr(SensorSet, name) or name in vars(self)
               for name in ("h", "read", "read_one", "reseed", "late", "lags")):
            return None
        nq = self.robot.nq
        H, Hd = np.zeros((self.m, nq)), np.zeros((self.m, nq))
        coordinate, types = np.full(self.m, -1), [None] * self.m
        frame_at, n_frames = np.full(self.m, -1), 0
        for k, (s, sl) in enumerate(zip(self.sensors, self.slices)):
            types[sl] = [s.type] * (sl.stop - sl.start)
            if k in self.linear_rows:
                H[sl] = self.linear_rows[k]
            elif s.type == "torque":
                coordinate[sl] = s.index
                H[sl], Hd[sl] = self.spring_rows[k]
            else:
                frame_at[sl] = np.arange(n_frames, n_frames + 3)
                n_frames += 3
        return {"types": types, "H": H, "Hd": Hd, "coordinate": coordinate, "bias": self.bias, "noise": self.noise,
                "quantum": self.quantum, "model": self.model, "frame_at": frame_at, "sensors": self}

    def lags(self, period) -> list:
        """Each sensor's latency in samples of ``period`` s as (whole samples, fraction of the
        sample before): a position sensor's (the fraction 0 where the latency is a whole number
        of samples to 1e-9), (0, 0.0) for the others."""
        out = []
        for s in self.sensors:
            lag = s.latency / period if s.type == "position" else 0.0
            if abs(lag - round(lag)) <= 1e-9 * max(lag, 1.0):
                out.append((int(round(lag)), 0.0))
            else:
                out.append((int(np.floor(lag)), lag - np.floor(lag)))
        return out

    def late(self, y_true, past, period) -> np.ndarray:
        """``y_true`` with every position sensor that has a latency read at the positions of that
        long ago: ``past`` holds the positions q of the samples so far, ``period`` s apart (the
        last the current one, the first the run's start, taken for any time before it),
        interpolated linearly between samples."""
        lags = self.lags(period)
        if not any(whole or frac for whole, frac in lags):
            return y_true
        y = np.array(y_true, dtype=float)
        n = len(past)
        at = lambda j: past[max(n - 1 - j, 0)]  # the positions j samples ago
        for (whole, frac), sl in zip(lags, self.slices):
            if whole or frac:
                q = at(whole) if frac == 0.0 else (1.0 - frac) * at(whole) + frac * at(whole + 1)
                y[..., sl] = self.h(q)[..., sl]
        return y

    def draws(self, n) -> np.ndarray:
        """The standard normal draws (n, m) that ``n`` calls of :meth:`read` make in turn, taken
        from the sensors' streams as those calls would take them (for a loop that reads in C)."""
        parts = [self.streams[k].standard_normal((n, sl.stop - sl.start)) for k, sl in enumerate(self.slices)]
        return np.concatenate(parts, axis=1) if parts else np.zeros((n, 0))

    def read_one(self, k, v) -> np.ndarray:
        """Sensor k's readings from its true values ``v`` (..., channels): bias and noise added,
        then an encoder's count taken (its noise is the jitter across the count edges, so a
        noise of about one count makes the counting error nearly white)."""
        s = self.sensors[k]
        v = np.asarray(v, dtype=float) + s.bias + self.streams[k].standard_normal(np.shape(v)) * s.noise
        return np.round(v / s.quantum) * s.quantum if s.quantum else v


@dataclass
class Channel:
    """One channel's samples: times ``t`` (s), readings ``y`` and the true values ``true``."""

    t: np.ndarray
    y: np.ndarray
    true: np.ndarray


class Measurements(Mapping):
    """What the sensors read during a run: channel name -> :class:`Channel`, each at its sensor's
    sample times. ``table()`` puts channels of one rate side by side."""

    def __init__(self, channels: dict):
        self.channels = dict(channels)

    def __getitem__(self, name):
        return self.channels[name]

    def __iter__(self):
        return iter(self.channels)

    def __len__(self):
        return len(self.channels)

    def __repr__(self):
        return f"Measurements({', '.join(f'{k}: {len(c.t)} samples' for k, c in self.channels.items())})"

    def table(self, names=None):
        """(t, Y): the readings of ``names`` (default: all), which must share their sample times."""
        names = list(self.channels) if names is None else list(names)
        t = self.channels[names[0]].t
        for n in names:
            if len(self.channels[n].t) != len(t) or not np.array_equal(self.channels[n].t, t):
                raise ValueError(f"names: {n} is sampled at other times than {names[0]}; table() joins channels "
                                 "of one rate")
        return t, np.column_stack([self.channels[n].y for n in names])


def _interp(t_new, t, X):
    return np.stack([np.interp(t_new, t, X[:, i]) for i in range(X.shape[1])], axis=-1)


def measure(sset: SensorSet, t, q, qd, qdd) -> Measurements:
    """The readings of a run sampled at each sensor's rate (every time of ``t`` without one),
    the state interpolated linearly between the run's samples; a position sensor reads the
    state ``latency`` seconds earlier (the first sample before the run started)."""
    t = np.asarray(t, dtype=float)
    out = {}
    for k, (s, sl) in enumerate(zip(sset.sensors, sset.slices)):
        ts = t if s.rate is None else np.arange(0.0, t[-1] * (1 + 1e-12) + 1e-15, 1.0 / s.rate)
        tq = np.clip(ts - s.latency, t[0], t[-1])
        X = [_interp(tq, t, A) for A in (q, qd, qdd)]
        true = sset.h(*X)[:, sl]
        y = sset.read_one(k, true)
        out.update({name: Channel(ts, y[:, i], true[:, i]) for i, name in enumerate(s.channel_names)})
    return Measurements(out)
