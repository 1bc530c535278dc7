"""Predictions: one cache decision per row, and the predictions.jsonl file.

File format (canonical JSONL, see :mod:`cacheeval.support.jsonio`)::

    {"cacheeval_predictions": "1.1", "cache_name": ..., "cache_args": {...},
     "package_version": ..., "dataset_sha256": ..., "split": ..., "created": ...,
     "domains": [...] | null, "cost_per_call_usd": {...}, "cache_ref": "mod:Class" | null,
     "complete": true}
    {"id": "cb-math-0001", "is_hit": false, "confidence": 0.9, "score": 0.12,
     "tier_used": "embedding", "latency_ms": 1.25, "error": null}
    ...

The first line is the header, then one object per row in row order with
exactly the keys of :data:`PREDICTION_FIELDS`. A row whose call failed has
``is_hit`` false, null ``confidence``/``score`` and an ``error`` string. The
header's ``domains``, ``cost_per_call_usd``, ``cache_ref`` and ``complete``
are optional when reading. ``complete`` is false for the partial file a run
interrupted by the user (Ctrl-C) leaves: its rows are the ones decided before
the interrupt, and scoring it counts the others as missing.
"""

from __future__ import annotations

import math
import os
import re
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ..schema import (
    FAILED_TIERS,
    MAX_ERROR_CHARS,
    MAX_LATENCY_MS,
    SCHEMA_VERSION,
    tier_problem,
)
from ..support.idset import IdSet
from ..support.jsonio import AtomicFile, JsonlError, dumps, iter_jsonl, write_jsonl
from ..version import __version__

HEADER_KEY = "cacheeval_predictions"


