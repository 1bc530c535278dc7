"""The fast paths of ``cacheeval stress`` give exactly what the straightforward
code gives: the JSON lines (:func:`stress_lines`) are ``dumps`` of the rows
(:func:`stress_rows`) byte for byte, the never-cache rules' quick conditions
(:class:`QuickPattern`) never change a match, and the direction guard only
refuses texts the proposer finds nothing in (drawing nothing from the generator).
The proposers' and validators' shortcuts (``sample``/``shuffle`` without
``random``'s per-draw calls, ``previous_word`` and ``names`` without a regex
scan, per-text word sets, the one-character word test) give what the plain
code gives, and the memoised checks do not depend on what ran before.
"""

from __future__ import annotations

import random
import re

import pytest

from cacheeval.benches.stress.edits import Prompt, sample, shuffle
from cacheeval.benches.stress.generate import (
    GUARDS,
    StressStats,
    edits_for,
    stress_lines,
    stress_rows,
)
from cacheeval.benches.stress.identity import _DIRECTION, IDENTITY, _reshaped
from cacheeval.benches.stress.triggers import DirectionGuard
from cacheeval.generators.common import token_set
from cacheeval.support.jsonio import dumps
from cacheeval.verify import never_cache
from cacheeval.verify.never_cache import QuickPattern
from cacheeval.verify.perturbation_text import (
    _PREVIOUS_WORD,
    at_word_boundary,
    lower_words,
    names,
    previous_word,
)

QUERIES = [
    "How do I reverse a list in Python?",
    "How many miles is it from Paris to London?",
    "Is it cheaper to fly from Tokyo to Seoul or take the ferry?",
    "Translate 'good morning' into Spanish, please",
    "Convert 25 degrees Celsius to Fahrenheit.",
    "What is 15% of 240?",
    "Solve 3x + 7 = 22 and explain each step",
    "My order hasn't arrived after 10 days, what should I do?",
    "Write a short poem about the ocean at night.",
    "What's the weather in Oslo right now?",
    "Convert 100 USD to EUR",
    "Any breaking news about the election?",
    'He said "use the \\n escape" \t and a tab \u0007 bell',
    "Wie spät ist es in Zürich? Café, naïve, Ⅻ, ſ, K, İstanbul to Köln",
    "how to get to rome from the airport",
    "PARIS TO LONDON BY TRAIN?",
    "Should I learn JavaScript or Python first in 2024?",
    "Can you remove the mold from my tent, or add a coat to it?",
    "I feel stressed about my exams next week, any advice?",
    "What is the capital of Canada",
]
SYSTEMS = [None, "You are a helpful assistant.", "Member: Chloe Dubois (gold tier)"]
TURNS = [
    None,
    (
        {"role": "user", "content": "I want to fly from Berlin to Madrid on Friday."},
        {"role": "assistant", "content": "Sure, when do you want to leave?"},
    ),
]


#: offered with every fifth prompt: the rows carry them on both sides
TOOLS = (
    {"type": "function", "function": {"name": "send_money", "parameters": {"type": "object"}}},
)


def _prompts() -> list[Prompt]:
    out = []
    for i, query in enumerate(QUERIES):
        for j, variant in enumerate((query, query.lower(), query.swapcase())):
            line = 3 * i + j + 1
            out.append(
                Prompt(
                    variant,
                    SYSTEMS[line % len(SYSTEMS)],
                    TURNS[line % 2],
                    f"t.txt:{line}",
                    line,
                    TOOLS if line % 5 == 0 else None,
                )
            )
    return out


@pytest.mark.parametrize(
    ("seed", "per_prompt", "domain"), [(0, 4, None), (7, 1, None), (3, 9, "qa_open")]
)
def test_lines_are_the_rows_byte_for_byte(seed: int, per_prompt: int, domain: str | None) -> None:
    prompts = _prompts()
    stats_rows, stats_lines = StressStats(), StressStats()
    kw = {"seed": seed, "per_prompt": per_prompt, "split": "dev", "domain": domain}
    rows = stress_rows(prompts, stats=stats_rows, **kw)  # type: ignore[arg-type]
    expected = "".join(dumps(row) + "\n" for row in rows)
    got = "".join(stress_lines(prompts, stats=stats_lines, **kw))  # type: ignore[arg-type]
    assert got == expected
    assert stats_lines.summary() == stats_rows.summary()
    assert expected.count("\n") == stats_rows.rows >= len(prompts)
    if per_prompt >= 4:  # the input reaches every family, policy prompts, turns edits
        assert {"noise", "identity", "context"} <= set(stats_rows.prompts_by_family)
        assert stats_rows.policy_prompts and stats_rows.rows_by_kind["turns_edit"] > 0


