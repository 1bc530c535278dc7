"""Text normalisation shared by the answer-matching checkers."""

from __future__ import annotations

import re
import unicodedata

_PUNCT = re.compile(r"[^\w\s]", re.UNICODE)
_SPACE = re.compile(r"\s+")


def normalize_answer(text: str) -> str:
    """NFKC, case-folded, punctuation removed, whitespace collapsed.

    Accents are kept on purpose: ``París`` and ``Paris`` are different answer
    strings (the answer comes back in the query's language).
    """
    text = unicodedata.normalize("NFKC", text).casefold()
    text = _PUNCT.sub(" ", text)
    return _SPACE.sub(" ", text).strip()
