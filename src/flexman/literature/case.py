"""One reference number of a document, with its source, tolerance and how flexman recomputes it."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Case:
    name: str
    source: str
    expected: float
    tolerance: float
    compute: object = field(repr=False)
    relative: bool = False
    unit: str = ""
    slow: bool = False

    def obtained(self) -> float:
        return float(self.compute())

    def passes(self, value: float) -> bool:
        err = abs(value - self.expected)
        return err <= self.tolerance * (abs(self.expected) if self.relative else 1.0)
