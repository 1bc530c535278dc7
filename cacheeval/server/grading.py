"""Grading uploads against the hidden test labels, with aggregate-only feedback.

Loading (:func:`load_test_set`): the labels file's sha256 must equal
``test_labels.sha256`` of the manifest and the benchmark's sha256 must equal
``dataset.sha256``; otherwise :class:`SetupError` says which file does not
belong to the build. Test rows are the benchmark's ``test`` split with the
labels merged (:func:`cacheeval.dataset.load_bench`).

Uploads (:func:`parse_upload`) are one of

* a JSON array of prediction objects (optionally led by the predictions
  header object of :mod:`cacheeval.predictions`);
* a JSON object ``{"predictions": [...], "header": {...}?, "name": str?,
  "training_data": str?}``;
* JSONL: the ``predictions.jsonl`` that ``cacheeval predict`` writes (the
  header line is optional).

Each prediction must pass :func:`cacheeval.predictions.prediction_problem`,
name a test id, appear once, and every test id must have one. Any problem is a
:class:`SubmissionError` carrying an HTTP status (400: not UTF-8 / not JSON;
422: a well-formed body with bad content) and a message naming the line
(JSONL) or item (JSON array).

Scoring is :func:`cacheeval.harness.score` on those rows, so the numbers are
exactly those of ``cacheeval score --labels``. :func:`feedback` keeps only
aggregates: the headline rates with 95% Wilson intervals, the confusion
counts, per-domain FHR and F1, per-label FHR on the MISS classes, latency
percentiles, tier shares and error counts - never a row id or a per-row
outcome, so labels cannot be read back one row at a time.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..dataset import load_bench
from ..jsonio import loads, sha256_file
from ..metrics.classification import Estimate
from ..predictions import HEADER_KEY, Prediction, prediction_problem
from ..report import Report
from ..schema import MISS_LABELS, Row
from .store import GRADED, INVALID, Store

#: Longest submission name and training-data description accepted.
MAX_NAME = 100
MAX_TRAINING_DATA = 2000
#: Longest text field of an upload's predictions header (cache_name, ...).
MAX_HEADER_TEXT = 200
HEADLINE_METRICS: tuple[str, ...] = (
    "accuracy",
    "precision",
    "recall",
    "f1",
    "fhr",
    "adversarial_fhr",
)
_OBJECT_KEYS = frozenset({"predictions", "header", "name", "training_data"})


class SetupError(ValueError):
    """The server cannot grade: a file is missing, malformed or not of this build."""


class SubmissionError(ValueError):
    """An upload that cannot be graded; ``status`` is the HTTP status to answer."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class TestSet:
    """The labelled test rows and the hashes that identify them."""

    rows: tuple[Row, ...]
    ids: frozenset[str]
    dataset_sha256: str
    labels_sha256: str


@dataclass(frozen=True, slots=True)
class Upload:
    """A parsed, checked upload: one prediction per test id, in upload order."""

    body_format: str  # "json" | "jsonl"
    predictions: tuple[Prediction, ...]
    cache_name: str | None
    dataset_sha256: str | None
    name: str | None
    training_data: str | None


# --- the test set -----------------------------------------------------------------------


def _manifest_sha(manifest: Any, key: str, path: Path) -> str:
    entry = manifest.get(key) if isinstance(manifest, dict) else None
    sha = entry.get("sha256") if isinstance(entry, dict) else None
    if not isinstance(sha, str) or len(sha) != 64:
        raise SetupError(f"{path}: has no {key}.sha256 (is it a CacheEval build manifest?)")
    return sha


def load_test_set(
    bench: str | os.PathLike[str],
    labels: str | os.PathLike[str],
    manifest: str | os.PathLike[str],
) -> TestSet:
    """The test split of ``bench`` with ``labels`` merged, after checking both
    files' sha256 against ``manifest``."""
    bench, labels, manifest = Path(bench), Path(labels), Path(manifest)
    for path, what in ((manifest, "manifest"), (labels, "labels file"), (bench, "benchmark")):
        if not path.is_file():
            raise SetupError(f"{path}: no such {what} (scripts/assemble.py writes it)")
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SetupError(f"{manifest}: cannot read the manifest ({e})") from None
    want_labels = _manifest_sha(data, "test_labels", manifest)
    want_bench = _manifest_sha(data, "dataset", manifest)
    got_labels = sha256_file(labels)
    if got_labels != want_labels:
        raise SetupError(
            f"{labels}: sha256 {got_labels} does not match test_labels.sha256 {want_labels} "
            f"in {manifest}; refusing to grade with labels from another build "
            "(rebuild with scripts/assemble.py or pass the matching --labels/--manifest)"
        )
    got_bench = sha256_file(bench)
    if got_bench != want_bench:
        raise SetupError(
            f"{bench}: sha256 {got_bench} does not match dataset.sha256 {want_bench} "
            f"in {manifest}; the benchmark and the labels come from different builds"
        )
    try:
        rows = load_bench(bench, split="test", labels_path=labels)
    except (OSError, ValueError) as e:  # JsonlError: path:LINE: ...
        raise SetupError(str(e)) from None
    if not rows:
        raise SetupError(f"{bench}: has no test rows")
    unlabelled = [r.id for r in rows if not r.is_labelled]
    if unlabelled:
        raise SetupError(
            f"{labels}: no labels for {len(unlabelled)} test row(s), first {unlabelled[0]}"
        )
    return TestSet(tuple(rows), frozenset(r.id for r in rows), got_bench, got_labels)


