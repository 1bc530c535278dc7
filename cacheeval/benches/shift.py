"""Distribution shift between the public test split and a private slice.

A cache tuned (or trained) on the public set can look better there than on
rows it has never seen. :func:`evaluate_shift` grades each cache twice with
:func:`cacheeval.run.harness.evaluate` - on the labelled public test split and on
a slice from the held-out pools (:mod:`cacheeval.benches.slice`) - and
:func:`cache_shift` lines the two reports up per domain. The *shift* of a
metric is ``slice value - test value``; for accuracy and recall a negative
shift means the cache does worse on unseen families, for FHR a positive one.

Each side of a domain reports, from that domain's confusion counts
(:mod:`cacheeval.metrics.classification`)::

    accuracy = (TP + TN) / n
    FHR      = FP / (FP + TN)        (MISS rows served)
    recall   = TP / (TP + FN)        (HIT rows served)

each with its 95% Wilson interval; a metric with an empty denominator is
n/a and so is its shift.

>>> from cacheeval.metrics.classification import Confusion
>>> t = side_of_confusion(Confusion(tp=8, fp=1, fn=2, tn=9))
>>> s = side_of_confusion(Confusion(tp=5, fp=3, fn=5, tn=7))
>>> round(shift(t.accuracy, s.accuracy), 3), round(shift(t.fhr, s.fhr), 3)
(-0.25, 0.2)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..metrics.classification import Confusion, Estimate, accuracy, fhr, recall
from ..reporting.report import Report
from ..results.predictions import Prediction
from ..schema import DOMAINS, Row

#: The metrics compared, in table order: (key, column name, higher is better).
METRICS: tuple[tuple[str, str, bool], ...] = (
    ("accuracy", "accuracy", True),
    ("fhr", "FHR", False),
    ("recall", "recall", True),
)


@dataclass(frozen=True, slots=True)
class Side:
    """One set's numbers for one domain (or for all rows)."""

    n: int
    confusion: Confusion
    accuracy: Estimate
    fhr: Estimate
    recall: Estimate


@dataclass(frozen=True, slots=True)
class DomainShift:
    """A domain on the test split and on the slice (None: no rows there)."""

    domain: str
    test: Side | None
    slice: Side | None


@dataclass(frozen=True, slots=True)
class CacheShift:
    """One cache: all rows, and every domain, on both sets."""

    cache: str
    test: Side
    slice: Side
    domains: tuple[DomainShift, ...]


def side_of_confusion(c: Confusion) -> Side:
    """:class:`Side` from confusion counts."""
    return Side(n=c.n, confusion=c, accuracy=accuracy(c), fhr=fhr(c), recall=recall(c))


def shift(test: Estimate, slice_: Estimate) -> float | None:
    """``slice value - test value``, None when either is undefined.

    >>> from cacheeval.metrics.classification import proportion
    >>> shift(proportion(3, 4), proportion(1, 4))
    -0.5
    >>> shift(proportion(0, 0), proportion(1, 4)) is None
    True
    """
    if test.value is None or slice_.value is None:
        return None
    return slice_.value - test.value


def cache_shift(cache: str, test: Report, slice_: Report) -> CacheShift:
    """Line up two reports of one cache (see the module doc)."""
    by_test = {s.key: s for s in test.per_domain}
    by_slice = {s.key: s for s in slice_.per_domain}
    domains = tuple(
        DomainShift(
            d,
            side_of_confusion(by_test[d].confusion) if d in by_test else None,
            side_of_confusion(by_slice[d].confusion) if d in by_slice else None,
        )
        for d in DOMAINS
        if d in by_test or d in by_slice
    )
    return CacheShift(
        cache, side_of_confusion(test.confusion), side_of_confusion(slice_.confusion), domains
    )


def evaluate_shift(
    caches: Sequence[tuple[str, Callable[[], Any]]],
    test_rows: Sequence[Row],
    slice_rows: Sequence[Row],
    *,
    log: Callable[[str], None] = lambda _msg: None,
) -> tuple[list[CacheShift], dict[str, tuple[Report, Report]], dict[str, list[Prediction]]]:
    """Grade every cache on both sets: :func:`cacheeval.run.harness.predict` (the
    cache sees only pairs), then :func:`cacheeval.run.harness.score`.

    ``caches`` holds (name, factory): each set gets a fresh instance, so no
    state carries over from the test split to the slice. Returns the shifts,
    the two full reports per cache, and each cache's test-split predictions
    (label-free, e.g. for the leaderboard's reference rows).
    """
    shifts: list[CacheShift] = []
    reports: dict[str, tuple[Report, Report]] = {}
    test_predictions: dict[str, list[Prediction]] = {}
    for name, make in caches:
        pair = []
        for label, rows in (("test split", test_rows), ("slice", slice_rows)):
            log(f"{name}: {label} ({len(rows)} rows)")
            preds, report = _grade(name, make, rows)
            if label == "test split":
                test_predictions[name] = preds
            pair.append(report)
        reports[name] = (pair[0], pair[1])
        shifts.append(cache_shift(name, pair[0], pair[1]))
    return shifts, reports, test_predictions


