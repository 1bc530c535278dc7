"""External validity: grade a cache on labelled pair files nobody on CacheEval
wrote, next to its CacheEval result, against an embedding-cosine reference.

A cache that does well on CacheEval's rows may still have learned what
CacheEval's templates look like rather than what makes two requests need
different answers. The check here is the one that tells: on every set, the
cache's own operating point (its FHR and recall) beside a *reference* cache's
recall at that same FHR - by default the plain MiniLM cosine, the signal most
caches are built on - and both ROC-AUCs. A learned part that adds value keeps
at least the reference's recall at its FHR; one that destroys value falls
below it.

Standard library only: the caches (and the reference) are whatever callables
the caller passes; scores come from the harness (:func:`cacheeval.run.harness.predict`
and :func:`~cacheeval.run.harness.score`).

``recall_at_fhr`` - the reference's best recall among thresholds whose FHR on
the set is at most the cache's measured FHR (rows sharing a score fire
together; see :mod:`cacheeval.metrics.ranking`):

    recall_at_fhr(y, s, f) = max { TP(t) / P : FP(t) / N <= f },  t over the distinct scores

How sure each gap is: with ``resamples`` > 0, :func:`grade` adds to every
cache's entry the percentile interval of both gaps and the share of resamples
in which the cache keeps the reference, from a paired bootstrap stratified by
class (:mod:`cacheeval.metrics.paired`). On a set with few MISS rows one false
hit moves the cache's FHR and, with it, the reference's recall at that FHR: the
interval says whether "keeps it" is a property of the cache or of the sample.

Subsets (``slices`` of :func:`grade`) repeat every figure on the rows a
predicate keeps, from the same decisions. :func:`details_agree` is the one the
reference run uses: pairs whose numbers and names agree, where a paraphrase
judgement and a cache judgement should coincide (a news paraphrase that says
"11,400 acres" for "12,400 acres" is the same story but not the same answer).

The report carries figures only, never the pairs' text.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ..metrics.paired import GapInterval, paired_gap_interval
from ..metrics.ranking import threshold_free
from ..reporting.report import Report
from ..run.blockrun import CacheSpec
from ..schema import Row
from .pair_formats import PairFile

if TYPE_CHECKING:
    from ..run.harness import OnError

#: How far below the reference's recall (at the cache's own FHR) and ROC-AUC a
#: cache may be and still "keep" it: the paraphrase sets' HIT labels include
#: pairs that differ in a name or a number, which a cache must refuse (issue 29's
#: decision), so a strict cache pays a little recall there by design.
RECALL_TOLERANCE = 0.02
AUC_TOLERANCE = 0.02


def recall_at_fhr(
    y_true: Sequence[int], scores: Sequence[float | None], fhr: float
) -> float | None:
    """The best recall of ``scores`` among thresholds with FHR <= ``fhr`` (None when
    there are no HIT rows). Rows with a None score never fire.

    >>> recall_at_fhr([1, 1, 0, 1, 0], [0.9, 0.8, 0.7, 0.6, 0.1], 0.0)
    0.6666666666666666
    >>> recall_at_fhr([1, 1, 0, 1, 0], [0.9, 0.8, 0.7, 0.6, 0.1], 0.5)
    1.0
    """
    if not 0.0 <= fhr <= 1.0 or math.isnan(fhr):
        raise ValueError(f"fhr must be in [0, 1], got {fhr}")
    tf = threshold_free(list(y_true), list(scores), alphas=[fhr])
    return tf.operating_points[0].recall


@dataclass(frozen=True, slots=True)
class Entry:
    """One cache on one set: its operating point and ROC-AUC, and the reference's
    recall at the cache's FHR and ROC-AUC on the same rows."""

    set: str
    cache: str
    n: int
    n_positive: int
    fhr: float | None
    recall: float | None
    precision: float | None
    roc_auc: float | None
    errors: int
    ref_recall_at_fhr: float | None
    ref_roc_auc: float | None
    is_reference: bool = False
    subset: str = ""  # the slice of the set's rows ("" = all of them)
    #: Bootstrap percentile intervals of the gaps and the share of resamples in
    #: which the cache keeps the reference (None: not resampled).
    recall_gap_ci: tuple[float, float] | None = None
    auc_gap_ci: tuple[float, float] | None = None
    keeps_share: float | None = None

    @property
    def recall_gap(self) -> float | None:
        """recall - the reference's recall at the same FHR (>= 0: value kept)."""
        if self.recall is None or self.ref_recall_at_fhr is None:
            return None
        return self.recall - self.ref_recall_at_fhr

    @property
    def auc_gap(self) -> float | None:
        """ROC-AUC - the reference's ROC-AUC."""
        if self.roc_auc is None or self.ref_roc_auc is None:
            return None
        return self.roc_auc - self.ref_roc_auc

    @property
    def keeps_reference(self) -> bool | None:
        """recall >= the reference's at the same FHR minus :data:`RECALL_TOLERANCE`
        and ROC-AUC >= the reference's minus :data:`AUC_TOLERANCE` (None when either
        is undefined, and for the reference's own row: its decision threshold need
        not be its best one)."""
        r, a = self.recall_gap, self.auc_gap
        if r is None or a is None or self.is_reference:
            return None
        return r >= -RECALL_TOLERANCE - 1e-12 and a >= -AUC_TOLERANCE - 1e-12

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["recall_gap"] = self.recall_gap
        out["auc_gap"] = self.auc_gap
        out["keeps_reference"] = self.keeps_reference
        return out


