"""Joint controllers for :func:`flexman.simulate`: PID, computed torque, model-based decoupling + LQR;
input shapers for flexible arms (:mod:`flexman.control.shaping`: ``shaper``).

The controller interface: ``n_states`` internal states z (integrated by the simulator with
the robot, so adaptive integrators stay correct), ``initial_state()``,
``torque(t, q, qd, z) -> tau`` (one entry per joint) and ``state_derivative(t, q, qd, z)``.
Controllers without states are also plain callables ``controller(t, q, qd) -> tau``.
Every model term a controller needs (M, b and their joint/flexible partitions) comes from its
``model``: the compiled model a simulation runs on (:meth:`Controller.using`), else the robot's
compiled model when one is already built (in this process or the disk cache), else the robot.
``tau_max`` (optional, per joint or one value) saturates a controller's torques.
``loop_spec()`` describes a built-in controller to the compiled loop
(:mod:`flexman.simulate.compiled_loop`), which evaluates the same laws in C.
Errors follow the references: PID and computed torque use ``e = q_d - q_r``; the
decoupling law writes the same feedback with 004's ``e = q_r - q_d``.
"""
from __future__ import annotations

import copy

import numpy as np

from ..model import inputs
from ..simulate.backend import mass_and_bias
from ..simulate.run import saturate


def _gain_matrix(gain, n, name):
    """A scalar, per-joint vector or (n, n) matrix as an (n, n) gain matrix."""
    g = inputs.finite(inputs.array(gain, name), name)
    if g.ndim == 2:
        if g.shape != (n, n):
            raise ValueError(f"{name}: expected an ({n}, {n}) matrix, got {g.shape}")
        return g
    try:
        return np.diag(np.broadcast_to(g, (n,)))
    except ValueError:
        raise ValueError(f"{name}: give a scalar, {n} values or an ({n}, {n}) matrix") from None


def _check_traj(traj, n):
    q, qd, qdd = traj(0.0)
    if np.shape(q) != (n,) or np.shape(qd) != (n,) or np.shape(qdd) != (n,):
        raise ValueError(f"traj: must return (q, qd, qdd) with {n} joint entries each, got {np.shape(q)}")


def _tau_max(value, n):
    """Saturation limits: None, or n positive torques (one value for every joint)."""
    if value is None:
        return None
    limit = inputs.finite(inputs.array(value, "tau_max"), "tau_max")
    try:
        limit = np.broadcast_to(limit, (n,)).astype(float)
    except ValueError:
        raise ValueError(f"tau_max: give one value or {n} values (one per joint), got shape {limit.shape}") from None
    if np.any(limit <= 0):
        raise ValueError(f"tau_max: torque limits must be > 0 (got {limit.tolist()})")
    return limit


def _no_elastic_joints(robot, law: str) -> None:
    """Refuse a model-based law on a robot with elastic joints: its torques would act on the
    motor coordinates, which the law's joint rows leave out (PID reads the link-side angles and
    works)."""
    robot = getattr(robot, "robot", robot)  # (a compiled model: its robot)
    if getattr(robot, "n_motors", 0):
        names = ", ".join(robot.coordinate_names[i] for i in robot.motor_links)
        raise ValueError(f"controller: {law} assumes the torques act on the joints, but joints {names} are elastic "
                         "(a motor behind a spring); use PID, or a rigid transmission (no drive stiffness)")


def model_terms(robot):
    """What evaluates M and b for a controller of ``robot``: the robot's compiled model when one
    is built already (this process or the disk cache; nothing is compiled here, and not under
    ``FLEXMAN_BACKEND=numeric``), else ``robot`` itself (a compiled model is used as it is)."""
    from ..model import Robot

    if not isinstance(robot, Robot):
        return robot
    from ..simulate.backend import default_backend

    if default_backend() == "numeric":
        return robot.numeric()
    from ..codegen.modelcache import existing_model

    return existing_model(robot) or robot


