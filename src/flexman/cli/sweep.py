"""`flexman sweep`: variants of a model on Dask, figures in one Parquet file."""
from __future__ import annotations

from pathlib import Path

from .common import UsageError, console, load_model, print_json, subcommand
from ..model.names import printable
from ..outputs import output_file


def cmd_sweep(args) -> int:
    """Run a parameter sweep (Dask) from a YAML specification; one Parquet file of figures."""
    from ..sweeps import FIGURES, SweepError, load_spec, plot, sweep

    robot = load_model(args.model)
    try:
        spec = load_spec(args.spec)
    except FileNotFoundError:
        raise UsageError(f"SPEC: no such file '{args.spec}'") from None
    out = args.out if args.out is not None else (spec.get("out") or str(Path(args.spec).with_suffix(".parquet")))
    output_file(out, "--out", force=True)  # resumed from when it exists; its folder must be writable
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers: must be >= 1 (got {args.workers})")
    try:
        res = sweep(robot, spec["parameters"], run=spec.get("run"), scheduler=args.scheduler,
                    sampling=spec.get("sampling", "grid"), samples=spec.get("samples"), seed=spec.get("seed", 0),
                    figures=spec.get("figures", None) or FIGURES,
                    out=out, n_workers=args.workers, settle_fraction=spec.get("settle_fraction", 0.02))
    except SweepError as exc:
        raise UsageError(str(exc)) from None
    errors = [e for e in res.table.column("error").to_pylist() if e]
    files = [str(res.path)]
    if args.plot:
        figure, x, y = args.plot
        path = res.path.with_suffix(".png")
        try:
            plot(res.table, figure, x, y, path)
        except SweepError as exc:
            raise UsageError(f"--plot: {exc}") from None
        files.append(str(path))
    if errors and len(errors) == len(res):
        raise UsageError(f"every one of the {len(res)} points failed (the results, with why, are in {res.path}); "
                         f"the first: {printable(errors[0], 500)}")
    summary = {"model": robot.name, "points": len(res), "computed": res.computed, "reused": res.reused,
               "failed": len(errors), "columns": res.table.column_names, "files": files}
    if args.json:
        print_json(summary)
        return 0
    con = console()
    con.print(f"[bold]{robot.name}[/bold]: sweep of {len(res)} points ({res.computed} computed, {res.reused} "
              f"reused from an earlier run, {len(errors)} failed)", markup=True)
    if errors:
        con.print(f"first failure: {printable(errors[0], 500)}", markup=False)
    for path in files:
        con.print(f"wrote {path}", markup=False)
    return 0


def register(sub) -> None:
    """Add the commands of this module to the ``flexman`` parser."""
    p = subcommand(sub, "sweep", cmd_sweep, "simulate variants of a model on Dask; figures in one Parquet file")
    p.add_argument("spec", metavar="SPEC", help="sweep specification (YAML: parameters, sampling, samples, run, ...)")
    p.add_argument("--out", metavar="FILE", help="Parquet file (default: the spec's out, else SPEC with .parquet)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="a running Dask scheduler (default: a LocalCluster here)")
    p.add_argument("--workers", type=int, metavar="N", help="LocalCluster worker processes")
    p.add_argument("--plot", nargs=3, metavar=("FIGURE", "X", "Y"), help="plot a figure over two parameters (PNG)")
