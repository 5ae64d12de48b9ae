"""Symbolic EOM by tracing: traced == numeric for rigid and flexible arms, every formulation,
numeric and symbolic parameters; folding rules; op counts and passes; GIM structure; closed form."""
import numpy as np
import pytest
import sympy

import flexman as fm
from flexman import Beam, Link, RigidBody, Robot
from flexman.symbolic import Tape
from flexman.symbolic.tracer import Tracer


def rel(a, b):
    return np.abs(np.asarray(a) - b).max() / max(np.abs(b).max(), 1e-12)


def random_body(rng, scale=0.3):
    principal = np.sort(rng.uniform(0.2, 1.0, 3)) * 1e-2
    principal[2] = min(principal[2], 0.9 * (principal[0] + principal[1]))
    rot, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    return RigidBody(rng.uniform(0.1, 1.0), rng.uniform(-scale, scale, 3), rot @ np.diag(principal) @ rot.T)


def random_rigid(rng, n, dh="standard"):
    links = []
    for i in range(n):
        prismatic = i > 0 and rng.random() < 0.3
        links.append(Link(joint="prismatic" if prismatic else "revolute", a=rng.uniform(0, 0.5),
                          alpha=rng.choice([0.0, np.pi / 2, -np.pi / 2, rng.uniform(-1, 1)]), d=rng.uniform(0, 0.3),
                          theta=rng.uniform(-1, 1), body=random_body(rng), armature=rng.choice([0.0, 0.01]),
                          viscous=rng.choice([0.0, 0.1])))
    return Robot(links=links, dh=dh, payload=random_body(rng, 0.05) if rng.random() < 0.5 else None,
                 gravity=[0.0, -1.0, -9.81])


def flexible_arm(prismatic=False, shapes="clamped_free"):
    beam = Beam(length=0.8, mass_per_length=1.2, EI=[40.0, 60.0], shapes=shapes, damping=0.02,
                modes={"y": 1, "z": 1, "torsion": 0}, elements=2 if shapes == "finite_elements" else 0)
    links = [Link(a=0.0, alpha=np.pi / 2, d=0.2, body=RigidBody(0.5, [0, 0, 0], [0.01, 0.01, 0.01])),
             Link(a=0.8, body=RigidBody(0.3, [0.0, 0.0, 0.0], [1e-3, 1e-3, 1e-3]), beam=beam,
                  hub=RigidBody(0.2, [0, 0, 0], [1e-3, 1e-3, 1e-3]))]
    if prismatic:
        sb = Beam(length=1.2, mass_per_length=0.8, EI=[30.0, 30.0], modes={"y": 1, "z": 0, "torsion": 0})
        links.append(Link(joint="prismatic", d=0.6, body=RigidBody(0.2, [0, 0, 0.0], [1e-3, 1e-3, 1e-3]), beam=sb))
    return Robot(links=links, gravity=[0.0, 0.0, -9.81], payload=RigidBody(0.1, [0.05, 0, 0], [1e-4, 1e-4, 1e-4]))


def state(rng, robot, batch=(4,)):
    q = rng.normal(size=batch + (robot.nq,))
    q[..., robot.flex_index] *= 0.05
    for i, lk in enumerate(robot.links):
        if lk.joint == "prismatic":
            q[..., i] = rng.uniform(-0.2, 0.2, batch)
    return q, rng.normal(size=batch + (robot.nq,)), rng.normal(size=batch + (robot.nq,)), rng.normal(size=batch + (robot.n_joints,))


def check_against_numeric(robot, eom, rng, tol=1e-10):
    fast = eom.compile("numpy")
    q, qd, qdd, tau = state(rng, robot)
    assert rel(fast.mass_matrix(q), robot.mass_matrix(q)) < tol
    assert rel(fast.bias_forces(q, qd), robot.bias_forces(q, qd)) < tol
    assert rel(fast.inverse_dynamics(q, qd, qdd), robot.inverse_dynamics(q, qd, qdd)) < tol
    assert rel(fast.forward_dynamics(q, qd, tau), robot.forward_dynamics(q, qd, tau)) < tol


