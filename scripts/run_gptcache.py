"""Regenerate every GPTCache reference report under reports/ (see adapters/gptcache_runner.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adapters.gptcache_runner import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
