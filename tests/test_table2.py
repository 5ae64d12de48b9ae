"""004 Table 2 (Theodore & Ghosal 1995): the four flexible arms build, derive, their generated
mass matrix equals the numeric one, and the inertia-matrix operation counts that are at or
below the paper's are asserted. Counts above the paper's are only printed (run with -s):
see flexman.symbolic.table2 and bench/table2.py for the comparison and the reasons."""
import numpy as np
import pytest

import flexman as fm
from flexman.symbolic import table2 as t2

# (arm, discretization, formulation, which count, quantity) at or below 004's when written.
# "ours": derive(...).op_count("mass_matrix"); "frame1": Book recursion traced in link 1's frame.
ACHIEVED = {
    ("RR", "assumed_modes", "book", "ours", "mul"),
    ("RR", "assumed_modes", "book", "frame1", "mul"), ("RR", "assumed_modes", "book", "frame1", "add"),
    ("RRR", "assumed_modes", "book", "frame1", "mul"),
    ("RR+payload", "assumed_modes", "book", "ours", "mul"), ("RR+payload", "assumed_modes", "book", "ours", "add"),
    ("RR+payload", "assumed_modes", "lagrange", "ours", "mul"),
    ("RR+payload", "assumed_modes", "book", "frame1", "mul"), ("RR+payload", "assumed_modes", "book", "frame1", "add"),
}
# derive(..., "book", truncate=k): M to degree k in q_f ("trunc1", "trunc0"), one count per arm,
# repeated on each formulation's row. Truncated to first order, the mul counts are at or below
# 004's for every assumed-modes row and RP FEM; the adds, and the mul of RR/RRR/RRP FEM, are not.
# Truncated to order 0 (M at zero deflection), every count is at or below 004's.
FORMS = {"RR": ("book", "lagrange"), "RR+payload": ("book", "lagrange"), "RRR": ("book",), "RP": ("book",),
         "RRP": ("book",)}
ACHIEVED |= {(a, "assumed_modes", f, "trunc1", "mul") for a in t2.ARMS for f in FORMS[a]}
ACHIEVED |= {("RP", "finite_elements", "book", "trunc1", "mul")}
ACHIEVED |= {(a, "assumed_modes", f, "trunc1", "add") for a in ("RR+payload",) for f in FORMS[a]}
ACHIEVED |= {(a, d, f, "trunc0", x) for a in t2.ARMS for d in t2.DISCRETIZATIONS for f in FORMS[a] for x in ("mul", "add")}


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
        fast = fm.derive(robot, formulation=form).compile("numpy")
        for _ in range(3):
            q = random_q(rng, robot)
            assert np.abs(fast.mass_matrix(q) - robot.mass_matrix(q)).max() < 1e-10


@pytest.mark.parametrize("name,disc", CASES)
@pytest.mark.parametrize("dh", ["standard", "modified"])
def test_frame1_program_equals_numeric(name, disc, dh):
    robot = t2.arm(name, disc, dh)
    prog = t2.frame1_program(robot)
    rng = np.random.default_rng(5)
    for _ in range(3):
        q = random_q(rng, robot)
        assert np.abs(t2.run_program(prog, q)["M"] - robot.mass_matrix(q)).max() < 1e-10


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
        for which in ("ours", "frame1", "trunc1", "trunc0"):
            for qty in ("mul", "add"):
                ours, paper = r[f"{which}_{qty}"], r[f"paper_{qty}"]
                key = (r["arm"], r["discretization"], r["formulation"], which, qty)
                if key in ACHIEVED:
                    seen.add(key)
                    assert ours <= paper, key
                else:  # recorded, not asserted: above the paper
                    print(f"above 004: {key}: {ours} > {paper}" if ours > paper else f"also at/below 004: {key}: {ours}")
    assert seen == ACHIEVED
