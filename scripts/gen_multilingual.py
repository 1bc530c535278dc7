"""Write domains/multilingual.jsonl from the fixtures in sources/multilingual/."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cacheeval.generators import multilingual  # noqa: E402
from cacheeval.generators.common import run_generator  # noqa: E402

if __name__ == "__main__":
    sys.exit(run_generator("multilingual", multilingual.generate))
