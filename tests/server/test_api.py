"""The grading API in-process (Starlette TestClient): stored grades that
agree with ``cacheeval score``, the Ladder's public feedback, every bad input
refused with its 4xx and no change to the database, the rate limit,
owner-only results, the board's order (level, reference rows), closed rounds,
escaping, the manifest check and regrading."""

from __future__ import annotations

import dataclasses
import json
import re
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("multipart")

from starlette.testclient import TestClient  # noqa: E402

from cacheeval import cli as cacheeval_cli  # noqa: E402
from cacheeval.schema import LABELS, SUBSCORES, subscore_of  # noqa: E402
from cacheeval.server.app import ServerConfig, create_app  # noqa: E402
from cacheeval.server.grading import (  # noqa: E402
    Halves,
    SetupError,
    grade,
    halves_of,
    load_references,
    load_test_set,
    parse_upload,
)
from cacheeval.server.ladder import LEVELS, level_of, subscore_band  # noqa: E402
from cacheeval.server.ratelimit import Decision, RateLimit  # noqa: E402
from cacheeval.server.store import Store  # noqa: E402
from cacheeval.server.tokens import bearer_token  # noqa: E402
from cacheeval.support.jsonio import sha256_bytes, write_json  # noqa: E402
from tests.server.conftest import (  # noqa: E402
    FEEDBACK_KEYS,
    MiniBuild,
    count_submissions,
    db_snapshot,
    random_predictions,
    write_build,
    write_prediction_file,
)

T0 = 1_800_000_000.0


class Clock:
    """A settable clock for the rate-limit window."""

    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@dataclass
class Env:
    client: TestClient
    db: Path
    store: Store
    clock: Clock
    tokens: dict[str, str]
    halves: Halves

    def auth(self, who: str = "alice") -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[who]}"}


def make_env(
    tmp_path: Path,
    build: MiniBuild,
    *,
    limit: int = 50,
    window_h: float = 24.0,
    max_body: int = 1 << 20,
    references: tuple[Any, ...] = (),
    rounds_dir: Path | None = None,
    refusals: int | None = None,
) -> Iterator[Env]:
    db = tmp_path / "board.sqlite"
    store = Store(db)
    tokens = {
        who: store.add_submitter(who, "2026-01-01T00:00:00Z") for who in ("alice", "bob", "carol")
    }
    clock = Clock()
    test = load_test_set(build.bench, build.labels, build.manifest)
    halves = halves_of(test, "test-salt")
    config = ServerConfig(
        store=store,
        test=test,
        rate_limit=RateLimit(limit, window_h * 3600),
        **({} if refusals is None else {"refusal_limit": RateLimit(refusals, 3600.0)}),
        max_body_bytes=max_body,
        clock=clock,
        halves=halves,
        references=references,
        rounds_dir=rounds_dir,
    )
    with TestClient(create_app(config)) as client:
        yield Env(client, db, store, clock, tokens, halves)


@pytest.fixture
def env(tmp_path: Path, build: MiniBuild) -> Iterator[Env]:
    yield from make_env(tmp_path, build)


def run_cli(*args: str) -> int:
    return cacheeval_cli.main(list(args))


def score_json(
    build: MiniBuild, preds: Path, out_dir: Path, labels: Path | None = None
) -> dict[str, Any]:
    """The JSON report of ``cacheeval score`` on the same files."""
    assert (
        run_cli(
            "score",
            "--bench", str(build.bench),
            "--labels", str(labels or build.labels),
            "--predictions", str(preds),
            "--split", "test",
            "--out", str(out_dir / "report.md"),
            "--json", str(out_dir / "report.json"),
        )
        == 0
    )  # fmt: skip
    data: dict[str, Any] = json.loads((out_dir / "report.json").read_text())
    return data


