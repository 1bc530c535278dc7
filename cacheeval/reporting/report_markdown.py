"""The Markdown form of a :class:`~cacheeval.reporting.report.Report`: one generic loop
over the declared sections.

:data:`SECTIONS` lays the report out; the metric columns and rows come from
the registry (:mod:`cacheeval.metrics.registry`: title, format, section, in
registration order), the other columns (keys, counts, thresholds) are
declared here. The renderer does no arithmetic: it formats, with
:data:`FORMATS`, numbers the metric functions produced.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..metrics.registry import MetricSpec, section_metrics, values_at
from ..support.jsonio import dumps
from .failures_markdown import failures_markdown, glossary_markdown, verdict_markdown
from .latency_text import prepare_sentence, probe_sentence
from .markdown import cell, count, estimate, fraction, num, table
from .report import Provenance, Report, register_renderer
from .viewer import ViewLink


def _usd(x: float | None) -> str:
    return "null" if x is None else f"${x:.6g}"


#: Cell text by format: the metrics' formats (registry ``Format``), then the
#: formats of the other columns.
FORMATS: dict[str, Callable[[Any], str]] = {
    "estimate": estimate,
    "estimate_n_eff": estimate,
    "confusion": lambda c: f"TP {c.tp}, FP {c.fp}, FN {c.fn}, TN {c.tn}",
    "fixed3": num,
    "fixed4": lambda x: num(x, 4),
    "int": str,
    "usd": _usd,
    "text": str,
    "count": count,
    "alpha": lambda x: f"{x:g}",
    "threshold": lambda t: "never fire" if t is None else f">= {t:.6g}",
    "bin": lambda b: f"[{b.lo:.1f}, {b.hi:.1f}{']' if b.hi >= 1.0 else ')'}",
    "prices": lambda d: ", ".join(f"{t}: ${v:g}" for t, v in d.items()) or "none declared",
    "list": lambda xs: ", ".join(xs) or "-",
    "failure": lambda x: f"- `{x.id}`: {cell(x.error)}",
    "prepare": prepare_sentence,
    "cold_probe": probe_sentence,
    "rate": lambda e: "-" if e.value is None else estimate(e),  # "-": no rows to rate
}
#: The Count cell of a metric row, by the metric's format.
COUNTS: dict[str, Callable[[Any], str]] = {
    "estimate": fraction,
    "estimate_n_eff": lambda e: f"TP {count(e.numerator)} / n_eff {count(e.denominator)}",
    "confusion": lambda c: str(c.n),
}


@dataclass(frozen=True, slots=True)
class Column:
    """A column that is not a metric: ``attr`` path from the row ("" = the row)."""

    title: str
    attr: str
    fmt: str


@dataclass(frozen=True, slots=True)
class Text:
    """A paragraph: ``template.format(x=report)``."""

    template: str
    when: str | None = None


@dataclass(frozen=True, slots=True)
class MetricRows:
    """A table with one row per metric of the section that has a format:
    title, value, and a Count cell (``details``: one more cell per row)."""

    header: tuple[str, ...]
    details: tuple[Column, ...] = ()
    when: str | None = None


@dataclass(frozen=True, slots=True)
class Table:
    """A table with one row per item at ``rows`` (a path from the report):
    ``lead`` columns, the section's metrics at that path, ``trail`` columns.
    Items whose ``keep`` attribute is falsy are left out."""

    rows: str
    lead: tuple[Column, ...] = ()
    trail: tuple[Column, ...] = ()
    keep: str | None = None
    when: str | None = None


@dataclass(frozen=True, slots=True)
class Bullets:
    """One line per item at ``rows``, formatted by ``fmt``."""

    rows: str
    fmt: str
    when: str | None = None


Block = Text | MetricRows | Table | Bullets


@dataclass(frozen=True, slots=True)
class Section:
    """A ``## heading`` and its blocks. When the value at ``requires`` is None
    the section shows ``absent`` instead (or nothing, when that is None)."""

    heading: str
    blocks: tuple[Block, ...]
    requires: str | None = None
    absent: str | None = None


def _c(title: str, attr: str, fmt: str) -> Column:
    return Column(title, attr, fmt)


_OPERATING_POINT = (
    _c("alpha", "alpha", "alpha"),
    _c("Threshold", "threshold", "threshold"),
    _c("Recall", "recall", "fixed3"),
    _c("Precision", "precision", "fixed3"),
    _c("FHR", "fhr", "fixed4"),
    _c("Fired", "n_fired", "int"),
    _c("TP", "tp", "int"),
    _c("FP", "fp", "int"),
)
_BIN = (
    _c("P(HIT) bin", "", "bin"),
    _c("Rows", "n", "int"),
    _c("Mean predicted", "mean_predicted", "fixed3"),
    _c("Observed HIT share [95% CI]", "observed", "estimate"),
)
_ERROR_KIND = (
    _c("Kind", "kind", "text"),
    _c("Count", "count", "int"),
    _c("First row", "first_id", "text"),
    _c("First message", "first_message", "text"),
)

SECTIONS: tuple[Section, ...] = (
    Section("Headline", (
        Text("Rates with 95% Wilson score intervals."),
        MetricRows(("Metric", "Value [95% CI]", "Count")),
    )),
    Section("Threshold-free", (
        Text("From the verdicts' scores ({x.threshold_free.n_scored} of {x.threshold_free.n}"
             " rows scored, {x.threshold_free.n_distinct_scores} distinct scores; unscored rows"
             " never fire)."),
        MetricRows(("Metric", "Value")),
        Text("Best operating point: the largest recall with FHR <= alpha."),
        Table("threshold_free.operating_points[]", _OPERATING_POINT),
    ), requires="threshold_free", absent="Not computed: {x.threshold_free_note}."),
    Section("Calibration", (
        Text("Reliability: rows binned by the predicted P(HIT) (the confidence when the cache"
             " served, one minus it when it did not) against the observed share of HIT rows."),
        Table("curves"),
        Table("curves.reliability[]", _BIN, keep="n"),
    ), requires="curves"),
    Section("Per sub-score", (
        Text("Three skills, one per row: query (same system prompt, turns and tools, no"
             " never-cache policy: the query alone decides), context (the two requests differ"
             " in system prompt, prior turns or tools) and policy (never-cache rows). A cache"
             " blind to context fails the second; --keyed adds the key it lacks."),
        Table("per_subscore[]", (
            _c("Sub-score", "key", "text"),
            _c("n", "n", "int"),
            _c("HIT rows", "recall.denominator", "count"),
            _c("MISS rows", "fhr.denominator", "count"),
        )),
        Text("Best operating point of each skill: the largest recall at FHR <= 5% on its own"
             " rows (the threshold chosen there, so it leans optimistic).",
             when="subscore_operating_points"),
        Table("subscore_operating_points[]", (
            _c("Sub-score", "key", "text"),
            _c("Threshold", "threshold", "fixed4"),
            _c("Recall", "recall", "estimate"),
            _c("FHR", "fhr", "estimate"),
        ), when="subscore_operating_points"),
    ), requires="per_subscore"),
    Section("Per perturbation kind", (
        Text("Stress rows (cacheeval stress), one row per perturbation kind: FHR on the edits"
             " that change the answer (identity: a detail swapped; context: the same query"
             " under another user's system prompt or other turns; policy: a never-cache"
             " request), recall on the noise edits that keep it (case, typos, greetings)."),
        Table("per_kind[]", (
            _c("Kind", "key", "text"),
            _c("n", "n", "int"),
            _c("FHR [95% CI]", "fhr", "rate"),
            _c("Recall [95% CI]", "recall", "rate"),
        )),
    ), requires="per_kind"),
    Section("Per domain", (
        Table("per_domain[]", (_c("Domain", "key", "text"), _c("n", "n", "int"))),
    )),
    Section("Per label", (
        Text("Hit rate = share of the label's rows served. FHR on EQUIV/PARA_SAFE covers their"
             " policy_no_cache rows."),
        Table("per_label[]", (
            _c("Label", "key", "text"),
            _c("n", "n", "int"),
            _c("HIT rows", "recall.denominator", "count"),
            _c("MISS rows", "fhr.denominator", "count"),
        )),
    )),
    Section("Per difficulty", (
        Table("per_difficulty[]", (_c("Difficulty", "key", "text"), _c("n", "n", "int"))),
    )),
    Section("Latency", (
        Text("Milliseconds per decision over {x.latency.n} timed calls; percentiles by the"
             " {x.latency.percentile_method} method."),
        Table("latency"),
        Bullets("prepare", "prepare", when="prepare"),
        Bullets("cold_probe", "cold_probe", when="cold_probe"),
    )),
    Section("Cost", (
        Table("cost", trail=(
            _c("Decisions", "n_decisions", "int"),
            _c("Price per call by tier", "cost_per_call_usd", "prices"),
        )),
    )),
    Section("Verification tiers", (Table("tiers[]", (_c("Tier", "tier", "text"),)),)),
    Section("Errors and timeouts", (
        Text("Every failed decision is scored MISS."),
        Table("errors"),
        Table("errors.kinds[]", _ERROR_KIND, when="errors.kinds"),
        Text("First failures:", when="errors.kinds"),
        Bullets("errors.examples[]", "failure", when="errors.kinds"),
    )),
    Section("Missing and extra ids", (
        MetricRows(("", "Count", "First ids"), details=(
            _c("", "ids.missing_ids", "list"),
            _c("", "ids.extra_ids", "list"),
        )),
    )),
)  # fmt: skip


#: Slice tables whose rows the per-pair page can select, by the page's filter.
LINKED_SLICES = {"per_kind[]": "sub", "per_domain[]": "domain", "per_label[]": "label"}


def _wrong_counts(s: Any) -> tuple[int, int]:
    """(false hits, missed hits) of a slice or the headline: FP = the FHR's
    numerator; FN = the recall's denominator minus its numerator."""
    fp = int(s.fhr.numerator) if s.fhr.value is not None else 0
    fn = int(s.recall.denominator - s.recall.numerator) if s.recall.value is not None else 0
    return fp, fn


