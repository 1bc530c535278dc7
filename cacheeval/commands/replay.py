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
import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

from ..schema import SPLITS
from ._running import add_cache_arguments, non_negative_int, positive_float
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


def load_shared_cache(module: str, class_name: str | None, kwargs: dict[str, Any]) -> Any:
    """A shared cache from a dotted module name or a ``.py`` file: ``class_name``
    instantiated with ``kwargs``, or the module's ``cache`` (instantiated when
    it is a class). UsageError with one line on any failure."""
    try:
        if module.endswith(".py") or os.sep in module or "/" in module:
            path = Path(module)
            if not path.is_file():
                raise UsageError(f"{module}: no such file")
            spec = importlib.util.spec_from_file_location(f"cacheeval_shared_{path.stem}", path)
            if spec is None or spec.loader is None:
                raise UsageError(f"{module}: cannot be imported as a Python module")
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
        else:
            if os.getcwd() not in sys.path and "" not in sys.path:
                sys.path.insert(0, os.getcwd())
            mod = importlib.import_module(module)
    except UsageError:
        raise
    except Exception as e:
        raise UsageError(f"importing {module!r} raised {type(e).__name__}: {e}") from None
    attr = class_name or "cache"
    target = getattr(mod, attr, None)
    if target is None:
        raise UsageError(f"module {module!r} has no attribute {attr!r}")
    if isinstance(target, type):
        try:
            target = target(**kwargs)
        except Exception as e:
            raise UsageError(
                f"constructing {module}.{attr} raised {type(e).__name__}: {e}"
            ) from None
    elif kwargs:
        raise UsageError(f"cache arguments given but {module}.{attr} is not a class")
    if not (callable(getattr(target, "put", None)) and callable(getattr(target, "lookup", None))):
        raise UsageError(f"{module}.{attr} is not a shared cache: it needs put() and lookup()")
    return target


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


def run(args: argparse.Namespace) -> int:
    from ..replay.engine import DEFAULT_LATENCY_SIZES, replay
    from ..replay.report import build_replay_report
    from ..replay.shared_baselines import make_shared_baseline
    from ..support.jsonio import sha256_file
    from ..support.progress import terminal_progress

    prog = prog_name(args, f"cacheeval {NAME}")
    try:
        rows, distractors, judgements = _rows(args)
        kwargs = parse_cache_args(args.cache_args)
        if args.baseline is not None:
            if args.cache_class or kwargs:
                raise UsageError("--cache-class/--cache-arg apply to --cache-module")
            cache = make_shared_baseline(args.baseline)
        else:
            cache = load_shared_cache(args.cache_module, args.cache_class, kwargs)
        name = args.cache_name or str(getattr(cache, "name", type(cache).__name__))
        run_ = replay(
            cache,
            rows,
            distractors=distractors,
            judgements=judgements,
            seed=args.seed,
            latency_sizes=args.latency_sizes or DEFAULT_LATENCY_SIZES,
            timeout_ms=args.timeout_ms,
            cache_name=name,
            progress=terminal_progress(),
        )
        report = build_replay_report(
            run_,
            cache_args=kwargs,
            dataset_path=str(args.bench),
            dataset_sha256=sha256_file(args.bench),
            splits=sorted(set(args.splits or SPLITS), key=SPLITS.index),
        )
        write_report(report, args.out, args.json)
    except UsageError as e:
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
