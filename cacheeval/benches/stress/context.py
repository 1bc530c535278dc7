"""Context edits: the same query under another user's system prompt, or after
other prior turns (MISS, ADVERSARIAL)."""

from __future__ import annotations

import random
from collections.abc import Callable

from ...verify import stress_lexicon as lex
from ...verify.perturbation_guards import back_reference_problem, later_turn_problem
from .edits import Edit, Prompt
from .identity import IDENTITY

#: A context proposer sees the whole prompt.
ContextProposer = Callable[[Prompt, random.Random], Edit | None]


_OTHER_SYSTEM_PROMPTS = list(lex.OTHER_SYSTEM_PROMPTS)


def system_prompt_other(prompt: Prompt, rng: random.Random) -> Edit | None:
    """The same query and turns under another user's (or application's) system prompt."""
    if prompt.system_prompt is None:
        options = _OTHER_SYSTEM_PROMPTS
    else:
        options = [s for s in lex.OTHER_SYSTEM_PROMPTS if s != prompt.system_prompt]
    other = options[rng.randrange(len(options))]
    own = prompt.system_prompt or ""
    return Edit(
        "system_prompt_other", 0, len(own), own, other, field="system_prompt", system_prompt_b=other
    )


def turns_other(prompt: Prompt, rng: random.Random) -> Edit | None:
    """The same query after the prior turns of another conversation (inputs with turns)."""
    if not prompt.turns or back_reference_problem(prompt.query):
        return None
    user, assistant = lex.OTHER_TURNS[rng.randrange(len(lex.OTHER_TURNS))]
    turns = ({"role": "user", "content": user}, {"role": "assistant", "content": assistant})
    if [dict(t) for t in prompt.turns] == [dict(t) for t in turns]:
        return None
    return Edit("turns_other", 0, 0, "", "", field="context", turns_b=turns)


def turns_edit(prompt: Prompt, rng: random.Random) -> Edit | None:
    """An identity edit inside one of the user's prior turns (inputs with turns)."""
    if not prompt.turns:
        return None
    users = [i for i, t in enumerate(prompt.turns) if t.get("role") == "user"]
    kinds = sorted(IDENTITY)
    rng.shuffle(kinds)
    for i in reversed(users):
        content = str(prompt.turns[i].get("content", ""))
        for kind in kinds:
            edit = IDENTITY[kind](content, rng)
            if edit is None or later_turn_problem(
                list(prompt.turns), i, kind, edit.original, edit.replacement, prompt.query
            ):
                continue
            turns = list(prompt.turns)
            turns[i] = {**turns[i], "content": edit.apply(content)}
            return Edit(
                "turns_edit",
                edit.start,
                edit.end,
                edit.original,
                edit.replacement,
                field="context",
                turn=i,
                inner=kind,
                turns_b=tuple(turns),
            )
    return None


CONTEXT: dict[str, ContextProposer] = {
    "system_prompt_other": system_prompt_other,
    "turns_other": turns_other,
    "turns_edit": turns_edit,
}
