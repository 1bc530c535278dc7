"""The leaderboard page in headless Chromium (Selenium): load it, upload a
predictions file through the form, see the new row at its level, sort by
level and FHR band.

Skipped, with the reason, only when Debian's chromium / chromium-driver are
not installed (``apt-get install -y chromium chromium-driver``)."""

from __future__ import annotations

import dataclasses
import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")

if not (CHROMIUM.is_file() and CHROMEDRIVER.is_file()):
    pytest.skip(
        f"headless browser test needs {CHROMIUM} and {CHROMEDRIVER} "
        "(apt-get install -y chromium chromium-driver)",
        allow_module_level=True,
    )
pytest.importorskip("selenium")

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from tests.server.conftest import (  # noqa: E402
    MiniBuild,
    add_submitter,
    random_predictions,
    running_server,
    write_prediction_file,
)


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[webdriver.Chrome]:
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=str(CHROMEDRIVER)))
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def upload(base: str, token: str, body: bytes, name: str) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{base}/api/submissions?name={name}",
        data=body,
        method="POST",
        headers={"Authorization": f"Bearer {token}"},
    )
    with urllib.request.urlopen(request, timeout=30) as r:
        data: dict[str, Any] = json.loads(r.read())
    return data


# Read a whole column in one script call: the page may swap its table body
# between two WebDriver calls (after an upload), which would leave stale elements.
def column(driver: WebDriver, key: str) -> list[float]:
    values = driver.execute_script(
        "return Array.from(document.querySelectorAll("
        f"'#board tbody td[data-key=\"{key}\"]')).map(c => c.dataset.value);"
    )
    return [float(v) for v in values]


def names(driver: WebDriver) -> list[str]:
    found: list[str] = driver.execute_script(
        "return Array.from(document.querySelectorAll('#board tbody td.name a'))"
        ".map(a => a.textContent);"
    )
    return found


def click_sort(driver: WebDriver, key: str) -> str:
    driver.find_element(By.CSS_SELECTOR, f'th[data-sort="{key}"] button').click()
    th = driver.find_element(By.CSS_SELECTOR, f'th[data-sort="{key}"]')
    return th.get_attribute("aria-sort") or ""


def test_upload_through_the_page_and_sort(
    browser: webdriver.Chrome, build: MiniBuild, tmp_path: Path
) -> None:
    db = tmp_path / "board.sqlite"
    tokens = [add_submitter(db, f"team-{k}") for k in "abc"]
    truth = {r.id: r.binary_label == "HIT" for r in build.rows}
    base_preds = random_predictions(build.ids, 21)
    perfect = write_prediction_file(
        tmp_path / "perfect.jsonl",
        [dataclasses.replace(p, is_hit=truth[p.id]) for p in base_preds],
        name="perfect",
    )
    with running_server(build, db, "--rate-limit", "20") as base:
        # Two entries already on the board, over and within the FHR budget.
        for token, name, hit in ((tokens[0], "all-miss", False), (tokens[1], "all-hit", True)):
            body = write_prediction_file(
                tmp_path / f"{name}.jsonl",
                [dataclasses.replace(p, is_hit=hit) for p in base_preds],
            )
            upload(base, token, body.read_bytes(), name)

        browser.get(base + "/")
        assert browser.title == "CacheEval leaderboard"
        assert names(browser) == ["all-miss", "all-hit"]

        browser.find_element(By.ID, "token").send_keys(tokens[2])
        browser.find_element(By.ID, "file").send_keys(str(perfect.resolve()))
        browser.find_element(By.ID, "name").send_keys("from the browser")
        browser.find_element(By.ID, "training-data").send_keys("the labels, as a test oracle")
        browser.find_element(By.ID, "upload-button").click()
        WebDriverWait(browser, 20).until(lambda d: "from the browser" in names(d))

        status = browser.find_element(By.ID, "upload-status").text
        assert status == (
            "Submission #3 graded: FHR within 5%, recall 85% or more (your best so far)."
        )
        row = browser.find_element(By.CSS_SELECTOR, '#board tbody tr[data-id="3"]')
        assert "new" in (row.get_attribute("class") or "")
        assert "the labels, as a test oracle" in row.text
        # Server order: level, best first; over budget last.
        assert names(browser) == ["from the browser", "all-miss", "all-hit"]
        assert column(browser, "level_rank") == [5.0, 2.0, 0.0]

        # Clicking the level column flips the order, clicking again restores it.
        assert click_sort(browser, "level_rank") == "ascending"
        assert column(browser, "level_rank") == [0.0, 2.0, 5.0]
        assert click_sort(browser, "level_rank") == "descending"
        assert names(browser) == ["from the browser", "all-miss", "all-hit"]
        # FHR bands sort ascending first (lower is better).
        assert click_sort(browser, "fhr_high") == "ascending"
        fhr = column(browser, "fhr_high")
        assert fhr == sorted(fhr) and fhr[-1] == 1.0

        # A bad token is refused with the server's message, and nothing is added.
        token_box = browser.find_element(By.ID, "token")
        token_box.clear()
        token_box.send_keys("cet_" + "z" * 43)
        browser.find_element(By.ID, "file").send_keys(str(perfect.resolve()))
        browser.find_element(By.ID, "upload-button").click()
        WebDriverWait(browser, 20).until(
            lambda d: d.find_element(By.ID, "upload-status").text.startswith("Rejected")
        )
        assert "401" in browser.find_element(By.ID, "upload-status").text
        assert len(names(browser)) == 3

        # The name links to the submission's page: its Ladder answer, no breakdown.
        browser.find_element(By.LINK_TEXT, "from the browser").click()
        WebDriverWait(browser, 20).until(lambda d: d.current_url.endswith("/submissions/3"))
        level = browser.find_element(By.ID, "level").text
        assert level.startswith("Level: FHR within 5%, recall 85% or more")
        assert browser.find_elements(By.CSS_SELECTOR, "#per-domain") == []
        # No script error and no Content-Security-Policy violation on either page
        # (the policy allows only the server's own script and stylesheet).
        entries = browser.get_log("browser")
        logs = [e for e in entries if e["source"] in ("javascript", "security")]
        assert logs == []


