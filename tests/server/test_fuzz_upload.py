"""Fuzz (hypothesis) of the upload parser and the upload endpoint: arbitrary
and hostile bodies give a :class:`SubmissionError` with a 4xx status (or a
graded upload), and over HTTP never a 5xx; a refused body stores nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("starlette")
pytest.importorskip("multipart")

from cacheeval.server.grading import SubmissionError, parse_upload  # noqa: E402
from tests.fuzz_bytes import hostile_bytes, hostile_records  # noqa: E402
from tests.server.conftest import MiniBuild, count_submissions, random_predictions  # noqa: E402
from tests.server.test_api import Env, make_env  # noqa: E402

FUZZ = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def _records(build: MiniBuild) -> list[dict[str, Any]]:
    """A complete, valid upload: the header and one prediction per test id."""
    header = {"cacheeval_predictions": "1.0", "cache_name": "fuzz", "dataset_sha256": None}
    return [header, *(p.to_dict() for p in random_predictions(build.ids, 8))]


def _samples(build: MiniBuild) -> tuple[bytes, bytes, bytes]:
    items = _records(build)[1:]
    jsonl = "".join(json.dumps(x) + "\n" for x in _records(build)[:5]).encode()
    array = json.dumps(items[:3]).encode()
    obj = json.dumps({"predictions": items[:2], "name": "n", "training_data": "t"}).encode()
    return jsonl, array, obj


def _draw_body(build: MiniBuild, data: st.DataObject) -> bytes:
    """Hostile bytes (alone or after valid lines), or a complete upload with one
    field made hostile (a huge number, a lone surrogate, 2,000 brackets ...)."""
    kind = data.draw(st.sampled_from(["bytes", "after", "field"]))
    if kind == "field":
        return data.draw(hostile_records(_records(build)))
    tail = data.draw(hostile_bytes(b'{"id": "cb-math-0001", "is_hit": true}\n', b"[1, 2]", b"{}"))
    return tail if kind == "bytes" else data.draw(st.sampled_from(_samples(build))) + tail


@FUZZ
@given(data=st.data())
def test_parse_upload_refuses_with_a_4xx(build: MiniBuild, data: st.DataObject) -> None:
    body = _draw_body(build, data)
    try:
        parse_upload(body, frozenset(build.ids), build.ids)
    except SubmissionError as e:
        assert 400 <= e.status < 500, e
        assert str(e)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, build: MiniBuild) -> Iterator[Env]:
    yield from make_env(
        tmp_path_factory.mktemp("fuzz-server"),
        build,
        limit=100_000,
        max_body=64 * 1024,
        refusals=100_000,  # every example is a refused upload of the same token
    )


@settings(FUZZ, max_examples=80)
@given(data=st.data())
def test_the_endpoint_never_answers_5xx(server: Env, build: MiniBuild, data: st.DataObject) -> None:
    before = count_submissions(server.db)
    resp = server.client.post(
        "/api/submissions", content=_draw_body(build, data), headers=server.auth()
    )
    assert resp.status_code < 500, resp.text
    if resp.status_code == 201:  # a hostile field that is still a valid prediction
        assert count_submissions(server.db) == before + 1
    else:
        assert resp.status_code in (400, 413, 422), resp.text
        assert "error" in resp.json()
        assert count_submissions(server.db) == before


def test_fuzz_samples_are_meaningful(build: MiniBuild) -> None:
    # The partial samples are refused only for what is missing ...
    for body in _samples(build):
        with pytest.raises(SubmissionError) as e:
            parse_upload(body, frozenset(build.ids), build.ids)
        assert e.value.status == 422 and "no prediction for" in str(e.value)
    # ... and the complete one the field fuzzing starts from is accepted.
    full = "".join(json.dumps(r) + "\n" for r in _records(build)).encode()
    assert len(parse_upload(full, frozenset(build.ids), build.ids).predictions) == 32
