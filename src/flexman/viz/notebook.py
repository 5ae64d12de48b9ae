"""Notebook views of results (robots and equations show their tables and MathML directly)."""
from __future__ import annotations

import base64
import html
import io

from .summary import table


def result_html(result) -> str:
    """Key numbers and the time-history plots (PNG inline, so the view needs no script)."""
    from .report import key_numbers

    robot = getattr(result, "robot", None)
    name = robot.name if robot is not None else "run"
    buffer = io.BytesIO()
    result.plot().savefig(buffer, format="png", dpi=60)
    png = base64.b64encode(buffer.getvalue()).decode("ascii")
    rows = key_numbers(result, robot) if robot is not None else []
    return (f"<div><b>{html.escape(name)}</b>: simulation result (<code>.report(path)</code> writes the HTML "
            f"report with the 3D animation){table(['', ''], rows)}"
            f"<img alt='time histories' src='data:image/png;base64,{png}'></div>")
