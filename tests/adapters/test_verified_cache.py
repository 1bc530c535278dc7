"""The verified cache: Clopper-Pearson, the certified threshold, deterministic
training, grouped folds, the cache API and its policy tier, train/serve parity,
the committed model, and (with the real MiniLM ONNX model) the anchor examples
offline."""

from __future__ import annotations

import dataclasses
import hashlib
import math
import random
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("lightgbm")
np = pytest.importorskip("numpy")

from adapters.verified_cache.adapter import VerifiedCacheAdapter  # noqa: E402
from adapters.verified_cache.cache import Resources, VerifiedCache, with_value  # noqa: E402
from adapters.verified_cache.features import FEATURE_NAMES, Request, analyze  # noqa: E402
from adapters.verified_cache.model import (  # noqa: E402
    MODEL_DIR,
    NEVER,
    Certificate,
    Verifier,
    beta_ppf,
    betainc,
    certify_threshold,
    clopper_pearson,
    decide,
    fhr_upper_bound,
    max_false_hits,
    serving_threshold,
    train_booster,
)
from adapters.verified_cache.policy import check, request_policy  # noqa: E402
from adapters.verified_cache.training import (  # noqa: E402
    GATE_CEILING,
    build_cases,
    choose_gate,
    fit_shipped,
    grouped_folds,
    out_of_fold,
    score_cases,
)
from cacheeval.metrics.sweep import OperatingPoint  # noqa: E402
from cacheeval.schema import Row  # noqa: E402

from .conftest import make_row  # noqa: E402

# --- a tiny deterministic embedder (no model) -------------------------------------------


class HashEmbedder:
    """Bag of words hashed into 64 dimensions (sha256, never hash()), L2-normalised."""

    name = "hash"
    dim = 64
    version = "test"

    def __init__(self) -> None:
        self.calls = 0

    def encode(self, texts: list[str]) -> Any:
        self.calls += 1
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for tok in re.findall(r"\w+", text.lower()):
                h = hashlib.sha256(tok.encode()).digest()
                out[i, h[0] % self.dim] += 1.0 if h[1] % 2 else -1.0
            n = float(np.linalg.norm(out[i]))
            if n:
                out[i] /= n
        return out


CAPITALS = [
    "France",
    "Spain",
    "Italy",
    "Peru",
    "Chile",
    "Kenya",
    "Japan",
    "Egypt",
    "Ghana",
    "Nepal",
]
ANIMALS = [
    "spider",
    "beetle",
    "crab",
    "lobster",
    "octopus",
    "starfish",
    "ant",
    "mite",
    "shrimp",
    "moth",
]


def synthetic_rows() -> list[Row]:
    """100 labelled rows from templates: surface variants (HIT) and answer-determining
    changes (MISS), 60 train / 40 dev, one family per template item."""
    rows: list[Row] = []
    rnd = random.Random(7)
    for i, country in enumerate(CAPITALS):
        other = CAPITALS[(i + 3) % len(CAPITALS)]
        animal = ANIMALS[i]
        n, m = 10 + i, 20 + 2 * i
        fam = f"tests#item{i}"
        pairs = [
            (
                f"What is the capital of {country}?",
                f"what is the capital of {country.lower()}",
                "EQUIV",
            ),
            (
                f"How many legs does a {animal} have?",
                f"How many legs do {animal}s have?",
                "PARA_SAFE",
            ),
            (f"What is {n}% of 80?", f"what's {n} percent of 80", "EQUIV"),
            (f"Solve x + {n} = {m}", f"solve x+{n}={m}", "EQUIV"),
            (
                f"Tell me about {country}'s history",
                f"Give me the history of {country}",
                "PARA_SAFE",
            ),
            (
                f"What is the capital of {country}?",
                f"What is the capital of {other}?",
                "ADVERSARIAL",
            ),
            (f"What is {n}% of 80?", f"What is {m}% of 80?", "ADVERSARIAL"),
            (f"Solve x + {n} = {m}", f"Solve y + {n} = {m}", "ADVERSARIAL"),
            (
                f"How many legs does a {animal} have?",
                f"What does a {animal} eat?",
                "RELATED_UNSAFE",
            ),
            (
                f"What is the capital of {country}?",
                f"How do I bake bread with {animal}?",
                "UNRELATED",
            ),
        ]
        for j, (a, b, label) in enumerate(pairs):
            k = 10 * i + j
            split = "train" if k % 5 in (0, 1, 2) else "dev"
            row = make_row(1000 + k, a, b, label, source=fam, split=split)
            rows.append(row)
    rnd.shuffle(rows)
    return rows


