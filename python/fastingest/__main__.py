"""``python -m fastingest``: the same as the ``fastingest`` command."""

import sys

from ._cli import main

sys.exit(main())
