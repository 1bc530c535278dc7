"""Grade at scale: rows/s and peak memory of ``cacheeval eval`` in one process,
on 2 worker processes (``--workers 2``) and on Ray actors with 2 local CPUs
(``--ray --workers 2``), over pairs this benchmark writes itself.

1. Writes ``--n`` (default 1,000,000) labelled pairs as a CSV: questions made
   from a word list in this file (seeded ``random.Random``, no third-party
   text); about a third are verbatim repeats (HIT), the rest differ in a word
   or two (MISS).
2. ``cacheeval import-pairs`` turns them into benchmark rows (streaming).
3. ``cacheeval eval --predictions`` over all rows with ``exact_match``, in each
   of the three modes; then ``cacheeval score`` re-grades the predictions file.
4. The same with two synthetic caches of ``--ms`` (default 2) per call:
   :class:`SleepCache` waits off the CPU (a remote judge: parallel calls
   overlap whatever the CPUs) and :class:`SpinCache` keeps a CPU busy (a local
   model: parallel calls need free CPUs). At 2 ms a call a million rows take
   33 minutes in one process, so this part runs on the first ``--slow-n`` rows
   (default 20,000) and the table extrapolates to ``--n`` from the measured
   rate (marked as such). How many CPUs were actually free is measured at the
   end (two busy loops in two processes against one), since on a shared
   machine a CPU-bound cache cannot go faster than that.

Every command runs as its own process, timed from outside (wall clock), with
its memory measured two ways: the largest resident set of any one process of
the run (``getrusage``: the command and its waited-for children), and the
peak of the summed proportional set size (PSS, shared pages split among the
processes sharing them) of the command's whole process tree, sampled every
0.2 s from ``/proc`` (worker processes, and Ray's own daemons, included).
The predictions file is watched as it grows: the time to its first
prediction is the run's start-up (for Ray, starting a local instance), and the
rate between 10% and 90% of it written is the steady rate, which is what a
longer run (or a cluster) sees.

Two CPUs bound the local speed-up: three processes (the driver reading,
writing and scoring; two workers deciding) share them. Run from the
repository root::

    python -m scripts.bench_scale                 # the full run (~10 min on 2 CPUs)
    python -m scripts.bench_scale --n 100000      # a quick one
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from cacheeval.baselines import ExactMatch
from cacheeval.schema import Pair, Verdict
from scripts.machine import cpu_model

REPO_ROOT = Path(__file__).resolve().parent.parent
SEED = 20261124
MODES: dict[str, list[str]] = {
    "sequential": [],
    "workers2": ["--workers", "2"],
    "ray2": ["--ray", "--workers", "2"],
}
MEMORY_TARGET_BYTES = 2 * 1024**3

_VERBS = ("sort", "reverse", "parse", "merge", "count", "filter", "cache", "convert", "compare")
_THINGS = ("a list", "a string", "two files", "a JSON object", "a date", "the logs", "a table")
_LANGS = ("Python", "Go", "Rust", "SQL", "JavaScript", "Java", "C", "Bash", "Ruby")
_ASKS = ("How do I", "What is the fastest way to", "Show me how to", "Can you explain how to")


class SpinCache:
    """A synthetic cache that keeps a CPU busy ``ms`` milliseconds a call, then
    answers like ``exact_match``: a stand-in for a model run on this machine
    (a cross-encoder, an embedding), bound by the CPUs there are."""

    name = "spin"

    def __init__(self, ms: float = 2.0) -> None:
        self.s = ms / 1000.0
        self._exact = ExactMatch()

    def __call__(self, pair: Pair) -> Verdict:
        end = time.perf_counter() + self.s
        while time.perf_counter() < end:
            pass
        return self._exact(pair)


class SleepCache(SpinCache):
    """A synthetic cache that waits ``ms`` milliseconds a call without using a
    CPU, then answers like ``exact_match``: a stand-in for a remote call (an
    LLM judge behind an API), bound by how many calls are in flight."""

    name = "sleep"

    def __call__(self, pair: Pair) -> Verdict:
        time.sleep(self.s)
        return self._exact(pair)


def _busy_loop() -> None:
    x = 0
    for i in range(15_000_000):
        x += i


def cpu_headroom() -> float:
    """How many CPUs this machine gives us right now: the throughput of two
    busy loops in two processes over one (2.0 on an idle two-core machine)."""
    code = "from scripts.bench_scale import _busy_loop; _busy_loop()"

    def wall(k: int) -> float:
        t0 = time.perf_counter()
        procs = [subprocess.Popen([sys.executable, "-c", code], cwd=REPO_ROOT) for _ in range(k)]
        for proc in procs:
            proc.wait()
        return time.perf_counter() - t0

    one = wall(1)
    return 2 * one / wall(2)


def question(r: random.Random) -> str:
    return f"{r.choice(_ASKS)} {r.choice(_VERBS)} {r.choice(_THINGS)} in {r.choice(_LANGS)}?"


def write_pairs(path: Path, n: int) -> None:
    """``n`` seeded pairs: a third verbatim repeats (label 1), the rest one
    word changed (label 0)."""
    r = random.Random(SEED)
    with open(path, "w", encoding="utf-8", newline="") as f:
        out = csv.writer(f)
        out.writerow(["a", "b", "same"])
        for _ in range(n):
            a = question(r)
            if r.random() < 1 / 3:
                out.writerow([a, a, 1])
            else:
                b = a.replace(r.choice(_LANGS), r.choice(_LANGS), 1)
                b = b if b != a else a.replace("?", " quickly?")
                out.writerow([a, b, 0])


# --- measuring a command -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Run:
    """One command's wall time, memory, and (for a predicting run) how its
    predictions file grew."""

    what: str
    rows: int
    seconds: float
    max_rss_bytes: int  # the largest single process (getrusage)
    peak_tree_pss_bytes: int  # summed PSS of the process tree, sampled
    returncode: int
    first_output_s: float | None = None  # start-up: until the first prediction was written
    steady_rows_per_s: float | None = None  # between 10% and 90% of the file written

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.seconds if self.seconds else 0.0

    @property
    def peak_bytes(self) -> int:
        return max(self.max_rss_bytes, self.peak_tree_pss_bytes)


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def _pss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def tree_pss(root: int) -> int:
    """Summed PSS of ``root`` and all its descendants now."""
    tree = _children()
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += _pss_bytes(pid)
        todo.extend(tree.get(pid, ()))
    return total


def _size(path: Path) -> int:
    """Bytes written so far to ``path`` (or to its temp file, while it is open)."""
    sizes = [0]
    for p in [*path.parent.glob(f".{path.name}.*.tmp"), path]:
        try:
            sizes.append(p.stat().st_size)
        except OSError:  # renamed or not there yet
            pass
    return max(sizes)


def _growth(samples: list[tuple[float, int]], final: int, rows: int) -> tuple[float | None, ...]:
    """(seconds to the first prediction, rows/s between 10% and 90% of the file)."""
    body = [(t, b) for t, b in samples if b > 0]
    if not body or final <= 0:
        return None, None
    header = body[0][1]
    first = next((t for t, b in body if b > header), None)
    lo, hi = header + 0.1 * (final - header), header + 0.9 * (final - header)
    t_lo = next((t for t, b in body if b >= lo), None)
    t_hi = next((t for t, b in body if b >= hi), None)
    if t_lo is None or t_hi is None or t_hi - t_lo < 1.0:  # too short to tell
        return first, None
    return first, 0.8 * rows / (t_hi - t_lo)


def measure(what: str, rows: int, argv: Sequence[str], watch: Path | None = None) -> Run:
    """Run ``argv`` from the repository root; its time and memory (and how
    fast the predictions file ``watch`` grew)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    t0 = time.perf_counter()
    proc = subprocess.Popen(list(argv), cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL)
    peak = [0]
    samples: list[tuple[float, int]] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.2):
            peak[0] = max(peak[0], tree_pss(proc.pid))
            if watch is not None:
                samples.append((time.perf_counter() - t0, _size(watch)))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    stop.set()
    sampler.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    first, steady = _growth(samples, _size(watch), rows) if watch is not None else (None, None)
    run = Run(what, rows, seconds, usage.ru_maxrss * 1024, peak[0], proc.returncode, first, steady)
    rss, pss = run.max_rss_bytes / 2**20, run.peak_tree_pss_bytes / 2**20
    extra = "" if steady is None else f"  (steady {steady:,.0f} rows/s, first after {first:.1f} s)"
    print(
        f"  {what:<30} {rows:>9,} rows {seconds:8.1f} s {run.rows_per_s:>9,.0f} rows/s  "
        f"max RSS {rss:6.0f} MiB  tree PSS {pss:6.0f} MiB{extra}"
        + ("" if run.returncode == 0 else f"  EXIT {run.returncode}"),
        file=sys.stderr,
    )
    return run


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "cacheeval", *args]


