"""Independent reference for flexible links at speed: planar beams in Exudyn.

Exudyn (J. Gerstmayr's multibody code, the ``exudyn`` package, a test dependency) models a beam
with 2D geometrically exact (Simo-Reissner) elements, ``ObjectBeamGeometricallyExact2D``: each
node carries a position and a cross-section rotation and the strains (axial, shear, curvature)
are exact functions of them, so large rotations, the foreshortening of a bent beam and the
stiffening by an axial load come out of the element itself. Nothing here shares code or
assumptions with flexman's assumed-mode model: the Exudyn beam is extensible (axial stiffness EA),
shear deformable (a large shear stiffness makes it close to Euler-Bernoulli) and has the rotary
inertia of its cross-sections.

Two set-ups, both bending in the plane of the joint rotation (about z):

* :func:`spin_up`: the root node is held at the origin and its rotation follows a prescribed hub
  angle (a beam clamped to a driven hub);
* :func:`pendulum`: the root node is pinned at the origin and free to rotate (a beam on a
  massless joint), released from rest at a given angle and bending shape, under gravity.

Both return the time, the joint angle (the root cross-section's rotation, which is flexman's
joint angle of a beam with clamped modes) and the tip deflection in the rotating frame: the tip
position's component perpendicular to the root cross-section's axis (cos phi, sin phi), i.e.
flexman's in-plane tip deflection.

Time integration: Exudyn's implicit generalized-alpha method at a fixed step; the spectral radius
at infinity 0.8 damps the stiff axial and shear vibrations, not the bending modes of interest
(omega h < 0.1 for them at the steps used).
"""
from __future__ import annotations

import exudyn as exu
import numpy as np
from exudyn.itemInterface import (
    CoordinateConstraint, LoadMassProportional, MarkerBodyMass, MarkerNodeCoordinate, NodePointGround,
    NodeRigidBody2D, ObjectBeamGeometricallyExact2D, SensorNode,
)


def add_beam(mbs, L, mass_per_length, EI, EA, n_elements, positions, rotations, section_inertia):
    """Nodes at ``positions`` (n+1, 2) with cross-section rotations ``rotations`` (n+1,) of a beam
    whose unstressed reference lies straight along x; the elements between them. Returns the node
    and element numbers. Shear stiffness: G A k of a solid isotropic section (nu = 0.3, k = 5/6),
    EA / 3."""
    h = L / n_elements
    nodes, elements = [], []
    for i in range(n_elements + 1):
        ref = [i * h, 0.0, 0.0]
        init = [positions[i][0] - ref[0], positions[i][1], rotations[i]]
        nodes.append(mbs.AddNode(NodeRigidBody2D(referenceCoordinates=ref, initialCoordinates=init)))
    for i in range(n_elements):
        elements.append(mbs.AddObject(ObjectBeamGeometricallyExact2D(
            nodeNumbers=[nodes[i], nodes[i + 1]], length=h, massPerLength=mass_per_length,
            crossSectionInertia=section_inertia, bendingStiffness=EI, axialStiffness=EA, shearStiffness=EA / 3.0)))
    return nodes, elements


def hold_root(mbs, root, angle=None):
    """Hold the root node at the origin; with ``angle(t)`` also prescribe its rotation."""
    ground = mbs.AddNode(NodePointGround(referenceCoordinates=[0.0, 0.0, 0.0]))
    m_ground = mbs.AddMarker(MarkerNodeCoordinate(nodeNumber=ground, coordinate=0))
    for k in (0, 1):
        m = mbs.AddMarker(MarkerNodeCoordinate(nodeNumber=root, coordinate=k))
        mbs.AddObject(CoordinateConstraint(markerNumbers=[m_ground, m]))
    if angle is not None:
        m = mbs.AddMarker(MarkerNodeCoordinate(nodeNumber=root, coordinate=2))
        mbs.AddObject(CoordinateConstraint(markerNumbers=[m_ground, m],
                                           offsetUserFunction=lambda mbs, t, item, offset: float(angle(t))))


