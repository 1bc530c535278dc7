"""Names one side gives and the other gives otherwise: a demonym for its place
("American" / "U.S."), an adjective of a name ("Euclidean" / "Euclid's"), an
acronym and its words ("ECB" / "European Central Bank", "2FA" / "two-factor
authentication"). :func:`missing_entities` is what :func:`.pair.entity_features`
counts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .canonical import stem
from .lexicon import FILLER, NON_ENTITY_CAPITALS, PLACE_OF
from .side import Side

#: Endings that make a name an adjective or a following ("Euclid" -> "Euclidean",
#: "Darwin" -> "Darwinian", "Marx" -> "Marxist", "Victoria" -> "Victorian").
_NAME_ENDINGS = ("ean", "ian", "an", "n", "ic", "ist", "ism", "esque")
#: The shortest name read with such an ending.
NAME_STEM_MIN = 4


def _named_alike(x: str, y: str) -> bool:
    """Whether one name is the other with an adjective ending (:data:`_NAME_ENDINGS`).

    >>> _named_alike("euclidean", "euclid"), _named_alike("darwin", "darwinian")
    (True, True)
    >>> _named_alike("austin", "austria"), _named_alike("iran", "ira")
    (False, False)
    """
    short, long_ = sorted((x, y), key=len)
    return (
        len(short) >= NAME_STEM_MIN
        and long_.startswith(short)
        and long_[len(short) :] in _NAME_ENDINGS
    )


def missing_entities(side: Side, only: set[str], other: Side) -> list[str]:
    """``side``'s entities the content diff kept on its side only, less honorifics
    and company suffixes, less a demonym whose place the other side names
    ("American" vs "U.S.") and less an adjective of a name the other side names
    ("Euclidean" vs "Euclid's", :func:`_named_alike`)."""
    places = {PLACE_OF.get(e, e) for e in other.entities}
    return [
        e
        for e in side.entities
        if (e in only or stem(e) in only)
        and e not in NON_ENTITY_CAPITALS
        and PLACE_OF.get(e, e) not in places
        and not any(_named_alike(e, f) for f in other.entities)
    ]


#: An acronym as written: capitals with periods ("U.C.L.A.") or without ("ECB",
#: "CEOs"), perhaps led by a digit ("2FA").
_ACRONYM_RE = re.compile(r"\b(?:[A-Z]\.){2,6}|\b\d?[A-Z]{2,6}s?\b")
_WORD_RE = re.compile(r"[A-Za-z][\w'-]*")
#: Words an acronym skips ("Department of Energy" is DOE).
_INITIALS_SKIP = frozenset({"of", "the", "and", "for", "de", "on", "in"})
#: Longest run of words read as an acronym's expansion.
_EXPANSION_WORDS = 8


def _acronyms(text: str) -> set[str]:
    return {m.replace(".", "").lower() for m in _ACRONYM_RE.findall(text)}


def _expansions(text: str) -> list[tuple[str, tuple[str, ...]]]:
    """(initials, lower-cased words) of every run of capitalised words in ``text``
    (small words skipped) that is at least two words long."""
    words = _WORD_RE.findall(text)
    out = []
    for i in range(len(words)):
        initials, run = "", []
        for w in words[i : i + _EXPANSION_WORDS]:
            if initials and w.lower() in _INITIALS_SKIP:
                continue
            if not w[0].isupper():
                break
            initials += w[0].lower()
            run.append(w.lower())
            if len(initials) >= 2:
                out.append((initials, tuple(run)))
    return out


def spelled_out(a: Side, b: Side) -> tuple[set[str], set[str]]:
    """Entities of ``a`` and of ``b`` that are one side's acronym and the other
    side's words for it ("ECB" and "European Central Bank", "UCLA" and
    "University of California, Los Angeles"): no change of name.

    >>> from adapters.verified_cache.features.side import analyze
    >>> a = analyze("Did the ECB raise rates?")
    >>> b = analyze("Did the European Central Bank raise rates?")
    >>> [sorted(x) for x in spelled_out(a, b)]
    [['ecb'], ['bank', 'central', 'european']]
    """
    covered_a: set[str] = set()
    covered_b: set[str] = set()
    for x, y, cov_x, cov_y in ((a, b, covered_a, covered_b), (b, a, covered_b, covered_a)):
        acronyms = _acronyms(x.query)
        if not acronyms:
            continue
        # the other side's name already read as this acronym ("United Nations" is "un")
        cov_y.update(e for e in y.entities if e in acronyms)
        for initials, run in _expansions(y.query):
            if initials in acronyms:
                cov_x.add(initials)
                cov_y.update(run)
        for initials in acronyms - cov_x:
            if initials_run(y.tokens, initials):
                # spelled out in lower case ("two-factor authentication" is 2FA): the
                # acronym's letters, which the tokenizer read apart from its digit
                cov_x.update((initials, initials.lstrip("0123456789")))
    return covered_a, covered_b


def initials_run(tokens: Sequence[str], initials: str) -> bool:
    """Whether some run of ``tokens`` (small words skipped, a number standing for
    its digits, other words of three letters or more for their first letter)
    spells ``initials``.

    >>> initials_run("what is 2 factor authentication".split(), "2fa")
    True
    >>> initials_run("what is a fast api".split(), "2fa")
    False
    """
    for i in range(len(tokens)):
        spelled = ""
        for w in tokens[i:]:
            if spelled and w in _INITIALS_SKIP:
                continue
            if w.isdigit():
                spelled += w
            elif w.isalpha() and len(w) >= 3 and w not in FILLER:
                spelled += w[0]
            else:
                break
            if not initials.startswith(spelled):
                break
            if spelled == initials:
                return True
    return False
