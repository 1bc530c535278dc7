"""``cacheeval generate [DOMAIN ...]``: turn each domain's hand-written fixtures
into its shard ``domains/<domain>.jsonl`` (see :mod:`cacheeval.pipeline.generate`).

Every named domain (default: all ten) is generated first; shards are written
only when every one succeeded, and only when their bytes change. A fixture
problem is printed as ``path:LINE: what`` and the exit status is 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

NAME = "generate"
HELP = (
    "Generate the domain shards domains/<domain>.jsonl from the fixtures in sources/ "
    "(default: every domain); then run `cacheeval build`."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..schema import DOMAINS
    from ..support.layout import DOMAINS_DIR, SOURCES_DIR

    parser.add_argument(
        "domains",
        nargs="*",
        metavar="DOMAIN",
        help=f"domains to generate (default: all): {', '.join(DOMAINS)}",
    )
    parser.add_argument(
        "--sources-dir",
        type=Path,
        default=SOURCES_DIR,
        help="read the fixtures of DOMAIN from SOURCES_DIR/DOMAIN (default: sources/)",
    )
    parser.add_argument(
        "--out-dir",
        type=Path,
        default=DOMAINS_DIR,
        help="write OUT_DIR/DOMAIN.jsonl (default: domains/)",
    )
    parser.add_argument(
        "--list",
        action="store_true",
        help="list the domains (rows, matrix row, checkers, description) and exit",
    )


def run(args: argparse.Namespace) -> int:
    from ..pipeline.domains import SPECS
    from ..pipeline.generate import generate_shard, write_shard

    if args.list:
        for spec in SPECS.values():
            print(
                f"{spec.name:15} {spec.n_rows:4d} rows {spec.matrix}  "
                f"checkers {', '.join(spec.checkers)}  {spec.description}"
            )
        return 0
    unknown = [d for d in args.domains if d not in SPECS]
    if unknown:
        print(
            f"generate: unknown domain(s) {', '.join(unknown)} (known: {', '.join(SPECS)})",
            file=sys.stderr,
        )
        return 2
    domains = list(dict.fromkeys(args.domains)) or list(SPECS)
    shards = {}
    failed = False
    for domain in domains:
        try:
            shards[domain] = generate_shard(domain, args.sources_dir / domain)
        except (ValueError, OSError) as e:  # FixtureError is a ValueError
            print(f"{domain}: cannot generate: {e}", file=sys.stderr)
            failed = True
    if failed:
        print("generate: nothing written", file=sys.stderr)
        return 2
    for domain, rows in shards.items():
        path = args.out_dir / f"{domain}.jsonl"
        state = "wrote" if write_shard(path, rows) else "unchanged"
        print(f"{domain}: {state} {len(rows)} rows in {path}", file=sys.stderr)
    return 0
