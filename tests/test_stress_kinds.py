"""Every ``cacheeval stress`` perturbation kind on a small input written here: the
edit applies, reads as intended, and the row built from it re-derives its label
from the payload (``cacheeval verify``'s checker). Then the edits that must
never be made: phrasal verbs, fixed expressions, names inside longer names,
answer-preserving negations."""

from __future__ import annotations

import random

import pytest

from cacheeval.benches.stress.context import CONTEXT
from cacheeval.benches.stress.edits import Edit, Prompt
from cacheeval.benches.stress.generate import _propose
from cacheeval.benches.stress.identity import IDENTITY
from cacheeval.benches.stress.noise import NOISE
from cacheeval.benches.stress.rows import stress_row
from cacheeval.schema import HIT, MISS, Row
from cacheeval.verify import check_row
from cacheeval.verify.never_cache import ALLOWED, request_policy
from cacheeval.verify.perturbation import KINDS, VALIDATORS

TURNS = (
    {"role": "user", "content": "I'm flying to Paris on Friday with my two kids."},
    {"role": "assistant", "content": "Sounds fun! How can I help?"},
)

#: kind -> (query, what side b must contain; None: only that it changed).
EXAMPLES: dict[str, tuple[str, str | None]] = {
    "case_lower": ("How Do I Reverse A List?", "how do i reverse a list?"),
    "case_upper": ("How do I reverse a list?", "HOW DO I REVERSE A LIST?"),
    "spacing": ("How do I reverse a list?", None),
    "punct_end": ("How do I reverse a list?", None),
    "punct_comma": ("Hello there, how do I reverse a list?", "Hello there how"),
    "typo_transpose": ("How do I reverse a list?", None),
    "typo_drop": ("How do I reverse a list?", None),
    "typo_double": ("How do I reverse a list?", None),
    "typo_adjacent": ("How do I reverse a list?", None),
    "greeting": ("How do I reverse a list?", "reverse a list?"),
    "closer": ("How do I reverse a list?", "How do I reverse a list? "),
    "contraction": ("What is the capital of Peru?", "What's the capital"),
    "expansion": ("Why doesn't it work?", "does not"),
    "modal_swap": ("Can you explain recursion?", "Could you explain recursion?"),
    "spelling_variant": ("What is your favorite color scheme?", None),
    "number": ("What is 15% of 240?", None),
    "year": ("Who won the World Cup in 2014?", None),
    "number_word": ("What is the probability of rolling two sixes?", None),
    "city": ("What are the best museums in Vienna?", None),
    "country": ("Do I need a visa for Japan?", None),
    "first_name": ("Write an email to Sarah declining the meeting.", None),
    "language": ("Is Italian hard to learn for English speakers?", None),
    "translate_target": ("Translate 'good morning' into Spanish.", None),
    "proglang": ("How do I reverse a list in Python?", None),
    "currency": ("How many euros is a coffee in Rome?", None),
    "unit": ("How many miles is a marathon?", None),
    "weekday": ("Is the museum open on Monday?", None),
    "month": ("What is the weather usually like in Lisbon in April?", None),
    "us_state": ("What is the state bird of Texas?", None),
    "continent": ("What is the tallest mountain in Africa?", None),
    "celestial": ("How long is a day on Mars?", None),
    "software": ("How do I take a screenshot on Windows?", None),
    "cuisine": ("What should I order at a Thai restaurant?", None),
    "company": ("Who founded Microsoft?", None),
    "landmark": ("How tall is the Eiffel Tower?", None),
    "work": ("Who wrote Pride and Prejudice?", None),
    "event": ("When did World War II end?", None),
    "acronym": ("What does APR mean on a loan?", "APY"),
    "file_type": ("How do I count the lines of all .py files?", None),
    "audience": ("Explain how vaccines work to a medical student.", None),
    "animal": ("How often should I feed my dog?", None),
    "food": ("How long should I boil rice?", None),
    "drink": ("How do I brew a good cup of tea?", None),
    "material": ("How do I wash a cotton shirt?", None),
    "colour": ("How do I get a stain out of a white shirt?", None),
    "element": ("What is the chemical symbol for gold?", None),
    "companion": ("Can I bring a friend to the gym?", None),
    "document": ("Where can I find my invoices?", None),
    "energy": ("What are the downsides of nuclear power?", None),
    "headphone_type": ("How do noise-cancelling headphones work?", None),
    "appliance": ("Why can't you put metal in a microwave?", None),
    "finance_product": ("How does a mortgage work?", None),
    "phenomenon": ("What causes acid rain?", None),
    "diet": ("Suggest a vegan dinner for four.", None),
    "venue": ("Can I bring a guest to the gym?", None),
    "profession": ("How many years does it take to become a doctor?", None),
    "nature": ("Write a short poem about the ocean.", None),
    "punctuation_mark": ("When should I use a semicolon?", None),
    "family_member": ("What should I get my sister for her birthday?", None),
    "season": ("What should I pack for Iceland this winter?", None),
    "meal": ("What is a healthy breakfast?", None),
    "subject": ("What is the best way to learn algebra?", None),
    "instrument": ("How long does it take to learn the piano?", None),
    "sport": ("How many players are on a basketball team?", None),
    "ordinal": ("What is the second largest country?", None),
    "direction": ("Convert 25 degrees Celsius to Fahrenheit.", "Fahrenheit to Celsius"),
    "antonym": ("How do I sort a list in ascending order?", "descending order"),
    "operator_frame": ("How do I remove mold from a tent?", "add mold to a tent"),
    "negation_remove": ("Why doesn't my loop terminate?", "Why does my loop"),
    "negation_add": ("List the numbers that are prime below 20.", "that are not prime"),
    "with_without": ("How do I sort a list without using sorted()?", "using sorted()"),
    "comparison": ("Solve 2k + 5 > 17 for k.", "2k + 5 < 17"),
    "occasion": ("I forgot my sister's birthday, what should I do?", None),
    "furnishing": ("How do I get a wine stain out of my carpet?", None),
    "confusable": ("What's the difference between fewer and less?", None),
    "blood_component": ("Which blood type is the universal donor for plasma?", "red"),
    "question_focus": ("What year did the Berlin Wall fall?", "What month did"),
}
CONTEXT_EXAMPLES = {
    "system_prompt_other": Prompt("How do I reverse a list?", None, None, "t", 1),
    "turns_other": Prompt("What should I pack?", None, TURNS, "t", 1),
    "turns_edit": Prompt("What should I pack?", None, TURNS, "t", 1),
}


