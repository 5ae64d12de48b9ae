"""`flexman derive`, `codegen`, `analyze`, `closure`: the equations and the code made from them."""
from __future__ import annotations

import sys
from pathlib import Path

from .common import FORMULATIONS, UsageError, console, load_model, print_json, subcommand
from ..outputs import output_file, output_folder

OP_TARGETS = ("inverse_dynamics", "mass_matrix", "bias_forces", "forward_dynamics")


def cmd_derive(args) -> int:
    """Derive the equations of motion: print them, compare formulations' operation counts, or
    (no MODEL, --compare) print our counts beside the documents' published ones."""
    if args.model is None:
        if not args.compare:
            raise UsageError("derive: give a MODEL (model file or bundled example name), "
                             "or --compare alone for the document tables")
        return _document_comparison(args)
    from ..symbolic import derive

    robot = load_model(args.model)
    if args.compare:
        return _compare_formulations(robot, args)
    eom = derive(robot, formulation=args.formulation, parameters=args.parameters)
    if args.json:
        print_json({"model": robot.name, "formulation": args.formulation,
                     "op_count": {what: eom.op_count(what) for what in OP_TARGETS}, "text": eom.text()})
        return 0
    print(eom.latex() if args.latex else eom.text())
    return 0


def _compare_formulations(robot, args) -> int:
    """Operation counts of every formulation for one model, side by side."""
    from ..literature.table_4_1 import TABLE_4_1
    from ..symbolic import derive

    rows = []
    for form in FORMULATIONS:
        eom = derive(robot, formulation=form, parameters=args.parameters)
        counts = {what: eom.op_count(what) for what in OP_TARGETS}
        rows.append({"formulation": form, "notes": list(getattr(eom, "notes", [])), "counts": counts})
    if args.json:
        print_json({"model": robot.name, "parameters": args.parameters, "formulations": rows})
        return 0
    from rich.table import Table

    table = Table(title=f"{robot.name}: operations of the generated straight-line code (mul / add / div / fn)")
    table.add_column("formulation")
    for what in OP_TARGETS:
        table.add_column(what.replace("_", " "), justify="right")
    for row in rows:
        cells = [f"{c['mul']} / {c['add']} / {c['div']} / {c['fn']}" for c in row["counts"].values()]
        table.add_row(row["formulation"], *cells)
    con = console()
    con.print(table)
    (rigid_mul, rigid_add), (flexible_mul, flexible_add) = TABLE_4_1["rigid"], TABLE_4_1["one mode per plane"]
    con.print(f"References: 000 Table 4.1 (SYMFLX inverse dynamics, three-link arm): rigid {rigid_mul} mul / "
              f"{rigid_add} add, one mode per plane {flexible_mul} mul / {flexible_add} add; "
              "004 Table 2 (inertia matrix counts).")
    for row in rows:
        for note in row["notes"]:
            con.print(f"note ({row['formulation']}): {note}")
    return 0


def _paper_cell(row) -> str:
    """The paper's 'mul / add'."""
    return f"{row['paper_mul']} / {row['paper_add']}"


def _ours_cell(row) -> str:
    """Our 'mul / add', each marked '*' where it is at or below the paper's (ASCII-safe)."""
    return " / ".join(f"{row[f'ours_{x}']}{'*' if row[f'met_{x}'] else ' '}" for x in ("mul", "add"))


def _table_4_1_table(rows):
    """One line per arm of 000 Table 4.1: the paper's counts, ours, and the formulation used."""
    from rich.table import Table

    table = Table(title="000 Table 4.1: inverse dynamics of the thesis three-link arm (mul / add)")
    table.add_column("arm")
    for col in ("coordinates", "paper (SYMFLX)", "ours", "ours from"):
        table.add_column(col, justify="left" if col == "ours from" else "right")
    for row in rows:
        table.add_row(row["arm"], str(row["nq"]), _paper_cell(row), _ours_cell(row), row["ours_formulation"])
    return table


def _table_2_table(rows):
    """One line per arm: assumed modes (AM) and finite elements (FEM) side by side."""
    from rich.table import Table

    by_arm = {}
    for row in rows:
        by_arm.setdefault(row["arm"], {})[row["discretization"]] = row
    table = Table(title="004 Table 2: inertia matrix (mul / add)")
    table.add_column("arm")
    for col in ("coordinates AM / FEM", "paper AM", "ours AM", "paper FEM", "ours FEM", "ours from AM / FEM"):
        table.add_column(col, justify="left" if col.startswith("ours from") else "right")
    for name, pair in by_arm.items():
        am, fem = pair["assumed_modes"], pair["finite_elements"]
        table.add_row(name, f"{am['nq']} / {fem['nq']}", _paper_cell(am), _ours_cell(am), _paper_cell(fem),
                      _ours_cell(fem), " / ".join(f"{r['ours_formulation']} ({r['ours_dh']} DH)" for r in (am, fem)))
    return table


