"""HTML tables of a model and of a run: shared by the report and the notebook views."""
from __future__ import annotations

import html
import math

import numpy as np


def fmt(x, digits: int = 6) -> str:
    """A number (or a short array) as compact text."""
    arr = np.asarray(x, dtype=float)
    if arr.ndim == 0:
        return f"{float(arr):.{digits}g}"
    return "[" + ", ".join(f"{v:.{digits}g}" for v in arr.reshape(-1)) + "]"


def table(headers, rows, caption: str = "", cls: str = "") -> str:
    """An HTML table; cells are escaped text."""
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    klass = f" class='{cls}'" if cls else ""
    return f"<table{klass}>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def dh_table(robot) -> str:
    """Joint type, DH parameters (m, deg) and the masses of each link."""
    rows = []
    for i, link in enumerate(robot.links):
        beam = link.beam
        rows.append([i + 1, link.name or "", link.joint, fmt(link.a), fmt(math.degrees(link.alpha)), fmt(link.d),
                     fmt(math.degrees(link.theta)), fmt(link.body.mass),
                     fmt(link.hub.mass if link.hub is not None else 0.0),
                     fmt(beam.length * beam.mass_per_length if beam is not None else 0.0),
                     beam.nf if beam is not None else 0])
    return table(["#", "name", "joint", "a [m]", "alpha [deg]", "d [m]", "theta [deg]", "body [kg]", "hub [kg]",
                  "beam [kg]", "flexible coord."], rows, caption=f"{robot.dh} Denavit-Hartenberg table")


def beam_table(robot) -> str:
    """The flexible beams: geometry, stiffness, discretization ('' when the arm is rigid)."""
    rows = []
    for i, link in enumerate(robot.links):
        b = link.beam
        if b is None:
            continue
        modes = ", ".join(f"{k} {b.n_dofs(k)}" for k in ("y", "z", "torsion") if b.n_dofs(k))
        shapes = b.shapes + (f" ({b.elements} elements)" if b.shapes == "finite_elements" else "")
        rows.append([i + 1, link.joint, fmt(b.length), fmt(b.mass_per_length), fmt(b.EI), fmt(b.GJ), fmt(b.damping),
                     shapes, modes or "none (rigid rod)"])
    if not rows:
        return ""
    return table(["link", "joint", "length [m]", "mass/length [kg/m]", "EI y, z [N m^2]", "GJ [N m^2]",
                  "damping ratio", "shapes", "coordinates"], rows, caption="Beams")


def model_html(robot) -> str:
    """Name, description, coordinates, masses, DH and beam tables."""
    desc = (getattr(robot, "description", "") or "").strip()
    total = robot.total_mass()
    payload = robot.payload.mass if robot.payload is not None else 0.0
    parts = [f"<p><b>{html.escape(robot.name)}</b>: {robot.n_joints} joints, {robot.nf} flexible coordinates "
             f"(nq = {robot.nq}), total mass {fmt(total)} kg (payload {fmt(payload)} kg), gravity "
             f"{fmt(robot.gravity)} m/s<sup>2</sup>.</p>"]
    if desc:
        parts.append(f"<p>{html.escape(desc)}</p>")
    parts.append("<p>Coordinates q = " + ", ".join(html.escape(n) for n in robot.coordinate_names) + "</p>")
    parts.append(dh_table(robot))
    parts.append(beam_table(robot))
    return "\n".join(p for p in parts if p)


def convergence_html(robot) -> str:
    """The modal convergence table of a flexible arm (lowest frequencies as the modes per beam
    grow, :func:`flexman.analysis.modal_convergence.notice_study`), with the notice when the model's
    own frequencies are far from converged."""
    if robot.nf == 0:
        return ""
    from ..analysis.modal_convergence import notice_study

    study = robot.derived("convergence_check", notice_study)
    if study is None:
        return "<p>Every beam has at least 5 modes or elements: taken as converged.</p>"
    headers = ["per beam"] + [f"free {i + 1}: rad/s" for i in range(study.free.shape[1])] + \
        [f"locked {i + 1}: rad/s" for i in range(study.locked.shape[1])]
    rows = []
    for c, f, df, l, dl in zip(study.counts, study.free, study.free_change, study.locked, study.locked_change):
        rows.append([c] + [f"{fmt(v, 5)} ({100 * d:+.1f} %)" if v == v else "-"
                           for v, d in list(zip(f, df)) + list(zip(l, dl))])
    ref = [study.reference_row(kind, r.shape[1]) for kind, r in (("free", study.free), ("locked", study.locked))]
    rows.append(["reference"] + [fmt(v, 5) if v == v else "-" for v in np.concatenate(ref)])
    note = study.notice()
    lead = f"<p class='notice'>{html.escape(note)}</p>" if note else ""
    return lead + table(headers, rows, caption="Modal convergence: lowest frequencies as every beam gets more modes "
                                               f"(change against the reference: {html.escape(study.reference_method)})")


def frequencies_html(robot, q=None) -> str:
    """Natural frequencies of the arm linearized at rest at q (rad/s and Hz): the free arm
    (joints unactuated; a rigid-body mode per joint without gravity is 0) and the arm with its
    joints locked (the flexible coordinates alone)."""
    if robot.nf == 0:
        return "<p>Rigid arm: no elastic modes.</p>"
    from ..analysis.frequencies import natural_frequencies

    free = natural_frequencies(robot, q)
    locked = natural_frequencies(robot, q, joints="locked")
    cell = lambda w: [fmt(w, 5), fmt(w / (2 * math.pi), 5)]
    rows = [[k + 1] + cell(free[k]) + (cell(locked[k]) if k < len(locked) else ["", ""]) for k in range(len(free))]
    return table(["mode", "free: rad/s", "free: Hz", "joints locked: rad/s", "joints locked: Hz"], rows,
                 caption="Natural frequencies of the linearized arm at rest at the initial configuration")
