"""Grade the three baselines on every labelled row and write reports/baseline_<name>.{md,json}.

The test split's labels come from the git-ignored private/test_labels.jsonl that
`python -m scripts.assemble` writes.
"""

import argparse
import sys
from pathlib import Path

from cacheeval.baselines import BASELINES, make_baseline
from cacheeval.dataset import load_bench
from cacheeval.run.blockrun import CacheSpec
from cacheeval.run.harness import evaluate
from cacheeval.run.probe import with_cold_start
from cacheeval.support.jsonio import write_bytes_atomic

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bench", type=Path, default=REPO / "cachebench.jsonl")
    parser.add_argument("--labels", type=Path, default=REPO / "private" / "test_labels.jsonl")
    parser.add_argument("--out-dir", type=Path, default=REPO / "reports")
    args = parser.parse_args()
    if not args.labels.exists():
        print(
            f"error: {args.labels} not found: run `python -m scripts.assemble` first",
            file=sys.stderr,
        )
        return 2
    rows = load_bench(args.bench, labels_path=args.labels)
    for name in BASELINES:
        report = evaluate(make_baseline(name), rows, cache_name=name, dataset_path=args.bench)
        # no baseline has prepare(); the cold probe builds one afresh in a process of its own
        report = with_cold_start(report, CacheSpec(baseline=name), prepare_ms=None)
        write_bytes_atomic(args.out_dir / f"baseline_{name}.md", report.to_markdown().encode())
        write_bytes_atomic(args.out_dir / f"baseline_{name}.json", report.to_json().encode())
        h = report.headline
        print(f"{name}: F1 {h.f1.value} FHR {h.fhr.value} recall {h.recall.value}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
