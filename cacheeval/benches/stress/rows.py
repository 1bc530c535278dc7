"""A stress row: one prompt and one edit, as an ordinary benchmark row."""

from __future__ import annotations

import re
from typing import Any

from ...generators.common import provisional_difficulty
from ...schema import DOMAINS, POLICY_NO_CACHE, ROW_FIELDS, derive_binary_label
from ...verify.never_cache import PolicyVerdict
from ...verify.perturbation import KINDS, family_of
from .edits import Edit, Prompt

#: ``construction_method`` of every stress row.
CONSTRUCTION_METHOD = "stress_perturbation"
#: ``verification_payload["kind"]`` of every stress row.
PAYLOAD_KIND = "perturbation"

_WORD = re.compile(r"[a-z]+")
_CODE_WORDS = frozenset(
    """python javascript typescript java rust golang sql regex function array list dict
    string bug error exception compile script api json css html git docker bash code
    variable loop class method library npm pip""".split()
)
_MATH_WORDS = frozenset(
    """solve equation integral derivative percent percentage probability average sum
    root factorial prime divisible calculate""".split()
)
_MATH_SIGNS = re.compile(r"\d\s*[-+*/^=x×]\s*\d|how many")
_TRANSLATE_WORDS = frozenset({"translate", "translation"})
_LANGUAGES = frozenset("french spanish german italian japanese portuguese".split())
_CHAT = re.compile(
    r"\b(?:i feel|i'm feeling|my (?:friend|partner|boss|mom|dad|wife|husband)|advice|should i)\b"
)


def guess_domain(prompt: Prompt, policy: PolicyVerdict) -> str:
    """The CacheEval domain a prompt most looks like (used for ids and per-domain
    tables only; it never decides a label).

    >>> from ...verify.never_cache import ALLOWED
    >>> guess_domain(Prompt("Fix this Python error", None, None, "p", 1), ALLOWED)
    'code'
    """
    if prompt.turns:
        return "multi_turn"
    if policy.rule == "creative":
        return "creative"
    if policy.rule == "personal_data":
        return "personalized"
    low = prompt.query.lower()
    words = set(_WORD.findall(low))
    if (
        words & _TRANSLATE_WORDS
        or "how do you say" in low
        or ("in" in words and words & _LANGUAGES)
    ):
        return "multilingual"
    if "`" in low or words & _CODE_WORDS:
        return "code"
    if words & _MATH_WORDS or _MATH_SIGNS.search(low):
        return "math"
    if _CHAT.search(low):
        return "conversational"
    return "qa_open"


def payload(edit: Edit, policy: PolicyVerdict) -> dict[str, Any]:
    """The verification payload (see :mod:`cacheeval.verify.perturbation`)."""
    return {
        "kind": PAYLOAD_KIND,
        "perturbation": edit.kind,
        "family": family_of(edit.kind),
        "field": edit.field,
        "turn": edit.turn,
        "edit": edit.inner,
        "start": edit.start,
        "end": edit.end,
        "original": edit.original,
        "replacement": edit.replacement,
        "policy": None if policy.allowed else {"rule": policy.rule, "reason": policy.reason},
    }


def _rationale(edit: Edit, policy: PolicyVerdict) -> str:
    family = family_of(edit.kind)
    if edit.field == "system_prompt":
        what = "The same request under another user's system prompt"
    elif edit.kind == "turns_other":
        what = "The same request after the prior turns of another conversation"
    elif edit.field == "context":
        what = (
            f"The same request after a prior turn with {edit.original!r} changed to "
            f"{edit.replacement!r} ({edit.inner})"
        )
    else:
        what = f"Side b changes {edit.original!r} to {edit.replacement!r} ({edit.kind})"
    effect = "keeps the answer" if family == "noise" else "changes the answer"
    text = f"{what}: a {family} edit that {effect}."
    if not policy.allowed:
        text += f" Side a is never cached ({policy.rule}: {policy.reason})."
    return text


def stress_row(
    prompt: Prompt, edit: Edit, policy: PolicyVerdict, row_id: str, domain: str, split: str
) -> dict[str, Any]:
    """The row for ``edit`` of ``prompt``, in file key order."""
    label = KINDS[edit.kind][1]
    method = "exact_match" if policy.allowed else POLICY_NO_CACHE
    binary = derive_binary_label(label, method)
    query_b = edit.apply(prompt.query) if edit.field == "query" else prompt.query
    system_b = edit.system_prompt_b if edit.field == "system_prompt" else prompt.system_prompt
    turns_b = edit.turns_b if edit.field == "context" else prompt.turns
    turns_a = [dict(t) for t in prompt.turns] if prompt.turns else None
    values = {
        "id": row_id,
        "domain": domain,
        "subcategory": edit.kind,
        "label": label,
        "binary_label": binary,
        "difficulty": provisional_difficulty(prompt.query, query_b, binary),
        "query_a": prompt.query,
        "query_b": query_b,
        "context_a": turns_a,
        "context_b": [dict(t) for t in turns_b] if turns_b else None,
        "system_prompt_a": prompt.system_prompt,
        "system_prompt_b": system_b,
        "tools_a": None,
        "tools_b": None,
        "expected_answer_a": None,
        "expected_answer_b": None,
        "rationale": _rationale(edit, policy),
        "verification_method": method,
        "verification_payload": payload(edit, policy),
        "construction_method": CONSTRUCTION_METHOD,
        "source": prompt.source,
        "real_world_grounding": None,
        "split": split,
    }
    assert domain in DOMAINS
    return {f: values[f] for f in ROW_FIELDS}
