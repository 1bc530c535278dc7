"""Run a cache (or a baseline) against the CacheEval benchmark.

The same command as ``cacheeval eval`` (same options, same code)::

    python -m scripts.eval_harness --bench cachebench.jsonl --baseline exact_match --out r.md

The library API lives in the package: ``from cacheeval import evaluate,
load_bench, Verdict, Pair``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from cacheeval.commands import eval as _eval_command

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The ``cacheeval eval`` parser under this script's name."""
    parser = argparse.ArgumentParser(prog="eval_harness.py", description=_eval_command.HELP)
    _eval_command.add_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return _eval_command.run(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
