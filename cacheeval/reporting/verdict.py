"""The report's first screen in words: a three-line verdict built from the
report's own numbers, and the glossary of the terms the report uses.

The verdict says (1) how often the cache serves what it must not and what it
may, (2) what most of its false hits have in common and what would prevent
them (from the largest group of :mod:`cacheeval.results.failures`, the
context kinds and the policy kinds each counted as one group), (3) whether a
threshold fixes it: the best recall at FHR <= 5% and the false hits at the
top score, which no threshold removes. Every number in it is one the report
carries.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..metrics import differences as d
from ..metrics.classification import Confusion, Estimate
from ..metrics.ranking import ThresholdFree
from ..results.failures import FailureGroup, Failures

#: The FHR budget the verdict's threshold line uses.
BUDGET = 0.05

#: Context kinds: the words for "under another ..." and the key that fixes it.
_CONTEXT = {
    d.SYSTEM_PROMPT: ("with another system prompt (another user)", "the system prompt"),
    d.PRIOR_TURNS: ("after other turns", "the conversation"),
    d.TOOLS: ("with other tools offered", "the tool definitions"),
}
#: Policy kinds: what the requests are.
_POLICY = {
    d.POLICY_CREATIVE: "creative writing",
    d.POLICY_LIVE: "live data",
    d.POLICY_STATE: "state changes",
    d.POLICY_PERSONAL: "personal data",
}
#: Query kinds: what the false hits are, and what would prevent them.
_QUERY = {
    d.NUMBER: ("queries that differ in a number", "compare the numbers of the two queries"),
    d.NAME: ("queries that differ in a name", "compare the names and entities"),
    d.OPERATOR: (
        "queries that differ in an operator or direction (more/less, before/after, +/-)",
        "check operators and directions before serving",
    ),
    d.LANGUAGE: ("queries in or about another language", "compare the languages"),
    d.MOST_WORDS: (
        "queries that share under half their words",
        "raise the threshold or use a stronger model",
    ),
    d.NOTHING: (
        "near-identical queries whose difference no detector names",
        "read the examples below",
    ),
}
#: What a group of missed hits is, by kind.
_MISSED = {
    d.SYSTEM_PROMPT: "pairs with another system prompt that does not change the answer",
    d.PRIOR_TURNS: "pairs whose prior turns differ without changing the answer",
    d.TOOLS: "pairs offered other tools that do not change the answer",
    d.NUMBER: "pairs that write a number differently",
    d.NAME: "pairs that spell a name differently",
    d.OPERATOR: "pairs whose operator words or marks differ harmlessly",
    d.LANGUAGE: "the same request in another language",
    d.MOST_WORDS: "paraphrases in other words",
    d.NOTHING: "near-identical pairs",
}


def pct(x: float | None) -> str:
    """A share as a percentage: whole percents, one decimal under 10%.

    >>> pct(0.5823), pct(0.043), pct(0.05), pct(0.0), pct(None)
    ('58%', '4.3%', '5%', '0%', 'n/a')
    """
    if x is None:
        return "n/a"
    if 0 < x < 0.095 and round(1000 * x) % 10:
        return f"{100 * x:.1f}%"
    return f"{100 * x:.0f}%"


def _join(words: Sequence[str], last: str) -> str:
    """``a``, ``a and b``, ``a, b and c`` (``last`` the final joiner)."""
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + f" {last} " + words[-1]


def merged_groups(groups: Sequence[FailureGroup]) -> list[tuple[str, int, list[str]]]:
    """Groups with the context kinds summed into one (``context``) and the
    policy kinds into another (``policy``), largest first: (name, count,
    the kinds in it in vocabulary order).

    >>> g = [FailureGroup(d.NUMBER, 5, 0.4, ()), FailureGroup(d.PRIOR_TURNS, 4, 0.3, ()),
    ...      FailureGroup(d.SYSTEM_PROMPT, 3, 0.3, ())]
    >>> merged_groups(g)
    [('context', 7, ['system prompt / user', 'prior turns']), ('number', 5, ['number'])]
    """
    merged: dict[str, tuple[int, list[str]]] = {}
    for g in groups:
        name = "context" if g.kind in _CONTEXT else "policy" if g.kind in _POLICY else g.kind
        count, kinds = merged.get(name, (0, []))
        merged[name] = (count + g.count, [*kinds, g.kind])
    rank = {k: i for i, k in enumerate(d.DIFFERENCE_KINDS)}
    out = [
        (n, c, sorted(ks, key=lambda k: rank.get(k, len(rank)))) for n, (c, ks) in merged.items()
    ]
    out.sort(key=lambda t: (-t[1], rank.get(t[2][0], len(rank))))
    return out


def false_hit_phrase(kinds: Sequence[str]) -> tuple[str, str]:
    """What a merged group of false hits is, and the advice that prevents it."""
    if kinds[0] in _CONTEXT:
        where = [_CONTEXT[k][0] for k in kinds]
        keys = [_CONTEXT[k][1] for k in kinds]
        return (
            f"the same or a similar query {_join(where, 'or')}",
            f"key the cache on {_join(keys, 'and')}",
        )
    if kinds[0] in _POLICY:
        what = _join([_POLICY[k] for k in kinds], "or")
        return f"requests no cache may serve ({what})", "never serve them from the cache"
    return _QUERY.get(kinds[0], (f"pairs that differ in: {kinds[0]}", "read the examples below"))


def _lead(count: int, total: int) -> str:
    return "Most" if 2 * count > total else "The largest group of"


def _rates_line(c: Confusion, fhr: Estimate, recall: Estimate) -> str:
    return (
        f"Serves {pct(fhr.value)} of the requests it must not (FHR: {c.fp} of {c.fp + c.tn}) "
        f"and {pct(recall.value)} of those it may (recall: {c.tp} of {c.tp + c.fn})."
    )


def _missed_clause(f: Failures) -> str | None:
    """What most missed hits are (None without an analysed one)."""
    listed = f.n_missed_hits - f.n_failed_calls
    if not f.missed_hit_groups or not listed:
        return None
    top = f.missed_hit_groups[0]
    what = _MISSED.get(top.kind, f"pairs that differ in: {top.kind}")
    return f"{_members(top.count, listed, 'its missed hits', 'its one missed hit')} {what}"


def _failures_line(c: Confusion, fhr: Estimate, f: Failures) -> str:
    """The false hits' largest group and its advice; the missed hits' when it
    serves nothing it must not, or stays within the FHR budget with more
    missed hits than false hits."""
    missed = _missed_clause(f)
    if c.fp == 0:
        return "It serves no request it must not" + (f"; {missed}." if missed else ".")
    _, count, kinds = merged_groups(f.false_hit_groups)[0]
    what, advice = false_hit_phrase(kinds)
    within = fhr.value is not None and fhr.value <= BUDGET
    if within and missed is not None and f.n_missed_hits - f.n_failed_calls > c.fp:
        first = missed[0].upper() + missed[1:]
        return f"{first}; {_members(count, c.fp, 'its false hits', 'its one false hit')} {what}."
    lead = _lead(count, f.n_false_hits)
    return f"{lead} false hits ({count} of {f.n_false_hits}) are {what}: {advice}."


def _members(count: int, total: int, plural: str, single: str) -> str:
    """How many of ``total`` things a group holds, ready for "{what}".

    >>> _members(1, 1, "its false hits", "its one false hit")
    'its one false hit is among'
    >>> _members(3, 3, "them", "it"), _members(3, 5, "them", "-")
    ('all 3 of them are', 'most of them (3 of 5) are')
    >>> _members(2, 5, "its false hits", "-")
    'the largest group of its false hits (2 of 5) are'
    """
    if total == 1:
        return f"{single} is among"
    if count == total:
        return f"both of {plural} are" if total == 2 else f"all {total} of {plural} are"
    if 2 * count > total:
        return f"most of {plural} ({count} of {total}) are"
    return f"the largest group of {plural} ({count} of {total}) are"


def _top_clause(f: Failures) -> str | None:
    """The false hits at the top score, which no threshold removes, and what
    most of them are (None when there are none)."""
    top = f.top_score
    if top is None or not top.n_false_hits:
        return None
    n = top.n_false_hits
    name, count, kinds = merged_groups(top.false_hit_groups)[0]
    what, advice = false_hit_phrase(kinds)
    if name not in ("context", "policy"):  # a threshold cannot help: say what can
        advice = "its score cannot tell them from the hits"
    them = _members(count, n, "them", "it")
    return (
        f"{n} of the {top.n_served} rows it serves at its top score ({top.score:.4g}) must not"
        f" be, and no threshold removes {'it' if n == 1 else 'them'}: {them} {what}, so {advice}"
    )


def _threshold_line(
    c: Confusion, fhr: Estimate, recall: Estimate, tf: ThresholdFree | None, f: Failures
) -> str:
    if tf is None:
        return "It gives no scores for every row, so this report cannot tune a threshold for it."
    if f.top_score is not None and f.top_score.n_rows == tf.n_scored:
        return "It gives every row the same score, so no threshold changes what it serves."
    point = next((p for p in tf.operating_points if abs(p.alpha - BUDGET) < 1e-12), None)
    parts = []
    within = fhr.value is not None and fhr.value <= BUDGET
    if point is not None:
        if point.threshold is None:
            parts.append(f"No threshold keeps FHR at {pct(BUDGET)} or below and serves anything")
        else:
            parts.append(
                ("Its FHR is within the 5% budget; at" if within else "At")
                + f" FHR <= {pct(BUDGET)} its best threshold (>= {point.threshold:.4g}) keeps"
                f" {pct(point.recall)} recall (now {pct(recall.value)})"
            )
    top = _top_clause(f)
    if top is not None:
        parts.append(top)
    elif point is not None and point.threshold is not None and c.fp and not within:
        fixes = (point.recall or 0.0) >= 0.5 * (recall.value or 0.0)
        parts.append("a threshold change fixes most of it" if fixes else
                     "a threshold alone costs most of its hits")  # fmt: skip
    if not parts:
        return f"No operating point at FHR <= {pct(BUDGET)} was computed."
    return "; ".join(parts) + "."


def verdict_lines(
    c: Confusion,
    fhr: Estimate,
    recall: Estimate,
    tf: ThresholdFree | None,
    failures: Failures,
) -> tuple[str, ...]:
    """The three lines of the verdict (module docstring)."""
    return (
        _rates_line(c, fhr, recall),
        _failures_line(c, fhr, failures),
        _threshold_line(c, fhr, recall, tf, failures),
    )


#: The terms the report uses, each explained once, in the order they appear.
GLOSSARY: tuple[tuple[str, str], ...] = (
    ("FHR", "false-hit rate: the share of the rows it must not serve (binary label MISS)"
            " that it served, FP / (FP + TN). A false hit returns a stored answer to a request"
            " it does not answer. Lower is better."),
    ("Recall", "the share of the rows it may serve (HIT) that it served, TP / (TP + FN);"
               " a missed hit (FN) costs a model call, not a wrong answer."),
    ("HIT and MISS; EQUIV", "EQUIV and PARA_SAFE rows are HIT, RELATED_UNSAFE, ADVERSARIAL and"
                            " UNRELATED rows MISS, except the never-cache rows"
                            " (verification_method policy_no_cache: creative writing, live data,"
                            " state changes, personal data): they keep their EQUIV or PARA_SAFE"
                            " label but must be missed. So the Per label table gives EQUIV an"
                            " FHR: the share of its never-cache rows served."),
    ("What differs", "heuristics over the two requests (system prompt, turns, tools, the"
                     " changed query tokens, a never-cache row's policy); a failure is grouped"
                     " by the first kind found, context first. They say where the requests"
                     " differ, not why the label is right."),
    ("Sub-scores", "query, context and policy: each row tests one skill (Per sub-score)."),
    ("Calibration gap and ECE", "the calibration gap (threshold-free) comes from the order of the"
                                " scores only: the ranking quality lost at a threshold beyond what"
                                " the share of HIT rows explains. ECE comes from the confidence"
                                " values: how far confidence-as-P(HIT) is from the observed HIT"
                                " share. A gap of 0 beside a large ECE means well-ordered scores"
                                " with confidences that are not probabilities."),
    ("Difficulty", "measured by five similarity scorers: a row is hard when at most one of them"
                   " decides it correctly. A similarity cache fails hard rows by design; compare"
                   " caches on them rather than reading the rate as absolute."),
)  # fmt: skip
