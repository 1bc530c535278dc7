"""Readers for the public paraphrase-pair file layouts, so a user can grade a
cache on their own downloaded copies of the classic benchmarks (CacheEval ships
none of their text).

Standard library only. Every reader yields :class:`LabelledPair` records (the
line a record starts on, the two texts, HIT or MISS); :func:`pair_rows` turns
them into benchmark rows with the same field mapping as ``cacheeval
import-pairs`` (HIT -> ``PARA_SAFE``, MISS -> ``RELATED_UNSAFE``, see
:mod:`cacheeval.benches.importers`).

=========  =====================================================================
layout     file
=========  =====================================================================
``qqp``    Quora Question Pairs TSV with a header naming ``question1``,
           ``question2`` and ``is_duplicate`` (1 = HIT, 0 = MISS); other
           columns (``id``, ``qid1``, ...) are ignored.
``paws``   PAWS TSV with a header naming ``sentence1``, ``sentence2``, ``label``
           (1 = HIT, 0 = MISS).
``mrpc``   Microsoft Research Paraphrase Corpus TSV with a header naming
           ``Quality``, ``#1 String``, ``#2 String`` (1 = HIT, 0 = MISS).
``sts``    SemEval STS lines ``score<TAB>sentence1<TAB>sentence2`` (no header;
           a first line whose score is not a number is read as one). A score
           >= ``hit_min`` (default 4.0) is HIT, <= ``miss_max`` (default 2.0)
           MISS, anything between is dropped (neither clearly the same request
           nor clearly another).
``csv``,   the ``import-pairs`` formats: named text and label columns and the
``tsv``,   label value meaning HIT (and MISS); the default columns are
``jsonl``  ``text_a``, ``text_b``, ``label`` with values ``HIT``/``MISS``.
``auto``   the layout read from the header line (or the extension for JSONL).
=========  =====================================================================

The TSV layouts are read without quote processing (these corpora put bare
``"`` characters inside sentences). A bad line - wrong number of fields, an
empty text, a label that is not one of the layout's values - raises
:class:`~cacheeval.support.jsonio.JsonlError` naming ``file:LINE``.

At most ``max_pairs`` (default and limit :data:`MAX_PAIRS`) pairs are kept per
file: a larger file is sampled (seeded, the kept pairs stay in file order) and
the sample size recorded.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..schema import Row
from ..support.jsonio import JsonlError
from .importers import NEGATIVE_LABEL, POSITIVE_LABEL, ImportSpec, import_pairs
from .importers import _row as import_row

#: Most pairs graded from one external file (they are held in memory, with embeddings).
MAX_PAIRS = 100_000

LAYOUTS: tuple[str, ...] = ("qqp", "paws", "mrpc", "sts")
GENERIC: tuple[str, ...] = ("csv", "tsv", "jsonl")
FORMATS: tuple[str, ...] = ("auto", *LAYOUTS, *GENERIC)

#: (text a column, text b column, label column) of the header layouts; label 1 = HIT.
_COLUMNS: dict[str, tuple[str, str, str]] = {
    "qqp": ("question1", "question2", "is_duplicate"),
    "paws": ("sentence1", "sentence2", "label"),
    "mrpc": ("#1 String", "#2 String", "Quality"),
}


@dataclass(frozen=True, slots=True)
class LabelledPair:
    """One labelled pair of a file: ``line`` is where its record starts."""

    line: int
    text_a: str
    text_b: str
    hit: bool
    raw_label: str


@dataclass(frozen=True, slots=True)
class PairFileSpec:
    """How to read a pair file (see the module docstring).

    ``text_a``/``text_b``/``label``/``positive``/``negative`` apply to the generic
    formats; ``hit_min``/``miss_max`` to ``sts``. ``domain`` and ``split`` are
    written into every row (one family per file, as ``import-pairs`` does).
    """

    format: str = "auto"
    text_a: str = "text_a"
    text_b: str = "text_b"
    label: str = "label"
    positive: str = "HIT"
    negative: str | None = None  # None: every value but ``positive`` is MISS
    hit_min: float = 4.0
    miss_max: float = 2.0
    domain: str = "qa_open"
    split: str = "test"
    max_pairs: int = MAX_PAIRS
    seed: int = 0

    def problems(self) -> list[str]:
        out = []
        if self.format not in FORMATS:
            out.append(f"unknown format {self.format!r} (expected one of {', '.join(FORMATS)})")
        if not 0.0 <= self.miss_max < self.hit_min:
            out.append(
                f"STS cut-offs need 0 <= miss_max < hit_min (got {self.miss_max}, {self.hit_min})"
            )
        if not 1 <= self.max_pairs <= MAX_PAIRS:
            out.append(f"max_pairs must be in 1..{MAX_PAIRS} (got {self.max_pairs})")
        return out

    def import_spec(self) -> ImportSpec:
        """The ``import-pairs`` spec of the generic formats."""
        return ImportSpec(
            text_a=self.text_a,
            text_b=self.text_b,
            label=self.label,
            positive=self.positive,
            domain=self.domain,
            negative=self.negative,
            split=self.split,
        )


@dataclass(frozen=True, slots=True)
class PairFile:
    """The rows read from one file: ``format`` the layout used, ``n_read`` the
    labelled pairs in the file (before sampling), ``n_dropped`` the STS pairs
    between the cut-offs."""

    path: str
    format: str
    rows: tuple[Row, ...]
    n_read: int
    n_dropped: int = 0

    @property
    def n_positive(self) -> int:
        return sum(1 for r in self.rows if r.binary_label == "HIT")


# --- reading ---------------------------------------------------------------------------


def _lines(path: str | os.PathLike[str]) -> list[str]:
    with open(path, encoding="utf-8-sig", newline="") as f:
        return f.read().splitlines()


def _tsv(path: str | os.PathLike[str]) -> Iterator[tuple[int, list[str]]]:
    """``(line, fields)`` of every non-blank line, split on tabs (no quoting)."""
    for i, line in enumerate(_lines(path), 1):
        if line.strip():
            yield i, line.split("\t")


def sniff_format(path: str | os.PathLike[str]) -> str:
    """The layout of ``path`` from its first line: a header naming a layout's
    columns, a ``score<TAB>text<TAB>text`` line (STS), else the generic format
    of the extension."""
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix in ("jsonl", "ndjson"):
        return "jsonl"
    first = next((line for line in _lines(path) if line.strip()), "")
    cells = [c.strip() for c in first.split("\t")]
    for layout, columns in _COLUMNS.items():
        if set(columns) <= set(cells):
            return layout
    if len(cells) == 3 and _number(cells[0]) is not None:
        return "sts"
    if suffix in ("csv", "tsv"):
        return suffix
    raise ValueError(
        f"{path}: cannot tell the layout (no known header, not score<TAB>s1<TAB>s2, "
        "extension not .csv/.tsv/.jsonl): pass --format"
    )


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value and abs(value) != float("inf") else None


def read_header_layout(path: str | os.PathLike[str], layout: str) -> Iterator[LabelledPair]:
    """Pairs of a ``qqp``/``paws``/``mrpc`` TSV (label 1 = HIT, 0 = MISS)."""
    spath = str(path)
    col_a, col_b, col_label = _COLUMNS[layout]
    rows = _tsv(path)
    try:
        _, header = next(rows)
    except StopIteration:
        raise JsonlError(spath, 1, "the file is empty (expected a header line)") from None
    names = [h.strip() for h in header]
    missing = [c for c in (col_a, col_b, col_label) if c not in names]
    if missing:
        raise JsonlError(
            spath,
            1,
            f"not a {layout} header: no column(s) {', '.join(repr(m) for m in missing)} "
            f"(columns: {', '.join(names)})",
        )
    ia, ib, il = names.index(col_a), names.index(col_b), names.index(col_label)
    for line, cells in rows:
        if len(cells) != len(names):
            raise JsonlError(
                spath, line, f"{len(cells)} tab-separated fields but the header has {len(names)}"
            )
        label = cells[il].strip()
        if label not in ("0", "1"):
            raise JsonlError(spath, line, f"{col_label} is {label!r}, expected 0 or 1")
        yield LabelledPair(line, _text(spath, line, cells[ia], col_a),
                           _text(spath, line, cells[ib], col_b), label == "1", label)  # fmt: skip


def _text(path: str, line: int, value: str, column: str) -> str:
    if not value.strip():
        raise JsonlError(path, line, f"{column} is empty")
    return value


def read_sts(
    path: str | os.PathLike[str], hit_min: float = 4.0, miss_max: float = 2.0
) -> tuple[list[LabelledPair], int]:
    """Pairs of a SemEval STS ``score<TAB>s1<TAB>s2`` file and the number dropped
    for scoring between ``miss_max`` and ``hit_min``."""
    spath = str(path)
    out: list[LabelledPair] = []
    dropped = 0
    for n, (line, cells) in enumerate(_tsv(path)):
        if len(cells) != 3:
            raise JsonlError(spath, line, f"{len(cells)} tab-separated fields, expected 3 "
                             "(score, sentence 1, sentence 2)")  # fmt: skip
        score = _number(cells[0].strip())
        if score is None:
            if n == 0:
                continue  # a header line
            raise JsonlError(spath, line, f"score {cells[0].strip()!r} is not a number")
        if not 0.0 <= score <= 5.0:
            raise JsonlError(spath, line, f"score {score} is outside the STS range 0-5")
        a = _text(spath, line, cells[1], "sentence 1")
        b = _text(spath, line, cells[2], "sentence 2")
        if score >= hit_min:
            out.append(LabelledPair(line, a, b, True, cells[0].strip()))
        elif score <= miss_max:
            out.append(LabelledPair(line, a, b, False, cells[0].strip()))
        else:
            dropped += 1
    return out, dropped


# --- rows ----------------------------------------------------------------------------


def _sample(items: Sequence[Any], k: int, seed: int) -> list[Any]:
    """``k`` items drawn with ``random.Random(seed)``, kept in their order."""
    if len(items) <= k:
        return list(items)
    keep = sorted(random.Random(seed).sample(range(len(items)), k))
    return [items[i] for i in keep]


def pair_rows(
    pairs: Sequence[LabelledPair], source: str, spec: PairFileSpec, label_column: str
) -> list[Row]:
    """Benchmark rows for ``pairs`` (the ``import-pairs`` mapping), ids in order."""
    ispec = ImportSpec(
        text_a="text_a",
        text_b="text_b",
        label=label_column,
        positive=_positive_text(spec),
        domain=spec.domain,
        negative=None,
        split=spec.split,
    )
    out = []
    for n, p in enumerate(pairs, 1):
        cells = {"text-a": p.text_a, "text-b": p.text_b, "label": p.raw_label}
        label = POSITIVE_LABEL if p.hit else NEGATIVE_LABEL
        data = import_row(n, cells, label, p.raw_label, ispec, source, p.line)
        out.append(Row.from_dict(data))
    return out


def _positive_text(spec: PairFileSpec) -> str:
    if spec.format == "sts":
        return f">= {spec.hit_min:g} (MISS: <= {spec.miss_max:g})"
    return "1"


def read_pair_file(path: str | os.PathLike[str], spec: PairFileSpec = PairFileSpec()) -> PairFile:
    """Read one labelled pair file into rows (see the module docstring)."""
    problems = spec.problems()
    if problems:
        raise ValueError("; ".join(problems))
    fmt = sniff_format(path) if spec.format == "auto" else spec.format
    source = Path(path).name
    if fmt in GENERIC:
        # the import-pairs reader itself (its own errors), then the sample
        data = import_pairs(path, spec.import_spec(), fmt)
        kept = _sample(data, spec.max_pairs, spec.seed)
        rows = [Row.from_dict(_renumber(d, i, spec.domain)) for i, d in enumerate(kept, 1)]
        return PairFile(str(path), fmt, tuple(rows), len(data))
    dropped = 0
    if fmt == "sts":
        pairs, dropped = read_sts(path, spec.hit_min, spec.miss_max)
        label_column = "score"
    else:
        pairs = list(read_header_layout(path, fmt))
        label_column = _COLUMNS[fmt][2]
    if not pairs:
        raise JsonlError(str(path), 1, "no labelled pairs found")
    kept = _sample(pairs, spec.max_pairs, spec.seed)
    rows = pair_rows(kept, source, PairFileSpec(**{**_fields(spec), "format": fmt}), label_column)
    return PairFile(str(path), fmt, tuple(rows), len(pairs), dropped)


def _fields(spec: PairFileSpec) -> dict[str, Any]:
    return {f: getattr(spec, f) for f in PairFileSpec.__dataclass_fields__}


def _renumber(data: dict[str, Any], n: int, domain: str) -> dict[str, Any]:
    out = dict(data)
    out["id"] = f"cb-{domain}-{n:04d}"
    return out
