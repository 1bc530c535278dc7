"""The per-pair viewer's data: every row of a run with each cache's decision,
as one compact JSON object, and the per-cache summary its first screen shows.

``cacheeval view`` (:mod:`cacheeval.commands.view`) reads the rows and one
predictions file per cache, feeds the rows to a :class:`ViewBuilder` one at
a time (:func:`view_data` does it for a list), summarises each cache
(:func:`summarize`), and :mod:`cacheeval.reporting.viewer_page` renders
both into one HTML file.

The JSON is column-oriented and dictionary-encoded: every text (queries,
system prompts, turns, tool definitions, rationales, tiers, error messages)
is an index into one ``strings`` table, so the tool definitions a hundred
rows share and the roles of every turn are stored once; ``-1`` is null. Per
cache, the decisions are one string of letters (:data:`DECISION_CODES`) and
the scores one list, in row order.

What differs between a row's two requests, and which tokens changed, come
from the shared difference analysis (:mod:`cacheeval.metrics.differences`),
the same one the reports use.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from ..metrics.classification import Confusion, fhr, recall
from ..metrics.differences import DIFFERENCE_KINDS, Difference, changed_tokens, what_differs
from ..results.columns import missing_prediction, perturbation_kind
from ..results.predictions import Prediction, PredictionsHeader
from ..schema import HIT, LABELS, Row
from ..support.jsonio import dumps_pretty

#: Version of the embedded JSON (the page's script reads this shape).
VIEW_FORMAT = "cacheeval-view 1"
#: Rows per page of the pair table.
PAGE_SIZE = 100
#: One letter per row and cache: served, not served, the call failed, no prediction.
DECISION_CODES = {"hit": "H", "miss": "M", "error": "E", "missing": "-"}
#: The four outcomes of a cache on a labelled row, as the page names them.
OUTCOMES: tuple[str, ...] = ("false hit", "missed hit", "correct", "error")
#: Digits kept of a score or confidence (enough to sort and to read).
SCORE_DIGITS = 4


@dataclass(frozen=True, slots=True)
class CacheRun:
    """One predictions file: the cache's name as the page shows it (unique
    within a view), the file's name, its header, and its predictions by id."""

    name: str
    file: str
    header: PredictionsHeader
    predictions: Mapping[str, Prediction]

    def prediction(self, row_id: str) -> Prediction:
        """The prediction for ``row_id``; a missing one is scored as a MISS."""
        found = self.predictions.get(row_id)
        return found if found is not None else missing_prediction(row_id)


def unique_names(names: Sequence[str], files: Sequence[str]) -> list[str]:
    """Cache names made unique: a name two files share gets its file's name.

    >>> unique_names(["gptcache", "gptcache", "exact"], ["a.jsonl", "b.jsonl", "c.jsonl"])
    ['gptcache (a.jsonl)', 'gptcache (b.jsonl)', 'exact']
    """
    counts = Counter(names)
    out = [n if counts[n] == 1 else f"{n} ({f})" for n, f in zip(names, files, strict=True)]
    seen: Counter[str] = Counter()
    for i, name in enumerate(out):  # the same name and file name twice
        seen[name] += 1
        if seen[name] > 1:
            out[i] = f"{name} #{seen[name]}"
    return out


def decision_code(prediction: Prediction) -> str:
    """The letter of :data:`DECISION_CODES` for one prediction."""
    if prediction.tier_used == "missing":
        return DECISION_CODES["missing"]
    if prediction.error is not None:
        return DECISION_CODES["error"]
    return DECISION_CODES["hit"] if prediction.is_hit else DECISION_CODES["miss"]


def outcome(binary_label: str | None, prediction: Prediction) -> str | None:
    """What a decision was on a row whose correct decision is ``binary_label``:
    ``error`` (the call failed or there is no prediction), ``false hit`` (a
    MISS row served), ``missed hit`` (a HIT row not served) or ``correct``;
    None on an unlabelled row.

    >>> p = Prediction("r", True, 0.9, 0.9, "embedding", 1.0)
    >>> outcome("MISS", p), outcome("HIT", p), outcome(None, p)
    ('false hit', 'correct', None)
    """
    if binary_label is None:
        return None
    if prediction.error is not None:
        return "error"
    if prediction.is_hit != (binary_label == HIT):
        return "false hit" if prediction.is_hit else "missed hit"
    return "correct"


