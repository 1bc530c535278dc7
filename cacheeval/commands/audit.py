"""``cacheeval audit``: the one-side-only leakage audit (see :mod:`cacheeval.benches.audit`)."""

from __future__ import annotations

import argparse
import sys

from .verify import add_shards_arguments

NAME = "audit"
HELP = (
    "Leakage audit: per domain, how well a bag-of-n-grams classifier that sees only "
    "query_b (or only query_a) predicts the binary label, under grouped 5-fold CV."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_shards_arguments(parser, "only this domain")
    parser.add_argument("--folds", type=int, default=5, help="cross-validation folds (default 5)")
    parser.add_argument(
        "--flag-gap",
        type=float,
        default=0.10,
        help="flag domains whose one-side accuracy beats the majority rate by more (default 0.10)",
    )
    parser.add_argument(
        "--max-gap",
        type=float,
        default=None,
        help="exit 1 when any domain's gap exceeds this (default: report only)",
    )


def run(args: argparse.Namespace) -> int:
    from ..benches.audit import audit_rows, format_audit
    from ..pipeline.shards import read_shards
    from ..support.jsonio import JsonlError

    if args.folds < 2:
        print(f"audit: --folds must be >= 2, got {args.folds}", file=sys.stderr)
        return 2
    try:
        shards = read_shards(args.shards, args.domain)
    except JsonlError as e:
        print(f"audit: {e}", file=sys.stderr)
        return 1
    if not shards:
        print(f"audit: no shards in {args.shards}", file=sys.stderr)
        return 1
    rows = []
    for srows in shards.values():
        for sr in srows:
            d = sr.data
            if not (
                isinstance(d, dict)
                and isinstance(d.get("query_a"), str)
                and isinstance(d.get("query_b"), str)
                and d.get("binary_label") in ("HIT", "MISS")
            ):
                print(
                    f"audit: {sr.where}: needs query_a, query_b and binary_label", file=sys.stderr
                )
                return 1
            rows.append(d)
    results = audit_rows(rows, folds=args.folds)
    print(format_audit(results, flag_gap=args.flag_gap))
    if args.max_gap is not None:
        over = [r.domain for r in results if r.max_gap is not None and r.max_gap > args.max_gap]
        if over:
            print(f"audit: gap above --max-gap {args.max_gap} in: {', '.join(over)}")
            return 1
    return 0
