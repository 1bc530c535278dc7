"""Write domains/creative.jsonl from the hand-written fixtures in sources/creative/."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cacheeval.generators import creative  # noqa: E402
from cacheeval.generators.common import run_generator  # noqa: E402

if __name__ == "__main__":
    sys.exit(run_generator("creative", creative.generate))
