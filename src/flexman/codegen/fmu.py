"""FMI 2.0 FMUs of a robot (``fm.derive(robot).fmu(path)``, ``flexman export MODEL --fmu PATH``).

An FMU (Functional Mock-up Unit) is a zip file that Simulink, OpenModelica, Dymola, Amesim and
FMPy import: a ``modelDescription.xml`` naming the variables, a compiled library for each
platform and, here, the C sources so that any platform can rebuild it. This one holds

* the forward dynamics of the symbolic-parameter equations (the C of :mod:`.sources`), the
  end-effector and tip positions (:mod:`flexman.symbolic.kinematics`) and the robot's sensors
  without noise (:mod:`flexman.symbolic.sensor_program`; bias added, encoders counted);
* model exchange (the importing tool integrates the states ``q, qd``; with ``derivatives``
  also fmi2GetDirectionalDerivative from the model's partial derivatives) and co-simulation
  (the FMU steps itself with classic RK4 or, for stiff arms, generalized-alpha or Radau IIA,
  at most ``step_size`` long, inputs held constant; ``method``; the implicit methods' Newton
  Jacobian from the model's partial derivatives, as in the compiled loop);
* optionally a built-in joint controller (PID, computed torque, decoupling + LQR: the C of the
  compiled loop, :mod:`.loop`), whose set-points become inputs.

Variables (each real, one value reference each, in this order): the coordinates
(``robot.coordinate_names``) and their rates (``qd_`` + name), the controller's error
integrals (``int_`` + joint name), the derivatives (``der(...)``), the inputs (joint torques
``tau1``..., then set-points ``q1_ref``... and ``qd_q1_ref``...), the outputs (``ee_x``...,
``tip2_dx``..., then the sensors' channels ``enc1``, ``acc_x``...), the physical parameters of
``parameters="symbolic"`` (``m1``, ``EIy2``, ...), the controller gains (``kp1``..., ``ki1``..., ``kd1``..., or ``gp1``..., ``gv1``...), ``step_size`` and,
for radau5, ``rtol`` and ``atol``;
with a controller also the set-points ``q1_ref``, ``qd_q1_ref``, ``qdd_q1_ref`` (inputs) and the
applied torques ``tau_applied1``... (outputs).
The generic C half (instance, FMI functions, RK4) is :mod:`.fmi2`.
"""
from __future__ import annotations

import hashlib
import os
import re
import zipfile
from datetime import datetime, timezone
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

import numpy as np

from ..model import names
from ..model.errors import ModelError
from ..outputs import output_file, staged
from . import cbuild, fmi2
from .workdir import work_folder
from ..symbolic import emit
from .sources import c_source

KINDS = ("me", "cs", "both")
GUID_SLOT = "@GUID@"  # in the C source until the GUID, a digest of the source, is known
FLAGS = cbuild.CFLAGS + ["-fvisibility=hidden"]  # the library flags; only the FMI functions exported


class Variable:
    """One FMU variable: name, causality, variability, initial, start value, description and, for
    a derivative, the value reference of its state."""

    def __init__(self, name, causality, start=None, description="", variability="continuous", initial=None,
                 derivative_of=None):
        self.name, self.causality, self.start, self.description = name, causality, start, description
        self.variability, self.initial, self.derivative_of = variability, initial, derivative_of


#: the co-simulation's integrators; "auto": generalized-alpha where RK4 at step_size is unstable
METHODS = ("auto", "rk4", "generalized_alpha", "radau5")
IMPLICIT = ("generalized_alpha", "radau5")  # Newton's Jacobian from the model's partial derivatives
METHOD_CODES = {"rk4": 0, "generalized_alpha": 1, "radau5": 2}  # fmi2.WRAPPER's METHOD
METHOD_WORDS = {"rk4": "RK4", "generalized_alpha": "generalized-alpha", "radau5": "Radau IIA"}
RTOL, ATOL = 1e-8, 1e-10  # radau5's default tolerances, as flexman.simulate's
RHO_INF = 0.8  # generalized-alpha's default damping, as flexman.simulate's
RK4_BOUNDARY = 2.0 * np.sqrt(2.0)  # |h w| where RK4's stability region crosses the imaginary axis


def co_simulation_method(robot, method, step_size) -> str:
    """The FMU's integrator: ``method``, or for "auto" RK4 where ``step_size`` is within 0.9 of its
    stability limit 2 sqrt(2) / w for the arm's highest mode w (joints free, as flexman.simulate's
    plant check; a controller's own poles are not seen), else generalized-alpha."""
    if method not in METHODS:
        raise ValueError(f"method: unknown {method!r:.40}; use one of {', '.join(METHODS)}")
    if method != "auto":
        return method
    if robot.nf == 0 and not getattr(robot, "n_motors", 0):
        return "rk4"
    from ..model import engine

    w = float(np.max(engine.require("natural_frequencies")(robot, None, joints="free"), initial=0.0))
    return "rk4" if w == 0.0 or step_size <= 0.9 * RK4_BOUNDARY / w else "generalized_alpha"


