"""The limits flexman enforces on its inputs, in one place (README "Limits", docs/robustness.md).

Each number is a bound past which an input is refused with a one-line message naming the
field and the limit, rather than accepted and left to hang, overflow or run out of memory
later. The document limits keep the loader fast on hostile files; the model limits keep
every model inside the range where its numerics have been checked.
"""
from __future__ import annotations

# ----- model files (the document itself) ---------------------------------------------------
MAX_DOCUMENT_BYTES = 1_000_000   # a 100-link model file is under 50 kB
MAX_DEPTH = 32                   # nesting of mappings and lists (a model file uses 5)
MAX_NODES = 100_000              # values after expanding YAML aliases (alias bombs stop here)
MAX_TEXT = 10_000                # characters of one text value (a description, a citation)