class Controller:
    """Base class: a stateless controller unless ``n_states`` says otherwise."""

    n_states = 0
    tau_max = None
    model = None  # evaluates M and b (see the module doc); found on first use when None

    def initial_state(self):
        return np.zeros(self.n_states)

    @property
    def terms(self):
        """The evaluator of the model terms (the compiled model when there is one)."""
        if self.model is None:
            self.model = model_terms(self.robot)
        return self.model

    def using(self, model):
        """This controller evaluating its model terms with ``model`` (a simulation passes the
        compiled model it runs on): a copy, the caller's controller is left as it is. Only when
        ``model`` is of the controller's own robot (same content): a controller designed on
        another model (a mismodelled plant) keeps its own."""
        if model is None or model is self.model or not self.designed_on(model):
            return self
        twin = copy.copy(self)
        twin.model = model
        return twin

    def designed_on(self, model) -> bool:
        """True when ``model`` (a robot or its compiled model) is this controller's robot."""
        mine, theirs = (getattr(r, "robot", r) for r in (self.robot, model))
        if mine is theirs:
            return True
        key = getattr(mine, "content_key", None)
        return key is not None and hasattr(theirs, "content_key") and key() == theirs.content_key()

    def saturate(self, tau):
        """``tau`` clipped to +-``tau_max`` (unchanged without limits)."""
        return saturate(tau, self.tau_max)

    def loop_spec(self):
        """A dict describing this controller to the compiled loop, or None (a law only Python
        evaluates: the base class, and any subclass that overrides the torque law)."""
        return None

    def _own_law(self, cls):
        """True when this object runs ``cls``'s torque law unchanged (not a user subclass's)."""
        kind = type(self)
        return kind.torque is cls.torque and kind.state_derivative is cls.state_derivative

    def torque(self, t, q, qd, z):
        raise NotImplementedError

    def state_derivative(self, t, q, qd, z):
        return np.zeros(self.n_states)

    def __call__(self, t, q, qd, z=None):
        return self.torque(t, q, qd, self.initial_state() if z is None else z)


class PID(Controller):
    """Independent fixed-gain PID per joint on a reference trajectory (FLX, 000 sec. 3.1, 3.3.5).

    ``tau = kp e + ki int(e) + kd de/dt`` with ``e = q_d(t) - q_r``; the integral of e is the
    controller state. After ``off_at`` seconds the torques are zero and the integral freezes
    (the thesis switches its controllers off to check that the free arm conserves energy).
    """

    def __init__(self, robot, traj, kp, ki, kd, off_at=None, tau_max=None):
        self.robot, self.traj, self.off_at = robot, traj, off_at
        n = robot.n_joints
        _check_traj(traj, n)
        self.kp, self.ki, self.kd = (_gain_matrix(g, n, k) for g, k in ((kp, "kp"), (ki, "ki"), (kd, "kd")))
        self.n_states = n
        self.tau_max = _tau_max(tau_max, n)

    def loop_spec(self):
        if not self._own_law(PID):
            return None
        return {"kind": "pid", "traj": self.traj, "kp": self.kp, "ki": self.ki, "kd": self.kd,
                "off_at": self.off_at, "tau_max": self.tau_max}

    def _off(self, t):
        return self.off_at is not None and t > self.off_at

    def error(self, t, q, qd):
        q_d, qd_d, _ = self.traj(t)
        r = self.robot.joint_index
        return q_d - q[..., r], qd_d - qd[..., r]

    def torque(self, t, q, qd, z):
        if self._off(t):
            return np.zeros(self.robot.n_joints)
        e, ed = self.error(t, q, qd)
        return self.saturate(e @ self.kp.T + np.asarray(z) @ self.ki.T + ed @ self.kd.T)

    def state_derivative(self, t, q, qd, z):
        if self._off(t):
            return np.zeros(self.n_states)
        return self.error(t, q, qd)[0]


