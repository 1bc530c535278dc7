"""Writing a per-pair page (``cacheeval view``'s HTML) from predictions files:
the one place a page is made, for ``cacheeval view`` and for ``eval --view`` /
``score --view``, which link their reports' counts to it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ._running import UsageError, _one_line, no_rows


def write_page(args: argparse.Namespace, prog: str) -> tuple[str, list[str]]:
    """Write the page ``args`` describe (predictions, bench, split, domains,
    labels, title, out; mode 600 with a note when it shows hidden test
    labels); its summary line and the caches' names on it, in file order
    (``cacheeval eval --view`` links its reports to them)."""
    from ..support.jsonio import PRIVATE_MODE, PUBLIC_MODE, write_bytes_atomic

    page, n_rows, names, n_private = _make_page(args, prog)
    # A page showing hidden test labels is as private as the labels file.
    mode = PRIVATE_MODE if n_private else PUBLIC_MODE
    body = page.encode("utf-8")
    del page  # a long run's page is large: one copy at a time
    write_bytes_atomic(args.out, body, mode=mode)
    if n_private:
        print(
            f"{prog}: note: {args.out} shows the hidden labels of {n_private} test rows "
            "(written private, mode 600): do not publish it",
            file=sys.stderr,
        )
    size = len(body)
    return f"{n_rows} pairs x {len(names)} caches -> {args.out} ({size / 1e6:.2f} MB)", names


def _read_runs(paths: Sequence[Path], shown: Sequence[str] | None = None) -> list[Any]:
    """The runs of ``paths``; ``shown``: how the page names each file (default
    its base name; ``eval --view`` names predictions it does not keep)."""
    from ..reporting.viewer import CacheRun, file_label, unique_names
    from ..results.predictions import read_predictions

    read = []
    for path in paths:
        try:
            header, predictions = read_predictions(path)
        except OSError as e:
            raise UsageError(_one_line(e)) from None
        except ValueError as e:  # JsonlError: path:LINE: ...
            raise UsageError(str(e)) from None
        read.append((path, header, {p.id: p for p in predictions}))
    files = list(shown) if shown is not None else [file_label(p) for p, _, _ in read]
    names = unique_names([h.cache_name for _, h, _ in read], files)
    return [
        CacheRun(name, file, header, preds)
        for name, file, (_, header, preds) in zip(names, files, read, strict=True)
    ]


def _shared(values: list[Any]) -> Any:
    """The one value every header gives, else None."""
    return values[0] if values and all(v == values[0] for v in values) else None


def _first_line_of(path: Path, bad: set[str]) -> int | str:
    """The line of the first prediction of ``path`` whose id is in ``bad``."""
    from ..support.jsonio import iter_jsonl

    for lineno, data in iter_jsonl(path):
        if isinstance(data, dict) and data.get("id") in bad:
            return lineno
    return "?"


def check_ids(
    paths: Sequence[Path], runs: Sequence[Any], bench: Path, all_ids: set[str], selected: set[str]
) -> list[str]:
    """Raise :class:`UsageError` for a prediction that is no row of the bench
    or a file with none for a selected row; return notes on rows a file lacks."""
    notes = []
    for path, run in zip(paths, runs, strict=True):
        unknown = [rid for rid in run.predictions if rid not in all_ids]
        if unknown:
            line = _first_line_of(path, set(unknown))
            raise UsageError(
                f"{path}:{line}: prediction id {unknown[0]!r} is not a row of {bench} "
                f"({len(unknown)} of the file's {len(run.predictions)} ids are not; "
                "predictions of another benchmark?)"
            )
        hits = sum(1 for rid in run.predictions if rid in selected)
        if not hits:
            raise UsageError(
                f"{path}: none of its {len(run.predictions)} prediction(s) is for a selected "
                f"row of {bench} (split {run.header.split}; choose the rows with --split/--domain)"
            )
        if hits < len(selected):
            notes.append(
                f"{path}: no prediction for {len(selected) - hits} of the {len(selected)} "
                "selected rows (shown as missing)"
            )
    return notes


def _make_page(args: argparse.Namespace, prog: str) -> tuple[str, int, list[str], int]:
    """The page, its rows, its caches' names and how many rows carry hidden labels.
    The rows are encoded as they are read and not kept (a long run's rows
    would take gigabytes)."""
    from ..reporting.viewer import ViewBuilder, summarize
    from ..reporting.viewer_page import render_page
    from ..schema import DOMAINS, SPLITS
    from ._running import stream_rows

    runs = _read_runs(args.predictions, getattr(args, "file_labels", None))
    split = args.split or _shared([r.header.split for r in runs])
    if split not in SPLITS:
        split = None
    domains = args.domains
    if domains is None:
        shared = _shared([r.header.domains for r in runs])
        domains = list(shared) if shared else None
    builder = ViewBuilder()
    all_ids: set[str] = set()
    n_hidden = n_private = 0
    for row in stream_rows(args, split=SPLITS, domains=DOMAINS, labels=args.labels):
        all_ids.add(row.id)
        if split is not None and row.split != split:
            continue
        if domains is not None and row.domain not in domains:
            continue
        if not row.is_labelled:
            n_hidden += 1
            continue
        n_private += args.labels is not None and row.split == "test"
        builder.add(row)
    n_rows = len(builder.keys)
    if not n_rows:
        if n_hidden:
            raise UsageError(
                f"{args.bench}: the {n_hidden} selected row(s) are hidden test rows: "
                "pass --labels (the private labels file) to show them"
            )
        raise no_rows(args.bench)
    if n_hidden:
        print(
            f"{prog}: note: leaving out {n_hidden} hidden test rows without labels "
            "(pass --labels to show them)",
            file=sys.stderr,
        )
    selected = {k.id for k in builder.keys}
    for note in check_ids(args.predictions, runs, args.bench, all_ids, selected):
        print(f"{prog}: note: {note}", file=sys.stderr)
    bench_name = Path(args.bench).name
    title = args.title or f"CacheEval pairs: {bench_name}" + (f", {split} split" if split else "")
    source = {
        "bench": bench_name,
        "split": split,
        "domains": domains,
        "n_rows": n_rows,
        "labels": Path(args.labels).name if args.labels is not None else None,
    }
    data = builder.data(runs, title=title, source=source)
    summaries = summarize(builder.keys, builder.kinds, runs)
    return render_page(data, summaries), n_rows, [r.name for r in runs], n_private
