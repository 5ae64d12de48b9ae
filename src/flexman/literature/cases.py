"""The literature cases: each reference number from the documents, recomputed by flexman.

``flexman validate`` prints them as a table (:func:`run` gives one row); the tests run the same
cases. Every case names its source (document, table or section, page; keys in
:mod:`.documents`) and its tolerance.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.special import ellipk

from .case import Case
from .documents import OTHER_WORKS, cite

THESIS = cite("000")
TG = cite("004")
WRIGHT = f"{OTHER_WORKS['wright1982'].short} {OTHER_WORKS['wright1982'].year}, Table 1"
G = 9.81


# ----- measurements --------------------------------------------------------------------
def crossing_times(t, x, window=1):
    """Upward zero crossings of x (smoothed by a moving average of `window` samples)."""
    if window > 1:
        x = np.convolve(x, np.ones(window) / window, mode="same")
        t, x = t[window:-window], x[window:-window]
    i = np.flatnonzero((x[:-1] < 0) & (x[1:] >= 0))
    return t[i] - x[i] * (t[i + 1] - t[i]) / (x[i + 1] - x[i])


def mean_period(t, x, window=1):
    tc = crossing_times(t, x, window)
    if len(tc) < 2:
        raise RuntimeError("period: fewer than two oscillations in the simulated interval")
    return (tc[-1] - tc[0]) / (len(tc) - 1)


def elliptic_period(length, phi0, g=G):
    """Uniform rod pendulum: T = 4 sqrt(2a/(3g)) K(sin(phi0/2)) (thesis eq. 3.6)."""
    k = np.sin(phi0 / 2.0)
    return 4.0 * np.sqrt(2.0 * length / (3.0 * g)) * ellipk(k * k)


def _example(name, stiffening=False):
    """A bundled example; stiffening=True turns the geometric stiffening on in every beam (the
    literature examples keep the documents' first-order model in their files)."""
    from .. import examples

    robot = examples.load(name)
    if stiffening:
        from ..model.serialize import robot_from_dict, robot_to_dict

        data = robot_to_dict(robot)
        for link in data["links"]:
            if link.get("beam"):
                link["beam"]["stiffening"] = True
        robot = robot_from_dict(data)
    return robot


def _simulate(robot, t_final, q0, dt=1e-3):
    from ..simulate import simulate

    return simulate(robot, t_final, dt=dt, method="rk4", q0=q0, progress=False)


def _swing_joint(robot):
    """The joint that swings: the last revolute joint of the example."""
    return max(i for i, link in enumerate(robot.links) if link.joint == "revolute")


def _sag_deflection(robot, q0, coord, tip):
    """Initial value of a flexible coordinate giving a tip deflection `tip` in the direction
    gravity bends the link (the sign of the gravity force on that coordinate)."""
    from ..dynamics import api

    force = -api.bias_forces(robot, q0, np.zeros(robot.nq))[coord]
    from ..dynamics.structure import numeric_model

    model = numeric_model(robot)
    for lk in model.links:
        if lk.beam is not None and lk.flex.start <= coord < lk.flex.stop:
            per_unit = np.abs(lk.beam.tip_partials(np.zeros(lk.beam.n))[coord - lk.flex.start][:3, 3]).max()
            return np.sign(force or 1.0) * tip / per_unit
    raise ValueError("coordinate is not flexible")


# ----- thesis 3.3.1: rigid compound pendulum ----------------------------------------------
def rigid_pendulum_period(phi0):
    robot = _example("flx_rigid_pendulum")
    j = _swing_joint(robot)
    q0 = np.zeros(robot.nq)
    q0[j] = phi0
    period_guess = elliptic_period(_rod_length(robot), phi0)
    res = _simulate(robot, 2.2 * period_guess, q0)
    return mean_period(res.t, res.q[:, j])


def _rod_length(robot):
    link = robot.links[_swing_joint(robot)]
    return link.beam.length if link.beam is not None else link.a


# ----- thesis 3.3.3-3.3.4: flexible pendulum ------------------------------------------------
@lru_cache(maxsize=None)
def _flexible_pendulum_run(stiffening=False):
    robot = _example("flx_flexible_pendulum", stiffening)
    j = _swing_joint(robot)
    q0 = np.zeros(robot.nq)
    q0[j] = 0.4
    ey = robot.link_flex_slice(j).start  # first in-plane mode
    q0[ey] = _sag_deflection(robot, q0, ey, 0.0327)  # tip deflection 0.0327 m (sec. 3.3.3)
    res = _simulate(robot, 7.0, q0)
    return res, j, ey


def flexible_pendulum_joint_period(stiffening=False):
    res, j, _ = _flexible_pendulum_run(stiffening)
    # the flexural vibration back-drives the joint: average it out over one flexural period
    window = int(round(0.047 / (res.t[1] - res.t[0])))
    return mean_period(res.t, res.q[:, j], window)


def flexible_pendulum_flexural_period(stiffening=False):
    res, _, ey = _flexible_pendulum_run(stiffening)
    sel = res.t < 1.0
    t, x = res.t[sel], res.q[sel, ey]
    window = int(round(0.2 / (t[1] - t[0])))
    slow = np.convolve(x, np.ones(window) / window, mode="same")
    return mean_period(t[window:-window], (x - slow)[window:-window])


def out_of_plane_period(stiffening=False):
    """Deflection in the plane of the joint axis: the base is clamped for it (Fig. 3.21)."""
    robot = _example("flx_flexible_pendulum", stiffening)
    j = _swing_joint(robot)
    sl = robot.link_flex_slice(j)
    layout = dict(robot.flex_layout[j])
    ez = sl.start + layout.get("y", 0)
    q0 = np.zeros(robot.nq)
    q0[ez] = 0.012
    res = _simulate(robot, 1.5, q0)
    return mean_period(res.t, res.q[:, ez])


def hub_inertia_periods(inertias=(0.0, 10.0, 100.0, 1000.0, 1e5), stiffening=False):
    """In-plane flexural period (s) of the link on a rigid joint mass of growing inertia
    (thesis Fig. 3.20), from the linearized free system."""
    from ..model import RigidBody

    base = _example("flx_joint_mass")
    j = _swing_joint(base)
    out = []
    for inertia in inertias:
        robot = _example("flx_joint_mass", stiffening)
        hub = robot.links[j].hub
        # a disc-shaped joint mass with polar moment `inertia` about the joint axis
        robot.links[j].hub = RigidBody(hub.mass, hub.com, np.diag([inertia / 2, inertia / 2, inertia]))
        robot.clear_derived()
        w = robot.natural_frequencies(np.zeros(robot.nq))
        out.append(2 * np.pi / w[w > 1e-6])
    return inertias, out


def _in_plane_period_at_largest_hub(stiffening=False):
    _, periods = hub_inertia_periods(stiffening=stiffening)
    return min(periods[-1])


def stiffening_effect(compute):
    """What the geometric stiffening changes in a case computed with the first-order model:
    compute(stiffening=True) - compute(stiffening=False)."""
    return compute(stiffening=True) - compute(stiffening=False)


# ----- rotating uniform cantilever (centrifugal stiffening) --------------------------------------
# First two flapwise frequencies of a uniform clamped-free beam spinning about an axis through
# its root (no hub radius), omega / sqrt(EI / (rhoA L^4)) against the spin Omega in the same unit:
# Wright et al. 1982, Table 1 (the same values in Hodges & Rutkowski 1981, Table 1; full
# references in documents.OTHER_WORKS).
ROTATING_FLAP = {
    0: (3.5160, 22.0345), 1: (3.6817, 22.1810), 2: (4.1373, 22.6149), 3: (4.7973, 23.3203),
    4: (5.5850, 24.2733), 6: (7.3604, 26.8091), 8: (9.2568, 29.9954), 10: (11.2023, 33.6404),
    12: (13.1702, 37.6031),
}
ROTOR_MODES = 5


def rotating_cantilever(plane, modes=ROTOR_MODES, stiffening=True, joint="revolute"):
    """The rotating beam in flexman's units (L = EI = rhoA = 1), bending along the spin axis
    (plane="flap") or in the plane of rotation (plane="chord"). joint="revolute": one flexible link
    on a revolute joint about z (bending along z is flapwise). joint="prismatic": the beam slides
    in a hub on the spin axis, 1 m of its 1.5 m outside, the hub exit on the axis (bending along z
    of the link frame is along the spin axis); the held prismatic joint makes it the same cantilever."""
    from ..model import Beam, Link, RigidBody, Robot

    along = {"flap": "z", "chord": "y"}[plane]
    beam = Beam(length=1.0 if joint == "revolute" else 1.5, mass_per_length=1.0, EI=[1.0, 1.0],
                stiffening=stiffening, modes={d: (modes if d == along else 0) for d in ("y", "z")})
    if joint == "revolute":
        hub = RigidBody(mass=0.0, inertia=[0.5, 0.5, 1.0])  # any hub: the joint rate is held
        return Robot(links=[Link(joint="revolute", beam=beam, hub=hub)], gravity=[0.0, 0.0, 0.0], dh="modified")
    spinner = RigidBody(mass=1.0, inertia=[0.5, 0.5, 1.0])
    return Robot(links=[Link(joint="revolute", alpha=np.pi / 2, body=spinner),
                        Link(joint="prismatic", d=1.0, beam=beam)], gravity=[0.0, 0.0, 0.0], dh="standard")


@lru_cache(maxsize=None)
def rotating_frequencies(plane, spin, modes=ROTOR_MODES, stiffening=True, joint="revolute"):
    """Nondimensional frequencies of the spinning cantilever about its steady spin (joint rates held)."""
    robot = rotating_cantilever(plane, modes, stiffening, joint)
    qd = np.zeros(robot.nq)
    qd[0] = spin
    return tuple(robot.natural_frequencies(np.zeros(robot.nq), qd=qd))


def first_order_speed_limit(error=0.01, modes=ROTOR_MODES):
    """Largest Omega / omega1 for which the first-order model's lowest chordwise frequency is within
    `error` of the stiffened one (the speed range where first order is acceptable)."""
    w1 = rotating_frequencies("chord", 0.0, modes)[0]

    def err(ratio):
        spin = ratio * w1
        stiff = rotating_frequencies("chord", spin, modes)[0]
        first = rotating_frequencies("chord", spin, modes, stiffening=False)[0]
        return abs(first / stiff - 1.0)

    from scipy.optimize import brentq

    return brentq(lambda ratio: err(ratio) - error, 0.0, 0.99, xtol=1e-10)  # err grows from 0 to 1


# ----- 004 Table 1 ---------------------------------------------------------------------------
T1_EI, T1_MU, T1_L = 1165.4916, 0.331, 1.0


def table1(elements, mode):
    from ..discretize import beam_frequencies

    return beam_frequencies("finite_elements", elements, T1_EI, T1_MU, T1_L)[mode - 1]


def table1_exact(mode):
    from ..discretize import exact_frequencies

    return exact_frequencies(mode, T1_EI, T1_MU, T1_L)[mode - 1]


def _cases():
    cases = []
    table32 = {0.05: 3.276, 0.1: 3.278, 0.2: 3.284, 0.4: 3.309}
    for phi, doc in table32.items():
        cases.append(
            Case(
                f"rigid pendulum period, {phi} rad (RK4, 1 ms)",
                f"{THESIS} sec. 3.3.1, Table 3.2 (elliptic {doc} s)",
                round(float(elliptic_period(4.0, phi)), 4),
                1e-3,
                lambda phi=phi: rigid_pendulum_period(phi),
                unit="s",
                slow=True,
            )
        )
    thesis_flexible = [
        ("flexible pendulum joint period", f"{THESIS} sec. 3.3.3, p. 59 (3.307 +- 0.001 s)", 3.307, 1e-3,
         flexible_pendulum_joint_period, True),
        ("flexible pendulum flexural period", f"{THESIS} sec. 3.3.3, p. 59 (47 +- 1 ms)", 0.047, 1e-3,
         flexible_pendulum_flexural_period, True),
        ("out-of-plane vibration period", f"{THESIS} sec. 3.3.4, Fig. 3.21 (275 ms)", 0.275, 1.5e-3,
         out_of_plane_period, True),
        ("flexural period, very stiff hub (Fig. 3.20 limit)", f"{THESIS} sec. 3.3.4, Fig. 3.20 (-> 275 ms)", 0.275,
         1.5e-3, _in_plane_period_at_largest_hub, False),
    ]
    for name, source, expected, tol, compute, slow in thesis_flexible:
        # the documents' first-order model (the example files say stiffening: false) ...
        cases.append(Case(name, source, expected, tol, compute, unit="s", slow=slow))
        # ... and flexman's default, with geometric stiffening (the tension of gravity and of the
        # swing): at these slow motions the same reference holds, and the next row shows how little
        # the stiffening moves the number (less than the document's resolution)
        cases.append(Case(f"{name}, stiffening on", source, expected, tol,
                          lambda c=compute: c(stiffening=True), unit="s", slow=slow))
        cases.append(Case(f"{name}, stiffening on - off", f"change from first order (< the document's {tol * 1e3:g} ms)",
                          0.0, tol, lambda c=compute: stiffening_effect(c), unit="s", slow=slow))
    for spin, (flap1, flap2) in ROTATING_FLAP.items():
        for mode, flap in ((1, flap1), (2, flap2)):
            cases.append(
                Case(f"rotating cantilever, flapwise mode {mode}, Omega = {spin}",
                     f"{WRIGHT} (omega / sqrt(EI/(rhoA L^4)))", flap, 5e-3,
                     lambda s=spin, m=mode: rotating_frequencies("flap", float(s))[m - 1], relative=True)
            )
        for mode, flap in ((1, flap1), (2, flap2)):
            # in the plane of rotation the spin softening -Omega^2 offsets part of the centrifugal
            # stiffness: chord^2 = flap^2 - Omega^2, mode by mode (uniform beam, no hub radius)
            cases.append(
                Case(f"rotating cantilever, chordwise mode {mode}, Omega = {spin}",
                     f"{WRIGHT}: sqrt(flap^2 - Omega^2)", round(float(np.sqrt(flap**2 - spin**2)), 4), 5e-3,
                     lambda s=spin, m=mode: rotating_frequencies("chord", float(s))[m - 1], relative=True)
            )
    table1_fem = {
        1: [209.63, 2065.4],
        2: [208.73, 1318.6, 4459.7, 12944.0],
        3: [208.64, 1311.8, 3706.7, 8347.3, 15709.0, 31318.0],
    }
    for elements, values in table1_fem.items():
        for mode, value in enumerate(values, start=1):
            cases.append(
                Case(f"clamped-free beam, {elements} element(s), mode {mode}", f"{TG} Table 1 (rad/s)", value, 2e-4,
                     lambda e=elements, m=mode: table1(e, m), relative=True, unit="rad/s")
            )
    for mode, value in enumerate([208.64, 1307.5, 3661.1, 7174.2, 11860.0, 17716.0], start=1):
        cases.append(
            Case(f"clamped-free beam, exact, mode {mode}", f"{TG} Table 1 (rad/s)", value, 1e-4,
                 lambda m=mode: table1_exact(m), relative=True, unit="rad/s")
        )
    for spin in (6, 12):  # the same cantilever as the flexible link of a prismatic joint
        flap1 = ROTATING_FLAP[spin][0]
        cases.append(
            Case(f"rotating cantilever on a prismatic joint, flapwise mode 1, Omega = {spin}",
                 f"{WRIGHT} (omega / sqrt(EI/(rhoA L^4)))", flap1, 5e-3,
                 lambda s=spin: rotating_frequencies("flap", float(s), joint="prismatic")[0], relative=True))
        cases.append(
            Case(f"rotating cantilever on a prismatic joint, chordwise mode 1, Omega = {spin}",
                 f"{WRIGHT}: sqrt(flap^2 - Omega^2)", round(float(np.sqrt(flap1**2 - spin**2)), 4), 5e-3,
                 lambda s=spin: rotating_frequencies("chord", float(s), joint="prismatic")[0], relative=True))
    return cases


def case_passes(case, obtained) -> bool:
    """The pass rule: a case's own ``passes(obtained)`` if it has one; else relative error <= tolerance."""
    if hasattr(case, "passes"):
        return bool(case.passes(obtained))
    expected = np.asarray(case.expected, dtype=float)
    got = np.asarray(obtained, dtype=float)
    if expected.shape != got.shape and got.size != expected.size:
        return False
    err = np.abs(got.reshape(expected.shape) - expected)
    return bool(np.all(err <= case.tolerance * np.maximum(np.abs(expected), 1e-12)))


def run(case) -> dict:
    """Compute one case: name, source, expected, obtained, tolerance, passed, error (the
    exception's type and message where the computation failed: a failing case is a result,
    not a crash) and bound ('about', or 'above' / 'below' for a case stated as a bound)."""
    try:
        obtained, error = case.obtained(), None
        passed = case_passes(case, obtained)
    except Exception as exc:  # a failing case is a result, not a crash
        obtained, error, passed = None, f"{type(exc).__name__}: {exc}", False
    return {"name": case.name, "source": case.source, "expected": case.expected, "obtained": obtained,
            "tolerance": case.tolerance, "passed": passed, "error": error, "bound": getattr(case, "bound", "about")}


def _all_cases():
    from .piedboeuf import cases as piedboeuf_cases  # 001 sec. 4

    return _cases() + piedboeuf_cases()


CASES = _all_cases()
