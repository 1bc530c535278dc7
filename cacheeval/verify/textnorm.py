"""Text normalisation shared by the answer-matching checkers."""

from __future__ import annotations

import re
import unicodedata

# Separators between digits ("1,000", "3.14") are part of the number; elsewhere
# these marks are sentence punctuation and carry no answer content.
_SOFT_PUNCT = re.compile(r"(?<!\d)[.,]|[.,](?!\d)|[!?;:\"'`“”‘’«»¿¡()\[\]{}]", re.UNICODE)
_SPACE = re.compile(r"\s+")


def normalize_answer(text: str) -> str:
    """NFKC, case-folded, sentence punctuation removed, whitespace collapsed.

    Signs and symbols that change an answer are kept (``-5`` is not ``5``,
    ``C++`` is not ``C``, ``1,000`` is not ``1.000``), and so are accents:
    ``París`` and ``Paris`` are different answer strings (the answer comes back
    in the query's language).
    """
    text = unicodedata.normalize("NFKC", text).casefold()
    text = _SOFT_PUNCT.sub(" ", text)
    return _SPACE.sub(" ", text).strip()
