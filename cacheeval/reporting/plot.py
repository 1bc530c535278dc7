"""Figures from report files, drawn with matplotlib (Agg backend, no network).

matplotlib is imported only inside :func:`pyplot`, so ``import cacheeval``
stays standard-library only; install it with the ``plot`` extra. Every figure
is written as SVG and/or PNG with fixed metadata and a fixed SVG hash salt,
so the same reports give the same SVG bytes. Each drawn series carries an SVG
id ``series-<k>-<part>`` (one ``k`` per series), which is how the tests count
series.

* :func:`pr_pchr` - PR and P-CHR curves of several caches, the perfect-ranker
  P-CHR curve (area ``p (1 - ln p)``) as the structural ceiling;
* :func:`reliability` - one cache's reliability diagram with bin counts;
* :func:`domain_fhr` - per-domain FHR with 95% Wilson intervals, caches side by side;
* :func:`subscore_fhr` - the same per sub-score (query, context, policy);
* :func:`kind_results` - stress rows per perturbation kind: FHR of the edits
  that change the answer, recall of those that keep it, caches side by side;
* :func:`threshold_sweep` - GPTCache's FHR and recall against its threshold;
* :func:`clq` - the cost-latency-quality view: F1 and the false-hit rate
  against p95 latency (pair and replay reports), marker area by cost per 1k
  decisions, the Pareto front.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .plotdata import (
    ClqPoint,
    Source,
    ceiling,
    clq_point,
    curve,
    kind_rates,
    pareto_front,
    perfect_ranker,
    read_sweep,
    slug,
)
from .plotdata import domain_fhr as domain_fhr_data
from .plotdata import reliability as reliability_data
from .plotdata import subscore_fhr as subscore_fhr_data

FORMATS: tuple[str, ...] = ("svg", "png")
#: One colour per cache, in input order (colour-blind-safe Tableau 10).
PALETTE = (
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Figure:
    """What a figure function wrote: the files and how many series it drew."""

    name: str
    paths: tuple[Path, ...]
    n_series: int
    notes: tuple[str, ...] = ()


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend with deterministic SVG output."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams.update(
        {
            "svg.hashsalt": "cacheeval",
            "svg.fonttype": "none",  # text stays text: smaller, searchable
            "figure.dpi": 100,
            "font.size": 9,
            "axes.spines.top": False,
            "axes.spines.right": False,
        }
    )
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, out_dir: Path, stem: str, formats: Sequence[str]) -> tuple[Path, ...]:
    plt = pyplot()
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in formats:
        if fmt not in FORMATS:
            raise ValueError(f"format must be one of {FORMATS}, not {fmt!r}")
        path = out_dir / f"{stem}.{fmt}"
        meta = {"Date": None} if fmt == "svg" else {"Software": None}
        fig.savefig(path, format=fmt, metadata=meta, bbox_inches="tight",
                    dpi=150 if fmt == "png" else None)  # fmt: skip
        paths.append(path)
    plt.close(fig)
    return tuple(paths)


def _tag(artist: Any, k: int, part: str = "0") -> None:
    artist.set_gid(f"series-{k}-{part}")


def pr_pchr(
    sources: Sequence[Source], out_dir: Path, *, stem: str = "pr_pchr",
    formats: Sequence[str] = FORMATS,
) -> Figure:  # fmt: skip
    """PR (left) and P-CHR (right) curves of every source that has a sweep."""
    plt = pyplot()
    fig, (ax_pr, ax_pc) = plt.subplots(1, 2, figsize=(10, 4.2))
    notes: list[str] = []
    k, rates = 0, []
    for i, src, c, name in _distinct_curves(sources, notes):
        color = PALETTE[i % len(PALETTE)]
        width = max(0.9, 2.4 - 0.4 * k)  # a later curve drawn thinner: one close below shows
        if c.pr_auc is not None:
            (line,) = ax_pr.plot(c.recall, c.precision, drawstyle="steps-pre", color=color,
                                 linewidth=width, label=f"{name} (AP {c.pr_auc:.3f})")  # fmt: skip
            _tag(line, k, "pr")
        elif src.kind == "replay":  # recall over the servable lookups
            (line,) = ax_pr.plot(c.recall, c.precision, drawstyle="steps-pre", color=color,
                                 linewidth=width, linestyle="--", label=name)  # fmt: skip
            _tag(line, k, "pr")
        auc = "n/a" if c.p_chr_auc is None else f"{c.p_chr_auc:.3f}"
        style = "--" if src.kind == "replay" else "-"
        (line,) = ax_pc.plot(c.chr, c.precision, drawstyle="steps-pre", color=color,
                             linewidth=width, linestyle=style,
                             label=f"{name} (AUC {auc})")  # fmt: skip
        _tag(line, k, "pchr")
        if c.positive_rate:
            rates.append(round(c.positive_rate, 4))
        k += 1
    for j, p in enumerate(sorted(set(rates))):
        xs, ys = perfect_ranker(p)
        (line,) = ax_pc.plot(
            xs,
            ys,
            color="black",
            linestyle=":",
            linewidth=1.2,
            label=f"perfect ranker, p = {p:.3f}: p(1 - ln p) = {ceiling(p):.3f}",
        )
        _tag(line, k + j, "ceiling")  # fmt: skip
    n_series = k + len(set(rates))
    ax_pr.set(xlabel="Recall", ylabel="Precision", xlim=(0, 1.02), ylim=(0, 1.05),
              title="Precision-recall (dashed: replay)")  # fmt: skip
    ax_pc.set(xlabel="Cache-hit ratio (CHR)", ylabel="Precision (VCHR / CHR)",
              xlim=(0, 1.02), ylim=(0, 1.05), title="Precision-CHR (dashed: replay)")  # fmt: skip
    for ax in (ax_pr, ax_pc):
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="lower left")
    return Figure(stem, _save(fig, out_dir, stem, formats), n_series, tuple(notes))


def _distinct_curves(
    sources: Sequence[Source], notes: list[str]
) -> list[tuple[int, Source, Any, str]]:
    """``(index, source, curve, legend name)`` of every source with a sweep,
    a curve identical to an earlier one (same kind, same points) merged into
    it under the name ``A = B``: drawn once, so no line hides another."""
    kept: list[tuple[int, Source, Any, list[str]]] = []
    for i, src in enumerate(sources):
        c = curve(src)
        if c is None:
            notes.append(f"{src.name}: no threshold sweep in this report (no scores, or old file)")
            continue
        same = next((k for k in kept if k[1].kind == src.kind and _same_curve(k[2], c)), None)
        if same is None:
            kept.append((i, src, c, [c.name]))
        else:
            same[3].append(c.name)
            notes.append(f"{c.name}: the same curve as {same[3][0]}, drawn once")
    return [(i, src, c, " = ".join(names)) for i, src, c, names in kept]


def _same_curve(a: Any, b: Any) -> bool:
    return (a.recall, a.chr, a.precision, a.pr_auc, a.p_chr_auc) == (
        b.recall, b.chr, b.precision, b.pr_auc, b.p_chr_auc)  # fmt: skip


def reliability(
    src: Source, out_dir: Path, *, stem: str | None = None, formats: Sequence[str] = FORMATS
) -> Figure:
    """Reliability diagram: mean predicted P(HIT) against the observed HIT share
    per bin (marker area by rows), the diagonal, and the rows per bin below."""
    plt = pyplot()
    stem = stem or f"reliability_{slug(src.name)}"
    bins, ece = reliability_data(src)
    fig, (ax, ax_n) = plt.subplots(2, 1, figsize=(4.8, 5.2), sharex=True,
                                   gridspec_kw={"height_ratios": [3, 1]})  # fmt: skip
    (diag,) = ax.plot([0, 1], [0, 1], color="grey", linestyle=":", label="perfect calibration")
    _tag(diag, 0, "diagonal")
    full = [b for b in bins if b[3]]
    n_series = 1
    if full:
        xs = [b[2] for b in full]
        ys = [b[4] / b[3] for b in full]
        total = sum(b[3] for b in full)
        (line,) = ax.plot(xs, ys, color=PALETTE[0], marker=None, label="observed")
        _tag(line, 1, "line")
        dots = ax.scatter(xs, ys, s=[20 + 400 * b[3] / total for b in full], color=PALETTE[0],
                          zorder=3)  # fmt: skip
        _tag(dots, 1, "dots")
        for x, y, b in zip(xs, ys, full, strict=True):
            ax.annotate(str(b[3]), (x, y), textcoords="offset points", xytext=(4, -10), fontsize=7)
        bars = ax_n.bar([(b[0] + b[1]) / 2 for b in bins], [b[3] for b in bins],
                        width=[b[1] - b[0] for b in bins], color=PALETTE[0], alpha=0.5,
                        edgecolor="white")  # fmt: skip
        for j, patch in enumerate(bars.patches):
            _tag(patch, 2, str(j))
        n_series = 3
    title = src.name if ece is None else f"{src.name}\nECE {ece:.3f}"
    ax.set(ylabel="Observed HIT share", xlim=(0, 1), ylim=(0, 1.05), title=title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    ax_n.set(xlabel="Predicted P(HIT)", ylabel="Rows")
    notes = () if full else (f"{src.name}: no reliability bins in this report",)
    return Figure(stem, _save(fig, out_dir, stem, formats), n_series, notes)


def domain_fhr(
    sources: Sequence[Source], out_dir: Path, *, stem: str = "domain_fhr",
    formats: Sequence[str] = FORMATS,
) -> Figure:  # fmt: skip
    """Grouped horizontal bars: FHR per domain per cache, with Wilson 95% whiskers."""
    data = [domain_fhr_data(s) for s in sources]
    return _fhr_bars(sources, data, out_dir, stem, formats, "FHR per domain")


def subscore_fhr(
    sources: Sequence[Source], out_dir: Path, *, stem: str = "subscore_fhr",
    formats: Sequence[str] = FORMATS,
) -> Figure:  # fmt: skip
    """:func:`domain_fhr` over the sub-scores: a cache blind to context shows
    its false hits under ``context``, one blind to the policies under ``policy``.
    Sources without sub-scores (replays, older reports) are left out."""
    kept = [(s, subscore_fhr_data(s)) for s in sources]
    kept = [(s, rows) for s, rows in kept if rows]
    return _fhr_bars(
        [s for s, _ in kept], [rows for _, rows in kept], out_dir, stem, formats,
        "FHR per sub-score (query: same context, no policy)",
    )  # fmt: skip


def _fhr_bars(
    sources: Sequence[Source],
    data: Sequence[Sequence[tuple[str, float | None, float | None, float | None, int]]],
    out_dir: Path,
    stem: str,
    formats: Sequence[str],
    title: str,
) -> Figure:
    plt = pyplot()
    domains: list[str] = []
    for rows in data:
        domains += [d for d, *_ in rows if d not in domains]
    height = 0.8 / max(1, len(sources))
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(domains) * max(1, len(sources)) ** 0.5 + 1.2))
    for k, (src, rows) in enumerate(zip(sources, data, strict=True)):
        by = {d: (v, lo, hi) for d, v, lo, hi, _ in rows}
        ys = [i + (k - (len(sources) - 1) / 2) * height for i in range(len(domains))]
        vals, lows, highs = [], [], []
        for d in domains:
            v, lo, hi = by.get(d, (None, None, None))
            vals.append(v or 0.0)  # no MISS rows in the domain: no bar, no whisker
            lows.append(0.0 if v is None or lo is None else v - lo)
            highs.append(0.0 if v is None or hi is None else hi - v)
        bars = ax.barh(ys, vals, height=height, color=PALETTE[k % len(PALETTE)], label=src.name,
                       xerr=[lows, highs], error_kw={"elinewidth": 0.8, "capsize": 2})  # fmt: skip
        for j, patch in enumerate(bars.patches):
            _tag(patch, k, str(j))
    ax.axvline(0.05, color="black", linestyle=":", linewidth=1)
    ax.set_yticks(range(len(domains)), domains)
    ax.invert_yaxis()
    ax.set(xlabel="False-hit rate (95% Wilson interval); dotted: 5%", xlim=(0, 1),
           title=title)  # fmt: skip
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return Figure(stem, _save(fig, out_dir, stem, formats), len(sources))


def kind_results(
    sources: Sequence[Source], out_dir: Path, *, stem: str = "kind_results",
    formats: Sequence[str] = FORMATS, max_fhr: float = 0.05, min_recall: float = 0.90,
) -> Figure:  # fmt: skip
    """Stress rows per perturbation kind, one figure: left the FHR of every kind
    that changes the answer (identity, context, policy; dotted: ``max_fhr``),
    right the recall of every noise kind (dotted: ``min_recall``), 95% Wilson
    whiskers, caches side by side. Sources without stress rows are left out."""
    plt = pyplot()
    kept = [(s, kind_rates(s)) for s in sources]
    kept = [(s, rates) for s, rates in kept if rates[0] or rates[1]]
    panels = []
    for side in (0, 1):
        keys: list[str] = []
        for _, rates in kept:
            keys += [k for k, *_ in rates[side] if k not in keys]
        panels.append(keys)
    rows = max(1, len(panels[0]), len(panels[1]))
    tall = 0.3 * rows * max(1, len(kept)) ** 0.5 + 1.6
    fig, axes = plt.subplots(1, 2, figsize=(12, tall))
    # room on top for the legend and the titles; between the panels for the right labels
    fig.subplots_adjust(top=1 - 1.1 / tall, wspace=0.55)
    height = 0.8 / max(1, len(kept))
    for side, (ax, keys) in enumerate(zip(axes, panels, strict=True)):
        for k, (src, rates) in enumerate(kept):
            by = {key: (v, lo, hi) for key, v, lo, hi, _ in rates[side]}
            ys = [i + (k - (len(kept) - 1) / 2) * height for i in range(len(keys))]
            vals, lows, highs = [], [], []
            for key in keys:
                v, lo, hi = by.get(key, (None, None, None))
                vals.append(v or 0.0)
                lows.append(0.0 if v is None or lo is None else v - lo)
                highs.append(0.0 if v is None or hi is None else hi - v)
            bars = ax.barh(ys, vals, height=height, color=PALETTE[k % len(PALETTE)],
                           label=src.name if side == 0 else None, xerr=[lows, highs],
                           error_kw={"elinewidth": 0.8, "capsize": 2})  # fmt: skip
            for j, patch in enumerate(bars.patches):
                _tag(patch, k, f"{'fhr' if side == 0 else 'recall'}-{j}")
        ax.set_yticks(range(len(keys)), keys)
        ax.invert_yaxis()
        ax.grid(axis="x", alpha=0.3)
    axes[0].axvline(max_fhr, color="black", linestyle=":", linewidth=1)
    axes[1].axvline(min_recall, color="black", linestyle=":", linewidth=1)
    axes[0].set(xlabel=f"False-hit rate (95% Wilson); dotted: {max_fhr:g}", xlim=(0, 1),
                title="Edits that change the answer: FHR")  # fmt: skip
    axes[1].set(xlabel=f"Recall (95% Wilson); dotted: {min_recall:g}", xlim=(0, 1),
                title="Noise that keeps the answer: recall")  # fmt: skip
    if kept:
        fig.legend(*axes[0].get_legend_handles_labels(), loc="upper center", fontsize=7,
                   ncol=min(4, len(kept)), frameon=False, bbox_to_anchor=(0.5, 1.0))  # fmt: skip
    notes = tuple(f"{s.name}: no stress rows in this report" for s in sources
                  if all(s is not t for t, _ in kept))  # fmt: skip
    return Figure(stem, _save(fig, out_dir, stem, formats), len(kept), notes)


def threshold_sweep(
    sweep_csv: Path, out_dir: Path, *, stem: str = "gptcache_sweep",
    formats: Sequence[str] = FORMATS,
) -> Figure:  # fmt: skip
    """GPTCache's FHR (solid) and recall (dashed) against its similarity
    threshold, one colour per embedder (query-only embedding)."""
    plt = pyplot()
    sweep = read_sweep(sweep_csv)
    fig, ax = plt.subplots(figsize=(6.4, 4))
    k = 0
    for i, (embedder, points) in enumerate(sorted(sweep.items())):
        color = PALETTE[i % len(PALETTE)]
        ts = [p[0] for p in points]
        width = max(0.8, 2.6 - 0.7 * i)  # identical curves stay visible under each other
        (f,) = ax.plot(ts, [p[1] for p in points], color=color, linewidth=width,
                       label=f"{embedder} FHR")  # fmt: skip
        _tag(f, k, "fhr")
        (r,) = ax.plot(ts, [p[2] for p in points], color=color, linestyle="--",
                       linewidth=width, label=f"{embedder} recall")  # fmt: skip
        _tag(r, k + 1, "recall")
        k += 2
    ax.axhline(0.05, color="black", linestyle=":", linewidth=1)
    ax.set(xlabel="GPTCache similarity threshold", ylabel="Rate", ylim=(0, 1.02),
           title="GPTCache threshold sweep (all rows); dotted: FHR 5%")  # fmt: skip
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    return Figure(stem, _save(fig, out_dir, stem, formats), k)


#: The panels of the cost-latency-quality figure: the point's attribute, the
#: axis label, and whether higher is better (for the Pareto front).
CLQ_PANELS: tuple[tuple[str, str, bool], ...] = (
    ("f1", "F1 (higher is better)", True),
    ("fhr", "False-hit rate (lower is better)", False),
)


def clq(
    sources: Sequence[Source], out_dir: Path, *, stem: str = "clq",
    formats: Sequence[str] = FORMATS,
) -> Figure:  # fmt: skip
    """Quality against p95 latency (log scale), marker area by cost per 1k
    decisions: left F1, right the false-hit rate (every pair and replay report
    has both); replays as squares. The Pareto front (lower latency, lower
    cost, better quality) is drawn as a dashed line in each panel."""
    fig, k, notes = clq_figure(sources)
    clash = overlapping_texts(fig)
    if clash:
        notes += tuple(f"overlapping labels: {a!r} and {b!r}" for a, b in clash)
    return Figure(stem, _save(fig, out_dir, stem, formats), k, notes)


def clq_figure(sources: Sequence[Source]) -> tuple[Any, int, tuple[str, ...]]:
    """The :func:`clq` figure (not saved), its series count and notes."""
    from matplotlib.ticker import LogLocator, NullFormatter

    plt = pyplot()
    points = [p for p in (clq_point(s) for s in sources) if p is not None]
    notes = tuple(f"{s.name}: no latency in this report" for s in sources if clq_point(s) is None)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6), layout="constrained")
    fig.suptitle("Cost-latency-quality: marker area = cost per 1k decisions; squares = replay; "
                 "dashed = Pareto front")  # fmt: skip
    top_cost = max((p.cost_per_1k for p in points), default=0.0) or 1.0
    k = 0
    for ax, (attr, label, higher) in zip(axes, CLQ_PANELS, strict=True):
        usable: list[ClqPoint] = [p for p in points if getattr(p, attr) is not None]
        for i, p in enumerate(usable):
            j = points.index(p)
            dot = ax.scatter([max(p.p95_ms, 1e-3)], [getattr(p, attr)],
                             s=40 + 400 * p.cost_per_1k / top_cost,
                             color=PALETTE[j % len(PALETTE)],
                             marker="s" if p.kind == "replay" else "oD^v<>ph*"[j // 10 % 9],
                             alpha=0.85, edgecolor="black", linewidth=0.5, zorder=3,
                             label=p.name if ax is axes[0] else None)  # fmt: skip
            _tag(dot, k + i, attr)
        k += len(usable)
        quality = [getattr(p, attr) if higher else 1.0 - getattr(p, attr) for p in usable]
        triples = [(p.p95_ms, q, p.cost_per_1k) for p, q in zip(usable, quality, strict=True)]
        front = pareto_front(triples)
        if len(front) > 1:  # one point alone draws no line
            (line,) = ax.plot([max(usable[i].p95_ms, 1e-3) for i in front],
                              [getattr(usable[i], attr) for i in front], color="black",
                              linestyle="--", linewidth=1, drawstyle="steps-post",
                              label="Pareto front" if ax is axes[0] else None,
                              zorder=2)  # fmt: skip
            _tag(line, k, attr + "-front")
            k += 1
        if attr == "fhr":
            ax.axhline(0.05, color="black", linestyle=":", linewidth=1)
        ax.set(xscale="log", xlabel="p95 latency per decision (ms, log scale)", ylabel=label,
               ylim=(-0.03, 1.03), title=f"{label.split(' (')[0]} vs p95 latency")  # fmt: skip
        # labels on the decades only: minor labels of a short log axis collide
        ax.xaxis.set_major_locator(LogLocator(base=10, numticks=12))
        ax.xaxis.set_minor_locator(LogLocator(base=10, subs=tuple(range(2, 10)), numticks=12))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.grid(alpha=0.3)
    if points:
        lo, hi = _log_span([max(p.p95_ms, 1e-3) for p in points])
        for ax in axes:
            ax.set_xlim(lo, hi)
        fig.legend(*axes[0].get_legend_handles_labels(), loc="outside right upper",
                   fontsize=7, frameon=False)  # fmt: skip
    return fig, k, notes


def _log_span(values: Sequence[float]) -> tuple[float, float]:
    """x limits around ``values``: a third below the least to three times the
    most, widened about their middle to at least two decades, so the axis has
    decade labels and no point sits on its edge.

    >>> [round(x, 4) for x in _log_span([2.0, 4.0])]
    [0.2828, 28.2843]
    """
    lo, hi = min(values) / 3, max(values) * 3
    if hi / lo < 100:
        mid = (lo * hi) ** 0.5
        lo, hi = mid / 10, mid * 10
    return lo, hi


def overlapping_texts(fig: Any) -> list[tuple[str, str]]:
    """Pairs of visible, non-empty texts of ``fig`` whose drawn boxes overlap
    (by more than a pixel each way): tick labels, axis labels, titles, legend
    entries."""
    from matplotlib.text import Text

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = []
    for t in fig.findobj(Text):
        if t.get_visible() and t.get_text().strip() and t.get_figure() is not None:
            boxes.append((t.get_text(), t.get_window_extent(renderer).expanded(1.0, 1.0)))
    out = []
    for i, (a, ba) in enumerate(boxes):
        for b, bb in boxes[i + 1 :]:
            w = min(ba.x1, bb.x1) - max(ba.x0, bb.x0)
            h = min(ba.y1, bb.y1) - max(ba.y0, bb.y0)
            if w > 1 and h > 1:
                out.append((a, b))
    return out
