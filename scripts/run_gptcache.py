"""Regenerate every GPTCache reference report under reports/ (see adapters/gptcache_runner.py)."""

import sys

from adapters.gptcache_runner import main

if __name__ == "__main__":
    sys.exit(main())
