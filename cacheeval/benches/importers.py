"""Bring your own pairs: turn a user's labelled request pairs into benchmark rows.

Standard library only. Reads CSV, TSV or JSONL (one object per line); the user
names the two text columns, the label column and the label value that means
"the cached answer may be served". Every other row field is filled so the rows
load with :func:`cacheeval.dataset.load_bench` and grade with the harness.

The mapping (a binary user label cannot say more):

=================  =================================================================
row field          value
=================  =================================================================
``label``          positive -> ``PARA_SAFE`` (HIT), negative -> ``RELATED_UNSAFE``
                   (MISS). Whether a positive pair is a verbatim repeat (EQUIV) or
                   a paraphrase, and whether a negative one is adversarial or
                   unrelated, is not knowable from a yes/no label; the two middle
                   classes keep the per-label tables from claiming more.
``binary_label``   derived: HIT / MISS
``verification_``  ``llm_judge`` with payload ``{"kind": "user_label", ...}`` (the
``method``         label is the user's judgement - a person or their own judge - and no
                   checker can re-derive it; ``cacheeval verify`` reports these rows as
                   having no checker)
``difficulty``     the provisional token-Jaccard rule of the generators
``construction_``  ``user_import``
``method``
``source``         the input file's name (all rows of one file form one family)
``split``          ``--split`` (default ``test``)
``id``             ``cb-<domain>-0001`` ... in file order (``-10000`` on after 9,999)
=================  =================================================================

Errors name ``file:LINE`` and what is wrong (a missing column, an empty text, a
label that is neither value when ``--negative`` is given, a line that is not
JSON) and raise :class:`~cacheeval.support.jsonio.JsonlError`.
"""

from __future__ import annotations

import codecs
import csv
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..dataset import row_problem
from ..generators.common import SHARD_FIELDS, provisional_difficulty
from ..schema import DOMAINS, PARA_SAFE, RELATED_UNSAFE, SPLITS, derive_binary_label
from ..support.jsonio import JsonlError, iter_jsonl

FORMATS: tuple[str, ...] = ("csv", "tsv", "jsonl")
POSITIVE_LABEL = PARA_SAFE
NEGATIVE_LABEL = RELATED_UNSAFE
METHOD = "llm_judge"


@dataclass(frozen=True, slots=True)
class ImportSpec:
    """Which columns hold what, and how the rows are labelled.

    ``positive`` (and ``negative``, when given) are compared with the label cell as
    text, stripped: JSON ``true``/``false`` read as "true"/"false" and whole numbers
    without a decimal point, so ``--positive 1`` matches ``1``, ``1.0`` and ``"1"``.
    Without ``negative`` every other non-empty value is negative.
    """

    text_a: str
    text_b: str
    label: str
    positive: str
    domain: str
    negative: str | None = None
    split: str = "test"

    def problems(self) -> list[str]:
        out = []
        if self.domain not in DOMAINS:
            out.append(f"unknown domain {self.domain!r} (expected one of {', '.join(DOMAINS)})")
        if self.split not in SPLITS:
            out.append(f"unknown split {self.split!r} (expected one of {', '.join(SPLITS)})")
        if not self.positive.strip():
            out.append("the positive label value is empty")
        if self.negative is not None and self.negative.strip() == self.positive.strip():
            out.append("the positive and negative label values are the same")
        return out


def detect_format(path: str | os.PathLike[str]) -> str:
    """``csv``, ``tsv`` or ``jsonl`` from the file name's extension."""
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix in ("jsonl", "ndjson"):
        return "jsonl"
    if suffix in ("csv", "tsv"):
        return suffix
    raise ValueError(
        f"{path}: cannot tell the format from the extension {suffix or '(none)'!r} "
        "(use .csv, .tsv or .jsonl, or pass --format)"
    )


