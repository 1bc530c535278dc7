"""Label-mining attacks against the board's feedback.

Two attackers, each allowed 100 submissions from one token, see only what
the grading service sends back (the ``feedback`` of ``POST
/api/submissions``, through the real app) and then guess every test label:

* **single-row flip**: submit all-MISS, then all-MISS with one row flipped to
  HIT per submission; a row whose flip changes the answer is guessed HIT;
* **adaptive group testing**: submit HIT on a group of rows, read how many of
  them are HIT rows from the answer, and split mixed groups depth first (each
  query depends on the answers before it); guess each group's majority.

Against a grader that answers with exact counts (what the board used to send:
FHR numerators over all test rows) both attacks beat the majority rate by
more than 5 points - the attacks work. Against the Ladder on a public half
(:mod:`cacheeval.server.ladder`) both stay within 5 points of the majority
rate, and so does the computed leak bound.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")

from starlette.testclient import TestClient  # noqa: E402

from cacheeval.results.predictions import Prediction  # noqa: E402
from cacheeval.run.harness import score  # noqa: E402
from cacheeval.schema import DOMAINS, Row  # noqa: E402
from cacheeval.server import grading  # noqa: E402
from cacheeval.server.app import ServerConfig, create_app  # noqa: E402
from cacheeval.server.grading import halves_of  # noqa: E402
from cacheeval.server.ladder import leak_bound  # noqa: E402
from cacheeval.server.ratelimit import RateLimit  # noqa: E402
from cacheeval.server.store import Store  # noqa: E402
from tests.conftest import make_row  # noqa: E402

N_ROWS = 500
HIT_SHARE = 0.334  # the real test split: 167 HIT rows of 500
BUDGET = 100  # submissions per attack

Feedback = dict[str, Any]
Oracle = Callable[[list[bool]], Feedback]


def synthetic_test_set(seed: int = 13) -> grading.TestSet:
    rng = random.Random(seed)
    hits = set(rng.sample(range(N_ROWS), round(N_ROWS * HIT_SHARE)))
    rows = tuple(
        make_row(
            i + 1,
            "EQUIV" if i in hits else "ADVERSARIAL",
            DOMAINS[i % len(DOMAINS)],
            split="test",
        )
        for i in range(N_ROWS)
    )
    return grading.TestSet(rows, frozenset(r.id for r in rows), "d" * 64, "l" * 64)


def _body(ids: list[str], decisions: list[bool]) -> bytes:
    lines = [
        json.dumps(Prediction(rid, hit, 1.0, float(hit), "probe", 1.0, None).to_dict())
        for rid, hit in zip(ids, decisions, strict=True)
    ]
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture
def ladder_oracle(tmp_path: Path) -> Iterator[Oracle]:
    """The real app's feedback for one submitter (rate limit out of the way)."""
    test = synthetic_test_set()
    store = Store(tmp_path / "board.sqlite")
    token = store.add_submitter("attacker", "2026-01-01T00:00:00Z")
    config = ServerConfig(
        store=store,
        test=test,
        rate_limit=RateLimit(10_000, 3600.0),
        halves=halves_of(test, "server secret"),
    )
    ids = [r.id for r in test.rows]
    with TestClient(create_app(config)) as client:

        def oracle(decisions: list[bool]) -> Feedback:
            resp = client.post(
                "/api/submissions",
                content=_body(ids, decisions),
                headers={"Authorization": f"Bearer {token}"},
            )
            assert resp.status_code == 201, resp.text
            fb: Feedback = resp.json()["feedback"]
            return fb

        yield oracle


def exact_oracle(test: grading.TestSet) -> Oracle:
    """What the board used to answer: exact confusion counts over all test rows."""
    rows: list[Row] = list(test.rows)
    ids = [r.id for r in rows]

    def oracle(decisions: list[bool]) -> Feedback:
        preds = [
            Prediction(rid, hit, 1.0, float(hit), "probe", 1.0, None)
            for rid, hit in zip(ids, decisions, strict=True)
        ]
        c = score(preds, rows).confusion
        return {"fp": c.fp, "tp": c.tp}

    return oracle


def _signal(fb: Feedback) -> Any:
    """Everything in an answer that depends on the labels."""
    if "fp" in fb:
        return (fb["fp"], fb["tp"])
    return (fb["released"], fb["level"], fb["best_level"])


# --- the attacks ----------------------------------------------------------------------------


