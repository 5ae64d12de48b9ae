"""000 Table 4.1 (p. 87): the operation counts of SYMFLX's inverse dynamics of the thesis
three-link arm, rigid and with one mode per bending plane, beside ours.

The arm is the bundled example ``flx_three_link``; its rigid variant keeps the same links with
beams without modes (rigid rods of the same mass, as ``tests/test_closed_loop.py`` builds it).
"""
from __future__ import annotations

# 000 Table 4.1 (p. 87): SYMFLX inverse dynamics of the thesis three-link arm, (mul, add)
TABLE_4_1 = {"rigid": (445, 213), "one mode per plane": (2659, 1313)}
THESIS_ARM = "flx_three_link"
SOURCE = "000 Table 4.1, p. 87 (SYMFLX)"
# formulations tried on the rigid arm, in this order (on a tie the first is kept)
RIGID_FORMULATIONS = ("book", "newton_euler", "denoc", "lagrange")


def rigid_thesis_arm():
    """The thesis three-link arm with rigid links: its beams without modes are rigid rods of
    the same mass (as tests/test_closed_loop.py builds it)."""
    from .. import load
    from ..model import Robot

    robot = load(THESIS_ARM)
    for link in robot.links:
        if link.beam is not None:
            link.beam.modes = {"y": 0, "z": 0, "torsion": 0}
    return Robot(links=robot.links, name=f"{THESIS_ARM}_rigid", gravity=robot.gravity, dh=robot.dh)


def comparison() -> list:
    """000 Table 4.1 beside our inverse-dynamics counts: the rigid arm by the cheapest of our
    formulations, the 7-coordinate arm by Book's recursion (the others trace it anyway)."""
    from .. import load
    from ..symbolic import derive
    from .table2 import total_operations, versus_paper

    rows = []
    for label, robot, forms in (("rigid", rigid_thesis_arm(), RIGID_FORMULATIONS),
                                ("one mode per plane", load(THESIS_ARM), ("book",))):
        counts = {form: derive(robot, formulation=form).op_count("inverse_dynamics") for form in forms}
        best = min(forms, key=lambda form: total_operations(counts[form]))
        rows.append({"arm": label, "nq": robot.nq, **versus_paper(TABLE_4_1[label], counts[best]),
                     "ours_formulation": best})
    return rows
