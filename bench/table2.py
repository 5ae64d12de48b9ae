"""004 Table 2: inertia-matrix operation counts of flexible RR, RRR, RP, RRP arms, paper vs ours.

Run: .venv/bin/python bench/table2.py [--json]
Model choices (planar RR / RP, spatial RRR / RRP, two modes or two elements per flexible link
and direction, Table 3 numbers, no payload) are documented in flexman.literature.table2.

Columns: the paper's multiplications / additions (004 Table 2, "present study"; the RR+payload
row is quoted in 004 sec. 4.4); traced = the formulation's program as traced (standard DH);
ours = derive(arm, formulation).op_count("mass_matrix"): M also traced in link 1's frame and
put in polynomial normal form (cos^2 = 1 - sin^2, like terms collected, roundoff zeros dropped;
re-emitted by Horner's rule, with recurring sums and products computed once), the cheapest kept, best of the standard / modified DH placement (trig calls counted
separately, as "fn"); trunc 1 / trunc 0 = derive(arm, "book", truncate=k): M kept to degree k
in the flexible coordinates (small-deflection form; k = 0 is M at zero deflection), standard DH.
"""
import json
import sys

from flexman.literature.table2 import table2_rows


def mark(ours, paper):
    return "<=" if ours <= paper else "> "


def main():
    rows = table2_rows()
    if "--json" in sys.argv:
        print(json.dumps(rows, indent=1))
        return
    head = (f"{'arm':11s} {'model':5s} {'formulation':11s} {'nq':>3s}  {'paper mul/add':>13s}  {'traced':>9s}  "
            f"{'ours mul/add (fn)':>19s} {'(DH)':10s} {'trunc 1':>11s} {'trunc 0':>11s}")
    print("004 Table 2, inertia matrix: paper vs flexman (<= : at or below the paper)")
    print(head)
    print("-" * len(head))
    for r in rows:
        model = "AM" if r["discretization"] == "assumed_modes" else "FEM"
        cell = lambda k: (f"{r[k + '_mul']}{mark(r[k + '_mul'], r['paper_mul'])}/"
                          f"{r[k + '_add']}{mark(r[k + '_add'], r['paper_add'])}")
        print(f"{r['arm']:11s} {model:5s} {r['formulation']:11s} {r['nq']:3d}  "
              f"{r['paper_mul']:>6d}/{r['paper_add']:<6d}  {r['traced_mul']:>4d}/{r['traced_add']:<4d}  "
              f"{cell('ours') + ' (' + str(r['ours_fn']) + ')':>19s} {'(' + r['ours_dh'] + ')':10s} "
              f"{cell('trunc1'):>11s} {cell('trunc0'):>11s}")
    print("\nlagrange is listed where it traces the arm itself (RRR falls back to Book's recursion;"
          " sliding beams are not supported by it).")
    print("trunc k: M exact to degree k in the flexible coordinates only (004's small-deflection closed form"
          " is read as k = 1); the exact model's M has degree up to 4 in them.")


if __name__ == "__main__":
    main()