@pytest.fixture(scope="module")
def synthetic() -> tuple[list[Row], Resources]:
    return synthetic_rows(), Resources(embedder=HashEmbedder())


@pytest.fixture(scope="module")
def shipped(synthetic):
    rows, res = synthetic
    return fit_shipped(build_cases(rows, res))


# --- Clopper-Pearson --------------------------------------------------------------------


def test_incomplete_beta_identities() -> None:
    for z in (0.0, 0.1, 0.37, 0.5, 0.9, 1.0):
        assert betainc(1, 1, z) == pytest.approx(z, abs=1e-12)
        assert betainc(3, 1, z) == pytest.approx(z**3, abs=1e-12)
    for a, b, z in ((2.5, 7.0, 0.2), (30, 400, 0.05), (0.5, 0.5, 0.7)):
        assert betainc(a, b, z) == pytest.approx(1 - betainc(b, a, 1 - z), abs=1e-12)
    assert betainc(0.5, 0.5, 0.5) == pytest.approx(0.5, abs=1e-12)
    # I_z(2, 2) = 3z^2 - 2z^3
    assert betainc(2, 2, 0.3) == pytest.approx(3 * 0.09 - 2 * 0.027, abs=1e-12)
    with pytest.raises(ValueError):
        betainc(0, 1, 0.5)


def test_clopper_pearson_known_values() -> None:
    # x = 0: the upper end solves (1 - p)^n = alpha/2; x = n: the lower end p^n = alpha/2
    lo, hi = clopper_pearson(0, 10)
    assert lo == 0.0 and hi == pytest.approx(1 - 0.025 ** (1 / 10), abs=1e-9)
    lo, hi = clopper_pearson(10, 10)
    assert hi == 1.0 and lo == pytest.approx(0.025 ** (1 / 10), abs=1e-9)
    # the textbook value for 5/10
    lo, hi = clopper_pearson(5, 10)
    assert lo == pytest.approx(0.187086, abs=1e-5) and hi == pytest.approx(0.812914, abs=1e-5)
    # one-sided 95% bound for x = 0: 1 - 0.05^(1/n) (the "rule of three" ~ 3/n)
    assert fhr_upper_bound(0, 100) == pytest.approx(1 - 0.05 ** (1 / 100), abs=1e-9)
    assert fhr_upper_bound(0, 1000) == pytest.approx(0.002991, abs=1e-5)
    assert beta_ppf(0.5, 2, 2) == pytest.approx(0.5, abs=1e-9)
    with pytest.raises(ValueError):
        clopper_pearson(3, 2)


def test_clopper_pearson_matches_scipy() -> None:
    stats = pytest.importorskip("scipy.stats")
    rnd = random.Random(1)
    for _ in range(40):
        n = rnd.randint(1, 2500)
        x = rnd.randint(0, n)
        lo, hi = clopper_pearson(x, n)
        want_lo = 0.0 if x == 0 else stats.beta.ppf(0.025, x, n - x + 1)
        want_hi = 1.0 if x == n else stats.beta.ppf(0.975, x + 1, n - x)
        assert lo == pytest.approx(want_lo, abs=1e-9) and hi == pytest.approx(want_hi, abs=1e-9)
        one = 1.0 if x == n else stats.beta.ppf(0.95, x + 1, n - x)
        assert fhr_upper_bound(x, n) == pytest.approx(one, abs=1e-9)


def test_max_false_hits_is_the_largest_certifiable_count() -> None:
    for n in (20, 59, 330, 1325):
        x = max_false_hits(n)
        assert x == -1 or fhr_upper_bound(x, n) <= 0.05
        assert fhr_upper_bound(x + 1, n) > 0.05
    assert max_false_hits(20) == -1  # 0/20 still allows up to 13.9%
    assert max_false_hits(59) == 0  # 1 - 0.05^(1/59) = 0.0495


