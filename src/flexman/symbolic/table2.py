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

Numbers are 004 Table 3 where it has them: rigid link 1 (3.7051 kg, 0.1 m column); flexible
links 0.331 kg/m, EI = 1165.4916 N m^2; first flexible link 1.0 m (Table 3's link 2); second
flexible link 1.3 m (Table 3's link 3: the total length of the prismatic boom; the revolute
elbow link of RR / RRR takes the same length); the prismatic boom is 0.3 m out at q = 0;
rotor inertias 0.352 kg m^2 (joint of the rigid column) and 3.2 kg m^2 (joint of the first
flexible link). Table 3 has no rotor for a revolute joint between two flexible links (the
RRP's third joint is prismatic); we give that elbow the smaller tabulated value, 0.352.
The rotors are massless hubs whose transverse moments are those of a thin disc (half the
axial moment), as in ``examples/data/theodore_rrp.yaml``.
"""
from __future__ import annotations

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


def _rotor(axial, offset):
    """Massless joint rotor (thin disc) about the frame's y axis or z axis, see callers."""
    return RigidBody(0.0, offset, np.diag(axial))


def _beam(length, discretization, directions):
    """Uniform Table 3 beam; ``directions`` among 'y', 'z' (DH-frame bending directions)."""
    modes = {"y": 0, "z": 0, "torsion": 0}
    for d in directions:
        modes[d] = 2 if discretization == "assumed_modes" else 1
    if discretization == "assumed_modes":
        return Beam(length, MU, (EI, EI), shapes="clamped_mass", modes=modes)
    return Beam(length, MU, (EI, EI), shapes="finite_elements", modes=modes, elements=2)


def _column():
    """Rigid link 1 of RRR / RRP: a 0.1 m vertical rod; joint 2 horizontal (alpha = 90 deg)."""
    m, l = M_COLUMN, L_COLUMN
    i_t = m * l * l / 12
    return Link(
        "revolute", a=0.0, alpha=np.pi / 2, d=l, name="column",
        body=RigidBody(m, [0.0, -l / 2, 0.0], np.diag([i_t, 0.0, i_t])),
        # frame 1's y axis is joint 1's axis; the rotor sits at the base
        hub=_rotor([I_COLUMN / 2, I_COLUMN, I_COLUMN / 2], [0.0, -l, 0.0]),
    )


def _revolute(length, discretization, directions, rotor, alpha=0.0, name=""):
    """Revolute flexible link of length a; its joint rotor at the beam's root (z axis = joint axis
    when alpha = 0; y axis when alpha = 90 deg)."""
    axial = [rotor / 2, rotor / 2, rotor] if alpha == 0.0 else [rotor / 2, rotor, rotor / 2]
    return Link(
        "revolute", a=length, alpha=alpha, name=name,
        hub=_rotor(axial, [-length, 0.0, 0.0]),
        beam=_beam(length, discretization, directions),
    )


def _boom(discretization, directions):
    """Prismatic flexible link: a 1.3 m beam sliding along its joint axis, 0.3 m out at q = 0."""
    return Link("prismatic", d=D_BOOM, limits=(0.0, L_SECOND - D_BOOM), name="boom",
                beam=_beam(L_SECOND, discretization, directions))


def arm(name: str, discretization: str = "assumed_modes") -> Robot:
    """One arm of 004 Table 2: 'RR', 'RRR', 'RP', 'RRP' or 'RR+payload'."""
    if discretization not in DISCRETIZATIONS:
        raise ValueError(f"discretization: use one of {', '.join(DISCRETIZATIONS)}")
    payload = None
    if name in ("RR", "RR+payload"):  # planar: joint axes along z, in-plane bending along y
        links = [_revolute(L_FIRST, discretization, "y", I_SHOULDER, name="link1"),
                 _revolute(L_SECOND, discretization, "y", I_ELBOW, name="link2")]
        if name == "RR+payload":
            payload = RigidBody(M_PAYLOAD)
    elif name == "RP":  # planar: alpha1 = 90 deg puts the boom axis z1 in the plane of motion
        links = [_revolute(L_FIRST, discretization, "z", I_SHOULDER, alpha=np.pi / 2, name="link1"),
                 _boom(discretization, "y")]  # the boom's first transverse axis (local x) is in-plane
    elif name == "RRR":  # spatial elbow arm
        links = [_column(),
                 _revolute(L_FIRST, discretization, "yz", I_SHOULDER, name="upper_arm"),
                 _revolute(L_SECOND, discretization, "yz", I_ELBOW, name="forearm")]
    elif name == "RRP":  # spatial Stanford-type arm (004 sec. 5, Fig. 3)
        links = [_column(),
                 _revolute(L_FIRST, discretization, "yz", I_SHOULDER, alpha=np.pi / 2, name="arm"),
                 _boom(discretization, "yz")]
    else:
        raise ValueError(f"arm: unknown {name!r}; use one of {', '.join(ARMS)}")
    tag = "am" if discretization == "assumed_modes" else "fem"
    return Robot(links, name=f"table2_{name.lower().replace('+', '_')}_{tag}",
                 gravity=np.zeros(3), payload=payload)


def formulations(robot) -> tuple:
    """Formulations that apply to the arm: Book's 4x4 recursion always; the energy-based
    Lagrangian (004's own method, Algorithm 1) where it can trace the arm (not yet through
    a sliding beam, whose energy uses run-time length-dependent shapes)."""
    sliding = any(lk.joint == "prismatic" and lk.is_flexible for lk in robot.links)
    return ("book",) if sliding else ("book", "lagrange")


def table2_rows(arms=ARMS, discretizations=DISCRETIZATIONS, formulation=None) -> list:
    """One dict per (arm, discretization, formulation): paper and our mass-matrix counts."""
    from . import derive

    rows = []
    for name in arms:
        for disc in discretizations:
            robot = arm(name, disc)
            forms = formulations(robot) if formulation is None else (formulation,)
            for form in forms:
                eom = derive(robot, formulation=form, parameters="numeric")
                ours = eom.op_count("mass_matrix")
                pm, pa = PAPER[name, disc]
                rows.append({
                    "arm": name, "discretization": disc, "formulation": form, "nq": robot.nq,
                    "paper_mul": pm, "paper_add": pa,
                    "ours_mul": ours["mul"], "ours_add": ours["add"],
                    "ours_div": ours["div"], "ours_fn": ours["fn"],
                    "at_or_below_paper": ours["mul"] <= pm and ours["add"] <= pa,
                })
    return rows
