"""A blind audit of stress rows: draw rows without their labels as a sheet a
person fills in, then score the filled sheet against the constructed labels.

The sheet (``sheet.jsonl``) holds, per item, the two requests (system prompt,
prior turns, query) and two blanks: ``same_answer`` ("HIT" when B asks for the
same answer as A, else "MISS") and ``natural`` (true when B reads as a request
a person could send). The key (``sheet.key.jsonl``, beside it; never shown to
the annotator) holds each item's row id, perturbation kind and the label the
edit was built to have (the edit's own label: a never-cache policy on the
source prompt is not the annotator's question).

Score per kind: agreement = items whose ``same_answer`` equals the edit's label
/ items; natural = items judged natural / items; pass = items that agree *and*
are natural / items (an unnatural or answer-preserving identity variant is a
failure). Each with a 95% Wilson interval.

Rows are drawn per kind (a reservoir of N per kind, seeded), then in rounds
across the kinds, so rare kinds are audited too; the sheet's order is shuffled.
Rows of never-cache prompts are left out: their label is the policy's (a
timer request is never served, whatever the edit), so "does B ask for the same
answer?" would mix two questions; the policy detector has its own tests.
"""

from __future__ import annotations

import random
import sys
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...dataset import row_problem
from ...metrics.intervals import wilson_interval
from ...schema import POLICY_NO_CACHE
from ...support.jsonio import AtomicFile, JsonlError, dumps, iter_jsonl, not_a_file
from ...verify.perturbation import FAMILIES, KINDS, expected_binary
from .rows import CONSTRUCTION_METHOD

#: Answers the sheet accepts for ``same_answer`` and ``natural``.
SAME = {
    "hit": "HIT",
    "same": "HIT",
    "yes": "HIT",
    "miss": "MISS",
    "different": "MISS",
    "no": "MISS",
}


def key_path(sheet: Path) -> Path:
    """The key file beside ``sheet``: ``x.jsonl`` -> ``x.key.jsonl``.

    >>> key_path(Path("/tmp/sheet.jsonl")).name
    'sheet.key.jsonl'
    """
    return sheet.with_name(sheet.name.removesuffix(".jsonl") + ".key.jsonl")


def _side(row: dict[str, Any], side: str) -> dict[str, Any]:
    return {
        "system_prompt": row[f"system_prompt_{side}"],
        "turns": row[f"context_{side}"],
        "query": row[f"query_{side}"],
    }


