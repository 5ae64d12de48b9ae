"""004 Table 2: inertia-matrix operation counts of flexible RR, RRR, RP, RRP arms, paper vs ours.

Run: .venv/bin/python bench/table2.py [--json]
Model choices (planar RR / RP, spatial RRR / RRP, two modes or two elements per flexible link
and direction, Table 3 numbers, no payload) are documented in flexman.symbolic.table2.

Columns: the paper's multiplications / additions (004 Table 2, "present study"; the RR+payload
row is quoted in 004 sec. 4.4); ours = derive(arm, formulation).op_count("mass_matrix") on the
standard-DH arm (trig calls counted separately, as "fn"); frame 1 = the Book recursion traced
in link 1's frame (M does not depend on q1), best of standard / modified DH placement;
trunc 1 / trunc 0 = derive(arm, "book", truncate=k): M kept to degree k in the flexible
coordinates (small-deflection closed form; k = 0 is M at zero deflection), standard DH.
"""
import json
import sys

from flexman.symbolic.table2 import table2_rows


def mark(ours, paper):
    return "<=" if ours <= paper else "> "


def main():
    rows = table2_rows()
    if "--json" in sys.argv:
        print(json.dumps(rows, indent=1))
        return
    head = (f"{'arm':11s} {'model':5s} {'formulation':11s} {'nq':>3s}  {'paper mul/add':>13s}  "
            f"{'ours mul/add (fn)':>19s}  {'frame 1 mul/add':>15s} {'(DH)':10s} {'trunc 1':>11s} {'trunc 0':>11s}")
    print("004 Table 2, inertia matrix: paper vs flexman (<= : at or below the paper)")
    print(head)
    print("-" * len(head))
    for r in rows:
        model = "AM" if r["discretization"] == "assumed_modes" else "FEM"
        ours = f"{r['ours_mul']}{mark(r['ours_mul'], r['paper_mul'])}/{r['ours_add']}{mark(r['ours_add'], r['paper_add'])} ({r['ours_fn']})"
        f1 = f"{r['frame1_mul']}{mark(r['frame1_mul'], r['paper_mul'])}/{r['frame1_add']}{mark(r['frame1_add'], r['paper_add'])}"
        tr = [f"{r[f'trunc{k}_mul']}{mark(r[f'trunc{k}_mul'], r['paper_mul'])}/"
              f"{r[f'trunc{k}_add']}{mark(r[f'trunc{k}_add'], r['paper_add'])}" for k in (1, 0)]
        print(f"{r['arm']:11s} {model:5s} {r['formulation']:11s} {r['nq']:3d}  "
              f"{r['paper_mul']:>6d}/{r['paper_add']:<6d}  {ours:>19s}  {f1:>15s} {'(' + r['frame1_dh'] + ')':10s} "
              f"{tr[0]:>11s} {tr[1]:>11s}")
    print("\nlagrange is listed where it traces the arm itself (RRR falls back to Book's recursion;"
          " sliding beams are not supported by it).")
    print("trunc k: M exact to degree k in the flexible coordinates only (004's small-deflection closed form"
          " is read as k = 1); the exact model's M has degree up to 4 in them.")


if __name__ == "__main__":
    main()