def assert_grade_agrees(
    scores: dict[str, Any], build: MiniBuild, preds: Path, halves: Halves, report: dict[str, Any]
) -> None:
    """The stored grade: per-half confusion counts recomputed here row by row,
    their sum equal to `cacheeval score`'s confusion, levels from the counts,
    the label-free facts equal to the report's."""
    decided = {
        json.loads(line)["id"]: json.loads(line)["is_hit"]
        for line in preds.read_text().splitlines()
        if "is_hit" in line
    }
    total = dict.fromkeys(("tp", "fp", "fn", "tn"), 0)
    per_sub: dict[str, dict[str, int]] = {}
    for half, ids in (("public_half", halves.public), ("private_half", halves.private)):
        want = dict.fromkeys(("tp", "fp", "fn", "tn"), 0)
        for r in build.rows:
            if r.id in ids:
                hit, y = decided[r.id], r.binary_label == "HIT"
                key = ("tp" if y else "fp") if hit else ("fn" if y else "tn")
                want[key] += 1
        got = scores[half]
        assert {k: got[k] for k in want} == want, half
        assert got["n"] == len(ids)
        assert got["level"] == level_of(**want).rank
        for k in total:
            total[k] += want[k]
        # Per sub-score: counts over that skill's rows of the half, band from the counts.
        for sub in SUBSCORES:
            mine = dict.fromkeys(("tp", "fp", "fn", "tn"), 0)
            for r in build.rows:
                if r.id in ids and subscore_of(r) == sub:
                    hit, y = decided[r.id], r.binary_label == "HIT"
                    mine[("tp" if y else "fp") if hit else ("fn" if y else "tn")] += 1
            cell = got["subscores"][sub]
            assert {k: cell[k] for k in mine} == mine, (half, sub)
            assert cell["band"] == subscore_band(sub, **mine)
            per_sub[sub] = {k: per_sub.get(sub, {}).get(k, 0) + mine[k] for k in mine}
    assert total == report["confusion"]
    by_key = {s["key"]: s["confusion"] for s in report["per_subscore"]}
    assert {s: c for s, c in per_sub.items() if sum(c.values())} == by_key
    assert scores["n_rows"] == report["provenance"]["n_rows"]
    assert scores["latency_ms"]["p95"] == report["latency"]["p95_ms"]
    assert scores["errors"]["n_errors"] == report["errors"]["n_errors"]


# --- a good submission is scored exactly as `cacheeval score` scores it ----------------------


@pytest.mark.parametrize("source", ["exact_match", "always_hit", "random"])
def test_good_submission_scores_equal_cacheeval_score(
    env: Env, build: MiniBuild, tmp_path: Path, source: str
) -> None:
    preds = tmp_path / "predictions.jsonl"
    if source == "random":
        write_prediction_file(preds, random_predictions(build.ids, 7))
    else:
        assert (
            run_cli(
                "predict", "--bench", str(build.bench), "--split", "test",
                "--baseline", source, "--out", str(preds),
            )
            == 0
        )  # fmt: skip
    report = score_json(build, preds, tmp_path)
    body = preds.read_bytes()
    resp = env.client.post("/api/submissions", content=body, headers=env.auth())
    assert resp.status_code == 201, resp.text
    answer = resp.json()
    assert answer["name"] == ("random" if source == "random" else source)  # header cache_name
    assert answer["sha256"] == sha256_bytes(body)
    assert answer["n_predictions"] == len(build.rows)
    # Stored: the exact bytes, their sha256, and a grade that agrees with `cacheeval score`.
    sub = env.store.submission(answer["id"])
    assert sub is not None
    assert_grade_agrees(sub.scores, build, preds, env.halves, report)
    assert env.store.body(answer["id"]) == body
    assert sub.body_sha256 == sha256_bytes(body) and sub.body_format == "jsonl"
    # Public: the Ladder's answer only - a first submission's level is released.
    fb = answer["feedback"]
    assert list(fb) == FEEDBACK_KEYS
    assert fb["released"] is True and fb["submission_number"] == 1
    assert fb["level"] == fb["best_level"]
    assert fb["level"]["rank"] == sub.scores["public_half"]["level"]
    assert fb["level"]["name"] == LEVELS[fb["level"]["rank"]].name
    assert fb["n_public_rows"] == len(env.halves.public)
    own = env.client.get(f"/api/submissions/{answer['id']}", headers=env.auth())
    assert own.status_code == 200
    assert own.json()["feedback"] == fb


def test_random_predictions_give_nontrivial_scores(
    env: Env, build: MiniBuild, tmp_path: Path
) -> None:
    # Guards the comparison above: the fixture really exercises every cell.
    preds = write_prediction_file(tmp_path / "p.jsonl", random_predictions(build.ids, 7))
    sid = env.client.post(
        "/api/submissions", content=preds.read_bytes(), headers=env.auth()
    ).json()["id"]
    scores = env.store.submission(sid).scores  # type: ignore[union-attr]
    for half in ("public_half", "private_half"):
        c = {k: scores[half][k] for k in ("tp", "fp", "fn", "tn")}
        assert min(c.values()) > 0, (half, c)
    assert scores["public_half"]["n"] + scores["private_half"]["n"] == 32


