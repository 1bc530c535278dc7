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
* :func:`threshold_sweep` - GPTCache's FHR and recall against its threshold;
* :func:`clq` - the cost-latency-quality view: quality (F1; recall at FHR <= 5%)
  against p95 latency, marker area by cost per 1k decisions, the Pareto front.
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
    notes, k, rates = [], 0, []
    for i, src in enumerate(sources):
        c = curve(src)
        if c is None:
            notes.append(f"{src.name}: no threshold sweep in this report (no scores, or old file)")
            continue
        color = PALETTE[i % len(PALETTE)]
        if c.pr_auc is not None:
            (line,) = ax_pr.plot(c.recall, c.precision, drawstyle="steps-pre", color=color,
                                 label=f"{c.name} (AP {c.pr_auc:.3f})")  # fmt: skip
            _tag(line, k, "pr")
        elif src.kind == "replay":  # recall over the servable lookups
            (line,) = ax_pr.plot(c.recall, c.precision, drawstyle="steps-pre", color=color,
                                 linestyle="--", label=c.name)  # fmt: skip
            _tag(line, k, "pr")
        auc = "n/a" if c.p_chr_auc is None else f"{c.p_chr_auc:.3f}"
        style = "--" if src.kind == "replay" else "-"
        (line,) = ax_pc.plot(c.chr, c.precision, drawstyle="steps-pre", color=color,
                             linestyle=style, label=f"{c.name} (AUC {auc})")  # fmt: skip
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


def clq(
    sources: Sequence[Source], out_dir: Path, *, stem: str = "clq",
    formats: Sequence[str] = FORMATS,
) -> Figure:  # fmt: skip
    """Quality against p95 latency (log scale), marker area by cost per 1k
    decisions; left F1, right recall at FHR <= 5%. The Pareto front (lower
    latency, lower cost, higher quality) is drawn as a line."""
    plt = pyplot()
    points = [p for p in (clq_point(s) for s in sources) if p is not None]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4), sharex=True)
    fig.subplots_adjust(wspace=0.25)
    fig.suptitle("Cost-latency-quality: marker area = cost per 1k decisions; dashed = Pareto front")
    top_cost = max((p.cost_per_1k for p in points), default=0.0) or 1.0
    k = 0
    for ax, attr, label in zip(axes, ("f1", "recall_at_5"),
                               ("F1", "Recall at FHR <= 5%"), strict=True):  # fmt: skip
        usable: list[ClqPoint] = [p for p in points if getattr(p, attr) is not None]
        for i, p in enumerate(usable):
            j = points.index(p)
            dot = ax.scatter([max(p.p95_ms, 1e-3)], [getattr(p, attr)],
                             s=40 + 400 * p.cost_per_1k / top_cost,
                             color=PALETTE[j % len(PALETTE)], marker="osD^v<>ph*"[j // 10 % 10],
                             alpha=0.85, edgecolor="black", linewidth=0.5, zorder=3,
                             label=p.name if ax is axes[0] else None)  # fmt: skip
            _tag(dot, k + i, attr)
        k += len(usable)
        front = pareto_front([(p.p95_ms, getattr(p, attr), p.cost_per_1k) for p in usable])
        if front:
            (line,) = ax.plot([max(usable[i].p95_ms, 1e-3) for i in front],
                              [getattr(usable[i], attr) for i in front], color="black",
                              linestyle="--", linewidth=1, drawstyle="steps-post",
                              label="Pareto front", zorder=2)  # fmt: skip
            _tag(line, k, attr + "-front")
            k += 1
        ax.set(
            xscale="log",
            xlabel="p95 latency per decision (ms, log)",
            ylabel=label,
            ylim=(-0.02, 1.02),
            title=f"{label} vs p95 latency",
        )
        ax.grid(alpha=0.3)  # fmt: skip
    if points:
        lats = [max(p.p95_ms, 1e-3) for p in points]
        axes[0].set_xlim(min(lats) / 3, max(lats) * 3)
        fig.legend(
            *axes[0].get_legend_handles_labels(),
            loc="lower center",
            fontsize=7,
            ncol=min(4, len(points) + 1),
            frameon=False,
            bbox_to_anchor=(0.5, -0.02),
        )
        fig.subplots_adjust(bottom=0.12 + 0.035 * ((len(points) + 4) // 4))
    return Figure(stem, _save(fig, out_dir, stem, formats), k)
