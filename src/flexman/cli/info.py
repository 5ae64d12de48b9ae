"""`flexman info` and `flexman examples`: what a model is, what is bundled."""
from __future__ import annotations

import math
import sys
from pathlib import Path

from .common import UsageError, console, fmt, load_model, print_json, subcommand
from ..model.errors import ModelError
from ..outputs import output_file, write_text


def _info_data(robot) -> dict:
    """What `info` shows, as plain data: the --json output and the rows of the tables."""
    links = []
    for i, link in enumerate(robot.links):
        beam = link.beam
        links.append({
            "index": i + 1, "name": link.name, "joint": link.joint, "joint_name": link.joint_name,
            "parent_name": "base" if robot.parents[i] < 0 else (robot.links[robot.parents[i]].name
                                                                or str(robot.parents[i] + 1)),
            "parent": "base" if robot.parents[i] < 0 else robot.parents[i] + 1,  # the parent's '#
            "a": link.a, "alpha": link.alpha, "d": link.d, "theta": link.theta,
            "mass": link.body.mass,
            "hub_mass": link.hub.mass if link.hub is not None else 0.0,
            "beam_mass": beam.length * beam.mass_per_length if beam is not None else 0.0,
            "flexible_coordinates": beam.nf if beam is not None else 0,
            "limits": list(link.limits) if link.limits is not None else None,
            "placement": None if link.placement is None else {
                "xyz": list(link.placement.xyz), "rpy": list(link.placement.rpy), "axis": list(link.placement.axis)},
        })
    return {
        "name": robot.name, "description": getattr(robot, "description", ""),
        "source": getattr(robot, "source", ""), "dh": robot.dh,
        "nq": robot.nq, "n_joints": robot.n_joints, "nf": robot.nf,
        "coordinate_names": list(robot.coordinate_names),
        "gravity": robot.gravity, "total_mass": robot.total_mass(),
        "payload_mass": robot.payload.mass if robot.payload is not None else 0.0,
        "links": links,
        "frames": {name: ("base" if i < 0 else i + 1) for name, (i, _) in robot.frames.items()},
        "end_effector": robot.end_effector,
        "placed": all(link.placement is not None for link in robot.links),
    }


def _placed_table(data):
    """The joints of a robot placed URDF-style: name, type, the link it moves and its parent, axis
    and origin, the link's masses and flexible coordinates."""
    from rich.table import Table

    table = Table(title="joints and links (origin xyz in m, rpy in deg; kg)")
    for col in ("#", "joint", "type", "link", "parent", "axis", "xyz", "rpy", "mass", "beam", "flex"):
        table.add_column(col, justify="left" if col in ("joint", "type", "link", "parent") else "right")
    for item in data["links"]:
        pl = item["placement"]
        table.add_row(str(item["index"]), item["joint_name"] or "-", item["joint"], item["name"] or "-",
                      item["parent_name"], " ".join(fmt(v) for v in pl["axis"]), " ".join(fmt(v) for v in pl["xyz"]),
                      " ".join(fmt(math.degrees(v)) for v in pl["rpy"]), fmt(item["mass"]), fmt(item["beam_mass"]),
                      str(item["flexible_coordinates"]))
    return table