# ----- the tracer ------------------------------------------------------------------------
def test_folding_at_creation():
    tape = Tape()
    x, y = tape.inputs(["x", "y"])
    n0 = len(tape)
    assert x * 0 == 0.0 and (x * 1) is x and (x + 0.0) is x and x - x == 0.0
    assert (-x * -1.0).idx == x.idx and not (-x * -1.0).neg
    assert len(tape) == n0  # nothing recorded
    s1, s2 = np.sin(np.array([x], dtype=object))[0], x.sin()
    assert s1.idx == s2.idx  # sin of one argument once
    assert (x * y).idx == (y * x).idx  # hash-consing, commutative
    d = x - y
    e = y - x
    assert d.idx == e.idx and d.neg != e.neg  # y - x = -(x - y)
    z = (x * 2.0) * 3.0
    assert tape.ops[z.idx] == ("mul", (6.0, x.idx))  # constants merged
    assert (2.0 * 3.0 + x * 0.0) == 6.0
    assert isinstance(x ** 3, Tracer) and x ** 0 == 1.0
    with pytest.raises(TypeError):
        bool(x)


def test_tracer_evaluates_like_floats():
    from flexman.symbolic.program import Program

    tape = Tape()
    x, y = tape.inputs(["x", "y"])
    f = lambda a, b: (a * b - 3.0 / (a + 2.0)) ** 2 + np.sin(a) * np.cos(-b) - (a - b) / b
    prog = Program.from_tape("f", tape, {"X": ["x"], "Y": ["y"]}, {"f": np.array(f(x, y), dtype=object)})
    from flexman.symbolic.emit import function_source

    env = {"np": np}
    exec(function_source("numpy", prog, "g"), env)
    xs, ys = np.array([[0.3], [1.1]]), np.array([[-0.7], [2.0]])
    got = env["g"](xs, ys)[0]
    assert np.allclose(got, f(xs[:, 0], ys[:, 0]), rtol=1e-14)


# ----- traced == numeric ---------------------------------------------------------------------
@pytest.mark.parametrize("formulation", ["book", "newton_euler", "denoc", "lagrange"])
@pytest.mark.parametrize("parameters", ["numeric", "symbolic"])
@pytest.mark.parametrize("seed", [0, 1])
def test_rigid_traced_equals_numeric(formulation, parameters, seed):
    rng = np.random.default_rng(seed)
    robot = random_rigid(rng, 3 if formulation == "lagrange" else 4, dh=["standard", "modified"][seed])
    eom = fm.derive(robot, formulation=formulation, parameters=parameters)
    check_against_numeric(robot, eom, rng)
    if parameters == "symbolic":
        assert "m1" in eom.param_values and eom.param_values["m1"] == robot.links[0].body.mass


@pytest.mark.parametrize("prismatic,shapes", [(False, "clamped_free"), (False, "finite_elements"), (True, "clamped_free")])
@pytest.mark.parametrize("parameters", ["numeric", "symbolic"])
def test_flexible_traced_equals_numeric(prismatic, shapes, parameters):
    robot = flexible_arm(prismatic, shapes)
    eom = fm.derive(robot, formulation="newton_euler", parameters=parameters)
    assert any("flexible" in n for n in eom.notes)  # newton_euler falls back to book, says so
    check_against_numeric(robot, eom, np.random.default_rng(3))


def test_flexible_lagrange_small():
    beam = Beam(length=0.7, mass_per_length=1.0, EI=[30.0, 30.0], modes={"y": 1, "z": 0, "torsion": 0})
    robot = Robot(links=[Link(a=0.7, beam=beam, body=RigidBody(0.2, [0, 0, 0], [1e-3] * 3))], gravity=[0, -9.81, 0])
    eom = fm.derive(robot, formulation="lagrange")
    check_against_numeric(robot, eom, np.random.default_rng(4))


def test_symengine_values_equal_numeric():
    """M and b as SymPy matrices, numbers substituted, equal the numeric API."""
    rng = np.random.default_rng(5)
    robot = random_rigid(rng, 2)
    eom = fm.derive(robot, formulation="book")
    q, qd, _, _ = state(rng, robot, batch=())
    subs = {sympy.Symbol(f"q{k + 1}"): q[k] for k in range(2)} | {sympy.Symbol(f"qd{k + 1}"): qd[k] for k in range(2)}
    M = np.array(eom.M.subs(subs).evalf(), dtype=float)
    b = np.array(eom.b.subs(subs).evalf(), dtype=float)[:, 0]
    assert rel(M, robot.mass_matrix(q)) < 1e-10
    assert rel(b, robot.bias_forces(q, qd)) < 1e-10


def test_jacobian_matches_numeric():
    rng = np.random.default_rng(6)
    robot = random_rigid(rng, 3)
    J = fm.derive(robot, formulation="book").jacobian()
    q = rng.normal(size=3)
    Jn = np.array(J.subs({sympy.Symbol(f"q{k + 1}"): q[k] for k in range(3)}).evalf(), dtype=float)
    assert rel(Jn, robot.jacobian(q)) < 1e-10