GAINS = ("kp", "ki", "kd", "gp", "gv")  # the gain matrices of codegen.loop's fm_control, in its order
GAIN_WORDS = {"kp": "proportional", "ki": "integral", "kd": "derivative", "gp": "position", "gv": "velocity"}


class Law:
    """A built-in controller as the FMU holds it: the kind of :mod:`.loop`, its per-joint gains
    (FMU parameters), the LQR gain (a constant), switch times and torque limits."""

    def __init__(self, controller, n_joints):
        spec = controller.loop_spec() if hasattr(controller, "loop_spec") else None
        if spec is None:
            raise ModelError(f"controller: a {type(controller).__name__} is evaluated in Python only; an FMU takes "
                             "the built-in PID, ComputedTorque or Decoupling (flexman.control, or a model file's "
                             "controller section)")
        self.kind = spec["kind"]
        self.gains = {}
        for key in GAINS:
            if spec.get(key) is None:
                continue
            g = np.asarray(spec[key], dtype=float)
            if g.shape != (n_joints, n_joints) or np.any(g - np.diag(np.diag(g))):
                raise ModelError(f"controller.{key}: the FMU takes one gain per joint (scalars, {n_joints} values or "
                                 "a diagonal matrix), each an FMU parameter")
            self.gains[key] = np.diag(g).copy()
        self.g_lqr = None if spec.get("g_lqr") is None else np.asarray(spec["g_lqr"], dtype=float)
        self.off_at = spec.get("off_at") if self.kind == "pid" else None
        self.lqr_at = spec.get("lqr_at") if self.g_lqr is not None else None
        self.tau_max = None if spec.get("tau_max") is None else np.broadcast_to(
            np.asarray(spec["tau_max"], dtype=float), (n_joints,)).copy()
        self.n_states = n_joints if self.kind == "pid" else 0


# what each parameter stem of flexman.symbolic.params means (suffix: the link number; "h": its hub)
MEANINGS = {
    "a": "DH length a (m)", "d": "DH offset d (m)", "px": "placement x (m)", "py": "placement y (m)",
    "pz": "placement z (m)", "m": "mass of the rigid body (kg; the last link's includes the payload)",
    "MX": "first moment m*x of the body about its frame origin (kg m)", "MY": "first moment m*y (kg m)",
    "MZ": "first moment m*z (kg m)", "XX": "inertia of the body about its frame origin, xx (kg m^2)", "XY": "inertia xy (kg m^2)",
    "XZ": "inertia xz (kg m^2)", "YY": "inertia yy (kg m^2)", "YZ": "inertia yz (kg m^2)", "ZZ": "inertia zz (kg m^2)",
    "Ia": "joint armature (kg m^2)", "rhoA": "beam mass per length (kg/m)", "lb": "beam length (m)",
    "EIy": "beam bending stiffness, deflection along y (N m^2)", "EIz": "beam bending stiffness, along z (N m^2)",
    "GJ": "beam torsional stiffness (N m^2)", "Jp": "beam polar mass moment per length (kg m)",
    "zeta": "beam modal damping ratio", "gx": "gravity x (m/s^2)", "gy": "gravity y (m/s^2)", "gz": "gravity z (m/s^2)",
}


# the lower bound (bound, strict) of each parameter stem that has one, the model's own rules
# (flexman.model.robot.LOWER_BOUNDS); the FMU refuses a value set below it (fmi2SetReal)
RULES = {"m": (0.0, False), "XX": (0.0, False), "YY": (0.0, False), "ZZ": (0.0, False), "Ia": (0.0, False),
         "rhoA": (0.0, True), "lb": (0.0, True), "EIy": (0.0, False), "EIz": (0.0, False), "GJ": (0.0, False),
         "Jp": (0.0, False), "zeta": (0.0, False), "kp": (0.0, False), "ki": (0.0, False), "kd": (0.0, False),
         "gp": (0.0, False), "gv": (0.0, False), "tau_max": (0.0, True), "step_size": (0.0, True),
         "rtol": (0.0, True), "atol": (0.0, True)}


def rule(name):
    """(bound, strict) of an FMU parameter named ``name`` (``m1``: >= 0, ``lb2``: > 0), or None."""
    match = re.fullmatch(r"([A-Za-z_]+?)(h?)(\d*)", name)
    return RULES.get(match.group(1)) if match else None


def meaning(name) -> str:
    """A parameter's description from its name (``EIy2``: link 2's ..., ``mh1``: link 1's hub ...)."""
    match = re.fullmatch(r"([A-Za-z]+?)(h?)(\d*)", name)
    stem, hub, link = match.groups() if match else (name, "", "")
    if stem not in MEANINGS:
        return "physical parameter"
    where = f"link {link}{' hub' if hub else ''}: " if link else ""
    return where + MEANINGS[stem]


def coordinate_meaning(robot, k) -> str:
    """A coordinate's description: which joint or which link's deflection, with its unit."""
    if k < robot.n_joints:
        link = robot.links[k]
        unit = "angle (rad)" if link.joint == "revolute" else "displacement (m)"
        return f"joint {k + 1}{f' ({link.name})' if link.name else ''}: {unit}"
    return "flexible coordinate (deflection amplitude of a beam shape, see the conventions)"


