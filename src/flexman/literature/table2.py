"""The four flexible arms of 004 Table 2 (Theodore & Ghosal 1995) and their inertia-matrix
operation counts beside the paper's.

004 Table 2 lists the multiplications and additions needed to evaluate the inertia matrix
(mass matrix) of flexible RR, RRR, RP and RRP arms, discretized by assumed modes (AM) and by
finite elements (FEM). The model choices behind those counts, as we read 004 (sec. 2, 4.4, 5):

* RR and RP: both links flexible; RRR and RRP: link 1 rigid, links 2 and 3 flexible (sec. 4.4).
* Two assumed modes, or two elements, per flexible link and bending direction (sec. 4.4).
  AM: clamped-mass eigenfunctions (sec. 2.1.1); FEM: Hermite cubic elements (eq. 14).
* Bending only, no torsion (sec. 2). Every time-independent quantity (geometry, inertia,
  mode shapes) is numeric before the symbolic derivation (sec. 4.4, Algorithm 1).
* No payload: sec. 4.4 quotes the payload case separately (RR with a payload: 909 / 366
  AM, 178 / 98 FEM), so the Table 2 rows are without it. Those two extra counts are
  reported as the rows ``RR+payload``.
* Joint (rotor) inertias are in: Algorithm 2 adds M^joint (eq. 18) to M^link.
* Planar or spatial: RRP is spatial (sec. 5, Fig. 3: the Stanford-type arm, links 2 and 3
  bending in two directions). RRR, with the same rigid first link, is read as its spatial
  revolute analogue (rigid vertical column, then shoulder and elbow with parallel axes, each
  link bending in both directions). RR and RP, whose first link is flexible, are read as
  planar arms (in-plane bending only): their counts (405 / 103 multiplications) are about a
  half and a seventh of their spatial three-joint counterparts, and a spatial RP (10
  coordinates, 55 mass-matrix entries) could not be evaluated with 103 multiplications.
* Kinematics as in 004 eqs. (1)-(4): a revolute flexible link has its length along its DH
  x axis (l = a); a prismatic link has a = 0 and slides along its joint axis, so it is
  perpendicular to the revolute beam carrying it. The prismatic beam is a translating beam
  of total length l0 whose outside part (the joint variable) deflects (eq. 19).
* Where the RP / RRP rows cannot be the same model: 004 prints the sliding beam in a spatial
  description. Its points sit at fixed distances x from the hub (eq. 5: r = p_(j-1) +
  R_j (u, v, x); eq. 19: the inside part at fixed x), the mass matrix is built from partials at
  fixed x (Algorithm 1) and the mode shapes stretch with l = d (eq. 7). Neither p_(j-1) nor R_j
  depends on d, so the only d-velocity left is the stretching of the shapes: the beam's axial
  motion (the material moving out at d') and the convected slope (d' du/dx) are not in it, and
  at zero deflection the d row of M is zero (M singular without a payload, against 004's own
  Appendix). That model is not physical and is not what 004 simulated, and the one they counted
  is not described. flexman's sliding beam is the material one (``beams.SlidingBeam``: axial
  transport and stretched shapes), with more terms in M, so the RP / RRP counts compare
  different models. The revolute rows (RR, RRR) have no such gap.

Numbers are 004 Table 3 where it has them: rigid link 1 (3.7051 kg, 0.1 m column); flexible
links 0.331 kg/m, EI = 1165.4916 N m^2; first flexible link 1.0 m (Table 3's link 2); second
flexible link 1.3 m (Table 3's link 3: the total length of the prismatic boom; the revolute
elbow link of RR / RRR takes the same length); the prismatic boom is 0.3 m out at q = 0;
rotor inertias 0.352 kg m^2 (joint of the rigid column) and 3.2 kg m^2 (joint of the first
flexible link). Table 3 has no rotor for a revolute joint between two flexible links (the
RRP's third joint is prismatic); we give that elbow the smaller tabulated value, 0.352.
The rotors are massless hubs whose transverse moments are those of a thin disc (half the
axial moment), as in ``examples/data/theodore_rrp.yaml``.

``arm(..., dh="modified")`` places the same arm in modified DH (frames at the joints); it is
used only to look for a cheaper equivalent placement. Caveat: clamped-mass tip loads are
computed as if link frames were distal, so its assumed-mode shapes (not its structure or
counts) differ from the standard-DH arm's; its finite-element arm is the same arm.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..model import Beam, Link, RigidBody, Robot

# 004 Table 2, "present study", inertia matrix: (mul, add); RR+payload: 004 sec. 4.4 text
PAPER = {
    ("RR", "assumed_modes"): (405, 168),
    ("RRR", "assumed_modes"): (878, 376),
    ("RP", "assumed_modes"): (103, 42),
    ("RRP", "assumed_modes"): (743, 284),
    ("RR", "finite_elements"): (156, 80),
    ("RRR", "finite_elements"): (592, 237),
    ("RP", "finite_elements"): (88, 33),
    ("RRP", "finite_elements"): (376, 128),
    ("RR+payload", "assumed_modes"): (909, 366),
    ("RR+payload", "finite_elements"): (178, 98),
}
ARMS = ("RR", "RRR", "RP", "RRP", "RR+payload")
DISCRETIZATIONS = ("assumed_modes", "finite_elements")
SOURCE = "004 Table 2 (present study, inertia matrix); RR+payload: 004 sec. 4.4"

# 004 Table 3
MU = 0.331  # kg/m (m2 / l2 = 0.3310 / 1.0; m3 / l3^0 = 0.4303 / 1.3)
EI = 1165.4916  # N m^2
L_FIRST, L_SECOND = 1.0, 1.3  # m
M_COLUMN, L_COLUMN = 3.7051, 0.1
I_COLUMN, I_SHOULDER = 0.352, 3.2  # kg m^2, joints 1 and 2 of the RRP
I_ELBOW = 0.352  # not in Table 3 (see the module docstring)
D_BOOM = 0.3  # m of the boom outside its hub at q = 0 (004 sec. 5 move starts at 0.3 m)
M_PAYLOAD = 0.0828


def _rotor(axis, inertia, offset=(0.0, 0.0, 0.0)):
    """Massless joint rotor (a thin disc: transverse moments half the axial one) about the
    frame axis ``axis`` (1: y, 2: z), centred at ``offset``."""
    moments = [inertia / 2] * 3
    moments[axis] = inertia
    return RigidBody(0.0, offset, np.diag(moments))


def _beam(length, discretization, directions):
    """Uniform Table 3 beam; ``directions`` among 'y', 'z' (DH-frame bending directions)."""
    modes = {"y": 0, "z": 0, "torsion": 0}
    for d in directions:
        modes[d] = 2 if discretization == "assumed_modes" else 1
    if discretization == "assumed_modes":
        return Beam(length, MU, (EI, EI), shapes="clamped_mass", modes=modes, stiffening=False)
    # 004's first-order model (its Table 2 counts): no geometric stiffening
    return Beam(length, MU, (EI, EI), shapes="finite_elements", modes=modes, elements=2, stiffening=False)


def _links(name, disc, std):
    """Link list of one arm. Standard DH (004 eq. 1): a link's frame is at its distal end, so a
    revolute beam spans x in [-a, 0] and its rotor sits at x = -a. Modified DH (Craig): the
    frame is at the joint, the beam spans x in [0, a] and a, alpha move to the next row."""
    L1, L2, half = L_FIRST, L_SECOND, np.pi / 2
    m, lc = M_COLUMN, L_COLUMN
    i_t = m * lc * lc / 12

    def rev(length, directions, rotor, alpha, a_prev, alpha_prev, nm):
        if std:  # joint axis = frame z if alpha = 0, frame y if alpha = 90 deg
            return Link("revolute", a=length, alpha=alpha, name=nm, hub=_rotor(1 if alpha else 2, rotor, [-length, 0, 0]),
                        beam=_beam(length, disc, directions))
        return Link("revolute", a=a_prev, alpha=alpha_prev, name=nm, hub=_rotor(2, rotor),
                    beam=_beam(length, disc, directions))

    def boom(directions, a_prev, alpha_prev):  # slides along its frame's z axis, tip at the origin
        return Link("prismatic", a=0.0 if std else a_prev, alpha=0.0 if std else alpha_prev, d=D_BOOM,
                    limits=(0.0, L2 - D_BOOM), name="boom", beam=_beam(L2, disc, directions))

    if std:  # rigid 0.1 m column, joint 2 horizontal
        column = Link("revolute", alpha=half, d=lc, name="column", hub=_rotor(1, I_COLUMN, [0, -lc, 0]),
                      body=RigidBody(m, [0.0, -lc / 2, 0.0], np.diag([i_t, 0.0, i_t])))
    else:
        column = Link("revolute", d=lc, name="column", hub=_rotor(2, I_COLUMN, [0, 0, -lc]),
                      body=RigidBody(m, [0.0, 0.0, -lc / 2], np.diag([i_t, i_t, 0.0])))
    if name in ("RR", "RR+payload"):  # planar: joint axes along z, in-plane bending along y
        return [rev(L1, "y", I_SHOULDER, 0.0, 0.0, 0.0, "link1"), rev(L2, "y", I_ELBOW, 0.0, L1, 0.0, "link2")]
    if name == "RP":  # planar: the boom axis lies in the plane of motion
        if std:  # alpha1 = 90 deg: frame 1's z axis (the boom axis) is in-plane, so is the bending
            first = rev(L1, "z", I_SHOULDER, half, 0.0, 0.0, "link1")
        else:
            first = rev(L1, "y", I_SHOULDER, 0.0, 0.0, 0.0, "link1")
        return [first, boom("y", L1, half)]  # the boom's first transverse axis (local x) is in-plane
    if name == "RRR":  # spatial elbow arm: column, then shoulder and elbow with parallel axes
        return [column, rev(L1, "yz", I_SHOULDER, 0.0, 0.0, half, "upper_arm"),
                rev(L2, "yz", I_ELBOW, 0.0, L1, 0.0, "forearm")]
    if name == "RRP":  # spatial Stanford-type arm (004 sec. 5, Fig. 3)
        return [column, rev(L1, "yz", I_SHOULDER, half, 0.0, half, "arm"), boom("yz", L1, half)]
    raise ValueError(f"arm: unknown {name!r}; use one of {', '.join(ARMS)}")


def arm(name: str, discretization: str = "assumed_modes", dh: str = "standard") -> Robot:
    """One arm of 004 Table 2: 'RR', 'RRR', 'RP', 'RRP' or 'RR+payload' (standard DH as in 004
    eq. 1, or the equivalent modified-DH placement)."""
    if discretization not in DISCRETIZATIONS:
        raise ValueError(f"discretization: use one of {', '.join(DISCRETIZATIONS)}")
    links = _links(name, discretization, dh == "standard")
    payload = None
    if name == "RR+payload":  # a point mass at the tip of link 2
        payload = RigidBody(M_PAYLOAD, [0.0, 0.0, 0.0] if dh == "standard" else [L_SECOND, 0.0, 0.0])
    tag = "am" if discretization == "assumed_modes" else "fem"
    return Robot(links, name=f"table2_{name.lower().replace('+', '_')}_{tag}" + ("" if dh == "standard" else "_mdh"),
                 gravity=np.zeros(3), dh=dh, payload=payload)


def formulations(robot) -> tuple:
    """Formulations that apply: Book's 4x4 recursion (the library's flexible-arm method) and
    the energy-based Lagrangian (004's own Algorithm 1) where it can trace the arm; it cannot
    yet go through a sliding beam. (Newton-Euler and DeNOC are rigid-arm recursions: on a
    flexible arm ``derive`` traces Book's recursion for them, so they would repeat its row.)"""
    sliding = any(lk.joint == "prismatic" and lk.is_flexible for lk in robot.links)
    return ("book",) if sliding else ("book", "lagrange")


TRUNCATE = (1, 0)  # orders of the truncated mass matrices in table2_rows


@lru_cache(maxsize=None)
def derived(name: str, discretization: str = "assumed_modes", dh: str = "standard", formulation: str = "book",
            truncate=None):
    """``derive(arm(name, discretization, dh), formulation, parameters="numeric", truncate=...)``,
    derived once per process: the table's rows, :func:`comparison` and :func:`cheapest_mass_matrix`
    use the same arms, and the polynomial normal form of one mass matrix costs seconds (every
    quantity they read is a pure function of these arguments). Shared: do not modify the result."""
    from ..symbolic import derive

    return derive(arm(name, discretization, dh), formulation=formulation, parameters="numeric", truncate=truncate)


def _count(name, discretization, dh, formulation, truncate=None, traced=False):
    """derive(...).op_count("mass_matrix") of one arm (:func:`derived`), or None where the
    formulation fell back to Book's recursion (its row would repeat Book's). ``traced``: the
    formulation's traced program as it is, i.e. ``derive(..., reduce_mass_matrix=False)``'s count,
    read from the same trace (the options that shape the trace are the same)."""
    eom = derived(name, discretization, dh, formulation, truncate)
    if eom.fell_back:
        return None
    if traced:
        return eom.traced_program("mass_matrix").op_count()
    return eom.op_count("mass_matrix")


def table2_rows(arms=ARMS, discretizations=DISCRETIZATIONS) -> list:
    """One dict per (arm, discretization, formulation): 004's inertia-matrix counts and ours.

    ``traced_*``: the formulation's traced program as it is (``reduce_mass_matrix=False``),
    standard DH. ``ours_*``: ``derive(arm, formulation).op_count("mass_matrix")`` (M also traced
    in link 1's frame and put in polynomial normal form, the cheapest kept), the fewer over the
    two equivalent placements, standard and modified DH (``ours_dh`` says which).
    ``trunc<k>_*`` (k = 1, 0): ``derive(arm, "book", truncate=k)``, M kept to degree k in the
    flexible coordinates (small deflections; k = 0 is M at q_f = 0), standard DH, one per arm."""
    rows = []
    for name in arms:
        for disc in discretizations:
            robot = arm(name, disc)
            pm, pa = PAPER[name, disc]
            trunc = {k: _count(name, disc, "standard", "book", truncate=k) for k in TRUNCATE}
            for form in formulations(robot):
                traced = _count(name, disc, "standard", form, traced=True)
                if traced is None:
                    continue
                dh, _, counts = cheapest_mass_matrix(name, disc, (form,))
                rows.append({
                    "arm": name, "discretization": disc, "formulation": form, "nq": robot.nq,
                    "paper_mul": pm, "paper_add": pa,
                    "traced_mul": traced["mul"], "traced_add": traced["add"],
                    "ours_mul": counts["mul"], "ours_add": counts["add"], "ours_div": counts["div"],
                    "ours_fn": counts["fn"], "ours_dh": dh,
                    **{f"trunc{k}_{x}": trunc[k][x] for k in TRUNCATE for x in ("mul", "add")},
                    "source": SOURCE if name != "RR+payload" else "004 sec. 4.4 (RR with a payload)",
                })
    return rows


def total_operations(counts: dict) -> int:
    """Multiplications plus additions: the measure by which the cheapest variant is kept."""
    return counts["mul"] + counts["add"]


def versus_paper(paper: tuple, counts: dict) -> dict:
    """A paper's (mul, add) beside our counts, and whether ours is at or below each."""
    paper_mul, paper_add = paper
    return {"paper_mul": paper_mul, "paper_add": paper_add, "ours_mul": counts["mul"], "ours_add": counts["add"],
            "met_mul": counts["mul"] <= paper_mul, "met_add": counts["add"] <= paper_add}


def cheapest_mass_matrix(name: str, discretization: str, forms=None) -> tuple:
    """(dh, formulation, counts) of the fewest-operations inertia matrix of one arm, over both
    DH placements and the given formulations (default: those that apply; fallbacks to Book's
    recursion skipped)."""
    found = []
    for dh in ("standard", "modified"):
        robot = arm(name, discretization, dh)
        found += [(dh, form, _count(name, discretization, dh, form)) for form in (forms or formulations(robot))]
    return min((f for f in found if f[2] is not None), key=lambda f: total_operations(f[2]))


def comparison(arms=ARMS, discretizations=DISCRETIZATIONS) -> list:
    """One dict per (arm, discretization): 004's inertia-matrix counts beside our cheapest
    (``cheapest_mass_matrix``). Unlike ``table2_rows`` it derives neither the traced-only nor
    the truncated variants, so the whole table takes seconds, not minutes."""
    rows = []
    for name in arms:
        for disc in discretizations:
            dh, form, counts = cheapest_mass_matrix(name, disc)
            rows.append({"arm": name, "discretization": disc, "nq": arm(name, disc).nq,
                         **versus_paper(PAPER[name, disc], counts), "ours_dh": dh, "ours_formulation": form})
    return rows