def test_every_kind_has_an_example() -> None:
    assert set(EXAMPLES) | set(CONTEXT_EXAMPLES) == set(KINDS)
    assert len(KINDS) >= 25
    assert set(NOISE) | set(IDENTITY) | set(CONTEXT) == set(KINDS)


def _first_edit(kind: str, prompt: Prompt) -> Edit:
    for seed in range(40):  # some kinds draw their candidate at random
        edit = _propose(kind, prompt, random.Random(seed))
        if edit is not None:
            return edit
    raise AssertionError(f"{kind} never applied to {prompt.query!r}")


def _row(prompt: Prompt, edit: Edit) -> Row:
    policy = request_policy(prompt.query)
    return Row.from_dict(stress_row(prompt, edit, policy, "cb-qa_open-0001", "qa_open", "test"))


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_kind_applies_and_verifies(kind: str) -> None:
    if kind in CONTEXT_EXAMPLES:
        prompt = CONTEXT_EXAMPLES[kind]
        expected = None
    else:
        query, expected = EXAMPLES[kind]
        prompt = Prompt(query, None, None, "t", 1)
    edit = _first_edit(kind, prompt)
    assert edit.kind == kind
    row = _row(prompt, edit)
    assert (row.query_b, row.system_prompt_b, row.context_b) != (
        row.query_a,
        row.system_prompt_a,
        row.context_a,
    )
    if expected is not None:
        assert expected in row.query_b, (kind, row.query_b)
    family, label = KINDS[kind]
    assert row.subcategory == kind and row.label == label
    assert row.construction_method == "stress_perturbation"
    want = HIT if family == "noise" else MISS
    assert row.binary_label == want
    check = check_row(row)
    assert check.binary == want, check.detail


def test_a_range_keeps_its_order() -> None:
    text = "Select rows where amount is between 100 and 500."
    start = text.index("500")
    assert VALIDATORS["number"](text, start, start + 3, "500", "700") is None
    assert VALIDATORS["number"](text, start, start + 3, "500", "50") is not None
    words = "Is five to thirty minutes of sun a day enough?"
    assert VALIDATORS["number_word"](words, 3, 7, "five", "three") is None
    assert VALIDATORS["number_word"](words, 3, 7, "five", "fifty") is not None