def test_certify_threshold_picks_the_lowest_safe_threshold() -> None:
    # 100 negatives: the budget is max_false_hits(100, 0.05) false hits
    budget = max_false_hits(100, 0.10)
    scores = [0.99, 0.95, 0.9, 0.9, 0.8, 0.7] + [0.6 - i * 0.005 for i in range(100)]
    labels = [1, 1, 1, 0, 1, 1] + [0] * 100
    op = certify_threshold(scores, labels, max_fhr=0.10)
    served_neg = sum(1 for s, y in zip(scores, labels, strict=True) if s >= op.threshold and not y)
    assert served_neg == op.fp <= budget
    assert op.certified and op.fhr_upper <= 0.10
    lower = [s for s in scores if s < op.threshold]
    if lower:  # one step lower would break the budget
        nxt = max(lower)
        assert sum(1 for s, y in zip(scores, labels, strict=True) if s >= nxt and not y) > budget
    # ties are served together; scores of 0 (policy, gate) are never served
    op0 = certify_threshold([0.0] * 30 + [0.9, 0.9, 0.0], [0] * 30 + [1, 1, 1], max_fhr=0.2)
    assert op0.threshold == 0.9 and op0.tp == 2 and op0.fp == 0 and op0.recall == 2 / 3
    # too few negatives to certify anything: serve nothing
    none = certify_threshold([0.9, 0.8], [1, 0])
    assert none.threshold == NEVER and none.tp == 0 and not none.certified
    with pytest.raises(ValueError):
        certify_threshold([0.9], [1])


def test_certify_threshold_is_the_last_certifiable_positive_score() -> None:
    # Brute force: scan the distinct positive scores from the top, counting served
    # must-miss rows, and stop where the one-sided bound first exceeds the budget.
    rng = random.Random(16)
    for _ in range(40):
        n = rng.randint(60, 160)
        labels = [int(rng.random() < 0.4) for _ in range(n)]
        scores = [
            0.0 if rng.random() < 0.15 else min(1.0, round(rng.random() * 0.8 + 0.3 * y, 2))
            for y in labels
        ]
        n_neg = labels.count(0)
        expected, expected_fp = NEVER, 0
        for s in sorted({s for s in scores if s > 0}, reverse=True):
            fp = sum(1 for x, y in zip(scores, labels, strict=True) if x >= s and not y)
            if fhr_upper_bound(fp, n_neg) > 0.10:
                break
            expected, expected_fp = s, fp
        op = certify_threshold(scores, labels, max_fhr=0.10)
        assert (op.threshold, op.fp) == (expected, expected_fp)
        assert op.point.n_fired == sum(1 for x in scores if x >= op.threshold)


def test_certificate_round_trips_the_meta_record() -> None:
    op = certify_threshold([0.9, 0.8, 0.8] + [0.1] * 80, [1, 1, 0] + [0] * 80, max_fhr=0.1)
    assert Certificate.from_dict(op.to_dict()) == op
    assert (op.point.threshold, op.point.n_fired, op.point.precision) == (0.8, 3, 2 / 3)
    never = certify_threshold([0.9, 0.8], [1, 0])
    assert never.point.threshold is None and never.to_dict()["threshold"] == NEVER
    assert Certificate.from_dict(never.to_dict()) == never


def test_decide_is_the_tier_rule() -> None:
    assert decide("policy", None, 0.9, 0.7) == (False, 0.0)
    assert decide("exact", None, 0.1, 0.7) == (True, 1.0)
    assert decide("embedding", None, 0.5, 0.7) == (False, 0.99 * 0.7 * 0.5)
    assert decide("verifier", 0.7, 0.5, 0.7) == (True, 0.7)  # at the threshold: served
    assert decide("verifier", 0.69, 0.5, 0.7) == (False, 0.99 * 0.7 * 0.5)
    assert decide("verifier", 0.99, 0.5, NEVER)[0] is False
    with pytest.raises(ValueError):
        decide("verifier", None, 0.5, 0.7)