# --- the first screen ------------------------------------------------------------------


class RowKey(NamedTuple):
    """What the summary needs of a row: its id and correct decision."""

    id: str
    binary_label: str | None


@dataclass(frozen=True, slots=True)
class CacheSummary:
    """One cache over the labelled rows of a view.

    ``fhr`` = false hits / MISS rows and ``recall`` = HIT rows served / HIT
    rows (None without such rows); an error or a missing prediction counts as
    not served, as ``cacheeval score`` counts it. ``groups``: the false hits
    by the primary kind of what differs, most first (ties in
    :data:`DIFFERENCE_KINDS` order). ``top_score``: the highest score of a
    served pair (to :data:`SCORE_DIGITS` digits; None when no served pair has
    a score), ``top_served`` the pairs served at it and ``top_groups`` the
    false hits among them, grouped the same way.
    """

    name: str
    file: str
    n_rows: int
    served: int
    false_hits: int
    missed_hits: int
    correct: int
    errors: int
    fhr: float | None
    recall: float | None
    groups: tuple[tuple[str, int], ...]
    top_score: float | None = None
    top_served: int = 0
    top_groups: tuple[tuple[str, int], ...] = ()

    @property
    def top_false_hits(self) -> int:
        """False hits at the top score (no threshold that serves anything avoids them)."""
        return sum(n for _, n in self.top_groups)

    @property
    def main_failure(self) -> tuple[str, int] | None:
        """The kind most false hits share and their number (None without false hits)."""
        return self.groups[0] if self.groups else None


def summarize(
    rows: Sequence[Row | RowKey], kinds: Sequence[str], runs: Sequence[CacheRun]
) -> list[CacheSummary]:
    """One :class:`CacheSummary` per run; ``kinds[i]`` is row i's primary kind
    (rows: :class:`~cacheeval.schema.Row` or just their :class:`RowKey`).

    >>> from cacheeval.results.predictions import make_header
    >>> rows = [_tiny_row("r1", "MISS"), _tiny_row("r2", "HIT"), _tiny_row("r3", "MISS")]
    >>> preds = {"r1": Prediction("r1", True, 0.9, 0.9, "embedding", 1.0),
    ...          "r2": Prediction("r2", False, 0.6, 0.4, "embedding", 1.0)}
    >>> run = CacheRun("c", "c.jsonl", make_header(cache_name="c", created="x"), preds)
    >>> s = summarize(rows, ["number", "number", "name"], [run])[0]
    >>> (s.false_hits, s.missed_hits, s.correct, s.errors, s.fhr, s.recall, s.groups)
    (1, 1, 0, 1, 0.5, 0.0, (('number', 1),))
    >>> (s.top_score, s.top_served, s.top_false_hits)
    (0.9, 1, 1)
    """
    out = []
    for run in runs:
        counts: Counter[str] = Counter()
        groups: Counter[str] = Counter()
        tp = fp = fn = tn = 0
        top: float | None = None
        at_top: list[tuple[str, bool]] = []  # (kind, false hit) of the serves at the top
        for row, kind in zip(rows, kinds, strict=True):
            if row.binary_label is None:
                continue
            p = run.prediction(row.id)
            result = outcome(row.binary_label, p)
            assert result is not None
            counts[result] += 1
            if result == "false hit":
                groups[kind] += 1
            served = p.is_hit and p.error is None
            score = _round(p.score)
            if served and score is not None:
                if top is None or score > top:
                    top, at_top = score, []
                if score == top:
                    at_top.append((kind, result == "false hit"))
            if row.binary_label == HIT:
                tp, fn = tp + served, fn + (not served)
            else:
                fp, tn = fp + served, tn + (not served)
        c = Confusion(tp, fp, fn, tn)
        out.append(
            CacheSummary(
                name=run.name,
                file=run.file,
                n_rows=c.n,
                served=tp + fp,
                false_hits=counts["false hit"],
                missed_hits=counts["missed hit"],
                correct=counts["correct"],
                errors=counts["error"],
                fhr=fhr(c).value,
                recall=recall(c).value,
                groups=_ranked(groups),
                top_score=top,
                top_served=len(at_top),
                top_groups=_ranked(Counter(k for k, false_hit in at_top if false_hit)),
            )
        )
    return out


