"""Beam properties as named symbols (parameters="symbolic"): rhoA, lb, EIy, EIz, GJ, Jp, zeta.

The equations are derived once; evaluated with another arm's property values they must equal
that arm's numeric dynamics exactly whenever the dimensionless shapes do not depend on the
properties (clamped-free, polynomial, finite elements; issue: DYNAMAN-style symbolic
parameters, 002 sec. 2, and 004 sec. 4.4's numerically specified shapes).
"""
import copy

import numpy as np
import pytest

import flexman as fm
from flexman import Beam, Link, RigidBody, Robot
from flexman.model.serialize import robot_from_dict, robot_to_dict

BEAM_SYMBOLS = ("rhoA", "lb", "EIy", "EIz", "GJ", "Jp", "zeta")


def spatial_arm(shapes, dh, mu=0.7, L=0.9, EI=(40.0, 55.0), GJ=12.0, jp=0.01, zeta=0.02):
    """Two flexible revolute links bending in both planes, torsion where the shapes allow it."""
    if shapes == "finite_elements":
        kw, modes = {"elements": 2}, {"y": 4, "z": 4, "torsion": 0}
    else:
        kw, modes = {}, {"y": 2, "z": 1, "torsion": 1}
    b1 = Beam(length=L, mass_per_length=mu, EI=list(EI), GJ=GJ, polar_inertia_per_length=jp, damping=zeta,
              shapes=shapes, modes=modes, **kw)
    b2 = Beam(length=1.2 * L, mass_per_length=0.5 * mu, EI=[EI[0] / 2, EI[1] / 3], GJ=GJ,
              polar_inertia_per_length=jp, damping=zeta, shapes=shapes, modes=modes, **kw)
    body = RigidBody(mass=0.3, com=[0.01, 0.02, 0.0], inertia=[0.01, 0.02, 0.03, 0, 0, 0])
    return Robot(links=[Link(joint="revolute", a=0.5, alpha=np.pi / 2, d=0.1, beam=b1, body=body),
                        Link(joint="revolute", a=0.7, beam=b2, body=RigidBody(mass=0.2))],
                 gravity=[0, 0, -9.81], dh=dh)


def rel(a, b):
    return np.max(np.abs(a - b)) / np.max(np.abs(b))


def check_reuse(nominal, changed, rng, q_fix=None):
    eom = fm.derive(nominal, formulation="book", parameters="symbolic")
    model = eom.compile("numpy")
    values = fm.derive(changed, formulation="book", parameters="symbolic").param_values
    assert list(values) == list(eom.param_values)  # same equations, new numbers
    q = rng.normal(size=(4, nominal.nq)) * 0.2
    if q_fix is not None:
        q[:, q_fix[0]] = q_fix[1]
    qd, qdd = rng.normal(size=(2, 4, nominal.nq))
    assert rel(model.inverse_dynamics(q, qd, qdd), nominal.inverse_dynamics(q, qd, qdd)) < 1e-12
    model.params[:] = list(values.values())
    assert rel(model.inverse_dynamics(q, qd, qdd), changed.inverse_dynamics(q, qd, qdd)) < 1e-12
    assert rel(model.mass_matrix(q), changed.mass_matrix(q)) < 1e-12
    return eom


@pytest.mark.parametrize("dh", ["standard", "modified"])
@pytest.mark.parametrize("shapes", ["clamped_free", "finite_elements", "polynomial"])
def test_revolute_beam_properties_are_symbols(shapes, dh):
    rng = np.random.default_rng(0)
    nominal = spatial_arm(shapes, dh)
    changed = spatial_arm(shapes, dh, mu=1.3, L=1.4, EI=(90.0, 20.0), GJ=30.0, jp=0.03, zeta=0.05)
    eom = check_reuse(nominal, changed, rng)
    names = set(eom.param_values)
    for stem in BEAM_SYMBOLS:
        if stem == "GJ" and shapes == "finite_elements":
            continue  # no torsion coordinates there
        assert {f"{stem}1", f"{stem}2"} <= names
    assert not any(n.startswith(("C0L", "CkL", "CklL", "KL")) for n in names)  # no opaque integrals


def test_sliding_beam_properties_are_symbols():
    """004's RRP boom: rhoA, total length, EI and damping of the prismatic link as symbols."""
    data = robot_to_dict(fm.examples.load("theodore_rrp"))
    for link in data["links"][1:]:
        link["beam"]["shapes"] = "clamped_free"  # clamped-mass shapes would follow the loads
    data["links"][2]["beam"]["damping"] = 0.01
    changed = copy.deepcopy(data)
    changed["links"][2]["beam"].update(mass_per_length=0.5, EI=[800.0, 1500.0], length=1.6, damping=0.03)
    eom = check_reuse(robot_from_dict(data), robot_from_dict(changed), np.random.default_rng(1),
                      q_fix=(2, [0.1, 0.3, 0.5, 0.6]))
    assert {"rhoA3", "lb3", "EIy3", "EIz3", "zeta3"} <= set(eom.param_values)
