"""Write domains/qa_open.jsonl from the hand-written fixtures in sources/qa_open/."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cacheeval.generators import qa_open  # noqa: E402
from cacheeval.generators.common import run_generator  # noqa: E402

if __name__ == "__main__":
    sys.exit(run_generator("qa_open", qa_open.generate))