def head(src: Path, dst: Path, n: int) -> None:
    """The first ``n`` lines of a rows file."""
    with open(src, encoding="utf-8") as f, open(dst, "w", encoding="utf-8") as out:
        for i, line in enumerate(f):
            if i >= n:
                break
            out.write(line)


def eval_argv(rows: Path, work: Path, cache: list[str], tag: str) -> list[str]:
    mode = tag.rsplit("-", 1)[1]
    return cli("eval", "--bench", str(rows), *cache, *MODES[mode],
               "--predictions", str(work / f"pred-{tag}.jsonl"),
               "--out", str(work / f"report-{tag}.md"),
               "--json", str(work / f"report-{tag}.json"))  # fmt: skip


# --- the benchmark ---------------------------------------------------------------------------


def run_cache(
    label: str, cache: list[str], rows: Path, n: int, work: Path, modes: Sequence[str]
) -> dict[str, Run]:
    """``eval`` with ``cache`` in each mode; files ``pred-<label>-<mode>.jsonl``."""
    return {
        mode: measure(
            f"{label} {mode}",
            n,
            eval_argv(rows, work, cache, f"{label}-{mode}"),
            work / f"pred-{label}-{mode}.jsonl",
        )
        for mode in modes
    }


def same_decisions(work: Path, label: str, modes: Sequence[str]) -> bool:
    """The predictions files of every mode agree, timings and dates aside
    (read side by side, a line at a time)."""

    def strip(i: int, line: str) -> str:
        rec = json.loads(line)
        rec.pop("created" if i == 0 else "latency_ms", None)
        return json.dumps(rec)

    paths = [work / f"pred-{label}-{m}.jsonl" for m in modes]
    if not all(p.exists() for p in paths):  # a run failed
        return False
    files = [open(p, encoding="utf-8") for p in paths]  # noqa: SIM115
    try:
        for i, lines in enumerate(zip(*files, strict=True)):
            first = strip(i, lines[0])
            if any(strip(i, line) != first for line in lines[1:]):
                return False
    except ValueError:  # different lengths
        return False
    finally:
        for f in files:
            f.close()
    return True


