"""Stress-row generation speed and memory: ``cacheeval stress`` over synthetic
prompt files of 100,000 and 1,000,000 lines.

The prompts are made here from 30 request templates and seeded fillers
(coding, travel, maths, support, chat), written to a temporary file, and run
through the command's own path (read, choose edits, build rows, serialise
canonical JSONL) in a child process each, so every size reports its own peak
resident memory; the rows go to ``os.devnull`` (4 rows of ~1 kB per prompt
would fill gigabytes). Flat memory means the peak does not grow with the file.
Rates are prompts per CPU second of the child (one core; the wall time is
printed beside it, since other work on the machine stretches it). Target:
>= 20,000 prompts/s on one core (``--check`` exits 1 when it is missed).

The template prompts repeat (a few dozen thousand distinct texts in a million),
which the generator's per-text memos reward. ``--input unique`` measures the
other end: CacheEval's own queries (``cachebench.jsonl``, both sides, every
split, de-duplicated; real requests, longer and richer than the templates),
each copy ending in its own letter code (" (ref bcd)"), so no text repeats.

    python -m scripts.bench_stress [--check] [--sizes 100000,1000000] [--per-prompt K] [--workers N]
                                   [--input templates|unique]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_PROMPTS_PER_S = 20_000
DEFAULT_SIZES = (100_000, 1_000_000)

TEMPLATES = (
    "How do I {verb} a list in {lang}?",
    "Why doesn't my {lang} loop stop after {n} iterations?",
    "Write a {lang} function that {task}.",
    "What's the difference between {a} and {b} in {lang}?",
    "How can I undo my last {n} commits in git?",
    "What is {n}% of {m}?",
    "Solve {n}x + {k} = {m}.",
    "How many minutes are in {n} hours?",
    "Convert {n} degrees Celsius to Fahrenheit.",
    "Is {m} a prime number?",
    "What's the best time of year to visit {city}?",
    "Do I need a visa to visit {country}?",
    "How many days do I need to see {city}?",
    "What should I pack for a week in {country} in {month}?",
    "Is it cheaper to fly from {city} to {city2} or take the train?",
    "My order hasn't arrived after {n} days, what should I do?",
    "How do I reset my router to factory settings?",
    "Can I change the email address on my account?",
    "The app keeps crashing when I open the camera, how do I fix it?",
    "How long does a refund take to show up on a credit card?",
    "I feel stressed about my exams next week, any advice?",
    "What should I cook for dinner with {food} and rice?",
    "My {animal} keeps scratching the sofa, how do I stop it?",
    "Can you recommend a good book for a long weekend?",
    "hey, how's it going?",
    "What is the capital of {country}?",
    "Translate 'good morning' into {language}.",
    "How do you say thank you in {language}?",
    "Write a short poem about the {nature} at night.",
    "What's the weather in {city} right now?",
)
FILLERS = {
    "verb": ("reverse", "sort", "shuffle", "flatten", "filter"),
    "lang": ("Python", "JavaScript", "Java", "Rust", "Ruby", "Kotlin"),
    "task": ("removes duplicates from an array", "counts the vowels in a string",
             "checks whether a number is even", "returns the largest element"),
    "a": ("a list", "an array", "a map", "a set"),
    "b": ("a tuple", "a dict", "a vector", "a queue"),
    "city": ("Paris", "London", "Tokyo", "Berlin", "Madrid", "Chicago", "Sydney", "Lisbon"),
    "city2": ("Rome", "Vienna", "Dublin", "Prague", "Seoul", "Boston"),
    "country": ("Japan", "Canada", "Iceland", "Peru", "Kenya", "Norway", "Greece"),
    "month": ("March", "April", "July", "October", "December"),
    "food": ("chicken", "tofu", "salmon", "beef"),
    "animal": ("cat", "dog", "rabbit"),
    "language": ("Spanish", "French", "Japanese", "German"),
    "nature": ("ocean", "forest", "desert", "river"),
}  # fmt: skip


def synthetic_prompts(n: int, seed: int = 0) -> list[str]:
    """``n`` prompts from the templates, seeded (a list: the child streams the file)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        template = TEMPLATES[rng.randrange(len(TEMPLATES))]
        values: dict[str, object] = {k: v[rng.randrange(len(v))] for k, v in FILLERS.items()}
        values.update(n=rng.randint(2, 99), m=rng.randint(100, 999), k=rng.randint(2, 9))
        out.append(template.format(**values))
    return out


def write_prompts(path: Path, n: int) -> None:
    with open(path, "w", encoding="utf-8") as f:
        block = 50_000
        for start in range(0, n, block):
            f.write("\n".join(synthetic_prompts(min(block, n - start), seed=start)) + "\n")


