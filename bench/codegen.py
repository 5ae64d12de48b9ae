"""Operation counts of the traced equations vs the thesis (000 Table 4.1), and speed of the
compiled C model vs Pinocchio on a Puma-like arm.

Run: python bench/codegen.py   (Pinocchio rows skipped when `import pinocchio` fails, the
roboticstoolbox-python comparison when `import roboticstoolbox` fails)

Table 4.1 arm (000 sec. 3.3.5): link 1 of zero length about Z0, links 2 and 3 the "standard"
4 m tube (Table 3.1: 10.955 kg, EI = 2e11 * 1.476e-7 N m^2), rigid or with one bending mode in
each plane (3 + 2 x 2 = 7 coordinates). SYMFLX: rigid 445 mul / 213 add, flexible 2659 / 1313
(unused Z### removed). The thesis ignores the joint-mass transform S; so do we (no hubs).
"""
from __future__ import annotations

import time

import numpy as np

import flexman as fm
from flexman import Beam, Link, RigidBody, Robot
from rigid import best_of, pinocchio_model  # bench/rigid.py, beside this file

TUBE = dict(length=4.0, mass_per_length=10.955 / 4.0, EI=[2.0e11 * 1.476e-7] * 2)


def thesis_arm(flexible: bool) -> Robot:
    """Rigid: each tube as a rigid body (uniform rod: mass m, centre at -L/2, m L^2/12)."""
    m, L = 10.955, 4.0
    rod = RigidBody(m, [-L / 2, 0, 0], [1e-4, m * L**2 / 12, m * L**2 / 12])
    tip = RigidBody(0.0, [0, 0, 0], [0, 0, 0])
    link = lambda: (Link(a=L, body=tip, beam=Beam(**TUBE, modes={"y": 1, "z": 1, "torsion": 0})) if flexible
                    else Link(a=L, body=rod))
    return Robot(
        name="thesis_3link_" + ("flexible" if flexible else "rigid"),
        links=[Link(a=0.0, alpha=np.pi / 2, body=RigidBody(1.0, [0, 0, 0], [0.25, 0.25, 0.5])), link(), link()],
        gravity=[0, 0, -9.81])


def table(rows, head):
    w = [max(len(str(r[k])) for r in rows + [head]) for k in range(len(head))]
    fmt = "  ".join("{:>%d}" % x for x in w)
    print(fmt.format(*head))
    for r in rows:
        print(fmt.format(*r))


def op_counts():
    print("== inverse dynamics operation counts vs 000 Table 4.1 ==")
    rows = []
    for flexible, target in ((False, (445, 213)), (True, (2659, 1313))):
        robot = thesis_arm(flexible)
        forms = ["book", "newton_euler", "lagrange"] if not flexible else ["book"]
        for form in forms:
            t = time.perf_counter()
            eom = fm.derive(robot, formulation=form)
            dt = time.perf_counter() - t
            c = eom.op_count("inverse_dynamics")
            rows.append((robot.name, robot.nq, form, c["mul"], c["add"], c["div"], c["fn"], f"{target[0]}/{target[1]}",
                         "yes" if c["mul"] <= target[0] and c["add"] <= target[1] else "no", f"{dt:.2f}"))
    table(rows, ("arm", "nq", "formulation", "mul", "add", "div", "fn", "SYMFLX", "<=", "derive s"))
    for flexible in (False, True):
        robot = thesis_arm(flexible)
        print(f"\n-- passes, book formulation, {robot.name} --")
        eom = fm.derive(robot, formulation="book")
        for what in ("inverse_dynamics", "mass_matrix", "bias_forces", "forward_dynamics"):
            steps = eom.passes(what)
            print(f"{what}: " + "; ".join(f"{name} {c['mul']}*/{c['add']}+" for name, c in steps))


REPS, ROUNDS = 100_000, 7


def interleaved(funcs, reps=REPS, rounds=ROUNDS):
    """{label: {key: best-of-``rounds`` mean time of one call (seconds)}} of ``funcs`` (same
    nesting, callables); the rounds visit every callable in turn, so that a load change on
    the machine hits all of them alike."""
    best = {label: dict.fromkeys(fs, np.inf) for label, fs in funcs.items()}
    for _ in range(rounds):
        for label, fs in funcs.items():
            for k, f in fs.items():
                best[label][k] = min(best[label][k], best_of(f, repeat=1, number=reps))
    return best


def us(t):
    return f"{t * 1e6:.3f}"