def _ranked(found: Counter[str]) -> tuple[tuple[str, int], ...]:
    """Counts by kind, most first; ties in :data:`DIFFERENCE_KINDS` order."""
    order = {k: i for i, k in enumerate(DIFFERENCE_KINDS)}
    return tuple(sorted(found.items(), key=lambda kv: (-kv[1], order.get(kv[0], len(order)))))


# --- the embedded data ---------------------------------------------------------------------


class StringTable:
    """Strings numbered in the order first seen; :meth:`index` of None is -1.

    >>> t = StringTable()
    >>> [t.index("a"), t.index("b"), t.index("a"), t.index(None)], t.strings
    ([0, 1, 0, -1], ['a', 'b'])
    """

    def __init__(self) -> None:
        self.strings: list[str] = []
        self._index: dict[str, int] = {}

    def index(self, text: str | None) -> int:
        if text is None:
            return -1
        found = self._index.get(text)
        if found is None:
            found = self._index[text] = len(self.strings)
            self.strings.append(text)
        return found


def utf16_offsets(text: str, offsets: Sequence[int]) -> list[int]:
    """Code-point offsets into ``text`` as UTF-16 code units (a browser's
    string index): a character beyond U+FFFF counts twice.

    >>> utf16_offsets("a\\U0001F600b", [0, 1, 2, 3])
    [0, 1, 3, 4]
    """
    if all(ord(ch) <= 0xFFFF for ch in text):
        return list(offsets)
    out, units, at = [], 0, 0
    for off in sorted(set(offsets)):
        units += sum(2 if ord(ch) > 0xFFFF else 1 for ch in text[at:off])
        at = off
        out.append(units)
    where = dict(zip(sorted(set(offsets)), out, strict=True))
    return [where[o] for o in offsets]


def changed_spans(text: str, tokens: Iterable[tuple[str, bool]]) -> list[int]:
    """The changed tokens of ``text`` as flat ``[start, end, ...]`` offsets
    (UTF-16 units, adjacent spans merged). Each token is looked up from where
    the previous one ended; one that is not found there (matched without
    regard to case) is skipped.

    >>> changed_spans("Add 2 and 3", [("Add", False), ("2", True), ("and", False), ("3", True)])
    [4, 5, 10, 11]
    >>> changed_spans("A B", [("a", True), ("b", True)])
    [0, 3]
    """
    spans: list[int] = []
    folded = text.casefold() if len(text.casefold()) == len(text) else None
    at = 0
    for token, changed in tokens:
        if not token:
            continue
        start = text.find(token, at)
        if start < 0 and folded is not None:
            start = folded.find(token.casefold(), at)
        if start < 0:
            continue
        end = start + len(token)
        at = end
        if not changed:
            continue
        between = text[spans[-1] : start] if spans else None
        if spans and between is not None and not between.strip():
            spans[-1] = end  # only spaces since the last change: one span
        else:
            spans += [start, end]
    return utf16_offsets(text, spans)


def _text_pairs(row: Row) -> list[tuple[str, str | None, str | None]]:
    """The texts of the two sides that are highlighted against each other:
    (field key, side a, side b) for the query, the system prompt and each
    prior turn (turn i of a against turn i of b)."""
    pairs: list[tuple[str, str | None, str | None]] = [
        ("q", row.query_a, row.query_b),
        ("s", row.system_prompt_a, row.system_prompt_b),
    ]
    ca, cb = row.context_a or (), row.context_b or ()
    for i in range(max(len(ca), len(cb))):
        a = str(ca[i].get("content", "")) if i < len(ca) else None
        b = str(cb[i].get("content", "")) if i < len(cb) else None
        pairs.append((f"c{i}", a, b))
    return pairs