def _grade(
    name: str, make: Callable[[], Any], rows: Sequence[Row]
) -> tuple[list[Prediction], Report]:
    """A fresh instance of one cache on ``rows``: its predictions (the cache sees
    only pairs) and their report, graded as the test split."""
    from ..run.harness import cache_name_of, predict, score

    cache = make()
    preds = predict(cache, rows)
    return preds, score(preds, rows, cache_name=name or cache_name_of(cache), split="test")


@dataclass(frozen=True, slots=True)
class SeedSlice:
    """One more slice seed: every cache's all-domain numbers on that seed's slice."""

    seed: str
    slice_sha256: str
    n: int
    sides: dict[str, Side]


def evaluate_slices(
    caches: Sequence[tuple[str, Callable[[], Any]]],
    slices: Sequence[tuple[str, str, Sequence[Row]]],
    *,
    log: Callable[[str], None] = lambda _msg: None,
) -> list[SeedSlice]:
    """Grade every cache on further slices, given as (seed, slice sha256, rows): a
    fresh instance per slice, as :func:`evaluate_shift` does."""
    out: list[SeedSlice] = []
    for seed, sha, rows in slices:
        sides: dict[str, Side] = {}
        for name, make in caches:
            log(f"{name}: slice of seed {seed} ({len(rows)} rows)")
            sides[name] = side_of_confusion(_grade(name, make, rows)[1].confusion)
        out.append(SeedSlice(seed, sha, len(rows), sides))
    return out


def write_reference_predictions(
    folder: Path, predictions: dict[str, list[Prediction]], dataset_sha256: str
) -> list[Path]:
    """Each cache's test-split predictions as a predictions file (header with
    its name; label-free) in ``folder``, named after the cache: what
    ``cacheeval serve --references`` grades as the board's fixed rows."""
    from ..reporting.report import utc_now
    from ..results.predictions import make_header, write_predictions

    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for name, preds in predictions.items():
        header = make_header(
            cache_name=name, created=utc_now(), dataset_sha256=dataset_sha256, split="test"
        )
        slug = re.sub(r"[^a-z0-9]+", "-", name.casefold()).strip("-")
        write_predictions(folder / f"{slug}.jsonl", header, preds)
        out.append(folder / f"{slug}.jsonl")
    return out


# --- rendering ------------------------------------------------------------------------------


def _value(e: Estimate) -> float | None:
    return None if e.value is None else round(e.value, 4)


def _side_json(s: Side | None) -> dict[str, Any] | None:
    if s is None:
        return None
    out: dict[str, Any] = {"n": s.n}
    for key, _, _ in METRICS:
        e: Estimate = getattr(s, key)
        out[key] = {
            "value": _value(e),
            "ci_low": None if e.ci_low is None else round(e.ci_low, 4),
            "ci_high": None if e.ci_high is None else round(e.ci_high, 4),
            "numerator": e.numerator,
            "denominator": e.denominator,
        }
    return out


def _shifts_json(test: Side | None, slice_: Side | None) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for key, _, _ in METRICS:
        d = (
            None
            if test is None or slice_ is None
            else shift(getattr(test, key), getattr(slice_, key))
        )
        out[key] = None if d is None else round(d, 4)
    return out


def to_json(
    shifts: Sequence[CacheShift], meta: dict[str, Any], seeds: Sequence[SeedSlice] = ()
) -> dict[str, Any]:
    """The machine-readable report (key order fixed); ``seeds``: the further slice
    seeds, each cache's all-domain slice numbers and their shift from test."""
    tests = {c.cache: c.test for c in shifts}
    return {
        "meta": meta,
        "seeds": [
            {
                "seed": x.seed,
                "slice_sha256": x.slice_sha256,
                "n_slice": x.n,
                "caches": [
                    {
                        "cache": name,
                        "slice": _side_json(side),
                        "shift": _shifts_json(tests.get(name), side),
                    }
                    for name, side in x.sides.items()
                ],
            }
            for x in seeds
        ],
        "caches": [
            {
                "cache": c.cache,
                "all": {
                    "test": _side_json(c.test),
                    "slice": _side_json(c.slice),
                    "shift": _shifts_json(c.test, c.slice),
                },
                "domains": [
                    {
                        "domain": d.domain,
                        "test": _side_json(d.test),
                        "slice": _side_json(d.slice),
                        "shift": _shifts_json(d.test, d.slice),
                    }
                    for d in c.domains
                ],
            }
            for c in shifts
        ],
    }