# --- parsing uploads ----------------------------------------------------------------------


def _loads(text: str) -> Any:
    # depth-limited, no NaN/Infinity, no lone surrogates: JsonTextError (a ValueError)
    return loads(text, constants=False)


def _is_header(item: Any) -> bool:
    return isinstance(item, dict) and HEADER_KEY in item


def _optional_text(value: Any, what: str, limit: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise SubmissionError(422, f"{what} must be a string, got {type(value).__name__}")
    return check_text(value, what, limit)


def check_text(value: str, what: str, limit: int) -> str:
    """``value`` stripped; 422 when longer than ``limit``, holding control
    characters other than newlines and tabs, or a lone surrogate (not text)."""
    value = value.strip()
    if len(value) > limit:
        raise SubmissionError(422, f"{what} is {len(value)} characters long (at most {limit})")
    if any("\ud800" <= c <= "\udfff" for c in value):
        raise SubmissionError(422, f"{what} is not valid Unicode text (a lone surrogate)")
    if any(not (c.isprintable() or c in "\n\t") for c in value):
        raise SubmissionError(422, f"{what} contains control characters")
    return value


def parse_upload(body: bytes, test_ids: frozenset[str], test_order: Sequence[str]) -> Upload:
    """Parse and check an upload (see the module doc); raises :class:`SubmissionError`.

    ``test_order`` lists the test ids in file order, so "first missing id" is
    deterministic.
    """
    if not body.strip():
        raise SubmissionError(400, "the upload is empty: send predictions as JSON or JSONL")
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise SubmissionError(400, f"the upload is not UTF-8 text (byte {e.start})") from None

    items: list[tuple[str, Any]]  # (location, value)
    name = training = None
    try:
        whole: Any = _loads(text)
        parsed_whole = True
    except ValueError:
        parsed_whole = False
    if parsed_whole and isinstance(whole, list):
        fmt = "json"
        items = [(f"item {i}", v) for i, v in enumerate(whole, 1)]
    elif parsed_whole and isinstance(whole, dict) and not _is_header(whole) and "id" not in whole:
        fmt = "json"
        extra = sorted(k for k in whole if k not in _OBJECT_KEYS)
        if "predictions" not in whole or extra:
            why = f"unknown key(s) {', '.join(extra)}" if extra else "no 'predictions' key"
            raise SubmissionError(
                422,
                f"a JSON object upload needs a 'predictions' list "
                f"(optional: header, name, training_data); {why}",
            )
        preds = whole["predictions"]
        if not isinstance(preds, list):
            raise SubmissionError(422, f"'predictions' must be a list, got {type(preds).__name__}")
        items = [(f"predictions item {i}", v) for i, v in enumerate(preds, 1)]
        if whole.get("header") is not None:
            items.insert(0, ("header", whole["header"]))
        name = _optional_text(whole.get("name"), "name", MAX_NAME)
        training = _optional_text(whole.get("training_data"), "training_data", MAX_TRAINING_DATA)
    elif parsed_whole and not isinstance(whole, dict):
        raise SubmissionError(
            422,
            f"the upload is a JSON {type(whole).__name__}; expected a list of predictions, "
            "an object with 'predictions', or JSONL",
        )
    else:
        fmt = "jsonl"
        items = []
        for lineno, line in enumerate(text.split("\n"), 1):
            if not line.strip():
                continue
            try:
                items.append((f"line {lineno}", _loads(line)))
            except ValueError as e:  # JsonTextError: the reason, without a location
                why = str(e)
                raise SubmissionError(
                    400, f"line {lineno}: not valid JSON ({why}); send JSON or JSONL"
                ) from None

    cache_name = dataset_sha = None
    preds_out: list[Prediction] = []
    seen: dict[str, str] = {}
    for k, (where, value) in enumerate(items):
        if _is_header(value) or where == "header":
            if k != 0:
                raise SubmissionError(422, f"{where}: a header is only allowed first")
            if not isinstance(value, dict):
                raise SubmissionError(422, f"{where}: the header must be an object")
            cache_name = _header_str(value, "cache_name", where)
            dataset_sha = _header_str(value, "dataset_sha256", where)
            continue
        problem = prediction_problem(value)
        if problem:
            raise SubmissionError(422, f"{where}: {problem}")
        rid = value["id"]
        if rid not in test_ids:
            raise SubmissionError(422, f"{where}: id {rid!r} is not in the test split")
        if rid in seen:
            raise SubmissionError(422, f"{where}: duplicate id {rid!r} (first at {seen[rid]})")
        seen[rid] = where
        preds_out.append(_prediction(value))
    if len(seen) != len(test_ids):
        missing = [t for t in test_order if t not in seen]
        raise SubmissionError(
            422,
            f"no prediction for {len(missing)} of {len(test_ids)} test ids "
            f"(first missing: {missing[0]}); predict every test row "
            "(cacheeval predict --split test)",
        )
    return Upload(fmt, tuple(preds_out), cache_name, dataset_sha, name, training)


def _header_str(header: dict[str, Any], key: str, where: str) -> str | None:
    value = header.get(key)
    if value is not None and not isinstance(value, str):
        raise SubmissionError(422, f"{where}: {key} must be a string or null")
    # every text field of the header, not only this one, meets check_text
    for k, v in header.items():
        if isinstance(v, str):
            check_text(v, f"{where}: {k}", MAX_HEADER_TEXT)
    return None if value is None else check_text(value, f"{where}: {key}", MAX_HEADER_TEXT)


def _prediction(data: dict[str, Any]) -> Prediction:
    def num(v: Any) -> float | None:
        return None if v is None else float(v)

    return Prediction(
        id=data["id"],
        is_hit=data["is_hit"],
        confidence=num(data["confidence"]),
        score=num(data["score"]),
        tier_used=data["tier_used"],
        latency_ms=num(data["latency_ms"]),
        error=data["error"],
    )


# --- grading -------------------------------------------------------------------------------


def score_upload(upload: Upload, test: TestSet, *, cache_name: str) -> Report:
    """The full report of an upload (server-side only: it names row ids)."""
    from ..harness import score

    return score(
        upload.predictions,
        test.rows,
        cache_name=cache_name,
        dataset_sha256=test.dataset_sha256,
        split="test",
    )


def _estimate(e: Estimate) -> dict[str, Any]:
    return {
        "value": e.value,
        "ci_low": e.ci_low,
        "ci_high": e.ci_high,
        "numerator": e.numerator,
        "denominator": e.denominator,
    }


def feedback(report: Report) -> dict[str, Any]:
    """The aggregate-only view of a report (see the module doc). Key order fixed."""
    h = report.headline
    c = report.confusion
    lat = report.latency
    return {
        "n_rows": report.provenance.n_rows,
        "headline": {m: _estimate(getattr(h, m)) for m in HEADLINE_METRICS},
        "confusion": {"tp": c.tp, "fp": c.fp, "fn": c.fn, "tn": c.tn},
        "per_domain": [
            {"domain": s.key, "n": s.n, "fhr": _estimate(s.fhr), "f1": _estimate(s.f1)}
            for s in report.per_domain
        ],
        "per_label": [
            {"label": s.key, "n": s.n, "fhr": _estimate(s.fhr)}
            for s in report.per_label
            if s.key in MISS_LABELS
        ],
        "latency_ms": {"n": lat.n, "p50": lat.p50_ms, "p95": lat.p95_ms, "p99": lat.p99_ms},
        "tiers": [{"tier": t.tier, "count": t.count, "share": t.share} for t in report.tiers],
        "errors": {"n_errors": report.errors.n_errors, "n_timeouts": report.errors.n_timeouts},
    }


def grade(upload: Upload, test: TestSet, *, cache_name: str) -> dict[str, Any]:
    """:func:`feedback` of :func:`score_upload`."""
    return feedback(score_upload(upload, test, cache_name=cache_name))


# --- regrading --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Regraded:
    """One submission after a regrade: its FHR before and after, or why it no
    longer grades (then it leaves the board with status ``invalid``)."""

    id: int
    name: str
    fhr_before: float | None
    fhr_after: float | None
    problem: str | None


def regrade(store: Store, test: TestSet, graded: str) -> list[Regraded]:
    """Re-grade every stored submission from its stored bytes against ``test``.

    Scores, ``labels_sha256`` and ``graded`` are replaced; a body that no longer
    matches the test split (ids changed) is marked ``invalid``.
    """
    order = [r.id for r in test.rows]
    out: list[Regraded] = []
    for sub in store.submissions():
        body = store.body(sub.id) or b""
        before = sub.scores.get("headline", {}).get("fhr", {}).get("value")
        try:
            upload = parse_upload(body, test.ids, order)
        except SubmissionError as e:
            store.update_grade(
                sub.id,
                scores=sub.scores,
                labels_sha256=test.labels_sha256,
                graded=graded,
                status=INVALID,
                status_detail=str(e),
            )
            out.append(Regraded(sub.id, sub.name, before, None, str(e)))
            continue
        scores = grade(upload, test, cache_name=sub.cache_name or sub.name)
        store.update_grade(
            sub.id,
            scores=scores,
            labels_sha256=test.labels_sha256,
            graded=graded,
            status=GRADED,
            status_detail=None,
        )
        out.append(Regraded(sub.id, sub.name, before, scores["headline"]["fhr"]["value"], None))
    return out
