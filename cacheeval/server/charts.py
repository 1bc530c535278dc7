"""Server-side SVG charts for the leaderboard pages (standard library only).

The SVG is inlined in the HTML and styled with presentation attributes only
(``fill``, ``stroke``, ``font-size`` ...), never a ``style`` attribute or
element, so it renders under the pages' Content-Security-Policy
(``style-src 'self'``, no inline styles, no scripts). Every user-supplied text
(submission and cache names) is escaped.

A chart shows only numbers its page already publishes:

* :func:`levels_svg` - the board: every entry's published level as a box in
  FHR x recall space (its FHR band and recall band), numbered by rank. The
  test split's scores are published only as these coarse levels.
* :func:`board_svg` - a closed round of the private slice (seed public, so
  anyone can regenerate its rows and labels): every report as a point in
  precision-recall and precision-CHR space (precision ``tp / (tp + fp)``,
  recall ``tp / (tp + fn)``, CHR ``(tp + fp) / n``), its threshold sweep as a
  curve when the report has one, and the perfect ranker's P-CHR curve
  ``min(1, p / CHR)`` (area ``p (1 - ln p)``);
* :func:`domain_fhr_svg` - one report's FHR per domain with its 95% Wilson
  interval.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

INK = "#1d2024"
MUTED = "#5b6470"
GRID = "#d7dce2"
BAR = "#4e79a7"
POINT = "#e15759"
FONT = "system-ui, sans-serif"


def _n(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


def _text(x: float, y: float, s: str, size: int = 11, anchor: str = "start",
          fill: str = INK) -> str:  # fmt: skip
    return (f'<text x="{_n(x)}" y="{_n(y)}" font-size="{size}" font-family="{FONT}" '
            f'fill="{fill}" text-anchor="{anchor}">{escape(s)}</text>')  # fmt: skip


def _line(x1: float, y1: float, x2: float, y2: float, stroke: str = GRID, width: float = 1,
          dash: str | None = None) -> str:  # fmt: skip
    extra = f' stroke-dasharray="{dash}"' if dash else ""
    return (f'<line x1="{_n(x1)}" y1="{_n(y1)}" x2="{_n(x2)}" y2="{_n(y2)}" stroke="{stroke}" '
            f'stroke-width="{width}"{extra}/>')  # fmt: skip


def _svg(width: int, height: int, chart_id: str, label: str, body: Sequence[str]) -> str:
    return (
        f'<svg id="{chart_id}" class="chart" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(label)}"><title>{escape(label)}</title>' + "".join(body) + "</svg>"
    )


def domain_fhr_svg(
    per_domain: Sequence[Mapping[str, Any]], chart_id: str = "domain-fhr-chart"
) -> str:
    """Horizontal bars: FHR per domain (0 to 1), whiskers at the Wilson bounds,
    a dotted line at 5%. A domain without MISS rows shows "n/a"."""
    left, right, top, row_h = 120, 20, 24, 22
    width = 560
    plot_w = width - left - right
    height = top + row_h * max(1, len(per_domain)) + 34
    body: list[str] = []

    def x(v: float) -> float:
        return left + plot_w * min(max(v, 0.0), 1.0)

    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        body.append(_line(x(tick), top - 4, x(tick), height - 30))
        body.append(_text(x(tick), height - 16, f"{tick:g}", 10, "middle", MUTED))
    body.append(_line(x(0.05), top - 4, x(0.05), height - 30, INK, 1, "3 3"))
    body.append(_text(x(0.05) + 3, top - 8, "5%", 10, "start", MUTED))
    body.append(_text(left + plot_w / 2, height - 2, "false-hit rate (95% Wilson interval)", 11,
                      "middle", MUTED))  # fmt: skip
    for i, d in enumerate(per_domain):
        y = top + i * row_h
        fhr = d.get("fhr") or {}
        value, lo, hi = fhr.get("value"), fhr.get("ci_low"), fhr.get("ci_high")
        name = str(d.get("domain") or d.get("key") or "?")
        body.append(_text(left - 8, y + 15, name, 11, "end"))
        if value is None:
            body.append(_text(left + 4, y + 15, "n/a (no MISS rows)", 10, "start", MUTED))
            continue
        body.append(
            f'<rect class="bar" x="{_n(left)}" y="{_n(y + 4)}" width="{_n(x(value) - left)}" '
            f'height="{row_h - 8}" fill="{BAR}"><title>{escape(name)}: FHR '
            f"{value:.3f} [{lo:.3f}, {hi:.3f}]</title></rect>"
        )
        if lo is not None and hi is not None:
            mid = y + row_h / 2
            body.append(_line(x(lo), mid, x(hi), mid, INK, 1.2))
            body.append(_line(x(lo), mid - 4, x(lo), mid + 4, INK, 1.2))
            body.append(_line(x(hi), mid - 4, x(hi), mid + 4, INK, 1.2))
    return _svg(width, height, chart_id, "FHR per domain with 95% Wilson intervals", body)


def board_points(scores: Sequence[tuple[int, str, Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """(number, name, report dict) -> points with precision, recall, CHR and
    the positive rate from the confusion counts, and the report's threshold
    sweep as (recall, CHR, precision) triples when it has one (``curve``).
    Reports that served nothing have no precision and are left out.

    >>> board_points([(1, "a", {"confusion": {"tp": 3, "fp": 1, "fn": 1, "tn": 5}})])
    [{'rank': 1, 'name': 'a', 'precision': 0.75, 'recall': 0.75, 'chr': 0.4, 'p': 0.4, 'curve': []}]
    """
    out = []
    for rank, name, s in scores:
        block = s.get("curves") or {}
        total, pos = block.get("n") or 0, block.get("n_positive") or 0
        curve = [
            (q["tp"] / pos if pos else 0.0, q["n_fired"] / total, q["tp"] / q["n_fired"])
            for q in block.get("score_curve") or []
            if total and q.get("n_fired")
        ]
        c = s.get("confusion") or {}
        tp, fp, fn, tn = (int(c.get(k) or 0) for k in ("tp", "fp", "fn", "tn"))
        n = tp + fp + fn + tn
        if not n or not tp + fp:
            continue
        out.append({"rank": rank, "name": name, "precision": tp / (tp + fp),
                    "recall": tp / (tp + fn) if tp + fn else 0.0, "chr": (tp + fp) / n,
                    "p": (tp + fn) / n, "curve": curve})  # fmt: skip
    return out


def board_svg(points: Sequence[Mapping[str, Any]], chart_id: str = "board-chart") -> str:
    """Two panels: precision against recall, and precision against CHR with the
    perfect ranker's curve; each submission a numbered point (its rank)."""
    size, pad, gap = 250, 40, 50
    width, height = pad + size + gap + pad + size + 20, size + 2 * pad + 10
    body: list[str] = []
    panels = (("recall", "Recall", pad), ("chr", "Cache-hit ratio (CHR)", pad + size + gap + pad))
    for key, label, x0 in panels:
        y0 = pad

        def px(v: float, x0: float = x0) -> float:
            return x0 + size * v

        def py(v: float, y0: float = y0) -> float:
            return y0 + size * (1.0 - v)

        for t in (0.0, 0.5, 1.0):
            body.append(_line(px(t), py(0), px(t), py(1)))
            body.append(_line(px(0), py(t), px(1), py(t)))
            body.append(_text(px(t), py(0) + 14, f"{t:g}", 10, "middle", MUTED))
            body.append(_text(px(0) - 5, py(t) + 4, f"{t:g}", 10, "end", MUTED))
        body.append(_text(px(0.5), py(0) + 30, label, 11, "middle", MUTED))
        body.append(_text(px(0), y0 - 8, f"Precision vs {label.split(' (')[0].lower()}", 12))
        if key == "chr" and points:
            p = float(points[0]["p"])
            xs = [p] + [p + (1 - p) * k / 40 for k in range(1, 41)]
            coords = " ".join(f"{_n(px(v))},{_n(py(min(1.0, p / v)))}" for v in xs)
            body.append(
                f'<polyline class="ceiling" points="{_n(px(0))},{_n(py(1))} {coords}" '
                f'fill="none" stroke="{INK}" stroke-width="1" stroke-dasharray="2 3"/>'
            )
            area = p * (1 - math.log(p)) if p > 0 else 0.0  # fmt: skip
            body.append(_text(px(1) - 4, py(0) - 6, f"perfect ranker: p(1 - ln p) = {area:.3f}",
                              9, "end", MUTED))  # fmt: skip
        for pt in points:
            curve = pt.get("curve") or []
            if curve:
                i = 0 if key == "recall" else 1
                coords = " ".join(f"{_n(px(c[i]))},{_n(py(c[2]))}" for c in curve)
                body.append(
                    f'<polyline class="curve" points="{coords}" fill="none" '
                    f'stroke="{POINT}" stroke-opacity="0.6" stroke-width="1.2"/>'
                )
        for pt in points:
            cx, cy = px(float(pt[key])), py(float(pt["precision"]))
            tip = (f"#{pt['rank']} {pt['name']}: precision {pt['precision']:.3f}, "
                   f"{label.split(' (')[0].lower()} {float(pt[key]):.3f}")  # fmt: skip
            body.append(
                f'<g class="point"><circle cx="{_n(cx)}" cy="{_n(cy)}" r="9" fill="{POINT}" '
                f'fill-opacity="0.85" stroke="white" stroke-width="1"><title>{escape(tip)}'
                f"</title></circle>{_text(cx, cy + 4, str(pt['rank']), 9, 'middle', 'white')}</g>"
            )
    return _svg(width, height, chart_id, "Reports in precision-recall and precision-CHR space",
                body)  # fmt: skip


