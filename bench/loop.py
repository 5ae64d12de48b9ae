"""The whole simulation loop: what a user's real runs cost, wall time and real-time factor.

Run: python bench/loop.py [--runs 10000] [--repeat 3] [--skip cold batch]

Rows (each measured in this process, best of ``--repeat`` where it is cheap; the machine may be
shared, so take the best and compare rows of one run only):

* ``showcase``: ``flexman simulate flx_three_link_lqr --controller --t-final 4.5 --dt 2e-3``
  (decoupling + LQR, RK4), the integration alone (compiled model loaded beforehand);
* ``krb spin-up``: ``bench/krb_spinup.py``'s prescribed spin-up, 20 s, RK4 at 10 ms, stiffened;
* ``cold 52``: a 52-coordinate clamped-mass arm (four links, six modes per plane), ``fm.simulate(robot,
  0.005)`` (five RK4 steps) with the default backend on an empty cache (a temporary folder);
* ``cli process``: ``flexman simulate flx_three_link --controller --t-final 2`` as a whole process
  (interpreter start, imports, cache load, run, output; the cache warmed first), with flexman's
  bytecode kept between processes (as an installed package has it) and without (every process
  compiles the sources: ``PYTHONDONTWRITEBYTECODE``);
* ``batch``: ``--runs`` closed-loop runs of 1 s of the three-link arm under decoupling + LQR
  (the showcase controller, LQR from 0.5 s), each from its own initial joint angles, RK4 at 2 ms,
  through ``simulate_batch``. With ``--batch-sample K`` only K runs are integrated and the time is
  scaled to ``--runs`` (said in the row): the interpreted loop is too slow to run them all.

Columns: the loop the run took (``compiled`` or ``python``, from ``result.stats``), wall seconds
of the whole call (or process), its CPU seconds (this process and its children, all threads: on
a machine shared with other jobs the wall time grows with the load, the CPU time much less), of the integration alone (``result.stats["wall_time"]``), and the
real-time factor of the whole call (simulated seconds per wall second; for the batch, all runs'
simulated seconds together). A first row times ``python -c "import numpy"`` as a process, the
floor under the ``cli process`` row on this machine.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import flexman as fm
from flexman.model.serialize import robot_from_dict, robot_to_dict


CPU = {}  # row -> CPU seconds of its best repetition (this process and its children)


def cpu_seconds():
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def best(fn, repeat):
    """(best wall seconds, result of that repetition); its CPU seconds go to CPU["last"]."""
    out, best_wall = None, float("inf")
    for _ in range(repeat):
        c0, t0 = cpu_seconds(), time.perf_counter()
        result = fn()
        wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
        if wall < best_wall:
            best_wall, out, CPU["last"] = wall, result, cpu
    return best_wall, out


def loop_of(stats):
    return stats.get("loop", "python")


def showcase(repeat):
    robot = fm.examples.load("flx_three_link_lqr")
    ctrl = fm.control.from_spec(robot, robot.controller)
    fm.simulate(robot, 0.01, dt=2e-3, controller=ctrl, progress=False, backend="compiled")  # load the model
    wall, res = best(lambda: fm.simulate(robot, 4.5, dt=2e-3, controller=ctrl, progress=False, backend="compiled"),
                     repeat)
    return loop_of(res.stats), wall, res.stats["wall_time"], 4.5, ""


def krb(repeat):
    data = robot_to_dict(fm.examples.load("krb_spinup"))
    data["links"][0]["beam"]["stiffening"] = True
    robot = robot_from_dict(data)
    traj = fm.trajectory.from_spec(robot.manoeuvre, robot.n_joints)
    fm.simulate(robot, 0.1, dt=1e-2, prescribed=traj, progress=False, backend="compiled")
    wall, res = best(lambda: fm.simulate(robot, 20.0, dt=1e-2, prescribed=traj, progress=False, backend="compiled"),
                     repeat)
    return loop_of(res.stats), wall, res.stats["wall_time"], 20.0, ""


def clamped_mass_52():
    """Four flexible links, clamped-mass shapes, six bending modes per plane: nq = 4 + 48 = 52."""
    beam = dict(length=2.0, mass_per_length=2.0, EI=[2000.0, 2000.0], shapes="clamped_mass",
                modes={"y": 6, "z": 6, "torsion": 0})
    links = [dict(joint="revolute", a=2.0, alpha=(np.pi / 2 if i % 2 == 0 else 0.0), d=0.0, theta=0.0, mass=0.2,
                  com=[0.0, 0.0, 0.0], inertia=[1e-3, 1e-3, 1e-3], beam=dict(beam)) for i in range(4)]
    robot = robot_from_dict({"name": "clamped_mass_52", "gravity": [0.0, 0.0, -9.81], "links": links})
    assert robot.nq == 52, robot.nq
    return robot


def cold52():
    robot = clamped_mass_52()
    from flexman.codegen import modelcache

    old = os.environ.get("FLEXMAN_CACHE")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["FLEXMAN_CACHE"] = tmp
        modelcache.clear_memory()
        try:
            c0, t0 = cpu_seconds(), time.perf_counter()
            res = fm.simulate(robot, 0.005, progress=False)
            wall = time.perf_counter() - t0
            CPU["last"] = cpu_seconds() - c0
        finally:
            if old is None:
                os.environ.pop("FLEXMAN_CACHE", None)
            else:
                os.environ["FLEXMAN_CACHE"] = old
            modelcache.clear_memory()
    return loop_of(res.stats), wall, res.stats["wall_time"], 0.005, f"{res.stats.get('backend')} model"


def cli_process(repeat, bytecode):
    """The command as a process; ``bytecode``: Python's compiled bytecode of flexman kept between
    processes (in a temporary folder, as an installed package keeps it), else recompiled by every
    process (PYTHONDONTWRITEBYTECODE, as this machine's environment sets)."""
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    env = dict(os.environ, PYTHONPATH=src + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("FLEXMAN_BACKEND", None)
    with tempfile.TemporaryDirectory() as pyc:
        if bytecode:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = pyc
        else:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        cmd = [sys.executable, "-m", "flexman", "simulate", "flx_three_link", "--controller", "--t-final", "2",
               "--json"]
        subprocess.run(cmd, env=env, capture_output=True, check=True)  # warm the model cache (and the bytecode)
        import json

        def once():
            out = subprocess.run(cmd, env=env, capture_output=True, check=True, text=True)
            return json.loads(out.stdout)

        wall, summary = best(once, repeat)
    return summary.get("loop", "python"), wall, summary["wall_time_s"], 2.0, "integration: the run inside"


def numpy_process(repeat):
    cmd = [sys.executable, "-c", "import numpy"]
    wall, _ = best(lambda: subprocess.run(cmd, check=True), repeat)
    return "-", wall, float("nan"), float("nan"), "the floor of any process here"


def batch(runs, sample):
    robot = fm.examples.load("flx_three_link_lqr")
    spec = dict(robot.controller, lqr_at=0.5, trajectory=dict(robot.controller["trajectory"], duration=0.5))
    ctrl = fm.control.from_spec(robot, spec)
    n = min(runs, sample) if sample else runs
    rng = np.random.default_rng(0)
    q0 = np.zeros((n, robot.nq))
    q0[:, :robot.n_joints] = 0.05 * rng.standard_normal((n, robot.n_joints))
    fm.simulate_batch(robot, 0.01, dt=2e-3, q0=q0[:2], controller=ctrl, progress=False, backend="compiled")
    c0, t0 = cpu_seconds(), time.perf_counter()
    res = fm.simulate_batch(robot, 1.0, dt=2e-3, q0=q0, controller=ctrl, progress=False, backend="compiled",
                            output_every=10)
    wall = (time.perf_counter() - t0) * runs / n
    CPU["last"] = (cpu_seconds() - c0) * runs / n
    assert np.all(np.isfinite(res.q))
    note = f"{n} runs measured, scaled to {runs}" if n < runs else ""
    return loop_of(res.stats), wall, res.stats["wall_time"] * runs / n, float(runs), note


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--batch-sample", type=int, default=0, help="integrate only this many runs and scale")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip", nargs="*", default=[], choices=("numpy", "showcase", "krb", "cold", "cli", "batch"))
    args = parser.parse_args()
    rows = []
    todo = [("numpy", "python -c 'import numpy' (process)", lambda: numpy_process(args.repeat)),
            ("showcase", "showcase closed loop 4.5 s (decoupling + LQR)", lambda: showcase(args.repeat)),
            ("krb", "KRB spin-up 20 s, RK4 10 ms", lambda: krb(args.repeat)),
            ("cold", "52 coordinates, 5 steps, cold cache", cold52),
            ("cli", "flexman simulate flx_three_link --controller --t-final 2 (process, bytecode cached)",
             lambda: cli_process(args.repeat, True)),
            ("cli", "the same, sources compiled by every process (PYTHONDONTWRITEBYTECODE)",
             lambda: cli_process(args.repeat, False)),
            ("batch", f"{args.runs} closed-loop 1 s runs (decoupling + LQR), batched",
             lambda: batch(args.runs, args.batch_sample))]
    for key, label, fn in todo:
        if key in args.skip:
            continue
        CPU["last"] = float("nan")
        loop, wall, integration, simulated, note = fn()
        cpu = CPU["last"]
        rows.append((label, loop, wall, cpu, integration, simulated, note))
        print(f"{label:70s} {loop:9s} {wall:9.3f} s  cpu {cpu:9.3f} s  integration {integration:9.4f} s  "
              f"RTF {simulated / wall:10.3g}  {note}  (load {os.getloadavg()[0]:.1f})", flush=True)
    print(f"\nload average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print("| run | loop | wall s | CPU s | integration s | real-time factor | note |")
    print("|---|---|---:|---:|---:|---:|---|")
    for label, loop, wall, cpu, integration, simulated, note in rows:
        print(f"| {label} | {loop} | {wall:.3g} | {cpu:.3g} | {integration:.3g} | {simulated / wall:.3g} | {note} |")


if __name__ == "__main__":
    main()
