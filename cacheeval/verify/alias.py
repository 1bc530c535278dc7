"""Exact match against accepted-answer (alias) sets.

Payload::

    {"kind": "alias_set",
     "aliases_a": ["Canberra", "Canberra, Australia"],   # accepted answers to query_a
     "aliases_b": ["Sydney"],                            # accepted answers to query_b
     "lang_a": "en", "lang_b": "en"}                     # optional: answer language

HIT iff the cached answer (``expected_answer_a``) is an accepted answer to
query_b after :func:`normalize_answer`, and, when both languages are given,
they are the same language (an answer must come back in the query's
language). The row is inconsistent (undecided) when an expected answer is not
in its own side's alias set.
"""

from __future__ import annotations

from ..schema import HIT, MISS, Row
from .result import Check
from .textnorm import normalize_answer


def _string_list(value: object) -> bool:
    # An empty aliases_a made every row "undecided" with a misleading message,
    # and a non-string alias crashed normalize_answer.
    return isinstance(value, list) and bool(value) and all(isinstance(s, str) for s in value)


def check(row: Row) -> Check:
    p = row.verification_payload or {}
    aliases_a = p.get("aliases_a")
    aliases_b = p.get("aliases_b")
    if not _string_list(aliases_a) or not _string_list(aliases_b):
        return Check(
            None, "alias_set payload needs non-empty lists of strings aliases_a and aliases_b"
        )
    assert isinstance(aliases_a, list) and isinstance(aliases_b, list)
    if row.expected_answer_a is None or row.expected_answer_b is None:
        return Check(None, "expected answers are missing")
    norm_a = {normalize_answer(s) for s in aliases_a}
    norm_b = {normalize_answer(s) for s in aliases_b}
    ans_a = normalize_answer(row.expected_answer_a)
    if ans_a not in norm_a:
        return Check(None, f"expected_answer_a {row.expected_answer_a!r} is not in aliases_a")
    if normalize_answer(row.expected_answer_b) not in norm_b:
        return Check(None, f"expected_answer_b {row.expected_answer_b!r} is not in aliases_b")
    lang_a, lang_b = p.get("lang_a"), p.get("lang_b")
    if lang_a is not None and lang_b is not None and lang_a != lang_b:
        return Check(MISS, f"answer language {lang_a} cannot serve a {lang_b} query")
    if ans_a in norm_b:
        return Check(HIT, "cached answer is an accepted answer to query_b")
    return Check(MISS, "cached answer is not an accepted answer to query_b")