# --- training ---------------------------------------------------------------------------


def test_training_is_deterministic(synthetic) -> None:
    rows, _ = synthetic
    # fresh resources each time: nothing cached between the two runs
    a = fit_shipped(build_cases(rows, Resources(embedder=HashEmbedder())))
    b = fit_shipped(build_cases(rows, Resources(embedder=HashEmbedder())))
    assert a.verifier.model_string() == b.verifier.model_string()
    assert a.verifier.meta.model_sha256 == b.verifier.meta.model_sha256
    assert a.verifier.meta.training["data_sha256"] == b.verifier.meta.training["data_sha256"]
    assert [s.score for s in a.scored] == [s.score for s in b.scored]
    assert a.operating_point == b.operating_point
    # and the booster itself, straight from a feature matrix
    X = [
        [float(i % 7), float(i % 3), float(i) / 10] + [0.0] * (len(FEATURE_NAMES) - 3)
        for i in range(60)
    ]
    y = [int(i % 7 > 3) for i in range(60)]
    assert train_booster(X, y).model_to_string() == train_booster(X, y).model_to_string()


def test_shipped_model_learns_the_synthetic_rules(shipped) -> None:
    # the rules a detected difference carries: surface variants (EQUIV) pass, a
    # changed number, variable or name (ADVERSARIAL) is vetoed; a reworded
    # question (RELATED_UNSAFE vs PARA_SAFE) is the embedding's call, and the
    # hash embedder of these tests knows no meaning
    dev = [
        s
        for s in shipped.scored
        if s.case.split == "dev"
        and s.tier == "verifier"
        and s.case.label in ("EQUIV", "ADVERSARIAL")
    ]
    correct = sum(1 for s in dev if (s.raw >= 0.5) == bool(s.case.y))
    assert len(dev) >= 10 and correct >= 0.9 * len(dev)
    # 40 dev rows hold too few must-miss rows to certify FHR <= 5%: serve nothing
    op = shipped.operating_point
    assert op.n_negative < 59 and op.threshold == NEVER and not op.certified
    meta = shipped.verifier.meta
    assert meta.training["split"] == "train" and meta.training["calibration"] == "dev"
    assert meta.feature_names == FEATURE_NAMES
    assert 0.0 < meta.threshold <= 1.0 or meta.threshold == NEVER


def test_grouped_folds_never_split_a_family(synthetic) -> None:
    rows, res = synthetic
    cases = build_cases(rows, res)
    folds = grouped_folds(cases, 5)
    by_family: dict[str, set[int]] = {}
    for c in cases:
        by_family.setdefault(c.family, set()).add(folds[c.id])
    assert all(len(f) == 1 for f in by_family.values())
    sizes = [sum(1 for c in cases if folds[c.id] == k) for k in range(5)]
    assert sorted(sizes) == [20] * 5  # ten families of ten rows: two per fold
    assert grouped_folds(list(reversed(cases)), 5) == folds  # order does not matter
    oof = out_of_fold(cases, k=5)
    assert {s.case.id for s in oof.scored} == {c.id for c in cases}


def test_choose_gate_keeps_the_servable_rows(synthetic) -> None:
    rows, res = synthetic
    cases = build_cases(rows, res)
    gate = choose_gate(cases)
    hit_cos = [c.cos_query for c in cases if c.y and not c.settled]
    assert 0.10 <= gate <= 0.60
    assert sum(1 for v in hit_cos if v < gate) <= 0.005 * len(hit_cos)
    fake = [dataclasses.replace(cases[0], y=1, settled="", cos_query=0.97)] * 10
    assert choose_gate(fake) == GATE_CEILING == 0.40  # never above the ceiling


# --- the cache API ----------------------------------------------------------------------


@pytest.fixture
def cache(shipped) -> VerifiedCache:
    return VerifiedCache(resources=Resources(verifier=shipped.verifier, embedder=HashEmbedder()))


