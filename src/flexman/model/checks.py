"""Checks on a whole model that no single field can see: is its mass matrix usable?

A model whose mass matrix is singular (a joint that moves no mass) or so ill-conditioned
that ``M qdd = f`` loses all its digits loads without complaint field by field, then fails
inside a simulation. The loader and :func:`flexman.simulate` call :func:`check_mass_matrix`
first, so the failure is one line that names the coordinate and its link.
"""
from __future__ import annotations

import numpy as np

from .errors import ModelError
from .limits import MAX_CONDITION


def coordinate_owner(robot, k: int) -> str:
    """'links[i]' (a joint coordinate) or 'links[i].beam' (a flexible one) for coordinate k."""
    if getattr(robot, "mimic", None) and k < robot.n_joints:
        return f"links[{robot.independent[k]}]"
    if k < robot.n_joints:
        return f"links[{k}]"
    for i in range(robot.n_joints):
        span = robot.link_flex_slice(i)
        if span.start <= k < span.stop:
            return f"links[{i}].beam"
    return "the model"


def mass_matrix_problem(robot, q=None) -> str | None:
    """Why M(q) (default: q = 0) cannot be used, or None. Names the coordinate that carries
    the smallest eigenvalue's direction."""
    q = np.zeros(robot.nq) if q is None else np.asarray(q, dtype=float)
    at = "at q = 0" if not np.any(q) else "at the initial state"
    try:
        with np.errstate(all="ignore"):
            M = np.asarray(robot.mass_matrix(q), dtype=float)
    except (ValueError, ArithmeticError) as exc:  # the model cannot even be built or evaluated
        text = " ".join(str(exc).split()) or type(exc).__name__
        return f"the mass matrix {at} cannot be computed ({text}); check the magnitudes (README, Limits)"
    if not np.all(np.isfinite(M)):
        return f"the mass matrix {at} has non-finite entries; check the magnitudes (README, Limits)"
    M = 0.5 * (M + M.T)
    eig, vec = np.linalg.eigh(M)
    top = max(float(eig[-1]), 0.0)
    if eig[0] > top / MAX_CONDITION and top > 0:
        return None
    k = int(np.argmax(np.abs(vec[:, 0])))
    name, owner = robot.coordinate_names[k], coordinate_owner(robot, k)
    ratio = top / eig[0] if eig[0] > top / 1e300 else np.inf
    cond = "singular" if eig[0] <= 0 or top == 0 or np.isinf(ratio) else f"ill-conditioned (condition number {ratio:.2g})"
    if owner.endswith(".beam"):
        fix = "use fewer modes, clamped_free shapes or more beam mass"
    else:
        fix = f"give {owner} a mass and inertia, a hub or an armature"
    return (f"{owner}: the mass matrix {at} is {cond}: coordinate {name} moves almost no mass "
            f"(limit: condition number {MAX_CONDITION:g}); {fix}")


class SingularModel(ModelError):
    """M is singular or ill-conditioned (not: it cannot be computed). URDF robots load flagged
    instead (:func:`flag_singular_mass`); model files are refused, their massless link a mistake."""


def check_mass_matrix(robot, q=None, keep_model: bool = True) -> None:
    """Raise :class:`ModelError` when M(q) is singular or ill-conditioned (see above; the
    :class:`SingularModel` kind when it is computed but cannot be inverted). ``keep_model=False`` drops the numeric model
    built for the check (the loader's robots may still have their links edited before first use)."""
    try:
        problem = mass_matrix_problem(robot, q)
    finally:
        if not keep_model:
            robot.clear_derived(keep_recent=True)  # its run finds the model again (Robot.clear_derived)
    if problem:
        computed = "cannot be computed" not in problem and "non-finite" not in problem
        raise (SingularModel if computed else ModelError)(problem)


def check_model(robot) -> None:
    """The whole-model checks every way a robot comes in goes through: a model file
    (:func:`~flexman.model.serialize.robot_from_dict`), a URDF with or without an overlay
    (:mod:`flexman.model.urdf`), and a robot built in Python (at its first run:
    :func:`flexman.simulate`, which checks at the initial state). The field checks live in the
    data classes, which all of them build; here is what no single field can see."""
    check_mass_matrix(robot, keep_model=False)


def massless_chain(robot, q=None) -> list:
    """Indices of the coordinates that span M's (near) null space at q (default 0): the directions
    whose eigenvalue is below the largest / MAX_CONDITION, each coordinate that takes part in one."""
    q = np.zeros(robot.nq) if q is None else np.asarray(q, dtype=float)
    with np.errstate(all="ignore"):
        M = np.asarray(robot.mass_matrix(q), dtype=float)
    eig, vec = np.linalg.eigh(0.5 * (M + M.T))
    null = vec[:, eig <= max(float(eig[-1]), 0.0) / MAX_CONDITION]
    return [int(k) for k in np.flatnonzero(np.abs(null).max(axis=1, initial=0.0) > 1e-3)] if null.size else []


def flag_singular_mass(robot, where: str) -> str | None:
    """:func:`check_model` for a description read as it is written (a URDF): when M at q = 0 is
    singular or ill-conditioned, the one sentence naming the massless chain (kept as
    ``robot.singular_mass``: :func:`require_invertible` refuses with it), else None. A model
    whose M cannot be computed at all is refused (ModelError, prefixed by ``where``)."""
    problem = mass_matrix_problem(robot)
    robot.clear_derived(keep_recent=True)
    if problem is None:
        return None
    if "cannot be computed" in problem or "non-finite" in problem:
        raise ModelError(f"{where}: {problem}")
    chain = massless_chain(robot)
    robot.clear_derived(keep_recent=True)
    names = robot.coordinate_names
    owners = [coordinate_owner(robot, k) for k in chain]
    links = [robot.links[int(o[6:o.index("]")])].name or o for o in owners]
    kind = "singular" if " singular" in problem else "ill-conditioned"
    sentence = (f"{where}: the mass matrix is {kind}, since the chain of coordinates {', '.join(names[k] for k in chain)} "
                f"(links {', '.join(dict.fromkeys(links))}) moves (almost) no mass; kinematics, frames, Jacobians and "
                "inverse dynamics work, while forward dynamics, simulation and natural frequencies, which need M's "
                "inverse, are refused until those links are given a mass and inertia.")
    robot.singular_mass = sentence
    return sentence


def require_invertible(robot) -> None:
    """Refuse what needs M's inverse for a robot loaded with a singular mass matrix
    (:func:`flag_singular_mass`), in its one sentence."""
    sentence = getattr(robot, "singular_mass", None)
    if sentence:
        raise ModelError(sentence)
