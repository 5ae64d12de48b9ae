"""``python -m flexman.cli``: the ``flexman`` command."""
import sys

from . import main

sys.exit(main())