def single_row_flip(oracle: Oracle, n: int) -> list[bool]:
    """Guess HIT for a row when flipping it alone changes the answer in the
    direction a HIT row would (more true hits, or a newly released level)."""
    base = [False] * n
    first = oracle(base)
    guess = [False] * n  # the majority label for every row not learnt
    for i in range(BUDGET - 1):
        probe = list(base)
        probe[i] = True
        fb = oracle(probe)
        if "tp" in fb:
            guess[i] = fb["tp"] > first["tp"]
        else:
            guess[i] = fb["released"] and _signal(fb) != _signal(first)
    return guess


def adaptive_group_testing(oracle: Oracle, n: int, group: int = 16) -> list[bool]:
    """Query HIT on a group of rows and read from the answer how many of them
    are HIT rows; while a group is mixed, split it (query one half, the other
    half's count follows by subtraction), depth first, so every query depends
    on the answers before it; open a new group when none is mixed. Guess each
    group's majority label. When every row is covered and no group is mixed,
    start a finer pass with groups half the size."""
    base = oracle([False] * n)
    used = 1

    def count(rows: list[int]) -> int:
        nonlocal used
        used += 1
        probe = [False] * n
        for i in rows:
            probe[i] = True
        fb = oracle(probe)
        if "tp" in fb:
            return int(fb["tp"] - base["tp"])
        # Levels only: a newly released level is the one label-dependent signal.
        return len(rows) if fb["released"] and _signal(fb) != _signal(base) else 0

    known: list[tuple[list[int], int]] = []
    start = 0
    while used < BUDGET:
        mixed = [g for g in known if len(g[0]) > 1 and 0 < g[1] < len(g[0])]
        if mixed:
            rows, c = mixed[-1]
            known.remove((rows, c))
            half = len(rows) // 2
            left = min(max(count(rows[:half]), 0), half)
            right = min(max(c - left, 0), len(rows) - half)
            known += [(rows[:half], left), (rows[half:], right)]
        elif start < n:
            rows = list(range(start, min(start + group, n)))
            start += group
            known.append((rows, count(rows)))
        elif group > 1:  # every row covered and nothing mixed: a finer pass
            group, start = group // 2, 0
        else:
            break
    guess = [False] * n  # later (finer) groups override earlier ones
    for rows, c in known:
        for i in rows:
            guess[i] = 2 * c > len(rows)
    return guess


def accuracy(test: grading.TestSet, guess: list[bool]) -> float:
    truth = [r.binary_label == "HIT" for r in test.rows]
    return sum(g == t for g, t in zip(guess, truth, strict=True)) / len(truth)


MAJORITY = 1.0 - round(N_ROWS * HIT_SHARE) / N_ROWS


@pytest.mark.parametrize("attack", [single_row_flip, adaptive_group_testing])
def test_attacks_mine_exact_counts(attack: Callable[[Oracle, int], list[bool]]) -> None:
    # The attacks are real: against exact counts they beat the majority rate.
    test = synthetic_test_set()
    acc = accuracy(test, attack(exact_oracle(test), N_ROWS))
    assert acc - MAJORITY > 0.05, acc


@pytest.mark.parametrize("attack", [single_row_flip, adaptive_group_testing])
def test_the_ladder_keeps_attackers_near_the_majority_rate(
    attack: Callable[[Oracle, int], list[bool]], ladder_oracle: Oracle
) -> None:
    test = synthetic_test_set()
    calls = 0

    def counted(decisions: list[bool]) -> Feedback:
        nonlocal calls
        calls += 1
        return ladder_oracle(decisions)

    acc = accuracy(test, attack(counted, N_ROWS))
    assert calls == BUDGET
    assert abs(acc - MAJORITY) <= 0.05, acc


def test_the_leak_bound_for_100_submissions() -> None:
    # Levels alone: at most 5 points above the majority rate. The sub-score
    # bands released with each level (at most 6 releases x log2 18 bits) cost
    # 2.4 more points: documented in docs/leaderboard.md, bounded here.
    test = synthetic_test_set()
    halves = halves_of(test, "server secret")
    hits = {r.id for r in test.rows if r.binary_label == "HIT"}

    def majority(ids: frozenset[str]) -> int:
        n_hit = len(ids & hits)
        return max(n_hit, len(ids) - n_hit)

    bound = leak_bound(
        BUDGET,
        len(halves.public),
        majority(halves.public),
        len(halves.private),
        majority(halves.private),
    )
    assert bound.majority_rate == pytest.approx(MAJORITY)
    assert 0 < bound.points_above_majority <= 7.5, bound
    levels_only = leak_bound(
        BUDGET,
        len(halves.public),
        majority(halves.public),
        len(halves.private),
        majority(halves.private),
        subscore_choices_=1,
    )
    assert 0 < levels_only.points_above_majority <= 5.0, levels_only
    assert bound.bits - levels_only.bits == pytest.approx(6 * math.log2(18))
