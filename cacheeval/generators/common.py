"""What every domain generator shares: the one fixture error, the typed row a
generator returns (:class:`DraftRow`), the provisional difficulty rule, and
small pieces of row building (:data:`CONSTRUCTION`, :func:`coin_order`,
:func:`lower_first`).

A generator returns drafts in file order: every shard field but ``id`` and
``difficulty``, which the pipeline assigns when it numbers the rows
(:func:`cacheeval.pipeline.generate.number_rows`: ids in list order, the
calibrated difficulty where ``sources/difficulty.json`` has one, else
:func:`provisional_difficulty`). ``binary_label`` is derived from the label and
the verification method, never written by hand.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ..schema import (
    ADVERSARIAL,
    EQUIV,
    HIT,
    PARA_SAFE,
    RELATED_UNSAFE,
    ROW_FIELDS,
    UNRELATED,
    Request,
    Row,
    derive_binary_label,
)
from ..support.layout import rng, source_ref

#: Shard rows hold every row field but ``split``, which assemble assigns.
SHARD_FIELDS: tuple[str, ...] = tuple(f for f in ROW_FIELDS if f != "split")

#: How a hand-written pair of each label was made (see the dataset conventions);
#: the domains whose pairs are all authored by hand use it as it is.
CONSTRUCTION: dict[str, str] = {
    EQUIV: "curated",
    PARA_SAFE: "paraphrase_rewrite",
    RELATED_UNSAFE: "curated",
    ADVERSARIAL: "adversarial_perturbation",
    UNRELATED: "curated",
}

S = TypeVar("S")


class FixtureError(ValueError):
    """A problem in a hand-written fixture. The message starts ``path:LINE:``
    when the line is known; :meth:`at` also keeps ``path`` and ``line``."""

    def __init__(
        self,
        message: str,
        *,
        path: Path | None = None,
        line: int | None = None,
        reason: str | None = None,
    ) -> None:
        super().__init__(message)
        self.path = path
        self.line = line
        self.reason = reason if reason is not None else message

    @classmethod
    def at(cls, path: Path, line: int, message: str) -> FixtureError:
        """``path:LINE: message``, keeping ``path``, ``line`` and ``reason``."""
        return cls(f"{path}:{line}: {message}", path=path, line=line, reason=message)


def fixture_files(fixture_dir: Path) -> list[Path]:
    """The ``*.json`` fixtures of a domain directory, in name order; a
    :class:`FixtureError` when there is none."""
    paths = sorted(Path(fixture_dir).glob("*.json"))
    if not paths:
        raise FixtureError(f"{fixture_dir}: no *.json fixtures found", path=Path(fixture_dir))
    return paths


def fixture_source(path: Path, item: str) -> str:
    """The ``source`` of the rows of fixture item ``item`` in ``path``:
    :func:`~cacheeval.support.layout.source_ref` for a fixture in the repository; for one
    elsewhere (tests, ``--sources-dir``) the same ``sources/<domain>/<file>#item``
    shape, so the rows still name their family."""
    try:
        return source_ref(path, item)
    except ValueError:
        return f"sources/{path.parent.name}/{path.name}#{item}"


def read_fixture_json(path: Path, shown: str | None = None) -> tuple[Any, str]:
    """A hand-written JSON fixture: (decoded data, raw text, for locating lines).

    A file that cannot be read or decoded, or is not JSON, is a
    :class:`FixtureError` ``path:LINE: ...`` (``shown`` replaces the path in
    the message).
    """
    where = shown if shown is not None else str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise FixtureError(f"{where}:1: cannot read fixture ({e})", path=path, line=1) from None
    try:
        return json.loads(text), text
    except json.JSONDecodeError as e:
        message = f"not valid JSON ({e.msg} at column {e.colno})"
        raise FixtureError(
            f"{where}:{e.lineno}: {message}", path=path, line=e.lineno, reason=message
        ) from None


def coin_order(sides: tuple[S, S], *seed: str | int) -> tuple[S, S]:
    """``sides``, swapped when a coin seeded on ``seed`` (:func:`~cacheeval.support.layout.rng`)
    comes up below one half, so which side is a says nothing about the row."""
    a, b = sides
    return (b, a) if rng(*seed).random() < 0.5 else (a, b)


def lower_first(text: str) -> str:
    """``text`` with its first letter in lower case (for joining two phrases)."""
    return text[:1].lower() + text[1:]


_TOKEN = re.compile(r"\w+", re.UNICODE)
#: A byte table turning every ASCII character ``\w`` does not match into a space
#: (a word character is never a space, so splitting on spaces gives the words).
_ASCII_NON_WORD_TO_SPACE = bytes(c if _TOKEN.match(chr(c)) else 32 for c in range(256))


def request_text(
    query: str, context: Sequence[dict[str, str]] | None, system_prompt: str | None
) -> str:
    """One side of a pair as one string: :meth:`Request.text` (system prompt,
    prior turns and query joined by newlines)."""
    return Request(query, tuple(context) if context else None, system_prompt).text()


def provisional_difficulty(text_a: str, text_b: str, binary_label: str) -> str:
    """Provisional difficulty from token Jaccard similarity of the two requests.

    A HIT pair is hard when the sides share few tokens (a cache must see past
    wording); a MISS pair is hard when they share many (a cache must see the
    small difference). Replaced by the calibrated ensemble difficulty wherever
    the calibration file has the row.

    >>> provisional_difficulty("What is 2+2?", "what is 2 + 2", "HIT")
    'easy'
    >>> provisional_difficulty("Capital of France?", "Capital of Spain?", "MISS")
    'medium'
    """
    return difficulty_of_tokens(token_set(text_a), token_set(text_b), binary_label)


def token_set(text: str) -> set[str]:
    """The tokens :func:`provisional_difficulty` compares (case-folded words).

    >>> sorted(token_set("What is 2+2?")), sorted(token_set("Grüße, ÉTÉ_2"))
    (['2', 'is', 'what'], ['grüsse', 'été_2'])
    """
    folded = text.casefold()
    if folded.isascii():  # the same tokens as the regex, three times faster
        return set(folded.encode().translate(_ASCII_NON_WORD_TO_SPACE).decode().split())
    return set(_TOKEN.findall(folded))


def difficulty_of_tokens(ta: AbstractSet[str], tb: AbstractSet[str], binary_label: str) -> str:
    """:func:`provisional_difficulty` from the two sides' :func:`token_set` (a
    generator that pairs one request with many variants tokenises it once)."""
    shared = len(ta & tb)
    union = len(ta) + len(tb) - shared  # len(ta | tb), without building it
    j = shared / union if union else 1.0
    if binary_label == HIT:
        return "hard" if j < 0.3 else "medium" if j < 0.6 else "easy"
    return "hard" if j >= 0.7 else "medium" if j >= 0.4 else "easy"


def _frozen(value: Any) -> tuple[dict[str, Any], ...] | None:
    return None if value is None else tuple(value)


@dataclass(frozen=True, slots=True, kw_only=True)
class DraftRow:
    """One generated request pair before the pipeline numbers it.

    Fields are those of a shard row but ``id``, ``binary_label`` and
    ``difficulty``; contexts and tools are tuples of dicts (lists are accepted
    and frozen). Raises ValueError for an unknown label.
    """

    domain: str
    subcategory: str
    label: str
    query_a: str
    query_b: str
    context_a: tuple[dict[str, Any], ...] | None = None
    context_b: tuple[dict[str, Any], ...] | None = None
    system_prompt_a: str | None = None
    system_prompt_b: str | None = None
    tools_a: tuple[dict[str, Any], ...] | None = None
    tools_b: tuple[dict[str, Any], ...] | None = None
    expected_answer_a: str | None
    expected_answer_b: str | None
    rationale: str
    verification_method: str
    verification_payload: dict[str, Any] = field(default_factory=dict)
    construction_method: str
    source: str
    real_world_grounding: str

    def __post_init__(self) -> None:
        for name in ("context_a", "context_b", "tools_a", "tools_b"):
            object.__setattr__(self, name, _frozen(getattr(self, name)))
        derive_binary_label(self.label, self.verification_method)  # rejects an unknown label

    @property
    def binary_label(self) -> str:
        """HIT or MISS: :func:`~cacheeval.schema.derive_binary_label` of label and method."""
        return derive_binary_label(self.label, self.verification_method)

    def request(self, side: str) -> Request:
        """Side ``"a"`` or ``"b"`` as a :class:`~cacheeval.schema.Request`."""
        return Request(
            getattr(self, f"query_{side}"),
            getattr(self, f"context_{side}") or None,
            getattr(self, f"system_prompt_{side}"),
            getattr(self, f"tools_{side}") or None,
        )

    def side_texts(self) -> tuple[str, str]:
        """Each side's whole request as one string (:func:`request_text`)."""
        return (
            request_text(self.query_a, self.context_a, self.system_prompt_a),
            request_text(self.query_b, self.context_b, self.system_prompt_b),
        )

    @property
    def provisional_difficulty(self) -> str:
        """:func:`provisional_difficulty` of this pair."""
        return provisional_difficulty(*self.side_texts(), self.binary_label)

    def to_shard(self, id: str, difficulty: str | None = None) -> dict[str, Any]:
        """The shard row, in file key order (:data:`SHARD_FIELDS`), under ``id``;
        ``difficulty`` defaults to the provisional one."""
        values = asdict(self)
        for name in ("context_a", "context_b", "tools_a", "tools_b"):
            if values[name] is not None:
                values[name] = list(values[name])
        values["id"] = id
        values["binary_label"] = self.binary_label
        values["difficulty"] = difficulty if difficulty is not None else self.provisional_difficulty
        return {f: values[f] for f in SHARD_FIELDS}

    def to_row(self, id: str | None = None, split: str = "train") -> Row:
        """A :class:`~cacheeval.schema.Row` of this draft (for a generator's own
        checks; ``id`` defaults to ``cb-<domain>-0000``)."""
        shard = self.to_shard(id if id is not None else f"cb-{self.domain}-0000")
        return Row.from_dict({**shard, "split": split})