def test_every_upload_form_grades_the_same(env: Env, build: MiniBuild, tmp_path: Path) -> None:
    preds = random_predictions(build.ids, 11)
    jsonl = write_prediction_file(tmp_path / "p.jsonl", preds).read_bytes()
    items = [p.to_dict() for p in preds]
    as_array = json.dumps(items).encode()
    as_object = json.dumps(
        {"predictions": items, "name": "object form", "training_data": "train split"}
    ).encode()
    answers = [
        env.client.post("/api/submissions", content=jsonl, headers=env.auth()),
        env.client.post(
            "/api/submissions",
            content=as_array,
            headers={**env.auth(), "Content-Type": "application/json"},
        ),
        env.client.post("/api/submissions", content=as_object, headers=env.auth()),
        env.client.post(
            "/api/submissions",
            files={"file": ("p.jsonl", jsonl, "application/octet-stream")},
            data={"name": "multipart form", "training_data": "dev split"},
            headers=env.auth(),
        ),
        env.client.post(
            "/api/submissions?name=query+name&training_data=none",
            content=jsonl,
            headers=env.auth(),
        ),
    ]
    assert [a.status_code for a in answers] == [201] * 5, [a.text for a in answers]
    data = [a.json() for a in answers]
    stored = [env.store.submission(d["id"]).scores for d in data]  # type: ignore[union-attr]
    assert all(x == stored[0] for x in stored)
    # The same predictions again are never above the first: only the first is released.
    assert [d["feedback"]["released"] for d in data] == [True, False, False, False, False]
    assert all(d["feedback"]["best_level"] == data[0]["feedback"]["level"] for d in data)
    assert [d["format"] for d in data] == ["jsonl", "json", "json", "jsonl", "jsonl"]
    assert [d["name"] for d in data] == [
        "random",  # the header's cache_name
        "unnamed",  # a bare array has no header
        "object form",
        "multipart form",
        "query name",
    ]
    assert data[2]["training_data"] == "train split" and data[3]["training_data"] == "dev split"
    # The multipart upload stores the file's bytes, not the multipart envelope.
    assert env.store.body(data[3]["id"]) == jsonl
    assert env.store.body(data[1]["id"]) == as_array


# --- bad inputs: the right 4xx and no change to the database -------------------------------


def _jsonl(build: MiniBuild, edit: Callable[[list[dict[str, Any]]], list[Any]]) -> bytes:
    items: list[Any] = [p.to_dict() for p in random_predictions(build.ids, 3)]
    return "".join(json.dumps(x) + "\n" for x in edit(items)).encode()


def _set(i: int, key: str, value: Any) -> Callable[[list[dict[str, Any]]], list[Any]]:
    def edit(items: list[dict[str, Any]]) -> list[Any]:
        items[i] = {**items[i], key: value}
        return items

    return edit


def _drop_key(i: int, key: str) -> Callable[[list[dict[str, Any]]], list[Any]]:
    def edit(items: list[dict[str, Any]]) -> list[Any]:
        items[i] = {k: v for k, v in items[i].items() if k != key}
        return items

    return edit


