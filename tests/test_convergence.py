"""Modal convergence (issue 27): the study and its finite-element reference against the
closed-form frequencies of a clamped-free beam, the modal and finite-element refinements of
flx_three_link meeting, the documents' one-mode flx_three_link (42 % high) and its notice, no
notice for a model with enough modes, every expected frequency from closed forms or the
independent planar beam oracle (tests/beam_oracle.py); and the RK4 step check against what a simulation does at
that step."""
from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import flexman as fm
from flexman import cli
from flexman.analysis.modal_convergence import ConvergenceNotice, convergence, convergence_notice, with_count
from flexman.discretize import exact_frequencies
from flexman.simulate.stability import StepWarning, largest_stable_step
from beam_oracle import frequencies as planar

# The oracle (tests/beam_oracle.py, independent of flexman): flx_three_link stretched out is two
# 4 m tubes end to end; in the plane of joints 2 and 3 both joints pinned, out of it joint 1
# pinned with the rotor's 0.2 kg m^2; locked, one 8 m clamped-free beam in both planes. Its
# frequencies on n clamped-free modes per link (the model's Rayleigh-Ritz) and on 32 Hermite
# elements per link (converged). flx_flexible_pendulum: one tube pinned, hanging under gravity.
TUBE = (4.0, 2.73875, 29520.0)


def three_link(**basis):
    """(free, locked) frequencies of flx_three_link at rest, ascending."""
    free = np.sort(np.r_[planar([TUBE, TUBE], [True, True], **basis),
                         planar([TUBE, TUBE], [True, False], root_inertia=0.2, **basis)])
    locked = planar([TUBE, TUBE], [False, False], **basis)
    return free, np.sort(np.r_[locked, locked])


def pendulum_free(**basis):
    """flx_flexible_pendulum's free frequencies: the swing and in-plane bending (pinned, under
    gravity), the out-of-plane bending (clamped-free: the joint does not turn that way)."""
    return np.sort(np.r_[planar([TUBE], [True], gravity=9.81, **basis), planar([TUBE], [False], **basis)])


def _cantilever(shapes="finite_elements"):
    """A 1 m steel-like beam on a joint; joints locked, its frequencies are a clamped-free beam's."""
    modes = {"y": 1, "z": 0, "torsion": 0}
    beam = fm.Beam(length=1.0, mass_per_length=2.0, EI=(50.0, 50.0), modes=modes, shapes=shapes,
                   elements=1 if shapes == "finite_elements" else 0)
    return fm.Robot(links=[fm.Link(a=1.0, beam=beam, hub=fm.RigidBody(1.0, [0, 0, 0], [1, 1, 1]))],
                    name="cantilever", gravity=[0, 0, 0])


def test_finite_elements_converge_from_above_to_the_closed_form():
    study = convergence(_cantilever(), modes=(1, 2, 3, 5))
    exact = exact_frequencies(2, 50.0, 2.0, 1.0)  # Euler-Bernoulli clamped-free, two lowest
    locked = study.locked[:, :2]
    assert np.all(np.diff(locked[:, 0]) <= 1e-9 * exact[0])  # Rayleigh-Ritz: never below, falling
    assert np.all(locked[:, 0] >= exact[0] * (1 - 1e-9))
    np.testing.assert_allclose(locked[-1], exact, rtol=2e-3)
    # the reference is converged: the closed form within 0.05 %, and the rows' change is against it
    np.testing.assert_allclose(study.reference["locked"][:2], exact, rtol=5e-4)
    np.testing.assert_allclose(study.locked_change[:, :2], locked / study.reference["locked"][:2] - 1, rtol=1e-9, atol=1e-15)
    assert study.reference_method.startswith("finite elements, ")


def test_first_clamped_free_frequency_of_a_beam_on_a_locked_hub():
    """Euler-Bernoulli clamped-free beam: w1 = (beta1 L)^2 sqrt(EI / (rho A L^4)), beta1 L = 1.8751041
    (root of cos x cosh x = -1, Blevins, Formulas for natural frequency and mode shape, table 8-1).
    With the hub locked, clamped-free modes are this beam's own modes: one gives w1; the reference
    (finite elements) and every modal count agree with it."""
    from scipy.optimize import brentq

    x1 = brentq(lambda x: np.cos(x) * np.cosh(x) + 1.0, 1.5, 2.5)
    assert x1 == pytest.approx(1.8751041, abs=1e-7)
    w1 = x1 ** 2 * np.sqrt(50.0 / (2.0 * 1.0 ** 4))
    study = convergence(_cantilever("clamped_free"), modes=(1, 3))
    np.testing.assert_allclose(study.locked[:, 0], w1, rtol=1e-6)
    assert study.reference["locked"][0] == pytest.approx(w1, rel=5e-4)