def labels(rows: Sequence[Row]) -> list[int]:
    """1 for HIT rows, 0 for MISS (rows must be labelled)."""
    return [r.y for r in rows]


_DETAIL_RE = re.compile(r"\d+(?:[.,:]\d+)*|[^\W\d_]+(?:['’][^\W\d_]+)*")
_SENTENCE_ENDS = frozenset(".!?")


def _details(text: str) -> tuple[set[str], set[str], set[str]]:
    """(numbers with thousands separators dropped, capitalised words that do not
    open a sentence, every word), the words lower-cased."""
    numbers: set[str] = set()
    names: set[str] = set()
    words: set[str] = set()
    prev_end = 0
    for m in _DETAIL_RE.finditer(text):
        tok = m.group()
        opens = prev_end == 0 or any(ch in _SENTENCE_ENDS for ch in text[prev_end : m.start()])
        prev_end = m.end()
        if tok[0].isdigit():
            numbers.add(tok.replace(",", ""))
            continue
        words.add(tok.lower())
        if tok[0].isupper() and not opens and tok != "I":
            names.add(tok.lower())
    return numbers, names, words


def details_agree(a: str, b: str) -> bool:
    """Whether two texts name the same numbers (as sets) and every capitalised
    word inside a sentence on either side is a word of the other side
    (case-insensitive, so a name that opens one side's sentence still counts).

    >>> details_agree("Shares rose 5% on Friday.", "On Friday the shares gained 5%.")
    True
    >>> details_agree("It burned 12,400 acres.", "It burned 11,400 acres.")
    False
    >>> details_agree("Smith met Obama.", "Smith met Biden.")
    False
    """
    na, names_a, words_a = _details(a)
    nb, names_b, words_b = _details(b)
    return na == nb and names_a <= words_b and names_b <= words_a


def row_details_agree(row: Row) -> bool:
    """:func:`details_agree` of a row's two queries."""
    return details_agree(row.query_a, row.query_b)


#: The subset the external runs report besides every whole set.
DETAILS_AGREE = "numbers and names agree"

#: The ``slices`` of :func:`grade` that ``cacheeval external`` and
#: ``scripts/run_external.py`` report.
DEFAULT_SLICES: Mapping[str, Callable[[Row], bool]] = MappingProxyType(
    {DETAILS_AGREE: row_details_agree}
)


def entry(
    set_name: str,
    cache_name: str,
    report: Report,
    rows: Sequence[Row],
    ref_scores: Sequence[float | None] | None,
) -> Entry:
    """The :class:`Entry` of a scored run (``report`` over ``rows``); the reference's
    per-row scores (aligned with ``rows``) give its recall at the run's FHR."""
    h = report.headline
    tf = report.threshold_free
    y = labels(rows)
    ref_recall = ref_auc = None
    if ref_scores is not None:
        if len(ref_scores) != len(rows):
            raise ValueError(f"{len(ref_scores)} reference scores for {len(rows)} rows")
        if h.fhr.value is not None:
            ref_recall = recall_at_fhr(y, ref_scores, h.fhr.value)
        ref_auc = threshold_free(y, list(ref_scores)).roc_auc
    return Entry(
        set=set_name,
        cache=cache_name,
        n=len(rows),
        n_positive=sum(y),
        fhr=h.fhr.value,
        recall=h.recall.value,
        precision=h.precision.value,
        roc_auc=tf.roc_auc if tf is not None else None,
        errors=report.errors.n_errors + report.errors.n_timeouts,
        ref_recall_at_fhr=ref_recall,
        ref_roc_auc=ref_auc,
    )


