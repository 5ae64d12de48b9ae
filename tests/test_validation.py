"""Every literature case of `flexman validate` (sources and tolerances in flexman.literature.cases)."""
import pytest

from flexman.literature.cases import CASES


@pytest.mark.parametrize(
    "case", [pytest.param(c, id=c.name, marks=[pytest.mark.slow] if c.slow else []) for c in CASES]
)
def test_literature_case(case):
    value = case.obtained()
    assert case.passes(value), f"{case.name}: expected {case.expected} +- {case.tolerance}, got {value} ({case.source})"


def test_hub_inertia_trend_of_fig_3_20():
    """Thesis Fig. 3.20: the in-plane flexural period grows with the joint-mass inertia toward
    the clamped-free value 275 ms; the out-of-plane mode stays at 275 ms throughout."""
    from flexman.literature.cases import hub_inertia_periods

    inertias, periods = hub_inertia_periods()
    in_plane = [min(p) for p in periods]  # the fastest vibration is the in-plane flexural mode
    assert all(b > a for a, b in zip(in_plane, in_plane[1:]))
    assert in_plane[0] < 0.06 and abs(in_plane[-1] - 0.2754) < 2e-3