def test_modal_and_finite_element_refinements_of_three_link_meet():
    """flx_three_link's lowest free frequency: clamped-free modes approach from above with an error
    that halves as the modes double (10 -> 20 per direction: 25.51, 25.23 rad/s), so their
    Richardson extrapolation 2 w(20) - w(10) and the finite-element reference are the same value
    within 0.5 %."""
    robot = fm.examples.load("flx_three_link")
    study = convergence(robot, modes=(10, 20))
    ref = study.reference["free"][0]
    w10, w20 = study.free[:, 0]
    assert w10 > w20 > ref
    assert (w10 - ref) / (w20 - ref) == pytest.approx(2.0, abs=0.2)  # first order in 1/modes
    assert 2 * w20 - w10 == pytest.approx(ref, rel=5e-3)


def test_three_link_one_mode_is_42_percent_high_and_the_notice_fires_once(monkeypatch):
    """The rows (1 and 5 clamped-free modes) equal the oracle's Rayleigh-Ritz on the same modes;
    the reference (finite elements) equals the oracle's 32 Hermite elements per link (24.96 rad/s
    free, 35.74 locked: the 8 m clamped-free beam's second mode, (4.694/8)^2 sqrt(EI/rhoA)); one
    mode is then 42.3 % high."""
    monkeypatch.delenv("FLEXMAN_NO_CONVERGENCE_NOTICE", raising=False)
    robot = fm.examples.load("flx_three_link")
    study = fm.analysis.convergence(robot, q=None, modes=(1, 2, 3, 5), quantity="frequencies")
    (free1, locked1), (free5, locked5), (free_ref, locked_ref) = (three_link(modes=1), three_link(modes=5),
                                                                  three_link(elements=32))
    assert study.counts == [1, 2, 3, 5]
    np.testing.assert_allclose([study.free[0, 0], study.free[-1, 0]], [free1[0], free5[0]], rtol=1e-8)
    np.testing.assert_allclose([study.locked[0, 2], study.locked[-1, 2]], [locked1[2], locked5[2]], rtol=1e-8)
    assert study.reference["free"][0] == pytest.approx(free_ref[0], rel=1e-5)
    assert study.reference["locked"][2] == pytest.approx(locked_ref[2], rel=1e-5)
    beta2 = planar([(8.0, 2.73875, 29520.0)], [False], modes=2)[1]  # the closed form itself, 8 m
    assert locked_ref[2] == pytest.approx(beta2, rel=1e-6)
    high = free1[0] / free_ref[0] - 1
    np.testing.assert_allclose(study.free_change[[0, -1], 0], [high, free5[0] / free_ref[0] - 1], atol=1e-4)
    assert study.enough == 5 and f"{100 * high:.1f}%" in study.table() and "reference" in study.table()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = convergence_notice(robot)
        second = convergence_notice(robot)  # once per model
    assert [w.category for w in caught] == [ConvergenceNotice]
    assert "flx_three_link" in first and "upper (1), fore (1) need 5 modes" in first and second == ""
    assert f"{free1[0]:.2f} rad/s against {free_ref[0]:.2f} converged" in first


def test_no_notice_with_enough_modes_and_silenceable(monkeypatch):
    monkeypatch.delenv("FLEXMAN_NO_CONVERGENCE_NOTICE", raising=False)
    robot = fm.examples.load("flx_flexible_pendulum")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceNotice)  # a notice here would fail the test
        assert convergence_notice(with_count(robot, 3)) == ""
        monkeypatch.setenv("FLEXMAN_NO_CONVERGENCE_NOTICE", "1")
        assert convergence_notice(robot) == ""
    monkeypatch.delenv("FLEXMAN_NO_CONVERGENCE_NOTICE")
    one, ref = pendulum_free(modes=1)[2], pendulum_free(elements=32)[2]  # in-plane bending: 132.9 and 99.91
    with pytest.warns(ConvergenceNotice) as caught:
        convergence_notice(robot)
    import re

    pct, said_one, said_ref = re.search(r"up to (\d+) % from converged .*: ([\d.]+) rad/s against ([\d.]+) converged",
                                        str(caught[0].message)).groups()
    assert int(pct) == round(100 * (one / ref - 1))
    assert float(said_one) == pytest.approx(one, abs=0.05) and float(said_ref) == pytest.approx(ref, abs=0.01)


