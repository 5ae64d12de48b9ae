"""Every feature on every backend it supports (issues 34 and 38): rigid and flexible serial arms, an arm behind gear drives,
a flexible tree, a mimic tree and four floating bases (model file and URDF, with and without a
beam) are each evaluated by the generated NumPy of the traced programs, the compiled C, the
compiled closed loop, the CasADi functions and the FMU, and compared with the interpreted
recursions on the same states (tests/backends.py holds the two tables)."""
from __future__ import annotations

import numpy as np
import pytest

import flexman as fm
from backends import BACKENDS, ROBOTS, states

pytestmark = pytest.mark.xdist_group("backends")  # one worker: the derivations below are shared

_built: dict = {}


def _robot(name, tmp_path_factory):
    if name not in _built:
        robot = ROBOTS[name](tmp_path_factory.mktemp(name))
        _built[name] = (robot, fm.derive(robot))
    return _built[name]


@pytest.fixture(params=[(r, b) for r in ROBOTS for b in BACKENDS], ids=lambda p: f"{p[0]}-{p[1]}")
def backend_case(request, tmp_path_factory):
    """(robot name, robot, its derived equations, backend name): one feature on one backend."""
    name, backend = request.param
    robot, eom = _robot(name, tmp_path_factory)
    return name, robot, eom, backend


def _close(a, b, tol=1e-10):
    a, b = np.asarray(a, float), np.asarray(b, float)
    scale = max(1.0, np.abs(b).max())
    assert np.abs(a - b).max() <= tol * scale, np.abs(a - b).max()


def _dynamics(evaluate, robot):
    for q, qd, tau in states(robot):
        _close(evaluate("mass_matrix", q, qd, tau), robot.mass_matrix(q))
        _close(evaluate("bias_forces", q, qd, tau), robot.bias_forces(q, qd))
        _close(evaluate("forward_dynamics", q, qd, tau), robot.forward_dynamics(q, qd, tau), 1e-8)


def _compiled(eom, kind):
    fast = eom.compile(kind)
    args = {"mass_matrix": lambda q, qd, tau: (q,), "bias_forces": lambda q, qd, tau: (q, qd),
            "forward_dynamics": lambda q, qd, tau: (q, qd, tau)}
    return lambda what, q, qd, tau: getattr(fast, what)(*args[what](q, qd, tau))


def _casadi(eom):
    f = eom.casadi(["mass_matrix", "bias_forces", "forward_dynamics"])
    args = {"mass_matrix": lambda q, qd, tau: (q,), "bias_forces": lambda q, qd, tau: (q, qd),
            "forward_dynamics": lambda q, qd, tau: (q, qd, tau)}
    return lambda what, q, qd, tau: np.array(f[what](*args[what](q, qd, tau))).squeeze()


def _loop(robot):
    """A PID move of every joint, RK4 in the compiled C loop against the interpreted loop."""
    q0, qd0, _ = states(robot, 1, seed=3)[0]
    qd0[:] = 0.0
    goal = q0[robot.joint_index] + 0.2
    traj = fm.trajectory.rest_to_rest(q0[robot.joint_index], goal, 0.04)
    runs = {}
    for backend in ("compiled", "numeric"):
        pid = fm.control.PID(robot, traj, kp=20.0, ki=2.0, kd=2.0)
        runs[backend] = fm.simulate(robot, 0.05, dt=1e-3, q0=q0, qd0=qd0, controller=pid, backend=backend,
                                    progress=False)
    assert runs["compiled"].stats["loop"] == "compiled" and runs["numeric"].stats["backend"] == "numeric"
    assert runs["compiled"].stats["success"]
    _close(runs["compiled"].q, runs["numeric"].q)
    _close(runs["compiled"].tau, runs["numeric"].tau, 1e-9)


def _fmu(robot, eom, folder):
    """The co-simulation FMU run by FMPy equals the interpreted RK4 run at the same step."""
    from fmpy import simulate_fmu

    q0, qd0, _ = states(robot, 1, seed=5)[0]
    path = eom.fmu(folder / f"{robot.name}.fmu", kind="cs", step_size=1e-3, q0=q0, qd0=qd0)
    out = simulate_fmu(str(path), stop_time=0.02, output_interval=1e-3)
    ref = fm.simulate(robot, 0.02, dt=1e-3, q0=q0, qd0=qd0, backend="numeric", progress=False)
    names = robot.coordinate_names
    got = np.column_stack([out[n] for n in names])
    rows = [int(np.argmin(abs(ref.t - t))) for t in out["time"]]
    _close(got, ref.q[rows], 1e-9)


def test_every_feature_on_every_backend(backend_case, tmp_path):
    name, robot, eom, backend = backend_case
    if backend == "traced":
        _dynamics(_compiled(eom, "numpy"), robot)
    elif backend == "c":
        _dynamics(_compiled(eom, "c"), robot)
    elif backend == "casadi":
        _dynamics(_casadi(eom), robot)
    elif backend == "loop":
        _loop(robot)
    elif backend == "fmu":
        _fmu(robot, eom, tmp_path)


def test_the_default_backend_of_a_floating_robot_is_compiled_and_equal(tmp_path_factory):
    """The crash of issue 34: a floating model file simulated with the default (compiled) backend."""
    robot, _ = _robot("floating_file_beam", tmp_path_factory)
    q0, qd0, tau = states(robot, 1, seed=9)[0]
    runs = {b: fm.simulate(robot, 0.05, dt=1e-3, q0=q0, qd0=qd0, torque=tau, backend=b, progress=False)
            for b in ("compiled", "numeric")}
    assert runs["compiled"].stats["backend"] == "compiled"
    _close(runs["compiled"].q, runs["numeric"].q)