def test_put_get_round_trip_and_empty_cache(cache: VerifiedCache) -> None:
    assert cache.get("What is the capital of France?") is None
    assert cache.lookup("What is the capital of France?").tier == "embedding"
    assert cache.put("What is the capital of France?", "Paris").stored
    assert len(cache) == 1
    assert cache.get("What is the capital of France?") == "Paris"
    d = cache.lookup(Request("What is the capital of France?"))
    assert d.hit and d.tier == "exact" and d.score == 1.0
    assert cache.get("How do I change a bicycle tyre?") is None
    cache.clear()
    assert len(cache) == 0 and cache.get("What is the capital of France?") is None
    with pytest.raises(TypeError):
        cache.put("q", 42)  # type: ignore[arg-type]


def test_policy_refuses_a_mutation(cache: VerifiedCache) -> None:
    email = {"name": "send_email", "description": "Send an email."}
    req = Request("Email Dana that I'll be 10 minutes late", tools=(email,))
    result = cache.put(req, "send_email(to='Dana', ...)")
    assert not result.stored and result.reason.startswith("mutation")
    d = cache.lookup(req)
    assert not d.hit and d.tier == "policy" and "mutation" in d.reason
    # without a mutating tool the same words only ask for a draft
    assert request_policy("Email Dana that I'll be 10 minutes late").allowed


def test_a_tool_declared_cacheable_is_not_mutating() -> None:
    tip = {"name": "calculate_tip", "description": "Compute a tip.", "policy": "cacheable"}
    req = Request("Calculate a 20% tip on an $86 bill", tools=(tip,))
    assert request_policy(req).allowed
    # the same name without the declaration: a tip is given (the name's verb decides)
    undeclared = {"name": "calculate_tip", "description": "Compute a tip."}
    assert request_policy(Request(req.query, tools=(undeclared,))).rule == "mutation"
    nested = {"type": "function", "function": {**tip}}
    assert request_policy(Request(req.query, tools=(nested,))).allowed


def test_a_declared_never_cache_policy_binds_only_the_tool_the_query_calls(
    cache: VerifiedCache,
) -> None:
    alarm = {
        "name": "set_alarm",
        "description": "Create an alarm on the user's phone at a clock time.",
        "policy": "mutation",
        "parameters": {"type": "object", "properties": {"time": {"type": "string"}}},
    }
    hotels = {
        "name": "search_hotels",
        "description": "Live room availability and nightly prices of hotels in a city.",
        "policy": "time_sensitive",
    }
    units = {
        "name": "convert_units",
        "description": "Convert a quantity between units of length, mass or volume.",
        "policy": "cacheable",
    }
    bundle = (alarm, hotels, units)
    # a device action: no mutating verb in its name, but its definition says so
    set_alarm = Request("Set an alarm for 7 am", tools=bundle)
    verdict = request_policy(set_alarm)
    assert (verdict.allowed, verdict.rule) == (False, "mutation")
    assert "set_alarm" in verdict.reason
    assert not cache.put(set_alarm, "set_alarm(time='07:00')").stored
    assert request_policy(Request("Find hotels in Tokyo for October", tools=bundle)).rule == (
        "time_sensitive"
    )
    # the same bundle, a query for the cacheable tool: allowed, stored, served
    convert = Request("Convert 10 km to miles", tools=bundle)
    assert request_policy(convert).allowed
    assert cache.put(convert, "6.21 miles").stored
    assert cache.get(convert) == "6.21 miles"
    # an analysis passed in gives the same verdicts (the cache passes the one it keeps)
    for req in (set_alarm, convert):
        assert request_policy(req, analyze(req)) == request_policy(req)
    # without the declaration the alarm is the user's own device state: allowed
    undeclared = {k: v for k, v in alarm.items() if k != "policy"}
    assert request_policy(Request(set_alarm.query, tools=(undeclared, units))).allowed


def test_policy_refuses_another_system_prompt(cache: VerifiedCache) -> None:
    q = "Summarise the refund policy"
    assert cache.put(Request(q, system_prompt="You are the support bot of Acme."), "30 days").stored
    other = cache.lookup(Request(q, system_prompt="You are the support bot of Globex."))
    assert not other.hit and other.tier == "policy" and other.reason.startswith("cross_user")
    same = cache.lookup(Request(q, system_prompt="You are the support bot of  Acme."))
    assert same.hit and same.tier == "exact"  # whitespace does not change the scope


