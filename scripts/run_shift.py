"""The reference caches on the public test split and on a private slice, side by side.

    python -m scripts.run_shift          # writes reports/SHIFT.{md,json}

Grades the three baselines (always_miss, always_hit, exact_match), GPTCache
minilm@0.80 (the adapter's fast path: the same decision rule on batch
embeddings) and the verified cache (committed model) on

* the test split of ``cachebench.jsonl`` with ``private/test_labels.jsonl``
  (both written by ``scripts/assemble.py``), and
* the slice ``cacheeval generate-slice --seed <demo seed>`` gives against the
  public shards ``domains/*.jsonl`` (40 rows per domain, held-out families),
  and the slices of further public seeds (``--more-seeds``, default three),

and writes the per-domain comparison on the demo seed and the all-domain figures
of every seed (:mod:`cacheeval.benches.shift`), plus each
reference cache's test-split predictions under
``reports/reference_predictions/`` (label-free; the leaderboard grades them as
its fixed reference rows). Progress on stderr.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from cacheeval.baselines import make_baseline
from cacheeval.benches.shift import (
    evaluate_shift,
    evaluate_slices,
    render_markdown,
    to_json,
    write_reference_predictions,
)
from cacheeval.benches.slice import DEFAULT_PER_DOMAIN, generate_slice, load_public_texts
from cacheeval.dataset import load_bench
from cacheeval.schema import Row
from cacheeval.support.jsonio import (
    dumps_pretty,
    jsonl_bytes,
    sha256_bytes,
    sha256_file,
    write_bytes_atomic,
)
from cacheeval.support.layout import DOMAINS_DIR, REPO_ROOT

#: The fixed, public seed of the demo slice (a real round uses a secret one).
DEMO_SEED = "cacheeval-shift-demo-1"
#: Further public seeds: how much the slice figures move with the draw.
MORE_SEEDS = ("cacheeval-shift-demo-2", "cacheeval-shift-demo-3", "cacheeval-shift-demo-4")
GPTCACHE_CONFIG = "minilm@0.80"
#: Where the reference caches' test-split predictions go, under --out-dir.
REFERENCE_DIR = "reference_predictions"


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def reference_caches() -> list[tuple[str, Callable[[], Any]]]:
    """(name, factory) of the five reference caches."""

    def gptcache() -> Any:
        from adapters.gptcache_adapter import GPTCacheAdapter

        return GPTCacheAdapter.from_config(GPTCACHE_CONFIG, path="fast")

    def verified() -> Any:
        from adapters.verified_cache.adapter import VerifiedCacheAdapter

        return VerifiedCacheAdapter()

    out: list[tuple[str, Callable[[], Any]]] = [
        (name, functools.partial(make_baseline, name))
        for name in ("always_miss", "always_hit", "exact_match")
    ]
    out.append((f"gptcache {GPTCACHE_CONFIG} (fast path)", gptcache))
    out.append(("verified-cache", verified))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", default=DEMO_SEED, help=f"slice seed (default: {DEMO_SEED})")
    p.add_argument(
        "--more-seeds",
        default=",".join(MORE_SEEDS),
        help="comma-separated further slice seeds ('' for none; default: %(default)s)",
    )
    p.add_argument("--per-domain", type=int, default=DEFAULT_PER_DOMAIN)
    p.add_argument("--bench", type=Path, default=REPO_ROOT / "cachebench.jsonl")
    p.add_argument("--labels", type=Path, default=REPO_ROOT / "private" / "test_labels.jsonl")
    p.add_argument("--out-dir", type=Path, default=REPO_ROOT / "reports")
    p.add_argument(
        "--baselines-only", action="store_true", help="skip GPTCache and the verified cache"
    )
    args = p.parse_args(argv)
    for path in (args.bench, args.labels):
        if not path.is_file():
            _log(f"{path}: missing (run scripts/assemble.py first)")
            return 2
    test_rows = load_bench(args.bench, split="test", labels_path=args.labels)
    shards = sorted(DOMAINS_DIR.glob("*.jsonl"))
    texts, n_public = load_public_texts(shards)
    _log(f"slice: seed {args.seed!r}, {args.per_domain} rows per domain")
    slice_dicts = generate_slice(args.seed, texts, per_domain=args.per_domain)
    slice_rows = [Row.from_dict(r) for r in slice_dicts]
    caches = reference_caches()
    if args.baselines_only:
        caches = caches[:3]
    shifts, _, test_predictions = evaluate_shift(caches, test_rows, slice_rows, log=_log)
    more = [s for s in args.more_seeds.split(",") if s.strip() and s.strip() != args.seed]
    slices = []
    for seed in more:
        dicts = generate_slice(seed.strip(), texts, per_domain=args.per_domain)
        slices.append((seed.strip(), sha256_bytes(jsonl_bytes(dicts)),
                       [Row.from_dict(r) for r in dicts]))  # fmt: skip
    seeds = evaluate_slices(caches, slices, log=_log)
    command = "python -m scripts.run_shift" + (
        f" --seed {args.seed}" if args.seed != DEMO_SEED else ""
    )
    if args.more_seeds != ",".join(MORE_SEEDS):
        command += f" --more-seeds '{args.more_seeds}'"
    meta = {
        "command": command,
        "seed": args.seed,
        "more_seeds": [x.seed for x in seeds],
        "per_domain": args.per_domain,
        "n_test": len(test_rows),
        "n_slice": len(slice_rows),
        "n_public_rows": n_public,
        "dataset_sha256": sha256_file(args.bench),
        "labels_sha256": sha256_file(args.labels),
        "slice_sha256": sha256_bytes(jsonl_bytes(slice_dicts)),
    }
    args.out_dir.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(
        args.out_dir / "SHIFT.json", (dumps_pretty(to_json(shifts, meta, seeds)) + "\n").encode()
    )
    write_bytes_atomic(args.out_dir / "SHIFT.md", render_markdown(shifts, meta, seeds).encode())
    write_reference_predictions(
        args.out_dir / REFERENCE_DIR, test_predictions, sha256_file(args.bench)
    )
    _log(f"wrote {args.out_dir / 'SHIFT.md'} and SHIFT.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