def timing(robot, n_batch=100_000):
    n = robot.nq
    eom = fm.derive(robot, formulation="denoc")  # composite-body M, Newton-Euler bias / inverse dynamics
    print(f"\n== {robot.name}: op counts (denoc: composite-body M, Newton-Euler b) ==")
    for what in ("inverse_dynamics", "mass_matrix", "bias_forces", "forward_dynamics"):
        print(f"{what}: {eom.op_count(what)}")
    fast, slow = eom.compile("c"), eom.compile("c", ext=False)
    if fast.ext is None:
        print("(Python extension not available: 'flexman extension' rows use ctypes)")
    rng = np.random.default_rng(0)
    Q, QD, QDD = rng.uniform(-np.pi, np.pi, (3, n_batch, n))
    q, qd, qdd = Q[0], QD[0], QDD[0]
    ref = robot.inverse_dynamics(Q, QD, QDD)
    assert np.allclose(fast.inverse_dynamics(Q, QD, QDD), ref, rtol=1e-10, atol=1e-10)
    assert np.allclose(fast.inverse_dynamics(q, qd, qdd), ref[0], rtol=1e-10, atol=1e-10)

    try:
        import pinocchio as pin
    except ImportError:
        pin = None
        print("pinocchio not importable: Pinocchio rows skipped")
    out, outM = np.empty(n), np.empty((n, n))
    funcs = {label: {"ID": lambda m=m: m.inverse_dynamics(q, qd, qdd), "M": lambda m=m: m.mass_matrix(q),
                     "FD": lambda m=m: m.forward_dynamics(q, qd, qdd)}
             for label, m in (("flexman extension", fast), ("flexman ctypes", slow))}
    funcs["flexman extension, out="] = {"ID": lambda: fast.inverse_dynamics(q, qd, qdd, out=out),
                                        "M": lambda: fast.mass_matrix(q, out=outM),
                                        "FD": lambda: fast.forward_dynamics(q, qd, qdd, out=out)}
    if pin is not None:
        model = pinocchio_model(robot)
        data = model.createData()
        M_pin = pin.crba(model, data, q)
        M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T
        print("check vs Pinocchio: ID", f"{np.abs(pin.rnea(model, data, q, qd, qdd) - ref[0]).max():.1e}",
              " M", f"{np.abs(M_pin - robot.mass_matrix(q)).max():.1e}")
        funcs["Pinocchio rnea / crba / aba"] = {"ID": lambda: pin.rnea(model, data, q, qd, qdd),
                                                "M": lambda: pin.crba(model, data, q),
                                                "FD": lambda: pin.aba(model, data, q, qd, qdd)}
    print(f"\n== single call from Python, one state (microseconds, best of {ROUNDS} interleaved rounds x {REPS}) ==")
    single = interleaved(funcs)
    table([(label,) + tuple(us(t) for t in times.values()) for label, times in single.items()], ("", "ID", "M", "FD"))
    if pin is not None:
        pin_t = single.pop("Pinocchio rnea / crba / aba")
        for label, times in single.items():
            print(f"ratio {label} / Pinocchio: " + ", ".join(f"{k} {times[k] / pin_t[k]:.2f}" for k in times))

    print(f"\n== batched, {n_batch} states (microseconds per state, best of 5) ==")
    rows = []
    tb = {"ID": best_of(lambda: fast.inverse_dynamics(Q, QD, QDD)) / n_batch,
          "M": best_of(lambda: fast.mass_matrix(Q)) / n_batch,
          "FD": best_of(lambda: fast.forward_dynamics(Q, QD, QDD)) / n_batch}
    rows.append(("flexman batched C (ctypes, loop in C)",) + tuple(us(v) for v in tb.values()))
    if pin is not None:
        qf, vf, af = (np.asfortranarray(X.T) for X in (Q, QD, QDD))
        out = np.zeros((n, n_batch), order="F")
        if hasattr(pin, "rneaInParallel") and hasattr(pin, "ModelPool"):
            pool = pin.ModelPool(model, 1)
            how = "Pinocchio rneaInParallel / abaInParallel, 1 thread"
            tp = {"ID": best_of(lambda: pin.rneaInParallel(1, pool, qf, vf, af, out)) / n_batch, "M": np.nan}
            assert np.allclose(out.T, ref, rtol=1e-10, atol=1e-9)
            tp["FD"] = best_of(lambda: pin.abaInParallel(1, pool, qf, vf, af, out)) / n_batch
        else:
            how = "Pinocchio rnea / crba / aba, Python loop"
            n_loop = min(n_batch, 20000)
            tp = {"ID": best_of(lambda: [pin.rnea(model, data, Q[k], QD[k], QDD[k]) for k in range(n_loop)]) / n_loop,
                  "M": best_of(lambda: [pin.crba(model, data, Q[k]) for k in range(n_loop)]) / n_loop,
                  "FD": best_of(lambda: [pin.aba(model, data, Q[k], QD[k], QDD[k]) for k in range(n_loop)]) / n_loop}
        rows.append((how,) + tuple("-" if np.isnan(v) else us(v) for v in tp.values()))
    table(rows, ("", "ID", "M", "FD"))
    if pin is not None:
        print("speed-up flexman batched vs " + how + ": " + ", ".join(
            f"{k} {tp[k] / tb[k]:.1f}x" for k in tb if not np.isnan(tp[k])))
    print("single calls include the Python call overhead (argument checks, output allocation); "
          "batch times are dominated by the generated code itself.")
    return single["flexman extension"]["ID"]


