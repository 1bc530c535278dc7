"""``python -m cacheeval`` runs the ``cacheeval`` command line."""

import sys

from .cli import main

sys.exit(main())