BAD: dict[str, tuple[Callable[[MiniBuild], dict[str, Any]], int, str]] = {
    "not json": (lambda b: {"content": b"this is not json\n"}, 400, "line 1: not valid JSON"),
    "empty body": (lambda b: {"content": b"  \n"}, 400, "empty"),
    "not utf-8": (lambda b: {"content": b"\xff\xfe\x00{"}, 400, "not UTF-8"),
    "line not an object": (
        lambda b: {"content": _jsonl(b, lambda xs: [*xs[:3], [1, 2], *xs[3:]])},
        422,
        "line 4: expected a JSON object, got list",
    ),
    "json scalar": (lambda b: {"content": b"42"}, 422, "JSON int"),
    "object without predictions": (lambda b: {"content": b'{"preds": []}'}, 422, "'predictions'"),
    "missing id field": (
        lambda b: {"content": _jsonl(b, _drop_key(5, "id"))},
        422,
        "line 6: missing field(s): id",
    ),
    "missing test id": (
        lambda b: {"content": _jsonl(b, lambda xs: xs[:-1])},
        422,
        "no prediction for 1 of 32 test ids",
    ),
    "duplicated id": (
        lambda b: {"content": _jsonl(b, lambda xs: [*xs, xs[0]])},
        422,
        "line 33: duplicate id",
    ),
    "id not in test split": (
        lambda b: {"content": _jsonl(b, _set(2, "id", "cb-math-0999"))},
        422,
        "line 3: id 'cb-math-0999' is not in the test split",
    ),
    "wrong type is_hit": (
        lambda b: {"content": _jsonl(b, _set(0, "is_hit", "yes"))},
        422,
        "line 1: is_hit must be true or false",
    ),
    "wrong type confidence": (
        lambda b: {"content": _jsonl(b, _set(1, "confidence", "high"))},
        422,
        "line 2: confidence must be a finite number",
    ),
    "NaN latency": (
        lambda b: {"content": _jsonl(b, _set(0, "latency_ms", float("nan")))},
        400,
        "line 1: not valid JSON",
    ),
    "header not first": (
        lambda b: {"content": _jsonl(b, lambda xs: [*xs, {"cacheeval_predictions": "1.0"}])},
        422,
        "header is only allowed first",
    ),
    "name too long": (
        lambda b: {"content": _jsonl(b, lambda xs: xs), "params": {"name": "x" * 101}},
        422,
        "name is 101 characters",
    ),
    "multipart without file": (
        lambda b: {"data": {"name": "no file"}, "files": {"other": ("a.txt", b"x")}},
        422,
        "file field named 'file'",
    ),
    "form urlencoded": (
        lambda b: {"data": {"file": "x"}},
        400,
        "line 1: not valid JSON",
    ),
    "body over the size limit": (
        lambda b: {"content": b"[" + b" " * (70 * 1024) + b"]"},
        413,
        "byte limit",
    ),
    "missing token": (
        lambda b: {"content": _jsonl(b, lambda xs: xs), "auth": None},
        401,
        "missing bearer",
    ),
    "bad token": (
        lambda b: {"content": _jsonl(b, lambda xs: xs), "auth": "Bearer cet_" + "A" * 43},
        401,
        "unknown token",
    ),
    "malformed auth header": (
        lambda b: {"content": _jsonl(b, lambda xs: xs), "auth": "Basic dXNlcjpwdw=="},
        401,
        "missing bearer",
    ),
}


@pytest.fixture
def small_env(tmp_path: Path, build: MiniBuild) -> Iterator[Env]:
    yield from make_env(tmp_path, build, max_body=64 * 1024)


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_refused_and_changes_nothing(
    small_env: Env, build: MiniBuild, case: str
) -> None:
    env = small_env
    # One accepted submission first, so "unchanged" compares a non-empty board.
    ok = env.client.post(
        "/api/submissions", content=_jsonl(build, lambda xs: xs), headers=env.auth()
    )
    assert ok.status_code == 201
    make, status, message = BAD[case]
    spec = make(build)
    auth = spec.pop("auth", f"Bearer {env.tokens['alice']}")
    headers = {"Authorization": auth} if auth else {}
    params = spec.pop("params", None)
    before = db_snapshot(env.db)
    resp = env.client.post("/api/submissions", headers=headers, params=params, **spec)
    assert resp.status_code == status, resp.text
    assert message in resp.json()["error"]
    assert db_snapshot(env.db) == before
    assert count_submissions(env.db) == 1


def test_rate_limit_holds_per_submitter_and_window(tmp_path: Path, build: MiniBuild) -> None:
    for env in make_env(tmp_path, build, limit=2, window_h=1.0):
        body = _jsonl(build, lambda xs: xs)
        first = env.client.post("/api/submissions", content=body, headers=env.auth())
        env.clock.now += 600
        second = env.client.post("/api/submissions", content=body, headers=env.auth())
        assert (first.status_code, second.status_code) == (201, 201)
        assert [
            first.headers["X-RateLimit-Remaining"],
            second.headers["X-RateLimit-Remaining"],
        ] == [
            "1",
            "0",
        ]
        before = db_snapshot(env.db)
        env.clock.now += 600
        third = env.client.post("/api/submissions", content=body, headers=env.auth())
        assert third.status_code == 429
        assert "2 per 1 h" in third.json()["error"]
        # The first submission leaves the window at T0 + 3600: 2400 s from now.
        assert third.headers["Retry-After"] == "2400"
        assert db_snapshot(env.db) == before
        # Invalid uploads while limited are still 429, and never counted.
        assert (
            env.client.post("/api/submissions", content=b"junk", headers=env.auth()).status_code
            == 429
        )
        # Another submitter has its own window.
        assert (
            env.client.post("/api/submissions", content=body, headers=env.auth("bob")).status_code
            == 201
        )
        env.clock.now = T0 + 3600 + 1
        fourth = env.client.post("/api/submissions", content=body, headers=env.auth())
        assert fourth.status_code == 201
        env.clock.now += 1
        assert (
            env.client.post("/api/submissions", content=body, headers=env.auth()).status_code == 429
        )
        assert count_submissions(env.db) == 4


