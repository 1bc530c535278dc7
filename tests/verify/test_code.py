"""The code checker: language recognition, normalisation and the HIT/MISS decision."""

from __future__ import annotations

from typing import Any

import pytest

from cacheeval.schema import HIT, MISS, Row
from cacheeval.verify import check_row
from cacheeval.verify import code as code_checker
from cacheeval.verify.code import (
    accepts,
    detect_language,
    extract_code,
    normalize_code,
)
from cacheeval.verify.sandbox import SandboxResult

REV = "def reverse_string(s):\n    return s[::-1]\n"
REV_ALT = "def reverse_string(s: str) -> str:\n    return ''.join(reversed(s))\n"
REV_TESTS = "assert reverse_string('abc') == 'cba'\nassert reverse_string('') == ''\n"
FLIP = "def flip_text(s):\n    return s[::-1]\n"
FLIP_TESTS = "assert flip_text('ab') == 'ba'\n"
JS_ASC = "function sortNums(xs) {\n  return [...xs].sort((a, b) => a - b);\n}\n"
JS_ASC_LAYOUT = "function sortNums(xs){ return [...xs].sort((a,b)=>a-b) }\n"
JS_DESC = "function sortNums(xs) {\n  return [...xs].sort((a, b) => b - a);\n}\n"


def make_row(
    answer_a: str,
    answer_b: str,
    payload: dict[str, Any],
    method: str = "pytest_sandbox",
    label: str = "PARA_SAFE",
) -> Row:
    binary = HIT if label in ("EQUIV", "PARA_SAFE") else MISS
    return Row(
        id="cb-code-9999",
        domain="code",
        subcategory="test",
        label=label,
        binary_label=binary,
        difficulty="easy",
        query_a="query a",
        query_b="query b",
        context_a=None,
        context_b=None,
        system_prompt_a=None,
        system_prompt_b=None,
        tools_a=None,
        tools_b=None,
        expected_answer_a=answer_a,
        expected_answer_b=answer_b,
        rationale="test",
        verification_method=method,
        verification_payload={"kind": "code", **payload},
        construction_method="curated",
        source="tests",
        real_world_grounding="tests",
        split="train",
    )


def suite_payload(tests_a: str, tests_b: str) -> dict[str, Any]:
    return {
        "mode": "tests",
        "lang_a": "python",
        "lang_b": "python",
        "tests_a": tests_a,
        "tests_b": tests_b,
    }


# --- language recognition -----------------------------------------------------


@pytest.mark.parametrize(
    ("code", "lang"),
    [
        (REV, "python"),
        ("import re\n\nPAT = re.compile(r'x')\n", "python"),
        (JS_ASC, "javascript"),
        ("const twice = (x) => 2 * x;\n", "javascript"),
        ("fn main() {\n    let v = vec![1];\n}\n", "rust"),
        ("func add(a, b int) int {\n\treturn a + b\n}\n", "go"),
        ("find . -name '*.py' | wc -l", "bash"),
        ("SELECT id FROM t WHERE x > 1;", "sql"),
        ("INSERT INTO t (a) VALUES ($1) ON CONFLICT (a) DO NOTHING;", "postgresql"),
        ("INSERT INTO t (a) VALUES (?) ON DUPLICATE KEY UPDATE a = a;", "mysql"),
        ("SELECT GROUP_CONCAT(a) FROM t WHERE b ILIKE 'x';", None),  # mixes dialects
        ("Sure! Here is how you do that.", None),
    ],
)
def test_detect_language(code: str, lang: str | None) -> None:
    assert detect_language(code) == lang


def test_accepts_sql_dialects() -> None:
    assert accepts("postgresql", "sql")  # portable SQL serves a Postgres request
    assert accepts("sql", "mysql")  # a generic request takes any dialect
    assert not accepts("mysql", "postgresql")
    assert not accepts("javascript", "python")
    assert not accepts("python", None)


def test_extract_code_takes_the_fenced_block() -> None:
    answer = "Here you go:\n\n```python\n" + REV + "```\nHope it helps."
    assert extract_code(answer) == REV.rstrip("\n")
    assert extract_code(REV) == REV.rstrip("\n")


def test_normalize_code_ignores_layout_but_not_meaning() -> None:
    assert normalize_code(JS_ASC, "javascript") == normalize_code(JS_ASC_LAYOUT, "javascript")
    assert normalize_code(JS_ASC, "javascript") != normalize_code(JS_DESC, "javascript")
    py_a = "def f(x):\n    return x + 1\n"
    py_b = "def f( x ):\n\n    # add one\n    return (x+1)\n"
    assert normalize_code(py_a, "python") == normalize_code(py_b, "python")
    assert normalize_code(py_a, "python") != normalize_code(py_a.replace("x", "y"), "python")
    assert normalize_code("select a from t;", "sql") == normalize_code("SELECT a\nFROM t", "sql")
    assert normalize_code("SELECT 'A' FROM t", "sql") != normalize_code("SELECT 'a' FROM t", "sql")


# --- tests mode -----------------------------------------------------------------


def test_tests_mode_hit_when_cached_answer_passes_query_b_tests() -> None:
    row = make_row(REV, REV_ALT, suite_payload(REV_TESTS, REV_TESTS))
    c = check_row(row)
    assert c.binary == HIT, c.detail


