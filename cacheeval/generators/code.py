"""The ``code`` domain: coding requests whose cached answer is code.

Fixtures (``sources/code/*.json``, read in file-name order) are written by hand::

    {"tasks": {
        "<task>": {"lang": "python",                 # language of the answer
                   "answer": ["def f(x):", "    ..."], # the reference answer (str or lines)
                   "tests": ["assert f(1) == 2"],      # python: asserts the answer must pass
                   "identifiers": ["f"],               # optional: names the answer must carry
                   "node_tests": ["..."]}},            # optional, javascript: dev-only asserts
     "families": [
        {"key": "<item>",                  # the authored item: source "...json#<item>"
         "grounding": "where such traffic occurs",
         "requests": {"<request>": {"task": "<task>", "text": "..." | [lines],
                                    "lang": "postgresql"}},   # lang defaults to the task's
         "rows": [{"label": "ADVERSARIAL", "subcategory": "sort_direction",
                   "a": "<request>", "b": "<request>",        # any family's request
                   "construction": "adversarial_perturbation",
                   "rationale": "...", "grounding": "optional row-specific override"}]}]}

A request is a query plus the task that answers it; a row pairs two requests.
The expected answers are the tasks' answers and the verification payload
(checker :mod:`cacheeval.verify.code`) is derived from the pair:

* ``mode = "lang"`` when query_b does not accept the language of query_a's
  answer (:func:`cacheeval.verify.code.accepts`);
* else ``"tests"`` when both sides are Python with tests (method
  ``pytest_sandbox``);
* else ``"ast"`` (method ``ast_diff``).

Python sides always carry their tests so the checker can confirm each answer
against its own query. Every fixture problem is reported as ``path:LINE: what``.
Rows are shuffled with a fixed seed (the pipeline numbers them in that
order), so ids do not cluster by family.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..schema import LABELS
from ..support.layout import rng
from ..verify.code import LANGUAGES, accepts, detect_language, extract_code
from .common import DraftRow, FixtureError, fixture_files, fixture_source, read_fixture_json

DOMAIN = "code"
CONSTRUCTION_METHODS: tuple[str, ...] = (
    "curated",
    "template",
    "adversarial_perturbation",
    "paraphrase_rewrite",
)
_ROW_KEYS = frozenset({"label", "subcategory", "a", "b", "construction", "rationale", "grounding"})
_SUBCATEGORY = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True, slots=True)
class Task:
    """A reference answer and, for Python, the asserts it must pass."""

    key: str
    lang: str
    answer: str
    tests: str | None
    identifiers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CodeQuery:
    """One query and the task answering it; ``lang`` is the language it asks for."""

    key: str
    family: str
    path: Path
    text: str
    task: str
    lang: str


@dataclass(frozen=True, slots=True)
class RowSpec:
    """One authored row before it is expanded into a shard row."""

    family: str
    path: Path
    line: int
    label: str
    subcategory: str
    a: str
    b: str
    construction: str
    rationale: str
    grounding: str


class _Fixture:
    """One fixture file: parsed JSON plus a way to name the line of a key."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data, self.text = read_fixture_json(path)

    def line_of(self, key: str, start: int = 1) -> int:
        """Line of the first ``"key"`` at or after line ``start`` (``start`` when absent)."""
        needle = json.dumps(key, ensure_ascii=False)
        lines = self.text.splitlines()
        for i in range(max(start, 1) - 1, len(lines)):
            if needle in lines[i]:
                return i + 1
        return max(start, 1)

    def error(self, line: int, message: str) -> FixtureError:
        return FixtureError(f"{self.path}:{line}: {message}")


