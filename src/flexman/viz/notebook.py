"""Notebook views of robots and results (equations show their MathML directly)."""
from __future__ import annotations

import base64
import html
import io

from .summary import model_html, table


def _png(fig, dpi) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def robot_html(robot) -> str:
    """The model's tables beside a picture of the arm at q = 0 (PNG inline)."""
    from .snapshot import plot_arm

    picture = f"<img alt='the arm at q = 0' src='data:image/png;base64,{_png(plot_arm(robot), 70)}'>"
    return f"<div>{model_html(robot)}{picture}</div>"


def result_html(result) -> str:
    """Key numbers and the time-history plots (PNG inline, so the view needs no script)."""
    from .report import key_numbers

    robot = getattr(result, "robot", None)
    name = robot.name if robot is not None else "run"
    png = _png(result.plot(), 60)
    rows = key_numbers(result, robot) if robot is not None else []
    return (f"<div><b>{html.escape(name)}</b>: simulation result (<code>.report(path)</code> writes the HTML "
            f"report with the 3D animation){table(['quantity', 'value'], rows)}"
            f"<img alt='time histories' src='data:image/png;base64,{png}'></div>")
