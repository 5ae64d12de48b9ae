"""The numeric model of a robot: per link its DH split, the second moments of its rigid
bodies and its beam body (:mod:`.beams`, built from the tensors of :mod:`.beam_tensors`),
assembled along the chain once per robot content (:func:`numeric_model`).

Every body is described by where its mass points sit in a frame of the chain: a rigid body
(link body, hub, payload) by its 4x4 second-moment matrix ``J = int h h^T dm``, a flexible beam
by its point map and tip transform (:mod:`.beam_tensors`).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..model import tree
from ..model.errors import ModelError
from ..model.robot import mimic_refusal
from . import dh
from .motors import motors
from .beam_tensors import AXES, rod_second_moments, shape_sets
from .beams import RevoluteBeam, SlidingBeam

__all__ = ["AXES", "LinkModel", "Model", "build", "distal_loads", "numeric_model", "second_moments_at_rest"]

@dataclass
class LinkModel:
    revolute: bool
    P: np.ndarray
    N: np.ndarray
    offset: float
    gen: np.ndarray
    body_tip: np.ndarray  # (4,4) second moments of bodies on the distal (deflected) frame
    body_base: np.ndarray  # (4,4) second moments of bodies on the undeformed frame (hub)
    beam: object  # RevoluteBeam | SlidingBeam | None
    flex: slice
    armature: float
    viscous: float
    coulomb: float
    parent: int = -1  # index of the parent link, -1 for the base (links in depth-first order)


@dataclass
class Model:
    links: list
    nq: int
    n_joints: int
    gravity: np.ndarray
    motors: tuple = ()  # elastic joints' motor coordinates (:mod:`.motors`)

    @cached_property
    def children(self) -> list:
        """For each link, the indices of its children in order (a serial arm: [i + 1]); worked out
        once per model, not at every evaluation."""
        return tree.children_of([lk.parent for lk in self.links])


def second_moments_at_rest(robot, i):
    """Second moments (4x4) of everything beyond the tip of link i (its body and its subtree of
    links), in link i's distal frame, with every joint at zero and no deflection."""
    total = np.zeros((4, 4))
    parents = robot.parents
    end = tree.subtree_end(parents, i)
    T = np.eye(4)  # link i's distal frame -> current frame
    at = {i: T}
    for j in range(i, end):
        link = robot.links[j]
        if j > i:
            P, N, offset = dh.split(link, robot.dh)
            J = dh.joint_motion(np.array(offset), link.joint == "revolute")
            T = at[j] = at[parents[j]] @ P @ J @ N
            if link.hub is not None:
                total += T @ link.hub.pseudo_inertia() @ T.T
            if link.beam is not None:
                total += T @ rod_second_moments(link, robot.dh) @ T.T
        total += T @ link.body.pseudo_inertia() @ T.T
    if robot.payload is not None and end == len(robot.links):  # the payload rides on the last link
        total += T @ robot.payload.pseudo_inertia() @ T.T
    return total


def distal_loads(robot, i):
    """Nondimensional tip loads (M, J, D) of 004 eq. (11) for link i's beam at q = 0:
    everything the link carries beyond its tip (its own body, distal links, payload)."""
    link = robot.links[i]
    beam = link.beam
    mu = beam.mass_per_length
    L = link.d if link.joint == "prismatic" else beam.length  # length outside the hub at q = 0
    ax, t1, t2 = AXES[robot.links[i].joint]
    J4 = second_moments_at_rest(robot, i)  # in link i's distal DH frame
    if dh.link_convention(link, robot.dh) == "modified" and link.joint == "revolute":  # that frame sits at the joint: move to the tip
        shift = np.eye(4)
        shift[ax, 3] = -beam.length
        J4 = shift @ J4 @ shift.T
    m_l = J4[3, 3]
    d_l = J4[ax, 3]
    out = {}
    for direction, t in (("y", t1), ("z", t2)):
        j_l = J4[ax, ax] + J4[t, t]  # moment of inertia about the bending axis through the tip
        m_n, j_n, d_n = m_l / (mu * L), j_l / (mu * L**3), d_l / (mu * L**2)
        tiny = 1e-12 * max(1.0, m_n, j_n)  # round-off of the frame shift, not a load
        m_n, j_n = max(m_n, 0.0), max(j_n, 0.0)
        d_n = 0.0 if abs(d_n) < tiny else d_n
        out[direction] = (m_n, j_n, d_n)
    other = [k for k in (0, 1, 2) if k != ax]
    out["torsion"] = (0.0, (J4[other[0], other[0]] + J4[other[1], other[1]]) / (beam.polar_inertia_per_length * L) if beam.polar_inertia_per_length else 0.0, 0.0)
    return out


def numeric_model(robot) -> Model:
    """The robot's numeric model, built once per robot content (``robot.derived``)."""
    return robot.derived("numeric_model", build)


def build(robot, beams=True) -> Model:
    """The numeric model (constants for the recursive algorithms), built afresh. ``beams=False``
    leaves out the flexible links' beam models (their tensors are most of the cost): bodies,
    joints and rods only, for code that reads those (``symbolic.params.parameter_values``)."""
    if getattr(robot, "mimic", None):  # one coordinate per link: the reduced model lives in dynamics.api
        raise ModelError(mimic_refusal(robot, "this computation"))
    links = []
    parents = robot.parents
    for i, link in enumerate(robot.links):
        P, N, offset = dh.split(link, robot.dh)
        gen = dh.GEN_REVOLUTE if link.joint == "revolute" else dh.GEN_PRISMATIC
        body_tip = link.body.pseudo_inertia()
        body_base = np.zeros((4, 4))
        if link.hub is not None:
            if link.is_flexible:
                body_base = link.hub.pseudo_inertia()
            else:
                body_tip = body_tip + link.hub.pseudo_inertia()
        if i == len(robot.links) - 1 and robot.payload is not None:
            body_tip = body_tip + robot.payload.pseudo_inertia()
        beam = None
        if link.beam is not None and (beams or not link.is_flexible):
            loads = distal_loads(robot, i) if link.beam.shapes == "clamped_mass" else {}
            if link.is_flexible and link.joint == "prismatic":
                beam = SlidingBeam.from_beam(link.beam, shape_sets(link.beam, loads), offset)
            elif link.is_flexible:
                beam = RevoluteBeam.from_link(link, robot.dh, loads)
            else:  # a beam with no modes is a rigid rod on the undeformed frame
                body_base = body_base + rod_second_moments(link, robot.dh)
        links.append(
            LinkModel(
                revolute=link.joint == "revolute",
                P=P,
                N=N,
                offset=offset,
                gen=gen,
                body_tip=body_tip,
                body_base=body_base,
                beam=beam,
                flex=robot.link_flex_slice(i),
                armature=link.joint_armature,  # the drive's rotor and motor friction included
                viscous=link.joint_viscous,
                coulomb=link.joint_coulomb,
                parent=parents[i],
            )
        )
    return Model(links=links, nq=robot.nq, n_joints=robot.n_joints, gravity=robot.gravity, motors=motors(robot))