def summarise(label: str, results: dict[str, Run], n_target: int) -> list[str]:
    """One line per mode: rows/s end to end and in the steady state, the
    ratios to one process, peak memory, and the extrapolation to ``n_target``."""
    lines = [f"{label}:"]
    base = results.get("sequential")
    for mode, run in results.items():
        ratio = f"{run.rows_per_s / base.rows_per_s:4.2f}x" if base else "n/a"
        steady, steady_ratio = "n/a", "n/a"
        if run.steady_rows_per_s is not None:
            steady = f"{run.steady_rows_per_s:,.0f}"
            if base is not None and base.steady_rows_per_s:
                steady_ratio = f"{run.steady_rows_per_s / base.steady_rows_per_s:4.2f}x"
        rate = run.steady_rows_per_s or run.rows_per_s
        extrapolated = (
            f"; {n_target:,} rows: ~{((run.first_output_s or 0) + n_target / rate) / 60:,.0f} min"
            " (extrapolated)"
            if run.rows < n_target
            else ""
        )
        lines.append(
            f"  {mode:<10} {run.rows_per_s:>8,.0f} rows/s end to end ({ratio}); steady {steady} "
            f"rows/s ({steady_ratio}); start-up {run.first_output_s or 0:.1f} s; "
            f"peak {run.peak_bytes / 2**20:,.0f} MiB{extrapolated}"
        )
    return lines