def distinct_colours(png: bytes) -> int:
    """How many distinct colours a screenshot holds (Pillow ships with matplotlib)."""
    import io

    image = pytest.importorskip("PIL.Image")
    with image.open(io.BytesIO(png)) as img:
        colours = img.convert("RGB").getcolors(maxcolors=1 << 20)
    return len(colours or [])


def closed_round(tmp_path: Path) -> Path:
    """A rounds directory with one closed round of the private slice (seed
    published) and two reports on it."""
    from cacheeval import cli as cacheeval_cli

    rounds = tmp_path / "rounds"
    folder = rounds / "2026q1"
    (folder / "reports").mkdir(parents=True)
    slice_file = folder / "slice.jsonl"
    args = ["generate-slice", "--seed", "chart-seed", "--per-domain", "6", "--domain", "math",
            "--domain", "code", "--out", str(slice_file)]  # fmt: skip
    assert cacheeval_cli.main(args) == 0
    for name in ("always_hit", "exact_match"):
        assert (
            cacheeval_cli.main(
                [
                    "eval",
                    "--bench",
                    str(slice_file),
                    "--baseline",
                    name,
                    "--out",
                    str(tmp_path / f"{name}.md"),
                    "--json",
                    str(folder / "reports" / f"{name}.json"),
                ]
            )
            == 0
        )
    (folder / "seed.txt").write_text("chart-seed\n")  # fmt: skip
    return rounds


def test_charts_render_under_the_csp(
    browser: webdriver.Chrome, build: MiniBuild, tmp_path: Path
) -> None:
    db = tmp_path / "board.sqlite"
    rounds = closed_round(tmp_path)
    with running_server(build, db, "--rate-limit", "20", "--rounds-dir", str(rounds)) as base:
        for i in range(3):
            token = add_submitter(db, f"chart-team-{i}")
            body = write_prediction_file(
                tmp_path / f"chart-{i}.jsonl", random_predictions(build.ids, 31 + i)
            )
            upload(base, token, body.read_bytes(), f"chart-{i}")

        browser.set_window_size(1280, 1600)
        browser.get(base + "/")
        rows = browser.find_elements(By.CSS_SELECTOR, "#board tbody tr[data-rank]")
        chart = browser.find_element(By.ID, "board-levels-chart")
        # one box per board entry, numbered by rank
        assert len(chart.find_elements(By.CSS_SELECTOR, "g.level")) == len(rows) >= 1
        assert chart.size["width"] > 300 and chart.size["height"] > 150
        shot = chart.screenshot_as_png
        assert shot[:8] == b"\x89PNG\r\n\x1a\n" and distinct_colours(shot) > 10
        page_shot = tmp_path / "leaderboard.png"
        assert browser.save_screenshot(str(page_shot)) and page_shot.stat().st_size > 10_000

        browser.get(base + "/rounds/2026q1")
        pr = browser.find_element(By.ID, "board-chart")
        # always_hit serves, so it has a point in both panels; exact_match serves
        # nothing on this slice or a little: one point per panel per serving report
        points = pr.find_elements(By.CSS_SELECTOR, "g.point")
        assert len(points) in (2, 4)
        assert len(pr.find_elements(By.CSS_SELECTOR, "polyline.ceiling")) == 1
        assert distinct_colours(pr.screenshot_as_png) > 10
        domain_charts = browser.find_elements(By.CSS_SELECTOR, "svg[id^='domain-fhr-']")
        assert len(domain_charts) == 2
        bars = domain_charts[0].find_elements(By.CSS_SELECTOR, "rect.bar")
        assert len(bars) == 2  # math and code
        assert distinct_colours(domain_charts[0].screenshot_as_png) > 10
        round_shot = tmp_path / "round.png"
        assert browser.save_screenshot(str(round_shot)) and round_shot.stat().st_size > 10_000
        logs = [e for e in browser.get_log("browser") if e["source"] in ("javascript", "security")]
        assert logs == []  # no CSP violation: the SVG uses presentation attributes only
