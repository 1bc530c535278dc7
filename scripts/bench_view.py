"""Size and speed of the per-pair viewer (``cacheeval view``) on a large run.

Builds, in a temporary folder, a bench of ``--rows`` rows (the committed
benchmark's labelled train and dev rows, repeated under fresh ids) and
``--caches`` seeded predictions files; times ``cacheeval view`` over them and
prints the page's size and the command's peak memory (it runs in a process
of its own). With ``--browser`` it
also opens the page in headless Chromium (Selenium; Debian's chromium and
chromium-driver) and times the first table, a filter, a score sort and a
page turn.

    python -m scripts.bench_view [--rows 100000] [--caches 5] [--browser]
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cacheeval.dataset import load_bench
from cacheeval.results.predictions import Prediction, make_header, write_predictions
from cacheeval.support.jsonio import write_jsonl

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


def write_case(folder: Path, n_rows: int, n_caches: int) -> tuple[Path, list[Path]]:
    """A bench of ``n_rows`` real rows under fresh ids and ``n_caches`` predictions files."""
    base = load_bench(REPO / "cachebench.jsonl", split=("train", "dev"))
    per_domain: Counter[str] = Counter()
    rows = []
    for k in range(n_rows):
        row = base[k % len(base)]
        per_domain[row.domain] += 1
        rid = f"cb-{row.domain}-{per_domain[row.domain]:04d}"
        rows.append(dataclasses.replace(row, id=rid, split="dev"))
    bench = folder / "bench.jsonl"
    write_jsonl(bench, (r.to_dict() for r in rows))
    files = []
    for c in range(n_caches):
        shared, rng = random.Random(0), random.Random(c + 1)
        preds = []
        for row in rows:
            score = min(1.0, max(0.0, shared.random() + rng.uniform(-0.15, 0.15)))
            hit = score > 0.5 + 0.08 * c
            preds.append(Prediction(row.id, hit, score, round(score, 6), "embedding", 1.0))
        path = folder / f"cache-{c}.jsonl"
        header = make_header(cache_name=f"cache-{c}", created="2026-01-01T00:00:00Z", split="dev")
        write_predictions(path, header, preds)
        files.append(path)
    return bench, files


def timed(what: str, call: Callable[[], Any]) -> Any:
    start = time.perf_counter()
    result = call()
    print(f"{what}: {time.perf_counter() - start:.2f} s", flush=True)
    return result


def browse(page: Path) -> int:
    """Open the page in headless Chromium and time what a user does first."""
    if not (CHROMIUM.is_file() and CHROMEDRIVER.is_file()):
        print(f"browser: skipped ({CHROMIUM} or {CHROMEDRIVER} missing)")
        return 0
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))
    driver.set_page_load_timeout(300)

    def matches() -> str:
        found: str = driver.execute_script("return document.getElementById('count').textContent;")
        return found

    try:
        timed("browser: page loaded, first 100 rows shown", lambda: driver.get(page.as_uri()))
        print(f"  {matches()}")
        rows = driver.execute_script("return document.querySelectorAll('tr.pair').length;")
        print(f"  rows in the DOM: {rows}")

        def changed(act: Callable[[], Any]) -> None:
            before = matches()
            act()
            WebDriverWait(driver, 300).until(lambda d: matches() != before)

        def choose(select_id: str, text: str) -> None:
            changed(
                lambda: Select(driver.find_element(By.ID, select_id)).select_by_visible_text(text)
            )

        def click(element_id: str) -> None:
            changed(lambda: driver.find_element(By.ID, element_id).click())

        def false_hits() -> None:
            # Choosing the cache alone changes no count: the outcome filter uses it.
            Select(driver.find_element(By.ID, "f-cache")).select_by_visible_text("cache-2")
            choose("f-outcome", "false hit")

        timed("browser: filter cache-2's false hits", false_hits)
        print(f"  {matches()}")
        timed("browser: sort by score", lambda: choose("f-sort", "score, highest first"))
        timed("browser: next page", lambda: click("next"))
        print(f"  {matches()}")
        click("f-reset")
        timed("browser: caches disagree", lambda: click("f-disagree"))
        print(f"  {matches()}")
    finally:
        driver.quit()
    return 0


#: Runs the command and prints its own peak memory (kB) as the last stderr line.
_MEASURED = (
    "import resource, sys\n"
    "from cacheeval.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--caches", type=int, default=5)
    parser.add_argument("--browser", action="store_true", help="also time the page in Chromium")
    parser.add_argument("--write-case", type=Path, metavar="DIR", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write_case is not None:  # the child that builds the case
        write_case(args.write_case, args.rows, args.caches)
        return 0
    with tempfile.TemporaryDirectory(prefix="cacheeval-bench-view-") as tmp:
        folder = Path(tmp)
        # Each step in a process of its own: a process's peak memory survives
        # fork and exec, so the command must not start from the case builder.
        build = [sys.executable, "-m", "scripts.bench_view", "--write-case", tmp]
        build += ["--rows", str(args.rows), "--caches", str(args.caches)]
        what = f"write {args.rows} rows x {args.caches} predictions files"
        if timed(what, lambda: subprocess.run(build, check=False)).returncode:
            return 1
        files = sorted(folder.glob("cache-*.jsonl"))
        out = folder / "view.html"
        argv = [sys.executable, "-c", _MEASURED, "view", *map(str, files)]
        argv += ["--bench", str(folder / "bench.jsonl"), "--out", str(out)]
        done = timed(
            "cacheeval view",
            lambda: subprocess.run(argv, check=False, stderr=subprocess.PIPE, text=True),
        )
        *messages, peak_kb = done.stderr.strip().splitlines() or ["0"]
        for line in messages:
            print(line, file=sys.stderr)
        if done.returncode:
            return int(done.returncode)
        peak = int(peak_kb) / 1024
        print(f"page: {out.stat().st_size / 1e6:.1f} MB; peak memory of the command {peak:.0f} MB")
        if args.browser:
            return browse(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