def test_model_without_beams_is_one_sentence(capsys):
    with pytest.raises(ValueError, match=r"^puma560: the model has no flexible beams"):
        convergence(fm.examples.load("puma560"))
    code = cli.main(["frequencies", "puma560", "--convergence"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "no flexible beams" in err


def test_cli_convergence_json_and_plot(tmp_path, capsys):
    png = tmp_path / "conv.png"
    code = cli.main(["frequencies", "flx_flexible_pendulum", "--convergence", "--modes", "1", "3", "--plot", str(png),
                     "--json"])
    out = capsys.readouterr().out
    data = json.loads(out)
    assert code == 0 and data["counts"] == [1, 3] and png.stat().st_size > 1000
    np.testing.assert_allclose([data["free"][0][2], data["free"][1][2]],
                               [pendulum_free(modes=1)[2], pendulum_free(modes=3)[2]], rtol=1e-6)


def test_rk4_step_above_the_highest_mode_is_flagged_before_the_run():
    """The named step is the boundary a simulation shows: 2 % above it the run blows up, 2 %
    below it stays bounded."""
    beam = fm.Beam(length=0.5, mass_per_length=2.0, EI=(2e4, 2e4), modes={"y": 2, "z": 0, "torsion": 0})
    robot = fm.Robot(links=[fm.Link(a=0.5, hub=fm.RigidBody(0.5, [0, 0, 0], [1e-3] * 3), beam=beam)],
                     gravity=[0, -9.81, 0])
    h = largest_stable_step(robot)
    q0 = np.zeros(robot.nq)
    q0[1] = 1e-3
    with pytest.warns(StepWarning, match=rf"largest stable step|needs dt <= 2\*sqrt\(2\)/w = {h:.3g} s"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            res = fm.simulate(robot, 0.1, dt=1.02 * h, q0=q0, method="rk4", progress=False, backend="numeric")
    assert res.diverged
    with warnings.catch_warnings():
        warnings.simplefilter("error", StepWarning)
        res = fm.simulate(robot, 0.1, dt=0.98 * h, q0=q0, method="rk4", progress=False, backend="numeric")
    assert not res.diverged and np.abs(res.q[:, 1:]).max() < 1e-2
    assert largest_stable_step(fm.examples.load("puma560")) == np.inf  # rigid: no elastic mode


def test_validate_keeps_the_documents_models_and_adds_converged_values(monkeypatch, capsys):
    from flexman.cli import validate

    monkeypatch.setattr(validate, "validation_cases", lambda: [])  # the convergence rows alone
    assert cli.main(["validate", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["convergence"]
    three = {r["frequency"]: r for r in rows if r["model"] == "flx_three_link"}
    free1, ref = three_link(modes=1)[0][0], three_link(elements=32)[0][0]
    assert three["joints free, mode 1"]["document_model"] == pytest.approx(free1, rel=1e-6)
    assert three["joints free, mode 1"]["converged"] == pytest.approx(ref, rel=1e-4)
    pendulum = {r["frequency"]: r for r in rows if r["model"] == "flx_flexible_pendulum"}
    change = pendulum_free(modes=1)[2] / pendulum_free(elements=32)[2] - 1
    assert pendulum["joints free, mode 3"]["change"] == pytest.approx(change, abs=1e-3)


def test_report_shows_the_convergence_table():
    from flexman.viz.summary import convergence_html

    page = convergence_html(fm.examples.load("flx_three_link"))
    high = 100 * (three_link(modes=1)[0][0] / three_link(elements=32)[0][0] - 1)
    assert "Modal convergence" in page and f"+{high:.1f} %" in page and "need 5 modes" in page and "finite elements" in page
    assert "taken as converged" in convergence_html(with_count(fm.examples.load("flx_flexible_pendulum"), 5))


def test_statics_reports_how_its_newton_iteration_ended():
    """The stop rule of statics' Newton iteration is reported with the result: the number of steps
    and the unbalanced generalized force, tiny against the elastic forces it balances."""
    robot = fm.examples.load("flx_three_link")
    res = fm.analysis.statics(robot, [0.0, 0.3, -0.2], wrench=[0, 0, -10, 0, 0, 0])
    elastic = np.abs(res.stiffness @ res.q_f).max()
    assert 1 <= res.newton_steps <= 10 and res.residual <= 1e-9 * elastic


def test_the_notice_quotes_the_frequencies_at_the_pose_given(monkeypatch):
    """Issue 35: the notice of `flexman frequencies --q ...` is made at that pose, not at q = 0."""
    import re

    monkeypatch.delenv("FLEXMAN_NO_CONVERGENCE_NOTICE", raising=False)
    robot = fm.examples.load("flx_three_link")
    pose = np.array([0.0, 1.2, -1.4])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceNotice)
        text = convergence_notice(robot, np.r_[pose, np.zeros(robot.nf)])
    quoted = float(re.search(r": ([\d.]+) rad/s against", text).group(1))
    at_pose = fm.analysis.convergence(robot, q=pose, modes=(1, 5))
    at_zero = fm.analysis.convergence(robot, q=None, modes=(1, 5))
    mine = np.r_[at_pose.own["free"], at_pose.own["locked"]]
    zero = np.r_[at_zero.own["free"], at_zero.own["locked"]]
    assert np.min(np.abs(mine - quoted)) < 5e-4 * quoted  # one of this pose's own frequencies (4 digits)
    assert np.min(np.abs(zero - quoted)) > 1e-3 * quoted  # and none of the zero pose's
