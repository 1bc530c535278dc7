"""``cacheeval predict``: run a cache over the benchmark and write only its
predictions (no labels read, so it works on the hidden-label test split).
Grade the file later with ``cacheeval score``. Exit codes as ``cacheeval eval``."""

from __future__ import annotations

import argparse
from pathlib import Path

from .eval import (
    EXIT_CACHE_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    UsageError,
    add_cache_arguments,
    add_rows_arguments,
    fail,
    load_rows,
    prog_name,
    resolve_cache,
    write_partial,
)

NAME = "predict"
HELP = "Run a cache over the benchmark and write its predictions (no labels needed)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_rows_arguments(parser, labels=False)
    add_cache_arguments(parser)
    parser.add_argument("--out", required=True, type=Path, help="predictions JSONL to write")
    parser.set_defaults(_prog=parser.prog)


def run(args: argparse.Namespace) -> int:
    from ..harness import CacheCallError, RunInterrupted, cost_table, predict, rows_split
    from ..jsonio import sha256_file
    from ..predictions import make_header, write_predictions
    from ..progress import terminal_progress
    from ..report import utc_now

    prog = prog_name(args, f"cacheeval {NAME}")
    try:
        rows = load_rows(args)
        resolved = resolve_cache(args)
        cache, name = resolved.cache, resolved.name
        try:
            prices = cost_table(cache)
        except TypeError as e:
            raise UsageError(f"{name}: {e}") from None
        header_args = dict(
            cache_name=name,
            created=utc_now(),
            cache_args=resolved.kwargs,
            dataset_sha256=sha256_file(args.bench),
            split=args.split or rows_split(rows),
            domains=args.domains,
            cost_per_call_usd=prices,
            cache_ref=resolved.ref,
        )
        try:
            preds = predict(
                cache,
                rows,
                on_error=args.on_error,
                timeout_ms=args.timeout_ms,
                progress=terminal_progress(),
            )
        except RunInterrupted as stop:
            write_partial(args.out, stop, header_args, prog)
            return fail(prog, "interrupted", EXIT_INTERRUPTED)
        write_predictions(args.out, make_header(**header_args), preds)
    except UsageError as e:
        return fail(prog, str(e))
    except CacheCallError as e:
        return fail(prog, f"the cache failed: {e}", EXIT_CACHE_FAILED)
    except OSError as e:
        return fail(prog, f"{e.filename}: {e.strerror}")
    n_err = sum(1 for p in preds if p.error is not None and p.tier_used != "timeout")
    n_timeout = sum(1 for p in preds if p.tier_used == "timeout")
    print(f"{name}: {len(preds)} predictions ({n_err} errors, {n_timeout} timeouts) -> {args.out}")
    return EXIT_OK
