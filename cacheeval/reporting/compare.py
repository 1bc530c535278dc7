"""Scored runs side by side: the headline of each, their differences, and every
domain's rates.

``compare({"name": report, ...})`` takes the reports in the order given (the
first is the reference) and keeps, per run:

* the headline (:class:`SystemHeadline`): n, accuracy, F1, FHR with its 95%
  Wilson interval, ADVERSARIAL-FHR, precision, recall, the confusion counts
  and the p50/p95 latency;
* per domain (:class:`DomainRates`): n, FHR with its interval, the false hits
  FP over the must-miss rows ``FP + TN``, recall, precision, F1;

and, for every headline rate m (:data:`HEADLINE_RATES`), its difference to the
reference run 0 (:class:`Difference`):

    delta_i = m_i - m_0                ratio_i = m_i / m_0

(None when a value is undefined or, for the ratio, when ``m_0 = 0``). The
renderers (:func:`headline_table`, :func:`differences_table`,
:func:`domain_table`, :func:`to_markdown`) only format these numbers.
:meth:`SystemHeadline.to_dict` / :meth:`DomainRates.to_dict` are the JSON
shapes of ``reports/VERIFIED_vs_GPTCACHE.json`` (its tables re-render from them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..metrics.slices import Slice
from ..schema import DOMAINS, SUBSCORES
from .markdown import table
from .report import Report

#: The headline rates whose differences are reported, in table order.
HEADLINE_RATES: tuple[str, ...] = (
    "accuracy",
    "f1",
    "fhr",
    "adversarial_fhr",
    "precision",
    "recall",
)
#: How a rate is named in a table header.
RATE_LABELS: dict[str, str] = {
    "accuracy": "accuracy",
    "f1": "F1",
    "fhr": "FHR",
    "fhr_ci": "FHR",
    "adversarial_fhr": "ADV-FHR",
    "precision": "precision",
    "recall": "recall",
}
#: Columns of the headline table.
HEADLINE_HEADER: tuple[str, ...] = (
    "system",
    "rows",
    "accuracy",
    "F1",
    "FHR",
    "ADV-FHR",
    "precision",
    "recall",
    "p50 ms",
    "p95 ms",
)

Interval = tuple[float | None, float | None]


@dataclass(frozen=True, slots=True)
class SystemHeadline:
    """One run's headline (see the module docstring)."""

    n: int
    accuracy: float | None
    f1: float | None
    fhr: float | None
    fhr_ci: Interval
    adversarial_fhr: float | None
    precision: float | None
    recall: float | None
    tp: int
    fp: int
    fn: int
    tn: int
    latency_p50_ms: float | None
    latency_p95_ms: float | None

    @classmethod
    def of(cls, report: Report) -> SystemHeadline:
        h, c = report.headline, report.confusion
        return cls(
            n=report.provenance.n_rows,
            accuracy=h.accuracy.value,
            f1=h.f1.value,
            fhr=h.fhr.value,
            fhr_ci=(h.fhr.ci_low, h.fhr.ci_high),
            adversarial_fhr=h.adversarial_fhr.value,
            precision=h.precision.value,
            recall=h.recall.value,
            tp=c.tp,
            fp=c.fp,
            fn=c.fn,
            tn=c.tn,
            latency_p50_ms=report.latency.p50_ms,
            latency_p95_ms=report.latency.p95_ms,
        )

    def to_dict(self) -> dict[str, Any]:
        return _plain(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SystemHeadline:
        """From :meth:`to_dict` output; other keys are ignored, a missing latency is None."""
        return cls(**_fields(cls, data))


@dataclass(frozen=True, slots=True)
class DomainRates:
    """One domain of one run: ``fp`` false hits over ``negatives = FP + TN``."""

    n: int
    fhr: float | None
    fhr_ci: Interval
    recall: float | None
    precision: float | None
    f1: float | None
    fp: int
    negatives: int

    def to_dict(self) -> dict[str, Any]:
        return _plain(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DomainRates:
        """From :meth:`to_dict` output; other keys are ignored."""
        return cls(**_fields(cls, data))


def _plain(obj: SystemHeadline | DomainRates) -> dict[str, Any]:
    """The JSON dict of a headline or domain: fields in order, the interval a list."""
    out = {f: getattr(obj, f) for f in obj.__dataclass_fields__}
    out["fhr_ci"] = list(obj.fhr_ci)
    return out


def _fields(cls: type[SystemHeadline | DomainRates], data: Mapping[str, Any]) -> dict[str, Any]:
    """The constructor arguments of :func:`_plain` output (absent keys None)."""
    low, high = data.get("fhr_ci") or (None, None)
    return {**{f: data.get(f) for f in cls.__dataclass_fields__}, "fhr_ci": (low, high)}


def domain_rates(report: Report) -> dict[str, DomainRates]:
    """Every domain of a report, in the report's order."""
    return slice_rates(report.per_domain)


def subscore_rates(report: Report) -> dict[str, DomainRates]:
    """Every sub-score of a report (query, context, policy); {} in a report
    written before sub-scores existed."""
    return slice_rates(report.per_subscore or ())


def slice_rates(slices: Sequence[Slice]) -> dict[str, DomainRates]:
    """The rates of each slice (a domain, a sub-score), in order."""
    return {
        s.key: DomainRates(
            n=s.n,
            fhr=s.fhr.value,
            fhr_ci=(s.fhr.ci_low, s.fhr.ci_high),
            recall=s.recall.value,
            precision=s.precision.value,
            f1=s.f1.value,
            fp=s.confusion.fp,
            negatives=s.confusion.fp + s.confusion.tn,
        )
        for s in slices
    }


@dataclass(frozen=True, slots=True)
class Difference:
    """One headline rate of every run, and ``m_i - m_0`` and ``m_i / m_0`` (run 0:
    the reference, whose own delta is 0 and ratio 1 when defined)."""

    metric: str
    values: tuple[float | None, ...]
    deltas: tuple[float | None, ...]
    ratios: tuple[float | None, ...]


@dataclass(frozen=True, slots=True)
class Comparison:
    """Runs side by side (see the module docstring)."""

    names: tuple[str, ...]
    headlines: tuple[SystemHeadline, ...]
    domains: tuple[Mapping[str, DomainRates], ...]
    differences: tuple[Difference, ...]
    #: Per run, its sub-scores (query, context, policy); () when a run lacks them.
    subscores: tuple[Mapping[str, DomainRates], ...] = ()


def difference(metric: str, values: Sequence[float | None]) -> Difference:
    """``delta_i = m_i - m_0``, ``ratio_i = m_i / m_0`` (None when undefined).

    >>> d = difference("fhr", [0.02, 0.5, None])
    >>> d.deltas, d.ratios
    ((0.0, 0.48, None), (1.0, 25.0, None))
    """
    ref = values[0] if values else None
    deltas = tuple(None if v is None or ref is None else v - ref for v in values)
    ratios = tuple(None if v is None or not ref else v / ref for v in values)
    return Difference(metric, tuple(values), deltas, ratios)


def comparison(
    names: Sequence[str],
    headlines: Sequence[SystemHeadline],
    domains: Sequence[Mapping[str, DomainRates]],
    subscores: Sequence[Mapping[str, DomainRates]] = (),
) -> Comparison:
    """A :class:`Comparison` of parts already taken out of the reports (or read back
    from JSON): computes the differences. ``subscores``: one table per run, or
    none (then no sub-score section)."""
    if not len(names) == len(headlines) == len(domains):
        raise ValueError("one name, headline and domain table per run")
    if subscores and len(subscores) != len(names):
        raise ValueError("one sub-score table per run, or none")
    diffs = tuple(difference(m, [getattr(h, m) for h in headlines]) for m in HEADLINE_RATES)
    subs = tuple(subscores) if all(subscores) else ()
    return Comparison(tuple(names), tuple(headlines), tuple(domains), diffs, subs)


def compare(reports: Mapping[str, Report]) -> Comparison:
    """The runs ``{name: report}`` side by side, the first as the reference."""
    if not reports:
        raise ValueError("nothing to compare")
    return comparison(
        list(reports),
        [SystemHeadline.of(r) for r in reports.values()],
        [domain_rates(r) for r in reports.values()],
        [subscore_rates(r) for r in reports.values()],
    )


# --- rendering ----------------------------------------------------------------------------


def num(x: float | None, digits: int = 3) -> str:
    """``x`` to ``digits`` decimals, ``n/a`` for None (these tables' convention;
    :func:`cacheeval.reporting.markdown.num` writes ``null``)."""
    return "n/a" if x is None else f"{x:.{digits}f}"


def signed(x: float | None, digits: int = 3) -> str:
    """``x`` with its sign (``+0.480``), ``n/a`` for None."""
    return "n/a" if x is None else f"{x:+.{digits}f}"


def headline_table(c: Comparison, names: Sequence[str] | None = None) -> list[str]:
    """One row per run: rows, the headline rates (3 decimals), p50/p95 ms (2 decimals).
    ``names`` replaces the run names in the first column."""
    rows = [
        [
            name,
            str(h.n),
            num(h.accuracy),
            num(h.f1),
            num(h.fhr),
            num(h.adversarial_fhr),
            num(h.precision),
            num(h.recall),
            num(h.latency_p50_ms, 2),
            num(h.latency_p95_ms, 2),
        ]
        for name, h in zip(names or c.names, c.headlines, strict=True)
    ]
    return table(HEADLINE_HEADER, rows)


def differences_table(c: Comparison) -> list[str]:
    """One row per headline rate: every run's value, then each other run's
    difference to the first."""
    header = ["metric", *c.names, *(f"{n} - {c.names[0]}" for n in c.names[1:])]
    rows = [
        [RATE_LABELS[d.metric], *map(num, d.values), *map(signed, d.deltas[1:])]
        for d in c.differences
    ]
    return table(header, rows)


def _fhr_cell(d: DomainRates, *, ci: bool) -> str:
    """``0.083 (2/24; 0.023-0.258)``: FHR, false hits over must-miss rows, and
    (with ``ci``) the 95% Wilson interval."""
    low, high = d.fhr_ci
    interval = f"; {num(low)}-{num(high)}" if ci and low is not None and high is not None else ""
    return f"{num(d.fhr)} ({d.fp}/{d.negatives}{interval})"


def _domain_cell(d: DomainRates, rate: str) -> str:
    if rate in ("fhr", "fhr_ci"):
        return _fhr_cell(d, ci=rate == "fhr_ci")
    value: float | None = getattr(d, rate)
    return num(value)


def domain_table(
    c: Comparison,
    columns: Sequence[tuple[int, str]] | None = None,
    names: Sequence[str] | None = None,
) -> list[str]:
    """One row per domain every run has (in :data:`~cacheeval.schema.DOMAINS`
    order): the domain, the first run's rows, then the ``(run, rate)`` columns.
    A rate is ``fhr_ci`` (FHR, counts and interval), ``fhr`` (FHR and counts),
    ``recall``, ``precision`` or ``f1``; default: ``fhr_ci``, recall and F1 of
    every run. ``names`` replaces the run names in the header."""
    return _slice_table(c.domains, DOMAINS, "domain", c, columns, names)


def subscore_table(c: Comparison, names: Sequence[str] | None = None) -> list[str]:
    """:func:`domain_table` over the sub-scores (query, context, policy)."""
    return _slice_table(c.subscores, SUBSCORES, "sub-score", c, None, names)


def _slice_table(
    runs: Sequence[Mapping[str, DomainRates]],
    keys: Sequence[str],
    what: str,
    c: Comparison,
    columns: Sequence[tuple[int, str]] | None,
    names: Sequence[str] | None,
) -> list[str]:
    names = list(names or c.names)
    cols = list(columns or [(i, r) for i in range(len(names)) for r in ("fhr_ci", "recall", "f1")])
    rows = []
    for k in keys:
        if not runs or not all(k in run for run in runs):
            continue
        first = runs[0][k]
        rows.append([k, str(first.n), *(_domain_cell(runs[i][k], r) for i, r in cols)])
    header = [what, "rows", *(f"{names[i]} {RATE_LABELS[r]}" for i, r in cols)]
    return table(header, rows)


def to_markdown(c: Comparison) -> str:
    """The comparison for people: headlines, differences to the first run, domains."""
    lines = ["## Headline", ""]
    lines += headline_table(c)
    lines += ["", f"## Differences to {c.names[0]}", ""]
    lines += differences_table(c)
    if c.subscores:
        lines += ["", "## Per sub-score", ""]
        lines += subscore_table(c)
    lines += ["", "## Per domain", ""]
    lines += domain_table(c)
    return "\n".join(lines) + "\n"