def scores_by_row(predictions: Sequence[Any], rows: Sequence[Row]) -> list[float | None]:
    """The predictions' scores in row order (None for an error or a missing row)."""
    by_id: Mapping[str, Any] = {p.id: p for p in predictions}
    out: list[float | None] = []
    for r in rows:
        p = by_id.get(r.id)
        out.append(None if p is None or p.error is not None else p.score)
    return out


@dataclass(frozen=True, slots=True)
class ExternalReport:
    """Every entry of one run, with what the sets and the reference were."""

    reference: str
    entries: tuple[Entry, ...]
    sets: tuple[dict[str, Any], ...] = ()
    created: str = ""
    notes: tuple[str, ...] = ()
    resamples: int = 0  # bootstrap resamples behind the entries' intervals (0: none)
    bootstrap_seed: int = 0
    confidence: float = 0.95

    def to_dict(self) -> dict[str, Any]:
        return {
            "reference": self.reference,
            "recall_tolerance": RECALL_TOLERANCE,
            "auc_tolerance": AUC_TOLERANCE,
            "created": self.created,
            "resamples": self.resamples,
            "bootstrap_seed": self.bootstrap_seed,
            "confidence": self.confidence,
            "sets": [dict(s) for s in self.sets],
            "entries": [e.to_dict() for e in self.entries],
            "notes": list(self.notes),
        }

    def to_markdown(self, title: str = "External validity") -> str:
        lines = [f"# {title}", ""]
        if self.created:
            lines += [f"Generated {self.created}.", ""]
        lines += markdown_table(self.entries, self.reference)
        if self.resamples:
            lines += ["", interval_note(self.resamples, self.bootstrap_seed, self.confidence)]
        if self.sets:
            lines += ["", "Sets:", ""] + [f"- {_set_line(s)}" for s in self.sets]
        if self.notes:
            lines += [""] + [f"{n}" for n in self.notes]
        lines.append("")
        return "\n".join(lines)


def _set_line(s: Mapping[str, Any]) -> str:
    """``name: N pairs, P HIT (layout, sampled/dropped)``."""
    notes = [f"{s['format']} layout"]
    if s.get("read", 0) > s["pairs"]:
        notes.append(f"sampled {s['pairs']} of {s['read']}")
    if s.get("dropped"):
        notes.append(f"{s['dropped']} dropped between the STS cut-offs")
    return f"`{s['name']}`: {s['pairs']} pairs, {s['positives']} HIT ({', '.join(notes)})"


def interval_note(resamples: int, seed: int, confidence: float) -> str:
    """The sentence under a table whose gaps carry intervals."""
    return (
        f"Gap intervals: {confidence:.0%} percentile intervals of a paired bootstrap over "
        f"the set's pairs, stratified by label ({resamples} resamples, seed {seed}); "
        "'in resamples': the share of resamples in which the cache keeps the reference."
    )


def format_gap(x: float | None, ci: Sequence[float] | None) -> str:
    """A signed gap with its interval when there is one.

    >>> format_gap(0.153, (-0.11, 0.297)), format_gap(-0.04, None), format_gap(None, None)
    ('+0.153 [-0.110, +0.297]', '-0.040', 'n/a')
    """
    if not ci:
        return _f(x, signed=True)
    return f"{_f(x, signed=True)} [{ci[0]:+.3f}, {ci[1]:+.3f}]"


def _f(x: float | None, signed: bool = False) -> str:
    if x is None:
        return "n/a"
    return f"{x:+.3f}" if signed else f"{x:.3f}"