def variables(eom, position_names, law=None, step_size=1e-3, q0=None, qd0=None, method="rk4", rtol=RTOL,
              atol=ATOL, sensors=()) -> list:
    """The FMU's variables in value-reference order (see the module docstring); ``sensors``: the
    checked sensors whose channels are outputs (:func:`sensor_descriptions`)."""
    robot = eom.robot
    coords = list(robot.coordinate_names)
    joints = coords[:robot.n_joints]
    q0 = np.zeros(robot.nq) if q0 is None else np.asarray(q0, dtype=float)
    qd0 = np.zeros(robot.nq) if qd0 is None else np.asarray(qd0, dtype=float)
    states = [Variable(n, "output", q0[k], coordinate_meaning(robot, k), initial="exact") for k, n in enumerate(coords)]
    states += [Variable(f"qd_{n}", "output", qd0[k], f"rate of {n}", initial="exact") for k, n in enumerate(coords)]
    if law is not None and law.n_states:
        states += [Variable(f"int_{n}", "local", 0.0, f"PID: integral of the error of {n}", initial="exact")
                   for n in joints]
    out = list(states)
    out += [Variable(f"der({s.name})", "local", description=f"time derivative of {s.name}", initial="calculated",
                     derivative_of=k) for k, s in enumerate(states)]
    out += [Variable(f"tau{j + 1}", "input", 0.0, f"torque (force) applied at joint {j + 1} ({n})"
                     + (", added to the controller's" if law is not None else ""))
            for j, n in enumerate(joints)]
    if law is not None:
        out += [Variable(f"{n}_ref", "input", 0.0, f"controller set-point of {n}") for n in joints]
        out += [Variable(f"qd_{n}_ref", "input", 0.0, f"controller set-point of the rate of {n}") for n in joints]
        out += [Variable(f"qdd_{n}_ref", "input", 0.0, f"controller set-point of the acceleration of {n} "
                         "(feed-forward of computed torque and decoupling)") for n in joints]
    out += [Variable(n, "output", description=d, initial="calculated") for n, d in position_names]
    taken = {v.name for v in out}
    for k, s in enumerate(sensors):
        for channel, text in zip(s.channel_names, sensor_descriptions(eom.robot, s)):
            if channel in taken:
                raise ModelError(f"sensors[{k}].name: the FMU output {channel!r} of this {SENSOR_WORDS[s.type]} is "
                                 "already the name of another FMU variable; give the sensor a name of its own (name: ...)")
            out.append(Variable(channel, "output", description=text, initial="calculated"))
    if law is not None:
        out += [Variable(f"tau_applied{j + 1}", "output", description=f"joint {j + 1}: the torque applied, input "
                         "plus controller", initial="calculated") for j in range(robot.n_joints)]
    out += [Variable(n, "parameter", v, meaning(n), "tunable", "exact") for n, v in eom.param_values.items()]
    if law is not None:
        for key, gains in law.gains.items():
            out += [Variable(f"{key}{j + 1}", "parameter", g, f"controller {GAIN_WORDS[key]} gain of joint {j + 1}",
                             "tunable", "exact") for j, g in enumerate(gains)]
        if law.tau_max is not None:
            out += [Variable(f"tau_max{j + 1}", "parameter", g, f"controller torque limit of joint {j + 1}",
                             "tunable", "exact") for j, g in enumerate(law.tau_max)]
    out.append(Variable("step_size", "parameter", float(step_size),
                        f"co-simulation: longest internal {METHOD_WORDS[method]} step (s)", "tunable", "exact"))
    if method == "radau5":
        out.append(Variable("rtol", "parameter", float(rtol), "co-simulation: Radau IIA's relative tolerance",
                            "tunable", "exact"))
        out.append(Variable("atol", "parameter", float(atol), "co-simulation: Radau IIA's absolute tolerance",
                            "tunable", "exact"))
    seen = set()
    for v in out:
        if v.name in seen:
            raise ModelError(f"FMU variables: the name {v.name!r} is used twice; rename the coordinate or link")
        seen.add(v.name)
    return out


SENSOR_WORDS = {"encoder": "encoder", "strain_gauge": "strain gauge", "accelerometer": "accelerometer",
                "gyroscope": "gyroscope", "position": "position sensor", "torque": "torque sensor"}


