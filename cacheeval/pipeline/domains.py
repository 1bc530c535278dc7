"""The ten domains of the benchmark, one :class:`DomainSpec` each, in one place.

A spec says everything the pipeline needs to know about a domain: what it
covers, how many rows of each label it must have (its row of the sampling
matrix), the generator that turns its fixtures into rows, the checkers
(payload kinds of :data:`cacheeval.verify.CHECKERS`) that re-derive its
labels, where its public fixtures and its held-out families live, and the
license of its data. :data:`SPECS` lists them in :data:`cacheeval.schema.DOMAINS`
order; :data:`MATRIX` is the matrix as a plain ``{domain: counts}`` view.

>>> SPECS["math"].n_rows, MATRIX["math"]
(160, (30, 30, 30, 50, 20))
>>> sum(spec.n_rows for spec in SPECS.values())
2000
>>> SPECS["tool"].fixture_dir.relative_to(SPECS["tool"].fixture_dir.parents[1]).as_posix()
'sources/tool'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..generators import (
    code,
    conversational,
    creative,
    math,
    multi_turn,
    multilingual,
    personalized,
    qa_factual,
    qa_open,
    tool,
)
from ..generators.common import DraftRow
from ..schema import DOMAINS, LABELS
from ..support.layout import HELDOUT_DIR, SOURCES_DIR
from ..verify import CHECKERS

#: The data (fixtures, shards, cachebench.jsonl) is the project's own writing
#: (see ATTRIBUTION.md and DATASET_CARD.md); the code is MIT.
DATA_LICENSE = "CC-BY-SA-4.0"

#: A generator reads one domain's fixture directory and returns its rows in
#: file order, unnumbered (the pipeline numbers them).
Generator = Callable[[Path], list[DraftRow]]


@dataclass(frozen=True, slots=True)
class DomainSpec:
    """One domain: metadata, matrix row, generator, checkers, data locations.

    ``matrix`` counts rows per label in :data:`~cacheeval.schema.LABELS` order
    (EQUIV, PARA_SAFE, RELATED_UNSAFE, ADVERSARIAL, UNRELATED); ``checkers``
    are the payload kinds its rows may carry.
    """

    name: str
    description: str
    matrix: tuple[int, int, int, int, int]
    generator: Generator
    checkers: tuple[str, ...]
    fixture_dir: Path
    heldout_dir: Path
    license: str = DATA_LICENSE

    def __post_init__(self) -> None:
        if len(self.matrix) != len(LABELS) or any(n < 0 for n in self.matrix):
            raise ValueError(f"{self.name}: matrix needs {len(LABELS)} non-negative counts")
        unknown = [k for k in self.checkers if k not in CHECKERS]
        if unknown:
            raise ValueError(f"{self.name}: no checker for payload kind(s) {unknown}")

    @property
    def n_rows(self) -> int:
        """Rows the domain contributes: the sum of its matrix row."""
        return sum(self.matrix)

    def label_counts(self) -> dict[str, int]:
        """The matrix row as ``{label: rows}``."""
        return dict(zip(LABELS, self.matrix, strict=True))


def _spec(
    name: str,
    description: str,
    matrix: tuple[int, int, int, int, int],
    generator: Generator,
    checkers: tuple[str, ...],
) -> DomainSpec:
    return DomainSpec(
        name=name,
        description=description,
        matrix=matrix,
        generator=generator,
        checkers=checkers,
        fixture_dir=SOURCES_DIR / name,
        heldout_dir=HELDOUT_DIR / name,
    )


_ALL: tuple[DomainSpec, ...] = (
    _spec(
        "qa_factual",
        "Short factual questions; answers checked against accepted-alias sets.",
        (50, 50, 50, 40, 40),
        qa_factual.generate,
        ("alias_set",),
    ),
    _spec(
        "qa_open",
        "Open-ended explanatory questions; answers checked by three pattern criteria per side.",
        (60, 60, 50, 40, 50),
        qa_open.generate,
        ("rubric",),
    ),
    _spec(
        "math",
        "Math exercises whose answers sympy re-derives (solve, simplify, numeric tolerance).",
        (30, 30, 30, 50, 20),
        math.generate,
        ("sympy",),
    ),
    _spec(
        "code",
        "Coding requests answered with code; sandboxed tests and AST comparison.",
        (30, 30, 30, 50, 20),
        code.generate,
        ("code",),
    ),
    _spec(
        "conversational",
        "Small talk, advice, recommendations and how-to chat; rubric-checked replies.",
        (60, 60, 50, 40, 50),
        conversational.generate,
        ("rubric",),
    ),
    _spec(
        "tool",
        "Requests to an assistant with tools; JSON-schema tool calls compared in canonical "
        "form, never-cache policies for mutating and time-sensitive calls.",
        (60, 60, 60, 50, 50),
        tool.generate,
        ("tool_call", "policy"),
    ),
    _spec(
        "creative",
        "Poems, stories, slogans, jokes, names and toasts; never served from cache (policy).",
        (40, 40, 40, 30, 30),
        creative.generate,
        ("policy",),
    ),
    _spec(
        "personalized",
        "Requests whose answer reads the signed-in user's profile; never shared (policy).",
        (30, 30, 30, 30, 20),
        personalized.generate,
        ("policy",),
    ),
    _spec(
        "multi_turn",
        "The same final message after different conversations; final answer and history compared.",
        (30, 30, 50, 40, 30),
        multi_turn.generate,
        ("multi_turn",),
    ),
    _spec(
        "multilingual",
        "One question in many languages; the answer must come back in the query's language.",
        (30, 20, 30, 40, 30),
        multilingual.generate,
        ("alias_set",),
    ),
)

if tuple(s.name for s in _ALL) != DOMAINS:  # pragma: no cover - a registry edit gone wrong
    raise RuntimeError(
        "cacheeval.pipeline.domains lists other domains than cacheeval.schema.DOMAINS"
    )

#: domain name -> spec, in DOMAINS order.
SPECS: dict[str, DomainSpec] = {s.name: s for s in _ALL}

#: Target rows per (domain, label), in LABELS order: 2,000 rows in all.
MATRIX: dict[str, tuple[int, int, int, int, int]] = {s.name: s.matrix for s in _ALL}


def spec(domain: str) -> DomainSpec:
    """The spec of ``domain``; KeyError naming the known domains otherwise."""
    try:
        return SPECS[domain]
    except KeyError:
        raise KeyError(f"unknown domain {domain!r} (known: {', '.join(SPECS)})") from None
