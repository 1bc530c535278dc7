"""The results of one run: a single frozen :class:`Report` holding every number,
its provenance, and the renderers.

:func:`build_report` is the only place that computes; :meth:`Report.to_markdown`
and :meth:`Report.to_dict` only format and copy numbers the metric functions
produced. ``Report.from_dict(r.to_dict()) == r`` for every report.
"""

from __future__ import annotations

import dataclasses
import platform
import types
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Union, cast, get_args, get_origin, get_type_hints

from .columns import ScoreColumns
from .gitinfo import package_git_info
from .jsonio import dumps, dumps_pretty
from .metrics.classification import (
    Confusion,
    Estimate,
    accuracy,
    confusion,
    f1,
    fhr,
    precision,
    recall,
)
from .metrics.curves import Curves, curves
from .metrics.latency import CostStats, LatencyStats, cost_stats, latency_stats
from .metrics.ranking import DEFAULT_ALPHAS, ThresholdFree, threshold_free
from .metrics.slices import Slice, slice_of, slice_order
from .metrics.usage import ErrorStats, TierUsage, tier_usage
from .predictions import Prediction
from .schema import ADVERSARIAL, DIFFICULTIES, DOMAINS, LABELS, SCHEMA_VERSION, Row
from .version import __version__

REPORT_KEY = "cacheeval_report"
#: How many missing/extra ids a report lists.
MAX_IDS = 10


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where the numbers come from: data, code, cache and time.

    ``split``/``domains`` are the filters the rows were loaded with (None: no
    filter; ``split`` falls back to the rows' one split when they share it).
    ``git_commit``/``git_dirty`` are None outside a git checkout.
    ``hidden_rows_skipped`` counts hidden test rows (no labels) the command
    line left out of the selection; ``n_rows`` are the rows scored.
    """

    dataset_path: str | None
    dataset_sha256: str | None
    schema_version: str
    cacheeval_version: str
    git_commit: str | None
    git_dirty: bool | None
    cache_name: str
    cache_args: dict[str, Any]
    cache_ref: str | None
    created: str
    split: str | None
    domains: tuple[str, ...] | None
    n_rows: int
    hidden_rows_skipped: int
    python_version: str


@dataclass(frozen=True, slots=True)
class Headline:
    """The headline rates over all rows (ADVERSARIAL-FHR over ADVERSARIAL rows)."""

    accuracy: Estimate
    precision: Estimate
    recall: Estimate
    f1: Estimate
    fhr: Estimate
    adversarial_fhr: Estimate


@dataclass(frozen=True, slots=True)
class IdCheck:
    """Rows without a prediction (scored MISS) and predictions without a row
    (ignored): counts and the first :data:`MAX_IDS` ids of each, in order."""

    n_missing: int
    missing_ids: tuple[str, ...]
    n_extra: int
    extra_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Report:
    """Every number of one scored run. ``threshold_free`` is None (and
    ``threshold_free_note`` says why) unless every successful verdict carried
    a score. ``curves`` (the threshold sweep and the reliability diagram, for
    plotting) is None in reports written before it existed."""

    provenance: Provenance
    confusion: Confusion
    headline: Headline
    threshold_free: ThresholdFree | None
    threshold_free_note: str | None
    per_domain: tuple[Slice, ...]
    per_label: tuple[Slice, ...]
    per_difficulty: tuple[Slice, ...]
    latency: LatencyStats
    cost: CostStats
    tiers: tuple[TierUsage, ...]
    errors: ErrorStats
    ids: IdCheck
    curves: Curves | None = None

    # -- serialisation ----------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict: ``{"cacheeval_report": SCHEMA_VERSION, <fields>}``,
        keys in field order (documented in SCHEMA.md, report.schema.json)."""
        out: dict[str, Any] = {REPORT_KEY: SCHEMA_VERSION}
        out.update(_encode(self))
        return out

    def to_json(self) -> str:
        """:meth:`to_dict` as canonical indented JSON."""
        return dumps_pretty(self.to_dict())

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Report:
        """Rebuild a report from :meth:`to_dict` output; ValueError naming the
        offending key when the shape is wrong."""
        if not isinstance(data, Mapping):
            raise ValueError("report: expected an object")
        version = data.get(REPORT_KEY)
        if not isinstance(version, str) or version.split(".")[0] != SCHEMA_VERSION.split(".")[0]:
            raise ValueError(f"report: unsupported {REPORT_KEY} version {version!r}")
        body = {k: v for k, v in data.items() if k != REPORT_KEY}
        report = _decode(cls, body, "report")
        assert isinstance(report, Report)
        return report

    # -- Markdown --------------------------------------------------------------

    def to_markdown(self) -> str:
        """The report for people: provenance, headline with Wilson CIs, then
        every stratified, threshold-free, latency, cost, tier and error table."""
        return _render_markdown(self)


# --- building -------------------------------------------------------------------


def utc_now() -> str:
    """The current UTC time, ISO 8601 with seconds and a ``Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def make_provenance(
    *,
    n_rows: int,
    cache_name: str,
    cache_args: Mapping[str, Any] | None = None,
    cache_ref: str | None = None,
    dataset_path: str | None = None,
    dataset_sha256: str | None = None,
    split: str | None = None,
    domains: Sequence[str] | None = None,
    created: str | None = None,
    hidden_rows_skipped: int = 0,
) -> Provenance:
    """Provenance for a run of this package in this process (git asked once)."""
    git = package_git_info()
    return Provenance(
        dataset_path=dataset_path,
        dataset_sha256=dataset_sha256,
        schema_version=SCHEMA_VERSION,
        cacheeval_version=__version__,
        git_commit=git.commit,
        git_dirty=git.dirty,
        cache_name=cache_name,
        cache_args=dict(cache_args or {}),
        cache_ref=cache_ref,
        created=created or utc_now(),
        split=split,
        domains=tuple(domains) if domains is not None else None,
        n_rows=n_rows,
        hidden_rows_skipped=hidden_rows_skipped,
        python_version=platform.python_version(),
    )


def build_report(
    rows: Sequence[Row],
    predictions: Sequence[Prediction],
    *,
    provenance: Provenance,
    ids: IdCheck,
    cost_per_call_usd: Mapping[str, float] | None = None,
    alphas: Sequence[float] = DEFAULT_ALPHAS,
    scored_latency: Sequence[bool] | None = None,
) -> Report:
    """Compute every metric of ``predictions[i]`` against ``rows[i]``.

    Rows must be labelled. ``scored_latency[i]`` False leaves row i out of the
    latency summary and the cost (used for rows that had no prediction, which
    were never called); by default every row with a ``latency_ms`` counts.
    The rows are put in columns (:class:`~cacheeval.columns.ScoreColumns`)
    and scored by :func:`build_report_from_columns`, the one place that computes.
    """
    if len(rows) != len(predictions):
        raise ValueError(f"{len(rows)} rows but {len(predictions)} predictions")
    called = list(scored_latency) if scored_latency is not None else [True] * len(predictions)
    columns = ScoreColumns()
    for row, pred, ok in zip(rows, predictions, called, strict=True):
        columns.add_row(row, pred, ok)
    return build_report_from_columns(
        columns,
        provenance=provenance,
        ids=ids,
        cost_per_call_usd=cost_per_call_usd,
        alphas=alphas,
    )


def build_report_from_columns(
    columns: ScoreColumns,
    *,
    provenance: Provenance,
    ids: IdCheck,
    cost_per_call_usd: Mapping[str, float] | None = None,
    alphas: Sequence[float] = DEFAULT_ALPHAS,
) -> Report:
    """Compute every metric from the columns of a scored run.

    Each metric function reads the columns once, at C speed where it can;
    the threshold-free metrics sort the distinct scores once and the latency
    percentiles the latencies once. Nothing here holds a Python object per
    row beyond those two sorts.
    """
    c = confusion(columns.y, cast("Iterable[bool]", columns.hit))  # 0/1 codes
    per_label = _slices(columns, "label", LABELS)
    adversarial = next((s for s in per_label if s.key == ADVERSARIAL), None)
    headline = Headline(
        accuracy=accuracy(c),
        precision=precision(c),
        recall=recall(c),
        f1=f1(c),
        fhr=fhr(c),
        adversarial_fhr=adversarial.fhr if adversarial else fhr(Confusion(0, 0, 0, 0)),
    )
    tf, note = _threshold_free(columns, alphas)
    run_curves = curves(
        columns.y,
        columns.scores() if tf is not None else columns.no_scores(),
        columns.predicted_hit_probabilities(),
    )
    return Report(
        provenance=provenance,
        confusion=c,
        headline=headline,
        threshold_free=tf,
        threshold_free_note=note,
        per_domain=_slices(columns, "domain", DOMAINS),
        per_label=per_label,
        per_difficulty=_slices(columns, "difficulty", DIFFICULTIES),
        latency=latency_stats(columns.timed_latencies()),
        cost=cost_stats(columns.called_tiers(), cost_per_call_usd or {}),
        tiers=tier_usage(cast("Sequence[str]", columns.tier_names())),  # never None
        errors=columns.errors.stats(),
        ids=ids,
        curves=run_curves,
    )


def _slices(columns: ScoreColumns, column: str, order: Sequence[str]) -> tuple[Slice, ...]:
    counts = columns.confusions(column)
    return tuple(slice_of(k, counts[k]) for k in slice_order(counts, order))


def _threshold_free(
    columns: ScoreColumns, alphas: Sequence[float]
) -> tuple[ThresholdFree | None, str | None]:
    ok, unscored = columns.n_ok, columns.n_ok_unscored
    if not ok:
        return None, "no successful verdicts"
    if unscored == ok:
        return None, "the cache gives no scores"
    if unscored:
        return None, f"{unscored} of {ok} successful verdicts carry no score"
    # Failed rows keep score None: they never fire at any threshold.
    return threshold_free(columns.y, columns.scores(), alphas), None


# --- generic dataclass <-> dict ----------------------------------------------------


def _encode(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (tuple, list)):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _encode(v) for k, v in value.items()}
    return value


def _decode(tp: Any, value: Any, where: str) -> Any:
    if tp is Any:
        return value
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        options = [a for a in get_args(tp) if a is not type(None)]
        if value is None:
            if len(options) == len(get_args(tp)):
                raise ValueError(f"{where}: must not be null")
            return None
        if len(options) != 1:
            raise ValueError(f"{where}: ambiguous type {tp}")
        return _decode(options[0], value, where)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(value, Mapping):
            raise ValueError(f"{where}: expected an object")
        hints = get_type_hints(tp)
        fields = dataclasses.fields(tp)
        names = [f.name for f in fields]
        # A field with a default may be absent: it was added after files were written.
        optional = {
            f.name
            for f in fields
            if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        }
        missing = [n for n in names if n not in value and n not in optional]
        extra = sorted(k for k in value if k not in names)
        if missing or extra:
            raise ValueError(f"{where}: missing keys {missing}, unknown keys {extra}")
        return tp(**{n: _decode(hints[n], value[n], f"{where}.{n}") for n in names if n in value})
    if origin is tuple:
        if not isinstance(value, list):
            raise ValueError(f"{where}: expected a list")
        item = get_args(tp)[0]
        return tuple(_decode(item, v, f"{where}[{i}]") for i, v in enumerate(value))
    if origin is dict:
        if not isinstance(value, Mapping):
            raise ValueError(f"{where}: expected an object")
        item = get_args(tp)[1]
        return {str(k): _decode(item, v, f"{where}.{k}") for k, v in value.items()}
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{where}: expected a number")
        return float(value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{where}: expected an integer")
        return value
    if tp in (str, bool):
        if not isinstance(value, tp):
            raise ValueError(f"{where}: expected {tp.__name__}")
        return value
    raise ValueError(f"{where}: unsupported type {tp}")


# --- Markdown ---------------------------------------------------------------------


def _num(x: float | None, digits: int = 3) -> str:
    return "null" if x is None else f"{x:.{digits}f}"


def _count(x: float) -> str:
    return f"{x:g}"


def _est(e: Estimate) -> str:
    if e.value is None:
        return f"null ({_count(e.numerator)}/{_count(e.denominator)})"
    return f"{e.value:.3f} [{_num(e.ci_low)}, {_num(e.ci_high)}]"


def _frac(e: Estimate) -> str:
    return f"{_count(e.numerator)}/{_count(e.denominator)}"


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return out


def _calibration_lines(c: Curves) -> list[str]:
    lines = ["", "## Calibration", ""]
    lines.append(
        "Reliability: rows binned by the predicted P(HIT) (the confidence when the cache"
        " served, one minus it when it did not) against the observed share of HIT rows."
    )
    lines.append("")
    lines += _table(["ECE"], [[_num(c.ece, 4)]])
    lines.append("")
    lines += _table(
        ["P(HIT) bin", "Rows", "Mean predicted", "Observed HIT share [95% CI]"],
        [
            [
                f"[{b.lo:.1f}, {b.hi:.1f}{']' if b.hi >= 1.0 else ')'}",
                str(b.n),
                _num(b.mean_predicted),
                _est(b.observed),
            ]
            for b in c.reliability
            if b.n
        ],
    )
    return lines


def _render_markdown(r: Report) -> str:
    p = r.provenance
    lines: list[str] = [f"# CacheEval report: {_cell(p.cache_name)}", ""]
    git = "not a git checkout" if p.git_commit is None else p.git_commit
    if p.git_dirty:
        git += " (dirty)"
    lines += _table(
        ["Run", ""],
        [
            ["Dataset", f"{p.dataset_path or 'in-memory rows'}"],
            ["Dataset sha256", p.dataset_sha256 or "n/a"],
            ["Split filter", p.split or "all"],
            ["Domain filter", ", ".join(p.domains) if p.domains is not None else "all"],
            ["Rows scored", str(p.n_rows)],
            ["Hidden test rows left out (no labels)", str(p.hidden_rows_skipped)],
            ["Cache", p.cache_name],
            ["Cache arguments", dumps(p.cache_args)],
            ["Cache source", p.cache_ref or "n/a"],
            ["CacheEval", f"{p.cacheeval_version} (schema {p.schema_version})"],
            ["Git commit", git],
            ["Python", p.python_version],
            ["Created (UTC)", p.created],
        ],
    )
    h, c = r.headline, r.confusion
    lines += ["", "## Headline", "", "Rates with 95% Wilson score intervals.", ""]
    lines += _table(
        ["Metric", "Value [95% CI]", "Count"],
        [
            ["Accuracy", _est(h.accuracy), _frac(h.accuracy)],
            ["Precision", _est(h.precision), _frac(h.precision)],
            ["Recall", _est(h.recall), _frac(h.recall)],
            ["F1", _est(h.f1), f"TP {_count(h.f1.numerator)} / n_eff {_count(h.f1.denominator)}"],
            ["FHR", _est(h.fhr), _frac(h.fhr)],
            ["ADVERSARIAL-FHR", _est(h.adversarial_fhr), _frac(h.adversarial_fhr)],
            ["Confusion", f"TP {c.tp}, FP {c.fp}, FN {c.fn}, TN {c.tn}", str(p.n_rows)],
        ],
    )
    lines += ["", "## Threshold-free", ""]
    tf = r.threshold_free
    if tf is None:
        lines.append(f"Not computed: {r.threshold_free_note}.")
    else:
        lines.append(
            f"From the verdicts' scores ({tf.n_scored} of {tf.n} rows scored,"
            f" {tf.n_distinct_scores} distinct scores; unscored rows never fire)."
        )
        lines.append("")
        lines += _table(
            ["Metric", "Value"],
            [
                ["Positive rate p", _num(tf.positive_rate, 4)],
                ["PR-AUC (AP)", _num(tf.pr_auc, 4)],
                ["ROC-AUC", _num(tf.roc_auc, 4)],
                ["P-CHR AUC", _num(tf.p_chr_auc, 4)],
                ["CRR", _num(tf.crr, 4)],
                ["Structural gap", _num(tf.delta_str, 4)],
                ["Operational gap", _num(tf.delta_op, 4)],
                ["Calibration gap", _num(tf.delta_cal, 4)],
            ],
        )
        lines += ["", "Best operating point: the largest recall with FHR <= alpha.", ""]
        lines += _table(
            ["alpha", "Threshold", "Recall", "Precision", "FHR", "Fired", "TP", "FP"],
            [
                [
                    f"{op.alpha:g}",
                    "never fire" if op.threshold is None else f">= {op.threshold:.6g}",
                    _num(op.recall),
                    _num(op.precision),
                    _num(op.fhr, 4),
                    str(op.n_fired),
                    str(op.tp),
                    str(op.fp),
                ]
                for op in tf.operating_points
            ],
        )
    if r.curves is not None:
        lines += _calibration_lines(r.curves)
    lines += ["", "## Per domain", ""]
    lines += _table(
        ["Domain", "n", "F1", "FHR", "Precision", "Recall", "Accuracy"],
        [
            [
                s.key,
                str(s.n),
                _est(s.f1),
                _est(s.fhr),
                _est(s.precision),
                _est(s.recall),
                _est(s.accuracy),
            ]
            for s in r.per_domain
        ],
    )
    lines += ["", "## Per label", ""]
    lines.append(
        "Hit rate = share of the label's rows served. FHR on EQUIV/PARA_SAFE covers their"
        " policy_no_cache rows."
    )
    lines.append("")
    lines += _table(
        ["Label", "n", "HIT rows", "MISS rows", "Hit rate", "FHR", "Recall"],
        [
            [
                s.key,
                str(s.n),
                _count(s.recall.denominator),
                _count(s.fhr.denominator),
                _est(s.hit_rate),
                _est(s.fhr),
                _est(s.recall),
            ]
            for s in r.per_label
        ],
    )
    lines += ["", "## Per difficulty", ""]
    lines += _table(
        ["Difficulty", "n", "FHR", "Recall", "F1"],
        [[s.key, str(s.n), _est(s.fhr), _est(s.recall), _est(s.f1)] for s in r.per_difficulty],
    )
    lat = r.latency
    lines += ["", "## Latency", ""]
    lines.append(
        f"Milliseconds per decision over {lat.n} timed calls; percentiles by the"
        f" {lat.percentile_method} method."
    )
    lines.append("")
    lines += _table(
        ["mean", "p50", "p95", "p99", "max"],
        [
            [
                _num(lat.mean_ms),
                _num(lat.p50_ms),
                _num(lat.p95_ms),
                _num(lat.p99_ms),
                _num(lat.max_ms),
            ]
        ],
    )
    cost = r.cost
    prices = ", ".join(f"{t}: ${v:g}" for t, v in cost.cost_per_call_usd.items()) or "none declared"
    lines += ["", "## Cost", ""]
    lines += _table(
        ["Cost per 1k decisions", "Total", "Decisions", "Price per call by tier"],
        [
            [
                "null"
                if cost.per_1k_decisions_usd is None
                else f"${cost.per_1k_decisions_usd:.6g}",
                f"${cost.total_usd:.6g}",
                str(cost.n_decisions),
                prices,
            ]
        ],
    )
    lines += ["", "## Verification tiers", ""]
    lines += _table(
        ["Tier", "Count", "Share"],
        [[t.tier, str(t.count), _num(t.share)] for t in r.tiers],
    )
    e = r.errors
    lines += ["", "## Errors and timeouts", "", "Every failed decision is scored MISS.", ""]
    lines += _table(["Errors", "Timeouts"], [[str(e.n_errors), str(e.n_timeouts)]])
    if e.kinds:
        lines.append("")
        lines += _table(
            ["Kind", "Count", "First row", "First message"],
            [[k.kind, str(k.count), k.first_id, k.first_message] for k in e.kinds],
        )
        lines += ["", "First failures:", ""]
        lines += [f"- `{x.id}`: {_cell(x.error)}" for x in e.examples]
    ids = r.ids
    lines += ["", "## Missing and extra ids", ""]
    lines += _table(
        ["", "Count", "First ids"],
        [
            [
                "Missing (no prediction; scored MISS)",
                str(ids.n_missing),
                ", ".join(ids.missing_ids) or "-",
            ],
            ["Extra (no such row; ignored)", str(ids.n_extra), ", ".join(ids.extra_ids) or "-"],
        ],
    )
    return "\n".join(lines) + "\n"