def cmd_info(args) -> int:
    """Summary of a model: name, coordinates, masses and the DH table."""
    robot = load_model(args.model)
    data = _info_data(robot)
    if args.json:
        print_json(data)
        return 0
    from rich.table import Table

    con = console()
    kind = "joints placed by origin and axis (URDF)" if data["placed"] else f"{robot.dh} DH"
    con.print(f"[bold]{data['name']}[/bold]  ({kind}, {robot.n_joints} joints, "
              f"{robot.nf} flexible coordinates, nq = {robot.nq})")
    if data["description"].strip():  # the file's own text: printed as is, never as markup
        con.print(data["description"].strip().splitlines()[0], markup=False, highlight=False)
    if data["source"]:
        source = data["source"] if isinstance(data["source"], str) else "; ".join(data["source"])
        con.print(f"source: {source}", markup=False, highlight=False)
    con.print("coordinates: " + ", ".join(data["coordinate_names"]))
    con.print(f"total mass: {data['total_mass']:.6g} kg (payload {data['payload_mass']:.6g} kg)")
    if data["frames"]:
        con.print("frames: " + ", ".join(f"{k} (on {v})" for k, v in data["frames"].items()), markup=False)
    if data["end_effector"]:
        con.print(f"end effector: {data['end_effector']}", markup=False)
    if data["placed"]:  # no DH row at all: the joints as the URDF places them
        con.print(_placed_table(data))
        return 0
    named = any(item["name"] for item in data["links"])
    tree = not robot.is_serial
    table = Table(title=f"{robot.dh} DH table (m, deg, kg)")
    columns = ["#"] + (["name"] if named else []) + (["parent"] if tree else []) + [
        "joint", "a", "alpha", "d", "theta", "mass", "hub", "beam", "flex"]
    for col in columns:
        table.add_column(col, justify="left" if col in ("name", "joint") else "right")
    for item in data["links"]:
        row = [str(item["index"])] + ([item["name"]] if named else []) + ([str(item["parent"])] if tree else [])
        row += [item["joint"], fmt(item["a"]), fmt(math.degrees(item["alpha"])), fmt(item["d"]),
                fmt(math.degrees(item["theta"])), fmt(item["mass"]), fmt(item["hub_mass"]),
                fmt(item["beam_mass"]), str(item["flexible_coordinates"])]
        table.add_row(*row)
    con.print(table)
    placed = [item for item in data["links"] if item["placement"] is not None]
    if placed:  # URDF-style links: their DH columns above are unused
        ptable = Table(title="placed joints (origin xyz in m, rpy in deg, axis)")
        for col in ("#", "xyz", "rpy", "axis"):
            ptable.add_column(col, justify="right")
        for item in placed:
            pl = item["placement"]
            ptable.add_row(str(item["index"]), " ".join(fmt(v) for v in pl["xyz"]),
                           " ".join(fmt(math.degrees(v)) for v in pl["rpy"]), " ".join(fmt(v) for v in pl["axis"]))
        con.print(ptable)
    return 0


def _examples():
    from .. import bundled_examples

    module = bundled_examples()
    if module is None:
        raise UsageError("the bundled examples are not available in this installation")
    return module


def _example_description(module, name: str) -> str:
    """First line of an example's description (validating it on the way)."""
    try:
        robot = module.load(name)
    except ModelError as exc:  # a broken example should not hide the others
        return f"(invalid: {exc})"
    text = (getattr(robot, "description", "") or "").strip()
    return text.splitlines()[0] if text else ""


def cmd_examples(args) -> int:
    """List the bundled examples, print one, or copy one to a file (converting by extension)."""
    module = _examples()
    names = list(module.names())
    if args.name is None:
        if args.copy:
            raise UsageError("--copy needs an example NAME")
        rows = [(n, _example_description(module, n)) for n in names]
        if args.json:
            print_json([{"name": n, "description": d} for n, d in rows])
            return 0
        from rich.table import Table
        from rich.text import Text

        table = Table(title="bundled examples")
        table.add_column("name")
        table.add_column("description")
        for name, description in rows:
            table.add_row(name, Text(description))  # plain text, never markup
        console().print(table)
        return 0
    if args.name not in names:
        raise UsageError(f"unknown example '{args.name}'; bundled examples: {', '.join(names)}")
    src = Path(module.path(args.name))
    if args.copy is not None:
        dest = Path(args.copy) if str(args.copy).strip() else None
        if dest is not None and dest.is_dir():
            dest = dest / src.name
        if dest is not None and dest.exists() and not args.force:
            raise UsageError(f"{dest} exists; remove it or add --force")
        dest = output_file(dest, "--copy", force=args.force)
        if dest.suffix.lower() == src.suffix.lower():
            write_text(dest, src.read_text(encoding="utf-8"))  # keeps comments and citations as written
        else:
            from .. import save

            save(module.load(args.name), dest)
        if args.json:
            print_json({"name": args.name, "copied_to": str(dest)})
        else:
            print(f"copied {args.name} to {dest}")
        return 0
    if args.json:
        print_json({"name": args.name, "path": str(src),
                     "description": _example_description(module, args.name)})
    else:
        sys.stdout.write(src.read_text(encoding="utf-8"))
    return 0


def register(sub) -> None:
    """Add the commands of this module to the ``flexman`` parser."""
    subcommand(sub, "info", cmd_info, "summary of a model: coordinates, masses, DH table")

    p = subcommand(sub, "examples", cmd_examples, "list, print or copy the bundled examples", model=False)
    p.add_argument("name", nargs="?", metavar="NAME", help="an example to print or copy")
    p.add_argument("--copy", metavar="DEST", help="copy the example to a file (converted by extension) or folder")
    p.add_argument("--force", action="store_true", help="overwrite DEST")