def pairs_cell(view: ViewLink, counts: tuple[int, int], **filters: str) -> str:
    """The links to a slice's false hits and missed hits on the page ("-": none)."""
    links = [
        view.wrong("false hit", counts[0], **filters),
        view.wrong("missed hit", counts[1], **filters),
    ]
    return " · ".join(x for x in links if x) or "-"


def render_markdown(r: Report, view: ViewLink | None = None) -> str:
    """The report for people: the verdict, provenance, the glossary, then
    every section of :data:`SECTIONS` with the failures after the headline.
    A report without failures (rows not at hand, or written before format
    1.4) has no verdict, glossary or failures and renders as it always did.
    With ``view`` (the run's per-pair page, ``cacheeval eval --view``), every
    count of false and missed hits links to exactly those pairs there: the
    headline's, each domain's, label's and perturbation kind's (a Pairs
    column), and each failure group's."""
    lines = [f"# CacheEval report: {cell(r.provenance.cache_name)}"]
    if r.verdict is not None:
        lines += verdict_markdown(r.verdict)
    lines += ["", *table(["Run", ""], _run_rows(r.provenance))]
    if view is not None:
        lines += ["", f"Every pair of the run, with its decision: [{view.page}]({view.page})"
                  " (open it in a browser; the counts below open it filtered)."]  # fmt: skip
    if r.failures is not None:
        lines += glossary_markdown()
    for section in SECTIONS:
        lines += _section(r, section, view)
        if section.heading == "Headline":
            if view is not None:
                lines += ["", "Pairs: " + pairs_cell(view, _wrong_counts(r.headline))]
            if r.failures is not None:
                lines += failures_markdown(r.failures, view)
    return "\n".join(lines) + "\n"