def stress_rows_of(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """The stress rows of a rows file; anything else is a ``path:LINE`` error."""
    for lineno, data in iter_jsonl(path):
        if isinstance(data, dict) and "construction_method" in data:
            made_by = data["construction_method"]
            if made_by != CONSTRUCTION_METHOD:
                # before the row checks: a benchmark's hidden test row would otherwise
                # ask for a labels file this command does not take
                why = f"its construction_method is {dumps(made_by)}, not {CONSTRUCTION_METHOD}"
                raise JsonlError(str(path), lineno, f"not a row made by cacheeval stress ({why})")
        problem = row_problem(data, require_labels=True)
        if problem:
            raise JsonlError(str(path), lineno, problem)
        yield lineno, data


def draw(rows: Iterable[dict[str, Any]], n: int, seed: int) -> list[dict[str, Any]]:
    """``n`` rows drawn per kind, in rounds across the kinds (module docstring)."""
    rng = random.Random(f"audit:{seed}")
    pools: dict[str, list[dict[str, Any]]] = defaultdict(list)
    seen: dict[str, int] = defaultdict(int)
    for row in rows:
        if row["verification_method"] == POLICY_NO_CACHE:
            continue  # its label is the policy's, not the edit's (module docstring)
        kind = row["subcategory"]
        seen[kind] += 1
        pool = pools[kind]
        if len(pool) < n:
            pool.append(row)
        else:
            j = rng.randrange(seen[kind])
            if j < n:
                pool[j] = row
    for kind in sorted(pools):
        rng.shuffle(pools[kind])
    out: list[dict[str, Any]] = []
    kinds = sorted(pools)
    while len(out) < n and any(pools[k] for k in kinds):
        for kind in kinds:
            if pools[kind] and len(out) < n:
                out.append(pools[kind].pop())
    rng.shuffle(out)
    return out


def sheet_command(rows_path: Path, out: Path, n: int, seed: int, name: str) -> int:
    """``cacheeval stress ROWS --audit N --out SHEET``."""
    if n < 1:
        print(f"{name}: --audit must be >= 1, got {n}", file=sys.stderr)
        return 2
    try:
        picked = draw((data for _, data in stress_rows_of(rows_path)), n, seed)
    except (ValueError, OSError) as e:
        print(f"{name}: {e}", file=sys.stderr)
        return 2
    if not picked:
        print(f"{name}: {rows_path}:1: no rows to draw", file=sys.stderr)
        return 2
    try:
        _write_sheet(picked, out)
    except OSError as e:
        print(f"{name}: {e.filename or out}: {e.strerror}", file=sys.stderr)
        return 2
    print(
        f"wrote {len(picked)} items to {out} and their key to {key_path(out)} "
        "(do not show the key to the annotator). Fill in each item's same_answer "
        '("HIT" if B asks for the same answer as A, else "MISS") and natural (true/false) '
        'by the rubric in docs/your-traffic.md ("Audit the rows"), '
        f"then run: cacheeval stress --audit-score {out}"
    )
    return 0


def _write_sheet(picked: list[dict[str, Any]], out: Path) -> None:
    """The sheet and its key (module docstring), both or neither."""
    with AtomicFile(out) as sheet, AtomicFile(key_path(out)) as key:
        for i, row in enumerate(picked, 1):
            item = {
                "item": i,
                "a": _side(row, "a"),
                "b": _side(row, "b"),
                "same_answer": None,
                "natural": None,
            }
            kind = row["subcategory"]
            answer = {
                "item": i,
                "id": row["id"],
                "source": row["source"],
                "perturbation": kind,
                "family": KINDS[kind][0],
                "edit_label": expected_binary(kind, False),
            }
            sheet.write((dumps(item) + "\n").encode("utf-8"))
            key.write((dumps(answer) + "\n").encode("utf-8"))


@dataclass(frozen=True, slots=True)
class AuditScore:
    """One group's counts: items, agreeing, natural, passing (agree and natural)."""

    group: str
    items: int
    agree: int
    natural: int
    passed: int


def _rate(k: int, n: int) -> str:
    if n == 0:
        return "-"
    ci = wilson_interval(k, n)
    lo, hi = ci if ci is not None else (0.0, 1.0)
    return f"{k / n:.3f} [{lo:.3f}, {hi:.3f}]"


def _item(data: Any) -> int | None:
    """The item number of a sheet or key line (an int), else None."""
    item = data.get("item") if isinstance(data, dict) else None
    return item if type(item) is int else None


def read_answers(sheet: Path) -> list[tuple[str, str, bool, str]]:
    """(kind, edit label, natural, annotator's label) per item of a filled sheet."""
    keys: dict[int, dict[str, Any]] = {}
    kpath = key_path(sheet)
    if not kpath.is_file():
        raise JsonlError(str(kpath), 1, "no key file beside the sheet")
    for lineno, data in iter_jsonl(kpath):
        item = _item(data)
        if (
            item is None
            or data.get("perturbation") not in KINDS
            or data.get("edit_label") not in ("HIT", "MISS")
        ):
            raise JsonlError(str(kpath), lineno, "not a key line of cacheeval stress --audit")
        if item in keys:
            raise JsonlError(str(kpath), lineno, f"item {item} is in the key twice")
        keys[item] = data
    if not keys:
        raise JsonlError(str(kpath), 1, "no items in the key")
    out = []
    seen: set[int] = set()
    for lineno, data in iter_jsonl(sheet):
        item = _item(data)
        if item is None or item not in keys:
            raise JsonlError(str(sheet), lineno, "an item the key does not know")
        if item in seen:
            raise JsonlError(str(sheet), lineno, f"item {item} is in the sheet twice")
        seen.add(item)
        raw = data.get("same_answer")
        same = SAME.get(str(raw).strip().lower()) if raw is not None else None
        if same is None:
            raise JsonlError(
                str(sheet), lineno, f"same_answer is {dumps(raw)}: fill in HIT or MISS"
            )
        natural = data.get("natural")
        if not isinstance(natural, bool):  # a blank is an unfinished sheet, not "natural"
            raise JsonlError(
                str(sheet),
                lineno,
                f"natural is {dumps(natural)}: fill in true or false (no quotes)",
            )
        key = keys[item]
        out.append((key["perturbation"], key["edit_label"], natural, same))
    if not out:
        raise JsonlError(str(sheet), 1, "no items in the sheet")
    return out


def score(answers: Iterable[tuple[str, str, bool, str]]) -> list[AuditScore]:
    """Per kind (in :data:`KINDS` order), per family, then ``all``."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for kind, label, natural, same in answers:
        agree = same == label
        for group in (kind, f"family:{KINDS[kind][0]}", "all"):
            c = counts[group]
            c[0] += 1
            c[1] += agree
            c[2] += natural
            c[3] += agree and natural
    order = [*KINDS, *(f"family:{f}" for f in FAMILIES), "all"]
    return [AuditScore(g, *counts[g]) for g in order if g in counts]


def render(scores: list[AuditScore]) -> str:
    lines = [
        f"{'kind':<22}{'items':>6}  {'agreement [95% CI]':<24}{'natural':<24}{'pass':<24}",
    ]
    for s in scores:
        lines.append(
            f"{s.group:<22}{s.items:>6}  {_rate(s.agree, s.items):<24}"
            f"{_rate(s.natural, s.items):<24}{_rate(s.passed, s.items):<24}"
        )
    return "\n".join(lines)


def score_command(sheet: Path, name: str) -> int:
    """``cacheeval stress --audit-score SHEET``."""
    if not sheet.is_file():
        print(f"{name}: {sheet}: {not_a_file(sheet)}", file=sys.stderr)
        return 2
    try:
        scores = score(read_answers(sheet))
    except (ValueError, OSError) as e:
        print(f"{name}: {e}", file=sys.stderr)
        return 2
    print(render(scores))
    return 0