def test_failed_validation_does_not_use_a_slot(tmp_path: Path, build: MiniBuild) -> None:
    for env in make_env(tmp_path, build, limit=1):
        for _ in range(3):
            bad = env.client.post("/api/submissions", content=b"[1]", headers=env.auth())
            assert bad.status_code == 422
        good = env.client.post(
            "/api/submissions", content=_jsonl(build, lambda xs: xs), headers=env.auth()
        )
        assert good.status_code == 201


# --- what responses may reveal ---------------------------------------------------------------

_LABEL_WORDS = re.compile(r"\b(" + "|".join([*LABELS, "HIT", "MISS"]) + r")\b")


def test_no_response_reveals_per_row_outcomes(env: Env, build: MiniBuild, tmp_path: Path) -> None:
    preds = write_prediction_file(tmp_path / "p.jsonl", random_predictions(build.ids, 5))
    ok = env.client.post("/api/submissions", content=preds.read_bytes(), headers=env.auth())
    sid = ok.json()["id"]
    answers = [
        ok,
        env.client.get("/api/leaderboard"),
        env.client.get(f"/api/submissions/{sid}", headers=env.auth()),
        env.client.get("/"),
        env.client.get(f"/submissions/{sid}"),
        env.client.get("/healthz"),
    ]
    assert all(a.status_code == 200 or a.status_code == 201 for a in answers)
    for a in answers:
        for rid in build.ids:
            assert rid not in a.text, (a.url, rid)
        assert "is_hit" not in a.text and "correct" not in a.text.lower()
    # Error answers name the submission's own problem, never a label.
    errors = [
        env.client.post(
            "/api/submissions", content=_jsonl(build, lambda xs: xs[:-3]), headers=env.auth()
        ),
        env.client.post(
            "/api/submissions", content=_jsonl(build, _set(4, "is_hit", 1)), headers=env.auth()
        ),
        env.client.get(f"/api/submissions/{sid}", headers=env.auth("bob")),
    ]
    assert [e.status_code for e in errors] == [422, 422, 404]
    for e in errors:
        assert not _LABEL_WORDS.search(e.json()["error"]), e.text


def test_results_are_the_submitters_own(env: Env, build: MiniBuild) -> None:
    body = _jsonl(build, lambda xs: xs)
    sid = env.client.post("/api/submissions", content=body, headers=env.auth()).json()["id"]
    assert env.client.get(f"/api/submissions/{sid}", headers=env.auth()).status_code == 200
    other = env.client.get(f"/api/submissions/{sid}", headers=env.auth("bob"))
    absent = env.client.get(f"/api/submissions/{sid + 100}", headers=env.auth("bob"))
    assert (other.status_code, absent.status_code) == (404, 404)
    assert other.json()["error"].replace(str(sid), "N") == absent.json()["error"].replace(
        str(sid + 100), "N"
    )
    assert env.client.get(f"/api/submissions/{sid}").status_code == 401


# --- the board and its pages ----------------------------------------------------------------


def _perfect(build: MiniBuild) -> list[Any]:
    truth = {r.id: r.binary_label == "HIT" for r in build.rows}
    return [dataclasses.replace(p, is_hit=truth[p.id]) for p in random_predictions(build.ids, 3)]