def levels_svg(entries: Sequence[Mapping[str, Any]], chart_id: str = "board-levels-chart") -> str:
    """Every board entry's published level as a box: its FHR band across, its
    recall band up (a level without a recall band spans recall 0 to 1), numbered
    by rank; a dotted line at the 5% FHR budget."""
    size_x, size_y, left, top = 520, 220, 80, 24
    width, height = left + size_x + 20, top + size_y + 40
    body: list[str] = []

    def px(v: float) -> float:
        return left + size_x * min(max(v, 0.0), 1.0)

    def py(v: float) -> float:
        return top + size_y * (1.0 - min(max(v, 0.0), 1.0))

    for t in (0.0, 0.25, 0.5, 0.75, 1.0):
        body.append(_line(px(t), py(0), px(t), py(1)))
        body.append(_line(px(0), py(t), px(1), py(t)))
        body.append(_text(px(t), py(0) + 14, f"{t:g}", 10, "middle", MUTED))
        body.append(_text(px(0) - 5, py(t) + 4, f"{t:g}", 10, "end", MUTED))
    body.append(_line(px(0.05), py(0), px(0.05), py(1), INK, 1, "3 3"))
    body.append(_text(px(0.05) + 3, top - 8, "FHR budget 5%", 10, "start", MUTED))
    body.append(_text(px(0.5), height - 4, "false-hit rate band", 11, "middle", MUTED))
    body.append(_text(px(0) - 5, top - 8, "recall band", 11, "end", MUTED))
    boxes: dict[tuple[float, float, float, float], list[str]] = {}
    for e in entries:
        fhr = e.get("fhr_interval") or [0.0, 1.0]
        rec = e.get("recall_interval") or [0.0, 1.0]
        x1, x2, y1, y2 = px(fhr[0]), px(fhr[1]), py(rec[1]), py(rec[0])
        colour = BAR if e.get("within_budget") else POINT
        tip = f"#{e.get('rank')} {e.get('name')}: level {e.get('level')}"
        body.append(
            f'<g class="level"><rect x="{_n(x1)}" y="{_n(y1)}" width="{_n(max(x2 - x1, 3))}" '
            f'height="{_n(max(y2 - y1, 3))}" fill="{colour}" fill-opacity="0.25" '
            f'stroke="{colour}" stroke-width="1"><title>{escape(tip)}</title></rect></g>'
        )
        boxes.setdefault((x1, x2, y1, y2), []).append(str(e.get("rank")))
    body.append('<g class="level-ranks">')
    for (x, y), label in level_labels(boxes):
        body.append(_text(x, y, label, 10, "middle"))
    body.append("</g>")
    return _svg(width, height, chart_id, "Published levels: FHR band against recall band", body)


