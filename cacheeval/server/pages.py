"""Views of the board: the JSON entries of ``GET /api/leaderboard`` and the
server-rendered HTML pages (leaderboard with upload form, a submission's
Ladder answer, closed private-slice rounds). Every value that comes from a
user (names, training-data text, cache names) goes through
:func:`html.escape`; the pages load one local script and one local stylesheet
from ``/static`` and nothing else.

The board lists, per submitter, the submission that reached its best
released level (:mod:`cacheeval.server.ladder`), and the fixed reference rows
(baselines and reference caches, graded from committed predictions files).
Order (:data:`BOARD_ORDER`): level, highest first - recall among the
should-hit rows at FHR within the 5% budget, and every over-budget level
below every within-budget one - then reference rows before submissions on a
tie, then the earlier submission. Only the level's bands are shown: the FHR
interval (over budget) and the recall interval (within budget).
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

from .charts import board_points, board_svg, domain_fhr_svg, levels_svg
from .grading import (
    LadderState,
    Reference,
    Round,
    ladder_states,
    level_json,
    stored_level,
    subscore_bands_json,
)
from .ladder import LEVELS, Level
from .store import Submission

BOARD_ORDER = (
    "level descending (recall band at FHR <= 5%; over-budget levels below every "
    "within-budget one), reference rows first on a tie, then earliest submission"
)

#: Sortable columns: (key in an entry, header text, direction of the first
#: click: 1 ascending for "lower is better", -1 descending).
SORT_COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("level_rank", "Level", -1),
    ("fhr_high", "FHR band", 1),
    ("recall_low", "Recall band", -1),
    ("p95_latency_ms", "p95 latency (ms)", 1),
)
#: The sub-score columns: (sub-score, header, the page's one-sentence meaning).
SUBSCORE_COLUMNS: tuple[tuple[str, str, str], ...] = (
    (
        "query",
        "Query",
        "judging the query: both requests share system prompt, turns and tools and carry "
        "no never-cache policy, so the query alone decides.",
    ),
    (
        "context",
        "Context key",
        "keying on context: the requests differ in system prompt, user, prior turns or "
        "tools, which a cache must not serve across.",
    ),
    (
        "policy",
        "Policy",
        "honouring the never-cache policies: creative writing, live data, state changes "
        "and per-user data must never be served from the cache.",
    ),
)


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def band_text(lv: Level) -> tuple[str, str]:
    """(FHR band, recall band) as shown on the board."""
    lo, hi = lv.fhr
    fhr = f"&le; {_pct(hi)}" if lv.within_budget else f"({_pct(lo)}, {_pct(hi)}]"
    if lv.recall is None:
        return fhr, "&ndash;"
    rlo, rhi = lv.recall
    recall = f"&ge; {_pct(rlo)}" if rhi >= 1.0 else f"[{_pct(rlo)}, {_pct(rhi)})"
    return fhr, recall


def _entry(lv: Level, extra: dict[str, Any], scores: dict[str, Any]) -> dict[str, Any]:
    lj = level_json(lv)
    assert lj is not None
    return {
        **extra,
        "subscores": subscore_bands_json(scores),
        "level_rank": lv.rank,
        "level": lv.name,
        "within_budget": lv.within_budget,
        "fhr_interval": lj["fhr_interval"],
        "recall_interval": lj["recall_interval"],
        "fhr_high": lv.fhr[1],
        "recall_low": None if lv.recall is None else lv.recall[0],
    }


def board(subs: Sequence[Submission], references: Sequence[Reference] = ()) -> list[dict[str, Any]]:
    """The board's entries in :data:`BOARD_ORDER`; ``rank`` is 1-based."""
    states = ladder_states(subs)
    best: dict[int, tuple[Submission, LadderState]] = {}
    counts: dict[int, int] = {}
    for sub in sorted(subs, key=lambda x: x.id):
        st = states.get(sub.id)
        if st is None:
            continue
        counts[sub.submitter_id] = st.number
        if st.released is not None:
            best[sub.submitter_id] = (sub, st)
    entries = []
    for ref in references:
        lv = stored_level(ref.scores)
        if lv is None:
            continue
        entries.append(
            _entry(
                lv,
                {
                    "kind": "reference",
                    "id": None,
                    "name": ref.name,
                    "submitter": "reference",
                    "created": "",
                    "training_data": f"fixed predictions file {ref.path}",
                    "cache_name": ref.name,
                    "n_submissions": None,
                    "p95_latency_ms": ref.scores.get("latency_ms", {}).get("p95"),
                    "url": None,
                },
                ref.scores,
            )
        )
    for submitter_id, (sub, st) in best.items():
        assert st.released is not None
        entries.append(
            _entry(
                st.released,
                {
                    "kind": "submission",
                    "id": sub.id,
                    "name": sub.name,
                    "submitter": sub.submitter,
                    "created": sub.created,
                    "training_data": sub.training_data,
                    "cache_name": sub.cache_name,
                    "n_submissions": counts[submitter_id],
                    "p95_latency_ms": sub.scores.get("latency_ms", {}).get("p95"),
                    "url": f"/submissions/{sub.id}",
                },
                sub.scores,
            )
        )
    entries.sort(
        key=lambda e: (
            -e["level_rank"],
            e["kind"] != "reference",
            e["created"],
            e["id"] or 0,
            e["name"],
        )
    )
    return [{"rank": i, **e} for i, e in enumerate(entries, 1)]


