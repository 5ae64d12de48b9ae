"""Measured samples from a CSV file, read in streamed blocks into NumPy arrays (pyarrow's CSV
reader), with limits on the file's size, its rows and the length of one line.

Why streamed: a measurement file of a million rows is 70 MB of floats but near a gigabyte as
Python lists of strings; the blocks go straight into float arrays. Why limits: a hostile or broken
file (a line of megabytes, billions of rows) is refused with the limit named instead of filling
memory. A file that does not parse is scanned once more, line by line, only to name the first
bad row in the error.
"""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from ..extras import require
from ..model import limits


def _header(path, fh):
    line = fh.readline(limits.MAX_CSV_LINE + 1)
    if len(line) > limits.MAX_CSV_LINE:
        raise ValueError(f"{path}: the header line is longer than {limits.MAX_CSV_LINE} bytes; expected t, q1.., tau1..")
    text = line.decode("utf-8-sig", errors="replace").strip()
    if not text:
        raise ValueError(f"{path}: empty file; expected a header row t, q1.., tau1.. and one row per sample")
    header = [h.strip() for h in next(csv.reader([text]))]
    if len(header) > limits.MAX_CSV_COLUMNS:
        raise ValueError(f"{path}: {len(header):,} columns; a measurement file may have at most "
                         f"{limits.MAX_CSV_COLUMNS:,} (t, q1.., tau1.., tip_x..: two per joint and a few more)")
    seen = {}
    for k, h in enumerate(header):
        if h in seen:
            raise ValueError(f"{path}: column '{h}' appears twice (columns {seen[h] + 1} and {k + 1}); "
                             "each column must have its own name")
        seen[h] = k
    return header


def _first_problem(path, ncols):
    """The first unreadable row, found by a line-by-line scan (error path only)."""
    with open(path, newline="", encoding="utf-8-sig", errors="replace") as fh:
        fh.readline()
        for r, line in enumerate(fh, start=2):
            if len(line) > limits.MAX_CSV_LINE:
                return f"row {r} is longer than {limits.MAX_CSV_LINE} bytes (a field that size is not a sample)"
            row = next(csv.reader([line]), [])
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != ncols:
                return f"row {r} has {len(row)} values for {ncols} columns"
            for cell in row:
                try:
                    float(cell)
                except ValueError:
                    return f"row {r}: {cell.strip()[:40]!r} is not a number"
    return None


def read_table(path) -> tuple[list, np.ndarray]:
    """(header, data (rows, columns)) of a numeric CSV file with a header row; one-line ValueError
    naming the file and the row or limit otherwise."""
    pa = require("pyarrow", "reading measurement CSV files", extra="identify")
    import pyarrow.csv as pcsv

    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the file ({exc.strerror or exc})") from None
    if size > limits.MAX_CSV_BYTES:
        raise ValueError(f"{path}: {size / 1e9:.3g} GB is more than the {limits.MAX_CSV_BYTES / 1e9:g} GB a "
                         "measurement file may have; cut the record or resample it")
    with open(path, "rb") as fh:
        header = _header(path, fh)
    names = [f"c{k}" for k in range(len(header))]
    read = pcsv.ReadOptions(skip_rows=1, column_names=names, block_size=limits.MAX_CSV_LINE)
    convert = pcsv.ConvertOptions(column_types={c: pa.float64() for c in names})
    blocks, rows = [], 0
    try:
        with pcsv.open_csv(path, read_options=read, convert_options=convert) as reader:
            for batch in reader:
                rows += batch.num_rows
                if rows > limits.MAX_MEASUREMENT_ROWS:
                    raise ValueError(f"{path}: more than {limits.MAX_MEASUREMENT_ROWS:,} rows; a measurement file "
                                     "may have at most that many samples - cut or resample the record")
                if rows * len(names) > limits.MAX_MEASUREMENT_VALUES:
                    raise ValueError(f"{path}: more than {limits.MAX_MEASUREMENT_VALUES:.3g} values ({rows:,} rows of "
                                     f"{len(names)} columns so far); cut or resample the record, or drop columns")
                blocks.append(np.column_stack([batch.column(k).to_numpy(zero_copy_only=False)
                                               for k in range(len(names))]) if batch.num_rows else
                              np.zeros((0, len(names))))
    except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeDecodeError) as exc:
        problem = _first_problem(path, len(header)) or f"unreadable ({str(exc).splitlines()[0][:80]})"
        raise ValueError(f"{path}: {problem}") from None
    data = np.concatenate(blocks) if blocks else np.zeros((0, len(header)))
    if np.isnan(data).any():  # an empty cell reads as null
        r = int(np.flatnonzero(np.isnan(data).any(axis=1))[0])
        c = int(np.flatnonzero(np.isnan(data[r]))[0])
        raise ValueError(f"{path}: column '{header[c]}' has an empty or NaN value in data row {r + 1}")
    return header, data


def read_measurements(path, robot) -> dict:
    """Measured samples from a CSV file with a header row: ``t``, the joint positions and torques
    (``q1..q<n>`` and ``tau1..tau<n>``, or the joints' coordinate names and ``tau_<name>`` as a
    simulation's CSV writes them), optionally ``tip_x, tip_y, tip_z`` (tip offsets, for beam
    parameters). Returns {"t", "q", "tau", "tip" (or None)}; one-line ValueError naming the file otherwise."""
    header, data = read_table(path)
    n = robot.n_joints
    joints = list(robot.coordinate_names[:n])
    q_cols = [f"q{i + 1}" if f"q{i + 1}" in header or joints[i] not in header else joints[i] for i in range(n)]
    tau_cols = [f"tau{i + 1}" if f"tau{i + 1}" in header or f"tau_{joints[i]}" not in header else f"tau_{joints[i]}"
                for i in range(n)]
    need = ["t"] + q_cols + tau_cols
    missing = [c for c in need if c not in header]
    if missing:
        raise ValueError(f"{path}: missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)} (the header "
                         f"must name t, q1..q{n}, tau1..tau{n} (or the joints' names and tau_<name>); optional "
                         "tip_x, tip_y, tip_z)")
    col = {h: data[:, k] for k, h in enumerate(header)}
    tip = None
    if all(f"tip_{a}" in col for a in "xyz"):
        tip = np.stack([col[f"tip_{a}"] for a in "xyz"], axis=1)
    return {"t": col["t"], "q": np.stack([col[c] for c in q_cols], axis=1),
            "tau": np.stack([col[c] for c in tau_cols], axis=1), "tip": tip}
