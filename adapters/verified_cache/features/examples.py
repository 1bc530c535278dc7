"""Worked examples in a code request: "e.g. 'Ada' -> 'A.'", "so f(1) == 2", "a
phrase like 'never odd or even'", "[1, [2]] -> [1, 2]". They illustrate the
function the request asks for; another request for the same function picks
other examples or none, so the numbers, quotes and names inside them do not
determine the answer (:func:`example_spans`; :mod:`.side` leaves them out of
its items).

Read only in a request that names a function with its arguments ("f(x)"): in
prose "like 5 apples" is no example of anything.
"""

from __future__ import annotations

import re

#: A request that calls or defines a named function: "is_even(n)", "def f(x)".
_CALLED_RE = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]+\([^()\n]{0,80}\)")

#: A literal: a quoted string, a bracketed list, a number or "n=3".
_LITERAL = (
    r"(?:'[^'\n]{0,80}'|\"[^\"\n]{0,80}\"|\[[^\[\]\n]{0,80}\]|"
    r"\b[A-Za-z_]\w*\s*=\s*-?\d+(?:\.\d+)?|-?\d+(?:\.\d+)?\b)"
)

#: Words that open an example, followed by a literal or a call: "e.g. 'x'", "for
#: example [1, 2]", "like 'racecar'", "so f(1) == 2".
_MARKER_RE = re.compile(
    r"(?:\be\.?g\.?|\bfor example|\bfor instance|\bsuch as|\blike|\bso)[\s:,]*"
    r"(?=['\"\[\d]|[A-Za-z_]\w*\()",
    re.IGNORECASE,
)

#: An input and its output: "'user_id' -> 'userId'", "'a b' into 'A.B.'", "n=1 gives 2".
_MAPPING_RE = re.compile(
    _LITERAL + r"\s*(?:->|→|=>|\binto\b|\bbecomes\b|\bgives\b|\bis\b|==)\s*" + _LITERAL
)

_OPENERS, _CLOSERS = "([{", ")]}"


def _span_end(text: str, start: int) -> int:
    """Where an example opened at ``start`` ends: at the end of its sentence or
    clause (". ", "; ", "? ", "! "), or at a bracket closing one opened before it
    ("(e.g. [7, 7])"); quotes and brackets inside it are skipped over."""
    depth, quote = 0, ""
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            if ch == quote:
                quote = ""
            continue
        if ch in "'\"" and (i == 0 or not text[i - 1].isalnum()):
            quote = ch
        elif ch in _OPENERS:
            depth += 1
        elif ch in _CLOSERS:
            depth -= 1
            if depth < 0:
                return i
        elif depth == 0 and ch in ".;?!" and (i + 1 == len(text) or text[i + 1].isspace()):
            return i
        elif ch == "\n" and depth == 0:
            return i
    return len(text)


def example_spans(text: str) -> tuple[tuple[int, int], ...]:
    """(start, end) character spans of the worked examples of a code request
    (none when ``text`` names no function with its arguments).

    >>> t = "Write initials(name), e.g. 'Ada Lovelace' -> 'A.L.'. Keep it short."
    >>> [t[s:e] for s, e in example_spans(t)]
    ["e.g. 'Ada Lovelace' -> 'A.L.'", "'Ada Lovelace' -> 'A.L.'"]
    >>> example_spans("I have 5 apples like 3 pears, so 8 fruit?")
    ()
    """
    if "(" not in text or not _CALLED_RE.search(text):
        return ()
    spans = [(m.start(), _span_end(text, m.end())) for m in _MARKER_RE.finditer(text)]
    spans += [(m.start(), m.end()) for m in _MAPPING_RE.finditer(text)]
    return tuple(sorted(spans))


def in_spans(start: int, spans: tuple[tuple[int, int], ...]) -> bool:
    """Whether the character at ``start`` lies in one of ``spans``."""
    return any(s <= start < e for s, e in spans)
