"""Sampled control in the compiled loop: the showcase's LQG move at 1 kHz, compiled sampled loop
against the Python sampled loop and today's continuous compiled loop (docs/scaling.md, docs/lab.md).

Run: python bench/sampled.py [--repeat 3] [--t-final 5]

The showcase arm (``flx_three_link_lqr``) under its model file's decoupling + LQR law, 5 s (the
2.5 s move and 2.5 s of LQR), RK4 at 1 ms on the compiled model:

* ``continuous``: the law reading the true state continuously (the compiled loop of
  ``codegen/loop.py``);
* ``sampled, true state``: the law sampled at 1 kHz, one sample of delay, reading the true state;
* ``LQG``: the law on the estimate of a steady-state Kalman filter of three 16-bit encoders and one
  strain gauge per tube (docs/lab.md), 1 kHz, one sample of delay, a torque disturbance of 0.5 N m;
* ``LQG, EKF``: the same with the extended Kalman filter (its covariance through the exact
  derivative of its RK4 prediction, from the model's partial derivatives: the model's variant
  compiled with them is built first).

Each sampled row runs in both loops; printed: the integration's wall seconds (``stats["wall_time"]``,
best of ``--repeat``), microseconds per sample, the Python loop's time over the compiled one, the
compiled time over the continuous run's, and the largest difference between the two loops' states,
readings and estimates (relative to the largest value). All ratios come from this one run.

BLAS runs on one thread (``OPENBLAS_NUM_THREADS=1`` unless set): the Kalman filter's design just
before a run leaves OpenBLAS's idle threads spinning for a while, and on a 2-core machine they took
the loop's core (38 % of the CPU in ``perf``; the LQG row then took 0.057 s instead of 0.029 s).
"""
from __future__ import annotations

import argparse
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before NumPy loads OpenBLAS (see the module doc)

import numpy as np  # noqa: E402

import flexman as fm  # noqa: E402

COUNT = 2 * np.pi / 2 ** 16  # one count of a 16-bit encoder


def lab_sensors(arm):
    return ([fm.sensors.encoder(arm, j, 2 ** 16, noise=COUNT) for j in range(3)]
            + [fm.sensors.strain_gauge(arm, link, 0.0, 0.05, noise=2e-6) for link in ("upper", "fore")])


def timed(arm, t_final, controller, loop, repeat):
    """(best integration wall seconds, the result of that run); a fresh controller per run."""
    best, out = np.inf, None
    for _ in range(repeat):
        res = fm.simulate(arm, t_final, dt=1e-3, controller=controller(), method="rk4", backend="compiled",
                          loop=loop, progress=False)
        if res.stats["wall_time"] < best:
            best, out = res.stats["wall_time"], res
    return best, out


def difference(a, b):
    """Largest difference of states, torques, readings and estimates, relative to the largest value."""
    pairs = [(a.q, b.q), (a.qd, b.qd), (a.tau, b.tau)]
    if a.estimate is not None:
        pairs.append((a.estimate["x"], b.estimate["x"]))
    if a.measurements is not None:
        pairs += [(a.measurements[n].y, b.measurements[n].y) for n in b.measurements]
    return max(np.abs(x - y).max() / max(1.0, np.abs(y).max()) for x, y in pairs)


def showcase(argv, description):
    """(options --repeat and --t-final, the showcase arm, its model file's law): what both sampled benches run."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--t-final", type=float, default=5.0)
    args = parser.parse_args(argv)
    arm = fm.examples.load("flx_three_link_lqr")
    return args, arm, fm.control.from_spec(arm, arm.controller)


def main(argv=None):
    args, arm, law = showcase(argv, __doc__.splitlines()[0])
    sensors = lab_sensors(arm)
    T = args.t_final
    fm.simulate(arm, 0.01, dt=1e-3, controller=law, backend="compiled", progress=False)  # build and load first
    arm.compiled(derivatives=True)  # the extended Kalman filter's partial derivatives, in both loops
    cont, res = timed(arm, T, lambda: law, "compiled", args.repeat)
    assert res.stats["loop"] == "compiled"
    samples = int(round(T * 1000))
    print(f"showcase {T:g} s, RK4 at 1 ms, {samples} samples at 1 kHz; integration wall seconds, best of {args.repeat}")
    print(f"{'run':<24} {'compiled s':>11} {'us/sample':>10} {'python s':>9} {'python/compiled':>16} "
          f"{'compiled/continuous':>20} {'loops differ by':>16}")
    print(f"{'continuous (true state)':<24} {cont:>11.4f} {1e6 * cont / samples:>10.1f} {'':>9} {'':>16} {1.0:>20.2f}")
    rows = [("sampled, true state", lambda: fm.control.Sampled(law, 1000.0, delay=1)),
            ("LQG", lambda: fm.control.lqg(arm, law, sensors, rate=1000.0, delay=1, torque_noise=0.5, seed=1)),
            ("LQG, EKF", lambda: fm.control.lqg(arm, law, sensors, rate=1000.0, delay=1, torque_noise=0.5, seed=1,
                                                extended=True))]
    for name, make in rows:
        compiled, a = timed(arm, T, make, "auto", args.repeat)
        python, b = timed(arm, T, make, "python", 1 if a.stats["loop"] == "python" else args.repeat)
        if a.stats["loop"] == "python":
            print(f"{name:<24} {'(python)':>11} {1e6 * python / samples:>10.1f} {python:>9.3f} "
                  f"  {a.stats['loop_reason']}")
            continue
        print(f"{name:<24} {compiled:>11.4f} {1e6 * compiled / samples:>10.1f} {python:>9.3f} "
              f"{python / compiled:>16.1f} {compiled / cont:>20.2f} {difference(a, b):>16.1e}")


if __name__ == "__main__":
    main()
