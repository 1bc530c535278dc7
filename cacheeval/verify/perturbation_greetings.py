"""The rules of the politeness noise edits of stress rows (see
:mod:`cacheeval.verify.perturbation_rules`): a greeting before a request and a
thanks after one. Both keep the answer, but they only read as something a
person sends before or after a question or an instruction to an assistant, never
after a statement, a reply in a debate or a rhetorical question.
"""

from __future__ import annotations

import re
from functools import lru_cache

from . import stress_lexicon as lex
from .perturbation_text import FIRST_WORD, REQUEST_VERBS, asks_for_something, at_word_boundary

#: Question words a greeting ending in ", " or ": " may lower-case.
LOWERABLE_OPENERS = frozenset(
    "How What Why When Where Which Who Can Could Is Are Do Does Should Would Will".split()
)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_SENTENCE_ENDS = re.compile(r"(?<=[.!?])\s+")


@lru_cache(maxsize=256)  # the greeting proposer tries many greetings on one text
def _greeting_text_problem(text: str) -> str | None:
    if not asks_for_something(text) or not opens_request(_SENTENCE_END.split(text)[0]):
        return "a greeting before a report, not a request"
    if _RHETORICAL.search(text):
        return "a greeting before a rhetorical question"
    return None


def greeting_validator(text: str, start: int, end: int, o: str, r: str) -> str | None:
    if problem := _greeting_text_problem(text):
        return problem
    if start != 0 or not at_word_boundary(text, start, end) or not o:
        return "the span is not the first word"
    for g in lex.GREETINGS:
        joined = g.endswith((", ", ": "))
        if r == g + o:
            if joined and o[:1].isupper() and o != "I":
                return "a capital letter after a comma or a colon"
        elif not (joined and o in LOWERABLE_OPENERS and r == g + o.lower()):
            continue
        if g in lex.QUESTION_GREETINGS and "?" not in text:
            return "a greeting that announces a question, before something else"
        return None
    return "not a curated greeting before the first word"


#: A question that argues with its reader rather than asking for help.
_RHETORICAL = re.compile(
    r"\b(?:you (?:are|were) saying|you(?:'re| are) (?:saying|claiming|asking me)|you said|"
    r"you (?:really|even|actually) (?:believe|think|know)|do you (?:notice|realize|realise|"
    r"not|even|really|seriously)|are you (?:serious|kidding|joking)|how dare|"
    # a reply to another person in a debate, not a request to an assistant
    r"(?:do|did|are|were|where|have) you (?:see|think|mean|really|honestly|talking|saying|"
    r"claiming|suggesting|believe)|makes you think|^\W*what if)\b",
    re.IGNORECASE,
)


#: Words that open a question.
_QUESTION_WORDS = frozenset(
    """how what what's whats why when where where's which who who's whom whose can could
    is are do does did should would will has have may might shall was were isn't aren't
    can't don't doesn't didn't won't wouldn't shouldn't couldn't hasn't haven't any anyone
    anybody""".split()
)
#: Instructions to an assistant (not advice to a reader: "Buy a screen and ...").
_TASK_VERBS = REQUEST_VERBS - frozenset(
    "buy walk turn open call play add remove delete get check pretend order".split()
)


def opens_request(sentence: str) -> bool:
    """Whether ``sentence`` opens like a question (and has its question mark) or
    an instruction to an assistant.

    >>> opens_request("How do I sort a list?"), opens_request("Buy a screen and use it.")
    (True, False)
    """
    first = FIRST_WORD.match(sentence.strip())
    word = first.group().lower() if first else ""
    if word in _QUESTION_WORDS:
        return sentence.rstrip().endswith("?")
    return word in _TASK_VERBS and "?" not in sentence


@lru_cache(maxsize=256)
def closer_problem(text: str) -> str | None:
    """Why a thanks may not follow ``text``: it is no request for help (a
    statement, a rhetorical question), or its last sentence is no question or
    instruction."""
    if not asks_for_something(text):
        return "a thanks after a report, not a request"
    last = _SENTENCE_ENDS.split(text.strip())[-1]
    if not opens_request(last):
        return "the text does not end in a question or an instruction"
    if _RHETORICAL.search(text):
        return "a rhetorical question, not a request for help"
    return None


def closer_validator(text: str, start: int, end: int, o: str, r: str) -> str | None:
    problem = closer_problem(text)
    if problem:
        return problem
    if (start, end) != (len(text), len(text)) or not text.rstrip().endswith(("?", ".", "!")):
        return "not appended after a finished request"
    return None if r in lex.CLOSERS else "not a curated closer"