def test_board_order_page_and_escaping(env: Env, build: MiniBuild) -> None:
    evil = '<script>alert("x")</script>'
    uploads = [
        (
            "alice",
            "all hit",
            [dataclasses.replace(p, is_hit=True) for p in random_predictions(build.ids, 1)],
        ),
        (
            "bob",
            "all miss",
            [dataclasses.replace(p, is_hit=False) for p in random_predictions(build.ids, 1)],
        ),
        ("carol", evil, _perfect(build)),
    ]
    for who, name, preds in uploads:
        body = "".join(json.dumps(p.to_dict()) + "\n" for p in preds).encode()
        resp = env.client.post(
            "/api/submissions",
            content=body,
            params={"name": name, "training_data": "a & b <i>"},
            headers=env.auth(who),
        )
        assert resp.status_code == 201, resp.text
    board = env.client.get("/api/leaderboard").json()
    assert board["n_public_rows"] == len(env.halves.public)
    entries = board["entries"]
    assert [e["rank"] for e in entries] == [1, 2, 3]
    # Serving nothing is within budget but below a cache that serves well within it;
    # serving everything is over budget, below both, with its FHR band shown.
    assert [e["name"] for e in entries] == [evil, "all miss", "all hit"]
    assert [e["level"] for e in entries] == [LEVELS[5].name, LEVELS[2].name, LEVELS[0].name]
    assert entries[2]["within_budget"] is False and entries[2]["fhr_interval"] == [0.2, 1.0]
    assert entries[1]["recall_interval"] == [0.0, 0.5]
    for e in entries:
        assert e["kind"] == "submission" and e["n_submissions"] == 1
        assert not {"fhr", "recall", "f1", "confusion", "per_domain"} & set(e)
    page = env.client.get("/")
    assert page.status_code == 200
    assert "default-src 'none'" in page.headers["Content-Security-Policy"]
    html = page.text
    assert evil not in html and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    assert "a &amp; b &lt;i&gt;" in html
    for key in ("level_rank", "fhr_high", "recall_low", "p95_latency_ms"):
        assert f'data-sort="{key}"' in html
    assert html.count("<tr data-id=") == 3
    assert "(20%, 100%]" in html  # the over-budget entry's FHR band
    # The three sub-score columns: bands from the public half's rows of each skill,
    # each explained in one sentence on the page.
    subs = {e["name"]: e["subscores"] for e in entries}
    for sub in SUBSCORES:
        assert f'data-sort="sub_{sub}"' in html
        assert f'data-key="sub_{sub}"' in html
    present = {
        s
        for s in SUBSCORES
        if any(subscore_of(r) == s and r.id in env.halves.public for r in build.rows)
    }
    assert present, "the mini build should have sub-score rows in the public half"
    for sub in present:
        assert subs[evil][sub]["name"].startswith("within budget")  # perfect predictions
        assert subs["all hit"][sub]["name"] == "over budget"  # serves every MISS row
    assert html.count("<li><strong>") >= 3 and "honouring the never-cache policies" in html
    assert 'id="upload-form"' in html and 'type="file"' in html
    assert "http://" not in html and "https://" not in html  # no CDN, nothing external
    for e in entries:
        assert f'href="/submissions/{e["id"]}"' in html
        detail = env.client.get(e["url"])
        assert detail.status_code == 200
        assert e["level"] in detail.text
        for domain in {r.domain for r in build.rows}:
            # no per-domain breakdown of the test split
            assert f"<th scope='row'>{domain}</th>" not in detail.text
    assert env.client.get("/submissions/999").status_code == 404
    assert env.client.get("/static/leaderboard.js").status_code == 200
    assert env.client.get("/static/style.css").status_code == 200


def test_the_ladder_releases_only_improvements(env: Env, build: MiniBuild) -> None:
    def post(preds: list[Any]) -> dict[str, Any]:
        body = "".join(json.dumps(p.to_dict()) + "\n" for p in preds).encode()
        resp = env.client.post("/api/submissions", content=body, headers=env.auth())
        assert resp.status_code == 201, resp.text
        fb: dict[str, Any] = resp.json()["feedback"]
        return fb

    base = random_predictions(build.ids, 1)
    miss = post([dataclasses.replace(p, is_hit=False) for p in base])
    hit = post([dataclasses.replace(p, is_hit=True) for p in base])
    perfect = post(_perfect(build))
    again = post([dataclasses.replace(p, is_hit=False) for p in base])
    assert miss["released"] and miss["level"]["rank"] == 2
    assert not hit["released"] and hit["level"] is None and hit["best_level"]["rank"] == 2
    assert perfect["released"] and perfect["level"]["rank"] == 5
    assert not again["released"] and again["best_level"]["rank"] == 5
    assert [f["submission_number"] for f in (miss, hit, perfect, again)] == [1, 2, 3, 4]
    # Sub-score bands travel with a released level and never without one.
    assert miss["subscores"] is not None and perfect["subscores"] is not None
    assert hit["subscores"] is None and again["subscores"] is None
    # The board shows the submitter once, at the best released level.
    entries = env.client.get("/api/leaderboard").json()["entries"]
    assert len(entries) == 1 and entries[0]["level_rank"] == 5
    assert entries[0]["n_submissions"] == 4