def test_policy_refuses_poems_live_data_and_profiles(cache: VerifiedCache) -> None:
    cache.put("Tell me about the sea", "The sea is ...")
    for query, rule in (
        ("Write a poem about the sea", "creative"),
        ("Tell me a joke about the sea", "creative"),
        ("What's the weather in Paris right now?", "time_sensitive"),
        ("Get me a quote for MSFT", "time_sensitive"),
        ("Convert 250 euros to US dollars", "time_sensitive"),
    ):
        d = cache.lookup(query)
        assert not d.hit and d.tier == "policy" and d.reason.startswith(rule), query
    profile = Request("What's my balance?", system_prompt="Member: Chloe Dubois. Balance: $20.")
    assert check(profile, profile).rule == "personal_data"
    # ordinary writing help and code are not "creative"
    for query in (
        "Help me write a short thank-you note to my neighbour",
        "Write a Python function sort_people(people) sorted by name",
        "Any tips for giving a best man speech?",
    ):
        assert request_policy(query).allowed, query


def _at_half(shipped) -> OperatingPoint:
    """The shipped point moved to threshold 0.5 (the certified one serves nothing on
    40 dev rows); a cache reads only the threshold."""
    point = shipped.operating_point.point
    assert point.threshold is None  # what the shipped cache would serve: nothing
    return dataclasses.replace(point, threshold=0.5)


def test_lazy_span_embedding_gives_the_same_decisions(synthetic, shipped) -> None:
    rows, _ = synthetic
    if not shipped.verifier.monotone_cos_diff:
        pytest.skip("verifier not monotone in cos_diff")
    emb = HashEmbedder()
    decisions = {}
    for lazy in (True, False):
        res = Resources(verifier=shipped.verifier, embedder=emb)
        out = []
        for r in rows:
            c = VerifiedCache(resources=res, lazy_spans=lazy, operating_point=_at_half(shipped))
            c.put(r.request("a"), "answer")
            out.append(c.lookup(r.request("b")).hit)
        decisions[lazy] = out
    assert decisions[True] == decisions[False]
    assert 20 <= sum(decisions[True]) <= 80  # both kinds of decision occur


def test_adapter_matches_batch_scoring(synthetic, shipped) -> None:
    rows, _ = synthetic
    v = shipped.verifier
    adapter = VerifiedCacheAdapter(
        verifier=v, embedder=HashEmbedder(), operating_point=_at_half(shipped)
    )
    adapter.prepare([r.pair for r in rows])
    verdicts = {r.id: adapter(r.pair) for r in rows}
    adapter.close()
    assert len(adapter.put_latencies_ms) == len(rows)
    batch = score_cases(
        build_cases(rows, Resources(embedder=HashEmbedder())),
        v,
        v.gate_threshold,
        _at_half(shipped),
    )
    assert any(s.hit for s in batch) and not all(s.hit for s in batch)
    for s in batch:
        verdict = verdicts[s.case.id]
        assert verdict.is_hit == s.hit, s.case.id
        assert verdict.tier_used == s.tier, s.case.id
        assert 0.0 <= verdict.confidence <= 1.0 and verdict.score is not None
        if s.tier in ("verifier",) and not v.monotone_cos_diff:
            assert verdict.score == pytest.approx(s.score)


# --- the committed model ----------------------------------------------------------------


def committed() -> Verifier:
    if not (MODEL_DIR / "verifier.txt").is_file():
        pytest.skip("no committed model (run scripts/train_verified_cache.py)")
    return Verifier.load()


def test_committed_model_matches_this_code() -> None:
    v = committed()
    meta = v.meta
    assert meta.feature_names == FEATURE_NAMES
    op = meta.operating_point
    assert op["certified"] and op["fhr_upper"] <= op["max_fhr"] == 0.05
    assert meta.threshold == op["threshold"]
    # the certified point the cache serves with, read back from the record unchanged
    assert v.certificate is not None and v.certificate.to_dict() == op
    assert v.operating_point.threshold == meta.threshold and v.operating_point.alpha == 0.05
    assert meta.training["split"] == "train" and meta.training["calibration"] == "dev"
    assert meta.training["params"]["num_threads"] == 1 and meta.training["params"]["deterministic"]
    assert 0.0 < v.gate_threshold < 1.0


