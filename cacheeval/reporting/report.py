"""The results of one run: a single frozen :class:`Report` holding every number,
its provenance, and the renderers.

:func:`build_report_from_columns` is the only place that computes, calling the
functions the metric registry declares; :meth:`Report.to_markdown`
(:mod:`cacheeval.reporting.report_markdown`) and :meth:`Report.to_dict` only format and
copy numbers the metric functions produced. ``Report.from_dict(r.to_dict()) == r``
for every report.
"""

from __future__ import annotations

import dataclasses
import platform
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Union, cast, get_args, get_origin, get_type_hints

from ..metrics.classification import Confusion, Estimate
from ..metrics.curves import Curves
from ..metrics.latency import ColdProbe, CostStats, LatencyStats, PrepareTime
from ..metrics.ranking import DEFAULT_ALPHAS, ThresholdFree
from ..metrics.registry import METRICS, section_compute, section_metrics
from ..metrics.slices import Slice, SliceOperatingPoint, slice_order
from ..metrics.usage import ErrorStats, TierUsage
from ..results.columns import KIND_FAMILIES, ScoreColumns
from ..results.failures import Failures
from ..results.predictions import Prediction
from ..schema import DIFFICULTIES, DOMAINS, LABELS, SCHEMA_VERSION, SUBSCORES, Row, subscore_of
from ..support.gitinfo import package_git_info
from ..support.jsonio import dumps_pretty
from ..support.layout import display_path
from ..version import __version__
from .verdict import verdict_lines

