"""``python -m tensorforge.cli`` runs the ``tforge`` command (as ``cli.py`` did)."""

import sys

from tensorforge.cli import main

sys.exit(main())
