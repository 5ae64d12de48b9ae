"""flexman sensitivity and flexman identify: tables, --json, and one-line errors (exit 2, no traceback)."""
from __future__ import annotations

import json

import numpy as np
import pytest

import flexman as fm
from flexman import cli


def _run(capsys, *argv):
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_sensitivity_table_and_json(capsys):
    code, out, err = _run(capsys, "sensitivity", "flx_three_link", "--of", "frequencies", "--wrt", "EI2", "rhoA2",
                          "payload")
    assert code == 0 and "d/dEI2" in out and "d/dpayload" in out and "w7 (rad/s)" in out
    code, out, _ = _run(capsys, "sensitivity", "flx_three_link", "--wrt", "EI2", "payload", "--json")
    data = json.loads(out)
    ref = fm.analysis.sensitivity(fm.examples.load("flx_three_link"), "frequencies", ["EI2", "payload"])
    assert code == 0 and [p["name"] for p in data["parameters"]] == ["EI2", "payload"]
    np.testing.assert_allclose(data["parameters"][0]["derivative"], ref.derivative[0], rtol=1e-12)
    code, out, _ = _run(capsys, "sensitivity", "dynaman_2r", "--of", "inverse_dynamics", "--wrt", "mass2", "a1",
                        "--q", "0.1", "0.2", "--qd", "1", "-1", "--qdd", "0.5", "0", "--json")
    assert code == 0 and json.loads(out)["labels"] == ["tau[q1]", "tau[q2]"]


@pytest.mark.parametrize("argv,pattern", [
    (["sensitivity", "dynaman_2r", "--wrt", "EI2"], r"unknown parameter 'EI2' for dynaman_2r; valid: a1 d1 mass1 "),
    (["sensitivity", "dynaman_2r", "--of", "mass_matrix", "--wrt", "mass1", "--qd", "1", "1"], "--qd/--qdd: only"),
    (["sensitivity", "dynaman_2r", "--of", "energy", "--wrt", "mass1"], "invalid choice"),
])
def test_sensitivity_errors(capsys, argv, pattern):
    import re

    code, out, err = _run(capsys, *argv)
    assert code == 2 and len(err.strip().splitlines()) == 1 and re.search(pattern, err), err
    assert "Traceback" not in err


def _write_csv(path, header, rows):
    path.write_text(",".join(header) + "\n" + "\n".join(",".join(f"{v:.17g}" for v in r) for r in rows) + "\n")
    return path


def _measurements(robot, T=3.0, dt=2e-3):
    """Exact samples of a three-harmonic motion of every joint and the torques it needs."""
    t = np.arange(0, T + dt / 2, dt)
    w = 2 * np.pi * np.array([0.4, 0.9, 1.5])
    amp = np.linspace(0.3, 0.6, robot.n_joints)[:, None] * np.array([1.0, 0.5, 0.3])
    q = (amp * np.sin(w * t[:, None, None])).sum(-1)
    qd = (amp * w * np.cos(w * t[:, None, None])).sum(-1)
    qdd = (-amp * w ** 2 * np.sin(w * t[:, None, None])).sum(-1)
    return t, q, robot.inverse_dynamics(q, qd, qdd)


def test_identify_csv(tmp_path, capsys):
    robot = fm.examples.load("dynaman_2r")
    t, q, tau = _measurements(robot)
    path = _write_csv(tmp_path / "data.csv", ["t", "q1", "q2", "tau1", "tau2"], np.column_stack([t, q, tau]))
    code, out, err = _run(capsys, "identify", "dynaman_2r", str(path), "--json")
    assert code == 0, err
    data = json.loads(out)
    ident = {p["name"]: p["value"] for p in data["parameters"]}
    from flexman.analysis import rigid_regressor as rr

    base = rr.base_parameters(robot)
    true = dict(zip(base.base_names, base.project(rr.standard_parameters(robot))))
    assert set(ident) == set(true)
    for name, value in true.items():  # exact data: only the filter and the differences err
        assert abs(ident[name] - value) < 1e-3 * max(1.0, abs(value)), (name, ident[name], value)
    code, out, _ = _run(capsys, "identify", "dynaman_2r", str(path))
    assert code == 0 and "std error" in out and "not identifiable" in out


def test_identify_csv_errors(tmp_path, capsys):
    robot = fm.examples.load("dynaman_2r")
    t, q, tau = _measurements(robot, T=1.0)
    missing = _write_csv(tmp_path / "missing.csv", ["t", "q1", "q2", "tau1"], np.column_stack([t, q, tau[:, :1]]))
    code, _, err = _run(capsys, "identify", "dynaman_2r", str(missing))
    assert code == 2 and "missing column tau2" in err and len(err.strip().splitlines()) == 1
    t2 = t.copy()
    t2[[10, 11]] = t2[[11, 10]]
    back = _write_csv(tmp_path / "back.csv", ["t", "q1", "q2", "tau1", "tau2"], np.column_stack([t2, q, tau]))
    code, _, err = _run(capsys, "identify", "dynaman_2r", str(back))
    assert code == 2 and "back.csv: t: time must increase" in err and len(err.strip().splitlines()) == 1
    text = tmp_path / "text.csv"
    text.write_text("t,q1,q2,tau1,tau2\n0,1,2,3,x\n")
    code, _, err = _run(capsys, "identify", "dynaman_2r", str(text))
    assert code == 2 and "row 2: 'x' is not a number" in err
    rest = _write_csv(tmp_path / "rest.csv", ["t", "q1", "q2", "tau1", "tau2"],
                      np.column_stack([t, np.zeros_like(q), np.zeros_like(tau)]))
    code, _, err = _run(capsys, "identify", "dynaman_2r", str(rest))
    assert code == 2 and "tau1: the torque channel is constant (0)" in err  # zero torques: a dead sensor
    code, _, err = _run(capsys, "identify", "flx_joint_mass", str(rest), "--parameters", "EI1")
    assert code == 2 and "tip_x" in err


def test_sensitivity_of_the_models_manoeuvre(tmp_path, capsys):
    """--of peak_tip_deflection differentiates the model file's manoeuvre; the same numbers as the
    Python function with that trajectory; a model without one is one error line."""
    from flexman.trajectory import from_spec

    path = tmp_path / "arm.yaml"
    assert cli.main(["examples", "flx_joint_mass", "--copy", str(path)]) == 0
    capsys.readouterr()
    spec = "{type: rest_to_rest, start: 0, end: 0.3, duration: 0.3}"
    path.write_text(path.read_text() + f"manoeuvre: {spec}\n")
    code, out, err = _run(capsys, "sensitivity", str(path), "--of", "peak_tip_deflection", "--wrt", "EI1", "payload",
                          "--t-final", "0.4", "--dt", "2e-3", "--json")
    assert code == 0, err
    robot = fm.load(path)
    ref = fm.analysis.sensitivity(robot, "peak_tip_deflection", ["EI1", "payload"], t_final=0.4, dt=2e-3,
                                  prescribed=from_spec(robot.manoeuvre, 1, "manoeuvre"))
    data = json.loads(out)
    np.testing.assert_allclose([p["derivative"][0] for p in data["parameters"]], ref.derivative[:, 0], rtol=1e-12)
    code, _, err = _run(capsys, "sensitivity", "flx_joint_mass", "--of", "final_tip_error", "--wrt", "EI1",
                        "--t-final", "1")
    assert code == 2 and "has no manoeuvre section" in err and len(err.strip().splitlines()) == 1
