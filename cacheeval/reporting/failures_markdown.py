"""The Markdown of a report's first screen and failures: the verdict, the
glossary, and the Failures section (groups, top score, the worst rows).

Formatting only: every number comes from the report's
:class:`~cacheeval.results.failures.Failures`; queries and spans are cut to a
table cell's length (the JSON report keeps them whole).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..metrics.differences import Difference
from ..results.failures import FailureExample, FailureGroup, Failures
from .markdown import table
from .verdict import GLOSSARY, pct
from .viewer import ViewLink, pairs_address

#: Longest query shown in a table cell, and longest changed span.
QUERY_CHARS = 90
SPAN_CHARS = 40
#: Differences shown per row (the JSON has them all).
MAX_DIFFERENCES = 2


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis.

    >>> shorten("What  is\\nthe capital of France?", 16)
    'What is the cap…'
    >>> shorten("short", 16)
    'short'
    """
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def difference_text(diff: Difference) -> str:
    """``kind: a → b`` with each span shortened (``kind`` alone when neither
    side has a span).

    >>> difference_text(Difference("number", "5", "10"))
    'number: 5 → 10'
    >>> difference_text(Difference("prior turns", "user: it is a fan oven.", ""))
    'prior turns: user: it is a fan oven. → (none)'
    """
    if not diff.a and not diff.b:
        return diff.kind
    a = shorten(diff.a, SPAN_CHARS) or "(none)"
    b = shorten(diff.b, SPAN_CHARS) or "(none)"
    return f"{diff.kind}: {a} → {b}"


def _score(x: float | None) -> str:
    return "-" if x is None else f"{x:.4f}"


def verdict_markdown(verdict: Sequence[str]) -> list[str]:
    """The verdict as a block quote, one line each."""
    return ["", *(f"> {line}  " if i < len(verdict) - 1 else f"> {line}"
                  for i, line in enumerate(verdict))]  # fmt: skip


def glossary_markdown() -> list[str]:
    """The glossary section."""
    return ["", "## Terms", "", *(f"- **{term}**: {text}" for term, text in GLOSSARY)]


def _groups(
    groups: Sequence[FailureGroup], what: str, view: ViewLink | None = None, outcome: str = ""
) -> list[str]:
    """A table of failure groups; with ``view``, each count links to its pairs
    (the page's "what differs" filter is the same first difference)."""

    def counted(g: FailureGroup) -> str:
        if view is None:
            return str(g.count)
        address = pairs_address(view.page, cache=view.cache, kind=g.kind, outcome=outcome)
        return f"[{g.count}]({address})"

    return table(
        ["What differs", what, "Share", "Worst rows"],
        [[g.kind, counted(g), pct(g.share), ", ".join(g.example_ids)] for g in groups],
    )


def _examples(examples: Sequence[FailureExample]) -> list[str]:
    return table(
        ["Row", "Label", "Score", "Query a", "Query b", "What differs"],
        [
            [
                e.id,
                f"{e.label or '-'} ({e.subcategory})" if e.subcategory else e.label or "-",
                _score(e.score),
                shorten(e.query_a, QUERY_CHARS),
                shorten(e.query_b, QUERY_CHARS),
                "; ".join(difference_text(x) for x in e.differences[:MAX_DIFFERENCES]),
            ]
            for e in examples
        ],
    )


def failures_markdown(f: Failures, view: ViewLink | None = None) -> list[str]:
    """The ``## Failures`` section (``view``: the run's per-pair page, which
    the groups' counts link to)."""
    listed_missed = f.n_missed_hits - f.n_failed_calls
    failed = (
        f", {f.n_failed_calls} of them failed calls, listed under Errors and timeouts"
        if f.n_failed_calls
        else ""
    )
    out = [
        "",
        "## Failures",
        "",
        f"{f.n_false_hits} false hits (MISS rows served) and {f.n_missed_hits} missed hits"
        f" (HIT rows not served{failed}). Each is grouped by the first thing that differs"
        " between its two requests (see Terms: What differs).",
    ]
    if f.n_unlisted:
        out += [
            "",
            f"{f.n_unlisted} of them are test-split rows whose labels are hidden: they are"
            " counted in the groups but not listed (`--list-test-failures` lists them).",
        ]
    if f.false_hit_groups:
        out += ["", "### False hits by what differs", ""]
        out += _groups(f.false_hit_groups, "False hits", view, "false hit")
    top = f.top_score
    if top is not None:
        rows = "1 row" if top.n_rows == 1 else f"{top.n_rows} rows"
        out += [
            "",
            f"Rows at its top score ({top.score:.4g}): {rows}, {top.n_served} served,"
            f" {top.n_false_hits} of them false hits. Any threshold that serves one of these"
            " rows serves them all.",
        ]
        if top.false_hit_groups:
            out += ["", *_groups(top.false_hit_groups, "False hits at the top score")]
    if f.false_hits:
        out += ["", f"### The {len(f.false_hits)} worst false hits (highest score first)", ""]
        out += _examples(f.false_hits)
    if f.missed_hits:
        out += ["", f"### The {len(f.missed_hits)} worst missed hits (lowest score first)", ""]
        out += _examples(f.missed_hits)
    if f.missed_hit_groups:
        out += ["", f"### Missed hits by what differs ({listed_missed} analysed)", ""]
        out += _groups(f.missed_hit_groups, "Missed hits", view, "missed hit")
    return out
