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
