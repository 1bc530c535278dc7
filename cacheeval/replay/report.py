"""The report of one shared-cache replay: every number of a
:class:`~cacheeval.replay.engine.ReplayRun`, computed by
:mod:`cacheeval.metrics.replay`, and its JSON and Markdown forms.

:func:`build_replay_report` is the only place that computes; the renderers only
format. JSON key order is the dataclass field order (``{"cacheeval_replay":
"1.0", ...}``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..metrics.latency import LatencyStats, latency_stats
from ..metrics.ranking import DEFAULT_ALPHAS, perfect_p_chr_auc
from ..metrics.replay import (
    OUTCOMES,
    ReplayCounts,
    ReplayOperatingPoint,
    ReplayPoint,
    ReplayRates,
    best_replay_point,
    replay_counts,
    replay_curve,
    replay_p_chr_auc,
    replay_rates,
    thin_curve,
)
from ..reporting.markdown import cell, estimate, num, table
from ..reporting.report import to_plain, utc_now
from ..schema import DOMAINS, LABELS
from ..support.gitinfo import package_git_info
from ..support.jsonio import dumps, dumps_pretty
from ..support.layout import display_path
from ..version import __version__
from .engine import LookupRecord, ReplayRun

REPLAY_KEY = "cacheeval_replay"
REPLAY_VERSION = "1.1"  # 1.1: provenance.run_mode
#: How many failed lookups a report lists.
MAX_ERROR_EXAMPLES = 5


@dataclass(frozen=True, slots=True)
class ReplayProvenance:
    """Where a replay's numbers come from."""

    cache_name: str
    cache_args: dict[str, Any]
    dataset_path: str | None
    dataset_sha256: str | None
    splits: tuple[str, ...]
    n_rows: int
    n_entries: int
    n_distractors: int
    seed: int
    cacheeval_version: str
    git_commit: str | None
    created: str
    seconds: float
    #: Where the shared cache ran (``process``, ``process, bubblewrap`` or
    #: ``in-process``, as :attr:`cacheeval.reporting.report.Provenance.run_mode`);
    #: None when not recorded (the Python API, older reports).
    run_mode: str | None = None


@dataclass(frozen=True, slots=True)
class ReplaySlice:
    """Counts and rates of the lookups of one domain or label."""

    key: str
    counts: ReplayCounts
    rates: ReplayRates


@dataclass(frozen=True, slots=True)
class LatencyAtSize:
    """Lookup latency with ``n_entries`` entries stored."""

    n_entries: int
    latency: LatencyStats


@dataclass(frozen=True, slots=True)
class ReplayErrors:
    """Failed lookups (scored as no fire) and failed puts (entry not stored)."""

    n_lookup_errors: int
    examples: tuple[str, ...]
    n_put_errors: int
    first_put_error: str | None


@dataclass(frozen=True, slots=True)
class ReplayReport:
    """Every number of one replay (see :mod:`cacheeval.metrics.replay`).

    ``ceiling`` is ``p (1 - ln p)``, the P-CHR AUC limit of a perfect ranker
    with perfect retrieval; ``curve`` the thinned threshold sweep over the
    lookups' candidates (the AUC is computed on the full sweep).
    """

    provenance: ReplayProvenance
    counts: ReplayCounts
    rates: ReplayRates
    positive_rate: float | None
    p_chr_auc: float | None
    ceiling: float | None
    operating_points: tuple[ReplayOperatingPoint, ...]
    curve: tuple[ReplayPoint, ...]
    per_domain: tuple[ReplaySlice, ...]
    per_label: tuple[ReplaySlice, ...]
    latency: tuple[LatencyAtSize, ...]
    put_latency: LatencyStats
    errors: ReplayErrors

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {REPLAY_KEY: REPLAY_VERSION}
        out.update(to_plain(self))
        return out

    def to_json(self) -> str:
        return dumps_pretty(self.to_dict())

    def to_markdown(self) -> str:
        return render_markdown(self)


def _slices(
    records: Sequence[LookupRecord], key_of: str, order: Sequence[str]
) -> tuple[ReplaySlice, ...]:
    groups: dict[str, list[LookupRecord]] = {}
    for r in records:
        groups.setdefault(getattr(r, key_of), []).append(r)
    keys = [k for k in order if k in groups] + sorted(k for k in groups if k not in order)
    out = []
    for k in keys:
        c = replay_counts([r.outcome for r in groups[k]], [r.servable for r in groups[k]])
        out.append(ReplaySlice(k, c, replay_rates(c)))
    return tuple(out)