def test_reference_rows_and_closed_rounds(tmp_path: Path, build: MiniBuild) -> None:
    refs = tmp_path / "refs"
    refs.mkdir()
    all_miss = [dataclasses.replace(p, is_hit=False) for p in random_predictions(build.ids, 4)]
    write_prediction_file(refs / "always-miss.jsonl", all_miss, name="always_miss")
    write_prediction_file(refs / "perfect.jsonl", _perfect(build), name="oracle")
    test = load_test_set(build.bench, build.labels, build.manifest)
    references = load_references(refs, test, halves_of(test, "test-salt"))
    # A round: open until its seed, hashing to the slice's commitment, is published.
    rounds = tmp_path / "rounds"
    (rounds / "2026q1" / "reports").mkdir(parents=True)
    slice_file = rounds / "2026q1" / "slice.jsonl"
    assert (
        run_cli(
            "generate-slice", "--seed", "round-seed", "--per-domain", "5",
            "--domain", "math", "--out", str(slice_file),
        )
        == 0
    )  # fmt: skip
    assert (
        run_cli(
            "eval", "--bench", str(slice_file), "--baseline", "always_hit",
            "--out", str(tmp_path / "r.md"),
            "--json", str(rounds / "2026q1" / "reports" / "always_hit.json"),
        )
        == 0
    )  # fmt: skip
    envs = make_env(tmp_path / "a", build, references=references, rounds_dir=rounds)
    (tmp_path / "a").mkdir()
    env = next(envs)
    try:
        entries = env.client.get("/api/leaderboard").json()["entries"]
        assert [(e["name"], e["kind"], e["level_rank"]) for e in entries] == [
            ("oracle", "reference", 5),
            ("always_miss", "reference", 2),
        ]
        assert "fixed predictions file" in env.client.get("/").text
        assert env.client.get("/api/rounds").json() == {"rounds": []}
        assert env.client.get("/rounds/2026q1").status_code == 404
        (rounds / "2026q1" / "seed.txt").write_text("not the seed\n")
        assert env.client.get("/api/rounds").json() == {"rounds": []}
        (rounds / "2026q1" / "seed.txt").write_text("round-seed\n")
        closed = env.client.get("/api/rounds").json()["rounds"]
        assert [r["name"] for r in closed] == ["2026q1"] and closed[0]["seed"] == "round-seed"
        math = closed[0]["reports"][0]["per_domain"]
        assert [d["domain"] for d in math] == ["math"] and math[0]["fhr"] == 1.0
        page = env.client.get("/rounds/2026q1")
        assert page.status_code == 200 and "<th scope='row'>math</th>" in page.text
        assert 'href="/rounds/2026q1"' in env.client.get("/").text
    finally:
        envs.close()


# --- the manifest check, regrading, submitters ----------------------------------------------


def test_refuses_labels_that_do_not_match_the_manifest(build: MiniBuild, tmp_path: Path) -> None:
    other = tmp_path / "labels.jsonl"
    lines = build.labels.read_text().splitlines(keepends=True)
    other.write_text("".join(reversed(lines)))  # same records, other bytes
    with pytest.raises(SetupError, match="does not match test_labels.sha256"):
        load_test_set(build.bench, other, build.manifest)
    code = run_cli(
        "serve", "--bench", str(build.bench), "--labels", str(other),
        "--manifest", str(build.manifest), "--db", str(tmp_path / "x.sqlite"), "--port", "1",
    )  # fmt: skip
    assert code == 2
    with pytest.raises(SetupError, match="no such manifest"):
        load_test_set(build.bench, build.labels, tmp_path / "nope.json")