def sensor_descriptions(robot, s) -> list:
    """The description of each FMU output of sensor ``s``: what it reads, unit, and how it differs
    from the instrument (no noise; an encoder's count; a position sensor's latency not applied)."""
    bias = "" if not np.any(s.bias) else ", plus its bias"
    links = robot.joint_links if s.type in ("encoder", "torque") else robot.links
    at = f"{s.index + 1}{f' ({links[s.index].name})' if links[s.index].name else ''}"  # 1-based, as the coordinates
    if s.type == "encoder":
        side = "motor angle (reflected to the joint)" if s.side == "motor" else "joint angle"
        unit = "rad" if robot.joint_links[s.index].joint == "revolute" else "m"
        count = (f", counted: a multiple of 2 pi / {s.counts_per_revolution} rad (the coordinate itself is an "
                 "output too)" if s.counts_per_revolution else "")
        return [f"{SENSOR_WORDS[s.type]} {s.name}: {side} of joint {at} ({unit}){bias}{count}; no noise"]
    if s.type == "strain_gauge":
        return [f"strain gauge {s.name}: axial strain at {s.station:g} m on the beam of link {at}{bias}; no noise"]
    if s.type == "torque":
        spring = ("; an elastic joint: its spring and damper torque, between gearbox and link"
                  if s.index in getattr(robot, "motor_links", ()) else "")
        return [f"torque sensor {s.name}: the torque that joint {at} transmits to its link (N m or N){spring}{bias}; "
                "no noise"]
    what = {"accelerometer": "specific force in the sensor's axes (m/s^2)",
            "gyroscope": "angular velocity in the sensor's axes (rad/s)",
            "position": "position in the base frame (m)"}[s.type]
    late = (f"; the current position: the sensor's {s.latency:g} s latency is not applied (an FMU output has no memory: "
            "delay it in the importing tool)" if s.type == "position" and s.latency else "")
    return [f"{SENSOR_WORDS[s.type]} {s.name} ({axis}): {what}{bias}; no noise{late}" for axis in "xyz"]


def checked_sensors(robot, sensors) -> list:
    """The sensors an FMU outputs: ``sensors`` (a list of :class:`flexman.model.sensors.Sensor`
    or a SensorSet; None: the robot's own, its model file's ``sensors:``), checked against
    ``robot`` on copies, default names numbered as a SensorSet numbers them."""
    import copy

    from ..model.sensors import Sensor, check_sensor, unique_names

    given = getattr(robot, "sensors", None) or [] if sensors is None else getattr(sensors, "sensors", sensors)
    if isinstance(given, (str, bytes)) or not hasattr(given, "__iter__"):
        raise ValueError(f"sensors: expected a list of sensors (flexman.sensors.encoder(...) and the like), got "
                         f"{type(given).__name__}")
    out = []
    for k, s in enumerate(given):
        if not isinstance(s, Sensor):
            raise ValueError(f"sensors[{k}]: expected a sensor (flexman.sensors.encoder(...) and the like), got "
                             f"{type(s).__name__}")
        out.append(check_sensor(robot, copy.copy(s), f"sensors[{k}]"))
    return unique_names(robot, out)


def sensor_source(eom, program, sensors, vr) -> str:
    """C of the sensor outputs: ``fm_sensors`` (the traced program of
    :mod:`flexman.symbolic.sensor_program`) and ``fm_read_sensors(v)``, which evaluates it at the
    instance's q, qd, its accelerations der(qd) and parameters, then adds each channel's bias and
    counts an encoder (to the nearest count, as :meth:`flexman.sensors.SensorSet.read` does)."""
    nq = eom.robot.nq
    if not sensors:
        return "static void fm_read_sensors(double *v) { (void)v; }  /* no sensors */\n"
    bias = np.concatenate([s.bias for s in sensors])
    quantum = np.concatenate([np.full(s.n_channels, s.quantum) for s in sensors])
    first = vr[sensors[0].channel_names[0]]
    args = {"q": "v", "qd": f"v + {nq}", "qdd": f"v + VR_DX + {nq}", "p": "v + VR_P"}
    call = ", ".join([args[g] for g in program.inputs if program.inputs[g]] + [f"v + {first}"])
    body = (emit.c_split_source(program, "fm_sensors") if len(program.body) > emit.SPLIT_ABOVE
            else emit.function_source("c", program, "fm_sensors"))
    return "\n".join([
        body, f"#define NS {len(bias)}  /* sensor channels */",
        f"static const double SENSOR_BIAS[NS] = {{{', '.join(repr(float(x)) for x in bias)}}};",
        f"static const double SENSOR_QUANTUM[NS] = {{{', '.join(repr(float(x)) for x in quantum)}}};  /* 0: not counted */",
        "static void fm_read_sensors(double *v)\n{",
        f"    double *y = v + {first};",
        f"    fm_sensors({call});",
        "    for (int k = 0; k < NS; ++k) {",
        "        y[k] += SENSOR_BIAS[k];",
        "        if (SENSOR_QUANTUM[k] > 0.0) y[k] = nearbyint(y[k] / SENSOR_QUANTUM[k]) * SENSOR_QUANTUM[k];",
        "    }", "}", ""])