def test_lines_are_deterministic_and_depend_on_the_seed() -> None:
    prompts = _prompts()
    first = "".join(stress_lines(prompts, seed=11))
    assert first == "".join(stress_lines(prompts, seed=11))
    assert first != "".join(stress_lines(prompts, seed=12))


def _quick_patterns() -> dict[str, QuickPattern]:
    return {n: p for n, p in vars(never_cache).items() if isinstance(p, QuickPattern)}


def test_every_rule_pattern_has_a_quick_condition() -> None:
    patterns = _quick_patterns()
    assert {"_WEATHER", "_SOFT_FORMS", "_CURRENCY_NAMES", "_LIVE_EVENTS"} <= set(patterns)
    assert all(p.quick is not None for p in patterns.values())


def test_quick_patterns_find_what_the_regexes_find() -> None:
    texts = [*QUERIES, *(t.upper() for t in QUERIES), *(t.swapcase() for t in QUERIES)]
    texts += [
        "Any NEWS today?",
        "newsletter",
        "ſtock price of ACME",  # long s: a case-insensitive match of "s"
        "What's the weather in Oslo right now? (K for Kelvin)",
        "Send $50 to Ana",
        "send 20 dollars to my brother",
        "Tell me a joke",
        "Write me a catchy names list",
        "Is it raining in Lisbon this morning?",
        "Is it raining in Lisbon this morning?".upper(),
    ]
    for name, pattern in _quick_patterns().items():
        for text in texts:
            quick, full = pattern.search(text), pattern.full.search(text)
            assert (quick and quick.span()) == (full and full.span()), (name, text)
            spans = [m.span() for m in pattern.finditer(text)]
            assert spans == [m.span() for m in pattern.full.finditer(text)], (name, text)


def test_quick_condition_only_where_it_can_be_derived() -> None:
    assert QuickPattern(re.compile(r"\bnews\b", re.I)).quick is not None
    assert QuickPattern(re.compile(r"\bnews\b")).quick is None  # case-sensitive
    assert QuickPattern(re.compile(r"\bNews\b", re.I)).quick is None  # an upper-case letter
    assert QuickPattern(re.compile(r"\\bnews", re.I)).quick is None  # an escaped backslash
    p = QuickPattern(re.compile(r"\bnews\b", re.I))
    assert p.may_match("café news") and not p.may_match("the weather")


def test_direction_guard_refuses_only_texts_without_a_direction() -> None:
    guard = GUARDS["direction"]
    texts = [*QUERIES, *(t.upper() for t in QUERIES), *(t.lower() for t in QUERIES)]
    texts += ["How long is the flight from New York to Los Angeles?", "C++ to C# migration"]
    refused = 0
    for text in texts:
        found = _DIRECTION.search(text) is not None
        if found:
            assert guard(text), text
        if not guard(text):
            refused += 1
            rng = random.Random(text)
            state = rng.getstate()
            assert IDENTITY["direction"](text, rng) is None
            assert rng.getstate() == state, text
    assert refused > 10
    assert guard("How long is the flight from New York to Los Angeles?")
    assert guard("C++ to C# migration")
    assert not guard("how to get to rome from the airport")


def test_direction_guard_steps_aside_for_case_folding_letters() -> None:
    assert DirectionGuard(["Paris", "London"]).active
    assert not DirectionGuard(["Paris", "ſtockholm"]).active  # long s matches "s"
    assert not DirectionGuard(["\u212aiev"]).active  # Kelvin sign matches "k"
    assert DirectionGuard(["Paris", "Zürich"]).active  # ü matches no ASCII letter
    assert DirectionGuard(["Paris", "London"])("Zürich to London?")  # non-ASCII text: no refusal


def test_guarded_edits_equal_unguarded_edits(monkeypatch: pytest.MonkeyPatch) -> None:
    prompts = _prompts()
    guarded = [edits_for(p, random.Random(f"5:{p.line}"), 6) for p in prompts]
    monkeypatch.setattr("cacheeval.benches.stress.generate.GUARDS", {})
    plain = [edits_for(p, random.Random(f"5:{p.line}"), 6) for p in prompts]
    assert guarded == plain


