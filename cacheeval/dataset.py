"""Loading and checking benchmark rows.

Every problem with a line is reported as ``path:LINE: what is wrong`` through
:class:`~cacheeval.support.jsonio.JsonlError`; nothing here raises a bare traceback
for bad data.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from typing import Any

from .schema import (
    BINARY_LABELS,
    DIFFICULTIES,
    DOMAINS,
    HIDDEN_TEST_FIELDS,
    LABELS,
    ROW_FIELDS,
    SPLITS,
    VERIFICATION_METHODS,
    Row,
    derive_binary_label,
)
from .support.idset import IdSet
from .support.jsonio import JsonlError, iter_jsonl

#: ``cb-<domain>-<number>``: four digits zero-padded, or more without a leading
#: zero (``cb-qa_factual-0001``, ``cb-qa_factual-12345``), so every number has
#: one spelling and an import of millions of pairs still fits.
ID_PATTERN = re.compile(r"\Acb-([a-z_]+)-(0[0-9]{3}|[1-9][0-9]{3,})\Z")
#: Key of the header object a private slice file starts with (:mod:`cacheeval.benches.slice`);
#: :func:`iter_bench` skips such a line 1.
SLICE_HEADER_KEY = "cacheeval_slice"

_STR_FIELDS = ("id", "domain", "query_a", "query_b", "split")
_OPT_STR_FIELDS = (
    "subcategory",
    "label",
    "binary_label",
    "difficulty",
    "system_prompt_a",
    "system_prompt_b",
    "expected_answer_a",
    "expected_answer_b",
    "rationale",
    "verification_method",
    "construction_method",
    "source",
    "real_world_grounding",
)


def row_problem(data: Any, *, require_labels: bool = False) -> str | None:
    """The first thing wrong with one decoded row, or None when it is valid.

    Checks the key set, types, vocabularies, id format, and that
    ``binary_label`` agrees with ``label`` and the policy override. Public test
    rows may carry None in :data:`HIDDEN_TEST_FIELDS`; other rows (and every
    row when ``require_labels``) must carry a label.
    """
    if not isinstance(data, dict):
        return f"expected a JSON object, got {type(data).__name__}"
    missing = [f for f in ROW_FIELDS if f not in data]
    if missing:
        return f"missing field(s): {', '.join(missing)}"
    extra = sorted(k for k in data if k not in ROW_FIELDS)
    if extra:
        return f"unknown field(s): {', '.join(extra)}"
    for f in _STR_FIELDS:
        if not isinstance(data[f], str) or not data[f]:
            return f"field {f!r} must be a non-empty string, got {data[f]!r}"
    for f in _OPT_STR_FIELDS:
        if data[f] is not None and not isinstance(data[f], str):
            return f"field {f!r} must be a string or null, got {type(data[f]).__name__}"
    m = ID_PATTERN.match(data["id"])
    if not m:
        return (
            f"id {data['id']!r} does not match "
            "cb-<domain>-<4 digits, or more without a leading zero>"
        )
    if data["domain"] not in DOMAINS:
        return f"unknown domain {data['domain']!r} (expected one of {', '.join(DOMAINS)})"
    if m.group(1) != data["domain"]:
        return f"id {data['id']!r} does not name the row's domain {data['domain']!r}"
    if data["split"] not in SPLITS:
        return f"unknown split {data['split']!r} (expected one of {', '.join(SPLITS)})"
    for side in ("a", "b"):
        ctx = data[f"context_{side}"]
        if ctx is not None:
            if not isinstance(ctx, list) or not all(
                isinstance(t, dict)
                and isinstance(t.get("role"), str)
                and isinstance(t.get("content"), str)
                for t in ctx
            ):
                return f"context_{side} must be null or a list of {{role, content}} objects"
        tools = data[f"tools_{side}"]
        if tools is not None:
            if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
                return f"tools_{side} must be null or a list of objects"
    payload = data["verification_payload"]
    if payload is not None and not isinstance(payload, dict):
        return "verification_payload must be an object or null"

    hidden = data["label"] is None
    if hidden:
        if require_labels:
            return "label is null (a hidden test row: pass the labels file)"
        if data["split"] != "test":
            return f"label is null on a {data['split']!r} row (only test rows may hide labels)"
        leaked = [f for f in HIDDEN_TEST_FIELDS if data[f] is not None]
        if leaked:
            return f"hidden test row carries withheld field(s): {', '.join(leaked)}"
        return None

    if data["label"] not in LABELS:
        return f"unknown label {data['label']!r} (expected one of {', '.join(LABELS)})"
    if data["binary_label"] not in BINARY_LABELS:
        return f"unknown binary_label {data['binary_label']!r} (expected HIT or MISS)"
    if data["difficulty"] not in DIFFICULTIES:
        expected = ", ".join(DIFFICULTIES)
        return f"unknown difficulty {data['difficulty']!r} (expected one of {expected})"
    method = data["verification_method"]
    if method not in VERIFICATION_METHODS:
        return f"unknown verification_method {method!r}"
    want = derive_binary_label(data["label"], method)
    if data["binary_label"] != want:
        return (
            f"binary_label {data['binary_label']} is inconsistent with label {data['label']} "
            f"and verification_method {method} (expected {want})"
        )
    return None


def iter_bench(
    path: str | os.PathLike[str],
    *,
    split: str | Iterable[str] | None = None,
    domains: Iterable[str] | None = None,
    labels_path: str | os.PathLike[str] | None = None,
) -> Iterator[Row]:
    """Stream the rows of a benchmark JSONL file, checking each line.

    ``split`` and ``domains`` filter (an unknown name is an error, not an empty
    result). ``labels_path`` names the private labels file of the test split;
    its fields are merged into the matching public rows. The whole file is
    checked for duplicate ids even when filtering. A private slice's header
    line (:data:`SLICE_HEADER_KEY`) is skipped.

    Memory stays flat however long the file: one row at a time, and the ids
    seen so far in a bit set (:class:`~cacheeval.support.idset.IdSet`); the line of a
    duplicate's first occurrence is found by reading the file again.
    """
    want_splits = _choice_set("split", split, SPLITS)
    want_domains = _choice_set("domain", domains, DOMAINS)
    labels = load_test_labels(labels_path) if labels_path is not None else None
    seen = IdSet()
    spath = str(path)
    for lineno, data in iter_jsonl(path):
        if lineno == 1 and isinstance(data, dict) and SLICE_HEADER_KEY in data:
            continue  # a private slice's header (cacheeval.benches.slice)
        if isinstance(data, dict) and labels is not None and data.get("id") in labels:
            data = {**data, **labels[data["id"]]}
        problem = row_problem(data)
        if problem:
            raise JsonlError(spath, lineno, problem)
        rid = data["id"]
        if not seen.add(rid):
            first = _first_line_with_id(path, rid, lineno)
            raise JsonlError(spath, lineno, f"duplicate id {rid!r} (first on line {first})")
        if want_splits is not None and data["split"] not in want_splits:
            continue
        if want_domains is not None and data["domain"] not in want_domains:
            continue
        yield Row.from_dict(data)


def _first_line_with_id(path: str | os.PathLike[str], rid: str, before: int) -> int | str:
    """The line of the first row of ``path`` whose id is ``rid``, read again
    up to line ``before`` ("?" if the file changed under us)."""
    for lineno, data in iter_jsonl(path):
        if lineno >= before:
            break
        if isinstance(data, dict) and data.get("id") == rid:
            return lineno
    return "?"


def read_slice_header(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The header object on line 1 of a private slice file
    (:mod:`cacheeval.benches.slice`), or None when the file has none."""
    for lineno, data in iter_jsonl(path):
        if lineno == 1 and isinstance(data, dict) and SLICE_HEADER_KEY in data:
            return data
        return None
    return None


