"""The key to the documents flexman cites.

The code, the tests and the docs cite the five source documents by a three-digit key (``000``
... ``004``) followed by a section, table, figure, equation or page, e.g. "000 sec. 3.3.1" or
"004 Table 2". :data:`DOCUMENTS` says which document each key is and what flexman takes from it
(``docs/references.md`` is the same key for readers). :data:`OTHER_WORKS` lists the further
published results that tests, examples and validation cases compare against.

:func:`cite` gives the short label the validation cases print, e.g. ``cite("000")`` is
"000 (Mackay 1988)".
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Document:
    """One cited work: ``short`` is the author part of a short citation ("Mackay", "Theodore &
    Ghosal", "Saha et al."), ``year`` None where the document does not carry one."""

    key: str
    authors: str
    title: str
    published: str
    year: int | None
    short: str
    used_for: str

    @property
    def citation(self) -> str:
        """Full reference: authors, title, where published (and the year in it)."""
        return f"{self.authors}, {self.title}, {self.published}."


DOCUMENTS = {
    "000": Document(
        "000", "D. J. Mackay", "A Simulator for Robots with Flexible Links",
        "M.Sc. thesis, Department of Computing Science, University of Alberta, Edmonton, 1988", 1988, "Mackay",
        "Book's recursive 4x4 Lagrangian dynamics of serial chains with flexible links (assumed modes in two "
        "bending planes and torsion, rigid joint masses), forward and inverse dynamics, RK4 integration, PID "
        "control along cubic-spline trajectories; the verification cases of chapter 3 (pendulum and flexural "
        "periods, energy, closure); the FLX simulator and the SYMFLX generator of symbolic equations with "
        "intermediate variables, and their operation counts (Tables 1.1, 4.1, 4.2)."),
    "001": Document(
        "001", "J.-C. Piedboeuf", "The Jacobian Matrix for a Flexible Manipulator",
        "Technical report EPM-RT-93-17, Ecole Polytechnique de Montreal, 1993", 1993, "Piedboeuf",
        "The endpoint Jacobian of tree-like flexible robots exact to first order in the deflection "
        "(second-order kinematics, curvature coordinates, foreshortening), generalized forces Q = J^T f, and "
        "the static study of a one-link arm under gravity and an endpoint force with models O(0), O(1), O(2) "
        "(sec. 4, Figs. 6-12, the Table 1 apparatus)."),
    "002": Document(
        "002", "N. Sreenath, P. S. Krishnaprasad", "DYNAMAN: A Tool for Manipulator Design and Analysis",
        "Systems Research Center, University of Maryland, College Park", None, "Sreenath & Krishnaprasad",
        "Symbolic Newton-Euler equations of N-link arms with revolute and prismatic joints from DH data, "
        "symbolic motor and external forces, generated simulation programs, the symbolic Jacobian, guided "
        "model input, and the validation arms (2R planar arm, R-P arm; Appendices B and C)."),
    "003": Document(
        "003", "S. K. Saha, B. Shirinzadeh, G. Alici", "Dynamic Model Simplification of Serial Manipulators",
        "(no publication details in the copy used)", None, "Saha et al.",
        "The DeNOC (decoupled natural orthogonal complement) form of the generalized inertia matrix by "
        "composite bodies; deciding which of its entries are zero, constant or configuration dependent; "
        "parameter conditions for a constant or decoupled inertia matrix (the three-link spatial arm)."),
    "004": Document(
        "004", "R. J. Theodore, A. Ghosal",
        "Comparison of the Assumed Modes and Finite Element Models for Flexible Multilink Manipulators",
        "International Journal of Robotics Research 14(2), 1995, pp. 91-111", 1995, "Theodore & Ghosal",
        "Spatial flexible arms with revolute and prismatic joints, clamped-mass mode shapes and their "
        "frequency equation, Hermite cubic finite elements (Table 1), payload, the closed-form Lagrangian "
        "equations (Algorithms 1-3) and their operation counts (Table 2), decoupling control with LQR "
        "vibration damping, the stiffness-overestimation stability lemma, the time-dependent frequency "
        "equation as an ODE, and the flexible RRP (Stanford-type) arm of Table 3."),
}

OTHER_WORKS = {
    "book1984": Document(
        "book1984", "W. J. Book", "Recursive Lagrangian dynamics of flexible manipulator arms",
        "International Journal of Robotics Research 3(3), 1984, pp. 87-101", 1984, "Book",
        "The recursive 4x4 Lagrangian formulation ('Book's recursion') that 000 implements and flexman's "
        "dynamics.lagrange4 follows."),
    "craig1986": Document(
        "craig1986", "J. J. Craig", "Introduction to Robotics: Mechanics and Control",
        "Addison-Wesley, Reading, MA, 1986", 1986, "Craig",
        "The modified Denavit-Hartenberg convention (frames at the joints; dh: modified in model files)."),
    "wright1982": Document(
        "wright1982", "A. D. Wright, C. E. Smith, R. W. Thresher, J. L. C. Wang",
        "Vibration modes of centrifugally stiffened beams", "Journal of Applied Mechanics 49, 1982, pp. 197-202",
        1982, "Wright et al.",
        "Table 1: the first two flapwise frequencies of a uniform cantilever spinning about its root (the "
        "rotating-beam validation cases, geometric stiffening)."),
    "hodges1981": Document(
        "hodges1981", "D. H. Hodges, M. J. Rutkowski",
        "Free-vibration analysis of rotating beams by a variable-order finite-element method",
        "AIAA Journal 19, 1981, pp. 1459-1466", 1981, "Hodges & Rutkowski",
        "Table 1: the same rotating-cantilever frequencies as Wright et al. (a second source for them)."),
    "kane1987": Document(
        "kane1987", "T. R. Kane, R. R. Ryan, A. K. Banerjee", "Dynamics of a cantilever beam attached to a moving base",
        "Journal of Guidance, Control, and Dynamics 10(2), 1987, pp. 139-151", 1987, "Kane, Ryan & Banerjee",
        "The spin-up manoeuvre of a 10 m beam on a hub (the bundled krb_spinup example, "
        "flexman.trajectory.spin_up): the standard test of geometric stiffening."),
    "greenhill1881": Document(
        "greenhill1881", "A. G. Greenhill",
        "Determination of the greatest height consistent with stability that a vertical pole or mast can be made",
        "Proceedings of the Cambridge Philosophical Society 4, 1881, pp. 65-73", 1881, "Greenhill",
        "The buckling load of a clamped column under its own weight, rhoA g L^3 / EI = 7.837 (tests)."),
    "khalil2002": Document(
        "khalil2002", "W. Khalil, E. Dombre", "Modeling, Identification and Control of Robots",
        "Hermes Penton Science, London, 2002", 2002, "Khalil & Dombre",
        "Base inertial parameters of rigid arms (the planar 2R result the regressor tests check)."),
}


def cite(key: str) -> str:
    """Short label of a source document: its key, authors and year, e.g. "000 (Mackay 1988)"."""
    doc = DOCUMENTS[key]
    return f"{key} ({doc.short}{'' if doc.year is None else f' {doc.year}'})"
