"""``cacheeval verify``: re-derive every shard row's binary label with its
checker and report the tier distribution and every disagreement.

``--rows FILE`` verifies any rows file instead of the shards (rows made by
``cacheeval stress``, a slice, the benchmark file's labelled rows)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..schema import Row

NAME = "verify"
HELP = (
    "Re-derive each labelled shard row's HIT/MISS with its verification checker; "
    "print the tier distribution and every disagreement (exit 1 if any)."
)


def add_shards_arguments(parser: argparse.ArgumentParser, domain_help: str) -> None:
    """--shards DIR and --domain DOMAIN (repeatable): the shards a command
    reads (also ``audit``'s)."""
    from ..schema import DOMAINS
    from ..support.layout import DOMAINS_DIR

    parser.add_argument(
        "--shards",
        type=Path,
        default=DOMAINS_DIR,
        help="directory of domain shards <domain>.jsonl (default: domains/ of this checkout)",
    )
    parser.add_argument(
        "--domain", action="append", choices=DOMAINS, metavar="DOMAIN", help=domain_help
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..support.cpus import usable_cpus

    add_shards_arguments(parser, "only this domain (repeatable; default: every present shard)")
    parser.add_argument(
        "--rows",
        type=Path,
        help="verify the labelled rows of this JSONL file instead of the shards "
        "(e.g. rows written by cacheeval stress)",
    )
    parser.add_argument(
        "--allow-unisolated",
        action="store_true",
        help="run code rows even without OS isolation (bubblewrap): only the in-interpreter "
        "guard then stands between them and this machine",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=usable_cpus(),
        help="worker processes for the checkers (default: the CPU count; at most 4 per CPU)",
    )


def _sandbox_problem(args: argparse.Namespace) -> str | None:
    """Why code rows cannot run here (None when they can): no OS isolation
    without --allow-unisolated, or CACHEEVAL_SANDBOX=bwrap that cannot start."""
    from ..verify.sandbox import ALLOW_UNISOLATED_ENV, BWRAP, SandboxUnavailable, isolation

    if args.allow_unisolated:
        os.environ[ALLOW_UNISOLATED_ENV] = "1"  # the checker processes inherit it
    try:
        iso = isolation()  # probe once here
    except SandboxUnavailable as e:
        return str(e)
    if iso.kind != BWRAP and not args.allow_unisolated:
        return (
            f"code rows need OS isolation and there is none ({iso.detail}); install "
            "bubblewrap (apt-get install bubblewrap) or pass --allow-unisolated"
        )
    return None


def run(args: argparse.Namespace) -> int:
    from concurrent.futures.process import BrokenProcessPool

    from ..dataset import row_problem
    from ..pipeline.shards import read_shards, to_row
    from ..support.jsonio import JsonlError
    from ..verify.engine import format_report, problems, terminal_progress, verify_rows

    if args.jobs < 1:
        print(f"verify: --jobs must be >= 1, got {args.jobs}", file=sys.stderr)
        return 2
    from ..support.cpus import too_many_workers

    problem = too_many_workers("--jobs", args.jobs)
    if problem:
        print(f"verify: {problem}", file=sys.stderr)
        return 2
    rows: list[Row] = []
    invalid: list[str] = []
    if args.rows is not None:
        code = _read_rows_file(args, rows, invalid)
        if code:
            return code
    else:
        shards_dir: Path = args.shards
        try:
            shards = read_shards(shards_dir, args.domain)
        except JsonlError as e:
            print(f"verify: error: {e}", file=sys.stderr)
            return 2
        if not shards:
            which = f" for {', '.join(args.domain)}" if args.domain else ""
            print(f"verify: error: no shards{which} in {shards_dir}", file=sys.stderr)
            return 2
        for srows in shards.values():
            for sr in srows:
                data = sr.data
                problem = (
                    row_problem({**data, "split": "train"}, require_labels=True)
                    if isinstance(data, dict)
                    else f"expected a JSON object, got {type(data).__name__}"
                )
                if problem:
                    invalid.append(f"{sr.where}: {problem}")
                else:
                    rows.append(to_row(data))
    if any((r.verification_payload or {}).get("kind") == "code" for r in rows):
        problem = _sandbox_problem(args)
        if problem is not None:
            print(f"verify: error: {problem}", file=sys.stderr)
            return 2
    try:
        results = verify_rows(rows, jobs=args.jobs, progress=terminal_progress())
    except BrokenProcessPool as e:  # a checker killed its worker (e.g. out of memory)
        print(f"verify: a worker process died ({e}); retry with --jobs 1", file=sys.stderr)
        return 2
    print(format_report(results))
    if invalid:
        print(f"\ninvalid rows (not verified): {len(invalid)}")
        for line in invalid:
            print(f"  {line}")
    return 1 if invalid or problems(results) else 0


def _read_rows_file(args: argparse.Namespace, rows: list[Row], invalid: list[str]) -> int:
    """Read ``--rows``: valid labelled rows into ``rows`` (of ``--domain`` when given),
    each invalid one as ``path:LINE: problem`` into ``invalid``; 2 when the file
    cannot be read at all, else 0."""
    from ..dataset import SLICE_HEADER_KEY, row_problem
    from ..schema import Row
    from ..support.jsonio import JsonlError, iter_jsonl, not_a_file

    path: Path = args.rows
    if not path.is_file():
        print(f"verify: error: {path}: {not_a_file(path)}", file=sys.stderr)
        return 2
    n = hidden = 0
    try:
        for lineno, data in iter_jsonl(path):
            if lineno == 1 and isinstance(data, dict) and SLICE_HEADER_KEY in data:
                continue
            n += 1
            if isinstance(data, dict) and data.get("label") is None and row_problem(data) is None:
                hidden += 1  # a public test row: its label is withheld, nothing to re-derive
                continue
            problem = row_problem(data, require_labels=True)
            if problem:
                invalid.append(f"{path}:{lineno}: {problem}")
            elif not args.domain or data["domain"] in args.domain:
                rows.append(Row.from_dict(data))
    except JsonlError as e:
        print(f"verify: error: {e}", file=sys.stderr)
        return 2
    if n == 0:
        print(f"verify: error: {path}:1: no rows in the file", file=sys.stderr)
        return 2
    if hidden:
        print(f"{path}: {hidden} hidden test rows skipped (labels withheld)", file=sys.stderr)
    if hidden == n:
        print(f"verify: error: {path}: every row is a hidden test row", file=sys.stderr)
        return 2
    return 0
