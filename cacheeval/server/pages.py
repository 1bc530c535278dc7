"""Views of the board: the JSON entries of ``GET /api/leaderboard`` and the
server-rendered HTML pages (leaderboard with upload form, per-submission
breakdown). Every value that comes from a user (names, training-data text,
cache names) goes through :func:`html.escape`; the pages load one local
script and one local stylesheet from ``/static`` and nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

from .charts import board_points, board_svg, domain_fhr_svg
from .store import Submission

#: Sortable columns: (key in an entry, header text, direction of the first
#: click: 1 ascending for "lower is better", -1 descending).
SORT_COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("fhr", "FHR", 1),
    ("adversarial_fhr", "ADVERSARIAL-FHR", 1),
    ("f1", "F1", -1),
    ("precision", "Precision", -1),
    ("recall", "Recall", -1),
    ("p95_latency_ms", "p95 latency (ms)", 1),
)
_RATES = ("accuracy", "precision", "recall", "f1", "fhr", "adversarial_fhr")


def board_entry(sub: Submission) -> dict[str, Any]:
    """One leaderboard entry: metadata and headline values (aggregates only)."""
    head = sub.scores.get("headline", {})
    fhr = head.get("fhr", {})
    out: dict[str, Any] = {
        "id": sub.id,
        "name": sub.name,
        "submitter": sub.submitter,
        "created": sub.created,
        "training_data": sub.training_data,
        "cache_name": sub.cache_name,
        "n_rows": sub.scores.get("n_rows"),
    }
    for m in _RATES:
        out[m] = head.get(m, {}).get("value")
    out["fhr_ci"] = [fhr.get("ci_low"), fhr.get("ci_high")]
    out["p95_latency_ms"] = sub.scores.get("latency_ms", {}).get("p95")
    out["url"] = f"/submissions/{sub.id}"
    return out


def board(subs: Sequence[Submission]) -> list[dict[str, Any]]:
    """Entries of graded submissions, best first: FHR ascending, then F1
    descending, then id; a missing value sorts last. ``rank`` is 1-based."""

    def key(e: dict[str, Any]) -> tuple[Any, ...]:
        fhr, f1 = e["fhr"], e["f1"]
        return (fhr is None, fhr or 0.0, f1 is None, -(f1 or 0.0), e["id"])

    entries = sorted((board_entry(s) for s in subs if s.status == "graded"), key=key)
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
    cells = [
        f'<td class="rank">{e["rank"]}</td>',
        f'<td class="name"><a href="{escape(e["url"])}">{escape(e["name"])}</a></td>',
        f'<td class="submitter">{escape(e["submitter"])}</td>',
        f'<td class="date"><time datetime="{escape(e["created"])}">'
        f"{escape(e['created'][:10])}</time></td>",
        f'<td class="training">{escape(e["training_data"]) or "<em>not declared</em>"}</td>',
    ]
    for key, _, _ in SORT_COLUMNS:
        digits = 1 if key == "p95_latency_ms" else 3
        text = _num(e[key], digits)
        if key == "fhr" and e["fhr"] is not None and e["fhr_ci"][0] is not None:
            lo, hi = e["fhr_ci"]
            text += f' <span class="ci">[{_num(lo)}, {_num(hi)}]</span>'
        cells.append(f'<td class="num" data-key="{key}" data-value="{_data(e[key])}">{text}</td>')
    return f'<tr data-id="{e["id"]}">' + "".join(cells) + "</tr>"


def leaderboard_page(
    entries: Sequence[dict[str, Any]], *, n_test_rows: int, rate_limit: str, figure: str = ""
) -> str:
    """``GET /``: the sortable board, the board-wide figure (:func:`board_figure`)
    and the upload form."""
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
            f'aria-sort="{"ascending" if key == "fhr" else "none"}">'
            f'<button type="button">{escape(label)}</button></th>'
        )
    if entries:
        body_rows = "\n".join(_row(e) for e in entries)
    else:
        body_rows = f'<tr class="empty"><td colspan="{len(heads)}">No submissions yet.</td></tr>'
    body = f"""<header>
<h1>CacheEval leaderboard</h1>
<p>Caches graded on the {n_test_rows} hidden-label test rows. The headline number is the
false-hit rate, FHR = FP / (FP + TN): how often a cache serves a wrong cached answer.
Lower is better; brackets give the 95% Wilson interval. Click a column to sort.</p>
</header>
<main>
<table id="board">
<thead><tr>{"".join(heads)}</tr></thead>
<tbody>
{body_rows}
</tbody>
</table>
{figure}
<section id="submit">
<h2>Submit predictions</h2>
<p>Write predictions with <code>cacheeval predict --split test</code>, then upload the file
with your submitter token (or use <code>cacheeval submit</code>). Feedback is aggregate only;
each submitter may have {escape(rate_limit)} graded submissions.</p>
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


def _est_cells(e: dict[str, Any] | None) -> str:
    if not e or e.get("value") is None:
        den = "0" if not e else f"{e.get('numerator', 0):g}/{e.get('denominator', 0):g}"
        return f'<td class="num">n/a</td><td class="num">&ndash;</td><td class="num">{den}</td>'
    return (
        f'<td class="num">{_num(e["value"])}</td>'
        f'<td class="num">[{_num(e["ci_low"])}, {_num(e["ci_high"])}]</td>'
        f'<td class="num">{e["numerator"]:g}/{e["denominator"]:g}</td>'
    )