#: Approximate advance of a character and height of a line of the 10 px labels.
_CHAR_W, _LINE_H = 6.2, 12.0


def level_labels(
    boxes: Mapping[tuple[float, float, float, float], Sequence[str]],
) -> list[tuple[tuple[float, float], str]]:
    """Where the rank numbers of the levels chart go, so none is printed over
    another: the ranks of entries with the same box share one label
    (``1, 3, 4``), placed at the box's middle or, when a label is already
    there, a line lower or higher, alternating, until it is clear of every
    label placed before it. Returns ((x, baseline y), text) per box.

    >>> level_labels({(0, 100, 0, 40): ["1", "2"], (10, 90, 10, 30): ["3"]})
    [((50.0, 24.0), '1, 2'), ((50.0, 36.0), '3')]
    """
    placed: list[tuple[float, float, float, float]] = []
    out = []
    for (x1, x2, y1, y2), ranks in boxes.items():
        text = ", ".join(ranks)
        w, cx, cy = _CHAR_W * len(text), (x1 + x2) / 2, (y1 + y2) / 2 + 4
        for step in range(0, 200):
            shift = _LINE_H * ((step + 1) // 2) * (1 if step % 2 else -1) if step else 0.0
            y = cy + shift
            box = (cx - w / 2, y - _LINE_H + 2, cx + w / 2, y + 2)
            if not any(_overlap(box, other) for other in placed):
                break
        placed.append(box)
        out.append(((cx, y), text))
    return out


def _overlap(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return min(a[2], b[2]) - max(a[0], b[0]) > 0 and min(a[3], b[3]) - max(a[1], b[1]) > 0