def _document_comparison(args) -> int:
    """Our operation counts beside 000 Table 4.1 and 004 Table 2 (numeric parameters, as there)."""
    from ..literature import table2, table_4_1

    if args.parameters != "numeric":
        raise UsageError("--parameters: the document tables count numeric models; give a MODEL for symbolic ones")
    print("flexman: deriving the arms of 000 Table 4.1 and 004 Table 2 ...", file=sys.stderr)
    data = {"table_4_1": table_4_1.comparison(), "table_2": table2.comparison()}
    if args.json:
        print_json(data)
        return 0
    con = console()
    con.print(_table_4_1_table(data["table_4_1"]))
    con.print(f"Source: {table_4_1.SOURCE}; ours: bundled example {table_4_1.THESIS_ARM}, "
              "rigid = its beams without modes.")
    con.print(_table_2_table(data["table_2"]))
    con.print(f"Source: {table2.SOURCE} text.")
    con.print("Ours: the cheapest over both DH placements and the formulations that apply, numeric parameters. "
              "* = at or below the paper's count.")
    return 0


def cmd_codegen(args) -> int:
    """Write generated code (or a stand-alone RK4 simulator program) for a model."""
    from ..symbolic import derive

    robot = load_model(args.model)
    out = output_file(args.out, "--out", force=args.force, protect=[args.model])  # before the derivation
    eom = derive(robot, formulation=args.formulation)
    if args.program:
        from ..codegen.simulator import program

        path = program(eom, out)
    else:
        path = eom.export(args.lang, out)
    path = Path(path) if path is not None else out
    if args.json:
        print_json({"model": robot.name, "file": str(path)})
    else:
        print(f"wrote {path}")
    return 0


def cmd_analyze(args) -> int:
    """Structure of the generalized inertia matrix (003): zero, constant or which coordinates."""
    from ..symbolic import derive

    robot = load_model(args.model)
    if not args.gim:
        raise UsageError("analyze: choose an analysis, e.g. --gim")
    eom = derive(robot, formulation=args.formulation)
    gim = eom.gim_structure()
    if args.json:
        print_json({"model": robot.name, "constant": gim.is_constant, "diagonal": gim.is_diagonal,
                     "entries": [[sorted(gim.depends_on(i, j)) if gim.depends_on(i, j) else None
                                  for j in range(robot.nq)] for i in range(robot.nq)]})
        return 0
    print(gim)
    return 0


def cmd_closure(args) -> int:
    """Closure (thesis sec. 3.3, Figs. 3.28-3.29): drive with the model's controller, feed the
    recorded motion back through the inverse dynamics and compare the two torque histories."""
    from ..closure import closure_run

    robot = load_model(args.model)
    if not args.t_final > 0:  # finite: the parser refuses nan and inf
        raise UsageError(f"--t-final: must be a finite number > 0 (got {args.t_final})")
    if args.dt is not None and not args.dt > 0:
        raise UsageError(f"--dt: must be a finite number > 0 (got {args.dt})")
    out = None if args.out is None else output_folder(args.out)
    report = closure_run(robot, args.t_final, dt=1e-3 if args.dt is None else args.dt, out=out)
    if args.json:
        print_json(report)
        return 0 if report["passed"] else 1
    print(f"{robot.name}: max |tau_inverse - tau_applied| = {report['max_abs_difference']:.3e} "
          f"({report['max_relative_difference']:.3e} of the torque scale) over {report['samples']} samples")
    if report["diverged"]:
        print(f"flexman: warning: the run stopped at t = {report['t_diverged']:.6g} s (diverged); the closure check "
              "covers the samples before it and does not pass; use a smaller --dt", file=sys.stderr)
    for f in report["files"]:
        print(f"wrote {f}")
    return 0 if report["passed"] else 1


def register(sub) -> None:
    """Add the commands of this module to the ``flexman`` parser."""
    p = subcommand(sub, "derive", cmd_derive, "derive the equations of motion (text, LaTeX, operation counts)",
                    optional_model=True)
    p.add_argument("--formulation", choices=FORMULATIONS, default="newton_euler")
    p.add_argument("--parameters", choices=("numeric", "symbolic"), default="numeric")
    p.add_argument("--compare", action="store_true",
                   help="operation counts of every formulation side by side; without MODEL, ours beside "
                        "000 Table 4.1 and 004 Table 2")
    p.add_argument("--latex", action="store_true", help="print LaTeX instead of text")

    p = subcommand(sub, "codegen", cmd_codegen, "generate code for the equations of motion")
    p.add_argument("--lang", choices=("c", "fortran", "python", "matlab", "julia"), default="c")
    p.add_argument("--formulation", choices=FORMULATIONS, default="newton_euler")
    p.add_argument("--out", required=True, metavar="PATH", help="output file")
    p.add_argument("--force", action="store_true", help="overwrite PATH if it exists")
    p.add_argument("--program", action="store_true", help="a stand-alone C simulator (RK4) instead of functions")

    p = subcommand(sub, "analyze", cmd_analyze, "structural analyses of the model")
    p.add_argument("--gim", action="store_true", help="which inertia-matrix entries are zero, constant or varying")
    p.add_argument("--formulation", choices=FORMULATIONS, default="denoc")

    p = subcommand(sub, "closure", cmd_closure, "closure check: applied vs inverse-dynamics torques")
    p.add_argument("--t-final", type=float, default=1.0, metavar="T")
    p.add_argument("--dt", type=float)
    p.add_argument("--out", metavar="DIR", help="folder for the torque plot and data")
