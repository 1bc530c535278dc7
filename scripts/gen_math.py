"""Write domains/math.jsonl from the fixtures in sources/math/."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cacheeval.generators import math as math_generator  # noqa: E402
from cacheeval.generators.common import run_generator  # noqa: E402

if __name__ == "__main__":
    try:
        code = run_generator("math", math_generator.generate)
    except math_generator.FixtureError as e:  # a fixture problem, reported as path:LINE
        print(f"error: {e}", file=sys.stderr)
        code = 2
    sys.exit(code)
