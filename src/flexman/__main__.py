"""``python -m flexman``: the ``flexman`` command (as ``python -m flexman.cli``)."""
import sys

from .cli import main

sys.exit(main())