@dataclass(frozen=True, slots=True)
class Prediction:
    """A cache's decision for one row, as the harness recorded it.

    ``error`` is None on success, else ``"TypeName: message"`` (an exception or
    an invalid verdict) or ``"timeout after N ms"``; an error row is a MISS
    with null ``confidence`` and ``score``. ``latency_ms`` is the wall time of
    the call (the time waited, for a timeout).
    """

    id: str
    is_hit: bool
    confidence: float | None
    score: float | None
    tier_used: str
    latency_ms: float | None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The file form of this prediction (keys in :data:`PREDICTION_FIELDS` order)."""
        return {
            "id": self.id,
            "is_hit": self.is_hit,
            "confidence": self.confidence,
            "score": self.score,
            "tier_used": self.tier_used,
            "latency_ms": self.latency_ms,
            "error": self.error,
        }


PREDICTION_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Prediction))


@dataclass(frozen=True, slots=True)
class PredictionsHeader:
    """Provenance of a predictions file (its first line)."""

    schema_version: str
    cache_name: str
    cache_args: dict[str, Any]
    package_version: str
    dataset_sha256: str | None
    split: str | None
    created: str
    domains: tuple[str, ...] | None = None
    cost_per_call_usd: dict[str, float] = field(default_factory=dict)
    cache_ref: str | None = None
    complete: bool = True

    def to_dict(self) -> dict[str, Any]:
        """The header line; key order is the file order."""
        return {
            HEADER_KEY: self.schema_version,
            "cache_name": self.cache_name,
            "cache_args": self.cache_args,
            "package_version": self.package_version,
            "dataset_sha256": self.dataset_sha256,
            "split": self.split,
            "created": self.created,
            "domains": list(self.domains) if self.domains is not None else None,
            "cost_per_call_usd": dict(self.cost_per_call_usd),
            "cache_ref": self.cache_ref,
            "complete": self.complete,
        }


def make_header(
    *,
    cache_name: str,
    created: str,
    cache_args: dict[str, Any] | None = None,
    dataset_sha256: str | None = None,
    split: str | None = None,
    domains: Iterable[str] | None = None,
    cost_per_call_usd: dict[str, float] | None = None,
    cache_ref: str | None = None,
    complete: bool = True,
) -> PredictionsHeader:
    """A header for this package version and :data:`SCHEMA_VERSION`."""
    return PredictionsHeader(
        schema_version=SCHEMA_VERSION,
        cache_name=cache_name,
        cache_args=dict(cache_args or {}),
        package_version=__version__,
        dataset_sha256=dataset_sha256,
        split=split,
        created=created,
        domains=tuple(domains) if domains is not None else None,
        cost_per_call_usd=dict(cost_per_call_usd or {}),
        cache_ref=cache_ref,
        complete=complete,
    )


def write_predictions(
    path: str | os.PathLike[str], header: PredictionsHeader, predictions: Iterable[Prediction]
) -> None:
    """Write the header line, then one line per prediction (atomically)."""
    records: list[dict[str, Any]] = [header.to_dict()]
    records.extend(p.to_dict() for p in predictions)
    write_jsonl(path, records)


class PredictionsWriter:
    """Write a predictions file while the predictions arrive: the header line
    first, then one line per :meth:`write`, into a temp file that
    :meth:`commit` renames into place. Memory does not grow with the run.

    :meth:`commit` may give the final header when something in it was only
    known at the end (the one split the rows turned out to share);
    :meth:`commit_partial` finishes the file of an interrupted run under a
    header with ``"complete": false``. In both cases a header that differs
    from the first line costs one copy of the lines into a fresh temp file;
    the common case writes each byte once. :meth:`discard` leaves nothing
    behind. The bytes equal :func:`write_predictions`' for the same header
    and predictions.
    """

    def __init__(self, path: str | os.PathLike[str], header: PredictionsHeader) -> None:
        self._header = replace(header, complete=True)
        self._out = AtomicFile(path)
        self._out.write(_line(self._header.to_dict()))
        self.count = 0

    @property
    def path(self) -> Path:
        return self._out.path

    def write(self, prediction: Prediction) -> None:
        self._out.write(_line(prediction.to_dict()))
        self.count += 1

    def commit(self, header: PredictionsHeader | None = None) -> None:
        """The run completed: put the file in place (under ``header``, when given)."""
        final = replace(header or self._header, complete=True)
        if final == self._header:
            self._out.commit()
        else:
            self._rewrite(final)

    def commit_partial(self, header: PredictionsHeader | None = None) -> None:
        """The run was interrupted: put the lines written so far in place under
        a header marked incomplete."""
        self._rewrite(replace(header or self._header, complete=False))

    def _rewrite(self, header: PredictionsHeader) -> None:
        self._out.file.close()
        tmp = self._out.tmp_path
        if tmp is None:  # a device or pipe took the lines as they came: no going back
            return
        try:
            with AtomicFile(self._out.path) as final, open(tmp, "rb") as src:
                src.readline()  # the first header
                final.write(_line(header.to_dict()))
                shutil.copyfileobj(src, final.file)
        finally:
            tmp.unlink(missing_ok=True)

    def discard(self) -> None:
        """Write nothing."""
        self._out.discard()


def _line(record: dict[str, Any]) -> bytes:
    return (dumps(record) + "\n").encode("utf-8")


#: Longest row id a predictions file may carry.
MAX_ID_CHARS = 200
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _number_or_null(value: Any) -> bool:
    if value is None:
        return True
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large for a float
        return False


def _show(value: Any, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters (a 4,000-digit number stays short)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def prediction_problem(data: Any) -> str | None:
    """The first thing wrong with one decoded prediction line, or None."""
    if not isinstance(data, dict):
        return f"expected a JSON object, got {type(data).__name__}"
    missing = [f for f in PREDICTION_FIELDS if f not in data]
    if missing:
        return f"missing field(s): {', '.join(missing)}"
    extra = sorted(k for k in data if k not in PREDICTION_FIELDS)
    if extra:
        return f"unknown field(s): {', '.join(extra)}"
    if not isinstance(data["id"], str) or not data["id"] or len(data["id"]) > MAX_ID_CHARS:
        return f"id must be a non-empty string of at most {MAX_ID_CHARS} characters"
    if not isinstance(data["is_hit"], bool):
        return f"is_hit must be true or false, got {_show(data['is_hit'])}"
    for key in ("confidence", "score", "latency_ms"):
        if not _number_or_null(data[key]):
            return f"{key} must be a finite number or null, got {_show(data[key])}"
    conf = data["confidence"]
    if conf is not None and not 0.0 <= conf <= 1.0:
        return f"confidence must lie in [0, 1], got {_show(conf)}"
    latency = data["latency_ms"]
    if latency is not None and not 0 <= latency <= MAX_LATENCY_MS:
        return f"latency_ms must lie in [0, {MAX_LATENCY_MS:.0f}] (a day), got {_show(latency)}"
    error = data["error"]
    if error is None:
        problem = tier_problem(data["tier_used"])
        if problem is not None:
            return problem
        return None
    if data["tier_used"] not in FAILED_TIERS:
        tier = _show(data["tier_used"])
        return f"a row with an error has tier_used 'error' or 'timeout', not {tier}"
    if not isinstance(error, str) or not error or len(error) > MAX_ERROR_CHARS:
        return f"error must be null or a string of 1 to {MAX_ERROR_CHARS} characters"
    if _CONTROL.search(error):
        return "error must not hold control characters"
    if data["is_hit"]:
        return "a row with an error must have is_hit false"
    return None


def _header_problem(data: Any) -> str | None:
    if not isinstance(data, dict) or HEADER_KEY not in data:
        return f"the first line must be the header object with key {HEADER_KEY!r}"
    version = data[HEADER_KEY]
    if not isinstance(version, str) or version.split(".")[0] != SCHEMA_VERSION.split(".")[0]:
        return f"unsupported predictions version {_show(version)} (this is {SCHEMA_VERSION})"
    required = ("cache_name", "cache_args", "package_version", "dataset_sha256", "split", "created")
    missing = [k for k in required if k not in data]
    if missing:
        return f"header is missing field(s): {', '.join(missing)}"
    known = {HEADER_KEY, *required, "domains", "cost_per_call_usd", "cache_ref", "complete"}
    extra = sorted(k for k in data if k not in known)
    if extra:
        return f"header has unknown field(s): {', '.join(extra)}"
    if not isinstance(data["cache_name"], str):
        return "header cache_name must be a string"
    if not isinstance(data["cache_args"], dict):
        return "header cache_args must be an object"
    for key in ("dataset_sha256", "split"):
        if data[key] is not None and not isinstance(data[key], str):
            return f"header {key} must be a string or null"
    domains = data.get("domains")
    if domains is not None and not (
        isinstance(domains, list) and all(isinstance(d, str) for d in domains)
    ):
        return "header domains must be null or a list of strings"
    costs = data.get("cost_per_call_usd", {})
    if not isinstance(costs, dict) or not all(
        _number_or_null(v) and v is not None and v >= 0 for v in costs.values()
    ):
        return "header cost_per_call_usd must map tiers to non-negative numbers"
    if data.get("cache_ref") is not None and not isinstance(data["cache_ref"], str):
        return "header cache_ref must be a string or null"
    if not isinstance(data.get("complete", True), bool):
        return "header complete must be true or false"
    return None


def read_predictions(
    path: str | os.PathLike[str],
) -> tuple[PredictionsHeader, list[Prediction]]:
    """Read and check a predictions file.

    Raises :class:`~cacheeval.support.jsonio.JsonlError` (``path:LINE: ...``) for a
    bad header, a malformed prediction or a duplicate id.
    """
    header, predictions = iter_predictions(path)
    return header, list(predictions)


def iter_predictions(
    path: str | os.PathLike[str],
) -> tuple[PredictionsHeader, Iterator[Prediction]]:
    """:func:`read_predictions` as a stream: the header (read and checked
    now) and an iterator over the predictions, checked as they are read, with
    the ids seen so far in a bit set (:class:`~cacheeval.support.idset.IdSet`).
    """
    spath = str(path)
    lines = iter_jsonl(path)
    first = next(lines, None)
    if first is None:
        raise JsonlError(spath, 1, "empty predictions file (no header line)")
    lineno, data = first
    problem = _header_problem(data)
    if problem:
        raise JsonlError(spath, lineno, problem)
    header = PredictionsHeader(
        schema_version=data[HEADER_KEY],
        cache_name=data["cache_name"],
        cache_args=data["cache_args"],
        package_version=str(data["package_version"]),
        dataset_sha256=data["dataset_sha256"],
        split=data["split"],
        created=str(data["created"]),
        domains=tuple(data["domains"]) if data.get("domains") is not None else None,
        cost_per_call_usd={k: float(v) for k, v in data.get("cost_per_call_usd", {}).items()},
        cache_ref=data.get("cache_ref"),
        complete=data.get("complete", True),
    )
    return header, _predictions(spath, lines)


def _predictions(spath: str, lines: Iterator[tuple[int, Any]]) -> Iterator[Prediction]:
    seen = IdSet()
    for lineno, data in lines:
        problem = prediction_problem(data)
        if problem:
            raise JsonlError(spath, lineno, problem)
        rid = data["id"]
        if not seen.add(rid):
            first = next(
                n
                for n, d in iter_jsonl(spath)
                if isinstance(d, dict) and HEADER_KEY not in d and d.get("id") == rid
            )
            raise JsonlError(spath, lineno, f"duplicate id {_show(rid)} (first on line {first})")
        yield Prediction(
            id=rid,
            is_hit=data["is_hit"],
            confidence=_float_or_none(data["confidence"]),
            score=_float_or_none(data["score"]),
            tier_used=data["tier_used"],
            latency_ms=_float_or_none(data["latency_ms"]),
            error=data["error"],
        )


def _float_or_none(value: Any) -> float | None:
    return None if value is None else float(value)


__all__ = [
    "HEADER_KEY",
    "PREDICTION_FIELDS",
    "Prediction",
    "PredictionsHeader",
    "PredictionsWriter",
    "iter_predictions",
    "make_header",
    "prediction_problem",
    "read_predictions",
    "write_predictions",
]
