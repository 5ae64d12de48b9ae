"""The example notebook runs top to bottom in a Jupyter kernel (nbclient) and its cells show
the robot, the result and the equations through their notebook views."""
from __future__ import annotations

from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[1] / "docs" / "notebooks" / "flexible_arm.ipynb"


@pytest.mark.slow
def test_example_notebook_runs(tmp_path):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs]
    assert not [out for out in outputs if out.output_type == "error"]
    html = [out.data["text/html"] for out in outputs if "text/html" in out.get("data", {})]
    assert any("Denavit-Hartenberg table" in h and "the arm at q = 0" in h for h in html)  # the robot
    assert any("largest tip deflection" in h and "data:image/png;base64," in h for h in html)  # the result
    assert any("<math" in h and "operations" in h for h in html)  # the equations, MathML
    latex = [out.data["text/latex"] for out in outputs if "text/latex" in out.get("data", {})]
    assert latex and latex[0].startswith(r"\begin{align*}")
    assert (tmp_path / "notebook_report" / "report.html").stat().st_size > 1e6