def build_replay_report(
    run: ReplayRun,
    *,
    cache_args: Mapping[str, Any] | None = None,
    dataset_path: str | None = None,
    dataset_sha256: str | None = None,
    splits: Sequence[str] = (),
    alphas: Sequence[float] = DEFAULT_ALPHAS,
    created: str | None = None,
    run_mode: str | None = None,
) -> ReplayReport:
    """Score a replay run."""
    recs = run.lookups
    hit = [r.servable for r in recs]
    counts = replay_counts([r.outcome for r in recs], hit)
    points = replay_curve(
        [r.candidate_score for r in recs], [r.candidate_outcome for r in recs], hit
    )
    n = counts.n
    p = counts.n_servable / n if n else None
    errors = [f"{r.row_id}: {r.error}" for r in recs if r.error is not None]
    provenance = ReplayProvenance(
        cache_name=run.cache_name,
        cache_args=dict(cache_args or {}),
        dataset_path=display_path(dataset_path) if dataset_path is not None else None,
        dataset_sha256=dataset_sha256,
        splits=tuple(splits),
        n_rows=n,
        n_entries=run.n_entries,
        n_distractors=run.n_distractors,
        seed=run.seed,
        cacheeval_version=__version__,
        git_commit=package_git_info().commit,
        created=created or utc_now(),
        seconds=run.seconds,
        run_mode=run_mode,
    )
    return ReplayReport(
        provenance=provenance,
        counts=counts,
        rates=replay_rates(counts),
        positive_rate=p,
        p_chr_auc=replay_p_chr_auc(points, n),
        ceiling=perfect_p_chr_auc(p) if p is not None else None,
        operating_points=tuple(
            best_replay_point(points, n, counts.n_unservable, a) for a in alphas
        ),
        curve=thin_curve(points, n),
        per_domain=_slices(recs, "domain", DOMAINS),
        per_label=_slices(recs, "label", LABELS),
        latency=tuple(
            LatencyAtSize(s.n_entries, latency_stats(s.latencies_ms)) for s in run.stages
        ),
        put_latency=latency_stats(run.put_latencies_ms),
        errors=ReplayErrors(
            n_lookup_errors=len(errors),
            examples=tuple(errors[:MAX_ERROR_EXAMPLES]),
            n_put_errors=run.put_errors,
            first_put_error=run.first_put_error,
        ),
    )


# --- Markdown ------------------------------------------------------------------------


def _slice_rows(slices: Sequence[ReplaySlice]) -> list[list[str]]:
    return [
        [
            s.key,
            str(s.counts.n),
            estimate(s.rates.chr),
            estimate(s.rates.precision),
            estimate(s.rates.fhr),
            estimate(s.rates.fhr_judged),
            estimate(s.rates.wrong_entry_rate),
            estimate(s.rates.recall),
        ]
        for s in slices
    ]


def _latency_rows(rows: Sequence[LatencyAtSize]) -> list[list[str]]:
    return [
        [
            f"{x.n_entries:,}",
            str(x.latency.n),
            num(x.latency.mean_ms),
            num(x.latency.p50_ms),
            num(x.latency.p95_ms),
            num(x.latency.p99_ms),
        ]
        for x in rows
    ]


