"""``cacheeval predict``: run a cache over the benchmark and write only its
predictions (no labels read, so it works on the hidden-label test split).
Grade the file later with ``cacheeval score``. Exit codes as ``cacheeval eval``.

The rows stream from the file to the cache (in this process, or on
``--workers``/``--ray`` workers) and each prediction is written as it comes
back, so a file of millions of rows runs in flat memory (see
:mod:`cacheeval.run.parallel`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .eval import (
    EXIT_CACHE_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    UsageError,
    add_cache_arguments,
    add_rows_arguments,
    add_scale_arguments,
    fail,
    prog_name,
)

NAME = "predict"
HELP = "Run a cache over the benchmark and write its predictions (no labels needed)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_rows_arguments(parser, labels=False)
    add_cache_arguments(parser)
    add_scale_arguments(parser)
    parser.add_argument("--out", required=True, type=Path, help="predictions JSONL to write")
    parser.set_defaults(_prog=parser.prog)


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from ..reporting.report import utc_now
    from ..results.predictions import PredictionsWriter, make_header
    from ..run.harness import CacheCallError
    from ..support.jsonio import sha256_file
    from ..support.progress import terminal_progress
    from ._running import (
        SplitTracker,
        interrupted_message,
        non_empty,
        output_problem,
        started_cache,
        stream_rows,
    )

    prog = prog_name(args, f"cacheeval {NAME}")
    clash = output_problem(args, ("out",), ("bench",))
    if clash is not None:
        return fail(prog, clash)
    writer: PredictionsWriter | None = None
    n_err = n_timeout = 0
    bar = terminal_progress()
    try:
        splits = SplitTracker()
        rows = splits.through(non_empty(stream_rows(args), args.bench))
        sha = sha256_file(args.bench)
        try:
            with started_cache(args) as cache:
                header = make_header(
                    cache_name=cache.name,
                    created=utc_now(),
                    cache_args=cache.kwargs,
                    dataset_sha256=sha,
                    split=args.split,
                    domains=args.domains,
                    cost_per_call_usd=cache.prices,
                    cache_ref=cache.ref,
                )
                writer = PredictionsWriter(args.out, header)
                for pred in cache.predictor.run(rows, progress=bar):
                    writer.write(pred)
                    if pred.tier_used == "timeout":
                        n_timeout += 1
                    elif pred.error is not None:
                        n_err += 1
        except KeyboardInterrupt as stop:
            if bar is not None:
                bar.finish()
            if writer is None:
                raise
            for pred in getattr(stop, "predictions", []):
                writer.write(pred)
            writer.commit_partial(replace(header, split=splits.split(args.split)))
            print(interrupted_message(prog, writer.count, args.out), file=sys.stderr)
            return fail(prog, "interrupted", EXIT_INTERRUPTED)
        except BaseException:
            if writer is not None:
                writer.discard()
            raise
        if bar is not None:
            bar.finish()
        writer.commit(replace(header, split=splits.split(args.split)))
    except UsageError as e:
        return fail(prog, str(e))
    except CacheCallError as e:
        return fail(prog, f"the cache failed: {e}", EXIT_CACHE_FAILED)
    except OSError as e:
        return fail(prog, f"{e.filename}: {e.strerror}")
    print(
        f"{cache.name}: {writer.count} predictions ({n_err} errors, {n_timeout} timeouts) "
        f"-> {args.out}"
    )
    return EXIT_OK