REPORT_KEY = "cacheeval_report"
#: The report file's format version (1.2 added ``provenance.run_mode``, 1.3
#: ``per_subscore``, 1.4 ``prepare``, ``cold_probe``, ``verdict``, ``failures``
#: and ``per_kind``); a reader takes any 1.x.
REPORT_VERSION = "1.4"
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
    #: Where the cache ran: ``process`` (a process of its own, the default),
    #: ``process, bubblewrap`` (that process in the OS sandbox), ``in-process``
    #: (beside the labels) or ``ray``; None when not recorded (the Python API,
    #: reports written before it existed).
    run_mode: str | None = None


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
    #: One slice per skill (query, context, policy: :func:`~cacheeval.schema.subscore_of`);
    #: None in reports written before it existed.
    per_subscore: tuple[Slice, ...] | None = None
    #: Each sub-score's best operating point at FHR <= 5%; None when the cache
    #: gives no scores (and in reports written before it existed).
    subscore_operating_points: tuple[SliceOperatingPoint, ...] | None = None
    #: What ``prepare()`` cost, beside the per-call latency; None when not
    #: measured (a report scored from a predictions file, the Python API).
    prepare: PrepareTime | None = None
    #: A fresh cache deciding new pairs with nothing prepared
    #: (:mod:`cacheeval.run.probe`); None when no probe ran.
    cold_probe: ColdProbe | None = None
    #: Three plain-language lines (:mod:`.verdict`); None with ``failures``.
    verdict: tuple[str, ...] | None = None
    #: The worst false hits and missed hits, and the failures grouped by what
    #: differs (:mod:`cacheeval.results.failures`); None when the rows were not
    #: at hand (and in reports written before it existed).
    failures: Failures | None = None
    #: One slice per perturbation kind of the stress rows (``cacheeval stress``;
    #: :func:`~cacheeval.results.columns.perturbation_kind`): FHR on identity,
    #: context and policy kinds, recall on noise kinds. None without stress rows.
    per_kind: tuple[Slice, ...] | None = None

    # -- serialisation ----------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict: ``{"cacheeval_report": REPORT_VERSION, <fields>}``,
        keys in field order (documented in SCHEMA.md, report.schema.json)."""
        out: dict[str, Any] = {REPORT_KEY: REPORT_VERSION}
        out.update(to_plain(self))
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
        if not isinstance(version, str) or version.split(".")[0] != REPORT_VERSION.split(".")[0]:
            raise ValueError(f"report: unsupported {REPORT_KEY} version {version!r}")
        body = {k: v for k, v in data.items() if k != REPORT_KEY}
        report = _decode(cls, body, "report")
        assert isinstance(report, Report)
        return report

    # -- Markdown --------------------------------------------------------------

    def to_markdown(self) -> str:
        """The report for people: provenance, headline with Wilson CIs, then
        every stratified, threshold-free, latency, cost, tier and error table
        (rendered by :mod:`.report_markdown`)."""
        return _RENDERERS["markdown"](self)


#: A report's renderers by format, each registered by the module that owns it
#: (:mod:`.report_markdown` registers ``"markdown"`` when the package is
#: imported). The model imports no renderer, so every renderer may import the
#: model and no import goes round in a circle.
_RENDERERS: dict[str, Callable[[Report], str]] = {}


def register_renderer(fmt: str, render: Callable[[Report], str]) -> None:
    """Make ``render`` the renderer of format ``fmt`` (the last one wins)."""
    _RENDERERS[fmt] = render


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
    run_mode: str | None = None,
) -> Provenance:
    """Provenance for a run of this package in this process (git asked once)."""
    git = package_git_info()
    return Provenance(
        dataset_path=display_path(dataset_path) if dataset_path is not None else None,
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
        run_mode=run_mode,
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
    failures: bool = True,
    list_test_failures: bool = False,
) -> Report:
    """Compute every metric of ``predictions[i]`` against ``rows[i]``.

    Rows must be labelled. ``scored_latency[i]`` False leaves row i out of the
    latency summary and the cost (used for rows that had no prediction, which
    were never called); by default every row with a ``latency_ms`` counts.
    The rows are put in columns (:class:`~cacheeval.results.columns.ScoreColumns`)
    and scored by :func:`build_report_from_columns`, the one place that computes.
    ``failures=False`` leaves out the verdict and the failure lists (they
    quote the rows); test-split rows are listed in them only with
    ``list_test_failures`` (:mod:`cacheeval.results.failures`).
    """
    if len(rows) != len(predictions):
        raise ValueError(f"{len(rows)} rows but {len(predictions)} predictions")
    called = list(scored_latency) if scored_latency is not None else [True] * len(predictions)
    columns = ScoreColumns(list_test_failures=list_test_failures)
    for row, pred, ok in zip(rows, predictions, called, strict=True):
        if failures:
            columns.add_row(row, pred, ok)
        else:
            columns.add(row.y, row.label, row.domain, row.difficulty, pred, ok, subscore_of(row))
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
    """Compute every metric from the columns of a scored run, by calling the
    ``compute`` of every metric in the registry (:mod:`cacheeval.metrics.registry`):
    one call per block where a section shares one function.

    Each metric function reads the columns once, at C speed where it can;
    the threshold-free metrics sort the distinct scores once and the latency
    percentiles the latencies once. Nothing here holds a Python object per
    row beyond those two sorts.
    """
    count = METRICS["confusion"].compute
    assert count is not None
    c = count(columns.y, cast("Iterable[bool]", columns.hit))  # 0/1 codes
    per_label = _slices(columns, "Per label")
    tf, note = _threshold_free(columns, alphas)
    headline = _headline(c, per_label)
    failures = columns.collected_failures()
    return Report(
        provenance=provenance,
        confusion=c,
        headline=headline,
        threshold_free=tf,
        threshold_free_note=note,
        per_domain=_slices(columns, "Per domain"),
        per_label=per_label,
        per_difficulty=_slices(columns, "Per difficulty"),
        latency=section_compute("Latency")(columns.timed_latencies()),
        cost=section_compute("Cost")(columns.called_tiers(), cost_per_call_usd or {}),
        tiers=section_compute("Verification tiers")(columns.tier_names()),  # never None
        errors=section_compute("Errors and timeouts")(columns.errors),
        ids=ids,
        curves=section_compute("Calibration")(
            columns.y,
            columns.scores() if tf is not None else columns.no_scores(),
            columns.predicted_hit_probabilities(),
        ),
        per_subscore=_slices(columns, "Per sub-score"),
        subscore_operating_points=None
        if tf is None
        else section_compute("Per sub-score operating point")(
            columns.subscore_keys(), columns.y, columns.scores(), SUBSCORES
        ),
        verdict=None
        if failures is None
        else verdict_lines(c, headline.fhr, headline.recall, tf, failures),
        failures=failures,
        per_kind=_kind_slices(columns),
    )


#: The column each slice section groups the rows by, and the order of its keys.
_SLICED_BY: dict[str, tuple[str, Sequence[str]]] = {
    "Per domain": ("domain", DOMAINS),
    "Per label": ("label", LABELS),
    "Per difficulty": ("difficulty", DIFFICULTIES),
    "Per sub-score": ("subscore", SUBSCORES),
    "Per perturbation kind": ("kind", ()),
}


def _headline(c: Confusion, per_label: Sequence[Slice]) -> Headline:
    """Every Headline metric of the registry, over all rows or the rows of its
    ``over`` label (no such rows: the rate of no rows)."""
    of_label = {s.key: s.confusion for s in per_label}
    return Headline(
        **{
            m.field: m.compute(c if m.over is None else of_label.get(m.over, Confusion(0, 0, 0, 0)))
            for m in section_metrics("Headline")
            if m.compute is not None and m.path.startswith("headline.")
        }
    )


def _slices(
    columns: ScoreColumns, section: str, order: Sequence[str] | None = None
) -> tuple[Slice, ...]:
    """One Slice per key present: every rate the registry declares for ``section``."""
    column, default_order = _SLICED_BY[section]
    order = default_order if order is None else order
    counts = columns.confusions(column)
    rates = [(m.field, m.compute) for m in section_metrics(section) if m.compute is not None]
    return tuple(
        Slice(key=k, n=counts[k].n, confusion=counts[k], **{f: fn(counts[k]) for f, fn in rates})
        for k in slice_order(counts, order)
    )


def _kind_slices(columns: ScoreColumns) -> tuple[Slice, ...] | None:
    """The per-kind slices of the stress rows, families in :data:`KIND_FAMILIES`
    order and kinds A-Z in each; None when no row is a stress row."""
    present = columns.kinds.names
    if not present:
        return None
    rank = {f: i for i, f in enumerate(KIND_FAMILIES)}
    order = sorted(present, key=lambda k: (rank.get(k.split("/")[0], len(rank)), k))
    return _slices(columns, "Per perturbation kind", order)


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
    return section_compute("Threshold-free")(columns.y, columns.scores(), alphas), None


# --- generic dataclass <-> dict ----------------------------------------------------


def to_plain(value: Any) -> Any:
    """``value`` with dataclasses as dicts (field order), tuples as lists and
    dict keys as strings: ready for :func:`~cacheeval.support.jsonio.dumps`.

    >>> to_plain(Confusion(1, 2, 3, 4))
    {'tp': 1, 'fp': 2, 'fn': 3, 'tn': 4}
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (tuple, list)):
        return [to_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_plain(v) for k, v in value.items()}
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
