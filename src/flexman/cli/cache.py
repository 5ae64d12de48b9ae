"""``flexman cache``: list, prune or clear the compiled models kept on disk (registered in
:mod:`flexman.cli`)."""
from __future__ import annotations

import argparse
import re
import time

from ..model.limits import MAX_CACHE_SIZE
from .common import UsageError, console, print_json, subcommand

UNITS = {"": 1, "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3, "T": 1024 ** 4}


def parse_size(text: str) -> int:
    """Bytes of a size such as ``500M``, ``2G``, ``10000K``, ``1.5GB`` or ``123456`` (binary units)."""
    m = re.fullmatch(r"\s*(\d+\.?\d*|\.\d+)\s*([KMGT]?)(I?B)?\s*", text, re.IGNORECASE)
    if not m:
        raise argparse.ArgumentTypeError(f"expected a size such as 500M, 2G, 10000K or a number of bytes (got {text!r})")
    size = float(m.group(1)) * UNITS[m.group(2).upper()]  # a 400-digit number is inf here, not an error
    if not size <= MAX_CACHE_SIZE:
        raise argparse.ArgumentTypeError(f"{text.strip()[:20]!r} is more than any disk holds; give at most 1024T")
    return int(size)


def _days(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of days >= 0, e.g. 30 or 0.5 (got {text!r})")
    return value


def human(n: int) -> str:
    """Bytes as text: 512 B, 36.7 K, 1.2 M, ..."""
    if n < 1024:
        return f"{n} B"
    for unit in ("K", "M", "G"):
        n /= 1024
        if n < 1024 or unit == "G":
            return f"{n:.1f} {unit}"


def _entries(n: int) -> str:
    return f"{n} entry" if n == 1 else f"{n} entries"


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t))


def _table(title, listed):
    from rich.table import Table

    table = Table(title=title)
    for name in ("robot", "nq", "size", "last used", "key"):
        table.add_column(name, justify="right" if name in ("nq", "size") else "left")
    for e in listed:
        table.add_row(e.robot, str(e.nq), human(e.size), _when(e.last_used), e.key[:12])
    return table


def cmd_cache(args) -> int:
    """List the cached compiled models, or remove them (--clear, --max-size, --older-than)."""
    from ..codegen import modelcache
    from ..codegen.cbuild import cache_dir

    prune = args.max_size is not None or args.older_than is not None
    if args.clear and prune:
        raise UsageError("--clear removes every entry: give it alone, or --max-size/--older-than without it")
    if args.dry_run and not (args.clear or prune):
        raise UsageError("--dry-run: give it with --clear, --max-size or --older-than")
    folder = str(modelcache.models_dir())
    if not (args.clear or prune):
        listed = modelcache.entries()[::-1]  # most recently used first
        total = sum(e.size for e in listed)
        if args.json:
            print_json({"folder": folder, "total_bytes": total, "entries": [e.to_dict() for e in listed]})
            return 0
        con = console()
        if listed:
            con.print(_table("compiled models", listed))
        con.print(f"{_entries(len(listed))}, {human(total)} in {folder}", markup=False, highlight=False)
        if not listed:
            con.print(f"(built on first use; $FLEXMAN_CACHE moves the cache, now {cache_dir()})",
                      markup=False, highlight=False)
        return 0
    if args.clear:
        res = modelcache.clear(dry_run=args.dry_run)
    else:
        older = None if args.older_than is None else args.older_than * 86400.0
        res = modelcache.prune(max_bytes=args.max_size, older_than_s=older, dry_run=args.dry_run)
    left = sum(e.size for e in modelcache.entries()) - (res.freed if args.dry_run else 0)
    if args.json:
        print_json({"folder": folder, "dry_run": args.dry_run, "freed_bytes": res.freed, "total_bytes": left,
                    "removed": [e.to_dict() for e in res.removed], "skipped": [e.to_dict() for e in res.skipped],
                    "strays": [str(p) for p in res.strays]})
        return 0
    con = console()
    verb = "would remove" if args.dry_run else "removed"
    if res.removed:
        con.print(_table(verb, res.removed))
    con.print(f"{verb} {_entries(len(res.removed))} ({human(res.freed)}); {human(left)} left in {folder}",
              markup=False, highlight=False)
    if res.skipped:
        con.print(f"skipped {_entries(len(res.skipped))} being built by another process: "
                  + ", ".join(f"{e.robot} {e.key[:12]}" for e in res.skipped), markup=False, highlight=False)
    if res.strays:
        con.print(f"removed {len(res.strays)} leftovers of interrupted builds", markup=False, highlight=False)
    return 0


def register(sub) -> None:
    """Add ``flexman cache`` to the ``flexman`` parser."""
    p = subcommand(sub, "cache", cmd_cache, "list, prune or clear the compiled models kept on disk", model=False)
    p.add_argument("--clear", action="store_true", help="remove every entry")
    p.add_argument("--max-size", type=parse_size, metavar="SIZE",
                   help="remove the least recently used entries until the rest take at most SIZE (500M, 2G, bytes)")
    p.add_argument("--older-than", type=_days, metavar="DAYS", help="remove the entries not used for DAYS days")
    p.add_argument("--dry-run", action="store_true", help="only say what would be removed")