def test_committed_model_replays_from_its_feature_table() -> None:
    """Retraining from the committed feature table (every train, training-corpus and
    dev row the model read) gives the committed model and meta byte for byte."""
    from adapters.verified_cache.reproduce import meta_diff, read_table
    from adapters.verified_cache.training import CORPUS_WEIGHT, is_corpus

    v = committed()
    table = read_table(MODEL_DIR)
    training = v.meta.training
    replay = fit_shipped(table, data_id=training["dataset"], embedder=training["embedder"])
    assert meta_diff(replay.verifier, v) == []
    assert replay.verifier.model_string() == v.model_string()
    corpus_rows = [c for c in table if is_corpus(c)]
    assert training["corpus_rows_total"] == len(corpus_rows) > 0
    assert training["corpus_weight"] == CORPUS_WEIGHT
    assert {c.split for c in corpus_rows} == {"train"}
    assert "+corpus:" in training["dataset"]


def test_committed_model_is_monotone_in_the_span_cosine() -> None:
    v = committed()
    assert v.monotone_cos_diff
    rnd = random.Random(3)
    idx = FEATURE_NAMES.index("cos_diff")
    for _ in range(50):
        base = tuple(
            rnd.uniform(0, 3) if rnd.random() < 0.5 else rnd.random() for _ in FEATURE_NAMES
        )
        ps = [v.probability(with_value(base, idx, c)) for c in (-1.0, -0.2, 0.3, 0.8, 1.0)]
        assert all(x <= y + 1e-12 for x, y in zip(ps, ps[1:], strict=False))