class ComputedTorque(Controller):
    """Computed torque: ``tau = M_rr(q) (qdd_d + kd ed + kp e) + b_r(q, qd)``, ``e = q_d - q_r``.

    Exact feedback linearization for rigid arms (the joint errors obey ``e'' + kd e' + kp e = 0``).
    For flexible arms it uses the joint rows and columns of the full model and ignores the
    coupling to the flexible accelerations: an approximation (see :class:`Decoupling`).
    """

    def __init__(self, robot, traj, kp, kd, tau_max=None):
        _no_elastic_joints(robot, "computed torque")
        self.robot, self.traj = robot, traj
        n = robot.n_joints
        _check_traj(traj, n)
        self.kp, self.kd = _gain_matrix(kp, n, "kp"), _gain_matrix(kd, n, "kd")
        self.tau_max = _tau_max(tau_max, n)

    def loop_spec(self):
        if not self._own_law(ComputedTorque):
            return None
        return {"kind": "computed_torque", "traj": self.traj, "kp": self.kp, "kd": self.kd, "tau_max": self.tau_max}

    def torque(self, t, q, qd, z=None):
        r = self.robot.joint_index
        q_d, qd_d, qdd_d = self.traj(t)
        v = qdd_d + (qd_d - qd[..., r]) @ self.kd.T + (q_d - q[..., r]) @ self.kp.T
        M, b = mass_and_bias(self.terms, q, qd)
        return self.saturate((M[..., r, r] @ v[..., None])[..., 0] + b[..., r])


class Decoupling(Controller):
    """Model-based nonlinear decoupling with an LQR vibration-damping loop (004 eqs. 29-37).

    Eliminating the flexible accelerations from ``M qdd + b = S Gamma`` gives
    ``Gamma = (M_rr - M_rf M_ff^-1 M_fr) u + (b_r - M_rf M_ff^-1 b_f)`` (31), which makes the
    joints double integrators ``qdd_r = u`` (35) while the flexible coordinates obey
    ``M_ff qdd_f + b_f = -M_fr u`` (36). During the move ``u = qdd_d + gv (qd_d - qd_r)
    + gp (q_d - q_r)`` (32)-(33); after ``lqr_at`` seconds ``u = -G_LQR dx`` (37) with
    ``dx = (e, q_f, e', qd_f)``, ``e = q_r - q_d``, and G_LQR the LQR gain of (35)-(36)
    linearized about the trajectory's point at ``lqr_at`` with ``q_f = 0`` and zero velocity.
    ``lqr_weights = (Q, R)`` (scalars, diagonals or matrices; default identities).
    On a rigid arm (no flexible coordinates) this is computed torque.
    """

    def __init__(self, robot, traj, gp, gv, lqr_at=None, lqr_weights=None, tau_max=None):
        _no_elastic_joints(robot, "the decoupling law")
        self.robot, self.traj, self.lqr_at = robot, traj, lqr_at
        n = robot.n_joints
        _check_traj(traj, n)
        self.gp, self.gv = _gain_matrix(gp, n, "gp"), _gain_matrix(gv, n, "gv")
        self.tau_max = _tau_max(tau_max, n)
        self.G_lqr = None
        if lqr_at is not None:
            q_final = np.zeros(robot.nq)
            q_final[robot.joint_index] = traj(float(lqr_at))[0]
            self.A, self.B = closed_loop_linearization(self.terms, q_final)
            Q, R = lqr_weights if lqr_weights is not None else (1.0, 1.0)
            self.G_lqr = lqr_gain(self.A, self.B, Q, R)

    def loop_spec(self):
        if not self._own_law(Decoupling):
            return None
        return {"kind": "decoupling", "traj": self.traj, "gp": self.gp, "gv": self.gv, "g_lqr": self.G_lqr,
                "lqr_at": self.lqr_at, "tau_max": self.tau_max}

    def decoupled_terms(self, q, qd):
        """(M_eq, b_eq): the equivalent joint-space mass matrix and nonlinear term of (30)."""
        M, b = mass_and_bias(self.terms, q, qd)
        r, f = self.robot.joint_index, self.robot.flex_index
        if self.robot.nf == 0:
            return M[..., r, r], b[..., r]
        M_rf = M[..., r, f]
        X = np.linalg.solve(M[..., f, f], np.concatenate([M[..., f, r], b[..., f, None]], axis=-1))
        return M[..., r, r] - M_rf @ X[..., :-1], b[..., r] - (M_rf @ X[..., -1:])[..., 0]

    def command(self, t, q, qd):
        """The new input u of the decoupled joints (eq. 32 during the move, eq. 37 after)."""
        r, f = self.robot.joint_index, self.robot.flex_index
        q_d, qd_d, qdd_d = self.traj(t)
        e, ed = q[..., r] - q_d, qd[..., r] - qd_d
        if self.G_lqr is not None and t >= self.lqr_at:
            dx = np.concatenate([e, q[..., f], ed, qd[..., f]], axis=-1)
            return -dx @ self.G_lqr.T
        return qdd_d - ed @ self.gv.T - e @ self.gp.T

    def torque(self, t, q, qd, z=None):
        M_eq, b_eq = self.decoupled_terms(q, qd)
        u = self.command(t, q, qd)
        return self.saturate((M_eq @ u[..., None])[..., 0] + b_eq)


