"""Pictures of robots and runs: PNG plots and summaries, the self-contained HTML report with the
3D animation of the deforming arm, notebook views."""
from .plots import plot_result, plot_statics
from .report import report_html, write_report
from .shaping import plot_robustness
from .snapshot import plot_summary

__all__ = ["plot_result", "plot_robustness", "plot_statics", "plot_summary", "report_html", "write_report"]
