"""``cacheeval score``: grade a saved predictions file against the benchmark.

The rows are selected with the predictions header's split and domains unless
``--split``/``--domain`` say otherwise. Hidden test rows are scored only with
``--labels``; without it they (and their predictions) are left out, with a
note on stderr, or the command fails when nothing labelled remains.
Exit codes as ``cacheeval eval``.

Rows and predictions are read side by side, once, and each row is kept only
as a few numbers (:mod:`cacheeval.results.columns`), so grading a million rows takes
tens of megabytes; predictions in another order than the rows still join by
id (those that come early wait in memory for their row).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .eval import (
    UsageError,
    add_failure_arguments,
    add_report_arguments,
    add_rows_arguments,
    add_view_argument,
    hidden_count_message,
    list_test_failures,
    run_report_command,
)

NAME = "score"
HELP = "Grade a saved predictions file against the labelled benchmark."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_rows_arguments(parser)
    parser.add_argument(
        "--predictions", required=True, type=Path, help="predictions JSONL from `predict`"
    )
    add_report_arguments(parser)
    add_failure_arguments(parser)
    add_view_argument(parser)
    parser.set_defaults(_prog=parser.prog)


def run(args: argparse.Namespace) -> int:
    from ._running import output_problem
    from .eval import fail, prog_name

    clash = output_problem(args, ("out", "json", "view"), ("bench", "labels", "predictions"))
    if clash is not None:
        return fail(prog_name(args, f"cacheeval {NAME}"), clash)
    return run_report_command(args, NAME, _score)


def _score(args: argparse.Namespace, prog: str) -> Any:
    from ..reporting.report import MAX_IDS, IdCheck, build_report_from_columns, make_provenance
    from ..results.columns import ScoreColumns, join_stream
    from ..results.predictions import iter_predictions
    from ..support.jsonio import sha256_file
    from ._running import no_rows, stream_rows

    try:
        header, predictions = iter_predictions(args.predictions)
    except OSError as e:
        raise UsageError(f"{e.filename}: {e.strerror}") from None
    except ValueError as e:  # JsonlError: path:LINE: ...
        raise UsageError(str(e)) from None
    split = args.split or header.split
    domains = args.domains if args.domains is not None else header.domains
    if not header.complete:
        print(
            f"{prog}: warning: {args.predictions} is the partial file of an interrupted "
            "run; the rows it lacks are scored as missing predictions",
            file=sys.stderr,
        )
    sha = sha256_file(args.bench)
    if header.dataset_sha256 is not None and header.dataset_sha256 != sha:
        print(
            f"{prog}: warning: {args.predictions} was made on a dataset with sha256 "
            f"{header.dataset_sha256[:12]}..., not {args.bench} ({sha[:12]}...)",
            file=sys.stderr,
        )
    rows = stream_rows(args, split=split, domains=domains, labels=args.labels)
    columns = ScoreColumns(list_test_failures=list_test_failures(args))
    splits: set[str] = set()

    def labelled_splits(stream: Any) -> Any:
        for row in stream:
            if row.is_labelled:
                splits.add(row.split)
            yield row

    try:
        seen = join_stream(labelled_splits(rows), predictions, columns)
    except ValueError as e:  # a bad predictions line: path:LINE: ...
        raise UsageError(str(e)) from None
    if not seen.n_rows:
        raise no_rows(args.bench)
    if seen.n_hidden:
        first = seen.hidden_ids[0]
        if args.labels is not None:
            raise UsageError(
                f"{args.labels}: no labels for {seen.n_hidden} selected test row(s), first {first}"
            )
        if not len(columns):
            raise UsageError(hidden_count_message(seen.n_hidden, seen.n_rows))
        print(
            f"{prog}: note: leaving out {seen.n_hidden} hidden test rows without labels "
            "(pass --labels to score them)",
            file=sys.stderr,
        )
    if len(columns) and seen.n_missing == len(columns):
        raise UsageError(
            f"{args.predictions}: none of its {seen.n_extra} prediction(s) has the id of a "
            f"selected row of {args.bench} (a predictions file of another benchmark, split "
            "or domain?)"
        )
    provenance = make_provenance(
        n_rows=len(columns),
        cache_name=header.cache_name,
        cache_args=header.cache_args,
        cache_ref=header.cache_ref,
        dataset_path=str(args.bench),
        dataset_sha256=sha,
        split=split if split is not None else (splits.pop() if len(splits) == 1 else None),
        domains=domains,
        hidden_rows_skipped=seen.n_hidden,
    )
    ids = IdCheck(
        seen.n_missing,
        tuple(seen.missing_ids[:MAX_IDS]),
        seen.n_extra,
        tuple(seen.extra_ids[:MAX_IDS]),
    )
    return build_report_from_columns(
        columns, provenance=provenance, ids=ids, cost_per_call_usd=header.cost_per_call_usd
    )
