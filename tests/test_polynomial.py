"""Polynomial normal form of mass-matrix programs (flexman.symbolic.polynomial): what it
removes (cos^2 + sin^2, roundoff zeros, like terms, the dependence on q1), and that every
rewriting computes the same M as the numeric dynamics, for rigid and flexible random arms."""
import numpy as np
import pytest

import flexman as fm
from flexman.symbolic import polynomial as P
from flexman.symbolic.program import Program
from flexman.symbolic.program import run_program
from flexman.symbolic.tracer import Tape
from test_flexible import random_flexible_robot, random_state
from conftest import random_rigid_robot


def program_of(fn, names=("q1", "q2")):
    tape = Tape()
    x = tape.inputs(names)
    return Program.from_tape("t", tape, {"q": list(names)}, {"y": np.array([fn(*x)], dtype=object)})


def test_trig_identity_and_roundoff_zero():
    # (cos^2 q1 + sin^2 q1) q2 is q2: two products, one sum, one product in the trace, none after
    prog = program_of(lambda a, b: (a.cos() * a.cos() + a.sin() * a.sin()) * b)
    atoms, out = P.expand(prog)
    (poly,) = out["y"][1]
    assert list(poly) == [tuple(1 if key == ("var", "q2") else 0 for key in atoms.list[:atoms.index[("var", "q2")] + 1])]
    assert P.refactor(prog).op_count() == {"mul": 0, "add": 0, "div": 0, "fn": 0}
    # 0.1 q2 + 0.2 q2 - 0.3 q2: 5.6e-17 q2 in floating point, below its roundoff bound (0.6 TOL)
    prog = program_of(lambda a, b: 0.1 * b + 0.2 * b - 0.3 * b)
    assert P.expand(prog)[1]["y"][1] == [{}]
    # a real small coefficient is kept: 1e-9 q2 + q1
    prog = program_of(lambda a, b: (1.0 + 1e-9) * b - b + a)
    assert len(P.expand(prog)[1]["y"][1][0]) == 2


def test_division_by_a_shifted_input_and_non_polynomials():
    prog = program_of(lambda a, b: (a * (0.3 + b) * (0.3 + b) + 1.0) / (0.3 + b))
    atoms, _ = P.expand(prog)
    assert ("shift", "q2", 0.3) in atoms.list
    for q in ([0.2, 0.5], [-1.0, 1.7]):
        assert np.isclose(run_program(P.refactor(prog), q)["y"][0], run_program(prog, q)["y"][0], rtol=1e-14)
    with pytest.raises(P.NotPolynomial):
        P.expand(program_of(lambda a, b: (a * a + b * b).sqrt()))
    with pytest.raises(P.NotPolynomial):
        P.expand(program_of(lambda a, b: 1.0 / (a * a + b)))
    with pytest.raises(P.NotPolynomial):
        P.expand(program_of(lambda a, b: (a + b).cos()))
    assert P.reduce(program_of(lambda a, b: (a * a + b * b).sqrt())).op_count()["fn"] == 1  # left as it is


def test_shared_sums_recover_products_of_sums():
    # (q1 + 2 q2)(q3 - q4) and 3 (q1 + 2 q2) q5, written out: 4 + 2 terms, 4 additions. The
    # kernels q1 + 2 q2 and q3 - q4 are computed once: 2 additions, and y1 = t1 t2, y2 = 3 q5 t1.
    names = ("q1", "q2", "q3", "q4", "q5")
    tape = Tape()
    a, b, c, d, e = tape.inputs(names)
    ys = [a * c - a * d + 2.0 * b * c - 2.0 * b * d, 3.0 * a * e + 6.0 * b * e]
    prog = Program.from_tape("t", tape, {"q": list(names)}, {"y": np.array(ys, dtype=object)})
    assert prog.op_count()["add"] == 4
    atoms, expanded = P.expand(prog)
    shared = min(P.emit_shared(prog, atoms, expanded), key=P.total)
    assert shared.op_count()["add"] == 2
    assert shared.op_count()["mul"] <= 5  # 0.5 q1 in t1 = q2 + 0.5 q1, t1 t2, 2 (t1 t2), q5 t1, 6 (q5 t1)
    rng = np.random.default_rng(1)
    for q in rng.normal(size=(4, 5)):
        assert np.allclose(run_program(shared, q)["y"], run_program(prog, q)["y"], rtol=1e-14)