# ----- op counts and passes --------------------------------------------------------------------
def test_op_counts_and_passes():
    robot = random_rigid(np.random.default_rng(7), 3)
    eom = fm.derive(robot, formulation="book")
    for what in ("inverse_dynamics", "mass_matrix", "bias_forces", "forward_dynamics"):
        c = eom.op_count(what)
        assert set(c) == {"mul", "add", "div", "fn"} and all(0 <= v < 10**6 for v in c.values())
        steps = eom.passes(what)
        totals = [sum(v for k, v in counts.items() if k != "fn") for _, counts in steps]
        assert all(a >= b for a, b in zip(totals, totals[1:])) and totals[0] > 2 * totals[-1]
        assert steps[-1][1] == c
    assert eom.op_count("forward_dynamics")["div"] == robot.nq  # one reciprocal per pivot


# ----- GIM structure and closed form (planar 2R) -----------------------------------------------
def planar_2r(m1=1.3, m2=0.8, l1=0.9, l2=0.7, lc1=0.45, lc2=0.3, I1=0.09, I2=0.04):
    return Robot(links=[Link(a=l1, body=RigidBody(m1, [lc1 - l1, 0, 0], [0.001, I1, I1])),
                        Link(a=l2, body=RigidBody(m2, [lc2 - l2, 0, 0], [0.001, I2, I2]))],
                 gravity=[0, -9.81, 0]), (m1, m2, l1, l2, lc1, lc2, I1, I2)


@pytest.mark.parametrize("formulation", ["book", "newton_euler", "denoc", "lagrange"])
def test_gim_structure_planar_2r(formulation):
    robot, _ = planar_2r()
    g = fm.derive(robot, formulation=formulation).gim_structure()
    assert g.entries[1][1] == "constant"
    assert g.depends_on(0, 0) == {"q2"} and g.depends_on(0, 1) == {"q2"}
    assert not g.is_constant and not g.is_diagonal
    assert "f(q2)" in str(g)


def test_planar_2r_closed_form():
    robot, (m1, m2, l1, l2, lc1, lc2, I1, I2) = planar_2r()
    M = fm.derive(robot, formulation="newton_euler").M
    q2 = sympy.Symbol("q2")
    h = m2 * l1 * lc2
    closed = sympy.Matrix([[I1 + I2 + m1 * lc1**2 + m2 * (l1**2 + lc2**2) + 2 * h * sympy.cos(q2), I2 + m2 * lc2**2 + h * sympy.cos(q2)],
                           [I2 + m2 * lc2**2 + h * sympy.cos(q2), I2 + m2 * lc2**2]])
    for val in (0.0, 0.7, -2.1):
        sub = {q2: val, sympy.Symbol("q1"): 0.3}
        assert np.allclose(np.array(M.subs(sub).evalf(), float), np.array(closed.subs(sub).evalf(), float), rtol=1e-12)


def test_symbolic_parameters_in_equations():
    robot, _ = planar_2r()
    eom = fm.derive(robot, formulation="book", parameters="symbolic")
    free = {str(s) for s in eom.M.free_symbols}
    assert {"q2", "m2", "a1"} <= free and "q1" not in {str(s) for s in sympy.simplify(eom.M[1, 1]).free_symbols}


def test_text_and_latex():
    robot, _ = planar_2r()
    eom = fm.derive(robot, formulation="newton_euler")
    text = eom.text()
    assert "Z1 = " in text and "M[1,1] = " in text and "b[2] = " in text
    tex = eom.latex()
    assert tex.startswith("\\begin{align*}") and "M_{1,1}" in tex
    assert "inverse dynamics" in repr(eom)


def test_bad_arguments():
    robot, _ = planar_2r()
    with pytest.raises(ValueError):
        fm.derive(robot, formulation="kane")
    with pytest.raises(ValueError):
        fm.derive(robot, parameters="half")
    with pytest.raises(ValueError):
        fm.derive(robot).op_count("everything")


def test_constants_never_alias_intermediates_in_the_memo():
    """Regression: a constant 4.0 must not be taken for node 4 (qd2) when sharing nodes."""
    import flexman as fm

    robot = fm.examples.load("saha_3link")
    eom = fm.derive(robot, formulation="book")
    prog = eom.program("mass_matrix")
    used = {a for _, _, args in prog.body for a in args if isinstance(a, str)}
    assert not any(name.startswith("qd") for name in used)
