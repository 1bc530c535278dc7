"""Grading uploads against the hidden test labels, with leak-bounded feedback.

Loading (:func:`load_test_set`): the labels file's sha256 must equal
``test_labels.sha256`` of the manifest and the benchmark's sha256 must equal
``dataset.sha256``; otherwise :class:`SetupError` says which file does not
belong to the build. Test rows are the benchmark's ``test`` split with the
labels merged (:func:`cacheeval.dataset.load_bench`).

Uploads (:func:`parse_upload`) are one of

* a JSON array of prediction objects (optionally led by the predictions
  header object of :mod:`cacheeval.results.predictions`);
* a JSON object ``{"predictions": [...], "header": {...}?, "name": str?,
  "training_data": str?}``;
* JSONL: the ``predictions.jsonl`` that ``cacheeval predict`` writes (the
  header line is optional).

Each prediction must pass :func:`cacheeval.results.predictions.prediction_problem`,
name a test id, appear once, and every test id must have one. Any problem is a
:class:`SubmissionError` carrying an HTTP status (400: not UTF-8 / not JSON;
422: a well-formed body with bad content) and a message naming the line
(JSONL) or item (JSON array).

Grading (:func:`grade`) stores, server side only, the confusion counts of the
upload on the public and the private half of the test rows
(:func:`cacheeval.server.ladder.split_halves`, keyed by a server secret) and
the public half's level (:func:`cacheeval.server.ladder.level_of`), plus the
label-free facts of the upload (latency it reported, tier shares, errors).

What anyone gets back (:func:`public_feedback`, :func:`ladder_states`) is the
Ladder's answer: the level of the submission on the public half when it is
strictly above the best level its submitter has been shown, else "not above
your best" - never a count, a rate, a per-domain or per-label number, or a row
id. ``docs/leaderboard.md`` gives the leak bound of this feedback. The
per-domain breakdowns of a closed round come from the private slice only
(:func:`load_round`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..dataset import load_bench
from ..metrics.registry import public_metrics, values_at
from ..reporting.report import Report
from ..results.predictions import HEADER_KEY, Prediction, prediction_problem
from ..schema import HIT, SUBSCORES, Row, subscore_of
from ..support.jsonio import loads, sha256_file
from .ladder import (
    FHR_BUDGET,
    LEVELS,
    SUBSCORE_BANDS,
    Level,
    ladder,
    level_of,
    split_halves,
    subscore_band,
)
from .store import GRADED, INVALID, Store, Submission

#: Longest submission name and training-data description accepted.
MAX_NAME = 100
MAX_TRAINING_DATA = 2000
#: Longest text field of an upload's predictions header (cache_name, ...).
MAX_HEADER_TEXT = 200
#: Version tag of the stored grade (the internal ``scores`` object).
MECHANISM = "ladder-1"
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
class Halves:
    """The fixed public/private split of the test rows (server side only)."""

    public: frozenset[str]
    private: frozenset[str]


def halves_of(test: TestSet, salt: str | None = None) -> Halves:
    """Split ``test`` with ``salt`` (default: the labels' sha256, which is
    public; a server should pass a secret, see ``cacheeval serve --salt-file``)."""
    by_label: dict[str, list[str]] = {}
    for r in test.rows:
        by_label.setdefault(r.binary_label or "", []).append(r.id)
    public, private = split_halves(by_label, salt or test.labels_sha256)
    return Halves(public, private)


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
    """The report of an upload (server-side only: it names row ids), without
    the verdict and the failure lists: those quote hidden test rows and their
    labels, which the service never publishes, so it does not compute them."""
    from ..run.harness import score

    return score(
        upload.predictions,
        test.rows,
        cache_name=cache_name,
        dataset_sha256=test.dataset_sha256,
        split="test",
        failures=False,
    )


def _half(preds: dict[str, bool], rows: Sequence[Row], ids: frozenset[str]) -> dict[str, Any]:
    """Exact counts of one half, its level, and per sub-score its counts and
    band (:func:`~cacheeval.server.ladder.subscore_band`; None: no such rows)."""
    counts = {s: [0, 0, 0, 0] for s in SUBSCORES}  # tp, fp, fn, tn
    for r in rows:
        if r.id not in ids:
            continue
        hit, y = preds[r.id], r.binary_label == HIT
        c = counts[subscore_of(r)]
        c[0 if hit and y else 1 if hit else 2 if y else 3] += 1
    tp, fp, fn, tn = (sum(c[i] for c in counts.values()) for i in range(4))
    return {
        "n": tp + fp + fn + tn,
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
        "level": level_of(tp, fp, fn, tn).rank,
        "subscores": {
            s: {
                "n": sum(c),
                "tp": c[0],
                "fp": c[1],
                "fn": c[2],
                "tn": c[3],
                "band": subscore_band(s, *c),
            }
            for s, c in counts.items()
        },
    }


def label_free(report: Report) -> dict[str, Any]:
    """What an upload says about itself, whatever the labels: every metric the
    registry marks ``public`` (the latency it reported, its tier shares, its
    error counts), in registry order. A public name ``group.name`` is a key of
    the object ``group``; ``group[key].name`` a key of each row of the list
    ``group``, whose rows start with their ``key`` field."""
    out: dict[str, Any] = {}
    for m in public_metrics():
        group, _, name = (m.public or "").rpartition(".")
        values = values_at(report, m.path)
        if "[" in group:
            group, key = group.rstrip("]").split("[")
            items = values_at(report, m.path.rpartition(".")[0])
            rows = out.setdefault(group, [{key: getattr(x, key)} for x in items])
            for row, value in zip(rows, values, strict=True):
                row[name] = value
        else:
            out.setdefault(group, {})[name] = values[0]
    return out


def grade(upload: Upload, test: TestSet, halves: Halves, *, cache_name: str) -> dict[str, Any]:
    """The stored (server-side) grade of an upload; key order fixed. Holds the
    exact counts per half: never send it to a client (:func:`public_feedback`)."""
    report = score_upload(upload, test, cache_name=cache_name)
    preds = {p.id: bool(p.is_hit) for p in upload.predictions}
    return {
        "mechanism": MECHANISM,
        "n_rows": report.provenance.n_rows,
        "public_half": _half(preds, test.rows, halves.public),
        "private_half": _half(preds, test.rows, halves.private),
        **label_free(report),
    }


def level_json(lv: Level | None) -> dict[str, Any] | None:
    """A level as the API shows it."""
    if lv is None:
        return None
    return {
        "rank": lv.rank,
        "name": lv.name,
        "within_budget": lv.within_budget,
        "fhr_interval": list(lv.fhr),
        "recall_interval": None if lv.recall is None else list(lv.recall),
    }


def subscore_bands_json(scores: dict[str, Any], half: str = "public_half") -> dict[str, Any]:
    """The sub-score bands of a stored grade as the API shows them: per
    sub-score its band's index and name, None for a grade stored before the
    bands existed or a sub-score with no rows in the half."""
    stored = scores.get(half, {}).get("subscores") or {}
    out: dict[str, Any] = {}
    for s in SUBSCORES:
        band = (stored.get(s) or {}).get("band")
        names = SUBSCORE_BANDS[s]
        if isinstance(band, int) and 0 <= band < len(names):
            out[s] = {"band": band, "name": names[band]}
        else:
            out[s] = None
    return out


def stored_level(scores: dict[str, Any], half: str = "public_half") -> Level | None:
    """The level recorded in a stored grade (None for a grade of another version)."""
    if scores.get("mechanism") != MECHANISM:
        return None
    rank = scores.get(half, {}).get("level")
    return LEVELS[rank] if isinstance(rank, int) and 0 <= rank < len(LEVELS) else None


@dataclass(frozen=True, slots=True)
class LadderState:
    """A submission under the Ladder: its released level (None: not above its
    submitter's best so far), the submitter's best after it, and its number
    among the submitter's graded submissions (1-based)."""

    released: Level | None
    best: Level | None
    number: int


def ladder_states(subs: Sequence[Submission]) -> dict[int, LadderState]:
    """:class:`LadderState` of every graded submission, per submitter in id order."""
    by_submitter: dict[int, list[Submission]] = {}
    for sub in sorted(subs, key=lambda x: x.id):
        if sub.status == GRADED and stored_level(sub.scores) is not None:
            by_submitter.setdefault(sub.submitter_id, []).append(sub)
    out: dict[int, LadderState] = {}
    for mine in by_submitter.values():
        levels = [stored_level(x.scores) for x in mine]
        best: Level | None = None
        for n, (sub, released) in enumerate(
            zip(mine, ladder(lv for lv in levels if lv is not None), strict=True), 1
        ):
            if released is not None:
                best = released
            out[sub.id] = LadderState(released, best, n)
    return out


def public_feedback(scores: dict[str, Any], state: LadderState | None) -> dict[str, Any]:
    """Everything a client may see of a grade (key order fixed)."""
    return {
        "mechanism": "ladder",
        "fhr_budget": FHR_BUDGET,
        "n_rows": scores.get("n_rows"),
        "n_public_rows": scores.get("public_half", {}).get("n"),
        "released": state is not None and state.released is not None,
        "level": level_json(state.released if state else None),
        "best_level": level_json(state.best if state else None),
        # Released with the level and never otherwise (the leak bound counts them).
        "subscores": subscore_bands_json(scores) if state and state.released else None,
        "submission_number": state.number if state else None,
        "latency_ms": scores.get("latency_ms"),
        "tiers": scores.get("tiers"),
        "errors": scores.get("errors"),
    }


@dataclass(frozen=True, slots=True)
class Reference:
    """A fixed reference row of the board: a committed predictions file graded
    like any upload (its level is always shown: the file is public)."""

    name: str
    path: str
    scores: dict[str, Any]


def load_references(folder: Path, test: TestSet, halves: Halves) -> tuple[Reference, ...]:
    """Grade every ``*.jsonl`` predictions file of ``folder`` (name: the file's
    cache name). A file that does not cover the test split is a SetupError."""
    out = []
    order = [r.id for r in test.rows]
    for path in sorted(folder.glob("*.jsonl")):
        try:
            upload = parse_upload(path.read_bytes(), test.ids, order)
        except (OSError, SubmissionError) as e:
            raise SetupError(f"{path}: not a predictions file for this test split: {e}") from None
        name = upload.cache_name or path.stem
        out.append(Reference(name, path.name, grade(upload, test, halves, cache_name=name)))
    return tuple(out)


# --- regrading --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Regraded:
    """One submission after a regrade: its public-half level before and after
    (server side), or why it no longer grades (then it leaves the board with
    status ``invalid``)."""

    id: int
    name: str
    level_before: str | None
    level_after: str | None
    problem: str | None


def regrade(store: Store, test: TestSet, halves: Halves, graded: str) -> list[Regraded]:
    """Re-grade every stored submission from its stored bytes against ``test``.

    Scores, ``labels_sha256`` and ``graded`` are replaced; a body that no longer
    matches the test split (ids changed) is marked ``invalid``.
    """
    order = [r.id for r in test.rows]
    out: list[Regraded] = []
    for sub in store.submissions():
        body = store.body(sub.id) or b""
        lv = stored_level(sub.scores)
        before = lv.name if lv else None
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
        scores = grade(upload, test, halves, cache_name=sub.cache_name or sub.name)
        store.update_grade(
            sub.id,
            scores=scores,
            labels_sha256=test.labels_sha256,
            graded=graded,
            status=GRADED,
            status_detail=None,
        )
        after = stored_level(scores)
        out.append(Regraded(sub.id, sub.name, before, after.name if after else None, None))
    return out


# --- closed rounds of the private slice ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Round:
    """A closed round: its revealed seed matches the slice's commitment, so
    per-domain breakdowns of the entrants' slice reports may be shown."""

    name: str
    seed: str
    slice_sha256: str
    n_rows: int
    reports: tuple[dict[str, Any], ...]  # cacheeval eval --json outputs


def load_round(folder: Path) -> Round | None:
    """The round in ``folder`` (``slice.jsonl`` with its header, ``seed.txt``,
    ``reports/*.json``), or None while it is open: the seed is not published
    or does not hash to the slice header's ``seed_sha256``."""
    from ..benches.slice import seed_commitment
    from ..dataset import read_slice_header

    slice_path, seed_path = folder / "slice.jsonl", folder / "seed.txt"
    if not slice_path.is_file() or not seed_path.is_file():
        return None
    try:
        head = read_slice_header(slice_path)
        seed = seed_path.read_text(encoding="utf-8").strip()
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if not head or not seed or head.get("seed_sha256") != seed_commitment(seed):
        return None
    reports = []
    for path in sorted((folder / "reports").glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("per_domain"), list):
            reports.append(data)
    return Round(
        folder.name, seed, sha256_file(slice_path), int(head.get("n_rows", 0)), tuple(reports)
    )


def closed_rounds(rounds_dir: Path | None) -> list[Round]:
    """Every closed round under ``rounds_dir``, by name."""
    if rounds_dir is None or not rounds_dir.is_dir():
        return []
    found = (load_round(p) for p in sorted(rounds_dir.iterdir()) if p.is_dir())
    return [r for r in found if r is not None]