def closed_loop_linearization(robot, q_star):
    """(A, B) of the decoupled closed loop (35)-(36) linearized at rest at ``q_star``.

    State ``dx = (e, q_f, e', qd_f)``, input u: ``e'' = u``, ``M_ff qdd_f = -M_fr u - K dq - D dqd``
    where K = d b_f/d q and D = d b_f/d qd at rest (stiffness, gravity and damping): the flexible
    rows of the inverse dynamics' partial derivatives (``robot.inverse_dynamics_derivatives``,
    exact). The static value b_f(q_star, 0) (a deflection under gravity) is not compensated: 004
    linearizes a gravity-free arm about q_f = 0.
    """
    nq, n = robot.nq, robot.n_joints
    r, f = robot.joint_index, robot.flex_index
    q_star = np.asarray(q_star, dtype=float)
    rest = np.zeros(nq)
    d = robot.inverse_dynamics_derivatives(q_star, rest, rest)
    M, K, D = d.dqdd, d.dq[f], d.dqd[f]
    m = nq
    A = np.zeros((2 * m, 2 * m))
    B = np.zeros((2 * m, n))
    A[:m, m:] = np.eye(m)
    B[m:m + n] = np.eye(n)
    if robot.nf:
        Minv = np.linalg.inv(M[f, f])
        A[m + n:, :m] = -Minv @ K
        A[m + n:, m:] = -Minv @ D
        B[m + n:] = -Minv @ M[f, r]
    return A, B


def lqr_gain(A, B, Q=1.0, R=1.0):
    """G = R^-1 B^T P with P from the continuous algebraic Riccati equation (u = -G x)."""
    from scipy.linalg import solve_continuous_are  # here: a cheap import of flexman.control

    nx, nu = B.shape
    Q, R = _gain_matrix(Q, nx, "Q"), _gain_matrix(R, nu, "R")
    P = solve_continuous_are(A, B, Q, R)
    return np.linalg.solve(R, B.T @ P)


# ----- controllers described in model files ----------------------------------------------
_CONTROLLER_FIELDS = {
    "pid": ({"kp", "ki", "kd"}, {"off_at", "tau_max"}),
    "computed_torque": ({"kp", "kd"}, {"tau_max"}),
    "decoupling": ({"gp", "gv"}, {"lqr_at", "lqr_weights", "tau_max"}),
}
#: optional fields of any controller mapping that make it sampled (and an LQG with an estimator)
SAMPLING_FIELDS = {"rate", "delay", "estimator", "torque_noise", "seed"}
ESTIMATORS = ("kalman", "extended_kalman", "none")


def _spec_error(msg):
    from ..model import ModelError

    return ModelError(msg)


def trajectory_from_spec(spec, n_joints):
    """The reference trajectory of a controller mapping (see :func:`flexman.trajectory.from_spec`)."""
    from .. import trajectory as tr

    try:
        return tr.from_spec(spec, n_joints, "controller.trajectory")
    except ValueError as exc:
        raise _spec_error(str(exc)) from None


