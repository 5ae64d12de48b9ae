"""fm.analysis.sensitivities: exact derivatives (forward-mode replay of the derived program) against
fourth-order central differences of the robot's own numeric path, rebuilt with each parameter
moved (Newton-Euler / CRBA for rigid arms, Book's recursion for flexible ones, complex-step K
inside robot.natural_frequencies): an independent route to the same numbers."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import random_rigid_robot

import flexman as fm
from flexman.analysis import physical

QUANTITY = {
    "inverse_dynamics": lambda r, q, qd, qdd: r.inverse_dynamics(q, qd, qdd),
    "mass_matrix": lambda r, q, qd, qdd: r.mass_matrix(q),
    "frequencies": lambda r, q, qd, qdd: r.natural_frequencies(q),
}


def _richardson(robot, name, f, rel=1e-3, floor=1e-2):
    """(8 (f(h) - f(-h)) - (f(2h) - f(-2h))) / 12h: truncation error O(h^4) ~ 1e-12."""
    v = physical.value(robot, name)
    h = rel * max(abs(v), floor)
    at = lambda s: f(physical.with_values(robot, {name: v + s}))
    return (8 * (at(h) - at(-h)) - (at(2 * h) - at(-2 * h))) / (12 * h)


def _check(robot, names, quantity, q, qd=None, qdd=None, rtol=1e-8):
    s = fm.analysis.sensitivity(robot, quantity, names, q=q, qd=qd, qdd=qdd)
    f = lambda r: QUANTITY[quantity](r, q, qd, qdd)
    np.testing.assert_allclose(s.value, f(robot), rtol=1e-10, atol=1e-10 * np.abs(f(robot)).max())
    scale = np.abs(f(robot)).max()
    for j, name in enumerate(names):
        ref = _richardson(robot, name, f)
        tol = rtol * max(np.abs(ref).max(), 1e-6 * scale / max(abs(physical.value(robot, name)), 1e-2))
        assert np.abs(s.derivative[j] - ref).max() <= tol, (name, s.derivative[j], ref)
    return s


@pytest.mark.parametrize("seed", [0, 1])
def test_rigid_arm_derivatives(seed):
    rng = np.random.default_rng(40 + seed)
    robot = random_rigid_robot(rng, 3, extras=True)  # hubs, payload, armature, viscous friction
    for link in robot.links:
        link.coulomb = 0.0  # branches on sign(qd): not traced
    names = ["mass2", "cx2", "cy3", "Izz1", "Ixy2", "Iyz3", "a2", "d3", "Ia2", "payload", "payload_cz", "gz"]
    names += [f"hub_mass{i + 1}" for i, link in enumerate(robot.links) if link.hub is not None][:1]
    q, qd, qdd = rng.uniform(-1.5, 1.5, (3, 3))
    _check(robot, names, "inverse_dynamics", q, qd, qdd)
    _check(robot, names[:8], "mass_matrix", q)


def test_flexible_arm_derivatives():
    robot = fm.examples.load("flx_three_link")
    names = ["EI2", "EIz3", "rhoA2", "zeta3", "mass3", "a2", "Ia1", "lb3"]
    rng = np.random.default_rng(3)
    q, qd, qdd = rng.uniform(-1, 1, (3, robot.nq))
    q[robot.flex_index] *= 0.02
    _check(robot, names, "inverse_dynamics", q, qd, qdd)
    _check(robot, names, "mass_matrix", q)
    s = _check(robot, ["EI2", "rhoA2", "mass3", "a2", "lb2"], "frequencies", q, rtol=1e-7)
    assert s.value[-1] > 0 and np.all(s.derivative[1][s.value > 0] < 0)  # heavier beam: lower frequencies


def test_frequency_derivative_closed_form():
    """A clamped-free beam on a locked-free hub: w ~ sqrt(EI), so (EI / w) dw/dEI = 1/2 for every
    bending mode when only EI changes (mass unchanged, no gravity)."""
    robot = fm.examples.load("flx_joint_mass")
    s = fm.analysis.sensitivity(robot, "frequencies", ["EI1"])
    flex = s.value > 1e-6
    np.testing.assert_allclose(s.relative[0][flex], 0.5, rtol=1e-10)


def test_unknown_parameter_lists_the_valid_ones():
    robot = fm.examples.load("dynaman_2r")
    with pytest.raises(ValueError, match=r"unknown parameter 'EI2' for dynaman_2r; valid: a1 d1 mass1"):
        fm.analysis.sensitivity(robot, "mass_matrix", ["EI2"])
    with pytest.raises(ValueError, match="quantity: unknown"):
        fm.analysis.sensitivity(robot, "energy", ["mass1"])


def test_frequencies_about_a_steady_motion():
    """About a steady spin (robot.natural_frequencies(q, qd)): the steady deflection moves with the
    parameters and the gyroscopic system's eigenvalues with it; against central differences of
    the numeric path (Newton for the deflection, complex-step Jacobians, a general eigensolver)."""
    robot = fm.examples.load("flx_three_link")
    q = np.array([0, 0.5, -0.3, 0, 0, 0, 0.0])
    qd = np.array([2.0, 1.0, 0.5, 0, 0, 0, 0])
    names = ["EI2", "rhoA2", "payload", "a2", "lb3"]
    s = fm.analysis.sensitivity(robot, "frequencies", names, q=q, qd=qd)
    f = lambda r: r.natural_frequencies(q, qd)
    np.testing.assert_allclose(s.value, f(robot), rtol=1e-10)
    for j, name in enumerate(names):
        ref = _richardson(robot, name, f)
        np.testing.assert_allclose(s.derivative[j], ref, rtol=0, atol=1e-8 * np.abs(ref).max())


def _swing_all(robot, T=0.5, A=0.3):
    """Every joint swings by A, rest to rest in T (q = A (x - sin(2 pi x) / 2 pi), x = t / T)."""
    n, w = robot.n_joints, 2 * np.pi

    def traj(t):
        x = min(max(t / T, 0.0), 1.0)
        one = np.ones(n)
        return (A * (x - np.sin(w * x) / w) * one, A * (1 - np.cos(w * x)) / T * one, A * w * np.sin(w * x) / T ** 2 * one)
    return traj


@pytest.mark.parametrize("example,names", [
    ("flx_joint_mass", ["EI1", "rhoA1", "payload", "zeta1", "lb1"]),
    pytest.param("flx_three_link", ["EI2", "rhoA3", "a2", "lb3", "payload"], marks=pytest.mark.slow),
])
def test_simulated_figures_against_differences_of_simulations(example, names):
    """Forward sensitivity equations (RK4 on the same grid) against fourth-order differences of
    fm.simulate(..., prescribed=traj, method="rk4") runs of the robot rebuilt with each parameter
    moved (the numeric backend): the peak tip deflection and the tip error left at the end."""
    robot = fm.examples.load(example)
    traj, T, dt = _swing_all(robot), 0.6, 2e-3
    kinds = ("peak_tip_deflection", "final_tip_error")

    def figures(r):
        res = fm.simulate(r, T, dt=dt, method="rk4", prescribed=traj, progress=False, backend="numeric")
        norm = np.linalg.norm(fm.analysis.tip_offset(r, res.q), axis=1)
        return np.array([norm.max(), norm[-1]])

    ours = [fm.analysis.sensitivity(robot, kind, names, prescribed=traj, t_final=T, dt=dt) for kind in kinds]
    np.testing.assert_allclose([s.value[0] for s in ours], figures(robot), rtol=1e-10)
    for j, name in enumerate(names):
        ref = _richardson(robot, name, figures, rel=1e-4, floor=0.1)
        for s, r in zip(ours, ref):
            assert abs(s.derivative[j, 0] - r) <= 1e-8 * max(abs(r), 1e-6 * s.value[0]), (s.quantity, name, s.derivative[j], r)


def test_stiffness_derivatives_equal_complex_step():
    """The issue's oracle: complex-step derivatives of the numeric recursion. EI enters the numeric
    model only through each beam's stiffness matrix K (linear in EIy, EIz by direction; damping
    set to 0 so that the modal damping matrix does not depend on it), so a model whose K carries
    i h dK/dEI gives d(tau)/dEI = Im(tau)/h exactly (h = 1e-30: no subtraction, no truncation)."""
    import copy

    from flexman.dynamics.structure import numeric_model

    robot = fm.examples.load("flx_three_link")
    for link in robot.links:
        if link.beam is not None:
            link.beam.damping = 0.0
    rng = np.random.default_rng(7)
    q, qd, qdd = rng.uniform(-1, 1, (3, robot.nq))
    q[robot.flex_index] *= 0.02
    model, h = numeric_model(robot), 1e-30
    for i, name in ((1, "EIy2"), (1, "EIz2"), (2, "EIy3"), (2, "EIz3")):
        complex_model = copy.deepcopy(model)
        beam = complex_model.links[i].beam
        direction = name[2]
        EI = robot.links[i].beam.EI[0 if direction == "y" else 1]
        rows = np.array([d == direction for d in beam.directions])
        beam.K = np.asarray(beam.K) + 1j * h * np.where(rows[:, None], np.asarray(beam.K) / EI, 0.0)
        step = np.imag(robot.with_derived("numeric_model", complex_model).inverse_dynamics(q, qd, qdd)) / h
        s = fm.analysis.sensitivity(robot, "inverse_dynamics", [name], q=q, qd=qd, qdd=qdd)
        assert np.abs(step).max() > 1e-4  # the stiffness does act on the flexible rows
        np.testing.assert_allclose(s.derivative[0], step, rtol=1e-8, atol=1e-8 * np.abs(step).max())


def test_magnitudes_beyond_a_physical_state_are_refused_not_nan():
    """Issue 34: qdd = 1e308 gave NaN torques and exit 0; the state's magnitudes are bounded
    (README, Limits) and the command line says so in one line."""
    robot = fm.examples.load("flx_three_link")
    qdd = np.zeros(robot.nq)
    qdd[0] = 1e308
    with pytest.raises(ValueError, match=r"^qdd\[0\] = 1e\+308 is beyond the supported magnitude 1e\+08 of a joint "
                                         r"acceleration"):
        fm.analysis.sensitivity(robot, "inverse_dynamics", ["EI2"], qdd=qdd)
    with pytest.raises(ValueError, match=r"^qd\[0\] = 1e\+300 is beyond the supported magnitude 10000 of a joint rate"):
        fm.analysis.sensitivity(robot, "frequencies", ["EI2"], qd=np.r_[1e300, np.zeros(robot.nq - 1)])
