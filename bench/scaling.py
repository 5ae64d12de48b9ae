"""How derivation, compilation and evaluation grow with the size of the arm.

Run: python bench/scaling.py [--links 1 2 4 8 12] [--modes 2]

A chain of n flexible links (alternating alpha = 90 deg / 0, each a 0.5 m beam with ``modes``
bending modes per plane, so nq = n (1 + 2 modes)) goes through the compiled-by-default path
(derive with symbolic parameters, generate C, compile; an empty cache for each size). Columns:
derive and compile CPU seconds (compile: summed over the compiler processes, which run in
parallel), the wall time of the whole build and the load average during it (the machine may be
shared: on an idle machine with c cores the wall time is about derive + compile / c), forward
dynamics per call (one state through the extension) and per
state in a batch of 1000 (compiled, then interpreted), and Pinocchio's ABA per call on the rigid
chain of the same number of joints (skipped when ``import pinocchio`` fails).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from rigid import best_of  # noqa: E402  (bench/rigid.py)

from flexman import Beam, Link, RigidBody, Robot  # noqa: E402


def chain(n_links, modes=2, flexible=True) -> Robot:
    links = []
    for i in range(n_links):
        alpha = np.pi / 2 if i % 2 == 0 else 0.0
        if flexible:
            beam = Beam(length=0.5, mass_per_length=2.0, EI=[2000.0, 2000.0],
                        modes={"y": modes, "z": modes, "torsion": 0})
            links.append(Link(a=0.5, alpha=alpha, body=RigidBody(0.2, [0, 0, 0], [1e-3, 1e-3, 1e-3]), beam=beam,
                              name=f"l{i + 1}"))
        else:
            links.append(Link(a=0.5, alpha=alpha, body=RigidBody(1.2, [-0.25, 0, 0], [1e-3, 0.03, 0.03]),
                              name=f"l{i + 1}"))
    return Robot(links=links, name=f"chain{n_links}", gravity=[0, 0, -9.81])


def pinocchio_aba(robot):
    """us per ABA call on the rigid chain, or None without Pinocchio."""
    try:
        import pinocchio as pin
        from rigid import pinocchio_model
    except ImportError:
        return None
    model = pinocchio_model(robot)
    data = model.createData()
    rng = np.random.default_rng(0)
    q, v, tau = (rng.standard_normal(robot.nq) for _ in range(3))
    return 1e6 * best_of(lambda: pin.aba(model, data, q, v, tau), repeat=5, number=2000)


def _children_cpu():
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def row(n_links, modes):
    from flexman.codegen import modelcache

    robot = chain(n_links, modes)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["FLEXMAN_CACHE"] = tmp
        modelcache.clear_memory()
        start, cpu, children = time.perf_counter(), time.process_time(), _children_cpu()
        model = modelcache.compiled_model(robot)
        total = time.perf_counter() - start
        derive_cpu, compile_cpu = time.process_time() - cpu, _children_cpu() - children
        load = os.getloadavg()[0]
        rng = np.random.default_rng(1)
        Q = 0.01 * rng.standard_normal((1000, robot.nq))  # small deflections: M well conditioned
        Q[:, robot.joint_index] = rng.standard_normal((1000, robot.n_joints))
        QD = rng.standard_normal((1000, robot.nq))
        TAU = rng.standard_normal((1000, robot.n_joints))
        q, qd, tau = Q[0].copy(), QD[0].copy(), TAU[0].copy()
        single = 1e6 * best_of(lambda: model.forward_dynamics(q, qd, tau), repeat=5, number=200)
        batched = 1e6 * best_of(lambda: model.forward_dynamics(Q, QD, TAU), repeat=3, number=1) / 1000
        k = 100 if robot.nq > 30 else 1000
        interp = 1e6 * best_of(lambda: robot.forward_dynamics(Q[:k], QD[:k], TAU[:k]), repeat=3, number=1) / k
        err = np.abs(model.forward_dynamics(Q[:20], QD[:20], TAU[:20]) - robot.forward_dynamics(Q[:20], QD[:20], TAU[:20]))
        rel = err.max() / np.abs(robot.forward_dynamics(Q[:20], QD[:20], TAU[:20])).max()
    pin_us = pinocchio_aba(chain(n_links, flexible=False))
    return (n_links, modes, robot.nq, f"{derive_cpu:.1f}", f"{compile_cpu:.1f}", f"{total:.1f}", f"{load:.1f}",
            f"{single:.2f}", f"{batched:.2f}", f"{interp:.0f}",
            "-" if pin_us is None else f"{pin_us:.2f}", f"{rel:.0e}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--links", type=int, nargs="+", default=[1, 2, 4, 8, 12])
    parser.add_argument("--modes", type=int, default=2, help="bending modes per plane")
    args = parser.parse_args(argv)
    head = ("links", "modes/plane", "nq", "derive cpu s", "compile cpu s", "build wall s", "load", "FD us/call", "FD us/state batched",
            "interp. us/state", "Pinocchio rigid ABA us", "rel. diff")
    rows = []
    for n in args.links:
        rows.append(row(n, args.modes))
        print("  ".join(str(x) for x in rows[-1]), file=sys.stderr, flush=True)
    w = [max(len(str(r[k])) for r in rows + [head]) for k in range(len(head))]
    print("  ".join(h.rjust(w[k]) for k, h in enumerate(head)))
    for r in rows:
        print("  ".join(str(x).rjust(w[k]) for k, x in enumerate(r)))


if __name__ == "__main__":
    main()