def render_markdown(r: ReplayReport) -> str:
    """The replay report for people."""
    p, c, rt = r.provenance, r.counts, r.rates
    lines = [f"# CacheEval replay: {cell(p.cache_name)}", ""]
    lines += table(
        ["Run", ""],
        [
            ["Dataset", p.dataset_path or "in-memory rows"],
            ["Dataset sha256", p.dataset_sha256 or "n/a"],
            ["Splits looked up", ", ".join(p.splits) or "n/a"],
            ["Lookups (rows)", str(p.n_rows)],
            ["Entries stored", f"{p.n_entries} ({p.n_distractors} distractors)"],
            ["Seed", str(p.seed)],
            ["Cache arguments", dumps(p.cache_args)],
            *([] if p.run_mode is None else [["Cache ran", p.run_mode]]),
            ["CacheEval", p.cacheeval_version],
            ["Git commit", p.git_commit or "not a git checkout"],
            ["Created (UTC)", p.created],
            ["Wall time (s)", f"{p.seconds:.1f}"],
        ],
    )
    lines += ["", "## Headline", ""]
    lines.append(
        f"One shared store of {p.n_entries} entries. A fire is valid only when it returns an"
        " entry the labels accept for the request: the row's own partner on a HIT row, a copy"
        " of the request itself, or side a of any labelled HIT pair whose side b is the"
        " request (never on policy_no_cache rows). A lookup is servable when the store holds"
        f" such an entry ({c.n_servable} of {c.n} are). A wrong-entry hit returns another"
        " entry than these and the row's own partner; 'unjudged' ones are entries no label"
        " relates to the request (some may be correct), so precision and FHR are"
        " conservative. Rates with 95% Wilson intervals."
    )
    lines.append("")
    lines += table(
        ["Metric", "Value [95% CI]", "Count"],
        [
            ["CHR (fires / lookups)", estimate(rt.chr), f"{c.fired}/{c.n}"],
            ["VCHR (valid fires / lookups)", estimate(rt.vchr), f"{c.valid}/{c.n}"],
            ["Precision (VCHR / CHR)", estimate(rt.precision), f"{c.valid}/{c.fired}"],
            [
                "FHR (fires on unservable lookups)",
                estimate(rt.fhr),
                f"{c.fired_miss}/{c.n_unservable}",
            ],
            [
                "FHR, judged fires only",
                estimate(rt.fhr_judged),
                f"{c.fired_miss - c.fired_miss_unjudged}/{c.n_unservable}",
            ],
            [
                "Wrong-entry hit rate",
                estimate(rt.wrong_entry_rate),
                f"{c.wrong_entry + c.unjudged}/{c.n}",
            ],
            ["of which unjudged entries", estimate(rt.unjudged_rate), f"{c.unjudged}/{c.n}"],
            ["Recall (valid / servable lookups)", estimate(rt.recall), f"{c.valid}/{c.n_servable}"],
        ],
    )
    tally = {o: (c.n - c.fired if o == "none" else getattr(c, o)) for o in OUTCOMES}
    lines += ["", "Lookups by outcome: " + ", ".join(f"{o} {k}" for o, k in tally.items()) + "."]
    lines += ["", "## Threshold sweep", ""]
    lines.append(
        f"P-CHR AUC {num(r.p_chr_auc, 4)} (perfect-ranker ceiling p(1 - ln p) ="
        f" {num(r.ceiling, 4)} at p = {num(r.positive_rate, 4)}), over each lookup's"
        " candidate score."
    )
    lines += ["", "Best operating point: the most valid fires with FHR <= alpha.", ""]
    lines += table(
        ["alpha", "Threshold", "CHR", "VCHR", "Precision", "FHR", "Wrong-entry rate"],
        [
            [
                f"{op.alpha:g}",
                "never fire" if op.threshold is None else f">= {op.threshold:.6g}",
                num(op.chr),
                num(op.vchr),
                num(op.precision),
                num(op.fhr, 4),
                num(op.wrong_entry_rate, 4),
            ]
            for op in r.operating_points
        ],
    )
    head = ["", "n", "CHR", "Precision", "FHR", "FHR judged", "Wrong-entry rate", "Recall"]
    lines += ["", "## Per domain", ""]
    lines += table(["Domain", *head[1:]], _slice_rows(r.per_domain))
    lines += ["", "## Per label", ""]
    lines += table(["Label", *head[1:]], _slice_rows(r.per_label))
    lines += ["", "## Lookup latency as the store grows", ""]
    lines.append("Milliseconds per lookup (nearest-rank percentiles).")
    lines.append("")
    lines += table(
        ["Entries stored", "Lookups timed", "mean", "p50", "p95", "p99"], _latency_rows(r.latency)
    )
    pl = r.put_latency
    lines += ["", f"Put latency over {pl.n} puts: mean {num(pl.mean_ms)} ms,"
              f" p50 {num(pl.p50_ms)} ms, p95 {num(pl.p95_ms)} ms."]  # fmt: skip
    e = r.errors
    lines += ["", "## Errors", ""]
    lines.append(
        f"{e.n_lookup_errors} failed lookups (scored as no fire), {e.n_put_errors} failed puts."
    )
    lines += [f"- `{cell(x)}`" for x in e.examples]
    if e.first_put_error:
        lines.append(f"- first failed put: `{cell(e.first_put_error)}`")
    return "\n".join(lines) + "\n"
