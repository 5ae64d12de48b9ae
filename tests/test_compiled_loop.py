"""The compiled simulation loop (flexman.codegen.loop, flexman.simulate.compiled_loop): a whole RK4
run in C equals the Python loop it replaces to 1e-10, for every built-in controller (saturation and
switch-off included), every built-in trajectory, prescribed motion (stiffened and first-order
beams), batches, divergence; bad input keeps its one-line errors; Python callables keep the
Python loop."""
from __future__ import annotations

import shutil
import warnings

import numpy as np
import pytest

import flexman as fm
from flexman import trajectory as tr
from flexman.control import PID, ComputedTorque, Decoupling
from flexman.model.serialize import robot_from_dict, robot_to_dict

pytestmark = pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")), reason="no C compiler")


def same(a, b, tol=1e-10):
    """Equal to ``tol`` relative to the larger of 1 and the largest value."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape
    scale = max(1.0, float(np.max(np.abs(b)))) if b.size else 1.0
    assert float(np.max(np.abs(a - b), initial=0.0)) <= tol * scale, float(np.max(np.abs(a - b)))


def both_loops(robot, t_final, dt=1e-3, **kwargs):
    runs = {}
    for loop in ("compiled", "python"):
        runs[loop] = fm.simulate(robot, t_final, dt=dt, progress=False, backend="compiled", loop=loop, **kwargs)
        assert runs[loop].stats["loop"] == loop
    return runs["compiled"], runs["python"]


def assert_same_run(a, b):
    assert len(a.t) == len(b.t) and a.diverged == b.diverged
    for name in ("q", "qd", "tau", "controller_state", "energy"):
        same(getattr(a, name), getattr(b, name))


@pytest.fixture(scope="module")
def arm():
    return fm.examples.load("flx_three_link")  # two stiffened flexible links, 7 coordinates


MOVE = tr.rest_to_rest([0.0, 0.0, 0.0], [0.2, 0.1, -0.15], 0.2)


@pytest.mark.parametrize("make", [
    lambda r: PID(r, MOVE, kp=[2000, 2000, 500], ki=[200, 200, 50], kd=[800, 800, 100], off_at=0.15),
    lambda r: PID(r, MOVE, kp=[2000, 2000, 500], ki=200, kd=800, tau_max=[150.0, 80.0, 20.0]),
    lambda r: Decoupling(r, MOVE, gp=100.0, gv=20.0),
    lambda r: Decoupling(r, MOVE, gp=100.0, gv=20.0, lqr_at=0.2, lqr_weights=(1e4, 1e-2)),
], ids=["pid-off", "pid-saturated", "decoupling", "decoupling-lqr"])
def test_each_controller_compiled_equals_python(compiled_backend, arm, make):
    a, b = both_loops(arm, 0.3, controller=make(arm), torque=[1.0, -2.0, 0.5])
    assert_same_run(a, b)
    assert np.ptp(a.q[:, 0]) > 0.01  # the arm moved


@pytest.mark.parametrize("tau_max", [None, 5.0])
def test_computed_torque_compiled_equals_python(compiled_backend, tau_max):
    """On a rigid arm, where computed torque linearizes exactly (on a flexible one it ignores the
    coupling and this arm's modes make it diverge at once)."""
    robot = fm.examples.load("dynaman_2r")
    move = tr.rest_to_rest([0.0, 0.0], [0.5, -0.3], 0.2)
    a, b = both_loops(robot, 0.3, controller=ComputedTorque(robot, move, kp=100.0, kd=20.0, tau_max=tau_max))
    assert_same_run(a, b)
    assert not a.diverged and (tau_max is None or np.isclose(np.abs(a.tau).max(), tau_max))


def test_saturation_and_switch_off_act(compiled_backend, arm):
    """The limits bind (torques sit at them) and after off_at the PID torques are zero, its
    integrals frozen, in the compiled loop as in the Python one (compared above)."""
    limits = np.array([150.0, 80.0, 20.0])
    pid = PID(arm, MOVE, kp=[2000, 2000, 500], ki=200, kd=800, tau_max=limits, off_at=0.15)
    res = fm.simulate(arm, 0.3, dt=1e-3, controller=pid, progress=False, backend="compiled")
    assert res.stats["loop"] == "compiled"
    assert np.all(np.abs(res.tau) <= limits + 1e-12) and np.any(np.isclose(np.abs(res.tau), limits))
    after = res.t > 0.15
    assert np.all(res.tau[after] == 0.0) and np.all(res.controller_state[after] == res.controller_state[after][0])


@pytest.mark.parametrize("traj", [
    tr.rest_to_rest([0.0, 0.1, 0.0], [0.2, -0.1, 0.1], 0.25, profile="quintic"),
    tr.rest_to_rest([0.0, 0.1, 0.0], [0.2, -0.1, 0.1], 0.25, profile="cubic"),
    tr.spline([0.05, 0.15, 0.22], [[0.0, 0.0, 0.0], [0.1, 0.2, -0.1], [0.15, 0.1, 0.05]]),
    tr.spin_up([1.0, 0.5, -0.5], 0.2),
], ids=["quintic", "cubic", "spline", "spin-up"])
def test_each_trajectory_compiled_equals_python(compiled_backend, arm, traj):
    a, b = both_loops(arm, 0.3, controller=PID(arm, traj, kp=[2000, 2000, 500], ki=200, kd=800))
    assert_same_run(a, b)


def test_sampled_torque_and_free_motion(compiled_backend, arm):
    t = np.arange(0.0, 0.2 + 1e-12, 2e-3)
    samples = np.column_stack([np.sin(20 * t), np.cos(10 * t), 0.1 * t])
    assert_same_run(*both_loops(arm, 0.2, dt=2e-3, torque=50 * samples, q0=[0.1, 0.2, 0, 0.01, 0, 0, 0]))
    assert_same_run(*both_loops(arm, 0.2, qd0=[0.0, 0.5, 0.2, 0, 0, 0, 0]))


def test_spline_equals_scipy():
    """The clamped cubic spline (own code, so loading a model needs no SciPy) against SciPy's."""
    from scipy.interpolate import CubicSpline

    rng = np.random.default_rng(1)
    for k in (2, 3, 6):
        times = np.cumsum(rng.uniform(0.1, 1.0, k))
        points = rng.standard_normal((k, 2))
        cs = CubicSpline(times, points, axis=0, bc_type="clamped")
        t = np.linspace(times[0], times[-1], 301)
        q, qd, qdd = tr.spline(times, points)(t)
        for got, nu in ((q, 0), (qd, 1), (qdd, 2)):
            same(got, cs(t, nu), 1e-12)


def krb(stiffening):
    data = robot_to_dict(fm.examples.load("krb_spinup"))
    data["links"][0]["beam"]["stiffening"] = stiffening
    return robot_from_dict(data)


@pytest.mark.parametrize("stiffening", [True, False], ids=["stiffened", "first-order"])
def test_prescribed_compiled_equals_python(compiled_backend, stiffening):
    robot = krb(stiffening)
    motion = tr.from_spec(robot.manoeuvre, robot.n_joints)
    a, b = both_loops(robot, 3.0, dt=1e-2, prescribed=motion)
    assert_same_run(a, b)
    same(a.work, b.work)
    assert np.max(np.abs(a.q[:, 1:])) > 1e-4  # the beam bent


def test_batch_compiled_equals_python(compiled_backend, arm):
    """Decoupling + LQR on three runs, each with its own initial state and its own plant
    (stiffness and masses): the law keeps the nominal model in both loops."""
    robot = fm.examples.load("flx_three_link_lqr")
    data = robot_to_dict(robot)
    plants = []
    for scale in (0.95, 1.0, 1.05):
        d = robot_to_dict(robot)
        for link in d["links"][1:]:
            link["beam"]["EI"] = [scale * e for e in link["beam"]["EI"]]
        d["links"][0]["mass"] *= scale
        plants.append(robot_from_dict(d))
    dec = Decoupling(robot_from_dict(data), MOVE, gp=100.0, gv=20.0, lqr_at=0.2, lqr_weights=(1e4, 1e-2))
    q0 = np.zeros((3, robot.nq))
    q0[:, :3] = [[0.0, 0.0, 0.0], [0.01, -0.02, 0.0], [0.0, 0.01, 0.02]]
    runs = {loop: fm.simulate_batch(robot, 0.3, dt=1e-3, q0=q0, robots=plants, controller=dec, output_every=5,
                                    progress=False, backend="compiled", loop=loop) for loop in ("compiled", "python")}
    a, b = runs["compiled"], runs["python"]
    assert a.stats["loop"] == "compiled" and b.stats["loop"] == "python"
    for name in ("q", "qd", "tau"):
        same(getattr(a, name), getattr(b, name))
    single = fm.simulate(plants[1], 0.3, dt=1e-3, q0=q0[1], controller=dec, progress=False, backend="compiled")
    same(a.q[1], single.q[::5])  # the batch's nominal model is the plant's own for run 1


def test_divergence_keeps_the_samples_before_it(compiled_backend, arm):
    """A torque spike of 1e300 N m at t = 0.05 s sends the state to infinity: both loops stop at the
    same step with the same samples before it (result.diverged, the warning)."""
    t = np.arange(0.0, 0.1 + 1e-12, 1e-3)
    tau = np.zeros((len(t), 3))
    tau[:, 1] = 50.0 * np.sin(40.0 * t)
    tau[50, 0] = 1e300
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        a, b = both_loops(arm, 0.1, torque=tau)
    assert a.diverged and b.diverged and a.t_diverged == b.t_diverged == pytest.approx(0.05)
    assert len(a.t) == len(b.t) == 50 and np.all(np.isfinite(a.q))
    assert_same_run(a, b)
    with pytest.warns(RuntimeWarning, match="stopped at t = 0.05 s"):
        fm.simulate(arm, 0.1, dt=1e-3, torque=tau, progress=False, backend="compiled")


def test_bad_input_before_the_compiled_loop(compiled_backend, arm):
    with pytest.raises(ValueError, match="kp: expected an \\(3, 3\\) matrix"):
        PID(arm, MOVE, kp=np.ones((2, 2)), ki=0, kd=0)
    with pytest.raises(ValueError, match="torque at t = 0 s"):
        fm.simulate(arm, 0.1, controller=PID(arm, tr.rest_to_rest([0.0, 0, 0], [np.nan, 0, 0], 1.0), 1, 0, 1),
                    progress=False, backend="compiled")
    with pytest.raises(ValueError, match="tau_max: torque limits must be > 0"):
        PID(arm, MOVE, kp=1, ki=0, kd=1, tau_max=[1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="prescribed: q at t = 0 s has shape"):
        fm.simulate(krb(True), 0.1, prescribed=tr.rest_to_rest([0.0, 0.0], [1.0, 1.0], 1.0), progress=False,
                    backend="compiled")


def test_python_callables_keep_the_python_loop(compiled_backend, arm):
    res = fm.simulate(arm, 0.01, controller=lambda t, q, qd: np.zeros(3), progress=False, backend="compiled")
    assert res.stats["loop"] == "python" and "Python" in res.stats["loop_reason"]
    res = fm.simulate(arm, 0.01, method="RK45", progress=False, backend="compiled")
    assert res.stats["loop"] == "python"
    with pytest.raises(ValueError, match="loop='compiled': the torque is a Python function"):
        fm.simulate(arm, 0.01, torque=lambda t, q, qd: np.zeros(3), progress=False, backend="compiled",
                    loop="compiled")


def test_controllers_use_the_compiled_model(compiled_backend, arm, monkeypatch):
    """A model-based controller in a compiled run evaluates no interpreted mass matrix per stage."""
    from flexman.dynamics import api
    from flexman.simulate import backend

    calls = []

    def counting(module, name):  # every interpreted way to M: alone, or with b in one recursion
        original = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, **k: calls.append(name) or original(*a, **k))

    counting(api, "mass_matrix")
    counting(api, "mass_matrix_and_bias")
    counting(backend, "mass_matrix_and_bias")  # the name the controllers' mass_and_bias calls
    dec = Decoupling(arm, MOVE, gp=100.0, gv=20.0)
    res = fm.simulate(arm, 0.05, controller=dec, progress=False, backend="compiled", loop="python")
    assert res.stats["steps"] == 50  # 200 stages, each asking the law for M and b
    assert len(calls) <= 2, calls  # the start check of the mass matrix, not one per stage
    assert dec.using(fm.codegen.modelcache.compiled_model(arm)).terms.backend == "c"


# ----- backend="auto" weighs the build against the run -----------------------------------------
def test_auto_runs_a_short_run_interpreted_on_a_cold_cache(monkeypatch, tmp_path, capsys):
    from flexman.codegen import modelcache
    from flexman.simulate import backend

    monkeypatch.setenv("FLEXMAN_CACHE", str(tmp_path))
    monkeypatch.setenv("FLEXMAN_BACKEND", "auto")
    monkeypatch.setattr(backend, "_said", set())
    modelcache.clear_memory()
    try:
        robot = fm.examples.load("flx_three_link")
        res = fm.simulate(robot, 0.005, progress=False)
        assert res.stats["backend"] == "numeric" and res.stats["loop"] == "python"
        err = capsys.readouterr().err
        assert "running the interpreted model: compiling 'flx_three_link' (7 coordinates) would take about" in err
        assert modelcache.entries() == []  # nothing was built
    finally:
        modelcache.clear_memory()


def test_auto_weighs_build_against_run(monkeypatch):
    from flexman.simulate import backend

    robot = fm.examples.load("flx_three_link")
    monkeypatch.setattr(backend, "interpreted_seconds_per_call", lambda r: 1e-3)
    build = backend.estimated_build_seconds(robot)
    assert backend.worth_compiling(robot, 2 * build / 1e-3) == (True, "")
    worth, why = backend.worth_compiling(robot, 0.5 * build / 1e-3)
    assert not worth and f"about {build:.3g} s" in why
    data = robot_to_dict(robot)
    data["links"][1]["beam"]["shapes"] = "clamped_mass"
    assert backend.estimated_build_seconds(robot_from_dict(data)) == pytest.approx(backend.BUILD_CLAMPED_MASS * build)
    more = [{**link, "name": f"copy{k}"} for k, link in enumerate(data["links"][1:])]  # (every link its own name)
    bigger = robot_from_dict({**data, "links": data["links"] + more})
    assert backend.estimated_build_seconds(bigger) > backend.estimated_build_seconds(robot_from_dict(data))


def test_auto_uses_a_built_model_even_for_a_short_run(compiled_backend, monkeypatch, arm):
    from flexman.codegen import modelcache
    from flexman.simulate import backend

    modelcache.compiled_model(arm)  # built (or loaded) now
    monkeypatch.setattr(backend, "worth_compiling", lambda robot, work: (False, "never worth it"))
    assert fm.simulate(arm, 0.002, progress=False).stats["backend"] == "compiled"


def test_cli_json_says_which_loop(compiled_backend, capsys):
    import json

    from flexman.cli import main

    assert main(["simulate", "flx_three_link", "--controller", "--t-final", "0.01", "--json", "--backend",
                 "compiled"]) == 0
    assert json.loads(capsys.readouterr().out)["loop"] == "compiled"
    assert main(["simulate", "flx_three_link", "--controller", "--t-final", "0.01", "--json", "--method", "RK45",
                 "--backend", "compiled"]) == 0
    assert json.loads(capsys.readouterr().out)["loop"] == "python"


# ----- a run's energy, cheaply ------------------------------------------------------------------
@pytest.mark.parametrize("name", ["flx_three_link", "theodore_rrp", "ur5_like_flexible"])
def test_gravity_free_potential_is_the_strain_energy(name):
    """Without gravity the potential energy skips the recursion: it equals the average of the
    full recursion's values under gravity g and -g (the gravity part is linear in g)."""
    data = robot_to_dict(fm.examples.load(name))
    q = 0.2 * np.random.default_rng(0).standard_normal((20, fm.examples.load(name).nq))
    data["gravity"] = [0.0, 0.0, 0.0]
    free = robot_from_dict(data).potential_energy(q)
    data["gravity"] = [1.0, -2.0, -9.81]
    up = robot_from_dict(data).potential_energy(q)
    data["gravity"] = [-1.0, 2.0, 9.81]
    down = robot_from_dict(data).potential_energy(q)
    same(free, 0.5 * (up + down), 1e-13)


def test_run_energy_from_the_compiled_mass_matrix(compiled_backend, arm):
    """A compiled run's kinetic energy is 1/2 qd^T M qd with the compiled M: the robot's own."""
    from flexman.codegen.modelcache import compiled_model
    from flexman.simulate.run import energy

    rng = np.random.default_rng(2)
    q, qd = 0.3 * rng.standard_normal((30, arm.nq)), rng.standard_normal((30, arm.nq))
    same(energy(arm, compiled_model(arm), q, qd), arm.kinetic_energy(q, qd) + arm.potential_energy(q), 1e-13)


def test_a_controller_designed_on_another_model_keeps_it(compiled_backend, arm):
    """Decoupling designed on a stiffer model than the plant: both loops use the controller's
    own model (the Python loop; the compiled one declines), as before compiled models existed."""
    data = robot_to_dict(arm)
    for link in data["links"][1:]:
        link["beam"]["EI"] = [3.0 * e for e in link["beam"]["EI"]]
    stiff = robot_from_dict(data)
    from flexman.codegen.modelcache import compiled_model

    dec = Decoupling(stiff, MOVE, gp=100.0, gv=20.0)
    assert dec.using(compiled_model(arm)) is dec
    res = fm.simulate(arm, 0.05, controller=dec, progress=False, backend="compiled")
    assert res.stats["loop"] == "python" and "another robot" in res.stats["loop_reason"]
    ref = fm.simulate(arm, 0.05, controller=dec, progress=False, backend="numeric")
    same(res.q, ref.q, 1e-9)
