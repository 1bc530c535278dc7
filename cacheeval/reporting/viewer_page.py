"""The per-pair viewer as one self-contained HTML file.

The page is the template ``static/viewer.html`` with the stylesheet, the
script and the data inlined: no server, no network, it opens from disk. The
first screen (per-cache summary, the false hits grouped by what differs, a
short glossary) is plain HTML rendered here, so it reads without JavaScript;
the pair table below it is built by ``static/viewer.js`` from the JSON of
:func:`cacheeval.reporting.viewer.view_data`.

Nothing from the data is ever written as markup: the summary goes through
:func:`html.escape`, the JSON is escaped so no ``</script>`` or ``<!--``
can end its element (:func:`script_json`), and the script builds the table
from text nodes. The page's Content-Security-Policy allows only its own
script (by hash), so an injected handler would not run anyway.

The same data give the same bytes: no timestamps, no absolute paths.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from html import escape
from importlib import resources
from typing import Any

from ..results.failures import FailureGroup
from ..schema import Row
from .verdict import GLOSSARY as REPORT_GLOSSARY
from .verdict import false_hit_phrase, merged_groups
from .viewer import CacheRun, CacheSummary, ViewBuilder, summarize

_MARKER = re.compile(r"@@([A-Z_]+)@@")

#: The reports' terms the page uses too, in the reports' words
#: (:data:`cacheeval.reporting.verdict.GLOSSARY`).
SHARED_TERMS = ("FHR", "Recall", "What differs", "Difficulty")
#: The page's own terms.
_OWN_TERMS: tuple[tuple[str, str], ...] = (
    (
        "HIT and MISS",
        "the correct decision for a pair: HIT when the stored answer of request a also "
        "answers request b, MISS when it must not be served. EQUIV and PARA_SAFE rows are "
        "HIT, except never-cache requests (creative writing, live data, state changes, "
        "personal data), which keep their label but are MISS.",
    ),
    ("False hit", "a MISS pair the cache served: the user gets a wrong answer."),
    ("Missed hit", "a HIT pair the cache did not serve: a model call it could have saved."),
    (
        "Error",
        "the cache's call failed or timed out, or its file has no prediction for the pair; "
        "it counts as not served.",
    ),
    (
        "Score and tier",
        "the score the cache reported for the pair (its similarity or confidence) and "
        "which of its stages decided. The top score: a threshold that serves anything "
        "serves every pair at it.",
    ),
)


def glossary() -> tuple[tuple[str, str], ...]:
    """The page's terms, then the reports' :data:`SHARED_TERMS` (those the
    report glossary still has).

    >>> [term for term, _ in glossary()][:3]
    ['HIT and MISS', 'False hit', 'Missed hit']
    """
    shared = tuple(t for t in REPORT_GLOSSARY if t[0] in SHARED_TERMS)
    return _OWN_TERMS + shared


#: The characters :func:`script_json` writes as ``\\u`` escapes.
_SCRIPT_ESCAPES = {ch: f"\\u{ord(ch):04x}" for ch in "<>&\u2028\u2029"}
_SCRIPT_UNSAFE = re.compile("[<>&\u2028\u2029]")


def script_json(obj: Any) -> str:
    """``obj`` as JSON that is safe inside a ``<script>`` element: ``<``,
    ``>`` and ``&`` (and the two line separators JavaScript once refused)
    as ``\\u`` escapes, which only strings can hold, so the value is unchanged.

    >>> script_json({"q": "</script><img onerror=alert(1)>"})
    '{"q":"\\\\u003c/script\\\\u003e\\\\u003cimg onerror=alert(1)\\\\u003e"}'
    >>> json.loads(script_json(["a&b\\u2028"])) == ["a&b\\u2028"]
    True
    """
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    # One pass, so a long run's JSON is copied once (str.translate is 7x slower).
    return _SCRIPT_UNSAFE.sub(lambda m: _SCRIPT_ESCAPES[m.group()], text)


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath("static", name).read_text(encoding="utf-8")


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _go(text: str | int, *, cache: int, outcome: str | None = None, kind: int | None = None) -> str:
    """A count that opens the pairs behind it (a link to the table; the
    script sets the filters)."""
    attrs = f' data-cache="{cache}"'
    if outcome is not None:
        attrs += f' data-outcome="{escape(outcome)}"'
    if kind is not None:
        attrs += f' data-kind="{kind}"'
    if outcome == "false hit":
        attrs += ' data-sort="score-desc"'
    return f'<a class="go" href="#pairs"{attrs}>{escape(str(text))}</a>'


def _largest(groups: Sequence[tuple[str, int]]) -> tuple[int, str, str]:
    """The largest group of false hits as the reports name it (context kinds
    counted as one group, policy kinds as another): its size, what it is and
    the advice that prevents it (:mod:`cacheeval.reporting.verdict`)."""
    total = sum(n for _, n in groups) or 1
    merged = merged_groups([FailureGroup(k, n, n / total, ()) for k, n in groups])
    _, count, kinds = merged[0]
    what, advice = false_hit_phrase(kinds)
    return count, what, advice


def verdict(s: CacheSummary) -> str:
    """One sentence (HTML) on a cache's false hits: how many, what the
    largest group is and what prevents it, in the words of the Markdown
    report's verdict; a second on the false hits at its top score, when some
    are there and not every serve has that score (a score that ranks nothing
    says nothing about a threshold).

    >>> s = CacheSummary("c", "c.jsonl", 10, 4, 3, 1, 6, 0, 0.5, 0.5, (("number", 2), ("name", 1)))
    >>> print(verdict(s).replace(": ", ":\\n"))
    <b>c</b>:
    3 false hits; most (2 of 3) are queries that differ in a number:
    compare the numbers of the two queries.
    >>> import dataclasses
    >>> text = verdict(dataclasses.replace(s, top_score=1.0, top_served=2,
    ...                                    top_groups=(("prior turns", 1),)))
    >>> print(text.split(". ", 1)[1].replace(", and ", ",\\nand "))
    At its top score (1.000) it serves 2 pairs, 1 of which it must not,
    and no threshold removes them: all are the same or a similar query after other turns.
    """
    name = f"<b>{escape(s.name)}</b>"
    if not s.groups:
        return f"{name}: no false hits."
    count, what, advice = _largest(s.groups)
    n = s.false_hits
    noun = "false hit" if n == 1 else "false hits"
    lead = "all" if count == n else "most" if 2 * count > n else "the largest group"
    text = f"{name}: {n} {noun}; {lead} ({count} of {n}) are {escape(what)}: {escape(advice)}."
    if s.top_false_hits and s.top_score is not None and s.top_served < s.served:
        top_count, top_what, _ = _largest(s.top_groups)
        share = "all" if top_count == s.top_false_hits else f"{top_count} of them"
        text += (
            f" At its top score ({s.top_score:.3f}) it serves {s.top_served} pairs, "
            f"{s.top_false_hits} of which it must not, and no threshold removes them: "
            f"{share} are {escape(top_what)}."
        )
    return text


def summary_html(summaries: Sequence[CacheSummary], kinds: Sequence[str]) -> str:
    """The first screen: the per-cache table, the verdict sentences, the
    false hits by what differs (kinds as rows, caches as columns, most
    false hits first) and the glossary. ``kinds`` is the page's kind list
    (a count links to its index there)."""
    kind_no = {k: i for i, k in enumerate(kinds)}
    out = ['<section id="summary" aria-labelledby="summary-title">']
    out.append('<h2 id="summary-title">Caches</h2>')
    out.append('<table class="summary"><thead><tr><th>Cache</th><th>File</th>')
    # Each term is explained where it first appears (a tooltip), and in the glossary.
    terms = dict(glossary())
    for head, term in (
        ("Pairs", None),
        ("Served", None),
        ("FHR", "FHR"),
        ("Recall", "Recall"),
        ("False hits", "False hit"),
        ("Missed hits", "Missed hit"),
        ("Errors", "Error"),
    ):
        tip = f' title="{escape(terms[term])}"' if term in terms else ""
        out.append(f'<th class="num"{tip}>{head}</th>')
    out.append("</tr></thead><tbody>")
    for j, s in enumerate(summaries):
        out.append(
            f'<tr data-cache="{j}"><td>{escape(s.name)}</td><td>{escape(s.file)}</td>'
            f'<td class="num">{s.n_rows}</td><td class="num">{s.served}</td>'
            f'<td class="num fhr">{_pct(s.fhr)}</td><td class="num recall">{_pct(s.recall)}</td>'
            f'<td class="num">{_go(s.false_hits, cache=j, outcome="false hit")}</td>'
            f'<td class="num">{_go(s.missed_hits, cache=j, outcome="missed hit")}</td>'
            f'<td class="num">{_go(s.errors, cache=j, outcome="error")}</td></tr>'
        )
    out.append("</tbody></table>")
    out.append('<h2 id="failures-title">False hits by what differs</h2>')
    out.append('<ul class="verdicts">')
    out += [f"<li>{verdict(s)}</li>" for s in summaries]
    out.append("</ul>")
    totals: dict[str, int] = {}
    for s in summaries:
        for kind, n in s.groups:
            totals[kind] = totals.get(kind, 0) + n
    if totals:
        out.append('<table class="groups" aria-labelledby="failures-title"><thead><tr>')
        kind_tip = terms.get("What differs")
        out.append(
            f'<th title="{escape(kind_tip)}">What differs</th>'
            if kind_tip
            else "<th>What differs</th>"
        )
        out += [f'<th class="num">{escape(s.name)}</th>' for s in summaries]
        out.append("</tr></thead><tbody>")
        ranked = sorted(totals, key=lambda k: (-totals[k], kind_no.get(k, len(kind_no))))
        for kind in ranked:
            out.append(f'<tr data-kind="{escape(kind)}"><td>{escape(kind)}</td>')
            for j, s in enumerate(summaries):
                n = dict(s.groups).get(kind, 0)
                cell = _go(n, cache=j, outcome="false hit", kind=kind_no[kind]) if n else "0"
                out.append(f'<td class="num">{cell}</td>')
            out.append("</tr>")
        out.append("</tbody></table>")
    out.append('<details class="glossary"><summary>Terms</summary><dl>')
    out += [f"<dt>{escape(t)}</dt><dd>{escape(d)}</dd>" for t, d in glossary()]
    out.append("</dl></details></section>")
    return "\n".join(out)


def source_line(source: Mapping[str, Any], n_caches: int) -> str:
    """Where the pairs come from, in one line (HTML).

    >>> source_line({"bench": "b.jsonl", "split": "dev", "n_rows": 2, "labels": None}, 1)
    '2 pairs of b.jsonl (split dev), 1 cache; labels from the rows.'
    """
    split = f" (split {escape(str(source['split']))})" if source.get("split") else ""
    labels = source.get("labels")
    where = f"labels from {escape(str(labels))}" if labels else "labels from the rows"
    caches = "cache" if n_caches == 1 else "caches"
    return (
        f"{source['n_rows']:,} pairs of {escape(str(source['bench']))}{split}, "
        f"{n_caches} {caches}; {where}."
    )


def render_page(data: Mapping[str, Any], summaries: Sequence[CacheSummary]) -> str:
    """The whole page: template, stylesheet, script and data in one string."""
    script = _asset("viewer.js")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    parts = {
        "TITLE": escape(str(data["title"])),
        "SOURCE": source_line(data["source"], len(data["caches"])),
        "SUMMARY": summary_html(summaries, data["kinds"]),
        "CSS": _asset("viewer.css"),
        "SCRIPT_HASH": f"'sha256-{digest}'",
        "DATA": script_json(data),
        "JS": script,
    }
    # One pass over the template: inserted text is never searched for markers.
    return _MARKER.sub(lambda m: parts[m.group(1)], _asset("viewer.html"))


def page_for(
    rows: Sequence[Row], runs: Sequence[CacheRun], *, title: str, source: Mapping[str, Any]
) -> str:
    """The page of ``rows`` (all labelled) and ``runs`` at once: what ``cacheeval
    view`` writes, for a script that holds its rows and predictions in memory
    (``scripts.run_stress`` ships one beside its report)."""
    builder = ViewBuilder()
    for row in rows:
        builder.add(row)
    data = builder.data(runs, title=title, source=source)
    return render_page(data, summarize(builder.keys, builder.kinds, runs))


__all__ = [
    "SHARED_TERMS",
    "glossary",
    "page_for",
    "render_page",
    "script_json",
    "source_line",
    "summary_html",
    "verdict",
]