def load_bench(
    path: str | os.PathLike[str],
    split: str | Iterable[str] | None = None,
    domains: Iterable[str] | None = None,
    *,
    labels_path: str | os.PathLike[str] | None = None,
) -> list[Row]:
    """Load (and check) the rows of a benchmark file; see :func:`iter_bench`."""
    return list(iter_bench(path, split=split, domains=domains, labels_path=labels_path))


def load_test_labels(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """Read the private labels file: one object per test row, ``id`` plus every
    field of :data:`HIDDEN_TEST_FIELDS`."""
    out: dict[str, dict[str, Any]] = {}
    spath = str(path)
    want = {"id", *HIDDEN_TEST_FIELDS}
    for lineno, data in iter_jsonl(path):
        if not isinstance(data, dict):
            raise JsonlError(spath, lineno, f"expected a JSON object, got {type(data).__name__}")
        keys = set(data)
        if keys != want:
            missing = sorted(want - keys)
            extra = sorted(keys - want)
            parts = []
            if missing:
                parts.append("missing field(s): " + ", ".join(missing))
            if extra:
                parts.append("unknown field(s): " + ", ".join(extra))
            raise JsonlError(spath, lineno, "; ".join(parts))
        rid = data["id"]
        if rid in out:
            raise JsonlError(spath, lineno, f"duplicate id {rid!r}")
        out[rid] = {k: v for k, v in data.items() if k != "id"}
    return out


def _choice_set(
    what: str, value: str | Iterable[str] | None, allowed: tuple[str, ...]
) -> frozenset[str] | None:
    if value is None:
        return None
    chosen = frozenset([value] if isinstance(value, str) else value)
    unknown = sorted(chosen - set(allowed))
    if unknown:
        raise ValueError(
            f"unknown {what}(s) {', '.join(unknown)} (expected one of {', '.join(allowed)})"
        )
    return chosen
