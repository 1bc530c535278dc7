"""The ``cacheeval view`` page in headless Chromium (Selenium), opened from
disk: 2,000 rows x 5 caches, filtered by domain, label, outcome per cache,
what differs and "caches disagree", sorted by score, paged; a row opened in
full; a summary count that opens its pairs; and row text that tries to
inject markup.

Skipped, with the reason, when Debian's chromium / chromium-driver are not
installed (the leaderboard's browser test decides; its ``browser`` fixture
is reused)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By  # noqa: E402  (after the skip above)
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402

from cacheeval.cli import main  # noqa: E402
from cacheeval.reporting.viewer import outcome  # noqa: E402
from cacheeval.results.predictions import Prediction, read_predictions  # noqa: E402
from cacheeval.schema import Row, Verdict  # noqa: E402
from tests.conftest import make_row  # noqa: E402
from tests.server.test_browser import browser  # noqa: F401  (the fixture)
from tests.test_view import write_bench, write_case, write_preds  # noqa: E402

PAGE = 100


class Case:
    """The 2,000 x 5 page and what Python says its counts must be."""

    def __init__(self, tmp: Path) -> None:
        bench, files, self.rows = write_case(tmp)
        self.out = tmp / "view.html"
        assert main(["view", *map(str, files), "--bench", str(bench), "--out", str(self.out)]) == 0
        self.preds: list[dict[str, Prediction]] = []
        for f in files:
            _, preds = read_predictions(f)
            self.preds.append({p.id: p for p in preds})

    def count(self, keep: Callable[[Row], bool]) -> int:
        return sum(1 for r in self.rows if keep(r))

    def outcome(self, cache: int, row: Row) -> str | None:
        return outcome(row.binary_label, self.preds[cache][row.id])

    def served(self, cache: int, row: Row) -> bool:
        p = self.preds[cache][row.id]
        return p.is_hit and p.error is None


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> Case:
    return Case(tmp_path_factory.mktemp("view"))


def status(driver: WebDriver) -> dict[str, int]:
    data: dict[str, str] = driver.execute_script(
        "const d = document.getElementById('count').dataset;"
        "return {matches: d.matches, page: d.page, pages: d.pages};"
    )
    return {k: int(v) for k, v in data.items()}


def shown(driver: WebDriver) -> list[dict[str, Any]]:
    """The rows on the page: index, id and per cache (decision, score, outcome)."""
    rows: list[dict[str, Any]] = driver.execute_script(
        "return Array.from(document.querySelectorAll('#pair-table tbody tr.pair')).map(tr => ({"
        "i: Number(tr.dataset.i), id: tr.dataset.id, cells: Array.from("
        "tr.querySelectorAll('td.dec')).map(td => [td.dataset.dec, td.dataset.score, "
        "td.dataset.outcome])}));"
    )
    return rows


def choose(driver: WebDriver, select_id: str, text: str) -> None:
    Select(driver.find_element(By.ID, select_id)).select_by_visible_text(text)


def click(driver: WebDriver, element_id: str) -> None:
    driver.find_element(By.ID, element_id).click()


def severe_logs(driver: WebDriver) -> list[Any]:
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def test_filter_sort_page_and_disagree_on_2000_rows_by_5_caches(
    browser: WebDriver,  # noqa: F811
    case: Case,
) -> None:
    browser.get(case.out.resolve().as_uri())
    assert severe_logs(browser) == []
    assert status(browser) == {"matches": 2000, "page": 1, "pages": 20}
    first = shown(browser)
    assert [r["i"] for r in first] == list(range(PAGE))
    assert all(len(r["cells"]) == 5 for r in first)
    titles = browser.execute_script(
        "return Array.from(document.querySelectorAll('#pair-table td.dec')).map(td => td.title);"
    )
    title = re.compile(r".+: (false hit|missed hit|correct|error); tier \w+")
    assert len(titles) == 5 * PAGE and all(title.fullmatch(t) for t in titles)

    # Paging.
    click(browser, "next")
    assert status(browser)["page"] == 2 and shown(browser)[0]["i"] == PAGE
    click(browser, "last")
    assert status(browser)["page"] == 20 and shown(browser)[-1]["i"] == 1999
    assert browser.find_element(By.ID, "next").get_attribute("disabled") is not None
    click(browser, "first")
    assert status(browser)["page"] == 1

    # Domain and label.
    choose(browser, "f-domain", "math")
    n_math = case.count(lambda r: r.domain == "math")
    assert 0 < n_math < 2000 and status(browser)["matches"] == n_math
    choose(browser, "f-label", "ADVERSARIAL")
    want = case.count(lambda r: r.domain == "math" and r.label == "ADVERSARIAL")
    assert status(browser)["matches"] == want
    ids = {r.id for r in case.rows if r.domain == "math" and r.label == "ADVERSARIAL"}
    assert {r["id"] for r in shown(browser)} <= ids
    click(browser, "f-reset")
    assert status(browser)["matches"] == 2000

    # One cache's false hits, sorted by its score, paged.
    choose(browser, "f-cache", "embedding@0.80")  # cache 2
    choose(browser, "f-outcome", "false hit")
    false_hits = case.count(lambda r: case.outcome(2, r) == "false hit")
    assert false_hits > PAGE and status(browser)["matches"] == false_hits
    assert all(r["cells"][2][2] == "false hit" for r in shown(browser))
    choose(browser, "f-sort", "score, highest first")
    page1 = [float(r["cells"][2][1]) for r in shown(browser)]
    assert page1 == sorted(page1, reverse=True) and len(page1) == PAGE
    top = max(
        case.preds[2][r.id].score or 0 for r in case.rows if case.outcome(2, r) == "false hit"
    )
    assert page1[0] == pytest.approx(top, abs=1e-4)
    click(browser, "next")
    page2 = [float(r["cells"][2][1]) for r in shown(browser)]
    assert page2 == sorted(page2, reverse=True) and page2[0] <= page1[-1]
    choose(browser, "f-sort", "score, lowest first")
    low = [float(r["cells"][2][1]) for r in shown(browser)]
    assert low == sorted(low) and status(browser)["page"] == 1

    # Any cache's errors.
    click(browser, "f-reset")
    choose(browser, "f-outcome", "error")
    errors = case.count(lambda r: any(case.outcome(c, r) == "error" for c in range(5)))
    assert errors > 0 and status(browser)["matches"] == errors

    # Caches disagree.
    click(browser, "f-reset")
    click(browser, "f-disagree")
    split = case.count(lambda r: 0 < sum(case.served(c, r) for c in range(5)) < 5)
    assert 0 < split < 2000 and status(browser)["matches"] == split
    for r in shown(browser):
        decisions = {cell[0] == "H" for cell in r["cells"]}
        assert decisions == {True, False}
    all_served = case.count(lambda r: all(case.served(c, r) for c in range(5)))
    assert all_served > 0  # rows where every cache serves are not shown
    choose(browser, "f-domain", "code")
    assert status(browser)["matches"] == case.count(
        lambda r: r.domain == "code" and 0 < sum(case.served(c, r) for c in range(5)) < 5
    )
    assert severe_logs(browser) == []


def test_a_summary_count_opens_its_pairs_and_a_row_opens_in_full(
    browser: WebDriver,  # noqa: F811
    case: Case,
) -> None:
    browser.get(case.out.resolve().as_uri())
    link = browser.find_element(
        By.CSS_SELECTOR, '#summary a.go[data-cache="3"][data-outcome="false hit"]'
    )
    n = int(link.text)
    link.click()
    assert Select(browser.find_element(By.ID, "f-cache")).first_selected_option.text == (
        "embedding@0.90"
    )
    assert (
        status(browser)["matches"] == n == case.count(lambda r: case.outcome(3, r) == "false hit")
    )
    # A group count: the false hits of one kind.
    group = browser.find_elements(By.CSS_SELECTOR, '#summary table.groups a.go[data-cache="3"]')[0]
    n_group = int(group.text)
    group.click()
    assert status(browser)["matches"] == n_group
    kind = Select(browser.find_element(By.ID, "f-kind")).first_selected_option.text
    assert kind != "anything"

    row = browser.find_element(By.CSS_SELECTOR, "#pair-table tbody tr.pair")
    i = int(row.get_attribute("data-i") or -1)
    row.click()
    detail = browser.find_element(By.CSS_SELECTOR, "#pair-table tbody tr.detail")
    text = detail.text
    want = case.rows[i]
    assert want.query_a in text and want.query_b in text
    assert kind in text  # what differs
    assert len(detail.find_elements(By.CSS_SELECTOR, "table.decisions tr[data-cache]")) == 5
    row.click()
    assert browser.find_elements(By.CSS_SELECTOR, "#pair-table tbody tr.detail") == []


INJECT = "</script><img src=x onerror=\"document.title='pwned'\"><b>bold</b>"


def test_row_text_is_shown_as_text(browser: WebDriver, tmp_path: Path) -> None:  # noqa: F811
    rows = [
        make_row(
            1,
            "UNRELATED",
            query_a=INJECT,
            query_b="What is 2+3?",
            system_prompt_a=INJECT,
            system_prompt_b="Be brief.",
            context_b=({"role": "user", "content": INJECT},),
            rationale=INJECT,
            split="dev",
        )
    ]
    bench = write_bench(tmp_path / "bench.jsonl", rows)
    preds = write_preds(
        tmp_path / "p.jsonl",
        [Prediction(rows[0].id, True, 0.9, 0.9, "embedding", 1.0)],
        name=INJECT,
    )
    out = tmp_path / "v.html"
    assert main(["view", str(preds), "--bench", str(bench), "--out", str(out)]) == 0
    browser.get(out.resolve().as_uri())
    browser.find_element(By.CSS_SELECTOR, "#pair-table tbody tr.pair").click()
    detail = browser.find_element(By.CSS_SELECTOR, "#pair-table tbody tr.detail").text
    assert detail.count(INJECT) >= 4  # both queries' sides, system prompt, turn, rationale
    counts = browser.execute_script(
        "return [document.images.length, document.querySelectorAll('main b').length,"
        " document.title];"
    )
    # <b> elements are the page's own (summary verdicts, query side letters), none from rows.
    assert counts[0] == 0 and counts[2] != "pwned"
    texts = browser.execute_script(
        "return Array.from(document.querySelectorAll('main b')).map(b => b.textContent);"
    )
    assert "bold" not in texts


def test_the_address_sets_and_keeps_the_filters_on_stress_rows(
    browser: WebDriver,  # noqa: F811
    tmp_path: Path,
) -> None:
    """A report's link (``#cache=NAME&sub=identity/&outcome=false hit``) opens
    exactly those pairs; a family option covers its kinds; changing a filter
    rewrites the address; a name the page lacks is said, the rest applies.
    Hand-counted on kind_rows (serve_marked): false hits on identity/city row 3,
    context rows 7 and 8 and the policy row 9; one missed hit, noise row 2."""
    from cacheeval.benches.stress_report import view_link
    from cacheeval.reporting.viewer import CacheRun
    from cacheeval.reporting.viewer_page import page_for
    from cacheeval.results.predictions import make_header
    from cacheeval.run.harness import predict
    from tests.test_report_kinds import kind_rows, serve_marked

    rows = kind_rows()
    runs = [
        CacheRun(name, name, make_header(cache_name=name, created="-"),
                 {p.id: p for p in predict(cache, rows)})
        for name, cache in (("marked cache", serve_marked),
                            ("none", lambda p: Verdict(is_hit=False, score=0.0)))
    ]  # fmt: skip
    page = tmp_path / "stress.html"
    page.write_text(page_for(rows, runs, title="t", source={"bench": "b", "n_rows": len(rows)}))
    uri = page.resolve().as_uri()

    def sub_options() -> list[str]:
        return [
            o.get_attribute("value") for o in Select(browser.find_element(By.ID, "f-sub")).options
        ]

    browser.get(uri + "#" + view_link("", "marked cache", "context/", "fhr").split("#", 1)[1])
    assert severe_logs(browser) == []
    assert sub_options() == ["", "context/", "context/system_prompt_other", "identity/",
                             "identity/city", "noise/", "noise/typo_drop", "policy",
                             rows[10].subcategory]  # fmt: skip
    assert status(browser)["matches"] == 2
    assert {r["id"] for r in shown(browser)} == {rows[7].id, rows[8].id}
    assert (
        Select(browser.find_element(By.ID, "f-cache")).first_selected_option.text == "marked cache"
    )
    assert browser.find_element(By.ID, "link-note").get_attribute("hidden") is not None

    # A filter changed on the page is written to the address (a link to this view).
    choose(browser, "f-sub", "identity/city")
    assert status(browser)["matches"] == 1 and shown(browser)[0]["id"] == rows[3].id
    params = browser.execute_script(
        "return Object.fromEntries(new URLSearchParams(location.hash.slice(1)));"
    )
    assert params == {"sub": "identity/city", "cache": "marked cache", "outcome": "false hit"}
    choose(browser, "f-outcome", "missed hit")
    assert status(browser)["matches"] == 0
    choose(browser, "f-sub", "noise/ (every kind)")
    assert status(browser)["matches"] == 1 and shown(browser)[0]["id"] == rows[2].id

    # A new address in the same tab applies; an unknown cache is named, the rest applies.
    browser.execute_script("location.hash = 'cache=gone&sub=policy&outcome=false%20hit';")
    assert status(browser)["matches"] == 1 and shown(browser)[0]["id"] == rows[9].id
    note = browser.find_element(By.ID, "link-note")
    assert note.get_attribute("hidden") is None and "cache=gone" in note.text
    click(browser, "f-reset")
    assert status(browser)["matches"] == len(rows)
    assert browser.execute_script("return location.hash;") == ""
