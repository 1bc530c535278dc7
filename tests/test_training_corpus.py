"""The training corpus (sources/training/): built by the domains' own generators,
marked as training-only, described by its committed manifest, and disjoint by
family and by normalised text from the dev and test rows and the held-out pools."""

from __future__ import annotations

import json

from cacheeval.pipeline.training_corpus import (
    ID_PREFIX,
    MANIFEST_FILE,
    METHOD_PREFIX,
    TRAINING_DIR,
    corpus,
    disjointness_problems,
    graded_reference,
    manifest,
)
from cacheeval.support.layout import DOMAINS_DIR, REPO_ROOT


def test_corpus_rows_say_what_they_are() -> None:
    rows = corpus()
    assert len(rows) >= 50
    assert len({r["id"] for r in rows}) == len(rows)
    for r in rows:
        assert r["id"].startswith(f"{ID_PREFIX}-{r['domain']}-")
        assert r["split"] == "train"
        assert r["construction_method"].startswith(METHOD_PREFIX)
        assert r["source"].startswith(f"sources/training/{r['domain']}/")
    labels = {r["label"] for r in rows}
    assert {"EQUIV", "PARA_SAFE", "ADVERSARIAL", "RELATED_UNSAFE", "UNRELATED"} <= labels


def test_committed_manifest_is_current() -> None:
    committed = json.loads((TRAINING_DIR / MANIFEST_FILE).read_text(encoding="utf-8"))
    assert committed == manifest(corpus())


def test_corpus_is_disjoint_from_everything_graded() -> None:
    graded, families = graded_reference(REPO_ROOT / "cachebench.jsonl", DOMAINS_DIR)
    assert {r.get("split") for r in graded if r.get("id", "").startswith("cb-")} >= {"dev", "test"}
    assert len(families) > 100
    assert disjointness_problems(corpus(), graded, families) == []


def test_disjointness_names_a_shared_family_and_a_shared_text() -> None:
    row = {
        "id": "tr-qa_factual-0001",
        "source": "sources/training/qa_factual/x.json#capitals",
        "query_a": "How many hours are in a week?",
        "query_b": "What is the capital of France?",
        "context_a": [{"role": "user", "content": "Hi there"}],
    }
    graded = [{"id": "cb-qa_factual-0007", "query_a": "what is the  CAPITAL of France?",
               "query_b": "Something else"}]  # fmt: skip
    problems = disjointness_problems([row], graded, {"capitals"})
    assert problems == [
        "tr-qa_factual-0001: family 'capitals' is also a graded family",
        "tr-qa_factual-0001: text 'what is the capital of france?' is also in cb-qa_factual-0007",
    ]
    assert disjointness_problems([row], [], {"other"}) == []
