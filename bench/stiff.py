"""A stiff real arm: the UR5 of example-robot-data with its forearm a short carbon-fibre tube
(0.39 m, EI 1.53e4 N m^2, 0.583 kg/m, the 1.2 kg wrist drive at its tip, two clamped-mass modes
per bending plane: 10 coordinates, free modes up to about 2.5e4 rad/s) making a 1.5 s
rest-to-rest move under computed torque (kp = 400, kd = 40), 3 s simulated, from rest (the
forearm at its static sag under gravity).

Prints, for each integrator, the wall time of the integration, the real-time factor and the
error against an RK4 reference at a tenth of RK4's stable step: the default (method="auto"),
RK4 at its stable step, generalized-alpha and Radau IIA (radau5: compiled loop, step-size
control), SciPy's Radau and BDF on the compiled model, and the model reduced above 500 Hz
(fm.reduce: the forearm's two kilohertz modes slaved to their quasi-static deflection) with the
default method, generalized-alpha and radau5, and a batch of its runs (fm.simulate_batch).
Run: .venv/bin/python bench/stiff.py [--quick]
"""
from __future__ import annotations

import pathlib
import sys
import time
import warnings

import numpy as np

import flexman as fm

SHARE = pathlib.Path(sys.prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages" \
    / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
URDF = SHARE / "ur_description" / "urdf" / "ur5_robot.urdf"
OVERLAY = {"name": "ur5_carbon_forearm", "links": {"forearm_link": {
    "beam": {"length": 0.39225, "mass_per_length": 0.583, "EI": 1.53e4, "shapes": "clamped_mass",
             "modes": {"y": 2, "z": 2}, "axis": [0, 0, 1]},
    "mass": 1.2, "com": [0.0, 0.0, 0.39225], "inertia": [1e-3, 1e-3, 1e-3]}}}
T_FINAL, MOVE = 3.0, 1.5
CUTOFF_HZ = 500.0  # the reduced model's: far above the controller's bandwidth (kp = 400: 3 Hz)


def stiff_arm():
    return fm.load(URDF, overlay=OVERLAY)


def controller(robot):
    q0 = np.zeros(robot.n_joints)
    goal = np.array([0.6, -0.5, 0.8, -0.4, 0.5, 0.3])[: robot.n_joints]
    return fm.control.ComputedTorque(robot, fm.trajectory.rest_to_rest(q0, goal, MOVE), kp=400.0, kd=40.0)


def at_rest(robot):
    """The start state: the joints at zero and the forearm at its static sag under gravity. A
    beam released undeflected under gravity rings at its kHz modes from the first instant (an
    initial-value transient, 14 % of the beam's peak; generalized-alpha damps it within a few
    steps by design): the move is measured from rest, as on a real arm."""
    from flexman.analysis.quasi_static import quasi_static_deflection

    q0 = np.zeros(robot.nq)
    q0[robot.flex_index] = quasi_static_deflection(robot, np.zeros(robot.n_joints))
    return q0


def timed(robot, q0=None, model=None, **options):
    """One run of ``model`` (default: the robot itself; else e.g. its reduction) under the robot's
    controller, and its wall time."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        res = fm.simulate(robot if model is None else model, T_FINAL, controller=controller(robot), progress=False,
                          q0=q0, **options)
    return res, time.perf_counter() - start


def sampled_run(robot, q0):
    """The controller sampled at 1 kHz: method='auto' divides the 1 ms step between the samples
    into RK4 steps within the plant's limit; against the same sampled run at dt = 1 ms / n."""
    from flexman.control import Sampled
    from flexman.simulate.stability import rk4_substeps

    n = rk4_substeps(robot, 1e-3)

    def run(**options):
        return fm.simulate(robot, T_FINAL, controller=Sampled(controller(robot), 1000.0), q0=q0, backend="compiled",
                           progress=False, **options)

    run(dt=1e-3)  # (the loop's library and any notice once)
    start = time.perf_counter()
    res = run(dt=1e-3)
    wall = time.perf_counter() - start
    fine = run(dt=1e-3 / n, method="rk4")
    first = res.t <= 0.5
    err = np.abs(fine.q[::n][first][:, robot.joint_index] - res.q[first][:, robot.joint_index]).max()
    print(f"sampled at 1 kHz (auto, dt = 1 ms, {res.stats['loop']} loop): {res.stats['substeps']} RK4 steps per "
          f"sample, {wall:.3f} s for {T_FINAL:g} s; the run at dt = 1 ms / {n}: joints within {err:.1e} rad over the "
          f"first 0.5 s (this law's sampled loop is unstable at 1 kHz: round-off grows after that; final joint rates "
          f"up to {np.abs(res.qd[-1, robot.joint_index]).max():.3g} rad/s)")


def main(argv):
    robot = stiff_arm()
    fm.simulate(robot, 0.01, controller=controller(robot), progress=False, backend="compiled")  # build once
    robot.compiled(derivatives=True)  # the partial derivatives: the implicit methods' analytic Jacobian
    probe, _ = timed(robot, dt=1e-3, backend="compiled")
    h = probe.stats["step_check"]["rk4_limit"]
    print(f"{robot.name}: nq = {robot.nq}; RK4's stable step for the closed loop {h:.3g} s")
    q0 = at_rest(robot)
    reduced = fm.reduce(robot, above_hz=CUTOFF_HZ)
    print(f"{reduced}: highest frequency {fm.analysis.natural_frequencies(reduced).max() / (2 * np.pi):.4g} Hz "
          f"(full: {fm.analysis.natural_frequencies(robot).max() / (2 * np.pi):.4g} Hz)")
    per_ms = int(np.ceil(1e-3 / (h / 10)))  # reference steps per millisecond: every output time is a step
    ref, wall_ref = timed(robot, q0, dt=1e-3 / per_ms, method="rk4", backend="compiled")
    h_ref = 1e-3 / per_ms
    rows = []
    for label, options in [("default (auto), dt = 1 ms", dict(dt=1e-3)),
                           ("generalized-alpha, dt = 1 ms", dict(dt=1e-3, method="generalized_alpha")),
                           ("generalized-alpha, dt = 0.5 ms", dict(dt=5e-4, method="generalized_alpha")),
                           ("RK4 at 0.9 x its stable step", dict(dt=1e-3 / np.ceil(1e-3 / (0.9 * h)), method="rk4")),
                           ("radau5 (compiled loop), rtol 1e-6", dict(dt=1e-3, method="radau5", rtol=1e-6, atol=1e-8)),
                           ("radau5 (compiled loop), rtol 1e-8", dict(dt=1e-3, method="radau5", rtol=1e-8, atol=1e-10)),
                           (f"reduced above {CUTOFF_HZ:g} Hz (auto, dt = 1 ms)", dict(dt=1e-3, model=reduced)),
                           (f"reduced above {CUTOFF_HZ:g} Hz, gen.-alpha 1 ms",
                            dict(dt=1e-3, model=reduced, method="generalized_alpha")),
                           (f"reduced above {CUTOFF_HZ:g} Hz, radau5 1e-6",
                            dict(dt=1e-3, model=reduced, method="radau5", rtol=1e-6, atol=1e-8)),
                           ] + ([] if "--quick" in argv else [
                           ("SciPy Radau (compiled model)", dict(dt=1e-3, method="Radau", rtol=1e-6, atol=1e-8)),
                           ("SciPy BDF (compiled model)", dict(dt=1e-3, method="BDF", rtol=1e-6, atol=1e-8))]):
        res, wall = timed(robot, q0, backend="compiled", **options)
        every = int(round(1e-3 / (res.t[1] - res.t[0])))  # compared on the millisecond grid, a step of both
        q = res.q[::every]
        qr, qf = ref.q[::per_ms][:, robot.joint_index], ref.q[::per_ms][:, robot.flex_index]
        joint_err = np.abs(q[:, robot.joint_index] - qr).max()
        flex_err = np.abs(q[:, robot.flex_index] - qf).max() / np.abs(qf).max()
        rows.append((label, res.stats.get("method", options.get("method")), wall, T_FINAL / wall, joint_err, flex_err))
        if "model" in options:
            why = f" ({res.stats['loop_reason']})" if "loop_reason" in res.stats else ""
            print(f"{label}: {res.stats['loop']} loop{why}, the run itself "
                  f"{res.stats['wall_time']:.3f} s, {res.stats.get('reduced_iterations', float('nan')):.2f} iterations of "
                  "the dropped coordinates per evaluation")
        if options.get("method") == "radau5":
            print(f"{label}: {res.stats['steps']} steps, {res.stats['rejected_steps']} rejected, "
                  f"{res.stats['newton_iterations']} Newton iterations, {res.stats['jacobians']} Jacobians "
                  f"({res.stats['jacobian']}), {res.stats['lu_decompositions']} LU pairs")
    batch_runs = 8  # the reduced model's batch: one C call for all runs
    start = time.perf_counter()
    batch = fm.simulate_batch(reduced, T_FINAL, dt=1e-3, q0=np.tile(q0, (batch_runs, 1)), controller=controller(robot),
                              backend="compiled", progress=False)
    print(f"reduced batch of {batch_runs} runs ({batch.method}, compiled loop): {time.perf_counter() - start:.3f} s, "
          f"the C call {batch.stats['wall_time']:.3f} s")
    sampled_run(robot, q0)
    print(f"reference: RK4 at {h_ref:.3g} s ({len(ref.t) - 1} steps, {wall_ref:.2f} s)")
    print(f"{'run':34s} {'ran':18s} {'wall s':>8s} {'x real time':>12s} {'joint err rad':>14s} {'beam err / peak':>16s}")
    for label, ran, wall, rtf, je, fe in rows:
        print(f"{label:34s} {ran:18s} {wall:8.3f} {rtf:12.1f} {je:14.2e} {fe:16.2e}")


if __name__ == "__main__":
    main(sys.argv[1:])