def markdown_table(entries: Sequence[Entry], reference: str) -> list[str]:
    """One row per (set, cache): the operating point, ROC-AUC, the reference's
    recall at the same FHR and ROC-AUC, the gaps and whether the cache keeps the
    reference's value."""
    header = [
        "set",
        "pairs (HIT)",
        "cache",
        "FHR",
        "recall",
        "ROC-AUC",
        f"{reference} recall at same FHR",
        f"{reference} ROC-AUC",
        "recall gap",
        "AUC gap",
        "keeps it",
    ]
    resampled = any(e.keeps_share is not None for e in entries)
    if resampled:
        header.append("in resamples")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for e in entries:
        keeps = e.keeps_reference
        lines.append(
            "| "
            + " | ".join(
                [
                    f"{e.set}: {e.subset}" if e.subset else e.set,
                    f"{e.n} ({e.n_positive})",
                    e.cache,
                    _f(e.fhr),
                    _f(e.recall),
                    _f(e.roc_auc),
                    _f(e.ref_recall_at_fhr),
                    _f(e.ref_roc_auc),
                    format_gap(e.recall_gap, e.recall_gap_ci),
                    format_gap(e.auc_gap, e.auc_gap_ci),
                    "(reference)"
                    if e.is_reference
                    else "n/a"
                    if keeps is None
                    else ("yes" if keeps else "**no**"),
                    *(
                        []
                        if not resampled
                        else ["" if e.keeps_share is None else f"{e.keeps_share:.0%}"]
                    ),
                ]
            )
            + " |"
        )
    return lines


# --- running ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LabelledSet:
    """Rows to grade on under a name (a pair file, or CacheEval's test split)."""

    name: str
    rows: tuple[Row, ...]
    info: Mapping[str, Any]


def grade(
    caches: Mapping[str, Any],
    sets: Sequence[LabelledSet],
    *,
    reference: Any | None = None,
    reference_name: str = "reference",
    on_error: OnError = "miss",
    progress: Callable[[str], None] | None = None,
    workers: int = 0,
    min_parallel_rows: int = 1000,
    slices: Mapping[str, Callable[[Row], bool]] | None = None,
    resamples: int = 0,
    seed: int = 0,
    in_process: bool = False,
) -> ExternalReport:
    """Grade every cache on every set (through :func:`cacheeval.run.harness.evaluate`).

    The reference (when given) runs once per set; its per-row scores give each
    cache's ``ref_recall_at_fhr`` and ``ref_roc_auc``, and it gets an entry of its
    own (its decisions at its own threshold). Entries come set by set, caches in
    the given order, the reference last.

    A cache may be given as a :class:`~cacheeval.run.blockrun.CacheSpec`: it then
    runs in a cache process of its own on each set (on ``workers`` of them for
    sets of at least ``min_parallel_rows`` pairs), or, with ``in_process``, is
    built once in this process. A cache object runs in this process.

    ``slices`` (name -> row predicate): each set's entries are repeated on the
    rows each predicate keeps (``Entry.subset``), scored from the same decisions
    (no cache runs twice); a slice with no row is left out.

    ``resamples`` > 0 (with a reference): every cache's entry also carries the
    bootstrap intervals of its gaps (:func:`gap_interval`, seeded by ``seed``;
    every entry with the same seed, so the draws are the same for every cache).
    """
    from ..run.harness import SealedRows, predict, require_labels

    built: dict[str, Any] = {}

    def run(name: str, cache: Any, rows: list[Row]) -> list[Any]:
        if isinstance(cache, CacheSpec):
            if not in_process:  # untrusted: a process of its own, sent pairs only
                from ..run.parallel import predict_parallel

                n = workers if workers > 1 and len(rows) >= min_parallel_rows else 1
                return predict_parallel(cache, rows, workers=n, on_error=on_error)
            if name not in built:
                built[name] = cache.build()
            cache = built[name]
        return predict(cache, rows, on_error=on_error)

    entries: list[Entry] = []
    for s in sets:
        rows = list(s.rows)
        require_labels(rows)
        # the truth is read back from bytes sealed before any cache runs
        truth = SealedRows(rows)
        runs: list[tuple[str, list[Any]]] = []
        if reference is not None:
            if progress:
                progress(f"{s.name}: {reference_name} on {len(rows)} pairs")
            runs.append((reference_name, predict(reference, rows, on_error=on_error)))
        for name, cache in caches.items():
            if progress:
                progress(f"{s.name}: {name} on {len(rows)} pairs")
            runs.append((name, run(name, cache, rows)))
        subsets = {"": truth.rows()}
        for slice_name, keep in (slices or {}).items():
            kept = [r for r in subsets[""] if keep(r)]
            if kept:
                subsets[slice_name] = kept
        for subset, sub_rows in subsets.items():
            if resamples and reference is not None and progress:
                where = f"{s.name}: {subset}" if subset else s.name
                progress(f"{where}: gap intervals, {resamples} resamples per cache")
            entries += _entries_on(s.name, subset, sub_rows, runs, reference is not None,
                                   resamples=resamples, seed=seed)  # fmt: skip
    return ExternalReport(
        reference=reference_name,
        entries=tuple(entries),
        sets=tuple(dict(s.info, name=s.name) for s in sets),
        resamples=resamples if reference is not None else 0,
        bootstrap_seed=seed,
    )


