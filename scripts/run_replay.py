"""Pair mode vs shared-cache replay for the reference caches: writes
reports/REPLAY.md/.json and reports/replay/ (see adapters/replay_runner.py).

    python -m scripts.run_replay
"""

import sys

from adapters.replay_runner import main

if __name__ == "__main__":
    sys.exit(main())