def _letters(i: int) -> str:
    """``i`` in base 20 written with consonants (no digit for the number edits to take).

    >>> _letters(0), _letters(19), _letters(20)
    ('b', 'z', 'cb')
    """
    out = ""
    while True:
        i, r = divmod(i, 20)
        out = "bcdfghjklmnpqrstvwxz"[r] + out
        if not i:
            return out


def write_unique_prompts(path: Path, n: int) -> None:
    """``n`` distinct prompts: the benchmark's queries in turn, each with its own code."""
    from cacheeval.support.jsonio import iter_jsonl

    bench = Path(__file__).resolve().parent.parent / "cachebench.jsonl"
    queries = sorted(
        {
            " ".join(str(row[f]).split())
            for _, row in iter_jsonl(bench)
            for f in ("query_a", "query_b")
        }
    )
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            f.write(f"{queries[i % len(queries)]} (ref {_letters(i)})\n")


def child(prompts: Path, out: Path, per_prompt: int, workers: int = 0) -> dict[str, float]:
    """Run the command's path once; time it and read the peak RSS. With
    ``workers`` (``cacheeval stress --workers``), the CPU seconds and the peak
    RSS include the worker processes' (each worker's peak, the largest)."""
    from cacheeval.benches.stress.generate import StressStats, stress_lines
    from cacheeval.benches.stress.parallel import stress_lines_parallel
    from cacheeval.benches.stress.reader import PromptSpec, read_prompts

    stats = StressStats()
    start, cpu_start = time.perf_counter(), time.process_time()
    kids_start = resource.getrusage(resource.RUSAGE_CHILDREN)
    source = read_prompts(prompts, PromptSpec("text"))
    if workers:
        made = stress_lines_parallel(
            source, seed=0, per_prompt=per_prompt, stats=stats, workers=workers
        )
    else:
        made = stress_lines(source, seed=0, per_prompt=per_prompt, stats=stats)
    with open(os.devnull, "wb") as f:
        for lines in made:
            f.write(lines.encode("utf-8"))
    wall = time.perf_counter() - start
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds = time.process_time() - cpu_start
    seconds += (kids.ru_utime + kids.ru_stime) - (kids_start.ru_utime + kids_start.ru_stime)
    peak_kb = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, kids.ru_maxrss)
    return {
        "prompts": stats.prompts,
        "rows": stats.rows,
        "seconds": seconds,
        "wall_seconds": wall,
        "prompts_per_s": stats.prompts / seconds,
        "prompts_per_wall_s": stats.prompts / wall,
        "rows_per_s": stats.rows / seconds,
        "peak_rss_mb": peak_kb / 1024,
        "noise_and_identity": stats.prompts_with_noise_and_identity / max(stats.prompts, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 below the target")
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)))
    parser.add_argument("--per-prompt", type=int, default=4)
    parser.add_argument(
        "--input",
        choices=("templates", "unique"),
        default="templates",
        help="prompts from the 30 templates (repeating) or CacheEval's queries, none repeated",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=0,
        help="cacheeval stress --workers N (default 0: one process); the target stays per core",
    )
    parser.add_argument("--child", nargs=2, metavar=("PROMPTS", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        result = child(Path(args.child[0]), Path(args.child[1]), args.per_prompt, args.workers)
        print(json.dumps(result))
        return 0
    sizes = [int(s) for s in args.sizes.split(",") if s]
    slowest = float("inf")
    with tempfile.TemporaryDirectory(prefix="bench_stress_") as tmp:
        for n in sizes:
            prompts, out = Path(tmp) / f"prompts_{n}.txt", Path(os.devnull)
            (write_unique_prompts if args.input == "unique" else write_prompts)(prompts, n)
            proc = subprocess.run(
                [sys.executable, "-m", "scripts.bench_stress", "--per-prompt",
                 str(args.per_prompt), "--workers", str(args.workers),
                 "--child", str(prompts), str(out)],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            if proc.returncode != 0:
                print(proc.stderr, file=sys.stderr)
                return 2
            r = json.loads(proc.stdout)
            print(
                f"{r['prompts']:>9,} prompts -> {r['rows']:>9,} rows in {r['seconds']:7.1f} CPU s "
                f"({r['wall_seconds']:.1f} s wall, {r['prompts_per_wall_s']:,.0f} prompts per "
                f"wall s): {r['prompts_per_s']:>8,.0f} prompts/s, "
                f"{r['rows_per_s']:>8,.0f} rows/s, peak RSS {r['peak_rss_mb']:.0f} MB; "
                f"noise+identity on {100 * r['noise_and_identity']:.1f}% of prompts"
            )
            slowest = min(slowest, r["prompts_per_s"])
    ok = slowest >= TARGET_PROMPTS_PER_S
    print(f"target >= {TARGET_PROMPTS_PER_S:,} prompts/s on one core: {'met' if ok else 'MISSED'}")
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
