"""The shared difference analysis: one hand-written row per kind, with the
kinds and spans worked out by hand."""

from __future__ import annotations

from typing import Any

import pytest

from cacheeval.metrics.differences import (
    DIFFERENCE_KINDS,
    Difference,
    changed_tokens,
    policy_kind,
    primary_kind,
    tokenize,
    what_differs,
)
from cacheeval.schema import ROW_FIELDS, Row


def row(query_a: str, query_b: str, **fields: Any) -> Row:
    base: dict[str, Any] = {f: None for f in ROW_FIELDS}
    base.update(id="r", domain="qa_factual", split="dev", query_a=query_a, query_b=query_b)
    base.update(fields)
    return Row.from_dict(base)


def kinds(r: Row) -> list[str]:
    return [d.kind for d in what_differs(r)]


TOOL_A = {"name": "set_alarm", "parameters": {"type": "object"}}
TOOL_B = {"name": "set_timer", "parameters": {"type": "object"}}


@pytest.mark.parametrize(
    ("r", "expected"),
    [
        (
            row("What's my balance?", "What's my balance?",
                system_prompt_a="Signed-in user: Ana Ruiz.",
                system_prompt_b="Signed-in user: Bo Chen."),
            [Difference("system prompt / user", "Ana Ruiz", "Bo Chen")],
        ),
        (
            row("How long should I bake it?", "How long should I bake it?",
                context_a=({"role": "user", "content": "It is a fan oven."},),
                context_b=None),
            [Difference("prior turns", "user: It is a fan oven.", "")],
        ),
        (
            row("Wake me at 7", "Wake me at 7", tools_a=(TOOL_A,), tools_b=(TOOL_B,)),
            [Difference("tools", "set_alarm", "set_timer")],
        ),
        (
            row("Write a haiku about rain.", "write a haiku about rain",
                verification_method="policy_no_cache",
                verification_payload={"kind": "policy", "policy": "creative"}),
            [Difference("policy: creative", "", "")],
        ),
        (
            row("What's Apple's stock price?", "what's apple's stock price",
                verification_method="policy_no_cache",
                verification_payload={"kind": "policy", "policy": "time_sensitive"}),
            [Difference("policy: live data", "", "")],
        ),
        (
            row("Send $50 to Ana", "Send $500 to Ana",
                verification_method="policy_no_cache",
                verification_payload={"kind": "policy", "policy": "mutation"}),
            [Difference("policy: state change", "", ""), Difference("number", "50", "500")],
        ),
        (
            row("Show me all invoices.", "Show me all invoices.",
                verification_method="policy_no_cache",
                verification_payload={"kind": "policy", "policy": "cross_user"}),
            [Difference("policy: personal data", "", "")],
        ),
        (
            row("Top 5 customers by total spend", "Top 10 customers by total spend"),
            [Difference("number", "5", "10")],
        ),
        (
            row("My boy's sixth birthday party ideas", "My boy's sixteenth birthday party ideas"),
            [Difference("number", "sixth", "sixteenth")],
        ),
        (
            row("Which side of the road do they drive on in Iceland?",
                "Which side of the road do they drive on in Ireland?"),
            [Difference("name", "Iceland", "Ireland")],
        ),
        (
            row("convert 250 euros to dollars", "convert 250 EUR to dollars"),
            [Difference("name", "euros", "EUR")],
        ),
        (
            row("Set an alarm for 7 pm.", "Set an alarm for 7 am."),
            [Difference("operator or direction", "pm", "am")],
        ),
        (
            row("Solve x^2 + 5x + 6 = 0", "Solve x^2 - 5x + 6 = 0"),
            [Difference("operator or direction", "+", "-")],
        ),
        (
            row("sort the list in ascending order", "sort the list in descending order"),
            [Difference("operator or direction", "ascending", "descending")],
        ),
        (
            # the same words swapped: "from X to Y" against "from Y to X" (difflib keeps
            # "miles" as the match, so "to kilometres" moves from after it to before it)
            row("convert 5 miles to kilometres", "convert 5 kilometres to miles"),
            [Difference("operator or direction", "to kilometres", "kilometres to")],
        ),
        (
            row("Translate 'Where is the station?' into Portuguese",
                "Translate 'Where is the station?' into Spanish"),
            [Difference("language", "Portuguese", "Spanish")],
        ),
        (
            row("Write a Python function that reverses a string",
                "Write a Rust function that reverses a string"),
            [Difference("language", "Python", "Rust")],
        ),
        (
            # a change of script: the query is asked in another language
            row("Кто написал «Дон Кихота»?", "Who is the author of Don Quixote?"),
            [Difference("language", "Cyrillic script", "English"),
             Difference("most words differ", "Кто написал «Дон Кихота»",
                        "Who is the author of Don Quixote")],
        ),
        (
            row("What is the capital of Austria?", "Which gas makes up most of the air on Venus?"),
            # "the" (first shared word in a) and "?" anchor the match
            [Difference("most words differ", "What is … capital of Austria",
                        "Which gas makes up most of … air on Venus")],
        ),
        (
            # case, punctuation-free rewording of one word: no detector fires
            row("What are the effects of rising sea levels?",
                "what are the consequences of rising sea levels"),
            [Difference("nothing detected", "", "")],
        ),
        (
            row("Why did the Titanic sink?", "why did the titanic sink?"),
            [Difference("nothing detected", "", "")],
        ),
    ],
)  # fmt: skip
def test_what_differs_by_kind(r: Row, expected: list[Difference]) -> None:
    assert list(what_differs(r)) == expected


