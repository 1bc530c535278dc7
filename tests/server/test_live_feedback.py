"""A real ``cacheeval serve`` process (uvicorn, SQLite): the public feedback
fields of an upload, the board with its fixed reference rows, and the
maintainer's standings (public vs private half) - over HTTP, nothing mocked."""

from __future__ import annotations

import dataclasses
import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from cacheeval.server.ladder import LEVELS  # noqa: E402
from tests.server.conftest import (  # noqa: E402
    FEEDBACK_KEYS,
    MiniBuild,
    add_submitter,
    cli,
    random_predictions,
    running_server,
    write_prediction_file,
)

LEVEL_KEYS = ["rank", "name", "within_budget", "fhr_interval", "recall_interval"]


def post(base: str, token: str, body: bytes) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{base}/api/submissions",
        data=body,
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/x-ndjson"},
    )
    with urllib.request.urlopen(request, timeout=60) as r:
        assert r.status == 201
        data: dict[str, Any] = json.loads(r.read())
    return data


def get(url: str, token: str | None = None) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as r:
        return json.loads(r.read())


def test_public_feedback_fields_over_http(build: MiniBuild, tmp_path: Path) -> None:
    db = tmp_path / "board.sqlite"
    token = add_submitter(db, "live-team")
    truth = {r.id: r.binary_label == "HIT" for r in build.rows}
    preds = random_predictions(build.ids, 31)
    refs = tmp_path / "refs"
    refs.mkdir()
    write_prediction_file(
        refs / "always-miss.jsonl",
        [dataclasses.replace(p, is_hit=False) for p in preds],
        name="always_miss",
    )
    over = write_prediction_file(
        tmp_path / "hit.jsonl", [dataclasses.replace(p, is_hit=True) for p in preds], name="hit"
    )
    good = write_prediction_file(
        tmp_path / "good.jsonl",
        [dataclasses.replace(p, is_hit=truth[p.id]) for p in preds],
        name="good",
    )
    with running_server(build, db, "--references", str(refs)) as base:
        first = post(base, token, over.read_bytes())
        second = post(base, token, over.read_bytes())
        third = post(base, token, good.read_bytes())
        own = get(f"{base}/api/submissions/{third['id']}", token)
        board = get(f"{base}/api/leaderboard")
        assert get(f"{base}/api/rounds") == {"rounds": []}
    salt = Path(f"{db}.salt")
    assert salt.is_file() and len(salt.read_text().strip()) == 32
    assert salt.stat().st_mode & 0o077 == 0  # owner-only secret

    fb1, fb2, fb3 = first["feedback"], second["feedback"], third["feedback"]
    for fb in (fb1, fb2, fb3, own["feedback"]):
        assert list(fb) == FEEDBACK_KEYS
        assert fb["mechanism"] == "ladder" and fb["fhr_budget"] == 0.05
        assert fb["n_rows"] == len(build.rows)
        assert 0 < fb["n_public_rows"] < len(build.rows)
        assert list(fb["best_level"]) == LEVEL_KEYS
        assert set(fb["latency_ms"]) == {"n", "p50", "p95", "p99"}
        assert fb["errors"] == {"n_errors": 0, "n_timeouts": 0}
    # Serving everything: over budget, its FHR band shown.
    assert fb1["released"] and fb1["level"]["rank"] == 0
    assert fb1["level"]["fhr_interval"] == [0.2, 1.0] and fb1["level"]["recall_interval"] is None
    # The same upload again is not above the best: nothing new is said.
    assert not fb2["released"] and fb2["level"] is None and fb2["best_level"] == fb1["level"]
    # Perfect decisions: within budget, top recall band.
    assert fb3["released"] and fb3["level"]["name"] == LEVELS[-1].name
    assert [fb["submission_number"] for fb in (fb1, fb2, fb3)] == [1, 2, 3]
    assert own["feedback"] == fb3
    text = json.dumps([first, second, third, own, board])
    for rid in build.ids:
        assert rid not in text
    for word in ('"fp"', '"tn"', '"tp"', '"fn"', "per_domain", "per_label", "confusion"):
        assert word not in text

    entries = board["entries"]
    assert [(e["name"], e["kind"], e["level_rank"]) for e in entries] == [
        ("good", "submission", 5),
        ("always_miss", "reference", 2),
    ]
    assert entries[0]["n_submissions"] == 3 and entries[0]["submitter"] == "live-team"
    assert board["n_public_rows"] == fb3["n_public_rows"]

    done = cli(
        "serve", "--standings", "--bench", str(build.bench), "--labels", str(build.labels),
        "--manifest", str(build.manifest), "--db", str(db),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"live-team: #{third['id']} good: public half {LEVELS[-1].name!r}" in done.stdout
    assert f"private half {LEVELS[-1].name!r}" in done.stdout
