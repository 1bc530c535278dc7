"""Shared-cache replay: one store, top-1 retrieval over everything stored.

Pair mode gives every row its own one-entry cache. A replay runs a
:class:`~cacheeval.cache.SharedCache` the way production does:

1. **Entries.** Side a of every selected row, plus side a of ``distractors``
   rows from other splits, each ``put`` under an opaque answer id (``e000123``,
   numbered in put order; the replay keeps the id -> row map, the cache never
   sees a row id, label or domain). Puts run in a seeded random order.
2. **Lookups.** Side b of every selected row, in another seeded order,
   against the full store. A lookup returning an entry *fires*. Its outcome
   (:func:`cacheeval.metrics.replay.lookup_outcome`) is judged from labelled
   pairs only (:func:`lookup_truths`): an entry is *acceptable* when it is the
   row's own partner on a HIT row, a stored copy of the lookup request itself
   (after normalisation, :meth:`Request.key`), or the side a of any labelled
   HIT pair whose side b is the lookup request; it is *judged wrong* when it is
   the side a of a labelled MISS pair whose side b is the lookup request (the
   row's own partner on a MISS row is one). A ``policy_no_cache`` row is never
   served: every entry is wrong for it. Entries no label relates to the
   request are *unjudged*.
3. **Latency as the store grows.** Before the store is full, a fixed probe
   set of lookups is timed at each size in ``latency_sizes`` (default 100 and
   1,000 entries); the main lookups give the latency at the full store. Probe
   results are not scored.

A cache that raises, exits, hangs past ``timeout_ms`` or returns something
that is not ``(known answer id | None, finite score)`` gives an error lookup
(no fire, counted and reported); after a timeout the cache is considered
stuck and the remaining calls are recorded as errors without being made.

For the P-CHR curve each lookup needs a candidate: the entry it fired on, or,
when it did not fire and the cache has ``nearest``, the entry ``nearest``
names (untimed). Scores of fired lookups and of their candidates share one
scale, so the curve at the cache's own threshold reproduces its decisions.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..metrics.replay import NONE, lookup_outcome
from ..schema import HIT, POLICY_NO_CACHE, Request, RequestKey, Row

#: Store sizes at which the probe lookups are timed (below the full store).
DEFAULT_LATENCY_SIZES: tuple[int, ...] = (100, 1000)
#: Probe lookups timed at each of those sizes.
DEFAULT_PROBES = 200
MAX_ERROR_CHARS = 200


@dataclass(frozen=True, slots=True)
class LookupRecord:
    """One main lookup: the row (truth, kept by the replay), what the cache
    returned, its outcome, and the candidate the curve uses."""

    row_id: str
    domain: str
    label: str
    servable: bool
    entry_row: str | None
    score: float | None
    outcome: str
    candidate_score: float | None
    candidate_outcome: str
    latency_ms: float | None
    error: str | None


@dataclass(frozen=True, slots=True)
class StageLatency:
    """Lookup latencies (ms) timed with ``n_entries`` entries in the store."""

    n_entries: int
    latencies_ms: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class ReplayRun:
    """Everything a replay observed; :mod:`cacheeval.replay.report` scores it."""

    cache_name: str
    seed: int
    n_entries: int
    n_distractors: int
    lookups: tuple[LookupRecord, ...]
    stages: tuple[StageLatency, ...]
    put_latencies_ms: tuple[float, ...]
    put_errors: int
    first_put_error: str | None
    seconds: float


@dataclass(frozen=True, slots=True)
class LookupTruth:
    """What the labels say about the entries for one lookup (see the module docstring)."""

    acceptable: frozenset[str]
    partners: frozenset[str]
    judged_wrong: frozenset[str]


@dataclass(frozen=True, slots=True)
class _Entry:
    answer_id: str
    row_id: str
    request: Request


def describe(e: BaseException) -> str:
    """``"TypeName: first line"``, at most :data:`MAX_ERROR_CHARS` characters
    (a call that failed in a cache process carries its own, ``described``)."""
    described = getattr(e, "described", None)
    if isinstance(described, str):
        return described
    text = str(e).strip().splitlines()
    out = f"{type(e).__name__}: {text[0] if text else '(no message)'}"
    return out if len(out) <= MAX_ERROR_CHARS else out[: MAX_ERROR_CHARS - 3] + "..."


def answer_problem(value: Any, known: set[str] | dict[str, Any]) -> str | None:
    """Why a ``lookup``/``nearest`` return value is unusable (None when it is fine).

    >>> answer_problem(("e000001", 0.5), {"e000001"}) is None
    True
    >>> answer_problem(("e9", 0.5), {"e000001"}), answer_problem((None, float("nan")), set())
    ("returned unknown answer id 'e9'", 'score is nan')
    """
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        return f"returned {type(value).__name__}, not (answer_id | None, score)"
    answer, score = value
    if answer is not None and not isinstance(answer, str):
        return f"answer id is {type(answer).__name__}, not str or None"
    if isinstance(answer, str) and answer not in known:
        return f"returned unknown answer id {answer[:40]!r}"
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        return f"score is {type(score).__name__}, not a number"
    if not math.isfinite(score):
        return f"score is {score!r}"
    return None


def _ms(fn: Callable[..., Any], t0: int) -> float:
    """The call's latency: what a cache in another process measured around its
    own call (``last_call_ms``; the pipe's round trip is not the cache's), else
    the time since ``t0`` here."""
    measured = getattr(getattr(fn, "__self__", None), "last_call_ms", None)
    if isinstance(measured, float):
        return measured
    return (time.perf_counter_ns() - t0) / 1e6


class _Caller:
    """Runs cache calls inline, or on one worker thread with a timeout. After a
    timeout ``stuck`` is set and no further call is made."""

    def __init__(self, timeout_ms: float | None) -> None:
        self.timeout_s = None if timeout_ms is None else timeout_ms / 1000.0
        self.stuck: str | None = None

    def __call__(self, fn: Callable[..., Any], *args: Any) -> tuple[Any, str | None, float]:
        """(value, error, ms)."""
        if self.stuck is not None:
            return None, f"NotRun: {self.stuck}", 0.0
        if self.timeout_s is None:
            t0 = time.perf_counter_ns()
            try:
                value = fn(*args)
            except (Exception, SystemExit) as e:
                return None, describe(e), _ms(fn, t0)
            return value, None, _ms(fn, t0)
        box: dict[str, Any] = {}

        def target() -> None:
            t0 = time.perf_counter_ns()
            try:
                box["value"] = fn(*args)
            except BaseException as e:  # handed back to the replay thread
                box["error"] = e
            box["ns"] = time.perf_counter_ns() - t0

        worker = threading.Thread(target=target, name="cacheeval-replay-call", daemon=True)
        worker.start()
        worker.join(self.timeout_s)
        if worker.is_alive():
            self.stuck = f"an earlier call hung past {self.timeout_s * 1000:g} ms"
            return None, f"timeout after {self.timeout_s * 1000:g} ms", self.timeout_s * 1000
        ms = box["ns"] / 1e6
        if "error" in box:
            failure: BaseException = box["error"]
            if isinstance(failure, KeyboardInterrupt):
                raise failure
            return None, describe(failure), ms
        return box["value"], None, ms


def replay(
    cache: Any,
    rows: Sequence[Row],
    *,
    distractors: Sequence[Row] = (),
    judgements: Sequence[Row] | None = None,
    seed: int = 0,
    latency_sizes: Sequence[int] = DEFAULT_LATENCY_SIZES,
    n_probes: int = DEFAULT_PROBES,
    timeout_ms: float | None = None,
    cache_name: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ReplayRun:
    """Run the replay (module docstring) and return what it observed.

    ``rows`` must be labelled; ``distractors`` are rows whose side a is stored
    too (never looked up). ``judgements`` are the labelled rows whose pairs
    judge entries (default: ``rows`` and the labelled distractors); pass every
    labelled row of the benchmark for the fullest judgement. Row ids must be
    unique across rows and distractors. ``cache.close()`` is always called.
    """
    start = time.perf_counter()
    if not hasattr(cache, "put") or not hasattr(cache, "lookup"):
        raise TypeError(f"{type(cache).__name__} is not a SharedCache: needs put() and lookup()")
    unlabelled = [r.id for r in rows if not r.is_labelled]
    if unlabelled:
        raise ValueError(
            f"{len(unlabelled)} rows have no label (first {unlabelled[0]}): "
            "load the private labels file"
        )
    ids = [r.id for r in rows] + [r.id for r in distractors]
    if len(set(ids)) != len(ids):
        raise ValueError("row ids must be unique across rows and distractors")
    rng = random.Random(seed)
    stored = list(rows) + list(distractors)
    rng.shuffle(stored)
    entries = [_Entry(f"e{i:06d}", r.id, r.request("a")) for i, r in enumerate(stored)]
    by_answer = {e.answer_id: e for e in entries}
    by_key: dict[RequestKey, set[str]] = {}
    for e in entries:
        by_key.setdefault(e.request.key(), set()).add(e.answer_id)
    order = list(rows)
    rng.shuffle(order)
    lookups = [(r, r.request("b")) for r in order]
    if judgements is None:
        judgements = list(rows) + [r for r in distractors if r.is_labelled]
    truths = lookup_truths(rows, by_key, judgements)

    caller = _Caller(timeout_ms)
    name = cache_name or str(getattr(cache, "name", type(cache).__name__))
    try:
        prepare = getattr(cache, "prepare", None)
        if callable(prepare):
            everything = [e.request for e in entries] + [q for _, q in lookups]
            rng.shuffle(everything)
            _, err, _ = caller(prepare, everything)
            if err is not None:
                raise RuntimeError(f"{name}: prepare() failed: {err}")
        sizes = sorted({s for s in latency_sizes if 0 < s < len(entries)})
        probes = [q for _, q in lookups[:n_probes]]
        put_ms: list[float] = []
        put_errors = 0
        first_put_error: str | None = None
        stages: list[StageLatency] = []
        done = 0
        for target in [*sizes, len(entries)]:
            for e in entries[done:target]:
                _, err, ms = caller(cache.put, e.request, e.answer_id)
                put_ms.append(ms)
                if err is not None:
                    put_errors += 1
                    first_put_error = first_put_error or f"{e.answer_id}: {err}"
            done = target
            if target < len(entries):
                stages.append(StageLatency(target, _time_probes(cache, caller, probes)))
        records: list[LookupRecord] = []
        nearest = getattr(cache, "nearest", None)
        for i, (row, request) in enumerate(lookups):
            records.append(_lookup(cache, caller, row, request, truths[row.id], by_answer, nearest))
            if progress is not None:
                progress(i + 1, len(lookups))
        stages.append(
            StageLatency(
                len(entries), tuple(r.latency_ms for r in records if r.latency_ms is not None)
            )
        )
    finally:
        close = getattr(cache, "close", None)
        if callable(close):
            try:
                close()
            except Exception:  # a failing close() must not hide the run's result
                pass
    return ReplayRun(
        cache_name=name,
        seed=seed,
        n_entries=len(entries),
        n_distractors=len(distractors),
        lookups=tuple(records),
        stages=tuple(stages),
        put_latencies_ms=tuple(put_ms),
        put_errors=put_errors,
        first_put_error=first_put_error,
        seconds=time.perf_counter() - start,
    )


def lookup_truths(
    rows: Sequence[Row], by_key: dict[RequestKey, set[str]], judgements: Sequence[Row]
) -> dict[str, LookupTruth]:
    """The acceptable, partner and judged-wrong entries of each row's lookup
    (module docstring). ``by_key`` maps a request key to the ids of the entries
    holding that request; a request pair labelled both ways counts as MISS.
    """
    verdicts: dict[RequestKey, dict[RequestKey, bool]] = {}
    for z in judgements:
        if not z.is_labelled:
            continue
        ka, kb = z.request("a").key(), z.request("b").key()
        seen = verdicts.setdefault(kb, {})
        seen[ka] = seen.get(ka, True) and z.binary_label == HIT
    every = frozenset(e for ids in by_key.values() for e in ids)
    out: dict[str, LookupTruth] = {}
    for r in rows:
        ka, kb = r.request("a").key(), r.request("b").key()
        partners = frozenset(by_key.get(ka, ()))
        if r.verification_method == POLICY_NO_CACHE:
            out[r.id] = LookupTruth(frozenset(), partners, every)
            continue
        acceptable = set(by_key.get(kb, ()))
        wrong: set[str] = set()
        for key, ok in verdicts.get(kb, {}).items():
            (acceptable if ok else wrong).update(by_key.get(key, ()))
        if r.binary_label == HIT:
            acceptable |= partners
        else:
            wrong |= partners
        out[r.id] = LookupTruth(frozenset(acceptable), partners, frozenset(wrong - acceptable))
    return out


def _time_probes(cache: Any, caller: _Caller, probes: Sequence[Request]) -> tuple[float, ...]:
    out = []
    for q in probes:
        _, err, ms = caller(cache.lookup, q)
        if err is None:
            out.append(ms)
    return tuple(out)


def _lookup(
    cache: Any,
    caller: _Caller,
    row: Row,
    request: Request,
    truth: LookupTruth,
    by_answer: dict[str, _Entry],
    nearest: Callable[[Request], Any] | None,
) -> LookupRecord:
    servable = bool(truth.acceptable)
    value, err, ms = caller(cache.lookup, request)
    if err is None:
        err = answer_problem(value, by_answer)
        if err is not None:
            err = f"InvalidAnswer: {err}"
    if err is not None:
        return LookupRecord(row.id, row.domain, str(row.label), servable, None, None, NONE,
                            None, NONE, ms, err)  # fmt: skip
    answer, score = value[0], float(value[1])
    outcome = lookup_outcome(answer, truth.acceptable, truth.partners, truth.judged_wrong)
    cand_score: float | None = score if answer is not None else None
    cand_outcome = outcome
    if answer is None and callable(nearest):
        near, near_err, _ = caller(nearest, request)
        if near_err is None and answer_problem(near, by_answer) is None and near[0] is not None:
            cand_score = float(near[1])
            cand_outcome = lookup_outcome(
                near[0], truth.acceptable, truth.partners, truth.judged_wrong
            )
    return LookupRecord(
        row_id=row.id,
        domain=row.domain,
        label=str(row.label),
        servable=servable,
        entry_row=by_answer[answer].row_id if answer is not None else None,
        score=score,
        outcome=outcome,
        candidate_score=cand_score if cand_outcome != NONE else None,
        candidate_outcome=cand_outcome,
        latency_ms=ms,
        error=None,
    )