def model_description(eom, variables, identifier, guid, kinds, sources, step_size, directional=False) -> str:
    """The ``modelDescription.xml`` text; ``directional``: model exchange provides
    fmi2GetDirectionalDerivative."""
    robot = eom.robot
    from ..version import __version__

    index = {id(v): k + 1 for k, v in enumerate(variables)}  # 1-based, as ModelStructure counts
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             f'<fmiModelDescription fmiVersion="2.0" modelName={quoteattr(identifier)} guid={quoteattr(guid)}',
             f'  description={quoteattr(names.comment(getattr(robot, "description", "") or robot.name))}',
             f'  generationTool="flexman {escape(__version__)}"',
             f'  generationDateAndTime="{datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}"',
             '  variableNamingConvention="flat" numberOfEventIndicators="0">']
    files = "".join(f'<File name="{escape(s)}"/>' for s in sources)
    if "me" in kinds:
        provides = ' providesDirectionalDerivative="true"' if directional else ""
        lines += [f'  <ModelExchange modelIdentifier="{identifier}" canNotUseMemoryManagementFunctions="true"{provides}>',
                  f'    <SourceFiles>{files}</SourceFiles>', '  </ModelExchange>']
    if "cs" in kinds:
        lines += [f'  <CoSimulation modelIdentifier="{identifier}" canHandleVariableCommunicationStepSize="true" '
                  'canNotUseMemoryManagementFunctions="true">',
                  f'    <SourceFiles>{files}</SourceFiles>', '  </CoSimulation>']
    lines.append(f'  <DefaultExperiment startTime="0.0" stopTime="1.0" stepSize="{float(step_size)!r}"/>')
    lines.append('  <ModelVariables>')
    for vr, v in enumerate(variables):
        attrs = f'name={quoteattr(v.name)} valueReference="{vr}" description={quoteattr(names.comment(v.description))}'
        attrs += f' causality="{v.causality}" variability="{v.variability}"'
        if v.initial:
            attrs += f' initial="{v.initial}"'
        real = ""
        if v.start is not None:
            real += f' start="{float(v.start)!r}"'
        if v.derivative_of is not None:
            real += f' derivative="{v.derivative_of + 1}"'
        lines.append(f'    <ScalarVariable {attrs}><Real{real}/></ScalarVariable>')
    lines.append('  </ModelVariables>')
    outputs = [v for v in variables if v.causality == "output"]
    derivatives = [v for v in variables if v.derivative_of is not None]
    initial = [v for v in variables if (v.causality == "output" and v.initial == "calculated")
               or v.derivative_of is not None]
    lines.append('  <ModelStructure>')
    for tag, group in (("Outputs", outputs), ("Derivatives", derivatives), ("InitialUnknowns", initial)):
        lines.append(f'    <{tag}>')
        lines += [f'      <Unknown index="{index[id(v)]}"/>' for v in group]
        lines.append(f'    </{tag}>')
    lines += ['  </ModelStructure>', '</fmiModelDescription>', '']
    return "\n".join(lines)


def _c_number(x) -> str:
    return "INFINITY" if x is None or np.isinf(x) else repr(float(x))


def _partials_take_p(eom):
    """Whether the partial derivatives' C takes the parameter vector: (inverse, forward dynamics')."""
    takes = {w: bool(eom.program(w).inputs.get("p"))
             for w in ("mass_matrix", "bias_forces", "inverse_dynamics_derivatives")}
    return takes["inverse_dynamics_derivatives"], any(takes.values())