def integrate(mbs, nodes, t_final, dt, spectral_radius):
    """Run the generalized-alpha integration; return t, joint angle and tip deflection (rotating frame)."""
    root = mbs.AddSensor(SensorNode(nodeNumber=nodes[0], storeInternal=True, writeToFile=False,
                                    outputVariableType=exu.OutputVariableType.Rotation))
    tip = mbs.AddSensor(SensorNode(nodeNumber=nodes[-1], storeInternal=True, writeToFile=False,
                                   outputVariableType=exu.OutputVariableType.Position))
    mbs.Assemble()
    s = exu.SimulationSettings()
    s.timeIntegration.endTime = t_final
    s.timeIntegration.numberOfSteps = int(round(t_final / dt))
    s.timeIntegration.generalizedAlpha.spectralRadius = spectral_radius
    # Newton stalls near 1e-7 of the residual scale (the axial stiffness makes the system stiff);
    # 1e-6 changes the KRB peak tip deflection by 4e-5 of itself against 1e-8 with step reductions
    s.timeIntegration.newton.relativeTolerance = 1e-6
    s.timeIntegration.newton.absoluteTolerance = 1e-6
    s.timeIntegration.verboseMode = 0
    s.solution.file.write = False
    s.solution.sensors.writePeriod = dt
    s.show.computationTime = False
    s.show.statistics = False
    if not exu.SolveDynamic(mbs, s, showHints=False):
        raise RuntimeError("Exudyn's time integration failed")
    rot = mbs.GetSensorStoredData(root)
    pos = mbs.GetSensorStoredData(tip)
    t, phi = rot[:, 0], rot[:, -1]
    x, y = pos[:, 1], pos[:, 2]
    return t, phi, -np.sin(phi) * x + np.cos(phi) * y


def spin_up(angle, t_final, n_elements=16, L=10.0, mass_per_length=1.2, EI=1.4e4, EA=2.8e7, section_inertia=6e-4,
            dt=2e-3, spectral_radius=0.8):
    """A beam clamped to a hub whose angle is ``angle(t)`` (rad), starting straight and at rest.
    Defaults: Kane, Ryan & Banerjee's beam (rho I = 3000 kg/m^3 x 2e-7 m^4 = 6e-4 kg m: the
    sections' rotary inertia, which flexman's Euler-Bernoulli modes neglect).
    Returns (t, hub angle, tip deflection)."""
    mbs = exu.SystemContainer().AddSystem()
    xs = np.linspace(0.0, L, n_elements + 1)
    nodes, _ = add_beam(mbs, L, mass_per_length, EI, EA, n_elements, np.column_stack([xs, 0 * xs]), 0 * xs,
                        section_inertia)
    hold_root(mbs, nodes[0], angle)
    return integrate(mbs, nodes, t_final, dt, spectral_radius)


def pendulum(angle0, shape, t_final, n_elements=32, L=4.0, mass_per_length=2.73875, EI=29520.0, EA=7.0e7,
             section_inertia=1.16e-3, gravity=(9.81, 0.0), dt=5e-4, spectral_radius=0.8):
    """A beam pinned at the origin on a massless joint, released from rest at root angle ``angle0``
    with the in-plane bending shape ``shape(x) -> (w, w')`` (deflection and slope against the
    root's axis); the arc length is kept (the axis foreshortened by 1/2 int w'^2).
    Defaults: the thesis's 4 m tube (Mackay 1988, Table 3.1; EA and rho I of steel, 7850 kg/m^3:
    A = 3.49e-4 m^2, I = 1.476e-7 m^4). Returns (t, joint angle, tip deflection)."""
    mbs = exu.SystemContainer().AddSystem()
    xs = np.linspace(0.0, L, n_elements + 1)
    fine = np.linspace(0.0, L, 200 * n_elements + 1)
    _, slope = shape(fine)
    shortening = np.concatenate([[0.0], np.cumsum(0.25 * (slope[1:] ** 2 + slope[:-1] ** 2) * np.diff(fine))])
    w, dw = shape(xs)
    along = xs - np.interp(xs, fine, shortening)
    c, s = np.cos(angle0), np.sin(angle0)
    positions = np.column_stack([c * along - s * w, s * along + c * w])
    nodes, elements = add_beam(mbs, L, mass_per_length, EI, EA, n_elements, positions, angle0 + np.arctan(dw),
                               section_inertia)
    hold_root(mbs, nodes[0])
    for element in elements:
        marker = mbs.AddMarker(MarkerBodyMass(bodyNumber=element))
        mbs.AddLoad(LoadMassProportional(markerNumber=marker, loadVector=[gravity[0], gravity[1], 0.0]))
    return integrate(mbs, nodes, t_final, dt, spectral_radius)