# --- HTML -----------------------------------------------------------------------------


def _num(value: Any, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _data(value: Any) -> str:
    return "" if value is None else repr(float(value))


def _page(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(title)}</title>\n"
        '<link rel="stylesheet" href="/static/style.css">\n'
        '<script src="/static/leaderboard.js" defer></script>\n'
        f"</head>\n<body>\n{body}\n</body>\n</html>\n"
    )


def _row(e: dict[str, Any]) -> str:
    lv = LEVELS[e["level_rank"]]
    fhr_band, recall_band = band_text(lv)
    name = escape(e["name"])
    if e["url"]:
        name = f'<a href="{escape(e["url"])}">{name}</a>'
    kind = ' class="reference"' if e["kind"] == "reference" else ""
    date = (
        f'<time datetime="{escape(e["created"])}">{escape(e["created"][:10])}</time>'
        if e["created"]
        else "&ndash;"
    )
    cells = [
        f'<td class="rank">{e["rank"]}</td>',
        f'<td class="name">{name}</td>',
        f'<td class="submitter">{escape(e["submitter"])}</td>',
        f'<td class="date">{date}</td>',
        f'<td class="training">{escape(e["training_data"]) or "<em>not declared</em>"}</td>',
        f'<td class="num" data-key="level_rank" data-value="{e["level_rank"]}">'
        f"{escape(e['level'])}</td>",
        f'<td class="num" data-key="fhr_high" data-value="{_data(e["fhr_high"])}">{fhr_band}</td>',
        f'<td class="num" data-key="recall_low" data-value="{_data(e["recall_low"])}">'
        f"{recall_band}</td>",
        f'<td class="num" data-key="p95_latency_ms" data-value="{_data(e["p95_latency_ms"])}">'
        f"{_num(e['p95_latency_ms'], 1)}</td>",
    ]
    for key, _, _ in SUBSCORE_COLUMNS:
        band = (e.get("subscores") or {}).get(key)
        value, text = (band["band"], escape(band["name"])) if band else (None, "&ndash;")
        cells.append(
            f'<td class="band" data-key="sub_{key}" data-value="{_data(value)}">{text}</td>'
        )
    row_id = e["id"] if e["id"] is not None else f"ref-{e['rank']}"
    return f'<tr data-id="{row_id}" data-rank="{e["rank"]}"{kind}>' + "".join(cells) + "</tr>"