#: How the Markdown report names where the cache ran.
_RUN_MODES = {
    "process": "in a process of its own (sent pairs only; answers checked)",
    "process, bubblewrap": "in a process of its own, in the bubblewrap sandbox",
    "in-process": "in the harness's process, beside the labels (a trusted cache only)",
    "ray": "on Ray actors (Ray's transport unpickles their answers: a trusted cache only)",
}


def _run_rows(p: Provenance) -> list[list[str]]:
    git = "not a git checkout" if p.git_commit is None else p.git_commit
    if p.git_dirty:
        git += " (dirty)"
    mode = [] if p.run_mode is None else [["Cache ran", _RUN_MODES.get(p.run_mode, p.run_mode)]]
    return [
        ["Dataset", f"{p.dataset_path or 'in-memory rows'}"],
        ["Dataset sha256", p.dataset_sha256 or "n/a"],
        ["Split filter", p.split or "all"],
        ["Domain filter", ", ".join(p.domains) if p.domains is not None else "all"],
        ["Rows scored", str(p.n_rows)],
        ["Hidden test rows left out (no labels)", str(p.hidden_rows_skipped)],
        ["Cache", p.cache_name],
        ["Cache arguments", dumps(p.cache_args)],
        ["Cache source", p.cache_ref or "n/a"],
        *mode,
        ["CacheEval", f"{p.cacheeval_version} (schema {p.schema_version})"],
        ["Git commit", git],
        ["Python", p.python_version],
        ["Created (UTC)", p.created],
    ]


