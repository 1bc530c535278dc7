"""What a prompt's rows share and its text alone decides, worked out once per text.

A prompt log repeats itself (the same question asked by many users, a template
filled with a few values), and the generator used to redo, for every copy, the
never-cache rules, the trigger scan, the domain guess and side a's tokens. They
depend on the request only (query, system prompt, turns, tools), never on the
prompt's seeded generator, so :func:`facts_of` keeps them per request in a
:class:`TextMemo` (bounded: emptied when full, so memory stays flat on any
input) and the rows come out byte for byte as before.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...generators.common import token_set
from ...schema import Request
from ...verify.never_cache import PolicyVerdict, request_policy
from ...verify.perturbation import FAMILIES, KINDS
from .edits import Prompt, TextMemo
from .rows import guess_domain, json_str
from .triggers import candidate_kinds

#: Each family's kinds in :data:`KINDS` order (a family's queue starts in that order).
_BY_FAMILY = {fam: tuple(k for k in KINDS if KINDS[k][0] == fam) for fam in FAMILIES}


@dataclass(frozen=True, slots=True)
class PromptFacts:
    """The request's never-cache verdict, guessed domain, kinds worth trying
    (per family of :data:`FAMILIES`, in :data:`KINDS` order, before the prompt's
    generator shuffles them), side a's tokens and side a's query as JSON."""

    policy: PolicyVerdict
    domain: str
    queues: tuple[tuple[str, ...], ...]
    tokens_a: frozenset[str]
    query_json: str


def compute_facts(prompt: Prompt) -> PromptFacts:
    """:class:`PromptFacts` of ``prompt``, worked out afresh."""
    policy = request_policy(Request(prompt.query, prompt.turns, prompt.system_prompt, prompt.tools))
    candidates = candidate_kinds(prompt)
    queues = tuple(tuple(k for k in _BY_FAMILY[fam] if k in candidates) for fam in FAMILIES)
    return PromptFacts(
        policy,
        guess_domain(prompt, policy),
        queues,
        frozenset(token_set(prompt.query)),
        json_str(prompt.query),
    )


def _facts_of_text(key: tuple[str, str | None]) -> PromptFacts:
    return compute_facts(Prompt(key[0], key[1], None, "", 0))


#: Facts of requests without turns or tools (their dicts are not hashable), by
#: (query, system prompt). 4096 requests: a few MB at most.
_MEMO: TextMemo[tuple[str, str | None], PromptFacts] = TextMemo(_facts_of_text, limit=4096)


def facts_of(prompt: Prompt) -> PromptFacts:
    """:func:`compute_facts` of ``prompt``, from the memo when the same request
    came before (a request with turns or tools is worked out afresh)."""
    if prompt.turns or prompt.tools:
        return compute_facts(prompt)
    return _MEMO((prompt.query, prompt.system_prompt))
