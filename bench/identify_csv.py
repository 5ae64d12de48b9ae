"""Reading a measurement CSV of a million rows (t, q1..q4, tau1..tau4) with flexman's streamed
reader: time and peak memory of the reading process (docs/identification.md).

Run: python bench/identify_csv.py [rows]
"""
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

READ = """
import resource, sys, time
import flexman as fm
from flexman.analysis.measurements import read_measurements
robot = fm.examples.load("saha_3link")
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
data = read_measurements(sys.argv[1], robot)
took = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(f"{len(data['t'])} rows in {took:.2f} s; peak memory {peak / 1024:.0f} MB "
      f"(+{(peak - base) / 1024:.0f} MB over the process before reading)")
"""


def main(rows=1_000_000):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "data.csv"
        rng = np.random.default_rng(0)
        arr = np.column_stack([np.arange(rows) * 1e-3, rng.standard_normal((rows, 6))])
        np.savetxt(path, arr, delimiter=",", fmt="%.9g", header="t,q1,q2,q3,tau1,tau2,tau3", comments="")
        print(f"file: {path.stat().st_size / 1e6:.0f} MB, {rows} rows")
        subprocess.run([sys.executable, "-c", READ, str(path)], check=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
