"""Every backend a feature can run on, behind one interface, for the ``backend`` fixture
(tests/conftest.py): a test asks for ``backend`` and runs once per backend.

* ``numeric``: the interpreted recursions (``robot`` itself; the reference the others equal);
* ``traced``: the derived equations evaluated by NumPy (``fm.derive(robot).compile("numpy")``);
* ``c``: the generated C of the model cache (``codegen.modelcache.compiled_model``), simulated by
  the Python loop;
* ``loop``: the same C with the whole RK4 run in C (``loop="compiled"``);
* ``casadi``: the CasADi functions of ``fm.derive(robot).casadi()``;
* ``fmu``: an exported FMU run by FMPy (co-simulation, the FMU's own RK4).

``model(robot, kind)`` returns the object whose ``mass_matrix``/``bias_forces``/
``forward_dynamics`` a test compares; ``run(robot, kind, ...)`` a short RK4 simulation's
(t, q, qd). Compiled models are shared by the whole test run (the model cache's memory and the
per-run FLEXMAN_CACHE), FMUs and CasADi functions per robot content here."""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

import flexman as fm

KINDS = ("numeric", "traced", "c", "loop", "casadi", "fmu")
SIMULATING = ("numeric", "c", "loop", "fmu")  # the kinds that run a simulation themselves
_memo: dict = {}


def _key(robot, kind):
    from flexman.model.serialize import robot_to_dict

    return kind, repr(robot_to_dict(robot))


class _Casadi:
    """The numeric API over the CasADi functions (arrays in, arrays out)."""

    def __init__(self, robot):
        self.f, self.nq = fm.derive(robot).casadi(), robot.nq

    def _call(self, name, *args):
        return np.asarray(self.f[name](*args), dtype=float).reshape(-1)

    def mass_matrix(self, q):
        return np.asarray(self.f["mass_matrix"](q), dtype=float).reshape(self.nq, self.nq)

    def bias_forces(self, q, qd):
        return self._call("bias_forces", q, qd)

    def forward_dynamics(self, q, qd, tau):
        return self._call("forward_dynamics", q, qd, tau)


def model(robot, kind):
    """The evaluator of ``robot`` on ``kind`` (not ``loop``/``fmu``: those only simulate)."""
    if kind == "numeric":
        return robot
    key = _key(robot, kind)
    if key not in _memo:
        if kind == "traced":
            _memo[key] = fm.derive(robot).compile("numpy")
        elif kind == "c":
            from flexman.codegen.modelcache import compiled_model

            _memo[key] = compiled_model(robot)
        elif kind == "casadi":
            _memo[key] = _Casadi(robot)
        else:
            raise ValueError(f"{kind}: no evaluator (it only simulates)")
    return _memo[key]


def fmu_path(robot):
    """The FMU of ``robot`` (co-simulation), exported once per run."""
    key = _key(robot, "fmu")
    if key not in _memo:
        folder = Path(tempfile.mkdtemp(prefix="flexman-test-fmu-"))
        _memo[key] = fm.derive(robot).fmu(folder / f"{robot.name or 'robot'}.fmu", kind="cs")
    return _memo[key]


def run(robot, kind, t_final, dt, q0, qd0, tau):
    """(t, q, qd) of an RK4 run at ``dt`` with constant joint torques ``tau`` on ``kind``."""
    if kind == "fmu":
        import fmpy

        names = robot.coordinate_names
        start = {n: float(v) for n, v in zip(names, q0)}
        start.update({f"qd_{n}": float(v) for n, v in zip(names, qd0)})
        start.update({f"tau{j + 1}": float(t) for j, t in enumerate(tau)})
        start["step_size"] = dt
        res = fmpy.simulate_fmu(str(fmu_path(robot)), fmi_type="CoSimulation", stop_time=t_final,
                                output_interval=dt, start_values=start)
        return (res["time"], np.stack([res[n] for n in names], axis=-1),
                np.stack([res[f"qd_{n}"] for n in names], axis=-1))
    backend, loop = {"numeric": ("numeric", "python"), "c": ("compiled", "python"),
                     "loop": ("compiled", "compiled")}[kind]
    res = fm.simulate(robot, t_final, dt=dt, method="rk4", q0=q0, qd0=qd0, torque=tau, progress=False,
                      backend=backend, loop=loop)
    assert res.stats["loop"] == loop and res.stats["backend"] == ("numeric" if kind == "numeric" else "compiled"), res.stats
    return res.t, res.q, res.qd
