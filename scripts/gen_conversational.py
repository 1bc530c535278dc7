"""Write domains/conversational.jsonl from the fixtures in sources/conversational/."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cacheeval.generators import conversational  # noqa: E402
from cacheeval.generators.common import run_generator  # noqa: E402

if __name__ == "__main__":
    sys.exit(run_generator("conversational", conversational.generate))
