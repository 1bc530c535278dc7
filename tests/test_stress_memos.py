"""The generator's memos (per request, per text, per token, per verdict, per line
body) never change a byte: rows made cold, warm, after other prompts, and with
memos so small they empty themselves at every step are the same; the memoised
proposers draw what the plain code they replace draws and return the same edit."""

from __future__ import annotations

import random
import re

import pytest

from cacheeval.benches.stress import edits as edits_module
from cacheeval.benches.stress import facts as facts_module
from cacheeval.benches.stress import rows as rows_module
from cacheeval.benches.stress.edits import (
    TEXT_MEMOS,
    Edit,
    Prompt,
    TextMemo,
    clear_memos,
    first_valid,
    sample,
    shuffle,
)
from cacheeval.benches.stress.generate import stress_lines
from cacheeval.benches.stress.identity import IDENTITY, _reshaped
from cacheeval.benches.stress.noise import NOISE
from cacheeval.verify import stress_lexicon as lex
from cacheeval.verify.perturbation import is_year, number_shape, typo_target

QUERIES = [
    "How do I reverse a list in Python?",
    "What is 15% of 240?",
    "Solve 3x + 7 = 22 and explain each step",
    "Convert 25 degrees Celsius to Fahrenheit.",
    "Is it cheaper to fly from Tokyo to Seoul or take the ferry?",
    "What's the best time of year to visit Paris?",
    "My cat keeps scratching the sofa, how do I stop it?",
    "Can I change the email address on my account?",
    "what should i pack for a week in japan in march",
    "Add $1,250.50 to 3/8 of 1.05 and 0.25, then round to 2,000",
    "Write a short poem about the ocean at night.",
    "Should I learn JavaScript or Python first in 2024?",
]
SYSTEMS = [None, "You are a helpful assistant."]
TURNS = (
    {"role": "user", "content": "I want to fly from Berlin to Madrid on Friday."},
    {"role": "assistant", "content": "Sure, when do you want to leave?"},
)


def _prompts(repeats: int = 3) -> list[Prompt]:
    """Each query several times (a log repeats itself), some with a system prompt
    or turns."""
    out = []
    for r in range(repeats):
        for i, query in enumerate(QUERIES):
            line = len(out) + 1
            system = SYSTEMS[(i + r) % 2]
            turns = TURNS if (i + r) % 5 == 0 else None
            out.append(Prompt(query, system, turns, f"p.txt:{line}", line))
    return out


def _lines(prompts: list[Prompt], seed: int = 0) -> str:
    return "".join(stress_lines(prompts, seed=seed, per_prompt=6))


def test_warm_memos_give_the_cold_lines() -> None:
    prompts = _prompts()
    clear_memos()
    cold = _lines(prompts)
    _lines(prompts[::-1], seed=5)  # other prompts' and seeds' entries in every memo
    assert _lines(prompts) == cold
    clear_memos()
    assert _lines(prompts) == cold


def test_memos_that_empty_themselves_give_the_same_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    prompts = _prompts()
    clear_memos()
    expected = _lines(prompts)
    clear_memos()
    assert len(TEXT_MEMOS) >= 10  # facts, number plans, typo words, entity and pair spans...
    for memo in TEXT_MEMOS:
        monkeypatch.setattr(memo, "limit", 1)
    monkeypatch.setattr(edits_module, "_VERDICTS_LIMIT", 1)
    monkeypatch.setattr(rows_module, "_BODIES_LIMIT", 1)
    assert _lines(prompts) == expected
    assert len(facts_module._MEMO.values) <= 1 and len(edits_module._VERDICTS) <= 1


def test_text_memo_empties_itself_when_full() -> None:
    calls: list[str] = []

    def upper(text: str) -> str:
        calls.append(text)
        return text.upper()

    memo = TextMemo(upper, limit=2)
    assert [memo("a"), memo("a"), memo("b"), memo("a")] == ["A", "A", "B", "A"]
    assert calls == ["a", "b"]
    assert memo("c") == "C" and memo.values == {"c": "C"}  # full: emptied, then kept
    assert memo("a") == "A" and calls == ["a", "b", "c", "a"]


# --- the memoised proposers against the plain code they replace -----------------------

_PLAIN_NUMBER = re.compile(r"\d+/\d+|[$€£]?\d[\d,]*(?:\.\d+)?")
_DELTAS = (1, 2, 3, -1, -2, -3)


def _plain_new_digits(digits: str, rng: random.Random) -> list[str]:
    sig = digits.rstrip("0") or "0"
    zeros = len(digits) - len(sig)
    value = int(sig)
    low = 10 ** (len(sig) - 1) if len(sig) > 1 else 2
    high = 10 ** len(sig) - 1
    out = []
    for delta in sample(rng, _DELTAS, 6):
        new = value + delta
        if low <= new <= high and new != value:
            text = str(new) + "0" * zeros
            if text.lstrip("0") not in ("", "1") and len(text) == len(digits):
                out.append(text)
    return out


