"""Identification under hostile input (issue 26): data that cannot support the fit, filter
settings the data cannot carry, and CSV files that are broken or huge. Each is one line naming
the field and the fix (ValueError in Python; exit 2 and 'flexman: error:' on the command line)."""
from __future__ import annotations

import numpy as np
import pytest

import flexman as fm
from flexman.analysis import measurements

from test_cli_design import _measurements, _run, _write_csv


@pytest.fixture(scope="module")
def arm():
    return fm.examples.load("dynaman_2r")


@pytest.fixture(scope="module")
def data(arm):
    return _measurements(arm)


def _one_line(exc):
    text = str(exc.value)
    assert "\n" not in text and len(text) < 400, text
    return text


@pytest.mark.parametrize("change,pattern", [
    (lambda t, q, tau: (t, q, np.column_stack([tau[:, 0], np.zeros(len(t))])),
     r"^tau2: the torque channel is constant \(0\) over the whole record - a dead sensor"),
    (lambda t, q, tau: (t[:30], q[:30], tau[:30]),
     r"^data: 30 samples for \d+ base parameters; identification needs at least 10 per parameter"),
    (lambda t, q, tau: (t * 1e12, q, tau),  # time written in picoseconds
     r"^t: samples are 2e\+09 s apart .* t must be in seconds .* ps"),
])
def test_data_that_cannot_support_the_fit(arm, data, change, pattern):
    with pytest.raises(ValueError, match=pattern) as exc:
        fm.identify(arm, *change(*data))
    _one_line(exc)


@pytest.mark.parametrize("options,pattern", [
    ({"trim": -5}, r"^trim: samples dropped at each end must be a whole number >= 0 \(got -5\)"),
    ({"cutoff": 600.0}, r"^cutoff: must lie between 0 and the Nyquist frequency 250 Hz of the data \(got 600 Hz\)"),
    ({"cutoff": 0.5}, r"^cutoff: 0.5 Hz needs at least 16 s of data .* the record is 3 s - record longer or raise"),
    ({"order": 40}, r"^order: the Butterworth filter order must be an integer from 1 to 10 \(got 40\)"),
    ({"cutoff": 5.0, "order": 10}, None),  # a high order at a low cutoff: stable (second-order sections)
])
def test_filter_settings(arm, data, options, pattern):
    if pattern is None:
        ident = fm.identify(arm, *data, **options)
        assert np.all(np.isfinite(ident.values)) and ident.cutoff == 5.0 and not ident.cutoff_from_data
        return
    with pytest.raises(ValueError, match=pattern) as exc:
        fm.identify(arm, *data, **options)
    _one_line(exc)


def test_csv_hostile_files(tmp_path, capsys, data):
    t, q, tau = data
    cases = {}
    cases["dup.csv"] = (_write_csv(tmp_path / "dup.csv", ["t", "q1", "q2", "tau1", "tau2", "q1"],
                             np.column_stack([t, q, tau, q[:, 0]])), r"column 'q1' appears twice \(columns 2 and 6\)")
    huge = tmp_path / "huge.csv"
    huge.write_text("t,q1,q2,tau1,tau2\n0,1,2,3," + "9" * (3 << 20) + "\n")
    cases["huge.csv"] = (huge, r"row 2 is longer than 1048576 bytes")
    text = tmp_path / "text.csv"
    text.write_text("t,q1,q2,tau1,tau2\n0,1,2,3,4\n0.1,1,2,x,4\n")
    cases["text.csv"] = (text, r"row 3: 'x' is not a number")
    short = tmp_path / "short.csv"
    short.write_text("t,q1,q2,tau1,tau2\n0,1,2,3,4\n0.1,1,2,3\n")
    cases["short.csv"] = (short, r"row 3 has 4 values for 5 columns")
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    cases["empty.csv"] = (empty, r"empty file")
    for name, (path, pattern) in cases.items():
        code, _, err = _run(capsys, "identify", "dynaman_2r", str(path))
        assert code == 2, (name, err)
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, (name, err)
        assert err.startswith("flexman: error: ") and name in err, (name, err)
        import re

        assert re.search(pattern, err), (name, err)


def test_csv_row_limit_is_named(tmp_path, monkeypatch, data):
    t, q, tau = data
    path = _write_csv(tmp_path / "d.csv", ["t", "q1", "q2", "tau1", "tau2"], np.column_stack([t, q, tau]))
    monkeypatch.setattr(measurements.limits, "MAX_MEASUREMENT_ROWS", 100)
    with pytest.raises(ValueError, match=r"more than 100 rows; a measurement file may have at most that many"):
        measurements.read_table(path)


def test_csv_is_read_into_float_arrays(tmp_path, data):
    """The streamed reader returns the numbers written (17 significant digits round-trip) as one
    float array, columns in the header's order."""
    t, q, tau = data
    rows = np.column_stack([t, q, tau])
    path = _write_csv(tmp_path / "d.csv", ["t", "q1", "q2", "tau1", "tau2"], rows)
    header, arr = measurements.read_table(path)
    assert header == ["t", "q1", "q2", "tau1", "tau2"] and arr.dtype == float
    np.testing.assert_array_equal(arr, rows)


def test_cli_identify_reports_cutoff_and_held_out_check(tmp_path, capsys, data):
    t, q, tau = data
    path = _write_csv(tmp_path / "d.csv", ["t", "q1", "q2", "tau1", "tau2"], np.column_stack([t, q, tau]))
    code, out, err = _run(capsys, "identify", "dynaman_2r", str(path), "--json")
    assert code == 0, err
    import json

    result = json.loads(out)
    assert result["cutoff_from_data"] and 0 < result["cutoff_hz"] < 125
    assert len(result["validation"]["rms"]) == 2 and "segments" in result["std_method"]
    code, out, err = _run(capsys, "identify", "dynaman_2r", str(path), "--validation", str(path), "--cutoff", "20")
    assert code == 0 and "filter cutoff: 20 Hz (given)" in out and "held-out check (a separate record" in out