_HEADLINE_NAMES = {
    "accuracy": "Accuracy",
    "precision": "Precision",
    "recall": "Recall",
    "f1": "F1",
    "fhr": "FHR",
    "adversarial_fhr": "ADVERSARIAL-FHR",
}


def submission_page(sub: Submission) -> str:
    """``GET /submissions/{id}``: headline, per-domain and per-label breakdown."""
    s = sub.scores
    head = s.get("headline", {})
    headline_rows = "\n".join(
        f"<tr><th scope='row'>{name}</th>{_est_cells(head.get(key))}</tr>"
        for key, name in _HEADLINE_NAMES.items()
    )
    domain_rows = "\n".join(
        f"<tr><th scope='row'>{escape(d['domain'])}</th><td class='num'>{d['n']}</td>"
        f"{_est_cells(d['fhr'])}{_est_cells(d['f1'])}</tr>"
        for d in s.get("per_domain", [])
    )
    label_rows = "\n".join(
        f"<tr><th scope='row'>{escape(lab['label'])}</th><td class='num'>{lab['n']}</td>"
        f"{_est_cells(lab['fhr'])}</tr>"
        for lab in s.get("per_label", [])
    )
    lat = s.get("latency_ms", {})
    conf = s.get("confusion", {})
    status = ""
    if sub.status != "graded":
        status = (
            f'<p class="error">This submission no longer grades against the current labels: '
            f"{escape(sub.status_detail or sub.status)}</p>"
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
<h2>Headline</h2>
<p>{s.get("n_rows", 0)} test rows. Confusion: TP {conf.get("tp")}, FP {conf.get("fp")},
FN {conf.get("fn")}, TN {conf.get("tn")}. Latency (self-reported): p50 {_num(lat.get("p50"), 2)} ms,
p95 {_num(lat.get("p95"), 2)} ms, p99 {_num(lat.get("p99"), 2)} ms.</p>
<table class="breakdown" id="headline">
<thead><tr><th scope="col">Metric</th><th scope="col">Value</th>
<th scope="col">95% Wilson CI</th><th scope="col">Count</th></tr></thead>
<tbody>
{headline_rows}
</tbody>
</table>
<h2>Per domain</h2>
<table class="breakdown" id="per-domain">
<thead><tr><th scope="col">Domain</th><th scope="col">Rows</th>
<th scope="col">FHR</th><th scope="col">95% CI</th><th scope="col">FP/(FP+TN)</th>
<th scope="col">F1</th><th scope="col">95% CI</th><th scope="col">TP/n_eff</th></tr></thead>
<tbody>
{domain_rows}
</tbody>
</table>
{submission_figure(sub)}
<h2>Per label (MISS classes)</h2>
<table class="breakdown" id="per-label">
<thead><tr><th scope="col">Label</th><th scope="col">Rows</th>
<th scope="col">FHR</th><th scope="col">95% CI</th><th scope="col">FP/(FP+TN)</th></tr></thead>
<tbody>
{label_rows}
</tbody>
</table>
</main>"""
    return _page(f"{sub.name} - CacheEval", body)


def not_found_page(message: str) -> str:
    """A plain 404 page."""
    body = (
        f'<header><p><a href="/">&larr; Leaderboard</a></p><h1>Not found</h1></header>'
        f"<main><p>{escape(message)}</p></main>"
    )
    return _page("Not found - CacheEval", body)


# --- figures (server-side SVG, see charts.py) -----------------------------------------

#: Submissions drawn in the board-wide figure (the best ranked).
MAX_FIGURE_POINTS = 20


def board_figure(subs: Sequence[Submission]) -> str:
    """The board-wide figure: every ranked submission (best
    :data:`MAX_FIGURE_POINTS`) in precision-recall and precision-CHR space,
    numbered by rank; empty when nothing is graded."""
    by_id = {s.id: s for s in subs}
    ranked = [(e["rank"], e["name"], by_id[e["id"]].scores) for e in board(subs)]
    points = board_points(ranked[:MAX_FIGURE_POINTS])
    if not points:
        return ""
    return (
        '<section id="board-figure">\n<h2>Precision, recall and cache-hit ratio</h2>\n'
        "<p>Each graded submission at its own operating point, numbered by rank. Right: the"
        " dotted curve is a perfect ranker's precision at each cache-hit ratio; its area,"
        " p(1 - ln p), bounds the P-CHR AUC of any cache on this test set.</p>\n"
        f"{board_svg(points)}\n</section>"
    )


def submission_figure(sub: Submission) -> str:
    """One submission's per-domain FHR chart (empty without per-domain scores)."""
    per_domain = sub.scores.get("per_domain") or []
    if not per_domain:
        return ""
    return (
        f'<figure id="domain-fhr">{domain_fhr_svg(per_domain)}'
        "<figcaption>FHR per domain; whiskers: 95% Wilson interval; dotted: 5%."
        "</figcaption></figure>"
    )