def _plain_number(text: str, rng: random.Random) -> Edit | None:
    candidates = []
    for m in _PLAIN_NUMBER.finditer(text):
        token = m.group().rstrip(",.")
        if is_year(token.lstrip("$€£")):
            continue
        start, end = m.start(), m.start() + len(token)
        if "/" in token:
            num, den = (int(x) for x in token.split("/"))
            fractions = [f"{n}/{den}" for n in range(1, min(den, 30)) if n != num]
            candidates.append((start, end, sample(rng, fractions, min(4, len(fractions)))))
            continue
        digits = re.sub(r"\D", "", token)
        if "." in token:
            whole, frac = token.lstrip("$€£").replace(",", "").split(".")
            if whole.strip("0"):
                news = [n + frac for n in _plain_new_digits(whole, rng)]
            else:
                news = [whole + f for f in _plain_new_digits(frac, rng)]
        else:
            news = _plain_new_digits(digits, rng)
        options = [_reshaped(token, d) for d in news if len(d) == len(digits)]
        options = [o for o in options if number_shape(o) == number_shape(token)]
        candidates.append((start, end, options))
    return first_valid("number", text, rng, candidates)


def _plain_typo(kind: str, text: str, rng: random.Random) -> Edit | None:
    words = list(re.finditer(r"[a-z]{5,}", text))
    shuffle(rng, words)
    m = next((w for w in words if typo_target(text, w.start(), w.end()) is None), None)
    if m is None:
        return None
    w = m.group()
    i = rng.randrange(1, len(w) - 1)
    if kind == "typo_transpose":
        if w[i] == w[i + 1]:
            return None
        typo = w[:i] + w[i + 1] + w[i] + w[i + 2 :]
    elif kind == "typo_drop":
        typo = w[:i] + w[i + 1 :]
    elif kind == "typo_double":
        typo = w[: i + 1] + w[i:]
    else:
        typo = w[:i] + rng.choice(lex.KEY_NEIGHBOURS[w[i]]) + w[i + 1 :]
    return first_valid(kind, text, rng, [(m.start(), m.end(), [typo])])


def _plain_entity(kind: str, text: str, rng: random.Random) -> Edit | None:
    swap = IDENTITY[kind]
    lower = swap.lower and text == text.lower()  # type: ignore[attr-defined]
    pattern = swap.lower_pattern if lower else swap.pattern  # type: ignore[attr-defined]
    found = list(pattern.finditer(text))
    if not found:
        return None
    low = text.lower()
    lowered = swap.lowered  # type: ignore[attr-defined]
    if lower:
        others = [w for _, w, plain in lowered if plain and w not in low]
    else:
        others = [m for m, w, _ in lowered if w not in low]
    picks = sample(rng, others, min(8, len(others)))
    if swap.cls == "software":  # type: ignore[attr-defined]
        groups = [g for g in lex.SOFTWARE_GROUPS if any(m.group() in g for m in found)]
        picks = sorted({w for g in groups for w in g} - {m.group() for m in found})
    candidates = [(m.start(), m.end(), picks) for m in found]
    return first_valid(kind, text, rng, candidates)


def _number_texts() -> list[str]:
    rng = random.Random(3)
    shapes = ["{a}", "${a},{b}", "{a}.{c}", "0.{c}", "{a}/{d}", "{b}0", "1,{b}.{c}", "19{c}"]
    texts = []
    for _ in range(300):
        values = {
            "a": rng.randint(2, 999), "b": f"{rng.randint(0, 999):03d}",
            "c": rng.randint(0, 99), "d": rng.randint(2, 40),
        }  # fmt: skip
        picked = [rng.choice(shapes).format(**values) for _ in range(rng.randint(1, 3))]
        texts.append("What is " + " plus ".join(picked) + "?")
    return texts


def _same_draws(plain, fast, texts: list[str], seeds: int = 4) -> None:  # type: ignore[no-untyped-def]
    for text in texts:
        for seed in range(seeds):
            a, b = random.Random(seed), random.Random(seed)
            assert plain(text, a) == fast(text, b), (text, seed)
            assert a.getstate() == b.getstate(), (text, seed)


def test_number_proposer_draws_what_the_plain_code_draws() -> None:
    clear_memos()
    texts = [*_number_texts(), *QUERIES]
    _same_draws(_plain_number, IDENTITY["number"], texts)
    _same_draws(_plain_number, IDENTITY["number"], texts[::-1])  # warm


@pytest.mark.parametrize("kind", ["typo_transpose", "typo_drop", "typo_double", "typo_adjacent"])
def test_typo_proposers_draw_what_the_plain_code_draws(kind: str) -> None:
    texts = [*QUERIES, *(q.lower() for q in QUERIES), "the quick brown foxes jumped 'quietly'"]
    _same_draws(lambda t, r: _plain_typo(kind, t, r), NOISE[kind], texts, seeds=8)


@pytest.mark.parametrize("kind", ["city", "country", "proglang", "month", "software"])
def test_entity_proposers_draw_what_the_plain_code_draws(kind: str) -> None:
    texts = [
        *QUERIES, *(q.lower() for q in QUERIES),
        "Is Windows or macOS better for Photoshop?", "how do i fly from paris to rome in june",
    ]  # fmt: skip
    _same_draws(lambda t, r: _plain_entity(kind, t, r), IDENTITY[kind], texts, seeds=6)