def model_source(eom, position, variables, guid, kinds, units, law=None, method="rk4", rho_inf=RHO_INF,
                 derivatives=False, sensors=(), sensor_program=None) -> str:
    """The model's C file: the equations, the constants the generic half reads, the generic half
    (with a controller or an implicit method, the compiled loop's C before it). ``units`` receives
    the parts of split large functions (translation units of their own); ``method``: the
    co-simulation's integrator (rk4, generalized_alpha with ``rho_inf``, radau5). The implicit
    methods get the model's partial derivatives (the inverse dynamics' from
    :mod:`flexman.symbolic.tapediff`, the forward dynamics' from them and M), so that Newton's
    Jacobian is the compiled loop's analytic one; so does ``derivatives`` (model exchange's
    fmi2GetDirectionalDerivative, an FMU without a built-in controller). ``sensors`` and their
    ``sensor_program``: the sensor outputs (:func:`sensor_source`)."""
    from .loop import CONTROLLER_KINDS, SOURCE as LOOP_SOURCE
    from .loop_radau import SOURCE as RADAU_SOURCE

    robot = eom.robot
    fd = eom.program("forward_dynamics")
    large = len(fd.body) > emit.SOLVE_ABOVE
    wanted = method in IMPLICIT or derivatives
    id_p, fd_p = _partials_take_p(eom) if wanted else (False, False)
    partials = wanted and id_p == fd_p  # one has_p flag serves both (else forward differences)
    if derivatives and not partials:
        raise ValueError("derivatives: this model's partial derivatives take the parameters in one function and not "
                         "in the other, so the FMU cannot provide directional derivatives; export without derivatives")
    loop = law is not None or wanted  # the compiled loop's right-hand side
    if loop:  # the loop calls M and b through their batch entry points
        equations = c_source(eom, ("mass_matrix", "bias_forces"), prefix="fm", batch=True, units=units,
                             derivatives=partials)
    else:
        what = ("mass_matrix", "bias_forces", "forward_dynamics") if large else ("forward_dynamics",)
        equations = c_source(eom, what, prefix="fm", batch=False, units=units)
    nv = len(variables)
    vr = {v.name: k for k, v in enumerate(variables)}
    joints = list(robot.coordinate_names)[:robot.n_joints]
    nz = law.n_states if law is not None else 0
    first_param = next(iter(eom.param_values), None)
    defines = {
        "NQ": robot.nq, "NJ": robot.n_joints, "NP": len(eom.param_values), "NZ": nz, "NX": 2 * robot.nq + nz,
        "NV": nv, "VR_DX": 2 * robot.nq + nz, "VR_TAU": vr["tau1"], "VR_Y": vr["ee_x"],
        "VR_P": vr[first_param] if first_param else vr["step_size"], "VR_STEP": vr["step_size"],
        "HAS_ME": int("me" in kinds), "HAS_CS": int("cs" in kinds),
        "CONTROL": CONTROLLER_KINDS[law.kind] if law is not None else 0,
        "VR_TAU_OUT": vr["tau_applied1"] if law is not None else -1,
        "OFF_AT": _c_number(law.off_at if law is not None else None),  # the switch times (time events)
        "LQR_AT": _c_number(law.lqr_at if law is not None else None),
        "METHOD": METHOD_CODES[method], "RHO_INF": repr(float(rho_inf)),
        "PARTIALS": int(partials), "HAS_P_PARTIALS": int(id_p), "DIRECTIONAL": int(bool(derivatives)),
        "VR_RTOL": vr.get("rtol", -1), "VR_ATOL": vr.get("atol", -1),
    }
    lines = ['#include "flexman_fmi2.h"\n#include <math.h>\n', "\n".join(f"#define {k} {v}" for k, v in defines.items()),
             f'#define GUID "{guid}"']
    limit = robot.torque_limits  # the drives' limits on the applied joint torques (fixed, N m)
    values = ", ".join("INFINITY" if limit is None or np.isinf(x) else repr(float(x))
                       for x in (limit if limit is not None else np.zeros(robot.n_joints)))
    lines += [f"#define HAS_TAU_LIMIT {int(limit is not None)}",
              f"static const double TAU_LIMIT_DATA[NJ] = {{{values}}};  /* the drives' torque limits (N m) */"]
    if loop:
        keys = list(law.gains) if law is not None else []
        slots = ", ".join(str(keys.index(g)) if g in keys else "-1" for g in GAINS)
        lines += [f"#define N_GAINS {len(keys)}", f"#define VR_GAIN {vr[keys[0] + '1'] if keys else 0}",
                  f"static const int GAIN_SLOT[5] = {{{slots}}};  /* kp, ki, kd, gp, gv: row of Instance.gains */",
                  f"#define VR_REF {vr[joints[0] + '_ref'] if law is not None else 0}",  # no law: never read
                  f"#define VR_TAU_MAX {vr['tau_max1'] if law is not None and law.tau_max is not None else -1}"]
        if robot.n_motors:  # elastic joints: each joint torque acts on its motor coordinate
            lines.append(f"static const int ACT_DATA[NJ] = {{{', '.join(str(c) for c in robot.actuated)}}};")
            lines.append("#define ACT ACT_DATA")
        else:
            lines.append("#define ACT NULL")
        if law is not None and law.g_lqr is not None:
            values = ", ".join(repr(float(x)) for x in law.g_lqr.ravel())
            lines.append(f"static const double G_LQR_DATA[{law.g_lqr.size}] = {{{values}}};  /* nj x 2 nq */")
            lines.append("#define G_LQR G_LQR_DATA")
        else:
            lines.append("#define G_LQR NULL")
    bodies = _inertial_groups(variables, vr)
    rows = ", ".join("{" + ", ".join(str(k) for k in row) + "}" for row in bodies.values()) or "{-1}"
    labels = ", ".join(f'"{name}"' for name in bodies) or '""'
    lines += [f"#define NB {len(bodies)}  /* bodies with tunable inertial parameters */",
              f"static const int BODY_VR[{max(len(bodies), 1)}][10] = {{{rows}}};  /* m MX MY MZ XX XY XZ YY YZ ZZ; "
              "-1: zero */",
              f"static const char *const BODY_NAME[{max(len(bodies), 1)}] = {{{labels}}};"]
    start = ", ".join(repr(float(v.start)) if v.start is not None else "0.0" for v in variables)
    rules = [rule(v.name) if v.causality == "parameter" else None for v in variables]
    low = ", ".join("-INFINITY" if r is None else repr(float(r[0])) for r in rules)
    strict = ", ".join(str(int(bool(r and r[1]))) for r in rules)
    labels = ", ".join('"' + v.name.replace('"', "'").replace("\\", "/") + '"' for v in variables)
    lines += [f"static const double V_START[NV] = {{{start}}};",
              f"static const double V_LOW[NV] = {{{low}}};  /* the least value fmi2SetReal takes */",
              f"static const unsigned char V_STRICT[NV] = {{{strict}}};  /* 1: the value must exceed V_LOW */",
              f"static const char *const V_NAME[NV] = {{{labels}}};\n", equations,
              emit.function_source("c", position, "fm_position"), sensor_source(eom, sensor_program, sensors, vr)]
    if loop:
        lines.append("/* ---- the compiled loop's controller laws and generalized-alpha (flexman.codegen.loop) ---- */"
                     + LOOP_SOURCE)
    if method == "radau5":
        lines.append("/* ---- the compiled loop's Radau IIA (flexman.codegen.loop_radau) ---- */" + RADAU_SOURCE)
    lines.append(fmi2.WRAPPER)
    return "\n".join(lines)


