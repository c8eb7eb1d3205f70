"""``python -m tensorforge`` runs the ``tforge`` command."""

import sys

from tensorforge.cli import main

sys.exit(main())
