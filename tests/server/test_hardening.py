"""Hostile and careless requests against the grading service: each is a 4xx
that stores nothing (deep nesting, lone surrogates, huge numbers, unbounded
ids, control characters and megabytes in header fields); a retried upload
with an Idempotency-Key is stored once and counted once; the database file is
private; the server and the CLI treat a byte order mark alike; ``cacheeval
submit`` reports a 413 with the server's message."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("multipart")

from cacheeval import cli as cacheeval_cli  # noqa: E402
from cacheeval.server.store import Store  # noqa: E402
from tests.server.conftest import (  # noqa: E402
    MiniBuild,
    add_submitter,
    cli,
    count_submissions,
    db_snapshot,
    random_predictions,
    running_server,
    write_prediction_file,
)
from tests.server.test_api import Env, make_env  # noqa: E402


@pytest.fixture
def env(tmp_path: Path, build: MiniBuild) -> Iterator[Env]:
    yield from make_env(tmp_path, build, limit=3, max_body=8 << 20)


def _lines(build: MiniBuild, seed: int = 3) -> list[dict[str, Any]]:
    return [p.to_dict() for p in random_predictions(build.ids, seed)]


def _header(**changes: Any) -> dict[str, Any]:
    header = {
        "cacheeval_predictions": "1.0",
        "cache_name": "mine",
        "cache_args": {},
        "package_version": "0",
        "dataset_sha256": None,
        "split": "test",
        "created": "2026-01-01T00:00:00Z",
    }
    header.update(changes)
    return header


def _raw_jsonl(items: list[Any]) -> bytes:
    # json.dumps escapes a lone surrogate as \ud800, exactly what an attacker sends
    return "".join(json.dumps(x) + "\n" for x in items).encode("utf-8")


def _post(env: Env, body: bytes, **headers: str) -> Any:
    return env.client.post("/api/submissions", content=body, headers={**env.auth(), **headers})


def _refused(env: Env, build: MiniBuild, body: bytes, status: int, message: str) -> None:
    """The body is refused with ``status`` naming ``message``, and nothing changes."""
    ok = _post(env, _raw_jsonl(_lines(build)))  # a non-empty board to compare
    assert ok.status_code == 201, ok.text
    before = db_snapshot(env.db)
    resp = _post(env, body)
    assert resp.status_code == status, resp.text
    assert message in resp.json()["error"], resp.json()
    assert db_snapshot(env.db) == before


# --- bodies that used to be a 500 --------------------------------------------------------------


def test_a_line_nested_100000_deep_is_a_400(env: Env, build: MiniBuild) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    lines = _raw_jsonl(_lines(build)).split(b"\n")
    _refused(env, build, b"\n".join([*lines[:4], deep, *lines[4:]]), 400, "line 5: not valid JSON")
    _refused(env, build, b'{"predictions": ' + deep + b"}", 400, "nested deeper than 100 levels")


def test_a_lone_surrogate_in_tier_used_is_a_400(env: Env, build: MiniBuild) -> None:
    items = _lines(build)
    items[2]["tier_used"] = "\ud800"
    _refused(env, build, _raw_jsonl(items), 400, "line 3: not valid JSON (a string holds the lone")


def test_a_lone_surrogate_in_the_header_cache_name_is_a_400(env: Env, build: MiniBuild) -> None:
    body = _raw_jsonl([_header(cache_name="evil\ud800"), *_lines(build)])
    _refused(
        env, build, body, 400, "line 1: not valid JSON (a string holds the lone surrogate \\ud800"
    )


def test_numbers_too_long_for_a_float_or_an_int(env: Env, build: MiniBuild) -> None:
    items = _raw_jsonl(_lines(build)).decode()
    big = re.sub(r'"latency_ms": [0-9.]+', '"latency_ms": ' + "1" * 5000, items, count=1)
    _refused(
        env, build, big.encode(), 400, "line 1: not valid JSON (a number longer than 4300 digits"
    )
    wide = re.sub(r'"latency_ms": [0-9.]+', '"latency_ms": ' + "1" * 400, items, count=1)
    _refused(env, build, wide.encode(), 422, "line 1: latency_ms must be a finite number or null")


@pytest.mark.parametrize("prefix", ["/submissions/", "/api/submissions/"])
def test_an_id_beyond_sqlite_integers_is_a_404(env: Env, prefix: str) -> None:
    resp = env.client.get(prefix + "99999999999999999999999", headers=env.auth())
    assert resp.status_code == 404
    assert env.client.get(prefix + str(2**63 - 1), headers=env.auth()).status_code == 404


# --- every header text field through check_text -------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("cache_name", "bell\x07 nul\x00 esc\x1b[31m", "cache_name contains control characters"),
        ("cache_name", "x" * (4 << 20), "cache_name is 4194304 characters long (at most 200)"),
        ("dataset_sha256", "\x1b[2J", "dataset_sha256 contains control characters"),
        ("created", "\x00", "created contains control characters"),
        ("package_version", "v" * 201, "package_version is 201 characters long"),
    ],
    ids=["cache_name-control", "cache_name-4MB", "sha-control", "created-nul", "version-long"],
)
def test_header_text_fields_meet_check_text(
    env: Env, build: MiniBuild, field: str, value: str, message: str
) -> None:
    body = _raw_jsonl([_header(**{field: value}), *_lines(build)])
    _refused(env, build, body, 422, "line 1: " + message)


def test_a_clean_cache_name_is_stored_and_shown(env: Env, build: MiniBuild) -> None:
    body = _raw_jsonl([_header(cache_name="  my cache  "), *_lines(build)])
    resp = _post(env, body)
    assert resp.status_code == 201 and resp.json()["cache_name"] == "my cache"
    assert len(env.client.get("/api/leaderboard").content) < 20_000


# --- idempotent retries ---------------------------------------------------------------------


def test_a_retry_with_the_same_key_returns_the_first_submission(env: Env, build: MiniBuild) -> None:
    body = _raw_jsonl(_lines(build))
    first = _post(env, body, **{"Idempotency-Key": "run-42"})
    assert first.status_code == 201, first.text
    # The response was lost; the client retries the same upload with the same key.
    again = _post(env, body, **{"Idempotency-Key": "run-42"})
    assert again.status_code == 200, again.text
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == first.json()["id"]
    assert again.json()["feedback"] == first.json()["feedback"]
    assert count_submissions(env.db) == 1
    # It cost no slot: the limit is 3, two more uploads fit, the third does not.
    assert again.headers["X-RateLimit-Remaining"] == "2"
    assert _post(env, body).status_code == 201
    assert _post(env, body).status_code == 201
    assert _post(env, body).status_code == 429
    # With the window full, the retry still answers (it stores and counts nothing).
    late = _post(env, body, **{"Idempotency-Key": "run-42"})
    assert late.status_code == 200 and late.json()["id"] == first.json()["id"]
    assert count_submissions(env.db) == 3


def test_a_key_is_per_submitter_and_per_upload(env: Env, build: MiniBuild) -> None:
    body = _raw_jsonl(_lines(build))
    a = _post(env, body, **{"Idempotency-Key": "k"})
    b = env.client.post(
        "/api/submissions", content=body, headers={**env.auth("bob"), "Idempotency-Key": "k"}
    )
    assert (a.status_code, b.status_code) == (201, 201) and a.json()["id"] != b.json()["id"]
    before = db_snapshot(env.db)
    other = _post(env, _raw_jsonl(_lines(build, seed=9)), **{"Idempotency-Key": "k"})
    assert other.status_code == 422 and "already used for a different upload" in other.text
    for bad in ("", "x" * 201, "bell\x07"):
        assert _post(env, body, **{"Idempotency-Key": bad}).status_code == 400, repr(bad)
    assert db_snapshot(env.db) == before


def test_submit_twice_stores_once(build: MiniBuild, tmp_path: Path) -> None:
    db = tmp_path / "board.sqlite"
    token = add_submitter(db, "retrier")
    preds = write_prediction_file(tmp_path / "p.jsonl", random_predictions(build.ids, 1))
    with running_server(build, db) as base:
        first = cli("submit", str(preds), "--server", base, "--token", token, "--name", "r")
        again = cli("submit", str(preds), "--server", base, "--token", token, "--name", "r")
    assert first.returncode == 0 and again.returncode == 0, first.stderr + again.stderr
    assert "submission #1 'r'" in first.stdout and "submission #1 'r'" in again.stdout
    assert "already submitted" in again.stderr
    assert count_submissions(db) == 1


# --- the database file, the byte order mark, the size limit -------------------------------------


def test_the_database_files_are_private(tmp_path: Path, build: MiniBuild) -> None:
    old = os.umask(0o022)
    try:
        for env in make_env(tmp_path, build):
            assert _post(env, _raw_jsonl(_lines(build))).status_code == 201
            # A connection held open keeps the -wal and -shm files in place.
            conn = sqlite3.connect(env.db)
            try:
                assert conn.execute("SELECT COUNT(*) FROM submissions").fetchone() == (1,)
                files = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("board"))
                assert files == ["board.sqlite", "board.sqlite-shm", "board.sqlite-wal"]
                for name in files:
                    assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o600, name
            finally:
                conn.close()
    finally:
        os.umask(old)


def test_an_existing_version_1_store_gains_the_key_column(tmp_path: Path) -> None:
    db = tmp_path / "v1.sqlite"
    Store(db)
    conn = sqlite3.connect(db)
    conn.execute("DROP INDEX submissions_by_key")
    conn.execute("ALTER TABLE submissions DROP COLUMN idempotency_key")
    conn.execute("PRAGMA user_version = 1")
    conn.close()
    store = Store(db)
    assert store.submission_by_key(1, "k") is None
    conn = sqlite3.connect(db)
    cols = [r[1] for r in conn.execute("PRAGMA table_info(submissions)")]
    assert "idempotency_key" in cols
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
    conn.close()


@pytest.mark.parametrize("where", ["start", "line 2"])
def test_a_byte_order_mark_is_handled_alike_by_server_and_cli(
    env: Env, build: MiniBuild, tmp_path: Path, where: str
) -> None:
    preds = write_prediction_file(tmp_path / "p.jsonl", random_predictions(build.ids, 4))
    lines = preds.read_bytes().split(b"\n")
    bom = b"\xef\xbb\xbf"
    if where == "start":
        lines[0] = bom + lines[0]
    else:
        lines[1] = bom + lines[1]
    preds.write_bytes(b"\n".join(lines))
    server = _post(env, preds.read_bytes())
    code = cacheeval_cli.main(
        ["score", "--bench", str(build.bench), "--labels", str(build.labels),
         "--predictions", str(preds), "--out", str(tmp_path / "r.md")]
    )  # fmt: skip
    if where == "start":
        assert (server.status_code, code) == (201, 0), server.text
    else:
        assert (server.status_code, code) == (400, 2), server.text
        assert "line 2: not valid JSON" in server.json()["error"]


@pytest.mark.parametrize(
    ("megabytes", "said"),
    [
        (6, "(413): upload larger than the 1048576 byte limit"),  # the server's own message
        (40, "(413): the file is"),  # past 8x the limit the server hangs up; /healthz says why
    ],
    ids=["drained", "cut-off"],
)
def test_submit_over_the_size_limit_reports_the_413(
    build: MiniBuild, tmp_path: Path, megabytes: int, said: str
) -> None:
    # Bigger than what the loopback socket buffers absorb, so a server that
    # answers without reading the body resets the connection under the client.
    db = tmp_path / "board.sqlite"
    token = add_submitter(db, "big")
    preds = write_prediction_file(tmp_path / "p.jsonl", random_predictions(build.ids, 2))
    preds.write_bytes(preds.read_bytes() + b"\n" * (megabytes << 20))
    with running_server(build, db, "--max-body-mb", "1") as base:
        done = cli("submit", str(preds), "--server", base, "--token", token)
    assert done.returncode == 1, done.stderr
    assert said in done.stderr and "1048576 byte limit" in done.stderr, done.stderr
    assert "cannot reach" not in done.stderr
    assert count_submissions(db) == 0


def test_refused_uploads_count_against_a_limit_of_their_own(env: Env, build: MiniBuild) -> None:
    from cacheeval.server.handlers import DEFAULT_REFUSALS

    before = db_snapshot(env.db)
    junk = b"not json\n" * 1000
    for _ in range(DEFAULT_REFUSALS):
        assert _post(env, junk).status_code == 400
    barred = _post(env, _raw_jsonl(_lines(build)))  # even a good file, until the window ends
    assert barred.status_code == 429 and "too many refused uploads" in barred.json()["error"]
    assert int(barred.headers["Retry-After"]) > 0
    assert db_snapshot(env.db) == before
    bob = env.client.post(
        "/api/submissions", content=_raw_jsonl(_lines(build)), headers=env.auth("bob")
    )
    assert bob.status_code == 201, bob.text  # per submitter
    env.clock.now += 3601
    assert _post(env, _raw_jsonl(_lines(build))).status_code == 201
