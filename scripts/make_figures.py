"""Draw the figures of the reference reports into reports/figures/ (SVG + PNG).

Inputs (written earlier in scripts/main.sh): the pair-mode and replay reports
of the test split in reports/replay/ (scripts/run_replay.py), the all-row
reports of the baselines and the GPTCache configurations, and GPTCache's
threshold sweep (reports/gptcache_sweep.csv).

    python -m scripts.make_figures
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cacheeval.reporting import plot
from cacheeval.reporting.plotdata import Source, read_source, subscore_fhr

REPO = Path(__file__).resolve().parents[1]
GPTCACHE = "gptcache-minilm-0.80"
VERIFIED = "verified-cache"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=Path, default=REPO / "reports")
    args = parser.parse_args()
    rep: Path = args.reports
    out = rep / "figures"

    def src(path: Path, name: str) -> Source:
        return read_source(path, name)

    pair = {k: src(rep / "replay" / f"pair_test_{k}.json", f"{k} (pair)")
            for k in ("exact_match", GPTCACHE, VERIFIED)}  # fmt: skip
    shared = {k: src(rep / "replay" / f"test_{k}.json", f"{k} (replay)")
              for k in (GPTCACHE, VERIFIED)}  # fmt: skip
    figures = [
        plot.pr_pchr([*pair.values(), *shared.values()], out),
        plot.reliability(pair[GPTCACHE], out, stem=f"reliability_{GPTCACHE}"),
        plot.reliability(pair[VERIFIED], out, stem=f"reliability_{VERIFIED}"),
        plot.domain_fhr(list(pair.values()), out),
        *(
            [plot.subscore_fhr(list(pair.values()), out)]
            if any(subscore_fhr(s) for s in pair.values())
            else []
        ),  # fmt: skip
        plot.threshold_sweep(rep / "gptcache_sweep.csv", out),
    ]
    clq = [src(p, p.stem.removeprefix("baseline_").removeprefix("gptcache_"))
           for p in sorted(rep.glob("baseline_*.json"))]  # fmt: skip
    clq += [src(p, "gptcache " + p.stem.removeprefix("gptcache_"))
            for p in sorted(rep.glob("gptcache_*.json"))]  # fmt: skip
    clq.append(src(rep / "replay" / f"pair_test_{VERIFIED}.json", "verified-cache (test)"))
    clq += list(shared.values())  # the replays: lookups against a shared store
    figures.append(plot.clq(clq, out))
    for fig in figures:
        for note in fig.notes:
            print(f"note: {note}", file=sys.stderr)
        print(f"{fig.name}: {fig.n_series} series -> {', '.join(p.name for p in fig.paths)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