def _text(value: Any) -> str | None:
    """A fixture string: a str, or a list of lines joined with newlines."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value)
    return None


def _load_tasks(fx: _Fixture, tasks: dict[str, Task]) -> None:
    raw = fx.data.get("tasks")
    if not isinstance(raw, dict):
        raise fx.error(1, "top-level 'tasks' must be an object")
    for key, spec in raw.items():
        line = fx.line_of(key)
        if key in tasks:
            raise fx.error(line, f"task {key!r} is defined twice")
        if not isinstance(spec, dict):
            raise fx.error(line, f"task {key!r} must be an object")
        unknown = sorted(set(spec) - {"lang", "answer", "tests", "identifiers", "node_tests"})
        if unknown:
            raise fx.error(line, f"task {key!r} has unknown field(s) {', '.join(unknown)}")
        lang = spec.get("lang")
        if lang not in LANGUAGES:
            raise fx.error(
                line, f"task {key!r}: lang {lang!r} is not one of {', '.join(LANGUAGES)}"
            )
        answer = _text(spec.get("answer"))
        if not answer or not answer.strip():
            raise fx.error(
                line, f"task {key!r}: answer must be a non-empty string or list of lines"
            )
        seen = detect_language(extract_code(answer))
        if seen != lang:
            raise fx.error(line, f"task {key!r}: answer reads as {seen}, not {lang}")
        tests = None
        if "tests" in spec:
            tests = _text(spec["tests"])
            if lang != "python" or not tests or not tests.strip():
                raise fx.error(line, f"task {key!r}: tests must be non-empty and only on python")
        elif lang == "python":
            raise fx.error(line, f"task {key!r}: a python task needs tests")
        ids = spec.get("identifiers", [])
        if not isinstance(ids, list) or not all(isinstance(i, str) and i for i in ids):
            raise fx.error(line, f"task {key!r}: identifiers must be a list of names")
        tasks[key] = Task(key, lang, answer + "\n", tests, tuple(ids))


def _load_families(
    fx: _Fixture, tasks: dict[str, Task], requests: dict[str, CodeQuery], specs: list[RowSpec]
) -> None:
    raw = fx.data.get("families")
    if not isinstance(raw, list):
        raise fx.error(1, "top-level 'families' must be a list")
    for fam in raw:
        if not isinstance(fam, dict) or not isinstance(fam.get("key"), str):
            raise fx.error(1, "every family must be an object with a string 'key'")
        key = fam["key"]
        fline = fx.line_of(key)
        grounding = fam.get("grounding")
        if not isinstance(grounding, str) or not grounding.strip():
            raise fx.error(fline, f"family {key!r} needs a grounding")
        reqs = fam.get("requests")
        if not isinstance(reqs, dict) or not reqs:
            raise fx.error(fline, f"family {key!r} needs a non-empty 'requests' object")
        for rkey, rspec in reqs.items():
            rline = fx.line_of(rkey, fline)
            if rkey in requests:
                raise fx.error(rline, f"request {rkey!r} is defined twice")
            if not isinstance(rspec, dict):
                raise fx.error(rline, f"request {rkey!r} must be an object")
            task = rspec.get("task")
            if task not in tasks:
                raise fx.error(rline, f"request {rkey!r} names unknown task {task!r}")
            text = _text(rspec.get("text"))
            if not text or not text.strip():
                raise fx.error(rline, f"request {rkey!r} needs a text")
            lang = rspec.get("lang", tasks[task].lang)
            if lang not in LANGUAGES or not accepts(lang, tasks[task].lang):
                raise fx.error(
                    rline, f"request {rkey!r} asks for {lang!r}, its task is {tasks[task].lang}"
                )
            requests[rkey] = CodeQuery(rkey, key, fx.path, text, task, lang)
        rows = fam.get("rows")
        if not isinstance(rows, list) or not rows:
            raise fx.error(fline, f"family {key!r} needs a non-empty 'rows' list")
        line = fline
        for i, r in enumerate(rows):
            where = f"family {key!r} row {i + 1}"
            if not isinstance(r, dict):
                raise fx.error(line, f"{where} must be an object")
            line = fx.line_of(str(r.get("rationale", "")), line)
            unknown = sorted(set(r) - _ROW_KEYS)
            if unknown:
                raise fx.error(line, f"{where} has unknown field(s) {', '.join(unknown)}")
            for field in ("label", "subcategory", "a", "b", "construction", "rationale"):
                if not isinstance(r.get(field), str) or not r[field].strip():
                    raise fx.error(line, f"{where} needs a non-empty string {field!r}")
            if r["label"] not in LABELS:
                raise fx.error(line, f"{where}: unknown label {r['label']!r}")
            if r["construction"] not in CONSTRUCTION_METHODS:
                raise fx.error(line, f"{where}: unknown construction {r['construction']!r}")
            if not _SUBCATEGORY.match(r["subcategory"]):
                raise fx.error(line, f"{where}: subcategory {r['subcategory']!r} is not snake_case")
            row_grounding = r.get("grounding", grounding)
            if not isinstance(row_grounding, str) or not row_grounding.strip():
                raise fx.error(line, f"{where}: grounding must be a non-empty string")
            specs.append(
                RowSpec(
                    family=key,
                    path=fx.path,
                    line=line,
                    label=r["label"],
                    subcategory=r["subcategory"],
                    a=r["a"],
                    b=r["b"],
                    construction=r["construction"],
                    rationale=r["rationale"],
                    grounding=row_grounding,
                )
            )


def load_fixtures(
    fixture_dir: Path,
) -> tuple[dict[str, Task], dict[str, CodeQuery], list[RowSpec]]:
    """Read every ``fixture_dir/*.json`` (``sources/code/``): tasks first (a
    request may use a task of any file), then families."""
    fixtures = [_Fixture(p) for p in fixture_files(fixture_dir)]
    for fx in fixtures:
        if not isinstance(fx.data, dict):
            raise fx.error(1, "a fixture must be a JSON object with 'tasks' and 'families'")
    tasks: dict[str, Task] = {}
    for fx in fixtures:
        _load_tasks(fx, tasks)
    requests: dict[str, CodeQuery] = {}
    specs: list[RowSpec] = []
    for fx in fixtures:
        _load_families(fx, tasks, requests, specs)
    return tasks, requests, specs


def build_verification(
    req_a: CodeQuery, req_b: CodeQuery, task_a: Task, task_b: Task
) -> tuple[str, dict[str, Any]]:
    """``(verification_method, verification_payload)`` for a pair (see module doc)."""
    if not accepts(req_b.lang, task_a.lang):
        mode = "lang"
    elif (req_a.lang, req_b.lang) == ("python", "python") and task_a.tests and task_b.tests:
        mode = "tests"
    else:
        mode = "ast"
    payload: dict[str, Any] = {
        "kind": "code",
        "mode": mode,
        "lang_a": req_a.lang,
        "lang_b": req_b.lang,
    }
    if task_a.tests:
        payload["tests_a"] = task_a.tests
    if task_b.tests:
        payload["tests_b"] = task_b.tests
    if mode != "tests":
        if task_a.identifiers:
            payload["identifiers_a"] = list(task_a.identifiers)
        if task_b.identifiers:
            payload["identifiers_b"] = list(task_b.identifiers)
    return ("pytest_sandbox" if mode == "tests" else "ast_diff"), payload


def generate(fixture_dir: Path) -> list[DraftRow]:
    """The code rows of ``fixture_dir``: every authored row, checked, shuffled
    with a fixed seed.

    All fixture checks (unknown requests, identical sides, repeated pairs or
    rationales) run before any row is built.
    """
    tasks, requests, specs = load_fixtures(fixture_dir)
    seen_pairs: dict[frozenset[str], str] = {}
    seen_rationales: dict[str, str] = {}
    for s in specs:
        at = f"{s.path}:{s.line}"
        for side in (s.a, s.b):
            if side not in requests:
                raise FixtureError(f"{at}: family {s.family!r} names unknown request {side!r}")
        text_a, text_b = requests[s.a].text, requests[s.b].text
        if text_a == text_b:
            raise FixtureError(f"{at}: requests {s.a!r} and {s.b!r} have identical text")
        pair = frozenset((text_a, text_b))
        if pair in seen_pairs:
            raise FixtureError(f"{at}: pair {s.a!r}/{s.b!r} repeats a pair at {seen_pairs[pair]}")
        seen_pairs[pair] = at
        if s.rationale in seen_rationales:
            raise FixtureError(f"{at}: rationale repeats the one at {seen_rationales[s.rationale]}")
        seen_rationales[s.rationale] = at

    rows: list[DraftRow] = []
    for s in specs:
        req_a, req_b = requests[s.a], requests[s.b]
        task_a, task_b = tasks[req_a.task], tasks[req_b.task]
        method, payload = build_verification(req_a, req_b, task_a, task_b)
        rows.append(
            DraftRow(
                domain=DOMAIN,
                subcategory=s.subcategory,
                label=s.label,
                query_a=req_a.text,
                query_b=req_b.text,
                expected_answer_a=task_a.answer,
                expected_answer_b=task_b.answer,
                rationale=s.rationale,
                verification_method=method,
                verification_payload=payload,
                construction_method=s.construction,
                source=fixture_source(s.path, s.family),
                real_world_grounding=s.grounding,
            )
        )
    rng(DOMAIN, "row-order").shuffle(rows)
    return rows
