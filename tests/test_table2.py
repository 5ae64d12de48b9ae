"""004 Table 2 (Theodore & Ghosal 1995): the four flexible arms build, derive, their generated
mass matrix equals the numeric one, and the inertia-matrix operation counts that are at or
below the paper's are asserted. Counts above the paper's are only printed (run with -s):
see flexman.literature.table2 and bench/table2.py for the comparison and the reasons."""
import numpy as np
import pytest

from flexman.literature import table2 as t2
from flexman.symbolic.program import run_program

# (arm, discretization, formulation, which count, quantity) at or below 004's when written.
# "ours": derive(...).op_count("mass_matrix") (M traced in link 1's frame and through the
# polynomial normal form with shared sums and products, the cheapest kept; best of the standard /
# modified DH placement).
FORMS = {"RR": ("book", "lagrange"), "RR+payload": ("book", "lagrange"), "RRR": ("book",), "RP": ("book",),
         "RRP": ("book",)}
BOTH = ("mul", "add")
ACHIEVED = {(a, d, f, "ours", x) for a in ("RR", "RR+payload") for d in t2.DISCRETIZATIONS for f in FORMS[a]
            for x in BOTH}
ACHIEVED |= {(a, "assumed_modes", "book", "ours", x) for a in ("RRR", "RRP") for x in BOTH}
ACHIEVED |= {("RRR", "finite_elements", "book", "ours", "mul")}
# derive(..., "book", truncate=k): M to degree k in q_f ("trunc1", "trunc0"), one count per arm,
# repeated on each formulation's row. To first order: every count except the additions of RRP
# FEM; to order 0 (M at zero deflection): every count.
ACHIEVED |= {(a, d, f, "trunc1", x) for a in t2.ARMS for d in t2.DISCRETIZATIONS for f in FORMS[a] for x in BOTH}
ACHIEVED -= {("RRP", "finite_elements", "book", "trunc1", "add")}
ACHIEVED |= {(a, d, f, "trunc0", x) for a in t2.ARMS for d in t2.DISCRETIZATIONS for f in FORMS[a] for x in BOTH}

# One xdist worker (make test: --dist loadgroup) runs these and test_cli's document-table test, so
# the derivations table2.derived caches are made once for both.
pytestmark = pytest.mark.xdist_group("table2")


def random_q(rng, robot):
    q = rng.normal(size=robot.nq) * 0.05
    for i, lk in enumerate(robot.links):
        q[i] = rng.uniform(0.0, 0.7) if lk.joint == "prismatic" else rng.uniform(-np.pi, np.pi)
    return q


@pytest.fixture(scope="module")
def rows():
    return t2.table2_rows()


CASES = [(a, d) for a in t2.ARMS for d in t2.DISCRETIZATIONS]


@pytest.mark.parametrize("name,disc", CASES)
def test_arm_builds_with_the_paper_coordinates(name, disc):
    robot = t2.arm(name, disc)
    per_link = 2 if disc == "assumed_modes" else 4  # two modes, or two elements x (deflection, slope)
    directions = 1 if name in ("RR", "RP", "RR+payload") else 2  # planar / spatial
    n_flex_links = 2
    assert robot.nq == robot.n_joints + n_flex_links * directions * per_link
    assert [lk.is_flexible for lk in robot.links] == ([True, True] if robot.n_joints == 2 else [False, True, True])
    assert not np.any(robot.gravity)


@pytest.mark.parametrize("name,disc", CASES)
def test_generated_mass_matrix_equals_numeric(name, disc):
    robot = t2.arm(name, disc)
    rng = np.random.default_rng(4)
    for form in t2.formulations(robot):
        # the derivation the table counts (t2.derived: derived once, shared with the rows)
        fast = t2.derived(name, disc, "standard", form).compile("numpy")
        for _ in range(3):
            q = random_q(rng, robot)
            assert np.abs(fast.mass_matrix(q) - robot.mass_matrix(q)).max() < 1e-10


@pytest.mark.parametrize("name,disc", CASES)
@pytest.mark.parametrize("dh", ["standard", "modified"])
def test_reduced_mass_matrix_equals_numeric_and_ignores_q1(name, disc, dh):
    robot = t2.arm(name, disc, dh)  # a fresh arm: the reference M below is its numeric model's
    prog = t2.derived(name, disc, dh, "book").program("mass_matrix")  # = fm.derive(arm, "book"), shared with the rows
    deps = prog.dependencies()
    assert not any("q1" in deps[label] for label, _, _ in prog.outputs["M"][1])  # M never depends on q1
    rng = np.random.default_rng(5)
    for _ in range(3):
        q = random_q(rng, robot)
        assert np.abs(run_program(prog, q)["M"] - robot.mass_matrix(q)).max() < 1e-10


def test_modified_dh_placement_is_equivalent_for_finite_elements():
    # The two placements may name a bending direction differently (y <-> z, sign), so M agrees
    # up to a signed permutation of the flexible coordinates: compare its eigenvalues, in the
    # undeflected configurations (where a flipped coordinate sign does not move the state).
    # (Assumed modes are not compared: the clamped-mass tip loads, hence the mode shapes,
    # are computed as if link frames were distal, which holds for standard DH only.)
    rng = np.random.default_rng(6)
    for name in t2.ARMS:
        a, b = t2.arm(name, "finite_elements"), t2.arm(name, "finite_elements", "modified")
        q = random_q(rng, a)
        q[a.flex_index] = 0.0
        assert np.abs(np.linalg.eigvalsh(a.mass_matrix(q)) - np.linalg.eigvalsh(b.mass_matrix(q))).max() < 1e-10


def test_counts_against_the_paper(rows):
    seen = set()
    for r in rows:
        assert r["ours_mul"] + r["ours_add"] <= r["traced_mul"] + r["traced_add"]  # the passes never add work
        for which in ("ours", "trunc1", "trunc0"):
            for qty in ("mul", "add"):
                ours, paper = r[f"{which}_{qty}"], r[f"paper_{qty}"]
                key = (r["arm"], r["discretization"], r["formulation"], which, qty)
                if key in ACHIEVED:
                    seen.add(key)
                    assert ours <= paper, key
                else:  # recorded, not asserted: above the paper
                    print(f"above 004: {key}: {ours} > {paper}" if ours > paper else f"also at/below 004: {key}: {ours}")
    assert seen == ACHIEVED
