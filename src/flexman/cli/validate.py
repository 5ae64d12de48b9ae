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
    if args.json:
        print_json({"cases": results, "passed": len(results) - failed, "failed": failed})
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
    return 1 if failed else 0


def register(sub) -> None:
    """Add the commands of this module to the ``flexman`` parser."""
    p = subcommand(sub, "validate", cmd_validate, "run the literature validation cases", model=False)
    p.add_argument("--case", metavar="NAME", help="run only this case")