def test_model_files_round_trip_and_tampering(tmp_path: Path, shipped) -> None:
    shipped.verifier.save(tmp_path)
    loaded = Verifier.load(tmp_path)
    assert loaded.model_string() == shipped.verifier.model_string()
    assert loaded.meta == shipped.verifier.meta
    assert loaded.certificate == shipped.verifier.certificate == shipped.operating_point
    (tmp_path / "verifier.txt").write_text(loaded.model_string() + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="sha256"):
        Verifier.load(tmp_path)
    (tmp_path / "meta.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match=r"meta\.json:1"):
        Verifier.load(tmp_path)
    with pytest.raises(FileNotFoundError):
        Verifier.load(tmp_path / "missing")


# --- the real model, offline ------------------------------------------------------------


def test_anchor_examples_with_minilm_offline(no_network) -> None:
    pytest.importorskip("onnxruntime")
    v = committed()
    cache = VerifiedCache(resources=Resources(verifier=v))
    assert cache.put("Solve x + 2 = 8", "x = 6").stored
    assert cache.get("Solve a + 2 = 8") is None  # the answer names the variable
    assert cache.get("Solve x + 2 = 9") is None  # another operand
    hit = cache.lookup("solve x+2=8")
    assert hit.hit and hit.tier == "verifier" and hit.score >= serving_threshold(v.operating_point)
    cache.put("Write a Python function to reverse a list", "def rev(xs): return xs[::-1]")
    assert cache.get("Write a JavaScript function to reverse a list") is None
    assert math.isfinite(cache.lookup("Write a Python function to reverse a list!").score)


def test_resources_serve_with_the_embedder_the_model_was_trained_on(shipped) -> None:
    meta = dataclasses.replace(
        shipped.verifier.meta, training={**shipped.verifier.meta.training, "embedder": "hash-x"}
    )
    v = Verifier(shipped.verifier.booster, meta)
    assert v.embedder_name == "hash-x"
    assert Resources(verifier=v).embedder_name == "hash-x"
    assert Resources(verifier=v, embedder_name="minilm-onnx").embedder_name == "minilm-onnx"
    assert Resources(verifier=v, embedder=HashEmbedder()).embedder_name == "hash"
    legacy = dataclasses.replace(meta, training={})
    assert Verifier(shipped.verifier.booster, legacy).embedder_name == "minilm-onnx"


def _pieces(ids: list[int], rows: np.ndarray, wordlike: list[bool] | None = None):
    from adapters.embedders import WordPieces

    return WordPieces(tuple(ids), tuple(wordlike or [True] * len(ids)), rows)


def test_token_alignment_by_hand() -> None:
    from adapters.verified_cache.cache import token_alignment
    from adapters.verified_cache.features import TOKEN_ALIGN_FEATURES

    e = np.eye(3, dtype=np.float32)
    # a = pieces (e0, e1), b = (e0, e2): e1 and e2 have no partner (cosine 0); the
    # pieces only one side has (ids 1 and 2) are e1 and e2: cosine 0
    got = token_alignment(_pieces([0, 1], e[[0, 1]]), _pieces([0, 2], e[[0, 2]]))
    assert got is not None and len(got) == len(TOKEN_ALIGN_FEATURES)
    assert got == (0.5, 0.5, 0.5, 0.0)
    # a = (e0, e1, e2), b = (e0,): p = 1/3 (e1, e2 unmatched), r = 1, f = 2 * 1/3 / (4/3);
    # b has no piece of its own (words only added): tok_diff_cos = 1
    p, r, f, d = token_alignment(_pieces([0, 1, 2], e), _pieces([0], e[[0]])) or (0.0,) * 4
    assert (p, r) == (pytest.approx(1 / 3), 1.0) and f == pytest.approx(0.5) and d == 1.0
    # the same pieces, reordered
    same = token_alignment(_pieces([0, 1], e[[0, 1]]), _pieces([1, 0], e[[1, 0]]))
    assert same == (1.0, 1.0, 1.0, 1.0)
    # pieces of their own: mean(e1, e2) on a, e2 on b -> cos = (1/2) / (sqrt(1/2) * 1)
    v = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 1]], dtype=np.float32)
    d = token_alignment(_pieces([0, 1, 2], v[:3]), _pieces([0, 3], v[[0, 3]]))
    assert d is not None and d[3] == pytest.approx(math.sqrt(0.5))
    # punctuation pieces are no replaced words: a "?" of its own changes nothing
    q = token_alignment(_pieces([0, 1], e[[0, 1]], [True, False]), _pieces([0, 2], e[[0, 2]]))
    assert q is not None and q[3] == 1.0
    assert token_alignment(None, _pieces([0], e[[0]])) is None
    assert token_alignment(_pieces([], e[:0]), _pieces([0], e[[0]])) is None


def test_missing_token_vectors_are_nan_features(synthetic) -> None:
    # HashEmbedder has no word-piece vectors: the alignment columns are missing (NaN)
    from adapters.verified_cache.features import TOKEN_ALIGN_FEATURES

    rows, res = synthetic
    cases = [c for c in build_cases(rows, res) if c.features is not None]
    assert cases
    for c in cases:
        tail = c.features[-len(TOKEN_ALIGN_FEATURES) :]
        assert all(math.isnan(v) for v in tail)
        assert all(not math.isnan(v) for v in c.features[: -len(TOKEN_ALIGN_FEATURES)])


def test_interleaved_latency_times_every_get_beside_its_floor(synthetic, shipped) -> None:
    from adapters.verified_cache.latency import REFUSED_AT_PUT, interleaved_latency

    rows, _ = synthetic
    res = Resources(embedder=HashEmbedder(), verifier=shipped.verifier)
    pairs = [r.pair for r in rows[:40]]
    poem = dataclasses.replace(pairs[0], id="poem", a=Request("Write a poem about rain"))
    run = interleaved_latency([*pairs, poem], res)
    assert len(run.floor) == len(run.puts) == 41
    assert sum(len(v) for v in run.by_tier.values()) == 41
    assert run.refused >= 1 and len(run.by_tier[REFUSED_AT_PUT]) == run.refused
    assert all(ms > 0 for ms in run.floor)
    r50, r95 = run.ratios()
    assert r50 is not None and r95 is not None and r50 > 0
    assert run.get().n == 41 and run.tier("no such tier").n == 0
