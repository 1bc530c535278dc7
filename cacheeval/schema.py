"""The record types of CacheEval: a benchmark row, a cache's verdict, and the
vocabulary (labels, domains, splits, tiers, verification methods) they use.

Field order of :class:`Row` is part of the file format: rows are written in
exactly this key order. Changing a field's name, type, order or meaning bumps
:data:`SCHEMA_VERSION`.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

SCHEMA_VERSION = "1.1"

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

#: The ten domains, in the order of the sampling matrix (each described, with
#: its row of the matrix, by :mod:`cacheeval.pipeline.domains`).
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

#: Tiers the harness sets itself; a cache may not report them (compared
#: case-insensitively, spaces stripped).
RESERVED_TIERS: frozenset[str] = frozenset({"error", "timeout", "missing"})
#: Longest error message kept per row (harness, cache processes, files).
MAX_ERROR_CHARS = 300
#: Largest per-call latency anything may report, in ms (a day).
MAX_LATENCY_MS = 86_400_000.0
#: The tiers of a call that failed (set by the harness, never by a cache).
FAILED_TIERS: tuple[str, ...] = ("error", "timeout")
#: A tier a cache reports: a short name of letters, digits and ``_.:+/-`` (so
#: it renders as itself in Markdown and HTML, and stays short).
TIER_PATTERN = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_.:+/-]{0,39}\Z")


def tier_problem(tier: Any) -> str | None:
    """Why ``tier`` cannot be a cache's tier (None when it can).

    >>> [tier_problem(t) for t in ("exact", "Timeout ")]
    [None, "tier_used 'Timeout ' is reserved for the harness"]
    >>> tier_problem("<b>hi</b>")
    "tier_used '<b>hi</b>' is not a short name of letters, digits and _.:+/-"
    """
    if type(tier) is not str:
        return f"tier_used is {type(tier).__name__}, not str"
    if tier.strip().casefold() in RESERVED_TIERS:
        return f"tier_used {tier[:40]!r} is reserved for the harness"
    if not TIER_PATTERN.match(tier):
        return f"tier_used {tier[:40]!r} is not a short name of letters, digits and _.:+/-"
    return None


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


# --- what a cache sees -------------------------------------------------------------

_SPACE = re.compile(r"\s+")


def normalize_text(text: str | None) -> str:
    """Whitespace runs collapsed to one space, trimmed, case-folded ("" for None).

    >>> normalize_text("  What  IS\\t2+2? ")
    'what is 2+2?'
    """
    if text is None:
        return ""
    return _SPACE.sub(" ", text).strip().casefold()


#: What :meth:`Request.key` returns: query, (role, content) turns, system prompt, tools.
RequestKey = tuple[str, tuple[tuple[str, str], ...], str, str]


@dataclass(frozen=True, slots=True)
class Request:
    """One request as a production cache receives it, and nothing more.

    ``query`` is the last user message; ``context`` the prior turns
    (``{"role", "content"}`` dicts, oldest first) or None; ``system_prompt``
    the system message or None; ``tools`` the JSON-schema tool definitions
    offered to the model, or None. None and empty mean the same.
    """

    query: str
    context: tuple[Mapping[str, Any], ...] | None = None
    system_prompt: str | None = None
    tools: tuple[Mapping[str, Any], ...] | None = None

    @classmethod
    def of(cls, value: Request | str) -> Request:
        """``value`` itself, or a bare query string wrapped as a Request."""
        if isinstance(value, Request):
            return value
        if isinstance(value, str):
            return cls(query=value)
        raise TypeError(f"expected a Request or a str, got {type(value).__name__}")

    def text(self, *, roles: bool = False) -> str:
        """The whole request as one string: system prompt, prior turns, query.

        ``roles=False`` joins the bare texts with newlines (what the dataset
        pipeline compares); ``roles=True`` writes one ``role: content`` line
        each, the query as ``user:`` (a chat transcript, what a cache embeds
        when it embeds the full request).

        >>> r = Request("And Spain?", ({"role": "user", "content": "Capital of France?"},),
        ...             "Be brief.")
        >>> r.text()
        'Be brief.\\nCapital of France?\\nAnd Spain?'
        >>> print(r.text(roles=True))
        system: Be brief.
        user: Capital of France?
        user: And Spain?
        """
        if not roles:
            parts = [self.system_prompt or ""]
            parts += [str(t["content"]) for t in self.context or ()]
            parts.append(self.query)
            return "\n".join(p for p in parts if p)
        lines = [f"system: {self.system_prompt}"] if self.system_prompt else []
        lines += [f"{t['role']}: {t['content']}" for t in self.context or ()]
        lines.append(f"user: {self.query}")
        return "\n".join(lines)

    def key(self) -> RequestKey:
        """What makes two requests verbatim the same: the normalised query,
        each prior turn (role, content), system prompt, and the tools as
        key-sorted JSON (definition key order does not matter).

        >>> Request("What is 2+2?").key() == Request("what is  2+2? ", (), "").key()
        True
        """
        turns = tuple(
            (normalize_text(str(t.get("role", ""))), normalize_text(str(t.get("content", ""))))
            for t in self.context or ()
        )
        tools_text = json.dumps(
            [dict(t) for t in self.tools or ()], sort_keys=True, ensure_ascii=False
        )
        return (
            normalize_text(self.query),
            turns,
            normalize_text(self.system_prompt),
            normalize_text(tools_text),
        )


@dataclass(frozen=True, slots=True)
class Pair:
    """What a cache under test is shown for one benchmark row: a stored
    request ``a`` and a new request ``b``, under the row's ``id``.

    No label, expected answer, rationale, payload, difficulty, subcategory,
    source or domain: a production cache knows none of them.
    """

    id: str
    a: Request
    b: Request


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

    def request(self, side: str) -> Request:
        """Side ``"a"`` or ``"b"`` as a :class:`Request`. Contexts and tools are
        deep copies: whatever a cache does to them never reaches this row."""
        if side not in ("a", "b"):
            raise ValueError(f"side must be 'a' or 'b', not {side!r}")
        context = getattr(self, f"context_{side}")
        tools = getattr(self, f"tools_{side}")
        return Request(
            query=getattr(self, f"query_{side}"),
            context=copy.deepcopy(context),
            system_prompt=getattr(self, f"system_prompt_{side}"),
            tools=copy.deepcopy(tools),
        )

    @property
    def pair(self) -> Pair:
        """What a cache under test may see of this row (a fresh copy each time)."""
        return Pair(self.id, self.request("a"), self.request("b"))

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


#: The three skills a cache needs, one per row (:func:`subscore_of`):
#: judging the query, keying on the context, honouring the never-cache policies.
SUBSCORES: tuple[str, ...] = ("query", "context", "policy")


def subscore_of(row: Row) -> str:
    """Which skill ``row`` tests, from fields every row carries:

    * ``policy``: a never-cache row (``verification_method`` is
      ``policy_no_cache``: creative writing, live data, state changes,
      per-user data), whatever its two requests;
    * ``context``: otherwise, the two requests' prior turns, system prompt or
      tools differ (after :meth:`Request.key`'s canonicalisation; the queries
      may differ too);
    * ``query``: otherwise - same context, no policy: the query alone decides.

    The three partition the rows.

    >>> r = Row.from_dict({f: None for f in ROW_FIELDS} | {
    ...     "query_a": "Capital of France?", "query_b": "capital of france",
    ...     "system_prompt_a": "Be brief.", "system_prompt_b": "Be brief.",
    ...     "verification_method": "alias_set"})
    >>> subscore_of(r)
    'query'
    """
    if row.verification_method == POLICY_NO_CACHE:
        return "policy"
    if row.request("a").key()[1:] != row.request("b").key()[1:]:
        return "context"
    return "query"


@dataclass(frozen=True, slots=True)
class Verdict:
    """A cache's decision for one row.

    ``is_hit``: serve query_a's cached answer for query_b. ``confidence`` in
    [0, 1] is how sure the cache is of that decision. ``tier_used`` names the
    stage that decided (see :data:`KNOWN_TIERS`). ``score`` is an optional
    continuous hit score, higher = more willing to serve; when every verdict of
    a run carries one, the threshold-free metrics (PR-AUC, P-CHR AUC, ...) are
    computed from it.

    >>> Verdict(is_hit=True, confidence=0.9, tier_used="embedding", score=0.93).problems()
    []
    >>> Verdict(is_hit=1, confidence=2.0).problems()
    ['is_hit is int, not bool', 'confidence 2.0 is outside [0, 1]']
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
        tier = tier_problem(self.tier_used)
        if tier is not None:
            out.append(tier)
        if self.score is not None:
            if isinstance(self.score, bool) or not isinstance(self.score, (int, float)):
                out.append(f"score is {type(self.score).__name__}, not a number")
            elif not math.isfinite(self.score):
                out.append(f"score is {self.score!r}")
        return out
