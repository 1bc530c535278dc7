"""Context edits: the same query under another user's system prompt, or after
other prior turns (MISS, ADVERSARIAL)."""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from typing import TypeVar

from ...verify import stress_lexicon as lex
from ...verify.perturbation_guards import back_reference_problem, later_turn_problem
from .edits import Edit, Prompt
from .identity import IDENTITY

#: A context proposer sees the whole prompt.
ContextProposer = Callable[[Prompt, random.Random], Edit | None]
_WORD = re.compile(r"[a-z]+")
T = TypeVar("T")


#: What each of ``lex.OTHER_SYSTEM_PROMPTS`` serves, in a query's words; None for a
#: prompt that changes any answer (a language, a reader, a style). An application's
#: own assistant (a bank's, a telecom's) asked about fish or religion read as an odd
#: pairing to the blind audit, so it is drawn only for a query on its topic.
_SYSTEM_TOPICS: tuple[frozenset[str] | None, ...] = tuple(
    frozenset(words.split()) if words else None
    for words in (
        "",
        "",
        """phone phones plan plans data signal router wifi sim bill roaming contract
        mobile internet broadband upgrade device devices""",
        "",
        """game games play playing kids children treasure pirate pirates story""",
        """recipe recipes cook cooking dinner lunch breakfast meal meals food eat bake
        vegan vegetarian snack dessert protein""",
        "",
        """law laws legal contract rent landlord tenant tax taxes visa court sue rights
        fine employer employee lease divorce inheritance""",
        """account accounts card cards transfer loan loans bank overdraft savings interest
        mortgage fee fees payment payments balance""",
        "",
    )
)
assert len(_SYSTEM_TOPICS) == len(lex.OTHER_SYSTEM_PROMPTS)


def _on_topic(items: Sequence[T], topics: Sequence[frozenset[str] | None], query: str) -> list[T]:
    """The ``items`` whose topic (None: any) shares a word with ``query``, in order."""
    words = set(_WORD.findall(query.lower()))
    return [i for i, t in zip(items, topics, strict=True) if t is None or t & words]


def system_prompt_other(prompt: Prompt, rng: random.Random) -> Edit | None:
    """The same query and turns under another user's (or application's) system
    prompt: one that changes any answer, or an application's on the query's topic."""
    fitting = _on_topic(lex.OTHER_SYSTEM_PROMPTS, _SYSTEM_TOPICS, prompt.query)
    options = [s for s in fitting if s != prompt.system_prompt]
    other = options[rng.randrange(len(options))]
    own = prompt.system_prompt or ""
    return Edit(
        "system_prompt_other", 0, len(own), own, other, field="system_prompt", system_prompt_b=other
    )


#: What each of ``lex.OTHER_TURNS`` bears on, in the words of a query it changes.
#: After an unrelated conversation ("I only have a microwave and a kettle", then
#: "How long before recoating?") a query reads oddly and keeps its answer, so the
#: blind audit counted it a failure; another conversation is only drawn from those
#: whose topic the query shares.
_TURN_TOPICS: tuple[frozenset[str], ...] = tuple(
    frozenset(words.split())
    for words in (
        """pack packing trip travel travelling flight fly visit visiting vacation holiday hotel
        weather wear itinerary sightseeing restaurant restaurants beach museum museums tour
        tips spring abroad plug adapter phrases""",
        """python django database sql postgres postgresql query queries model models migration
        migrations orm api deploy server table tables web app backend framework""",
        """practice practise learn learning lesson lessons kid kids child children music
        teach motivate homework song songs instrument reading explain""",
        """buy cheap cheaper cost costs afford save saving money spend spending price gift gifts
        budget groceries recommend""",
        """thesis essay paper write writing research sources cite citation outline abstract
        chapter argument conclusion introduction literature""",
        """cook cooking recipe recipes dinner lunch breakfast meal meals bake heat reheat boil
        rice pasta egg eggs food snack""",
        """java code coding stream streams list lists string strings sort parse date dates
        lambda library method class json convert array map collection""",
        """tax taxes law legal visa ship shipping vote healthcare insurance bank mortgage
        holidays driving license licence wage retire retirement""",
    )
)
assert len(_TURN_TOPICS) == len(lex.OTHER_TURNS)


def turns_other(prompt: Prompt, rng: random.Random) -> Edit | None:
    """The same query after the prior turns of another conversation on its topic
    (inputs with turns)."""
    if not prompt.turns or back_reference_problem(prompt.query):
        return None
    options = _on_topic(lex.OTHER_TURNS, _TURN_TOPICS, prompt.query)
    if not options:
        return None
    user, assistant = options[rng.randrange(len(options))]
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