def read_records(path: str | os.PathLike[str], fmt: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line, record)`` for every record: the line where it starts, and its cells
    keyed by column name. CSV/TSV take the column names from the header line."""
    spath = str(path)
    if fmt == "jsonl":
        for lineno, value in iter_jsonl(path):
            if not isinstance(value, dict):
                raise JsonlError(
                    spath, lineno, f"expected a JSON object, got {type(value).__name__}"
                )
            yield lineno, value
        return
    if fmt not in ("csv", "tsv"):
        raise ValueError(f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})")
    with open(path, "rb") as f:  # read as it goes: a line at a time
        yield from _csv_records(spath, _utf8_lines(spath, f), fmt)


def _utf8_lines(spath: str, f: Iterable[bytes]) -> Iterator[str]:
    """The lines of a binary file as text (a UTF-8 byte-order mark dropped);
    ``path:LINE: not UTF-8 text`` at the first line that is not. A line break
    byte never occurs inside a UTF-8 character, so lines decode one by one."""
    for lineno, raw in enumerate(f, 1):
        skip = len(codecs.BOM_UTF8) if lineno == 1 and raw.startswith(codecs.BOM_UTF8) else 0
        try:
            yield raw[skip:].decode("utf-8")
        except UnicodeDecodeError as e:
            reason = f"not UTF-8 text (byte {e.start + skip + 1} of the line: {e.reason})"
            raise JsonlError(spath, lineno, reason) from None


def _csv_records(
    spath: str, lines: Iterable[str], fmt: str
) -> Iterator[tuple[int, dict[str, Any]]]:
    # strict: a quote left open, or text after a closing quote, is an error
    # (lenient parsing would swallow the rest of the file into one field).
    reader = csv.reader(lines, delimiter="\t" if fmt == "tsv" else ",", strict=True)
    try:
        header = next(reader)
    except StopIteration:
        raise JsonlError(spath, 1, "the file is empty (expected a header line)") from None
    except csv.Error as e:
        raise JsonlError(spath, 1, _csv_problem(fmt, e)) from None
    names = [h.strip() for h in header]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise JsonlError(spath, 1, f"duplicate column name(s) in the header: {', '.join(dupes)}")
    start = reader.line_num + 1
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            raise JsonlError(spath, start, _csv_problem(fmt, e)) from None
        line, start = start, reader.line_num + 1
        if not cells or all(not c.strip() for c in cells):
            continue  # blank line
        if len(cells) != len(names):
            raise JsonlError(
                spath, line, f"{len(cells)} fields but the header has {len(names)} columns"
            )
        yield line, dict(zip(names, cells, strict=True))


def _csv_problem(fmt: str, e: csv.Error) -> str:
    """A csv.Error of the record starting on the reported line, in plain words."""
    msg = str(e)
    if "unexpected end of data" in msg:
        why = 'a quoted field opened here is never closed (unterminated ")'
    elif "expected after" in msg:
        why = 'text after a closing quote (quote the whole field and double any " inside)'
    else:
        why = msg
    return f"not valid {fmt.upper()}: {why}"


def _cell_text(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, str):
        return value
    return None


def _label_matches(cell: str, wanted: str) -> bool:
    cell, wanted = cell.strip(), wanted.strip()
    if cell == wanted:
        return True
    try:  # "1" == "1.0"
        return float(cell) == float(wanted)
    except ValueError:
        return False


def import_pairs(
    path: str | os.PathLike[str], spec: ImportSpec, fmt: str | None = None
) -> list[dict[str, Any]]:
    """Rows (dicts in file key order, ``split`` last) for every record of ``path``."""
    return list(iter_import_pairs(path, spec, fmt))


def iter_import_pairs(
    path: str | os.PathLike[str], spec: ImportSpec, fmt: str | None = None
) -> Iterator[dict[str, Any]]:
    """:func:`import_pairs` as a stream: one row per record, read as needed,
    so a file of millions of pairs converts in flat memory. Errors (the spec,
    the format) are raised before the first row; an empty file raises at the
    end, like a bad record when it is reached."""
    problems = spec.problems()
    if problems:
        raise ValueError("; ".join(problems))
    fmt = fmt or detect_format(path)
    return _import_rows(path, spec, fmt)


def _import_rows(
    path: str | os.PathLike[str], spec: ImportSpec, fmt: str
) -> Iterator[dict[str, Any]]:
    spath = str(path)
    source = Path(path).name
    n = 0
    seen_columns = False
    for lineno, record in read_records(path, fmt):
        if not seen_columns:
            missing = [c for c in (spec.text_a, spec.text_b, spec.label) if c not in record]
            if missing and fmt != "jsonl":
                raise JsonlError(
                    spath,
                    1,
                    f"no column(s) {', '.join(repr(m) for m in missing)} in the header "
                    f"(columns: {', '.join(record)})",
                )
            seen_columns = True
        cells: dict[str, str] = {}
        for role, column in (
            ("text-a", spec.text_a),
            ("text-b", spec.text_b),
            ("label", spec.label),
        ):
            if column not in record:
                raise JsonlError(spath, lineno, f"no {role} field {column!r}")
            text = _cell_text(record[column])
            if text is None:
                kind = type(record[column]).__name__
                raise JsonlError(spath, lineno, f"field {column!r} is {kind}, not text")
            if not text.strip():
                raise JsonlError(spath, lineno, f"field {column!r} ({role}) is empty")
            cells[role] = text
        raw_label = cells["label"].strip()
        if _label_matches(raw_label, spec.positive):
            label = POSITIVE_LABEL
        elif spec.negative is None or _label_matches(raw_label, spec.negative):
            label = NEGATIVE_LABEL
        else:
            raise JsonlError(
                spath,
                lineno,
                f"label {raw_label!r} is neither the positive value {spec.positive!r} "
                f"nor the negative value {spec.negative!r}",
            )
        n += 1
        yield _row(n, cells, label, raw_label, spec, source, lineno)
    if not n:
        raise JsonlError(spath, 1, "no pairs found")


def _row(
    n: int,
    cells: dict[str, str],
    label: str,
    raw_label: str,
    spec: ImportSpec,
    source: str,
    lineno: int,
) -> dict[str, Any]:
    binary = derive_binary_label(label, METHOD)
    values: dict[str, Any] = {
        "id": f"cb-{spec.domain}-{n:04d}",
        "domain": spec.domain,
        "subcategory": "user_import",
        "label": label,
        "binary_label": binary,
        "difficulty": provisional_difficulty(cells["text-a"], cells["text-b"], binary),
        "query_a": cells["text-a"],
        "query_b": cells["text-b"],
        "context_a": None,
        "context_b": None,
        "system_prompt_a": None,
        "system_prompt_b": None,
        "tools_a": None,
        "tools_b": None,
        "expected_answer_a": None,
        "expected_answer_b": None,
        "rationale": f"user label {spec.label}={raw_label!r} ({source} line {lineno})",
        "verification_method": METHOD,
        "verification_payload": {
            "kind": "user_label",
            "column": spec.label,
            "value": raw_label,
            "positive": spec.positive,
        },
        "construction_method": "user_import",
        "source": source,
        "real_world_grounding": "the user's own labelled request pairs",
    }
    row = {f: values[f] for f in SHARD_FIELDS}
    row["split"] = spec.split
    problem = row_problem(row, require_labels=True)
    if problem:  # a bug here, never the user's input: say where it came from anyway
        raise JsonlError(str(source), lineno, f"internal error building the row: {problem}")
    return row


def summary(rows: Sequence[dict[str, Any]]) -> str:
    """``"N pairs: P positive (PARA_SAFE/HIT), M negative (RELATED_UNSAFE/MISS)"``."""
    return summary_counts(len(rows), sum(1 for r in rows if r["label"] == POSITIVE_LABEL))


def summary_counts(n: int, positive: int) -> str:
    """:func:`summary` from the counts.

    >>> summary_counts(3, 1)
    '3 pairs: 1 positive (PARA_SAFE/HIT), 2 negative (RELATED_UNSAFE/MISS)'
    """
    return (
        f"{n} pairs: {positive} positive ({POSITIVE_LABEL}/HIT), "
        f"{n - positive} negative ({NEGATIVE_LABEL}/MISS)"
    )