def load() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="pairs (default 1,000,000)")
    parser.add_argument("--slow-n", type=int, default=20_000, help="rows for the --ms caches")
    parser.add_argument("--ms", type=float, default=2.0, help="ms per call of the synthetic caches")
    parser.add_argument("--modes", nargs="+", choices=list(MODES), default=list(MODES))
    parser.add_argument("--work", type=Path, help="keep the files here (default: a temp dir)")
    parser.add_argument("--json", type=Path, help="also write every measurement as JSON")
    args = parser.parse_args(argv)

    work = args.work or Path(tempfile.mkdtemp(prefix="cacheeval-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    load_start = load()
    print(f"{cpu_model()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
          f"load {load_start}; files in {work}", file=sys.stderr)  # fmt: skip
    t0 = time.perf_counter()
    pairs, rows = work / "pairs.csv", work / "rows.jsonl"
    write_pairs(pairs, args.n)
    print(f"  wrote {args.n:,} pairs in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    imported = measure("import-pairs", args.n, cli(
        "import-pairs", str(pairs), "--text-a", "a", "--text-b", "b", "--label", "same",
        "--positive", "1", "--domain", "code", "--out", str(rows)))  # fmt: skip

    exact = run_cache("exact_match", ["--baseline", "exact_match"], rows, args.n, work, args.modes)
    agree_exact = same_decisions(work, "exact_match", args.modes)
    first_preds = work / f"pred-exact_match-{args.modes[0]}.jsonl"
    scored = measure("score (exact_match predictions)", args.n, cli(
        "score", "--bench", str(rows), "--predictions", str(first_preds),
        "--out", str(work / "rescored.md"), "--json", str(work / "rescored.json")))  # fmt: skip

    slow_rows = work / f"rows-{args.slow_n}.jsonl"
    head(rows, slow_rows, args.slow_n)
    slow: dict[str, dict[str, Run]] = {}
    agree_slow = True
    for kind in ("SleepCache", "SpinCache"):
        cache = ["--cache-module", "scripts.bench_scale", "--cache-class", kind,
                 "--cache-arg", f"ms={args.ms:g}"]  # fmt: skip
        slow[kind] = run_cache(kind, cache, slow_rows, args.slow_n, work, args.modes)
        agree_slow = agree_slow and same_decisions(work, kind, args.modes)
    headroom = cpu_headroom()

    every = [imported, scored, *exact.values(), *(r for v in slow.values() for r in v.values())]
    peak = max(r.peak_bytes for r in every)
    lines = [
        f"{cpu_model()}, {os.cpu_count()} CPUs; {args.n:,} generated pairs; "
        f"load average at the start {load_start}, at the end {load()}",
        f"import-pairs: {imported.rows_per_s:,.0f} rows/s, peak {imported.peak_bytes / 2**20:,.0f}"
        f" MiB; score: {scored.rows_per_s:,.0f} rows/s, peak {scored.peak_bytes / 2**20:,.0f} MiB",
        *summarise("exact_match", exact, args.n),
        *summarise(
            f"SleepCache, {args.ms:g} ms a call off the CPU (on {args.slow_n:,} rows)",
            slow["SleepCache"],
            args.n,
        ),
        *summarise(
            f"SpinCache, {args.ms:g} ms a call on a CPU (on {args.slow_n:,} rows)",
            slow["SpinCache"],
            args.n,
        ),
        f"CPUs free for this run at the end: {headroom:.2f} of {os.cpu_count()} "
        "(two busy loops over one)",
        f"same decisions in every mode: exact_match {agree_exact}, the ms caches {agree_slow}",
        f"peak memory of any run: {peak / 2**20:,.0f} MiB "
        f"({'under' if peak < MEMORY_TARGET_BYTES else 'OVER'} 2 GiB)",
        f"total {time.perf_counter() - t0:.0f} s",
    ]
    print("\n".join(lines))
    if args.json is not None:
        data = {
            "cpu": cpu_model(), "cpus": os.cpu_count(), "n": args.n, "slow_n": args.slow_n,
            "ms": args.ms, "import": asdict(imported), "score": asdict(scored),
            "exact_match": {m: asdict(r) for m, r in exact.items()},
            "ms_caches": {k: {m: asdict(r) for m, r in v.items()} for k, v in slow.items()},
            "cpu_headroom": headroom,
            "same_decisions": {"exact_match": agree_exact, "ms_caches": agree_slow},
            "summary": lines,
        }  # fmt: skip
        args.json.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    failed = [r.what for r in every if r.returncode != 0]
    if failed:
        print(f"FAILED: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed or not (agree_exact and agree_slow) else 0


if __name__ == "__main__":
    sys.exit(main())