def _at(data: Any, path: str) -> Any:
    return data if not path else values_at(data, path)[0]


def _section(r: Report, section: Section, view: ViewLink | None = None) -> list[str]:
    if section.requires and _at(r, section.requires) is None:
        if section.absent is None:
            return []
        parts = [[section.absent.format(x=r)]]
    else:
        metrics = section_metrics(section.heading)
        parts = [
            _block(r, b, metrics, view) for b in section.blocks if not b.when or _at(r, b.when)
        ]
    out = ["", f"## {section.heading}", ""]
    for i, part in enumerate(parts):
        out += [""] * (i > 0) + part
    return out


def _block(
    r: Report, block: Block, metrics: Sequence[MetricSpec], view: ViewLink | None = None
) -> list[str]:
    if isinstance(block, Text):
        return [block.template.format(x=r)]
    if isinstance(block, Bullets):
        return [FORMATS[block.fmt](x) for x in values_at(r, block.rows)]
    if isinstance(block, MetricRows):
        return _metric_rows(r, block, [m for m in metrics if m.fmt and "[]" not in m.path])
    shown = [m for m in metrics if m.fmt and m.path.rsplit(".", 1)[0] == block.rows]
    columns = [*block.lead, *(Column(m.title, m.field, m.fmt or "") for m in shown), *block.trail]
    items = [x for x in values_at(r, block.rows) if not block.keep or _at(x, block.keep)]
    rows = [[FORMATS[c.fmt](_at(x, c.attr)) for c in columns] for x in items]
    by = LINKED_SLICES.get(block.rows)
    if view is None or by is None:
        return table([c.title for c in columns], rows)
    for row, x in zip(rows, items, strict=True):
        row.append(pairs_cell(view, _wrong_counts(x), **{by: x.key}))
    return table([*(c.title for c in columns), "Pairs"], rows)


def _metric_rows(r: Report, block: MetricRows, metrics: Sequence[MetricSpec]) -> list[str]:
    rows = []
    for i, m in enumerate(metrics):
        value, fmt = _at(r, m.path), m.fmt or ""
        row = [m.title, FORMATS[fmt](value)]
        if block.details:
            detail = block.details[i]
            row.append(FORMATS[detail.fmt](_at(r, detail.attr)))
        elif len(block.header) > 2:
            row.append(COUNTS[fmt](value))
        rows.append(row)
    return table(block.header, rows)


register_renderer("markdown", render_markdown)
