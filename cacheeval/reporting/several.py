"""The comparison a run of several caches writes (``cacheeval eval`` with more
than one cache): the tables of :mod:`cacheeval.reporting.compare` over the
caches' reports, the first cache the reference of the differences, and a
latency table that sets each cache's per-call time beside its ``prepare()``
time per row and its cold probe, so caches that do their work in different
places are compared on one footing. Every cache keeps its own report; the
comparison links to them.

The JSON form (``cacheeval_comparison``) keeps the names, the report files,
the :class:`~cacheeval.reporting.compare.SystemHeadline` and domain rates of
each cache, the differences and the latency figures.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .compare import compare, to_markdown
from .latency_text import ms
from .markdown import cell, table
from .report import Report

COMPARISON_KEY = "cacheeval_comparison"
COMPARISON_VERSION = "1.0"

#: Columns of the latency table.
LATENCY_HEADER: tuple[str, ...] = (
    "cache",
    "call p50 ms",
    "call p95 ms",
    "prepare ms / row",
    "prepare + mean call ms / row",
    "cold start ms",
    "cold first call ms",
    "cold next calls ms",
)


def latency_row(name: str, r: Report) -> list[str]:
    """One cache's latency figures (``n/a`` where the report has none)."""
    p, c = r.prepare, r.cold_probe
    return [
        cell(name),
        ms(r.latency.p50_ms),
        ms(r.latency.p95_ms),
        "n/a" if p is None else ("none" if not p.has_prepare else ms(p.per_row_ms)),
        "n/a" if p is None else ms(p.per_row_with_call_ms),
        "n/a" if c is None else ms(c.start_ms),
        "n/a" if c is None else ms(c.first_call_ms),
        "n/a" if c is None else ms(c.next_call_ms),
    ]


def latency_table(reports: Mapping[str, Report]) -> list[str]:
    """:data:`LATENCY_HEADER`, one row per cache."""
    return table(LATENCY_HEADER, [latency_row(n, r) for n, r in reports.items()])


def to_markdown_several(reports: Mapping[str, Report], files: Mapping[str, str]) -> str:
    """The comparison for people: what ran on what, each cache's report, then
    :func:`~cacheeval.reporting.compare.to_markdown`'s tables and the latency table."""
    first = next(iter(reports.values()))
    p = first.provenance
    lines = [f"# CacheEval comparison: {len(reports)} caches", ""]
    lines += [
        f"Every cache ran on the same {p.n_rows} rows of `{p.dataset_path or 'in-memory rows'}` "
        f"(split {p.split or 'all'}, sha256 {(p.dataset_sha256 or 'n/a')[:12]}), each in its "
        f"own run. Differences are to the first, {cell(next(iter(reports)))}.",
        "",
        "Each cache's own report (every table, its errors and its provenance):",
        "",
    ]
    lines += [f"- {cell(name)}: [{files[name]}]({files[name]})" for name in reports]
    lines += ["", to_markdown(compare(reports)).rstrip("\n"), "", "## Latency", ""]
    lines += [
        "Per-call times alone flatter a cache that embeds every pair in prepare(): "
        '"prepare + mean call" spreads prepare() over the rows, and the cold probe is a '
        "fresh cache deciding new pairs with nothing prepared (first call, then the median "
        "of the next).",
        "",
    ]
    lines += latency_table(reports)
    return "\n".join(lines) + "\n"


def to_dict_several(reports: Mapping[str, Report], files: Mapping[str, str]) -> dict[str, Any]:
    """The comparison as JSON (see the module docstring)."""
    from .report import to_plain

    c = compare(reports)
    return {
        COMPARISON_KEY: COMPARISON_VERSION,
        "caches": [
            {
                "name": name,
                "report": files[name],
                "headline": head.to_dict(),
                "per_domain": {k: d.to_dict() for k, d in domains.items()},
                "latency": to_plain(r.latency),
                "prepare": to_plain(r.prepare),
                "cold_probe": to_plain(r.cold_probe),
            }
            for (name, r), head, domains in zip(
                reports.items(), c.headlines, c.domains, strict=True
            )  # fmt: skip
        ],
        "differences": [
            {
                "metric": d.metric,
                "values": list(d.values),
                "deltas": list(d.deltas),
                "ratios": list(d.ratios),
            }
            for d in c.differences
        ],  # fmt: skip
    }