def highlights(row: Row) -> dict[str, list[int]]:
    """Changed spans of every text of ``row`` that differs between its two
    sides, keyed ``qa``/``qb`` (queries), ``sa``/``sb`` (system prompts),
    ``c<i>a``/``c<i>b`` (turn i); a text with no counterpart is left unmarked
    (the page says the other side has none)."""
    out: dict[str, list[int]] = {}
    for key, a, b in _text_pairs(row):
        if a is None or b is None or a == b:
            continue
        tokens_a, tokens_b = changed_tokens(a, b)
        for side, text, tokens in (("a", a, tokens_a), ("b", b, tokens_b)):
            spans = changed_spans(text, tokens)
            if spans:
                out[key + side] = spans
    return out


def _turns(table: StringTable, context: Sequence[Mapping[str, Any]] | None) -> list[int] | int:
    """A conversation as flat ``[role, content, ...]`` string indices (0 for none)."""
    if not context:
        return 0
    flat: list[int] = []
    for turn in context:
        flat += [table.index(str(turn.get("role", ""))), table.index(str(turn.get("content", "")))]
    return flat


def _tools(table: StringTable, tools: Sequence[Mapping[str, Any]] | None) -> int:
    """Tool definitions as one indented JSON text (shared by every row offering them)."""
    if not tools:
        return -1
    return table.index(dumps_pretty([dict(t) for t in tools]).rstrip("\n"))


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, SCORE_DIGITS)