def flx_three_link_2modes() -> Robot:
    """Bundled flx_three_link with two bending modes per plane on its flexible links (nq = 11)."""
    import dataclasses

    robot = fm.examples.load("flx_three_link")
    links = [dataclasses.replace(lk, beam=dataclasses.replace(lk.beam, modes={"y": 2, "z": 2, "torsion": 0}))
             if lk.beam is not None else lk for lk in robot.links]
    return Robot(links=links, name=robot.name + "_2modes", gravity=robot.gravity, dh=robot.dh, payload=robot.payload)


def derivation_times():
    """Wall time of fm.derive + eom.compile('c') into an empty cache (nothing reused)."""
    import os
    import tempfile

    print("\n== derivation + C compilation (seconds, empty cache) ==")
    rows = []
    old = os.environ.get("FLEXMAN_CACHE")
    try:
        for robot, form in ((fm.examples.load("puma560"), "newton_euler"), (flx_three_link_2modes(), "book")):
            with tempfile.TemporaryDirectory() as tmp:
                os.environ["FLEXMAN_CACHE"] = tmp
                t0 = time.perf_counter()
                eom = fm.derive(robot, formulation=form)
                counts = {w: eom.op_count(w) for w in ("inverse_dynamics", "forward_dynamics")}
                t1 = time.perf_counter()
                fast = eom.compile("c")
                t2 = time.perf_counter()
            c = counts["inverse_dynamics"]
            rows.append((robot.name, robot.nq, form, f"{c['mul']}/{c['add']}", f"{t1 - t0:.2f}", f"{t2 - t1:.2f}",
                         f"{t2 - t0:.2f}", "yes" if fast.ext is not None else "no"))
    finally:
        if old is None:
            os.environ.pop("FLEXMAN_CACHE", None)
        else:
            os.environ["FLEXMAN_CACHE"] = old
    table(rows, ("arm", "nq", "formulation", "ID mul/add", "derive+counts", "compile", "total", "extension"))
    return float(rows[0][4])


def roboticstoolbox_peer(ours_rne=None):
    """roboticstoolbox-python's Puma 560: numeric rne, and symbolic rne_python + sympy.cse."""
    print("\n== roboticstoolbox-python (Puma 560) ==")
    try:
        import roboticstoolbox as rtb
        import sympy
    except ImportError:
        print("roboticstoolbox-python not importable (pip install roboticstoolbox-python): skipped")
        return
    robot = rtb.models.DH.Puma560()
    q, qd, qdd = np.random.default_rng(1).uniform(-1, 1, (3, 6))
    t_rne = best_of(lambda: robot.rne(q, qd, qdd), repeat=3, number=2000)
    print(f"numeric rne, one state: {us(t_rne)} us" +
          (f"  (flexman extension ID is {t_rne / ours_rne:.0f}x faster)" if ours_rne else ""))
    sym = rtb.models.DH.Puma560(symbolic=True)
    qs, qds, qdds = (sympy.symbols(f"{n}1:7") for n in ("q", "qd", "qdd"))
    t0 = time.perf_counter()
    tau = sym.rne_python(qs, qds, qdds)
    t1 = time.perf_counter()
    exprs = [sympy.sympify(e) for e in np.ravel(tau)]
    rep, red = sympy.cse(exprs)
    t2 = time.perf_counter()
    ops = sympy.count_ops([e for _, e in rep] + list(red), visual=True)
    ops = {str(k): int(v) for k, v in ops.as_coefficients_dict().items()} if ops != 0 else {}
    print(f"symbolic rne_python {t1 - t0:.2f} s + sympy.cse {t2 - t1:.2f} s = {t2 - t0:.2f} s; "
          f"after cse {len(rep)} intermediates, ops {dict(sorted(ops.items()))} (total {sum(ops.values())}; "
          "note: its Puma has numeric masses and only its kinematic constants are symbolic)")
    return t2 - t0


if __name__ == "__main__":
    op_counts()
    t_id = timing(fm.examples.load("puma560"))
    timing(fm.examples.load("stanford_arm"))
    t_derive = derivation_times()
    t_sym = roboticstoolbox_peer(t_id)
    if t_sym:
        print(f"ratio roboticstoolbox symbolic rne_python + cse / flexman derive (puma560): {t_sym / t_derive:.1f}")