@pytest.mark.parametrize(
    ("kind", "query"),
    [
        # phrasal verbs and fixed expressions are left alone
        ("antonym", "How do I follow up with a manager after an interview?"),
        ("antonym", "Should I pay down my student loans first?"),
        ("antonym", "How do I stop my dog from barking?"),
        ("antonym", "What is the best way to learn Spanish?"),
        ("antonym", "Should I buy or sell my car now?"),
        ("antonym", "Is it better to rent instead of buying?"),
        ("operator_frame", "How do I add a column in Excel?"),
        # a name inside a longer name, a language in a fixed expression
        ("country", "Is Transport Canada the same as the FAA?"),
        ("celestial", "Did Sun Microsystems make Java?"),
        ("language", "How do I make French toast?"),
        ("proglang", "What is the best time to visit central Java?"),
        ("city", "What is the population of Munich, Germany?"),
        ("country", "What is the population of Munich, Germany?"),
        ("language", "Who runs the German football federation?"),
        ("punct_end", 'What does "carpe diem" mean in "Dead Poets Society"'),
        ("comparison", "Return 0 when hi < lo."),
        ("work", "¿Quién escribió Moby Dick?"),  # no English title in a Spanish question
        # clock times, and a range the change would turn round
        ("number", "Is it fine to sleep from 11 p.m. to 7 a.m.?"),
        # a negated yes/no question asks what the positive one asks
        ("negation_remove", "Isn't Paris the capital of France?"),
        # "1" and "0" govern a noun's number; versions are not quantities
        ("number", "How do I install Python 3 on a Mac?"),
        ("number", "How long do I boil 1 egg?"),
        # a typo never lands in a word that decides the answer or in quoted text
        ("typo_drop", 'Replace "apple" with "pear"'),
        # case is never changed where quotes or code could make it matter
        ("case_lower", 'Does "ABC" equal "abc" in SQL?'),
    ],
)
def test_kind_refuses(kind: str, query: str) -> None:
    prompt = Prompt(query, None, None, "t", 1)
    for seed in range(40):
        assert _propose(kind, prompt, random.Random(seed)) is None, (kind, query, seed)


def test_remove_from_becomes_add_to_never_add_from() -> None:
    edit = _first_edit(
        "operator_frame", Prompt("How do I remove mold from a tent?", None, None, "t", 1)
    )
    assert edit.apply("How do I remove mold from a tent?") == "How do I add mold to a tent?"
    assert VALIDATORS["operator_frame"](
        "How do I remove mold from a tent?", 9, 25, "remove mold from", "add mold from"
    )


def test_two_words_for_one_person_are_never_swapped() -> None:
    text = "What should I get my mother for her birthday?"
    start = text.index("mother")
    assert VALIDATORS["family_member"](text, start, start + 6, "mother", "mom") is not None
    assert VALIDATORS["family_member"](text, start, start + 6, "mother", "aunt") is None


def test_two_names_of_one_reader_are_never_swapped() -> None:
    text = "Explain it to a child."
    assert VALIDATORS["audience"](text, 14, 21, "a child", "a five-year-old") is not None
    assert VALIDATORS["audience"](text, 14, 21, "a child", "a physicist") is None


def test_article_is_kept_right() -> None:
    text = "How many protons does a neon atom have?"
    start = text.index("neon")
    assert VALIDATORS["element"](text, start, start + 4, "neon", "argon") is not None
    assert VALIDATORS["element"](text, start, start + 4, "neon", "xenon") is None


def test_checker_refuses_a_payload_that_does_not_describe_the_row() -> None:
    prompt = Prompt("What are the best museums in Vienna?", None, None, "t", 1)
    row = _row(prompt, _first_edit("city", prompt))
    payload = dict(row.verification_payload or {})
    forged = Row.from_dict({**row.to_dict(), "verification_payload": {**payload, "start": 0}})
    assert check_row(forged).binary is None
    relabelled = Row.from_dict({**row.to_dict(), "label": "EQUIV", "binary_label": "HIT"})
    assert check_row(relabelled).binary is None
    claims_noise = Row.from_dict(
        {**row.to_dict(), "verification_payload": {**payload, "perturbation": "spacing"}}
    )
    assert check_row(claims_noise).binary is None


def test_policy_prompt_rows_are_miss_by_policy() -> None:
    prompt = Prompt("Write a haiku about autumn rain.", None, None, "t", 1)
    assert request_policy(prompt.query).rule == "creative"
    edit = _first_edit("case_lower", prompt)
    row = _row(prompt, edit)
    assert row.label == "EQUIV" and row.binary_label == MISS
    assert row.verification_method == "policy_no_cache"
    assert (row.verification_payload or {})["policy"]["rule"] == "creative"
    assert check_row(row).binary == MISS
    # the same payload without its policy is refused: the detector fires on side a
    payload = {**(row.verification_payload or {}), "policy": None}
    unpoliced = Row.from_dict(
        {**row.to_dict(), "verification_method": "exact_match", "binary_label": HIT,
         "verification_payload": payload}
    )  # fmt: skip
    assert check_row(unpoliced).binary is None
    assert request_policy("How do I reverse a list?") == ALLOWED


def test_the_rules_noise_kinds_are_the_noise_family() -> None:
    # the identity guards wrap every kind outside NOISE_KINDS: a noise kind missing
    # from it would be refused as if it changed a fact, an identity kind in it unguarded
    from cacheeval.verify.perturbation import KINDS
    from cacheeval.verify.stress_guard_words import NOISE_KINDS

    assert {k for k, (family, _) in KINDS.items() if family == "noise"} == NOISE_KINDS
