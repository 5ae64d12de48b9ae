"""The robustness curve of input shapers: residual vibration against frequency error."""
from __future__ import annotations

import numpy as np

from .plots import save_figure


def plot_robustness(data, path=None, tolerance=None, title=None):
    """Plot ``data`` (``{"ratio": r, label: V, ...}`` from :func:`flexman.control.robustness` or
    ``Shaper.robustness``): residual vibration in percent against the ratio of actual to design
    frequency, one curve per label, with the ``tolerance`` line when given. Writes ``path``
    (PNG or any format matplotlib knows) when given and returns the Figure."""
    from matplotlib.figure import Figure

    r = np.asarray(data["ratio"], dtype=float)
    fig = Figure(figsize=(7, 4))
    ax = fig.subplots()
    for label, values in data.items():
        if label != "ratio":
            ax.plot(r, 100.0 * np.asarray(values, dtype=float), label=label)
    if tolerance is not None:
        ax.axhline(100.0 * tolerance, color="grey", linestyle="--", linewidth=0.8,
                   label=f"{100 * tolerance:g} % tolerance")
    ax.set_xlabel("actual frequency / design frequency")
    ax.set_ylabel("residual vibration [%]")
    ax.set_xlim(r[0], r[-1])
    ax.set_ylim(0.0, None)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    if title:
        ax.set_title(title)
    fig.tight_layout()
    if path is not None:
        save_figure(fig, path)
    return fig
