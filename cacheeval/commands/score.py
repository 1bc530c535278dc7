"""``cacheeval score``: grade a saved predictions file against the benchmark.

The rows are selected with the predictions header's split and domains unless
``--split``/``--domain`` say otherwise. Hidden test rows are scored only with
``--labels``; without it they (and their predictions) are left out, with a
note on stderr, or the command fails when nothing labelled remains.
Exit codes as ``cacheeval eval``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .eval import (
    EXIT_OK,
    UsageError,
    add_rows_arguments,
    drop_hidden,
    fail,
    hidden_rows_message,
    load_rows,
    prog_name,
    summary_line,
    write_report,
)

NAME = "score"
HELP = "Grade a saved predictions file against the labelled benchmark."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_rows_arguments(parser)
    parser.add_argument(
        "--predictions", required=True, type=Path, help="predictions JSONL from `predict`"
    )
    parser.add_argument("--out", required=True, type=Path, help="Markdown report to write")
    parser.add_argument("--json", type=Path, help="also write the report as JSON")
    parser.set_defaults(_prog=parser.prog)


def run(args: argparse.Namespace) -> int:
    from ..harness import UnlabelledRowsError, score
    from ..jsonio import sha256_file
    from ..predictions import read_predictions

    prog = prog_name(args, f"cacheeval {NAME}")
    try:
        try:
            header, preds = read_predictions(args.predictions)
        except OSError as e:
            raise UsageError(f"{e.filename}: {e.strerror}") from None
        except ValueError as e:  # JsonlError: path:LINE: ...
            raise UsageError(str(e)) from None
        rows, hidden = drop_hidden(
            load_rows(
                args,
                split=args.split or header.split,
                domains=args.domains if args.domains is not None else header.domains,
            ),
            args,
            prog,
        )
        if hidden:  # their predictions are not "extra": the rows exist, unlabelled
            left_out = set(hidden)
            preds = [p for p in preds if p.id not in left_out]
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
        try:
            report = score(
                preds,
                rows,
                cache_name=header.cache_name,
                cache_args=header.cache_args,
                cache_ref=header.cache_ref,
                dataset_path=str(args.bench),
                dataset_sha256=sha,
                split=args.split or header.split,
                domains=args.domains if args.domains is not None else header.domains,
                cost_per_call_usd=header.cost_per_call_usd,
                hidden_rows_skipped=len(hidden),
            )
        except UnlabelledRowsError:
            raise UsageError(hidden_rows_message(rows)) from None
        write_report(report, args.out, args.json)
    except UsageError as e:
        return fail(prog, str(e))
    except OSError as e:
        return fail(prog, f"{e.filename}: {e.strerror}")
    print(summary_line(report, args.out))
    return EXIT_OK
