"""Equations of motion for a browser: LaTeX turned into MathML (rendered natively by browsers,
no script, works offline), readable text where a program is too long to typeset."""
from __future__ import annotations

import html

MAX_TYPESET = 400  # programs longer than this many lines are shown as text (typesetting them helps no one)
STRUCTURE = r"M(q)\,\ddot{q} + b(q,\dot{q}) = S\,\tau"


def mathml(latex: str, display: bool = False) -> str:
    """MathML of one LaTeX formula (latex2mathml)."""
    from latex2mathml.converter import convert

    return convert(latex, display="block" if display else "inline")


def program_lines(latex: str) -> list:
    """(left, right) LaTeX of each line of an ``align*`` program as ``eom.latex()`` writes it."""
    rows = []
    for line in latex.splitlines():
        line = line.strip()
        if not line or line.startswith(r"\begin") or line.startswith(r"\end"):
            continue
        line = line.removesuffix(r"\\").strip()
        left, _, right = line.partition("&=")
        rows.append((left.strip(), right.strip()))
    return rows


def eom_html(eom, max_typeset: int = MAX_TYPESET) -> str:
    """The equations of one derivation: structure, coordinates, operation counts, and the
    straight-line program (MathML up to ``max_typeset`` lines, otherwise text)."""
    robot = eom.robot
    counts = eom.op_count("eom")
    coords = ", ".join(f"q<sub>{i + 1}</sub> = {html.escape(n)}" for i, n in enumerate(robot.coordinate_names))
    parts = [f"<p class='eq'>{mathml(STRUCTURE, display=True)}</p>",
             f"<p>{html.escape(eom.formulation)} formulation, {html.escape(eom.parameters)} parameters; "
             f"coordinates {coords}.</p>",
             "<p>M and b together: " + ", ".join(f"{v} {k}" for k, v in counts.items()) + " operations.</p>"]
    parts += [f"<p class='muted'>Note: {html.escape(n)}.</p>" for n in eom.notes]
    rows = program_lines(eom.latex())
    if len(rows) <= max_typeset:
        body = "".join(f"<tr><td>{mathml(l)}</td><td>{mathml('=')}</td><td>{mathml(r)}</td></tr>" for l, r in rows)
        parts.append(f"<table class='program'>{body}</table>")
    else:
        parts.append(f"<details><summary>The program, {len(rows)} lines (text; too long to typeset)</summary>"
                     f"<pre>{html.escape(eom.text())}</pre></details>")
    return "\n".join(parts)