def leaderboard_page(
    entries: Sequence[dict[str, Any]],
    *,
    n_test_rows: int,
    n_public_rows: int,
    rate_limit: str,
    rounds: Sequence[str] = (),
) -> str:
    """``GET /``: the board, the closed rounds and the upload form."""
    heads = [
        '<th scope="col">#</th>',
        '<th scope="col">Name</th>',
        '<th scope="col">Submitter</th>',
        '<th scope="col">Date (UTC)</th>',
        '<th scope="col">Training data</th>',
    ]
    for key, label, first in SORT_COLUMNS:
        heads.append(
            f'<th scope="col" class="num" data-sort="{key}" data-first="{first}" '
            f'aria-sort="{"descending" if key == "level_rank" else "none"}">'
            f'<button type="button">{escape(label)}</button></th>'
        )
    for key, label, _ in SUBSCORE_COLUMNS:
        heads.append(
            f'<th scope="col" class="band" data-sort="sub_{key}" data-first="-1" '
            f'aria-sort="none"><button type="button">{escape(label)}</button></th>'
        )
    meanings = "".join(
        f"<li><strong>{escape(label)}</strong>: {escape(text)}</li>"
        for _, label, text in SUBSCORE_COLUMNS
    )
    if entries:
        body_rows = "\n".join(_row(e) for e in entries)
    else:
        body_rows = f'<tr class="empty"><td colspan="{len(heads)}">No submissions yet.</td></tr>'
    round_links = "".join(f'<li><a href="/rounds/{escape(r)}">{escape(r)}</a></li>' for r in rounds)
    rounds_html = (
        f'<section id="rounds"><h2>Closed rounds of the private slice</h2><ul>{round_links}'
        "</ul></section>"
        if rounds
        else ""
    )
    body = f"""<header>
<h1>CacheEval leaderboard</h1>
<p>Caches are ranked by how much they serve without serving wrongly: recall among the requests
that should hit, at a false-hit rate (FHR) of at most 5%. A cache over the FHR budget is listed
below every cache within it, with its FHR band. Scores come from a fixed half of the
{n_test_rows} hidden-label test rows ({n_public_rows} rows) and are shown as coarse levels; a
submission's level is shown only when it beats its submitter's best so far (the Ladder), so the
feedback cannot be mined for labels. Reference rows are fixed predictions files of the
baselines and reference caches.</p>
<p>The last three columns split the same half by the skill a row tests, each a coarse band
(over the FHR budget, or within it with recall below or at least 50%), released only with
a level:</p>
<ul id="subscore-meanings">{meanings}</ul>
</header>
<main>
<table id="board">
<thead><tr>{"".join(heads)}</tr></thead>
<tbody>
{body_rows}
</tbody>
</table>
{board_figure(entries)}
{rounds_html}
<section id="submit">
<h2>Submit predictions</h2>
<p>Write predictions with <code>cacheeval predict --split test</code>, then upload the file
with your submitter token (or use <code>cacheeval submit</code>). Each submitter may have
{escape(rate_limit)} graded submissions.</p>
<noscript><p class="error">Uploading from this page needs JavaScript;
use <code>cacheeval submit</code> instead.</p></noscript>
<form id="upload-form" action="/api/submissions" method="post" enctype="multipart/form-data">
<label>Token <input type="password" id="token" name="token" autocomplete="off" required></label>
<label>Predictions file <input type="file" id="file" name="file"
 accept=".jsonl,.json,application/json" required></label>
<label>Name <input type="text" id="name" name="name" maxlength="100"
 placeholder="default: the cache name in the file"></label>
<label>Training data <textarea id="training-data" name="training_data" maxlength="2000"
 rows="2" placeholder="what the cache was trained or tuned on"></textarea></label>
<button type="submit" id="upload-button">Submit</button>
<p id="upload-status" role="status" aria-live="polite"></p>
</form>
</section>
</main>"""
    return _page("CacheEval leaderboard", body)


def submission_page(sub: Submission, state: LadderState | None) -> str:
    """``GET /submissions/{id}``: the submission's metadata and its Ladder answer."""
    s = sub.scores
    lat = s.get("latency_ms", {})
    status = ""
    if sub.status != "graded":
        status = (
            f'<p class="error">This submission no longer grades against the current labels: '
            f"{escape(sub.status_detail or sub.status)}</p>"
        )
    if state is None:
        answer = "<p>Not graded under the current mechanism.</p>"
    elif state.released is not None:
        fhr_band, recall_band = band_text(state.released)
        answer = (
            f'<p id="level">Level: <strong>{escape(state.released.name)}</strong> '
            f"(FHR {fhr_band}, recall {recall_band}), submission {state.number} of its "
            "submitter, the best so far.</p>"
        )
        bands = subscore_bands_json(s)
        answer += (
            '<ul id="subscores">'
            + "".join(
                f"<li>{escape(label)}: "
                f"{escape(bands[key]['name']) if bands[key] else 'no such rows'}</li>"
                for key, label, _ in SUBSCORE_COLUMNS
            )
            + "</ul>"
        )
    else:
        best = state.best.name if state.best else "none"
        answer = (
            f'<p id="level">Not above its submitter\'s best level so far '
            f"(<strong>{escape(best)}</strong>); submission {state.number} of its submitter.</p>"
        )
    body = f"""<header>
<p><a href="/">&larr; Leaderboard</a></p>
<h1>{escape(sub.name)}</h1>
<dl class="meta">
<dt>Submitter</dt><dd>{escape(sub.submitter)}</dd>
<dt>Submitted (UTC)</dt><dd>{escape(sub.created)}</dd>
<dt>Cache name in file</dt><dd>{escape(sub.cache_name or "not given")}</dd>
<dt>Training data</dt><dd>{escape(sub.training_data) or "<em>not declared</em>"}</dd>
<dt>Upload sha256</dt><dd><code>{escape(sub.body_sha256)}</code></dd>
<dt>Graded (UTC)</dt><dd>{escape(sub.graded)} against labels
 <code>{escape(sub.labels_sha256[:12])}</code></dd>
</dl>
{status}
</header>
<main>
<h2>Public feedback</h2>
{answer}
<p>{s.get("n_rows", 0)} predictions; the level is computed on a fixed half of the test rows.
Latency (self-reported): p50 {_num(lat.get("p50"), 2)} ms, p95 {_num(lat.get("p95"), 2)} ms,
p99 {_num(lat.get("p99"), 2)} ms. No per-domain or per-label numbers are published for the
test split; they appear for the private slice once a round is closed.</p>
</main>"""
    return _page(f"{sub.name} - CacheEval", body)


