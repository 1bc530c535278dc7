"""The record types of CacheEval: a benchmark row, a cache's verdict, and the
vocabulary (labels, domains, splits, tiers, verification methods) they use.

Field order of :class:`Row` is part of the file format: rows are written in
exactly this key order. Changing a field's name, type, order or meaning bumps
:data:`SCHEMA_VERSION`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

SCHEMA_VERSION = "1.0"

# --- labels -----------------------------------------------------------------

EQUIV = "EQUIV"
PARA_SAFE = "PARA_SAFE"
RELATED_UNSAFE = "RELATED_UNSAFE"
ADVERSARIAL = "ADVERSARIAL"
UNRELATED = "UNRELATED"

#: The five classes, in the order used by every table and count.
LABELS: tuple[str, ...] = (EQUIV, PARA_SAFE, RELATED_UNSAFE, ADVERSARIAL, UNRELATED)
HIT_LABELS: frozenset[str] = frozenset({EQUIV, PARA_SAFE})
MISS_LABELS: tuple[str, ...] = (RELATED_UNSAFE, ADVERSARIAL, UNRELATED)

HIT = "HIT"
MISS = "MISS"
BINARY_LABELS: tuple[str, ...] = (HIT, MISS)

# --- domains, splits, difficulty ---------------------------------------------

#: The ten domains, in the order of the sampling matrix.
DOMAINS: tuple[str, ...] = (
    "qa_factual",
    "qa_open",
    "math",
    "code",
    "conversational",
    "tool",
    "creative",
    "personalized",
    "multi_turn",
    "multilingual",
)

#: Target rows per (domain, label), in LABELS order (EQUIV, PARA_SAFE,
#: RELATED_UNSAFE, ADVERSARIAL, UNRELATED). 2,000 rows in all.
MATRIX: dict[str, tuple[int, int, int, int, int]] = {
    "qa_factual": (50, 50, 50, 40, 40),
    "qa_open": (60, 60, 50, 40, 50),
    "math": (30, 30, 30, 50, 20),
    "code": (30, 30, 30, 50, 20),
    "conversational": (60, 60, 50, 40, 50),
    "tool": (60, 60, 60, 50, 50),
    "creative": (40, 40, 40, 30, 30),
    "personalized": (30, 30, 30, 30, 20),
    "multi_turn": (30, 30, 50, 40, 30),
    "multilingual": (30, 20, 30, 40, 30),
}

SPLITS: tuple[str, ...] = ("train", "dev", "test")
#: Rows per split once all 2,000 rows exist.
SPLIT_SIZES: dict[str, int] = {"train": 1000, "dev": 500, "test": 500}

DIFFICULTIES: tuple[str, ...] = ("easy", "medium", "hard")

# --- verification --------------------------------------------------------------

POLICY_NO_CACHE = "policy_no_cache"

#: Methods whose verdict a program re-derives without judgement.
DETERMINISTIC_METHODS: frozenset[str] = frozenset(
    {
        "exact_match",
        "regex",
        "sympy",
        "ast_diff",
        "pytest_sandbox",
        "json_schema",
        "canonical_tool_call",
        POLICY_NO_CACHE,
    }
)
RUBRIC_METHODS: frozenset[str] = frozenset({"rubric"})
JUDGE_METHODS: frozenset[str] = frozenset({"llm_judge"})
VERIFICATION_METHODS: tuple[str, ...] = (
    "exact_match",
    "regex",
    "sympy",
    "ast_diff",
    "pytest_sandbox",
    "json_schema",
    "canonical_tool_call",
    "rubric",
    POLICY_NO_CACHE,
    "llm_judge",
)

# --- tiers a cache may report ----------------------------------------------------

#: Conventional tier names. A cache may report any string; these are the ones
#: the report groups and orders first. "error" and "timeout" are set by the
#: harness, never by a cache.
KNOWN_TIERS: tuple[str, ...] = (
    "exact",
    "embedding",
    "policy",
    "programmatic",
    "verifier",
    "rubric",
    "judge",
    "error",
    "timeout",
)

#: Fields withheld from the public copy of a test-split row. They live in the
#: git-ignored labels file and are merged back by ``load_bench(labels_path=...)``.
HIDDEN_TEST_FIELDS: tuple[str, ...] = (
    "subcategory",
    "label",
    "binary_label",
    "difficulty",
    "expected_answer_a",
    "expected_answer_b",
    "rationale",
    "verification_method",
    "verification_payload",
    "construction_method",
    "source",
    "real_world_grounding",
)


def derive_binary_label(label: str, verification_method: str | None) -> str:
    """The binary label a row must carry.

    ``policy_no_cache`` forces MISS (creative output, mutations, time-sensitive
    calls, cross-user personalisation); otherwise EQUIV/PARA_SAFE are HIT and
    the three other classes MISS.
    """
    if label not in LABELS:
        raise ValueError(f"unknown label {label!r}")
    if verification_method == POLICY_NO_CACHE:
        return MISS
    return HIT if label in HIT_LABELS else MISS


# --- records --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Row:
    """One labelled request pair: would query_a's cached answer serve query_b?

    ``context_*`` is the prior conversation (a tuple of ``{"role", "content"}``
    dicts) or None; ``tools_*`` the JSON-schema tool definitions offered with
    the request or None. On public test-split rows the fields in
    :data:`HIDDEN_TEST_FIELDS` are None.
    """

    id: str
    domain: str
    subcategory: str | None
    label: str | None
    binary_label: str | None
    difficulty: str | None
    query_a: str
    query_b: str
    context_a: tuple[dict[str, Any], ...] | None
    context_b: tuple[dict[str, Any], ...] | None
    system_prompt_a: str | None
    system_prompt_b: str | None
    tools_a: tuple[dict[str, Any], ...] | None
    tools_b: tuple[dict[str, Any], ...] | None
    expected_answer_a: str | None
    expected_answer_b: str | None
    rationale: str | None
    verification_method: str | None
    verification_payload: dict[str, Any] | None
    construction_method: str | None
    source: str | None
    real_world_grounding: str | None
    split: str

    @property
    def is_labelled(self) -> bool:
        """True when the row carries its label (not a public test row)."""
        return self.label is not None and self.binary_label is not None

    @property
    def y(self) -> int:
        """1 when the correct decision is HIT, 0 for MISS. Raises on unlabelled rows."""
        if self.binary_label is None:
            raise ValueError(f"row {self.id} has no label (hidden test row?)")
        return 1 if self.binary_label == HIT else 0

    def to_dict(self) -> dict[str, Any]:
        """The row as a plain dict in file key order (tuples become lists)."""
        out: dict[str, Any] = {}
        for f in ROW_FIELDS:
            value = getattr(self, f)
            if isinstance(value, tuple):
                value = [dict(v) if isinstance(v, dict) else v for v in value]
            out[f] = value
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Row:
        """Build a Row from a dict with exactly the row fields (lists become tuples)."""
        kwargs = dict(data)
        for f in ("context_a", "context_b", "tools_a", "tools_b"):
            if kwargs.get(f) is not None:
                kwargs[f] = tuple(kwargs[f])
        return cls(**kwargs)


#: Row field names in file order.
ROW_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Row))


@dataclass(frozen=True, slots=True)
class Verdict:
    """A cache's decision for one row.

    ``is_hit``: serve query_a's cached answer for query_b. ``confidence`` in
    [0, 1] is how sure the cache is of that decision. ``tier_used`` names the
    stage that decided (see :data:`KNOWN_TIERS`). ``score`` is an optional
    continuous hit score, higher = more willing to serve; when every verdict of
    a run carries one, the threshold-free metrics (PR-AUC, P-CHR AUC, ...) are
    computed from it.

    Example::

        def my_cache(row: Row) -> Verdict:
            s = my_similarity(row.query_a, row.query_b)
            return Verdict(is_hit=s >= 0.85, confidence=0.9, tier_used="embedding", score=s)
    """

    is_hit: bool
    confidence: float = 1.0
    tier_used: str = "unknown"
    score: float | None = None

    def problems(self) -> list[str]:
        """What makes this verdict unusable (empty when it is well formed)."""
        out: list[str] = []
        if not isinstance(self.is_hit, bool):
            out.append(f"is_hit is {type(self.is_hit).__name__}, not bool")
        if isinstance(self.confidence, bool) or not isinstance(self.confidence, (int, float)):
            out.append(f"confidence is {type(self.confidence).__name__}, not a number")
        elif math.isnan(self.confidence):
            out.append("confidence is NaN")
        elif not 0.0 <= self.confidence <= 1.0:
            out.append(f"confidence {self.confidence!r} is outside [0, 1]")
        if not isinstance(self.tier_used, str):
            out.append(f"tier_used is {type(self.tier_used).__name__}, not str")
        if self.score is not None:
            if isinstance(self.score, bool) or not isinstance(self.score, (int, float)):
                out.append(f"score is {type(self.score).__name__}, not a number")
            elif not math.isfinite(self.score):
                out.append(f"score is {self.score!r}")
        return out