class ViewBuilder:
    """The page's data, built one row at a time (:meth:`add`) so a long run
    never holds its rows: only the encoded columns, the string table, and
    per row its :class:`RowKey` and primary kind (what :func:`summarize`
    needs). :meth:`data` adds the runs' decisions."""

    _COLUMNS = (
        "id domain label sub difficulty qa qb sa sb ca cb ta tb rationale ea eb kind diffs hl"
    ).split()

    def __init__(self) -> None:
        self.table = StringTable()
        self.cols: dict[str, list[Any]] = {k: [] for k in self._COLUMNS}
        self.binary: list[str] = []
        self.keys: list[RowKey] = []
        self.kinds: list[str] = []
        self.kind_names = list(DIFFERENCE_KINDS)
        self._kind_index = {k: i for i, k in enumerate(self.kind_names)}

    def _kind_no(self, kind: str) -> int:
        if kind not in self._kind_index:  # outside the vocabulary: shown under its own name
            self._kind_index[kind] = len(self.kind_names)
            self.kind_names.append(kind)
        return self._kind_index[kind]

    def add(self, row: Row, differences: Sequence[Difference] | None = None) -> None:
        """Add ``row``; ``differences`` is its :func:`what_differs` (computed
        when not given), whose first kind is the row's primary kind (as
        :func:`~cacheeval.metrics.differences.primary_kind` says)."""
        found = what_differs(row) if differences is None else differences
        cols, table = self.cols, self.table
        cols["id"].append(row.id)
        for key, value in (
            ("domain", row.domain),
            ("label", row.label),
            # a stress row shows the key its report uses ("identity/city", "policy")
            ("sub", perturbation_kind(row) or row.subcategory),
            ("difficulty", row.difficulty),
            ("qa", row.query_a),
            ("qb", row.query_b),
            ("sa", row.system_prompt_a),
            ("sb", row.system_prompt_b),
            ("rationale", row.rationale),
            ("ea", row.expected_answer_a),
            ("eb", row.expected_answer_b),
        ):
            cols[key].append(table.index(value))
        cols["ca"].append(_turns(table, row.context_a))
        cols["cb"].append(_turns(table, row.context_b))
        cols["ta"].append(_tools(table, row.tools_a))
        cols["tb"].append(_tools(table, row.tools_b))
        self.binary.append({None: "?", HIT: "H"}.get(row.binary_label, "M"))
        cols["kind"].append(self._kind_no(found[0].kind))
        flat: list[int] = []
        for d in found:
            flat += [
                self._kind_no(d.kind),
                table.index(str(d.a) if d.a else None),
                table.index(str(d.b) if d.b else None),
            ]
        cols["diffs"].append(flat)
        cols["hl"].append(highlights(row) or 0)
        self.keys.append(RowKey(row.id, row.binary_label))
        self.kinds.append(found[0].kind)

    def data(
        self, runs: Sequence[CacheRun], *, title: str, source: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The page's data: the rows added so far and per run the decisions,
        scores, confidences, tiers and errors in row order (module docstring)."""
        ids = self.cols["id"]
        caches = []
        for run in runs:
            preds = [run.prediction(rid) for rid in ids]
            caches.append(
                {
                    "name": run.name,
                    "file": run.file,
                    "split": run.header.split,
                    "n_predictions": sum(1 for rid in ids if rid in run.predictions),
                    "dec": "".join(decision_code(p) for p in preds),
                    "score": [_round(p.score) for p in preds],
                    "conf": [_round(p.confidence) for p in preds],
                    "tier": [self.table.index(p.tier_used) for p in preds],
                    "error": {
                        str(i): self.table.index(p.error) for i, p in enumerate(preds) if p.error
                    },
                }
            )
        return {
            "format": VIEW_FORMAT,
            "title": title,
            "source": dict(source),
            "page_size": PAGE_SIZE,
            "labels": list(LABELS),
            "kinds": self.kind_names,
            "outcomes": list(OUTCOMES),
            "strings": self.table.strings,
            "rows": {**self.cols, "bin": "".join(self.binary)},
            "caches": caches,
        }


def view_data(
    rows: Sequence[Row],
    runs: Sequence[CacheRun],
    *,
    title: str,
    source: Mapping[str, Any],
    differences: Sequence[Sequence[Difference]] | None = None,
) -> dict[str, Any]:
    """:class:`ViewBuilder`'s data for ``rows`` (``differences[i]``: row i's
    :func:`what_differs`, computed when not given) and ``runs``."""
    builder = ViewBuilder()
    for i, row in enumerate(rows):
        builder.add(row, None if differences is None else differences[i])
    return builder.data(runs, title=title, source=source)


def _tiny_row(rid: str, binary_label: str) -> Row:
    """A one-line row for the doctests."""
    from ..schema import ROW_FIELDS

    data: dict[str, Any] = dict.fromkeys(ROW_FIELDS)
    data.update(
        id=rid,
        domain="math",
        label="EQUIV" if binary_label == HIT else "UNRELATED",
        binary_label=binary_label,
        query_a="What is 2+2?",
        query_b="What is 2+3?",
        split="dev",
    )
    return Row.from_dict(data)


def pairs_address(page: str, **filters: str) -> str:
    """A link to ``page`` (a per-pair page, as a report links to it) opened
    with ``filters`` set: the keys the page reads from its address (domain,
    label, sub, kind, cache, outcome, disagree, text, sort), by value, not by
    position (a cache and a "what differs" kind by name).

    >>> pairs_address("view.html", cache="exact match", sub="identity/", outcome="false hit")
    'view.html#cache=exact%20match&sub=identity%2F&outcome=false%20hit'
    """
    from urllib.parse import quote, urlencode

    return f"{page}#{urlencode(filters, quote_via=quote)}"


@dataclass(frozen=True, slots=True)
class ViewLink:
    """A report's per-pair page: its path as the report links to it, and the
    report's cache's name on the page."""

    page: str
    cache: str

    def wrong(self, outcome: str, n: int, **filters: str) -> str:
        """``[n false hits](page#...)`` for ``outcome`` ("false hit" or "missed
        hit") of this cache on the rows ``filters`` select; "" when ``n`` is 0.

        >>> ViewLink("v.html", "c").wrong("missed hit", 2, domain="math")
        '[2 missed hits](v.html#cache=c&domain=math&outcome=missed%20hit)'
        """
        if not n:
            return ""
        address = pairs_address(self.page, cache=self.cache, **filters, outcome=outcome)
        return f"[{n} {outcome}{'s' if n != 1 else ''}]({address})"


def file_label(path: str | Path) -> str:
    """How the page names a predictions file: its base name (so the page
    does not depend on where the checkout lives)."""
    return Path(path).name


__all__ = [
    "DECISION_CODES",
    "OUTCOMES",
    "PAGE_SIZE",
    "VIEW_FORMAT",
    "CacheRun",
    "CacheSummary",
    "RowKey",
    "StringTable",
    "ViewBuilder",
    "changed_spans",
    "decision_code",
    "file_label",
    "highlights",
    "outcome",
    "summarize",
    "unique_names",
    "view_data",
]
