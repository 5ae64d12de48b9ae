"""Frame sensors in the compiled sampled loop: the showcase's LQG move at 1 kHz with an
accelerometer and a gyroscope in the steady-state filter, and the sampled law recording an
accelerometer, a gyroscope and a position sensor two samples late, compiled loop against the
Python loop (docs/lab.md).

Run: python bench/sampled_frames.py [--repeat 3] [--t-final 5]

The helpers (timing, the loops' difference, the lab's encoders and gauges) are those of
bench/sampled.py, whose rows these extend; BLAS runs on one thread for the reason given there.
"""
from __future__ import annotations

from sampled import difference, lab_sensors, showcase, timed  # sets OPENBLAS_NUM_THREADS before NumPy loads

import flexman as fm  # noqa: E402


def frame_sensors(arm):
    """An accelerometer 0.3 m along the forearm and a gyroscope on the upper arm (filter inputs)."""
    return [fm.sensors.accelerometer(arm, "fore", [0.3, 0.0, 0.0], noise=0.01),
            fm.sensors.gyroscope(arm, "upper", noise=1e-3)]


def main(argv=None):
    args, arm, law = showcase(argv, __doc__.splitlines()[0])
    T = args.t_final
    samples = int(round(T * 1000))
    recorded = frame_sensors(arm) + [fm.sensors.position(arm, "fore", [0.5, 0.0, 0.0], latency=0.002, noise=1e-4)]
    rows = [("LQG, encoders + gauges", lambda: fm.control.lqg(arm, law, lab_sensors(arm), rate=1000.0, delay=1,
                                                                torque_noise=0.5, seed=1)),
            ("LQG, + accel + gyro", lambda: fm.control.lqg(arm, law, lab_sensors(arm) + frame_sensors(arm),
                                                             rate=1000.0, delay=1, torque_noise=0.5, seed=1)),
            ("law, records 3 frame", lambda: fm.control.Sampled(law, 1000.0, delay=1,
                                                                 sensors=fm.sensors.SensorSet(arm, recorded)))]
    fm.simulate(arm, 0.01, dt=1e-3, controller=rows[1][1](), backend="compiled", progress=False)  # build and load first
    print(f"showcase {T:g} s, RK4 at 1 ms, {samples} samples at 1 kHz; integration wall seconds, best of {args.repeat}")
    print(f"{'run':<24} {'compiled s':>11} {'us/sample':>10} {'python s':>9} {'python/compiled':>16} "
          f"{'loops differ by':>16}")
    for name, make in rows:
        compiled, a = timed(arm, T, make, "auto", args.repeat)
        python, b = timed(arm, T, make, "python", args.repeat)
        assert a.stats["loop"] == "compiled", a.stats.get("loop_reason")
        print(f"{name:<24} {compiled:>11.4f} {1e6 * compiled / samples:>10.1f} {python:>9.3f} "
              f"{python / compiled:>16.1f} {difference(a, b):>16.1e}")


if __name__ == "__main__":
    main()
