"""Subcommands of the ``cacheeval`` CLI, one module each (see :mod:`cacheeval.cli`).
Command modules import heavy dependencies inside ``run``, never at import time."""