def round_json(r: Round) -> dict[str, Any]:
    """A closed round as ``GET /api/rounds`` shows it."""
    return {
        "name": r.name,
        "seed": r.seed,
        "slice_sha256": r.slice_sha256,
        "n_rows": r.n_rows,
        "reports": [
            {
                "cache_name": rep.get("provenance", {}).get("cache_name"),
                "per_domain": [
                    {
                        "domain": d.get("key"),
                        "n": d.get("n"),
                        "confusion": d.get("confusion"),
                        "fhr": d.get("fhr", {}).get("value"),
                        "recall": d.get("recall", {}).get("value"),
                    }
                    for d in rep.get("per_domain", [])
                ],
            }
            for rep in r.reports
        ],
    }


def round_page(r: Round) -> str:
    """``GET /rounds/{name}``: per-domain breakdowns of a closed round's slice."""
    data = round_json(r)
    parts = []
    for rep in data["reports"]:
        rows = "\n".join(
            f"<tr><th scope='row'>{escape(str(d['domain']))}</th><td class='num'>{d['n']}</td>"
            f"<td class='num'>{_num(d['fhr'])}</td><td class='num'>{_num(d['recall'])}</td>"
            f"<td class='num'>{escape(str((d['confusion'] or {}).get('fp')))}/"
            f"{escape(str((d['confusion'] or {}).get('tn')))}</td></tr>"
            for d in rep["per_domain"]
        )
        parts.append(
            f'<h2>{escape(str(rep["cache_name"]))}</h2>\n<table class="breakdown">'
            "<thead><tr><th scope='col'>Domain</th><th scope='col'>Rows</th>"
            "<th scope='col'>FHR</th><th scope='col'>Recall</th><th scope='col'>FP/TN</th>"
            f"</tr></thead><tbody>{rows}</tbody></table>"
        )
    body = f"""<header>
<p><a href="/">&larr; Leaderboard</a></p>
<h1>Round {escape(r.name)}</h1>
<p>A closed round of the private slice: its seed <code>{escape(r.seed)}</code> is published and
matches the slice's commitment, so anyone can regenerate the {r.n_rows} rows
(slice sha256 <code>{escape(r.slice_sha256[:16])}</code>&hellip;) and audit these numbers.</p>
</header>
<main>
{round_figures(r)}
{"".join(parts) or "<p>No reports in this round.</p>"}
</main>"""
    return _page(f"Round {r.name} - CacheEval", body)


def not_found_page(message: str) -> str:
    """A plain 404 page."""
    body = (
        f'<header><p><a href="/">&larr; Leaderboard</a></p><h1>Not found</h1></header>'
        f"<main><p>{escape(message)}</p></main>"
    )
    return _page("Not found - CacheEval", body)


# --- figures (server-side SVG, see charts.py) -----------------------------------------


def board_figure(entries: Sequence[dict[str, Any]]) -> str:
    """The board-wide figure: every entry's published level band (empty board: nothing)."""
    if not entries:
        return ""
    return (
        '<section id="board-figure">\n<h2>Levels at a glance</h2>\n'
        "<p>Each entry's level as published: its FHR band across, its recall band up, "
        "numbered by rank (blue: within the 5% FHR budget).</p>\n"
        f"{levels_svg(entries)}\n</section>"
    )


def round_figures(r: Round) -> str:
    """A closed round's figures: every report in precision-recall and
    precision-CHR space (with its curve when the report has one) and each
    report's per-domain FHR with 95% Wilson intervals."""
    reports = [(i, str(rep.get("provenance", {}).get("cache_name")), rep)
               for i, rep in enumerate(r.reports, 1)]  # fmt: skip
    points = board_points(reports)
    if not reports:
        return ""
    parts = ['<section id="round-figures">\n<h2>Precision, recall and cache-hit ratio</h2>']
    if points:
        names = ", ".join(f"{i}: {escape(name)}" for i, name, _ in reports)
        parts.append(f"<p>Reports numbered {names}; dotted: the perfect ranker.</p>")
        parts.append(board_svg(points))
    for i, name, rep in reports:
        chart = domain_fhr_svg(rep.get("per_domain", []), f"domain-fhr-{i}")
        parts.append(
            f'<figure class="domain-fhr">{chart}'
            f"<figcaption>{escape(name)}: FHR per domain; whiskers: 95% Wilson interval;"
            " dotted: 5%.</figcaption></figure>"
        )
    parts.append("</section>")
    return "\n".join(parts)
