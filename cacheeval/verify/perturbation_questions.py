"""The ``question_focus`` stress edit: the phrase that says what a request asks
for, swapped for one that asks for something else about the same thing ("What
year did the Wall fall?" -> "What month ...", "How often can I take them?" ->
"How long can I take them?", "Convert this to async/await" -> "... to
callbacks"). Each pair is curated and one-way: the way back often reads oddly
("What month is best to visit?" -> "What year ..."), and each pair carries the
condition under which both sides read as a person's question and ask for
different answers.
"""

from __future__ import annotations

import re

from .perturbation_text import at_word_boundary, pair_set

#: (asks for, asks instead for), one-way, matched in any case form the text uses.
QUESTION_FOCUS: tuple[tuple[str, str], ...] = (
    ("what year", "what month"), ("which year", "which month"),
    ("what time is it", "what day is it"), ("what time will it be", "what day will it be"),
    ("how often", "how long"), ("do I have", "do I need"),
    ("current streak", "longest streak"), ("to async/await", "to callbacks"),
    ("the local time", "the local date"), ("in which language", "in which year"),
    ("what language", "what year"), ("current balance", "minimum balance"),
    ("should I do next", "did I do last"),
    ("in welchem Jahr", "in welchem Monat"), ("em que ano", "em que mês"),
    ("en qué año", "en qué mes"), ("en quelle année", "en quel mois"),
    ("in che anno", "in che mese"), ("в каком году", "в каком месяце"),
)  # fmt: skip
#: Words of the pairs that let a prompt's words select the kind (see
#: :mod:`cacheeval.benches.stress.triggers`).
TRIGGERS = (
    "year", "time", "often", "have", "streak", "await", "local", "language", "balance",
    "next", "jahr", "ano", "año", "année",
    "anno", "году",
)  # fmt: skip

#: Activities that last, so "how long can I ..." asks a real question ("how long
#: can I take them", never "how long should I replace my toothbrush").
LASTING_VERBS = frozenset(
    """take water run exercise train study walk practise practice meditate fast swim stretch
    use wear leave keep store breastfeed nap sleep charge soak boil bake""".split()
)
_HOW_OFTEN_TAIL = re.compile(
    r"\s+(?:can|should|could|may|do|must) (?:I|you|we|he|she|they|my \w+) (\w+)", re.IGNORECASE
)


def question_focus_problem(text: str, start: int, end: int, o: str, r: str) -> str | None:
    """Why ``o`` -> ``r`` is not a question_focus edit of ``text`` (None when it is).

    >>> question_focus_problem("How often can I take them?", 0, 9, "How often", "How long")
    >>> question_focus_problem("How often do I replace it?", 0, 9, "How often", "How long")
    "'how long do I replace' asks nothing that lasts"
    """
    if (o, r) not in pair_set(QUESTION_FOCUS, +1):
        return f"{o!r} -> {r!r} is not a curated question focus"
    if not at_word_boundary(text, start, end):
        return "not whole words"
    low, after = o.lower(), text[end:]
    if low == "how often":
        m = _HOW_OFTEN_TAIL.match(after)
        if m is None or m.group(1).lower() not in LASTING_VERBS:
            return f"'how long{m.group() if m else ''}' asks nothing that lasts"
        if re.search(r"\bhow long\b", text, re.IGNORECASE):
            return "the text already asks how long"
    elif low in ("what year", "which year"):
        if re.match(r"\s+(?:of|old|round|to)\b", after, re.IGNORECASE):
            return f"{o} {after.split()[0]} is not a question about a date"
    elif low.endswith("language"):
        if not re.search(r"\b(?:written|published|publish|wrote|released|first)\b", text, re.I):
            return "not a question about a work's first language, which has a year too"
    elif low == "do i have":
        if not re.match(r"\s*(?:\?|\Z|left\b)", after):
            return "'do I have' does not end the question"
        if not re.match(r"\s*how (?:many|much)\b", text, re.IGNORECASE):
            return "not a question of how many or how much"
    return None