INERTIAL = ("m", "MX", "MY", "MZ", "XX", "XY", "XZ", "YY", "YZ", "ZZ")


def _inertial_groups(variables, vr) -> dict:
    """{body label: value references of its ten inertial parameters (-1 where the parameter is not
    tunable: zero in the model)} for the bodies with tunable ones, which fmi2SetReal checks for
    physical consistency together."""
    groups = {}
    for v in variables:
        match = re.fullmatch(r"(m|MX|MY|MZ|XX|XY|XZ|YY|YZ|ZZ)(h?)(\d+)", v.name)
        if v.causality == "parameter" and match:
            stem, hub, link = match.groups()
            row = groups.setdefault(f"link {link}{' hub' if hub else ''}", [-1] * 10)
            row[INERTIAL.index(stem)] = vr[v.name]
    return groups


def platform_folder() -> tuple:
    """(the FMI 2.0 folder under binaries/, the library suffix) of this machine."""
    import platform
    import struct

    bits = 8 * struct.calcsize("P")
    system = platform.system()
    if system == "Linux":
        return f"linux{bits}", ".so"
    if system == "Darwin":
        return f"darwin{bits}", ".dylib"
    if system == "Windows":
        return f"win{bits}", ".dll"
    raise ValueError(f"FMU: FMI 2.0 names no binary folder for {system}; build the FMU's sources there by hand")


def _guid(*texts) -> str:
    """A GUID made from the FMU's content: the same model, options and flexman give the same one."""
    h = hashlib.sha256("\0".join(texts).encode()).hexdigest()
    return "{" + f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}" + "}"


def check_size(robot) -> None:
    """Refuse, before any derivation, a model too large for an FMU (limits.MAX_FMU_COORDINATES):
    its symbolic-parameter equations grow as nq^2 in time and memory."""
    from ..model.limits import MAX_FMU_COORDINATES

    if robot.nq > MAX_FMU_COORDINATES:
        raise ValueError(f"FMU: '{robot.name}' has {robot.nq} coordinates; an FMU takes at most {MAX_FMU_COORDINATES} "
                         "(README, Limits: its symbolic-parameter equations grow as nq^2, 80 took 35 s and 420 MB, "
                         "200 would take many minutes and gigabytes); use fewer links or modes")


def check_path(path, option="path", force=True) -> Path:
    """``path`` when an FMU may be written there (a name ending in .fmu in a writable folder; an
    existing file only with ``force``), else a one-line ValueError naming ``option``."""
    path = Path(path)
    if path.suffix.lower() != ".fmu":
        raise ValueError(f"{option}: {path.name!r} does not end in .fmu; FMU files are named <model>.fmu")
    return output_file(path, option, force=force)