def _num(e: Estimate | None) -> str:
    return "n/a" if e is None or e.value is None else f"{e.value:.3f}"


def _signed(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.3f}"


def _cells(test: Side | None, slice_: Side | None) -> list[str]:
    cells = [str(test.n if test else 0), str(slice_.n if slice_ else 0)]
    for key, _, _ in METRICS:
        t = getattr(test, key) if test else None
        s = getattr(slice_, key) if slice_ else None
        d = None if t is None or s is None else shift(t, s)
        cells += [_num(t), _num(s), _signed(d)]
    return cells


def _header() -> list[str]:
    head = ["n test", "n slice"]
    for _, name, _ in METRICS:
        head += [f"{name} test", f"{name} slice", f"Δ {name}"]
    return head


def _table(first: str, rows: Sequence[Sequence[str]]) -> list[str]:
    head = [first, *_header()]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines


def seeds_table(
    shifts: Sequence[CacheShift], demo_seed: str, seeds: Sequence[SeedSlice]
) -> list[str]:
    """One row per cache and slice seed (the demo seed first): the slice's FHR,
    recall and accuracy and their shift from the test split."""
    head = ["cache", "seed", "n slice", "FHR slice", "Δ FHR", "recall slice", "Δ recall",
            "accuracy slice", "Δ accuracy"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in shifts:
        per_seed = [(demo_seed, c.slice)]
        per_seed += [(x.seed, x.sides[c.cache]) for x in seeds if c.cache in x.sides]
        for seed, side in per_seed:
            cells = [c.cache, f"`{seed}`", str(side.n)]
            for key in ("fhr", "recall", "accuracy"):
                t, v = getattr(c.test, key), getattr(side, key)
                cells += [_num(v), _signed(shift(t, v))]
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def render_markdown(
    shifts: Sequence[CacheShift], meta: dict[str, Any], seeds: Sequence[SeedSlice] = ()
) -> str:
    """``reports/SHIFT.md``: an overview, with ``seeds`` a table of every slice seed,
    then one per-domain table per cache (demo seed)."""
    lines = [
        "# Test split vs private slice: the overfitting signal",
        "",
        f"Generated by `{meta.get('command', 'scripts/run_shift.py')}`. Every cache is graded "
        f"on the public test split ({meta.get('n_test')} rows, labels from "
        "`private/test_labels.jsonl`) and on a slice of "
        f"{meta.get('n_slice')} rows drawn from the held-out pools "
        "(`sources/heldout/`, families no public shard uses) with the demo seed "
        f"`{meta.get('seed')}` (slice sha256 `{str(meta.get('slice_sha256'))[:16]}…`). "
        "The demo seed is public, so this slice is a fixed, reproducible example; a round's "
        "real slice uses a secret seed (docs/leaderboard.md).",
        "",
        "Δ = slice value − test value. Accuracy and recall falling, or FHR rising, on the slice "
        "means the cache does worse on request families it has not seen: the gap an entrant "
        "tuned on the public set should expect. Recall is n/a where a domain has no HIT rows "
        "(creative and personalized are never-cache by policy). Per-domain slices hold 40 rows, "
        "so a single-domain Δ below about ±0.15 is within noise (see the Wilson intervals in "
        "SHIFT.json).",
        "",
        "## All domains",
        "",
    ]
    lines += _table("cache", [[c.cache, *_cells(c.test, c.slice)] for c in shifts])
    if seeds:
        lines += [
            "",
            "## Every slice seed",
            "",
            f"The demo seed and {len(seeds)} more public seeds "
            f"({', '.join(f'`{x.seed}`' for x in seeds)}), each a slice of the same size "
            "drawn from the same held-out pools: how much a cache's slice figures move with "
            "the draw. Δ = slice value − test value.",
            "",
        ]
        lines += seeds_table(shifts, str(meta.get("seed")), seeds)
    for c in shifts:
        lines += ["", f"## {c.cache}", ""]
        rows = [[d.domain, *_cells(d.test, d.slice)] for d in c.domains]
        rows.append(["**all**", *_cells(c.test, c.slice)])
        lines += _table("domain", rows)
    return "\n".join(lines) + "\n"
