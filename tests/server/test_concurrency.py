"""A real ``cacheeval serve`` process: 50 concurrent submissions from 10
submitters are each stored exactly once and the board agrees with the Ladder
computed locally; the rate limit holds under concurrent uploads; ``cacheeval
submit`` talks to it."""

from __future__ import annotations

import json
import sqlite3
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from cacheeval.server.grading import (  # noqa: E402
    grade,
    halves_of,
    load_test_set,
    parse_upload,
)
from cacheeval.support.jsonio import sha256_bytes  # noqa: E402
from tests.server.conftest import (  # noqa: E402
    MiniBuild,
    add_submitter,
    cli,
    random_predictions,
    running_server,
    write_prediction_file,
)

N_SUBMITTERS = 10
PER_SUBMITTER = 5


def post(base: str, token: str, body: bytes, name: str) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        f"{base}/api/submissions?name={name}",
        data=body,
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/x-ndjson"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


def test_fifty_concurrent_submissions_are_each_stored_once(
    build: MiniBuild, tmp_path: Path
) -> None:
    db = tmp_path / "board.sqlite"
    tokens = [add_submitter(db, f"team-{k}") for k in range(N_SUBMITTERS)]
    jobs = []  # (token, name, body)
    for k, token in enumerate(tokens):
        for j in range(PER_SUBMITTER):
            i = k * PER_SUBMITTER + j
            preds = random_predictions(build.ids, 1000 + i)
            path = write_prediction_file(tmp_path / f"p{i}.jsonl", preds, name=f"cache-{i}")
            jobs.append((token, f"run-{i:02d}", path.read_bytes()))
    with running_server(build, db, "--rate-limit", "100") as base:
        barrier = threading.Barrier(len(jobs))

        def fire(job: tuple[str, str, bytes]) -> tuple[int, dict[str, Any]]:
            barrier.wait(timeout=30)  # all 50 requests leave together
            return post(base, job[0], job[2], job[1])

        with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
            results = list(pool.map(fire, jobs))
        board = get_json(f"{base}/api/leaderboard")["entries"]

    statuses = [status for status, _ in results]
    assert statuses == [201] * len(jobs), [a for s, a in results if s != 201]
    ids = [answer["id"] for _, answer in results]
    assert len(set(ids)) == len(jobs)
    # Each accepted submission is in the database exactly once, with its bytes.
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute(
            "SELECT s.id, s.name, u.name, s.body, s.body_sha256 FROM submissions s "
            "JOIN submitters u ON u.id = s.submitter_id ORDER BY s.id"
        ).fetchall()
    finally:
        conn.close()
    assert sorted(r[0] for r in rows) == sorted(ids)
    by_name = {r[1]: r for r in rows}
    assert len(by_name) == len(jobs)
    for (token, name, body), (_, answer) in zip(jobs, results, strict=True):
        sid, stored_name, submitter, stored_body, sha = by_name[name]
        assert sid == answer["id"] and stored_body == body and sha == sha256_bytes(body)
        assert submitter == f"team-{tokens.index(token)}"
    assert {r[2] for r in rows} == {f"team-{k}" for k in range(N_SUBMITTERS)}
    assert all(
        sum(1 for r in rows if r[2] == f"team-{k}") == PER_SUBMITTER for k in range(N_SUBMITTERS)
    )
    # The board lists each submitter once, at the best level the Ladder released
    # to it, computed here from the stored order, the salt file and the labels.
    salt = Path(f"{db}.salt").read_text().strip()
    test = load_test_set(build.bench, build.labels, build.manifest)
    halves = halves_of(test, salt)
    bodies = {r[0]: r[3] for r in rows}
    best: dict[str, tuple[int, int]] = {}  # submitter -> (level, id of first reaching it)
    for sid, _, submitter, _, _ in sorted(rows):
        upload = parse_upload(bodies[sid], test.ids, [r.id for r in test.rows])
        level = grade(upload, test, halves, cache_name="x")["public_half"]["level"]
        if submitter not in best or level > best[submitter][0]:
            best[submitter] = (level, sid)
    assert len(board) == N_SUBMITTERS
    assert [e["rank"] for e in board] == list(range(1, N_SUBMITTERS + 1))
    assert {e["submitter"]: (e["level_rank"], e["id"]) for e in board} == best
    assert [e["level_rank"] for e in board] == sorted(
        (e["level_rank"] for e in board), reverse=True
    )
    assert all(e["n_submissions"] == PER_SUBMITTER for e in board)


def test_rate_limit_holds_under_concurrent_uploads(build: MiniBuild, tmp_path: Path) -> None:
    db = tmp_path / "board.sqlite"
    token = add_submitter(db, "eager")
    body = write_prediction_file(
        tmp_path / "p.jsonl", random_predictions(build.ids, 4)
    ).read_bytes()
    with running_server(build, db, "--rate-limit", "3", "--rate-window-hours", "1") as base:
        barrier = threading.Barrier(12)

        def fire(i: int) -> int:
            barrier.wait(timeout=30)
            return post(base, token, body, f"try-{i}")[0]

        with ThreadPoolExecutor(max_workers=12) as pool:
            statuses = list(pool.map(fire, range(12)))
    assert sorted(statuses) == [201] * 3 + [429] * 9
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("SELECT COUNT(*) FROM submissions").fetchone()[0] == 3
    finally:
        conn.close()


def test_submit_command_against_a_live_server(build: MiniBuild, tmp_path: Path) -> None:
    db = tmp_path / "board.sqlite"
    token = add_submitter(db, "cli-user")
    preds = tmp_path / "exact.jsonl"
    done = cli("predict", "--bench", str(build.bench), "--split", "test",
               "--baseline", "exact_match", "--out", str(preds))  # fmt: skip
    assert done.returncode == 0, done.stderr
    with running_server(build, db) as base:
        ok = cli("submit", str(preds), "--server", base, "--token", token,
                 "--name", "exact baseline", "--training-data", "none")  # fmt: skip
        bad = cli("submit", str(preds), "--server", base, "--token", "cet_" + "x" * 43)
        board = get_json(f"{base}/api/leaderboard")["entries"]
    assert ok.returncode == 0, ok.stderr
    assert "submission #1 'exact baseline' by cli-user" in ok.stdout
    assert f"level: {board[0]['level']} (your best so far)" in ok.stdout
    assert bad.returncode == 1 and "(401): unknown token" in bad.stderr
    assert [e["name"] for e in board] == ["exact baseline"]
    assert board[0]["training_data"] == "none"
    unreachable = cli("submit", str(preds), "--server", base, "--token", token)
    assert unreachable.returncode == 2 and "cannot reach" in unreachable.stderr