def check_tolerance(value, name) -> float:
    """``value`` as radau5's ``name`` (rtol, atol): a finite number > 0, else a one-line ValueError."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (np.isfinite(value) and value > 0):
        raise ValueError(f"{name}: must be a finite number > 0 (radau5's {'relative' if name == 'rtol' else 'absolute'}"
                         f" tolerance, e.g. {RTOL if name == 'rtol' else ATOL:g}); got {value!r:.40}")
    return float(value)


def write_fmu(eom, path, kind="both", controller=None, step_size=1e-3, q0=None, qd0=None, force=True,
              option="path", output_frames=(), method="auto", rho_inf=RHO_INF, rtol=RTOL, atol=ATOL,
              derivatives=False, sensors=None) -> Path:
    """Write the FMU of a symbolic-parameter ``eom`` to ``path`` (see the module docstring).

    ``kind``: "me", "cs" or "both"; ``controller``: None or a built-in controller of
    :mod:`flexman.control` (PID, ComputedTorque, Decoupling; its reference trajectory is replaced
    by set-point inputs); ``step_size``: the co-simulation RK4 step (a parameter of the FMU, this its
    start value); ``q0``, ``qd0``: start values of the coordinates and rates (default 0);
    ``force``: replace an existing file; ``output_frames``: names of links or named frames (a
    URDF's ``tool0``) whose placement the FMU outputs (``tool0_x``..., ``tool0_r11``...);
    ``method``: the co-simulation's integrator, "rk4", "generalized_alpha" (implicit, for stiff
    arms; ``rho_inf`` its damping), "radau5" (Radau IIA of order 5 with step-size control for
    ``rtol``, ``atol``, steps at most ``step_size`` long; both tolerances FMU parameters) or
    "auto" (:func:`co_simulation_method`); the implicit methods' Newton Jacobian comes from the
    model's partial derivatives, compiled into the FMU. ``derivatives``: compile them in for model
    exchange too, which then provides fmi2GetDirectionalDerivative of the derivatives der(q),
    der(qd) with respect to the states and the torque inputs (an FMU without a built-in
    controller; a larger C file). ``sensors``: the sensors whose channels are outputs (None: the
    robot's own, its model file's ``sensors:``; see :func:`sensor_descriptions` for what each
    reads). Nothing is left behind when any step fails."""
    if kind not in KINDS:
        raise ValueError(f"kind: unknown {kind!r}; use me (model exchange), cs (co-simulation) or both")
    if eom.parameters != "symbolic":
        raise ValueError("the FMU's parameters come from the symbolic-parameter equations: "
                         "use fm.derive(robot, parameters='symbolic')")
    if isinstance(step_size, bool) or not (np.isfinite(step_size) and 1e-9 <= step_size <= 1.0):
        raise ValueError(f"step_size: must be a number of seconds in [1e-09, 1] (the FMU's longest internal step; got "
                         f"{step_size!r:.40})")
    if isinstance(rho_inf, bool) or not (isinstance(rho_inf, (int, float)) and 0.0 <= rho_inf <= 1.0):
        raise ValueError(f"rho_inf: must be a number in [0, 1] (generalized-alpha's spectral radius at infinite "
                         f"step); got {rho_inf!r:.40}")
    rtol, atol = check_tolerance(rtol, "rtol"), check_tolerance(atol, "atol")
    if not isinstance(derivatives, bool):
        raise ValueError(f"derivatives: must be true or false (directional derivatives for model exchange); got "
                         f"{derivatives!r:.40}")
    if derivatives and kind == "cs":
        raise ValueError("derivatives: directional derivatives are model exchange's; use kind 'me' or 'both', or "
                         "drop derivatives")
    if derivatives and controller is not None:
        raise ValueError("derivatives: the FMU's directional derivatives cover the robot without a built-in "
                         "controller; export without the controller or without derivatives")
    robot = eom.robot
    check_size(robot)
    method = co_simulation_method(robot, method, step_size)
    from ..symbolic.kinematics import output_frames as checked_frames

    output_frames = checked_frames(robot, output_frames)
    sensors = checked_sensors(robot, sensors)
    path = check_path(path, option, force)
    for name, x in (("q0", q0), ("qd0", qd0)):
        if x is not None and (np.shape(x) != (robot.nq,) or not np.all(np.isfinite(np.asarray(x, float)))):
            raise ValueError(f"{name}: give {robot.nq} finite values ({', '.join(robot.coordinate_names)})")
    for i, link in enumerate(robot.links):
        if link.joint_coulomb:
            raise ModelError(f"links[{i}].{'coulomb' if link.coulomb else 'drive.coulomb'}: Coulomb friction is not in the generated equations (it branches "
                             "on the sign of qd), so an FMU would not model it; set it to 0 to export")
    try:
        cc = cbuild.compiler()
    except RuntimeError:
        given = os.environ.get("CC", "").strip()
        why = (f"CC={given!r} is not an executable on the PATH" if given
               else "there is no C compiler (cc, gcc or clang) on the PATH")
        raise ValueError(f"FMU: its binary is compiled from C, and {why}; install gcc or clang, or set CC") from None
    folder, suffix = platform_folder()
    law = Law(controller, robot.n_joints) if controller is not None else None
    from ..symbolic.kinematics import position_names, position_program

    position = position_program(eom, output_frames)
    ee = robot.end_effector or "the last link"
    described = [(n, f"end-effector position ({ee}; base frame, m)" if n.startswith("ee_") else
                  "tip deflection of the link against its undeformed shape (base frame, m)" if n.startswith("tip") else
                  f"placement of frame {n.rsplit('_', 1)[0]} in the base frame ({n.rsplit('_', 1)[1]}; m or "
                  "rotation matrix entry)")
                 for n in position_names(robot, output_frames)]
    kinds = ("me", "cs") if kind == "both" else (kind,)
    var = variables(eom, described, law, step_size, q0, qd0, method, rtol, atol, sensors)
    identifier = names.mangle(robot.name)
    units = []
    from ..symbolic.sensor_program import sensor_program

    readings = sensor_program(eom, sensors) if sensors else None
    source = model_source(eom, position, var, GUID_SLOT, kinds, units, law, method, rho_inf, derivatives, sensors,
                          readings)
    guid = _guid(source, *units, repr(kinds))
    source = source.replace(GUID_SLOT, guid)
    sources = [f"{identifier}.c"] + [f"{identifier}_part{k + 1}.c" for k in range(len(units))]
    xml = model_description(eom, var, identifier, guid, kinds, sources, step_size, derivatives)
    with work_folder(cbuild.cache_dir()) as tmp:  # in the cache: a killed build's is swept later
        files = {"flexman_fmi2.h": fmi2.DECLARATIONS, sources[0]: source}
        files.update({name: unit for name, unit in zip(sources[1:], units)})
        for name, text in files.items():
            (tmp / name).write_text(text)
        library = cbuild.compile_into([tmp / s for s in sources], tmp / f"{identifier}{suffix}",
                                      [cc] + FLAGS)
        with staged() as out:
            with zipfile.ZipFile(out.path(path), "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr("modelDescription.xml", xml)
                z.write(library, f"binaries/{folder}/{identifier}{suffix}")
                for name, text in files.items():
                    z.writestr(f"sources/{name}", text)
    return path
