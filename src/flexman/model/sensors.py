"""What a robot's sensors are: the validated description of each sensor (data only).

One :class:`Sensor` per instrument: its kind, where it sits (a joint, a beam station and a point
of the section, or a frame and a point of it), its noise (standard deviation per channel), bias,
sample rate, encoder resolution or latency, and the seed of its random stream. The model-file
``sensors:`` list (:func:`sensors_from_list`) and the Python constructors of
:mod:`flexman.sensors` build sensors through :func:`check_sensor`, so both refuse the same input
with the same one-line messages. What a sensor reads, ``y = h(q, qd, qdd)``, is computed in
:mod:`flexman.sensors` (it needs the dynamics).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .errors import ModelError

__all__ = ["Sensor", "SENSOR_TYPES", "SENSOR_FIELDS", "CHANNELS", "check_sensor", "sensors_from_list",
           "sensor_to_dict", "joint_of", "MAX_RATE", "unique_names", "default_name"]

SENSOR_TYPES = ("encoder", "strain_gauge", "accelerometer", "gyroscope", "position", "torque")
COMMON_FIELDS = ("type", "name", "noise", "bias", "rate", "seed")
#: the fields each kind of sensor takes besides the common ones
KIND_FIELDS = {
    "encoder": ("joint", "counts_per_revolution", "side"),
    "strain_gauge": ("link", "station", "offset"),
    "accelerometer": ("frame", "point"),
    "gyroscope": ("frame", "point"),
    "position": ("frame", "point", "latency"),
    "torque": ("joint",),
}
SENSOR_FIELDS = {kind: COMMON_FIELDS + extra for kind, extra in KIND_FIELDS.items()}
#: the number of channels (outputs) of each kind
CHANNELS = {"encoder": 1, "strain_gauge": 1, "accelerometer": 3, "gyroscope": 3, "position": 3, "torque": 1}
WHERE_FIELD = {"encoder": "joint", "torque": "joint", "strain_gauge": "link", "accelerometer": "frame",
               "gyroscope": "frame", "position": "frame"}
MAX_RATE = 1e7  # Hz: a bound against hostile files (a sample every 0.1 microsecond)


@dataclass
class Sensor:
    """One sensor. ``where`` is the joint (encoder, torque), link (strain gauge) or frame
    (accelerometer, gyroscope, position: a link's name or number, or a named frame) as given;
    ``index`` is what it resolves to on the robot (:func:`check_sensor`). ``noise`` and ``bias``
    hold one value per channel (SI: rad, strain, m/s^2, rad/s, m, N m); ``rate`` is the sample rate
    in Hz (None: every sample of the run or of the controller). Encoders: ``counts_per_revolution``
    (None: not quantised), ``side`` 'link'. Strain gauges: ``station`` (m from the beam root) and
    ``offset`` (y, z), the point of the section whose fibre the gauge reads (m from the neutral
    axis; a number c is the point (c, 0) on the +y face, where the strain is -c v''). Frame sensors:
    ``point`` in that frame (None: its origin); ``latency`` (s) of a position sensor."""

    type: str
    where: object
    name: str = ""
    noise: np.ndarray = field(default_factory=lambda: np.zeros(1))
    bias: np.ndarray = field(default_factory=lambda: np.zeros(1))
    rate: float | None = None
    seed: int | None = None
    counts_per_revolution: int | None = None
    side: str = "link"
    station: float | None = None
    offset: tuple = (0.0, 0.0)
    point: np.ndarray | None = None
    latency: float = 0.0
    index: int = -1

    @property
    def n_channels(self) -> int:
        return CHANNELS[self.type]

    @property
    def quantum(self) -> float:
        """The encoder's resolution (rad per count), 0 when the reading is not quantised."""
        return 2.0 * math.pi / self.counts_per_revolution if self.counts_per_revolution else 0.0

    @property
    def channel_names(self) -> list:
        if self.n_channels == 1:
            return [self.name]
        return [f"{self.name}_{axis}" for axis in "xyz"]


def _number(value, where, *, lower=None, strict=False, what="a finite number") -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ModelError(f"{where}: must be {what} (got {value!r:.40})")
    value = float(value)
    bad = not math.isfinite(value) or (lower is not None and (value <= lower if strict else value < lower))
    if bad:
        bound = "" if lower is None else f" {'>' if strict else '>='} {lower:g}"
        raise ModelError(f"{where}: must be {what}{bound} (got {value!r})")
    return value


def _per_channel(value, where, n, lower=None, fix=""):
    vals = value if isinstance(value, (list, tuple, np.ndarray)) else [value]
    vals = list(np.asarray(vals, dtype=object).ravel())
    if len(vals) not in (1, n):
        raise ModelError(f"{where}: give one value or {n} (one per channel), got {len(vals)}")
    out = np.array([_number(v, f"{where}", lower=lower) if lower is None else _noise(v, where, fix) for v in vals])
    return np.broadcast_to(out, (n,)).astype(float)


def _noise(v, where, fix):
    x = _number(v, where)
    if x < 0.0:
        raise ModelError(f"{where}: a standard deviation must be >= 0 (got {x:g}); {fix}")
    return x


def _index_of(links, value, where, noun) -> int:
    """The index in ``links`` of an item given by its link's name or its number (``noun``: what a
    number counts, "joint" or "link"); one line naming the choices otherwise."""
    names = [lk.name for lk in links]
    if isinstance(value, str):
        if value in names:
            return names.index(value)
        raise ModelError(f"{where}: no {noun} is named {value!r:.40}; give a link name ({', '.join(n for n in names if n) or 'none named'}) "
                         f"or a {noun} number 0 to {len(names) - 1}")
    if isinstance(value, (bool, float)) or not isinstance(value, (int, np.integer)) or not -len(names) <= int(value) < len(names):
        raise ModelError(f"{where}: {noun} {value!r:.40} does not exist; give a link name or a {noun} number 0 to {len(names) - 1}")
    return int(value) % len(names)


def joint_of(robot, value, where) -> int:
    """The joint coordinate index of a joint given by its link's name or its number."""
    return _index_of(list(robot.joint_links), value, where, "joint")


def _link_of(robot, value, where) -> int:
    return _index_of(robot.links, value, where, "link")


def _frame_of(robot, value, where) -> int:
    if isinstance(value, str) and value in getattr(robot, "frames", {}):
        return robot.frames[value][0]
    try:
        return _link_of(robot, value, where)
    except ModelError:
        frames = list(getattr(robot, "frames", {}))
        raise ModelError(f"{where}: {value!r:.40} is neither a link nor a named frame of the robot; give a link name or "
                         f"number{' or one of the frames ' + ', '.join(frames) if frames else ''}") from None


def check_sensor(robot, sensor: Sensor, where: str = "sensor") -> Sensor:
    """``sensor`` checked against ``robot`` (its place exists, noise >= 0, rate > 0, ...), with its
    numbers normalised and ``index`` resolved; ModelError in one line naming ``where.field``."""
    kind = sensor.type
    if kind not in SENSOR_TYPES:
        raise ModelError(f"{where}.type: unknown sensor {kind!r:.40}; use one of {', '.join(SENSOR_TYPES)}")
    place = f"{where}.{WHERE_FIELD[kind]}"
    if sensor.where is None:
        raise ModelError(f"{place}: required field missing (where the {kind.replace('_', ' ')} sits)")
    n = CHANNELS[kind]
    sensor.noise = _per_channel(sensor.noise, f"{where}.noise", n, lower=0.0, fix="give the noise as a standard deviation")
    sensor.bias = _per_channel(sensor.bias, f"{where}.bias", n)
    if sensor.rate is not None:
        sensor.rate = _number(sensor.rate, f"{where}.rate", what="a sample rate in Hz")
        if not 0.0 < sensor.rate <= MAX_RATE:
            raise ModelError(f"{where}.rate: a sample rate must be > 0 Hz and at most {MAX_RATE:g} Hz (got {sensor.rate:g}); "
                             "leave it out to sample at every step")
    if sensor.seed is not None and (isinstance(sensor.seed, bool) or not isinstance(sensor.seed, (int, np.integer))
                                    or sensor.seed < 0):
        raise ModelError(f"{where}.seed: must be a whole number >= 0 (got {sensor.seed!r:.40})")
    if kind in ("encoder", "torque"):
        sensor.index = joint_of(robot, sensor.where, place)
    elif kind == "strain_gauge":
        _check_gauge(robot, sensor, where, place)
    else:
        sensor.index = _frame_of(robot, sensor.where, place)
        if sensor.point is not None:
            pt = sensor.point
            if not isinstance(pt, (list, tuple, np.ndarray)) or len(pt) != 3:
                raise ModelError(f"{where}.point: expected 3 numbers [x, y, z] in the frame (m)")
            sensor.point = np.array([_number(v, f"{where}.point") for v in pt])
    if kind == "encoder":
        cpr = sensor.counts_per_revolution
        if cpr is not None and (isinstance(cpr, bool) or not isinstance(cpr, (int, np.integer)) or not 2 <= cpr <= 2 ** 40):
            raise ModelError(f"{where}.counts_per_revolution: must be a whole number from 2 to 2^40 (got {cpr!r:.40}); "
                             "a 16-bit encoder has 65536")
        if sensor.side not in ("link", "motor"):
            raise ModelError(f"{where}.side: {sensor.side!r:.40} is not a side; use link or motor")
        actuated = getattr(robot, "actuated", tuple(range(robot.n_joints)))
        if sensor.side == "motor" and actuated[sensor.index] == sensor.index:
            raise ModelError(f"{where}.side: joint {sensor.index} has no motor coordinate (its drive has no stiffness); "
                             "use side: link, or give the drive a stiffness (an elastic joint)")
        if cpr is not None and robot.joint_links[sensor.index].joint != "revolute":
            raise ModelError(f"{where}.counts_per_revolution: joint {sensor.index} is prismatic; counts per revolution "
                             "describe a rotary encoder, leave it out")
    if kind == "position":
        sensor.latency = _number(sensor.latency, f"{where}.latency", lower=0.0, what="a latency in seconds")
    if not sensor.name:
        sensor.name = default_name(robot, sensor)
    return sensor


def default_name(robot, sensor) -> str:
    """``<type>_<place>``: the place's name where it has one, else its number."""
    if isinstance(sensor.where, str):
        return f"{sensor.type}_{sensor.where}"
    links = robot.joint_links if sensor.type in ("encoder", "torque") else robot.links
    return f"{sensor.type}_{links[sensor.index].name or sensor.index}"


def unique_names(robot, sensors) -> list:
    """``sensors`` with default-named duplicates numbered by their position (``strain_gauge_arm_2``);
    two sensors given the same name are refused."""
    names = [s.name for s in sensors]
    for k, s in enumerate(sensors):
        if names.count(s.name) > 1 and s.name == default_name(robot, s):
            s.name = f"{s.name}_{k}"
    names = [ch for s in sensors for ch in s.channel_names]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ModelError(f"sensors: two sensors are named {dup[0]!r}; give each a name of its own (name: ...)")
    return sensors


def _check_gauge(robot, sensor, where, place):
    i = _link_of(robot, sensor.where, place)
    link = robot.links[i]
    if not link.is_flexible or link.joint != "revolute":
        raise ModelError(f"{place}: link {i} ({link.name or 'unnamed'}) has no flexible beam on a revolute joint to "
                         "carry a strain gauge; put the gauge on a flexible link")
    if sensor.station is None:
        raise ModelError(f"{where}.station: required field missing (the gauge's distance from the beam root, m)")
    x = _number(sensor.station, f"{where}.station", what="a distance along the beam in m")
    L = link.beam.length
    if not 0.0 <= x <= L:
        raise ModelError(f"{where}.station: {x:g} m is outside link {i}'s beam; give a distance from its root in [0, {L:g}] m")
    off = sensor.offset
    if isinstance(off, (list, tuple, np.ndarray)):
        if len(off) != 2:
            raise ModelError(f"{where}.offset: give the fibre's point [y, z] in the section (m) or one number (the +y face)")
        off = tuple(_number(v, f"{where}.offset") for v in off)
    else:
        off = (_number(off, f"{where}.offset"), 0.0)
    if off == (0.0, 0.0):
        raise ModelError(f"{where}.offset: the neutral axis does not stretch; give the distance from it to the gauge "
                         "(half the section height, m)")
    sensor.index, sensor.station, sensor.offset = i, x, off


def sensors_from_list(data, robot) -> list:
    """The model file's ``sensors:`` list as checked :class:`Sensor` objects."""
    if not isinstance(data, list):
        raise ModelError(f"sensors: expected a list of sensors, each a mapping with a type (got {type(data).__name__})")
    out = []
    for k, item in enumerate(data):
        where = f"sensors[{k}]"
        if not isinstance(item, dict):
            raise ModelError(f"{where}: expected a mapping with type and place (got {type(item).__name__})")
        kind = item.get("type")
        if kind not in SENSOR_TYPES:
            raise ModelError(f"{where}.type: unknown sensor {kind!r:.40}; use one of {', '.join(SENSOR_TYPES)}")
        allowed = SENSOR_FIELDS[kind]
        unknown = [key for key in item if key not in allowed]
        if unknown:
            raise ModelError(f"{where}.{unknown[0]}: unknown field for a {kind}; allowed fields: {', '.join(allowed)}")
        name = item.get("name", "")
        if not isinstance(name, str):
            raise ModelError(f"{where}.name: must be text")
        kw = {key: item[key] for key in ("noise", "bias", "rate", "seed", "counts_per_revolution", "side", "station",
                                         "offset", "point", "latency") if key in item}
        out.append(check_sensor(robot, Sensor(type=kind, where=item.get(WHERE_FIELD[kind]), name=name, **kw), where))
    return unique_names(robot, out)


def sensor_to_dict(sensor: Sensor) -> dict:
    """A sensor as model-file data (fields at their defaults left out)."""
    out = {"type": sensor.type, WHERE_FIELD[sensor.type]: sensor.where, "name": sensor.name}
    for key in ("noise", "bias"):
        vals = [float(v) for v in getattr(sensor, key)]
        if any(vals):
            out[key] = vals[0] if len(set(vals)) == 1 else vals
    for key in ("rate", "seed", "counts_per_revolution", "station"):
        if getattr(sensor, key) is not None:
            out[key] = getattr(sensor, key)
    if sensor.type == "strain_gauge":
        out["offset"] = [float(v) for v in sensor.offset]
    if sensor.point is not None:
        out["point"] = [float(v) for v in sensor.point]
    if sensor.latency:
        out["latency"] = float(sensor.latency)
    return out
