"""`flexman validate`: the documents' reference cases, expected beside obtained."""
from __future__ import annotations

from .common import UsageError, console, fmt, print_json, subcommand

def validation_cases() -> list:
    """The literature cases (``flexman.literature.cases.CASES``); tests replace this function."""
    try:
        from ..literature.cases import CASES
    except ImportError as exc:
        raise UsageError(f"the validation cases are not available ({exc})") from None
    return list(CASES)


def cmd_validate(args) -> int:
    """Run the literature cases; a table of expected vs obtained; exit 1 if any fails."""
    cases = validation_cases()
    if args.case:
        names = [c.name for c in cases]
        cases = [c for c in cases if c.name == args.case]
        if not cases:
            raise UsageError(f"unknown case '{args.case}'; cases: {', '.join(names)}")
    from ..literature.cases import run

    results = [run(case) for case in cases]
    failed = sum(not r["passed"] for r in results)
    converged = [] if args.case else _converged_rows()
    if args.json:
        print_json({"cases": results, "passed": len(results) - failed, "failed": failed, "convergence": converged})
        return 1 if failed else 0
    from rich.table import Table

    table = Table(title="literature validation")
    for col in ("case", "source", "expected", "obtained", "tolerance", "pass"):
        table.add_column(col, no_wrap=col == "case")
    for case, r in zip(cases, results):
        unit = f" {case.unit}" if getattr(case, "unit", "") else ""
        tol = (f"{100 * r['tolerance']:g} %" if getattr(case, "relative", False)
               else fmt(r["tolerance"]) + unit)
        got = r["error"] if r["error"] else fmt(r["obtained"]) + unit
        expected = {"above": "> ", "below": "< "}.get(r["bound"], "") + fmt(r["expected"]) + unit
        if r["bound"] in ("above", "below"):
            tol = "-"
        table.add_row(r["name"], str(r["source"]), expected, got, tol,
                      "[green]yes[/green]" if r["passed"] else "[red]NO[/red]")
    con = console()
    con.print(table)
    con.print(f"{len(results) - failed} passed, {failed} failed")
    if converged:
        conv = Table(title="the documents' one-mode models beside converged ones (5 modes per beam), rad/s")
        for col in ("model", "frequency", "one mode (documents)", "converged", "change"):
            conv.add_column(col, justify="left" if col in ("model", "frequency") else "right")
        for row in converged:
            conv.add_row(row["model"], row["frequency"], fmt(row["document_model"]), fmt(row["converged"]),
                         f"{100 * row['change']:+.1f} %")
        con.print(conv)
    return 1 if failed else 0


#: the bundled models of the documents' flexible cases, studied for modal convergence
CONVERGENCE_MODELS = ("flx_flexible_pendulum", "flx_joint_mass", "flx_three_link")


def _converged_rows() -> list:
    """Per model of CONVERGENCE_MODELS, its lowest frequencies (joints free and locked) with the
    documents' one mode per plane and converged (the finite-element reference of
    :func:`flexman.analysis.modal_convergence.reference`): the cases above keep the documents' models
    (they reproduce the documents); these rows say how far those models are from converged."""
    from ..analysis.modal_convergence import convergence
    from ..examples import load

    rows = []
    for name in CONVERGENCE_MODELS:
        study = convergence(load(name), modes=(1,))
        for kind, values in (("free", study.free), ("locked", study.locked)):
            ref = study.reference_row(kind, values.shape[1])
            for i in range(values.shape[1]):
                one, five = values[0, i], ref[i]
                if one == one and five == five:  # both computed (not NaN)
                    rows.append({"model": name, "frequency": f"joints {kind}, mode {i + 1}",
                                 "document_model": float(one), "converged": float(five),
                                 "change": float((one - five) / five)})
    return rows


def register(sub) -> None:
    """Add the commands of this module to the ``flexman`` parser."""
    p = subcommand(sub, "validate", cmd_validate, "run the literature validation cases", model=False)
    p.add_argument("--case", metavar="NAME", help="run only this case")
