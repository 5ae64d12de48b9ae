"""Modal convergence (issue 27): the study and its finite-element reference against the
closed-form frequencies of a clamped-free beam, the modal and finite-element refinements of
flx_three_link meeting, the documents' one-mode flx_three_link (42 % high) and its notice, no
notice for a model with enough modes; and the RK4 step check against what a simulation does at
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
    """The rows (1 and 5 clamped-free modes: 35.5 and 26.1 rad/s) are the model's; the converged
    lowest free frequency, 24.96 rad/s, is what finite elements give at 16 and 32 per beam (24.9592
    both, to 1e-6) and the modal refinement approaches from above (25.51 at 10 modes per direction);
    1 mode is then 42.3 % high, 5 modes 4.6 %."""
    monkeypatch.delenv("FLEXMAN_NO_CONVERGENCE_NOTICE", raising=False)
    robot = fm.examples.load("flx_three_link")
    study = fm.analysis.convergence(robot, q=None, modes=(1, 2, 3, 5), quantity="frequencies")
    assert study.counts == [1, 2, 3, 5]
    assert study.free[0, 0] == pytest.approx(35.5, abs=0.05) and study.free[-1, 0] == pytest.approx(26.1, abs=0.05)
    assert study.reference["free"][0] == pytest.approx(24.96, abs=0.01)
    assert study.free_change[0, 0] == pytest.approx(35.51 / 24.96 - 1, abs=0.002)
    assert study.free_change[-1, 0] == pytest.approx(26.12 / 24.96 - 1, abs=0.002)
    assert study.locked[0, 2] == pytest.approx(47.2, abs=0.05) and study.locked[-1, 2] == pytest.approx(37.3, abs=0.05)
    assert study.reference["locked"][2] == pytest.approx(35.74, abs=0.01)  # finite elements, 16 and 32 per beam
    assert study.enough == 5 and "42.3%" in study.table() and "reference" in study.table()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = convergence_notice(robot)
        second = convergence_notice(robot)  # once per model
    assert [w.category for w in caught] == [ConvergenceNotice]
    assert "flx_three_link" in first and "upper (1), fore (1) need 5 modes" in first and second == ""
    assert "35.51 rad/s against 24.96 converged" in first


def test_no_notice_with_enough_modes_and_silenceable(monkeypatch):
    monkeypatch.delenv("FLEXMAN_NO_CONVERGENCE_NOTICE", raising=False)
    robot = fm.examples.load("flx_flexible_pendulum")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceNotice)  # a notice here would fail the test
        assert convergence_notice(with_count(robot, 3)) == ""
        monkeypatch.setenv("FLEXMAN_NO_CONVERGENCE_NOTICE", "1")
        assert convergence_notice(robot) == ""
    monkeypatch.delenv("FLEXMAN_NO_CONVERGENCE_NOTICE")
    with pytest.warns(ConvergenceNotice, match=r"33 % from converged .*132.9 rad/s against 99.92"):
        convergence_notice(robot)


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
    assert data["free"][0][2] == pytest.approx(132.9, abs=0.05) and data["free"][1][2] == pytest.approx(99.9, abs=0.1)


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
            res = fm.simulate(robot, 0.1, dt=1.02 * h, q0=q0, progress=False, backend="numeric")
    assert res.diverged
    with warnings.catch_warnings():
        warnings.simplefilter("error", StepWarning)
        res = fm.simulate(robot, 0.1, dt=0.98 * h, q0=q0, progress=False, backend="numeric")
    assert not res.diverged and np.abs(res.q[:, 1:]).max() < 1e-2
    assert largest_stable_step(fm.examples.load("puma560")) == np.inf  # rigid: no elastic mode


def test_validate_keeps_the_documents_models_and_adds_converged_values(monkeypatch, capsys):
    from flexman.cli import validate

    monkeypatch.setattr(validate, "validation_cases", lambda: [])  # the convergence rows alone
    assert cli.main(["validate", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["convergence"]
    three = {r["frequency"]: r for r in rows if r["model"] == "flx_three_link"}
    assert three["joints free, mode 1"]["document_model"] == pytest.approx(35.5, abs=0.05)
    assert three["joints free, mode 1"]["converged"] == pytest.approx(24.96, abs=0.01)  # finite elements, see above
    pendulum = {r["frequency"]: r for r in rows if r["model"] == "flx_flexible_pendulum"}
    assert pendulum["joints free, mode 3"]["change"] == pytest.approx(0.33, abs=0.005)


def test_report_shows_the_convergence_table():
    from flexman.viz.summary import convergence_html

    page = convergence_html(fm.examples.load("flx_three_link"))
    assert "Modal convergence" in page and "+42.3 %" in page and "need 5 modes" in page and "finite elements" in page
    assert "taken as converged" in convergence_html(with_count(fm.examples.load("flx_flexible_pendulum"), 5))


def test_statics_reports_how_its_newton_iteration_ended():
    """The stop rule of statics' Newton iteration is reported with the result: the number of steps
    and the unbalanced generalized force, tiny against the elastic forces it balances."""
    robot = fm.examples.load("flx_three_link")
    res = fm.analysis.statics(robot, [0.0, 0.3, -0.2], wrench=[0, 0, -10, 0, 0, 0])
    elastic = np.abs(res.stiffness @ res.q_f).max()
    assert 1 <= res.newton_steps <= 10 and res.residual <= 1e-9 * elastic