def test_serve_error_is_one_line(
    build: MiniBuild, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad_manifest = tmp_path / "manifest.json"
    write_json(bad_manifest, {"dataset": {"sha256": "0" * 64}, "test_labels": {"sha256": "1" * 64}})
    code = run_cli(
        "serve", "--bench", str(build.bench), "--labels", str(build.labels),
        "--manifest", str(bad_manifest), "--db", str(tmp_path / "x.sqlite"),
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("cacheeval serve: error: ") and err.count("\n") == 1
    assert str(build.labels) in err and "refusing to grade" in err


def test_regrade_after_a_labels_fix(env: Env, build: MiniBuild, tmp_path: Path) -> None:
    preds = write_prediction_file(tmp_path / "p.jsonl", random_predictions(build.ids, 9))
    sid = env.client.post(
        "/api/submissions", content=preds.read_bytes(), headers=env.auth()
    ).json()["id"]
    before = env.store.submission(sid)
    assert before is not None
    # "Fix" a label: an UNRELATED row that the checker grades by exact match becomes EQUIV.
    target = next(
        r
        for r in build.rows
        if r.label == "UNRELATED" and r.verification_method != "policy_no_cache"
    )
    fixed_rows = [
        dataclasses.replace(r, label="EQUIV", binary_label="HIT") if r.id == target.id else r
        for r in build.rows
    ]
    fixed = write_build(tmp_path / "fixed", fixed_rows)
    assert fixed.bench.read_bytes() == build.bench.read_bytes()
    report = score_json(fixed, preds, tmp_path, labels=fixed.labels)
    code = run_cli(
        "serve", "--regrade", "--bench", str(fixed.bench), "--labels", str(fixed.labels),
        "--manifest", str(fixed.manifest), "--db", str(env.db),
    )  # fmt: skip
    assert code == 0
    after = env.store.submission(sid)
    assert after is not None
    assert after.scores != before.scores
    fixed_test = load_test_set(fixed.bench, fixed.labels, fixed.manifest)
    salt = Path(f"{env.db}.salt").read_text().strip()
    assert len(salt) == 32  # created on first use, next to the database
    assert_grade_agrees(after.scores, fixed, preds, halves_of(fixed_test, salt), report)
    upload = parse_upload(preds.read_bytes(), fixed_test.ids, [r.id for r in fixed_test.rows])
    assert after.scores == grade(
        upload, fixed_test, halves_of(fixed_test, salt), cache_name="random"
    )
    assert (
        after.labels_sha256
        == load_test_set(fixed.bench, fixed.labels, fixed.manifest).labels_sha256
    )
    assert env.store.body(sid) == preds.read_bytes()
    assert after.body_sha256 == before.body_sha256
    # Regrading with labels that do not match their manifest is refused.
    stale = run_cli(
        "serve", "--regrade", "--bench", str(build.bench), "--labels", str(fixed.labels),
        "--manifest", str(build.manifest), "--db", str(env.db),
    )  # fmt: skip
    assert stale == 2


def test_regrade_marks_submissions_that_no_longer_fit(
    env: Env, build: MiniBuild, tmp_path: Path
) -> None:
    body = _jsonl(build, lambda xs: xs)
    sid = env.client.post("/api/submissions", content=body, headers=env.auth()).json()["id"]
    smaller = write_build(tmp_path / "smaller", list(build.rows[:-1]))
    assert (
        run_cli(
            "serve", "--regrade", "--bench", str(smaller.bench), "--labels", str(smaller.labels),
            "--manifest", str(smaller.manifest), "--db", str(env.db),
        )
        == 0
    )  # fmt: skip
    sub = env.store.submission(sid)
    assert sub is not None and sub.status == "invalid"
    assert "not in the test split" in (sub.status_detail or "")
    assert env.client.get("/api/leaderboard").json()["entries"] == []


def test_add_submitter_prints_the_token_once_and_stores_a_hash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "b.sqlite"
    assert run_cli("serve", "--db", str(db), "--add-submitter", "team-x") == 0
    out = capsys.readouterr()
    token = out.out.strip()
    assert re.fullmatch(r"cet_[A-Za-z0-9_-]{43}", token)
    assert token not in out.err
    dump = "\n".join(db_snapshot(db))
    assert token not in dump and sha256_bytes(token.encode()) in dump
    store = Store(db)
    who = store.submitter_by_token(token)
    assert who is not None and who.name == "team-x"
    assert store.submitter_by_token(token[:-1] + ("A" if token[-1] != "A" else "B")) is None
    assert run_cli("serve", "--db", str(db), "--add-submitter", "team-x") == 2
    assert "already exists" in capsys.readouterr().err
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()


def test_chunked_upload_over_the_limit_is_cut_off(small_env: Env, build: MiniBuild) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(80):  # 80 KiB, no Content-Length: the stream itself is capped
            yield b" " * 1024

    before = db_snapshot(small_env.db)
    resp = small_env.client.post("/api/submissions", content=chunks(), headers=small_env.auth())
    assert resp.status_code == 413
    assert db_snapshot(small_env.db) == before


def test_rate_limit_decisions() -> None:
    limit = RateLimit(2, 100.0)
    assert limit.decide([], 1000.0) == Decision(True, 0, 1, None)
    assert limit.decide([950.0], 1000.0) == Decision(True, 1, 0, None)
    # Full: the slot of the submission at 950 frees at 1050.
    assert limit.decide([990.0, 950.0], 1000.0) == Decision(False, 2, 0, 50)
    # The window is (now - 100, ...]: a submission at exactly 900 has left it.
    assert limit.decide([900.0, 990.0], 1000.0).allowed
    # A submission stamped a moment after `now` (a concurrent upload) still counts.
    assert not limit.decide([990.0, 1000.5], 1000.0).allowed
    assert limit.describe() == "2 per 0.0277778 h"
    for bad in ((0, 10.0), (2, 0.0), (2, float("inf"))):
        with pytest.raises(ValueError):
            RateLimit(*bad)


def test_bearer_header_parsing() -> None:
    token = "cet_" + "a" * 43
    assert bearer_token(f"Bearer {token}") == token
    assert bearer_token(f"bearer   {token} ") == token
    assert bearer_token("Basic abc") is None
    assert bearer_token("Bearer") is None
    assert bearer_token(None) is None