def test_tests_mode_miss_on_identifier_rename() -> None:
    row = make_row(REV, FLIP, suite_payload(REV_TESTS, FLIP_TESTS), label="ADVERSARIAL")
    c = check_row(row)
    assert c.binary == MISS
    assert "NameError" in c.detail


def test_tests_mode_miss_on_wrong_behaviour() -> None:
    upper = "def shout(s):\n    return s.upper()\n"
    lower = "def shout(s):\n    return s.lower()\n"
    row = make_row(
        upper, lower, suite_payload("assert shout('a') == 'A'\n", "assert shout('A') == 'a'\n")
    )
    assert check_row(row).binary == MISS


def test_inconsistent_payload_is_undecided() -> None:
    # answer_b fails its own tests
    row = make_row(REV, REV, suite_payload(REV_TESTS, "assert reverse_string('ab') == 'ab'\n"))
    c = check_row(row)
    assert c.binary is None and "expected_answer_b fails its own tests" in c.detail
    # answer_a fails its own tests
    row = make_row(FLIP, REV, suite_payload(REV_TESTS, REV_TESTS))
    assert check_row(row).binary is None
    # tests mode without tests, wrong method, unknown mode or language
    assert (
        check_row(
            make_row(REV, REV, {"mode": "tests", "lang_a": "python", "lang_b": "python"})
        ).binary
        is None
    )
    assert (
        check_row(make_row(REV, REV, suite_payload(REV_TESTS, REV_TESTS), method="ast_diff")).binary
        is None
    )
    assert (
        check_row(
            make_row(REV, REV, {"mode": "fuzz", "lang_a": "python", "lang_b": "python"})
        ).binary
        is None
    )
    bad_lang = {**suite_payload(REV_TESTS, REV_TESTS), "lang_b": "cobol"}
    assert check_row(make_row(REV, REV, bad_lang)).binary is None
    # an answer that is not in the language its query asks for
    row = make_row(
        JS_ASC,
        JS_ASC,
        {"mode": "ast", "lang_a": "python", "lang_b": "javascript"},
        method="ast_diff",
    )
    assert check_row(row).binary is None


def test_timeout_is_undecided_not_miss(monkeypatch: pytest.MonkeyPatch) -> None:
    def fake_run(jobs: list[tuple[str, str]]) -> list[SandboxResult]:
        # own tests pass; the cross run (last job) times out
        return [SandboxResult(True, False, 0, "")] * (len(jobs) - 1) + [
            SandboxResult(False, True, -9, "killed")
        ]

    monkeypatch.setattr(code_checker, "run_tests_cached", fake_run)
    row = make_row(REV, REV_ALT, suite_payload(REV_TESTS, REV_TESTS))
    c = check_row(row)
    assert c.binary is None and "timed out" in c.detail


# --- lang and ast modes ------------------------------------------------------------


def test_lang_mode_misses_across_languages() -> None:
    payload = {"mode": "lang", "lang_a": "python", "lang_b": "javascript", "tests_a": REV_TESTS}
    row = make_row(REV, JS_ASC, payload, method="ast_diff", label="ADVERSARIAL")
    c = check_row(row)
    assert c.binary == MISS and "javascript" in c.detail


def test_lang_mode_misses_across_sql_dialects() -> None:
    pg = "INSERT INTO u (e) VALUES ($1) ON CONFLICT (e) DO NOTHING;"
    my = "INSERT IGNORE INTO u (e) VALUES (?) ON DUPLICATE KEY UPDATE e = e;"
    row = make_row(
        pg, my, {"mode": "lang", "lang_a": "postgresql", "lang_b": "mysql"}, method="ast_diff"
    )
    assert check_row(row).binary == MISS


def test_lang_mode_with_a_compatible_language_is_undecided() -> None:
    row = make_row(
        JS_ASC,
        JS_ASC,
        {"mode": "lang", "lang_a": "javascript", "lang_b": "javascript"},
        method="ast_diff",
    )
    assert check_row(row).binary is None


def test_ast_mode_hit_on_layout_only_difference() -> None:
    payload = {
        "mode": "ast",
        "lang_a": "javascript",
        "lang_b": "javascript",
        "identifiers_a": ["sortNums"],
        "identifiers_b": ["sortNums"],
    }
    assert check_row(make_row(JS_ASC, JS_ASC_LAYOUT, payload, method="ast_diff")).binary == HIT


def test_ast_mode_miss_on_flipped_comparator() -> None:
    payload = {"mode": "ast", "lang_a": "javascript", "lang_b": "javascript"}
    row = make_row(JS_ASC, JS_DESC, payload, method="ast_diff", label="ADVERSARIAL")
    assert check_row(row).binary == MISS


def test_ast_mode_identifiers_must_be_in_own_answer() -> None:
    payload = {
        "mode": "ast",
        "lang_a": "javascript",
        "lang_b": "javascript",
        "identifiers_a": ["sortPrices"],
    }
    c = check_row(make_row(JS_ASC, JS_ASC, payload, method="ast_diff"))
    assert c.binary is None and "sortPrices" in c.detail


def test_portable_sql_serves_a_postgres_request() -> None:
    q = "SELECT id FROM payments WHERE amount BETWEEN 100 AND 500;"
    payload = {"mode": "ast", "lang_a": "sql", "lang_b": "postgresql"}
    assert check_row(make_row(q, q.lower(), payload, method="ast_diff")).binary == HIT