def from_spec(robot, spec):
    """Build a controller from the `controller:` mapping of a model file (or a separate YAML):
    {type: pid | computed_torque | decoupling, gains..., trajectory: {...}}."""
    if not isinstance(spec, dict):
        raise _spec_error("controller: give a mapping with 'type', gains and 'trajectory'")
    kind = spec.get("type")
    if kind not in _CONTROLLER_FIELDS:
        raise _spec_error(f"controller.type: unknown '{kind}'; use one of {', '.join(_CONTROLLER_FIELDS)}")
    required, optional = _CONTROLLER_FIELDS[kind]
    allowed = required | optional | SAMPLING_FIELDS | {"type", "trajectory"}
    unknown = set(spec) - allowed
    if unknown:
        raise _spec_error(f"controller: unknown field(s) {sorted(unknown)}; allowed: {sorted(allowed)}")
    missing = (required | {"trajectory"}) - set(spec)
    if missing:
        raise _spec_error(f"controller: missing field(s) {sorted(missing)}")
    traj = trajectory_from_spec(spec["trajectory"], robot.n_joints)
    gains = {k: np.asarray(spec[k], dtype=float) for k in required}
    limit = spec.get("tau_max")
    if kind == "pid":
        return PID(robot, traj, gains["kp"], gains["ki"], gains["kd"], off_at=spec.get("off_at"), tau_max=limit)
    if kind == "computed_torque":
        law = ComputedTorque(robot, traj, gains["kp"], gains["kd"], tau_max=limit)
    else:
        law = Decoupling(robot, traj, gains["gp"], gains["gv"], lqr_at=spec.get("lqr_at"),
                         lqr_weights=spec.get("lqr_weights"), tau_max=limit)
    return _sampled_from_spec(robot, law, spec)


def _spec_number(spec, key, default, lower, strict, what):
    value = spec.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or \
            (value <= lower if strict else value < lower):
        raise _spec_error(f"controller.{key}: must be {what} {'>' if strict else '>='} {lower:g} (got {value!r:.40})")
    return value


def _sampled_from_spec(robot, law, spec):
    """The law sampled at ``rate`` Hz with ``delay`` samples, fed by an ``estimator`` of the robot's
    sensors (``kalman``: steady state, the default with sensors; ``extended_kalman``; ``none``: the
    true state at the samples) designed for a torque disturbance ``torque_noise``."""
    present = SAMPLING_FIELDS & set(spec)
    if not present:
        return law
    if "rate" not in spec:
        raise _spec_error(f"controller.rate: required with {', '.join(sorted(present))} (the sample rate in Hz, e.g. 1000)")
    rate = _spec_number(spec, "rate", None, 0.0, True, "a sample rate in Hz")
    delay = spec.get("delay", 0)
    if isinstance(delay, bool) or not isinstance(delay, int) or delay < 0:
        raise _spec_error(f"controller.delay: must be a whole number of samples >= 0 (got {delay!r:.40})")
    noise = _spec_number(spec, "torque_noise", 1.0, 0.0, False, "a torque standard deviation in N m")
    seed = spec.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise _spec_error(f"controller.seed: must be a whole number >= 0 (got {seed!r:.40})")
    sensors = getattr(robot, "sensors", None) or []
    estimator = spec.get("estimator", "kalman" if sensors else "none")
    if estimator not in ESTIMATORS:
        raise _spec_error(f"controller.estimator: unknown {estimator!r:.40}; use one of {', '.join(ESTIMATORS)}")
    if estimator == "none":
        from ..sensors import SensorSet

        return Sampled(law, rate, delay=delay, sensors=SensorSet(robot, sensors) if sensors else None,
                       torque_noise=noise if "torque_noise" in spec else 0.0, seed=seed)
    if not sensors:
        raise _spec_error(f"controller.estimator: {estimator} needs sensors; add a sensors: section to the model file "
                          "or give estimator: none")
    try:
        return lqg(robot, law, None, rate=rate, delay=delay, torque_noise=noise, extended=estimator == "extended_kalman",
                   seed=seed)
    except ValueError as exc:
        raise _spec_error(f"controller.estimator: {exc}") from None


from .tracking import PlanTracking  # noqa: E402,F401  (after the classes it builds on)
from .estimation import KalmanFilter, kalman, observability  # noqa: E402,F401
from .sampled import Sampled, lqg  # noqa: E402,F401

SHAPING = ("Shaper", "robustness", "shaper")


def __getattr__(name):
    """The input shapers (:mod:`.shaping`), imported on first use: they need SciPy's solvers and
    the analyses, which a simulation under a built-in controller does not (its start-up time)."""
    if name in SHAPING:
        from . import shaping

        return getattr(shaping, name)
    raise AttributeError(name)


__all__ = ["Sampled", "lqg", "kalman", "KalmanFilter", "observability", "Controller", "PID", "ComputedTorque", "Decoupling", "PlanTracking", "closed_loop_linearization", "lqr_gain",
           "from_spec", "trajectory_from_spec", "model_terms", "Shaper", "shaper", "robustness"]
