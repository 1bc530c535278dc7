"""Property tests: invariants every metric must keep on any input."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from cacheeval.baselines import AlwaysHit, AlwaysMiss
from cacheeval.metrics.classification import confusion, fhr, recall
from cacheeval.metrics.intervals import wilson_interval
from cacheeval.metrics.ranking import threshold_free
from cacheeval.run.harness import evaluate
from cacheeval.schema import DIFFICULTIES, DOMAINS, LABELS, Pair, Verdict
from tests.conftest import make_row

# (is HIT row, decision, score or None); scores on a coarse grid so ties occur.
ITEM = st.tuples(
    st.booleans(),
    st.booleans(),
    st.one_of(st.none(), st.integers(0, 8).map(lambda k: k / 8)),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(ITEM, min_size=1, max_size=40), st.randoms(use_true_random=False))
def test_row_order_changes_no_metric(items: list[tuple[bool, bool, float | None]], rnd) -> None:  # type: ignore[no-untyped-def]
    shuffled = list(items)
    rnd.shuffle(shuffled)

    def compute(xs: list[tuple[bool, bool, float | None]]) -> object:
        y = [int(t) for t, _, _ in xs]
        return confusion(y, [p for _, p, _ in xs]), threshold_free(y, [s for _, _, s in xs])

    assert compute(items) == compute(shuffled)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(LABELS), st.sampled_from(DOMAINS), st.sampled_from(DIFFICULTIES)),
        min_size=1,
        max_size=25,
    ),
    st.randoms(use_true_random=False),
)
def test_report_is_order_invariant(spec, rnd) -> None:  # type: ignore[no-untyped-def]
    rows = [
        make_row(i, lab, dom, difficulty=d, query_b=f"variant {i}")
        for i, (lab, dom, d) in enumerate(spec)
    ]
    shuffled = list(rows)
    rnd.shuffle(shuffled)

    def by_id(pair: Pair) -> Verdict:
        # A pair-dependent decision and score, so order effects would show.
        k = int(pair.b.query.split()[-1])
        tier = ("exact", "embedding", "judge")[k % 3]
        return Verdict(is_hit=k % 2 == 0, confidence=0.5, tier_used=tier, score=(k % 5) / 4)

    def body(rs):  # type: ignore[no-untyped-def]
        # Everything but provenance (time) and latency (timing noise).
        r = evaluate(by_id, rs).to_dict()
        return {k: v for k, v in r.items() if k not in ("provenance", "latency")}

    assert body(rows) == body(shuffled)


@given(st.integers(0, 500).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_contains_estimate_within_unit_interval(kn: tuple[int, int]) -> None:
    k, n = kn
    ci = wilson_interval(k, n)
    if n == 0:
        assert ci is None
        return
    assert ci is not None
    lo, hi = ci
    assert 0.0 <= lo <= k / n <= hi <= 1.0
    assert lo < hi


@given(st.lists(st.booleans(), min_size=1, max_size=60))
def test_always_miss_fhr_zero_always_hit_recall_one(truth: list[bool]) -> None:
    y = [int(t) for t in truth]
    miss = fhr(confusion(y, [False] * len(y)))
    hit = recall(confusion(y, [True] * len(y)))
    if 0 in y:
        assert miss.value == 0.0
    else:
        assert miss.value is None
    if 1 in y:
        assert hit.value == 1.0
    else:
        assert hit.value is None


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(LABELS), st.sampled_from(DOMAINS)), min_size=1, max_size=20)
)
def test_baselines_through_the_harness(spec: list[tuple[str, str]]) -> None:
    rows = [make_row(i, lab, dom) for i, (lab, dom) in enumerate(spec)]
    floor = evaluate(AlwaysMiss(), rows)
    ceiling = evaluate(AlwaysHit(), rows)
    has_miss = any(r.y == 0 for r in rows)
    has_hit = any(r.y == 1 for r in rows)
    assert floor.headline.fhr.value == (0.0 if has_miss else None)
    assert ceiling.headline.recall.value == (1.0 if has_hit else None)
    assert ceiling.headline.fhr.value == (1.0 if has_miss else None)


@given(st.lists(ITEM, min_size=1, max_size=60))
def test_auc_values_in_unit_interval(items: list[tuple[bool, bool, float | None]]) -> None:
    tf = threshold_free([int(t) for t, _, _ in items], [s for _, _, s in items])
    for value in (tf.pr_auc, tf.roc_auc, tf.p_chr_auc, tf.positive_rate):
        assert value is None or 0.0 <= value <= 1.0 + 1e-12
    for op in tf.operating_points:
        assert op.fhr is None or op.fhr <= op.alpha
        assert op.recall is None or 0.0 <= op.recall <= 1.0


def test_make_row_helper_derives_binary() -> None:
    row = make_row(1, "EQUIV", verification_method="policy_no_cache")
    assert row.binary_label == "MISS"
    assert dataclasses.replace(row, label="PARA_SAFE").label == "PARA_SAFE"