def _entries_on(
    set_name: str,
    subset: str,
    rows: list[Row],
    runs: Sequence[tuple[str, list[Any]]],
    has_reference: bool,
    *,
    resamples: int = 0,
    seed: int = 0,
) -> list[Entry]:
    """The entries of every run on ``rows`` (a set or a slice of it): the caches in
    order, then the reference (``runs[0]`` when ``has_reference``); with
    ``resamples``, the caches' gap intervals (:func:`gap_interval`)."""
    from ..run.harness import score as score_predictions

    ids = {r.id for r in rows}
    scored = []
    for name, preds in runs:
        mine = [p for p in preds if p.id in ids]
        scored.append((name, mine, score_predictions(mine, rows, cache_name=name)))
    ref_scores = scores_by_row(scored[0][1], rows) if has_reference else None
    out = [
        dataclasses.replace(entry(set_name, name, report, rows, ref_scores), subset=subset)
        for name, _, report in scored
    ]
    if has_reference:
        out = out[1:] + [dataclasses.replace(out[0], is_reference=True)]
        if resamples:
            assert ref_scores is not None
            out[:-1] = [
                with_interval(e, gap_interval(rows, preds, ref_scores, resamples, seed))
                for e, (_, preds, _) in zip(out[:-1], scored[1:], strict=True)
            ]
    return out


def gap_interval(
    rows: Sequence[Row],
    predictions: Sequence[Any],
    ref_scores: Sequence[float | None],
    resamples: int,
    seed: int = 0,
) -> GapInterval:
    """The bootstrap interval (:func:`cacheeval.metrics.paired.paired_gap_interval`)
    of a run's gaps to the reference on ``rows``: an error or a missing prediction
    is a MISS without a score, as in the run's report."""
    by_id: Mapping[str, Any] = {p.id: p for p in predictions}
    hits = [bool(p is not None and p.error is None and p.is_hit)
            for p in (by_id.get(r.id) for r in rows)]  # fmt: skip
    return paired_gap_interval(
        labels(rows), hits, scores_by_row(predictions, rows), ref_scores,
        n_resamples=resamples, seed=seed,
        recall_tolerance=RECALL_TOLERANCE, auc_tolerance=AUC_TOLERANCE,
    )  # fmt: skip


def with_interval(e: Entry, gi: GapInterval) -> Entry:
    """``e`` carrying the interval's bounds and keep share."""
    return dataclasses.replace(
        e, recall_gap_ci=gi.recall_gap, auc_gap_ci=gi.auc_gap, keeps_share=gi.keeps_share
    )


def from_pair_file(pf: PairFile) -> LabelledSet:
    """A read pair file as a :class:`LabelledSet` named by its file name."""
    info = {
        "format": pf.format,
        "pairs": len(pf.rows),
        "positives": pf.n_positive,
        "read": pf.n_read,
        "dropped": pf.n_dropped,
    }
    return LabelledSet(Path(pf.path).name, pf.rows, info)


def side_by_side_table(entries: Sequence[Entry]) -> list[str]:
    """Several caches compared: one row per cache (the reference last), one
    column per set (whole sets only), each cell ``FHR / recall / ROC-AUC``."""
    whole = [e for e in entries if not e.subset]
    sets = list(dict.fromkeys(e.set for e in whole))
    caches = list(dict.fromkeys(e.cache for e in whole if not e.is_reference))
    caches += list(dict.fromkeys(e.cache for e in whole if e.is_reference))
    cells = {(e.cache, e.set): f"{_f(e.fhr)} / {_f(e.recall)} / {_f(e.roc_auc)}" for e in whole}
    header = ["cache", *(f"{s}: FHR / recall / ROC-AUC" for s in sets)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for cache in caches:
        row = [cache, *(cells.get((cache, s), "n/a") for s in sets)]
        lines.append("| " + " | ".join(row) + " |")
    return lines
