"""The leaderboard page in headless Chromium (Selenium): load it, upload a
predictions file through the form, see the new row, sort by FHR and F1.

Skipped, with the reason, only when Debian's chromium / chromium-driver are
not installed (``apt-get install -y chromium chromium-driver``)."""

from __future__ import annotations

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
    cli,
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
    token = add_submitter(db, "browser-team")
    preds = tmp_path / "exact_match.jsonl"
    done = cli("predict", "--bench", str(build.bench), "--split", "test",
               "--baseline", "exact_match", "--out", str(preds))  # fmt: skip
    assert done.returncode == 0, done.stderr
    with running_server(build, db, "--rate-limit", "20") as base:
        # Two entries already on the board, with different FHRs.
        for name, seed in (("seeded-a", 21), ("seeded-b", 22)):
            body = write_prediction_file(
                tmp_path / f"{name}.jsonl", random_predictions(build.ids, seed)
            )
            upload(base, token, body.read_bytes(), name)

        browser.get(base + "/")
        assert browser.title == "CacheEval leaderboard"
        assert sorted(names(browser)) == ["seeded-a", "seeded-b"]

        browser.find_element(By.ID, "token").send_keys(token)
        browser.find_element(By.ID, "file").send_keys(str(preds.resolve()))
        browser.find_element(By.ID, "name").send_keys("from the browser")
        browser.find_element(By.ID, "training-data").send_keys("nothing, it is a baseline")
        browser.find_element(By.ID, "upload-button").click()
        WebDriverWait(browser, 20).until(lambda d: "from the browser" in names(d))

        status = browser.find_element(By.ID, "upload-status").text
        assert status.startswith("Submission #3 graded: FHR ")
        row = browser.find_element(By.CSS_SELECTOR, '#board tbody tr[data-id="3"]')
        assert "new" in (row.get_attribute("class") or "")
        assert "nothing, it is a baseline" in row.text
        assert len(names(browser)) == 3

        # Server order is FHR ascending; clicking FHR flips it, clicking again restores it.
        assert click_sort(browser, "fhr") == "descending"
        fhr = column(browser, "fhr")
        assert fhr == sorted(fhr, reverse=True) and fhr[0] > fhr[-1]
        assert click_sort(browser, "fhr") == "ascending"
        assert column(browser, "fhr") == sorted(fhr)
        # Rates where higher is better sort descending first.
        assert click_sort(browser, "f1") == "descending"
        f1 = column(browser, "f1")
        assert f1 == sorted(f1, reverse=True)

        # A bad token is refused with the server's message, and nothing is added.
        token_box = browser.find_element(By.ID, "token")
        token_box.clear()
        token_box.send_keys("cet_" + "z" * 43)
        browser.find_element(By.ID, "file").send_keys(str(preds.resolve()))
        browser.find_element(By.ID, "upload-button").click()
        WebDriverWait(browser, 20).until(
            lambda d: d.find_element(By.ID, "upload-status").text.startswith("Rejected")
        )
        assert "401" in browser.find_element(By.ID, "upload-status").text
        assert len(names(browser)) == 3

        # The name links to the per-domain breakdown.
        browser.find_element(By.LINK_TEXT, "from the browser").click()
        WebDriverWait(browser, 20).until(lambda d: d.current_url.endswith("/submissions/3"))
        domains = browser.find_elements(By.CSS_SELECTOR, "#per-domain tbody th")
        assert sorted(d.text for d in domains) == sorted({r.domain for r in build.rows})
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


def test_charts_render_under_the_csp(
    browser: webdriver.Chrome, build: MiniBuild, tmp_path: Path
) -> None:
    db = tmp_path / "board.sqlite"
    token = add_submitter(db, "chart-team")
    with running_server(build, db, "--rate-limit", "20") as base:
        for name, seed in (("chart-a", 31), ("chart-b", 32), ("chart-c", 33)):
            body = write_prediction_file(
                tmp_path / f"{name}.jsonl", random_predictions(build.ids, seed)
            )
            upload(base, token, body.read_bytes(), name)

        browser.set_window_size(1280, 1600)
        browser.get(base + "/")
        chart = browser.find_element(By.ID, "board-chart")
        # one numbered point per submission in each of the two panels, the ceiling curve
        assert len(chart.find_elements(By.CSS_SELECTOR, "g.point")) == 6
        assert len(chart.find_elements(By.CSS_SELECTOR, "polyline.ceiling")) == 1
        assert chart.size["width"] > 300 and chart.size["height"] > 200
        shot = chart.screenshot_as_png
        assert shot[:8] == b"\x89PNG\r\n\x1a\n" and distinct_colours(shot) > 10
        page_shot = tmp_path / "leaderboard.png"
        assert browser.save_screenshot(str(page_shot)) and page_shot.stat().st_size > 10_000

        browser.get(base + "/submissions/1")
        fhr_chart = browser.find_element(By.ID, "domain-fhr-chart")
        bars = fhr_chart.find_elements(By.CSS_SELECTOR, "rect.bar")
        domains = browser.find_elements(By.CSS_SELECTOR, "#per-domain tbody th")
        assert 0 < len(bars) <= len(domains)
        assert fhr_chart.size["width"] > 300
        assert distinct_colours(fhr_chart.screenshot_as_png) > 10
        logs = [e for e in browser.get_log("browser") if e["source"] in ("javascript", "security")]
        assert logs == []  # no CSP violation: the SVG uses presentation attributes only