def test_token_set_is_the_regex_tokens() -> None:
    rng = random.Random(0)
    alphabet = "aZ_9 \t\x1c\x1f\x00\x7f-.'?ßKſİﬁé"
    texts = [*QUERIES, *("".join(rng.choice(alphabet) for _ in range(20)) for _ in range(500))]
    texts += ["".join(chr(rng.randrange(128)) for _ in range(30)) for _ in range(500)]
    for text in texts:
        assert token_set(text) == set(re.findall(r"\w+", text.casefold())), repr(text)


def test_shuffle_is_random_shuffle() -> None:
    for seed in range(20):
        for n in range(40):
            ours, theirs = random.Random(seed), random.Random(seed)
            a, b = list(range(n)), list(range(n))
            shuffle(ours, a)
            theirs.shuffle(b)
            assert a == b and ours.getstate() == theirs.getstate(), (seed, n)


def test_sample_is_random_sample() -> None:
    for seed in range(10):
        for n in (*range(12), 21, 22, 84, 85, 86, 200):
            for k in sorted({0, min(1, n), min(4, n), min(6, n), min(8, n), n}):
                ours, theirs = random.Random(seed), random.Random(seed)
                population = [f"w{i}" for i in range(n)]
                assert sample(ours, population, k) == theirs.sample(population, k), (seed, n, k)
                assert ours.getstate() == theirs.getstate(), (seed, n, k)


#: Letters, apostrophes, ASCII and Unicode whitespace (NBSP, em space, the
#: separators \x1c-\x1f), a zero-width space (not whitespace), case-folding
#: letters (Kelvin sign, long s, dotted I) and punctuation.
_ALPHABET = "ab Z'K \t\n\xa0\u2003\x1c\x1f\u200b.,9é\u212aſİ+#"


def _random_texts(n: int, length: int = 14) -> list[str]:
    rng = random.Random(7)
    return [
        *QUERIES,
        *("".join(rng.choice(_ALPHABET) for _ in range(rng.randrange(length))) for _ in range(n)),
    ]


def test_previous_word_is_the_regex() -> None:
    rng = random.Random(3)
    for text in _random_texts(20_000):
        for start in {-1, 0, len(text), len(text) + 2, rng.randrange(len(text) + 1)}:
            m = _PREVIOUS_WORD.search(text, 0, start)
            assert previous_word(text, start) == (m.group(1).lower() if m else ""), (text, start)


def test_names_is_the_regex() -> None:
    rng = random.Random(4)
    texts = _random_texts(5_000)
    for text in texts:
        for word in ("ab", "K", "s", "Ab Z", "+", "é", rng.choice(texts)[:3] or "a"):
            regex = rf"(?<![\w+#]){re.escape(word)}(?![\w+#])"
            expected = re.search(regex, text, re.IGNORECASE) is not None
            assert names(text, word) == expected, (text, word)


def test_lower_words_is_findall() -> None:
    for text in _random_texts(2_000):
        for pattern in ("[a-z]+", "[a-z-]+", "[a-z0-9]+", r"[^\W\d_]+"):
            assert lower_words(text, pattern) == set(re.findall(pattern, text.lower()))


def test_reshaped_is_the_plain_reshape() -> None:
    def plain(token: str, digits: str) -> str:
        it = iter(digits)
        return "".join(next(it) if c.isdigit() else c for c in token)

    for token, digits in [
        ("250", "350"),
        ("$1,200", "1300"),
        ("3.5", "45"),
        ("٣٤", "35"),
        ("7", "8"),
    ]:
        assert _reshaped(token, digits) == plain(token, digits)


def test_memoised_checks_do_not_depend_on_what_ran_before() -> None:
    """The validators' per-text caches (guards, places, word sets) give each
    prompt the same edits whether it runs first, last, or again."""
    prompts = _prompts()
    first = [edits_for(p, random.Random(f"9:{p.line}"), 9) for p in prompts]
    backwards = [edits_for(p, random.Random(f"9:{p.line}"), 9) for p in reversed(prompts)]
    assert first == backwards[::-1]


def test_word_character_test_is_the_regex() -> None:
    word_char = re.compile(r"[\w+#]")
    for code in range(0x110000):
        c = chr(code)
        assert (c.isalnum() or c in "_+#") == (word_char.match(c) is not None), hex(code)
    assert at_word_boundary("a C++ b", 2, 5) and not at_word_boundary("cats", 0, 3)
