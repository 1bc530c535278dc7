"""Turning a stream of prompts into stress rows, deterministically for a seed.

Each prompt gets up to ``per_prompt`` edits: first one identity edit, one noise
edit and one context edit (in that order, each the first kind that applies in
an order drawn from the prompt's own seeded generator), then noise and identity
edits in turn until the count is reached or nothing more applies. A kind that
cannot apply cleanly yields nothing. The generator of prompt ``line`` is
``random.Random(f"{seed}:{line}")``, so a prompt's rows do not depend on the
prompts before it, and the same file and seed give byte-identical output.

Speed (``python -m scripts.bench_stress``): :func:`stress_lines` writes each
row's JSON line directly (:class:`~.rows.RowLines`, side a encoded and
tokenised once per prompt), :data:`GUARDS` skip a proposer whose pattern cannot
be in the text, and the never-cache rules test a cheap condition before each
regex (:class:`~cacheeval.verify.never_cache.QuickPattern`). The proposers
draw with :func:`~.edits.sample` and :func:`~.edits.shuffle` (``random``'s
own draws without its per-draw calls). What the text alone decides is worked
out once per text and kept in bounded memos (:class:`~.edits.TextMemo`,
emptied when full, so memory stays flat): a request's policy, domain guess,
kinds worth trying and side-a tokens (:mod:`.facts`), the proposers' spans
(entities, curated pairs, directions, typo words), a number token's
replacements, the validators' verdicts (:func:`~.edits.verdict`) and a line's
body (:class:`~.rows.RowLines`). A prompt log repeats itself, and a repeated
request costs little more than its draws and lines. None of them changes a byte of the
output (``tests/test_stress_fast_path.py``, ``tests/test_stress_memos.py``).
What remains is the seeded generator per prompt (seeding it is ~7 us), the
draws, the proposers and validators on new text, and the JSON lines.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ...verify.perturbation import FAMILIES, KINDS
from .context import CONTEXT
from .edits import Edit, Prompt, shuffle
from .facts import PromptFacts, facts_of
from .identity import ENDPOINT_WORDS, IDENTITY
from .noise import NOISE
from .rows import RowLines, json_str, stress_row
from .triggers import DirectionGuard

DEFAULT_PER_PROMPT = 4
#: The order in which a prompt's rows draw their family.
SLOTS: tuple[str, ...] = ("identity", "noise", "context")
_N_SLOTS = len(SLOTS)

_TEXT_PROPOSERS = {**NOISE, **IDENTITY}
assert set(NOISE) | set(IDENTITY) | set(CONTEXT) == set(KINDS)


@dataclass
class StressStats:
    """What a run made: prompts read, prompts that yielded rows (per family and
    overall), rows per kind, never-cache prompts per rule."""

    prompts: int = 0
    prompts_with_rows: int = 0
    prompts_by_family: Counter[str] = field(default_factory=Counter)
    prompts_with_noise_and_identity: int = 0
    rows_by_kind: Counter[str] = field(default_factory=Counter)
    policy_prompts: Counter[str] = field(default_factory=Counter)

    @property
    def rows(self) -> int:
        return sum(self.rows_by_kind.values())

    def merge(self, other: StressStats) -> None:
        """Add ``other``'s counts (a worker's, for a chunk of the prompts) to these."""
        self.prompts += other.prompts
        self.prompts_with_rows += other.prompts_with_rows
        self.prompts_by_family.update(other.prompts_by_family)
        self.prompts_with_noise_and_identity += other.prompts_with_noise_and_identity
        self.rows_by_kind.update(other.rows_by_kind)
        self.policy_prompts.update(other.policy_prompts)

    def summary(self) -> str:
        """The lines ``cacheeval stress`` prints."""
        n = max(self.prompts, 1)
        lines = [
            f"{self.prompts} prompts -> {self.rows} rows; {self.prompts_with_rows} prompts "
            f"yielded rows ({100 * self.prompts_with_rows / n:.1f}%)",
            "prompts yielding a row of each family: "
            + ", ".join(f"{f} {self.prompts_by_family[f]}" for f in FAMILIES)
            + f"; noise and identity both: {self.prompts_with_noise_and_identity} "
            f"({100 * self.prompts_with_noise_and_identity / n:.1f}%)",
        ]
        if self.policy_prompts:
            rules = ", ".join(f"{r} {c}" for r, c in sorted(self.policy_prompts.items()))
            lines.append(f"never-cache prompts (every row MISS by policy): {rules}")
        lines.append(
            "rows per kind (the never-cache prompts' rows included; a report counts them "
            "under policy, not under their kind):"
            if self.policy_prompts
            else "rows per kind:"
        )
        for fam in FAMILIES:
            kinds = [k for k in KINDS if KINDS[k][0] == fam]
            cells = ", ".join(f"{k} {self.rows_by_kind[k]}" for k in kinds)
            lines.append(f"  {fam}: {cells}")
        return "\n".join(lines)


#: Cheap tests that a proposer would find nothing (and draw nothing from the
#: generator): the proposer is not run when its guard says False.
GUARDS: dict[str, Callable[[str], bool]] = {"direction": DirectionGuard(ENDPOINT_WORDS)}


def _propose(kind: str, prompt: Prompt, rng: random.Random) -> Edit | None:
    if kind in CONTEXT:  # a proposer that reads the system prompt and turns
        return CONTEXT[kind](prompt, rng)
    guard = GUARDS.get(kind)
    if guard is not None and not guard(prompt.query):
        return None
    return _TEXT_PROPOSERS[kind](prompt.query, rng)


def edits_for(prompt: Prompt, rng: random.Random, per_prompt: int) -> list[Edit]:
    """Up to ``per_prompt`` edits of ``prompt`` of distinct kinds and distinct
    results (module docstring)."""
    return _edits(prompt, facts_of(prompt).queues, rng, per_prompt)


def _edits(
    prompt: Prompt, kinds: tuple[tuple[str, ...], ...], rng: random.Random, per_prompt: int
) -> list[Edit]:
    """:func:`edits_for` from the kinds worth trying, per family in :data:`KINDS`
    order (:class:`~.facts.PromptFacts`)."""
    queues: dict[str, list[str]] = {}
    for fam, family_kinds in zip(FAMILIES, kinds, strict=True):
        queue = list(family_kinds)
        if len(queue) > 1:  # a list of one draws nothing
            shuffle(rng, queue)
        queues[fam] = queue
    noise, identity, context = queues["noise"], queues["identity"], queues["context"]
    query = prompt.query
    guards = GUARDS
    out: list[Edit] = []
    seen: set[tuple[Any, ...]] = set()
    turn = 0
    while len(out) < per_prompt and (noise or identity or context):
        if turn < _N_SLOTS:
            queue = queues[SLOTS[turn]]
        else:  # noise and identity in turn, the other when one is spent, then context
            queue = noise if (turn - _N_SLOTS) % 2 == 0 else identity
            if not queue:
                queue = identity if queue is noise else noise
            if not queue:
                queue = context
        turn += 1
        while queue:
            kind = queue.pop()
            # _propose, inlined: the loop runs six times a prompt
            if kind in CONTEXT:
                edit = CONTEXT[kind](prompt, rng)
            else:
                guard = guards.get(kind)
                if guard is not None and not guard(query):
                    continue
                edit = _TEXT_PROPOSERS[kind](query, rng)
            if edit is None:
                continue
            key = (
                edit.field,
                edit.turn,
                edit.start,
                edit.end,
                edit.replacement,
                edit.system_prompt_b,
            )
            if key in seen:
                continue
            seen.add(key)
            out.append(edit)
            break
    return out


def prompts_and_edits(
    prompts: Iterable[Prompt],
    seed: int,
    per_prompt: int,
    domain: str | None,
    stats: StressStats,
    progress: Callable[[int, int], None] | None,
) -> Iterator[tuple[Prompt, PromptFacts, str, list[Edit]]]:
    """Each prompt with its facts (policy...), its domain and its edits, counted in ``stats``
    (``progress`` is called after the caller has used a prompt's edits)."""
    if per_prompt < 1:
        raise ValueError(f"per_prompt must be >= 1, got {per_prompt}")
    for prompt in prompts:
        stats.prompts += 1
        rng = random.Random(f"{seed}:{prompt.line}")
        facts = facts_of(prompt)
        policy = facts.policy
        edits = _edits(prompt, facts.queues, rng, per_prompt)
        if edits:
            stats.prompts_with_rows += 1
            fams = {KINDS[e.kind][0] for e in edits}
            for fam in fams:
                stats.prompts_by_family[fam] += 1
            if {"noise", "identity"} <= fams:
                stats.prompts_with_noise_and_identity += 1
            if not policy.allowed:
                stats.policy_prompts[policy.rule] += 1
            for edit in edits:
                stats.rows_by_kind[edit.kind] += 1
        yield prompt, facts, domain or facts.domain, edits
        if progress is not None:
            progress(stats.prompts, 0)


def stress_rows(
    prompts: Iterable[Prompt],
    *,
    seed: int,
    per_prompt: int = DEFAULT_PER_PROMPT,
    split: str = "test",
    domain: str | None = None,
    stats: StressStats | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Iterator[dict[str, Any]]:
    """The stress rows of ``prompts``, one at a time (memory stays flat). Ids are
    ``cb-<domain>-NNNN`` numbered per domain in output order; ``domain`` fixes
    the domain of every row (default: guessed per prompt, :func:`guess_domain`)."""
    stats = stats if stats is not None else StressStats()
    numbers: Counter[str] = Counter()
    for prompt, facts, dom, edits in prompts_and_edits(
        prompts, seed, per_prompt, domain, stats, progress
    ):
        for edit in edits:
            numbers[dom] += 1
            yield stress_row(prompt, edit, facts.policy, f"cb-{dom}-{numbers[dom]:04d}", dom, split)


def stress_lines(
    prompts: Iterable[Prompt],
    *,
    seed: int,
    per_prompt: int = DEFAULT_PER_PROMPT,
    split: str = "test",
    domain: str | None = None,
    stats: StressStats | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Iterator[str]:
    """:func:`stress_rows` as canonical JSONL text, one chunk of lines per prompt
    that yields rows: ``dumps(row) + "\\n"`` of each row, byte for byte, made
    without building the rows (:class:`~.rows.RowLines`). What ``cacheeval
    stress`` writes."""
    stats = stats if stats is not None else StressStats()
    numbers: Counter[str] = Counter()
    for dom, after_ids in prompt_lines(prompts, seed, per_prompt, split, domain, stats, progress):
        yield numbered_lines(dom, after_ids, numbers)


def prompt_lines(
    prompts: Iterable[Prompt],
    seed: int,
    per_prompt: int,
    split: str,
    domain: str | None,
    stats: StressStats,
    progress: Callable[[int, int], None] | None = None,
) -> Iterator[tuple[str, list[str]]]:
    """Per prompt that yields rows: its domain and each row's line without the
    id (:meth:`~.rows.RowLines.after_id`), in input order; the ids depend on
    the rows before, so whoever writes the file numbers them (:func:`numbered_lines`)."""
    for prompt, facts, dom, edits in prompts_and_edits(
        prompts, seed, per_prompt, domain, stats, progress
    ):
        if edits:
            lines = RowLines(prompt, facts.policy, dom, split, (facts.tokens_a, facts.query_json))
            yield dom, [lines.after_id(edit) for edit in edits]


def numbered_lines(dom: str, after_ids: Iterable[str], numbers: Counter[str]) -> str:
    """One prompt's lines, each with the next id of its domain (``numbers``
    counts the ids given so far): ``cb-<domain>-NNNN``, numbered in output order."""
    out = []
    for after_id in after_ids:
        numbers[dom] += 1
        out.append(f'{{"id": {json_str(f"cb-{dom}-{numbers[dom]:04d}")}{after_id}')
    return "\n".join(out) + "\n"