def test_every_kind_is_covered_by_the_cases_above() -> None:
    # The parametrised cases name every kind of the vocabulary once at least.
    named = {d.kind for case in test_what_differs_by_kind.pytestmark[0].args[1] for d in case[1]}
    assert named == set(DIFFERENCE_KINDS)


def test_order_follows_the_vocabulary_and_primary_is_first() -> None:
    r = row("Send $50 to Ana", "Send $500 to Bo",
            system_prompt_a="User: Kim.", system_prompt_b="User: Lee.",
            verification_method="policy_no_cache",
            verification_payload={"policy": "mutation"})  # fmt: skip
    assert kinds(r) == ["system prompt / user", "policy: state change", "number", "name"]
    assert primary_kind(r) == "system prompt / user"
    ranks = [DIFFERENCE_KINDS.index(k) for k in kinds(r)]
    assert ranks == sorted(ranks)


def test_canonical_keys_hide_whitespace_case_and_tool_key_order() -> None:
    r = row("What is 2+2?", "what is  2+2? ",
            system_prompt_a="Be brief.", system_prompt_b="  be BRIEF. ",
            tools_a=({"name": "t", "parameters": {"a": 1, "b": 2}},),
            tools_b=({"parameters": {"b": 2, "a": 1}, "name": "t"},))  # fmt: skip
    assert kinds(r) == ["nothing detected"]


def test_same_tool_names_other_definition_shows_the_changed_json() -> None:
    a = {"name": "search", "parameters": {"enum": ["economy"]}}
    b = {"name": "search", "parameters": {"enum": ["business"]}}
    (d,) = what_differs(row("Find flights", "Find flights", tools_a=(a,), tools_b=(b,)))
    assert (d.kind, d.a, d.b) == ("tools", "economy", "business")


def test_policy_kind_falls_back_to_subcategory_and_ignores_other_rows() -> None:
    assert policy_kind(row("a", "b", verification_method="exact_match")) is None
    assert (
        policy_kind(row("a", "b", verification_method="policy_no_cache", subcategory="live_read"))
        == "policy: live data"
    )
    unknown = row("a", "a", verification_method="policy_no_cache", verification_payload={})
    assert policy_kind(unknown) is None
    assert kinds(unknown) == ["nothing detected"]


def test_public_test_row_without_labels_is_analysed() -> None:
    r = row("Top 5 films", "Top 6 films", split="test")
    assert kinds(r) == ["number"]


def test_changed_tokens_round_trip_and_flags() -> None:
    a, b = "Convert 5 miles  to km", "convert 5 kilometres to km!"
    ta, tb = changed_tokens(a, b)
    assert "".join(t for t, _ in ta) == a
    assert "".join(t for t, _ in tb) == b
    assert [t for t, c in ta if c] == ["miles"]
    assert [t for t, c in tb if c] == ["kilometres", "!"]
    assert tokenize("") == []
    assert changed_tokens("", "x") == ([], [("x", True)])


def test_minus_sign_against_dash() -> None:
    dash = row("my leaves are brown, crispy - why?", "my leaves are brown - crispy - why?")
    assert kinds(dash) == ["nothing detected"]
    assert kinds(row("what is 9 + 3", "what is 9 - 3")) == ["operator or direction"]
