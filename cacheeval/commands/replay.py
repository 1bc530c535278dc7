"""``cacheeval replay``: run a shared cache over one store holding side a of
every selected row and look up side b of every row against all of it (see
:mod:`cacheeval.replay.engine`), then write the replay report.

The cache is a reference baseline (``--baseline``) or a :class:`SharedCache`
loaded from a module (``--cache-module``/``--cache-class``/``--cache-arg``),
e.g. the reference adapters::

    cacheeval replay --bench cachebench.jsonl --split test --labels private/test_labels.jsonl \\
        --cache-module adapters.gptcache_shared --cache-class GPTCacheShared \\
        --cache-arg path=fast --out replay.md

Exit codes: 0 success; 2 a usage or data error (one line on stderr).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..schema import SPLITS
from ._running import add_cache_arguments, non_negative_int, output_problem, positive_float
from .eval import (
    EXIT_OK,
    UsageError,
    add_report_arguments,
    fail,
    hidden_rows_message,
    parse_cache_args,
    prog_name,
    write_report,
)

NAME = "replay"
HELP = "Replay a shared cache: one store for all rows, top-1 retrieval per lookup."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bench", required=True, type=Path, help="benchmark JSONL file")
    parser.add_argument(
        "--split",
        dest="splits",
        action="append",
        choices=SPLITS,
        help="look up the rows of this split (repeatable; default: every split)",
    )
    parser.add_argument("--labels", type=Path, help="private labels file of the test split")
    add_cache_arguments(parser, shared=True)
    from .eval import add_isolation_arguments

    add_isolation_arguments(parser)
    parser.add_argument(
        "--distractors",
        type=non_negative_int,
        default=0,
        metavar="N",
        help="also store side a of N rows from the other splits (seeded draw)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of put/lookup order (0)")
    parser.add_argument(
        "--latency-size",
        dest="latency_sizes",
        action="append",
        type=non_negative_int,
        metavar="N",
        help="store sizes at which lookup latency is probed (default 100 and 1000)",
    )
    parser.add_argument("--timeout-ms", type=positive_float, metavar="N",
                        help="abandon a call after N ms (the cache is then stuck)")  # fmt: skip
    add_report_arguments(parser)
    parser.set_defaults(_prog=parser.prog)


def _rows(args: argparse.Namespace) -> tuple[list[Any], list[Any], list[Any]]:
    """(rows looked up, distractor rows drawn from the other splits, every
    labelled row: the pairs that judge the entries)."""
    import random

    from ..dataset import load_bench

    try:
        every = load_bench(args.bench, labels_path=args.labels)
    except (OSError, ValueError) as e:
        text = str(e).strip().splitlines()
        raise UsageError(text[0] if text else type(e).__name__) from None
    splits = set(args.splits or SPLITS)
    rows = [r for r in every if r.split in splits]
    if not rows:
        raise UsageError(f"{args.bench}: no rows in split(s) {', '.join(sorted(splits))}")
    if any(not r.is_labelled for r in rows):
        raise UsageError(hidden_rows_message(rows))
    others = [r for r in every if r.split not in splits]
    if args.distractors > len(others):
        raise UsageError(
            f"--distractors {args.distractors}: only {len(others)} rows outside the looked-up"
            " split(s)"
        )
    picked = random.Random(args.seed).sample(others, args.distractors)
    return rows, picked, [r for r in every if r.is_labelled]


def _shared_cache(args: argparse.Namespace, kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """The shared cache the options name: in a process of its own (under
    bubblewrap with --isolate), or built here with --in-process."""
    from ..replay.remote import RemoteSharedCache
    from ..run.blockrun import CacheSpec
    from ._running import KEYED_SHARED_LOADER, run_mode

    mode, wrap = run_mode(args)
    if args.baseline is not None:
        module, class_name = "baseline", args.baseline
    else:
        module, class_name = args.cache_module, args.cache_class
    spec = CacheSpec(module, class_name, kwargs, loader="cacheeval.replay.remote:load_shared")
    if args.keyed:
        spec = spec.wrapped_by(KEYED_SHARED_LOADER)
    if mode == "in-process":
        return spec.build(), wrap
    return RemoteSharedCache(spec.portable(), timeout_ms=args.timeout_ms, wrap=wrap), wrap


def run(args: argparse.Namespace) -> int:
    from ..replay.engine import DEFAULT_LATENCY_SIZES, replay
    from ..replay.remote import RemoteSharedCache
    from ..replay.report import build_replay_report
    from ..run.harness import CacheLoadError
    from ..run.isolate import IsolationError
    from ..support.jsonio import sha256_file
    from ..support.progress import terminal_progress

    prog = prog_name(args, f"cacheeval {NAME}")
    clash = output_problem(args, ("out", "json"), ("bench", "labels"))
    if clash is not None:
        return fail(prog, clash)
    try:
        rows, distractors, judgements = _rows(args)
        kwargs = parse_cache_args(args.cache_args)
        if args.baseline is not None and (args.cache_class or kwargs):
            raise UsageError("--cache-class/--cache-arg apply to --cache-module")
        cache, wrap = _shared_cache(args, kwargs)
        remote = isinstance(cache, RemoteSharedCache)
        mode = ("process, bubblewrap" if wrap else "process") if remote else "in-process"
        name = args.cache_name or str(getattr(cache, "name", type(cache).__name__))
        run_ = replay(
            cache,
            rows,
            distractors=distractors,
            judgements=judgements,
            seed=args.seed,
            latency_sizes=args.latency_sizes or DEFAULT_LATENCY_SIZES,
            timeout_ms=None if remote else args.timeout_ms,  # the cache process enforces it
            cache_name=name,
            progress=terminal_progress(),
        )
        report = build_replay_report(
            run_,
            cache_args=kwargs,
            dataset_path=str(args.bench),
            dataset_sha256=sha256_file(args.bench),
            splits=sorted(set(args.splits or SPLITS), key=SPLITS.index),
            run_mode=mode,
        )
        write_report(report, args.out, args.json)
    except (UsageError, CacheLoadError, IsolationError) as e:
        return fail(prog, str(e))
    except (RuntimeError, TypeError, ValueError) as e:
        return fail(prog, str(e))
    except OSError as e:
        return fail(prog, f"{e.filename}: {e.strerror}" if e.filename else str(e))
    r = report.rates

    def fmt(v: float | None) -> str:
        return "null" if v is None else f"{v:.3f}"

    auc = "null" if report.p_chr_auc is None else f"{report.p_chr_auc:.3f}"
    print(
        f"{name}: {report.counts.n} lookups over {run_.n_entries} entries, CHR {fmt(r.chr.value)},"
        f" precision {fmt(r.precision.value)}, FHR {fmt(r.fhr.value)}, wrong-entry"
        f" {fmt(r.wrong_entry_rate.value)}, P-CHR AUC {auc} -> {args.out}"
    )
    return EXIT_OK