def test_shared_one_minus_sine_squared_is_cosine_squared():
    # q2 cos^2 q1 + q3 and 3 q3 cos^2 q1 + q2 are q2 - q2 s^2 + q3 and 3 q3 - 3 q3 s^2 + q2 in
    # the normal form (6 terms, 4 additions); the recurring kernel 1 - s^2 is emitted as c c, so
    # only the two outer additions are left
    names = ("q1", "q2", "q3")
    tape = Tape()
    a, b, c = tape.inputs(names)
    ys = [b * a.cos() * a.cos() + c, 3.0 * c * a.cos() * a.cos() + b]
    prog = Program.from_tape("t", tape, {"q": list(names)}, {"y": np.array(ys, dtype=object)})
    atoms, expanded = P.expand(prog)
    assert sum(len(p) for p in expanded["y"][1]) == 6
    shared = min(P.emit_shared(prog, atoms, expanded), key=P.total)
    assert shared.op_count()["add"] == 2
    for q in np.random.default_rng(2).normal(size=(3, 3)):
        assert np.allclose(run_program(shared, q)["y"], run_program(prog, q)["y"], rtol=1e-14)


@pytest.mark.parametrize("seed", range(6))
def test_reduced_mass_matrix_of_random_arms(seed):
    rng = np.random.default_rng(100 + seed)
    robot = random_flexible_robot(rng, 2 + seed % 2) if seed % 3 else random_rigid_robot(rng, 4)
    eom = fm.derive(robot, formulation="book")
    raw = fm.derive(robot, formulation="book", reduce_mass_matrix=False)
    prog = eom.program("mass_matrix")
    total = lambda c: sum(c.values())
    assert total(prog.op_count()) <= total(raw.op_count("mass_matrix"))
    steps = eom.passes("mass_matrix")
    assert steps[-1][1] == prog.op_count() and "polynomial" in steps[-1][0]
    assert not any("q1" in prog.dependencies()[label] for label, _, _ in prog.outputs["M"][1])
    for _ in range(3):
        q = random_state(rng, robot)[0] if not robot.is_rigid else rng.normal(size=robot.nq)
        M = robot.mass_matrix(q)
        assert np.abs(run_program(prog, q)["M"] - M).max() <= 1e-10 * np.abs(M).max()


def test_stanford_arm_mass_matrix_shrinks():
    # cos^2 + sin^2 of the rotations: the Stanford arm's M needs well under the traced work
    robot = fm.examples.load("stanford_arm")
    raw = fm.derive(robot, reduce_mass_matrix=False).op_count("mass_matrix")
    red = fm.derive(robot).op_count("mass_matrix")
    assert red["mul"] + red["add"] < 0.6 * (raw["mul"] + raw["add"])
    q = np.random.default_rng(3).normal(size=robot.nq)
    assert np.allclose(run_program(fm.derive(robot).program("mass_matrix"), q)["M"], robot.mass_matrix(q),
                       rtol=1e-12, atol=1e-12)


def test_mass_matrix_of_an_arm_whose_first_link_is_a_sliding_beam():
    # its M depends on q1 (the outside length), so it is not traced in link 1's frame
    EI = 1165.4916
    beam = lambda length: fm.Beam(length, 0.331, (EI, EI), modes={"y": 1, "z": 0, "torsion": 0})
    robot = fm.Robot(links=[fm.Link("prismatic", d=0.3, limits=(0.0, 1.0), beam=beam(1.3)),
                            fm.Link("revolute", a=0.5, beam=beam(0.5))])
    q = np.array([0.4, 0.3, 0.01, -0.02])
    for formulation in ("book", "newton_euler"):
        M = fm.derive(robot, formulation=formulation).compile("numpy").mass_matrix(q)
        assert np.abs(M - robot.mass_matrix(q)).max() < 1e-10 * np.abs(M).max()


def test_pair_kernel_is_the_greatest_common_divisor_split():
    """c1 x^m1 + c2 x^m2 = c1 x^g (x^k1 + r x^k2) with x^g the exponent-wise minimum (negative
    exponents included), k1, k2 sorted sparse monomials, the pair's order not mattering."""
    rng = np.random.default_rng(3)
    for _ in range(2000):
        m1, m2 = [tuple((int(a), int(rng.choice([-2, -1, 1, 2, 3]))) for a in sorted(rng.choice(9, rng.integers(0, 5),
                                                                                                replace=False)))
                  for _ in range(2)]
        if m1 == m2:
            continue
        c1, c2 = rng.uniform(0.5, 2.0, 2)
        k1, k2, r = P._pair_key(m1, c1, m2, c2)
        assert P._pair_key(m2, c2, m1, c1) == (k1, k2, r)
        d1, d2 = dict(m1), dict(m2)
        g = {a: min(d1.get(a, 0), d2.get(a, 0)) for a in set(d1) | set(d2)}
        rest = [tuple(sorted((a, d[a] - g[a] if a in d else -g[a]) for a in g if d.get(a, 0) != g[a])) for d in (d1, d2)]
        assert sorted(rest) == [k1, k2] and k1 < k2
        assert r == pytest.approx(c2 / c1 if rest[0] == k1 else c1 / c2, rel=1e-11)
