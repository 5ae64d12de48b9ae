"""``python -m flexman``: the ``flexman`` command (as ``python -m flexman.cli``). Under the main
guard: a sweep's worker processes import the main module again (the spawn start method)."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
