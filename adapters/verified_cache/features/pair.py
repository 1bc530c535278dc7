"""Features of a pair of sides: the extractors in :data:`EXTRACTORS` (each a small
ordered dict of floats), the verifier's input vector (:func:`pair_features`, in
the order of :data:`FEATURE_NAMES`) and the direction each feature may move
P(HIT) (:func:`direction`).
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections import Counter
from collections.abc import Callable, Sequence

from .alignment import (
    SHORT_SPAN,
    Diff,
    content_diff,
)
from .canonical import (
    _lemma,
    stem,
)
from .lexicon import (
    _CONTRAST_CLASS,
    _CONTRAST_OF,
    _PREPOSITIONS,
    FILLER,
    NEGATIONS,
    WH_WORDS,
)
from .names import initials_run, missing_entities, spelled_out
from .quantities import restated_numbers
from .side import (
    Side,
    analyze,
)


def _multiset_diff(x: Sequence[str], y: Sequence[str]) -> int:
    """Size of the multiset symmetric difference of ``x`` and ``y``."""
    cx, cy = Counter(x), Counter(y)
    return sum(((cx - cy) + (cy - cx)).values())


def _flag(value: bool) -> float:
    return 1.0 if value else 0.0


def _jaccard(x: set[str] | frozenset[str], y: set[str] | frozenset[str]) -> float:
    union = len(x | y)
    return len(x & y) / union if union else 1.0


Features = dict[str, float]


def _has_examples(side: Side) -> bool:
    return bool(
        side.example_numbers or side.example_quoted or side.example_entities
        or side.example_ordinals
    )  # fmt: skip


def with_examples(a: Side, b: Side) -> tuple[Side, Side]:
    """The two sides with the items of their worked examples (:mod:`.examples`)
    read as any other when both sides give examples (then the same input with
    another output is another function: "'aab' becomes 'a2b1'" vs "... 'a2b'"),
    else without them: an example one side adds only illustrates."""
    if not (_has_examples(a) and _has_examples(b)):
        return a, b

    def merged(x: Side) -> Side:
        return dataclasses.replace(
            x,
            numbers=x.numbers + x.example_numbers,
            ordinals=x.ordinals + x.example_ordinals,
            quoted=x.quoted + x.example_quoted,
            entities=x.entities + x.example_entities,
        )

    return merged(a), merged(b)


def number_features(a: Side, b: Side, d: Diff) -> Features:
    """Numbers and operands: how many numbers differ (as multisets; a quantity
    restated in other units or words is no difference, :func:`.quantities.restated_numbers`;
    a worked example only one side gives, :func:`with_examples`, neither),
    whether two operands swapped places (:func:`_operand_swap`), ordinals."""
    a, b = with_examples(a, b)
    nums_a, nums_b = _without(a.numbers, d.a_typo_numbers), _without(b.numbers, d.b_typo_numbers)
    kept_a, kept_b = restated_numbers(a, b)
    nums_a, nums_b = _without(nums_a, tuple(kept_a)), _without(nums_b, tuple(kept_b))
    n_diff = _multiset_diff(nums_a, nums_b)
    ords_a, ords_b = _without(a.ordinals, d.a_typo_numbers), _without(b.ordinals, d.b_typo_numbers)
    return {
        "num_diff": float(n_diff),
        "num_any_diff": _flag(n_diff > 0),
        "num_order_swap": _flag(_operand_swap(a, b)),
        "ordinal_diff": _flag(Counter(ords_a) != Counter(ords_b)),
    }


#: Most words between two operands of one operation ("7 choose 3", "from 40 to 50",
#: "log base 10 of 1000").
OPERAND_GAP = 3


def _operand_pairs(side: Side, adjacent: bool) -> set[tuple[str, tuple[str, ...], str]]:
    """(number, words between, number) for two different numbers of ``side`` at
    most :data:`OPERAND_GAP` words apart in its canonical tokens; with
    ``adjacent``, also two numbers next to each other (an operator symbol between
    them is no word: "2**10")."""
    tokens, numbers = side.tokens, set(side.numbers)
    out = set()
    first_gap = 1 if adjacent else 2
    for i, x in enumerate(tokens):
        if x not in numbers:
            continue
        for j in range(i + first_gap, min(len(tokens), i + 2 + OPERAND_GAP)):
            if tokens[j] in numbers and tokens[j] != x:
                out.add((x, tuple(tokens[i + 1 : j]), tokens[j]))
    return out


def _operand_swap(a: Side, b: Side) -> bool:
    """Whether two numbers stand on either side of the same words in the other
    order: "7 choose 3" vs "3 choose 7", "from 40 to 50" vs "from 50 to 40", or
    next to each other around the same operators ("2**10" vs "10**2"; without an
    operator two adjacent numbers are a list, whose order rarely matters). A
    reworded request that moves numbers around ("a 20% tip on an $86 bill" vs
    "the bill is $86: the tip at 20%?") changes the words between them, and
    keeps the answer."""
    adjacent = bool(a.operators) and Counter(a.operators) == Counter(b.operators)
    px, py = _operand_pairs(a, adjacent), _operand_pairs(b, adjacent)
    return any((m, mid, n) in py and (n, mid, m) not in py for n, mid, m in px)


def _without(items: tuple[str, ...], drop: tuple[str, ...]) -> tuple[str, ...]:
    """``items`` minus one occurrence of each of ``drop`` (order kept)."""
    if not drop:
        return items
    left = Counter(drop)
    out = []
    for x in items:
        if left[x] > 0:
            left[x] -= 1
        else:
            out.append(x)
    return tuple(out)


def _is_function_word(word: str) -> bool:
    return word in FILLER or word in _PREPOSITIONS or word in NEGATIONS


def _contrast_group(word: str) -> int:
    return _CONTRAST_OF.get(word, _CONTRAST_OF.get(word + "s", -1))


#: Words that negate the next few words: the negations plus verbs and
#: prepositions that stop, prevent or leave out what follows.
_NEGATORS = NEGATIONS | {"stop", "stops", "stopping", "prevent", "prevents", "avoid", "except"}

#: A negator reaches the first :data:`_NEG_SCOPE` content words among the next
#: :data:`_NEG_WINDOW` words, and stops at a word that opens another clause: in
#: "how do I stop procrastinating when I work from home" "work" is not negated,
#: in "my dog won't stop barking when I leave" "leave" is not. (The former scope,
#: three content words among the next five, flagged such rewordings; narrowing it
#: raised recall by 0.019 on the test split and 0.006 out of fold and narrowed the
#: MRPC gap by 0.010, forum pairs unchanged, means of 4 retrainings.)
_NEG_SCOPE = 2
_NEG_WINDOW = 3
_CLAUSE_WORDS = frozenset(
    "when whenever if because since but so before after while until that which who".split()
)


def _negated(tokens: Sequence[str]) -> set[str]:
    """Lemmas of the content words just after a negator, within its clause
    ("without any numbers", "stop melting ice").

    >>> sorted(_negated("how do i stop procrastinating when i work".split()))
    ['procrastinat']
    """
    out: set[str] = set()
    for i, w in enumerate(tokens):
        if w not in _NEGATORS:
            continue
        scope: list[str] = []
        for x in tokens[i + 1 : i + 1 + _NEG_WINDOW]:
            if x in _CLAUSE_WORDS:
                break
            if x not in FILLER:
                scope.append(x)
        out.update(_lemma(x) for x in scope[:_NEG_SCOPE])
    return out


def _negation_flips(x: Sequence[str], y: Sequence[str]) -> int:
    """Words both sides use, negated on one side only: "salt melts ice" vs "salt
    stops melting ice", "with numbers" vs "without any numbers"."""
    neg_x, neg_y = _negated(x), _negated(y)
    if not neg_x and not neg_y:
        return 0
    both = {_lemma(w) for w in x if w not in FILLER} & {_lemma(w) for w in y if w not in FILLER}
    return len((neg_x ^ neg_y) & both - _NEGATORS)


def _contrast_class(word: str) -> str:
    return _CONTRAST_CLASS.get(word, _CONTRAST_CLASS.get(word + "s", word))


#: Prefixes that make a word its opposite ("safe"/"unsafe", "advantage"/
#: "disadvantage", "possible"/"impossible").
NEGATING_PREFIXES = ("un", "dis", "in", "im", "il", "ir", "non")


def _prefix_antonyms(only_a: set[str], only_b: set[str]) -> int:
    """Pairs of a word on one side only and the same word with a negating prefix on
    the other side only (the bare word at least four letters long: "index" is no
    opposite of "dex")."""
    return sum(
        1
        for x in only_a
        for y in only_b
        if min(len(x), len(y)) >= 4
        and any(y == p + x or x == p + y or y == p + "-" + x or x == p + "-" + y
                for p in NEGATING_PREFIXES)
    )  # fmt: skip


def _one_sided_groups(mine: Counter[str], other: Counter[str], only: set[str]) -> set[int]:
    """Contrast groups with a synonym class more frequent in ``mine`` than in
    ``other``, one of whose words on this side the content diff kept (or is a
    function word). A content word counts once however often it is repeated:
    "median(nums) returns the median" names one operation, as "median(nums):
    the average of the middle two" does; function words count each time ("from
    A to B, then from B to A")."""

    def classes(words: Counter[str]) -> Counter[str]:
        out: Counter[str] = Counter()
        named: set[str] = set()
        for w, n in words.items():
            c = _contrast_class(w)
            if _is_function_word(w):
                out[c] += n
            elif c not in named:
                named.add(c)
                out[c] += 1
        return out

    surplus = classes(mine) - classes(other)
    return {
        _contrast_group(w)
        for w in mine
        if _contrast_class(w) in surplus and (w in only or _is_function_word(w))
    }


def _negation_is_the_change(d: Diff) -> bool:
    """Whether a negation added or dropped can be what the pair changes: besides
    negation words, each side keeps at most :data:`SHORT_SPAN` words of its own
    ("can I eat X" vs "what can't I eat"). In a reworded pair the negation is
    part of the rewording ("why doesn't ice sink" vs "why does ice float", "with
    no garden" vs "in my apartment"); a negated word both sides use is
    ``neg_scope_flip``'s."""
    rest_a = [w for w in d.a_only if w not in NEGATIONS]
    rest_b = [w for w in d.b_only if w not in NEGATIONS]
    return len(rest_a) <= SHORT_SPAN and len(rest_b) <= SHORT_SPAN


#: Words that name an operation the other side writes as a symbol ("take a
#: quarter away from five sixths" is "5/6 - 1/4", "half of 90" is "90 / 2").
_OPERATION_WORDS: dict[str, frozenset[str]] = {
    op: frozenset(words.split())
    for op, words in (
        ("+", "add adding added plus sum total more together increase increased"),
        ("-", "subtract subtracting subtracted minus away difference less fewer deduct"),
        ("*", "multiply multiplying multiplied times product double twice triple"),
        ("/", "divide dividing divided split half quotient ratio share"),
        ("^", "squared cubed power itself"),
        ("=", "equal equals solve root roots makes"),
    )
}


def _operators_unsaid(a: Side, b: Side) -> int:
    """How many of ``a``'s operator symbols ``b`` neither writes nor names in words
    (:data:`_OPERATION_WORDS`): "5/6 - 1/4" vs "take one quarter away from five
    sixths" names its "-"; "5 + 3" vs "5 - 3" does not.

    >>> from .side import analyze
    >>> _operators_unsaid(analyze("5/6 - 1/4"), analyze("take 1/4 away from 5/6"))
    0
    >>> _operators_unsaid(analyze("5 + 3"), analyze("5 - 3"))
    1
    """
    words = set(b.tokens)
    surplus = Counter(a.operators) - Counter(b.operators)
    return sum(
        n for op, n in surplus.items() if not (words & _OPERATION_WORDS.get(op, frozenset()))
    )


def operator_features(a: Side, b: Side, d: Diff) -> Features:
    """Math operators and answer-determining function words (derivative/integral,
    encode/decode, asc/desc, not/never...): swaps within a contrast group or
    between a word and its prefixed opposite ("safe"/"unsafe") (a
    contrast word present on one side only is mostly rewording: "150 lb in kg" vs
    "convert 150 lb to kg"), negation count difference, negated scope."""
    # read every token (prepositions included), not only the content tokens
    ca = Counter(stem(w) for w in a.tokens if stem(w) in _CONTRAST_OF or w in _CONTRAST_OF)
    cb = Counter(stem(w) for w in b.tokens if stem(w) in _CONTRAST_OF or w in _CONTRAST_OF)
    # a contrast word that is a content token only counts when the content diff
    # kept it (a typo of "solve" is not a change of operation)
    only_a, only_b = set(d.a_only), set(d.b_only)
    groups_a = _one_sided_groups(ca, cb, only_a)
    groups_b = _one_sided_groups(cb, ca, only_b)
    swaps = len(groups_a & groups_b) + _prefix_antonyms(only_a, only_b)
    return {
        "op_diff": float(_operators_unsaid(a, b) + _operators_unsaid(b, a)),
        "contrast_swap": float(swaps),
        "neg_diff": float(abs(a.negations - b.negations)) if _negation_is_the_change(d) else 0.0,
        "neg_scope_flip": float(_negation_flips(a.tokens, b.tokens)),
    }


def identifier_features(a: Side, b: Side, d: Diff) -> Features:
    """Variable names (single letters in math) and code identifiers
    (snake_case, camelCase, called names, letter-digit codes), case-sensitive,
    each compared as a set.
    Variables compare as sets: "What value of x makes 3x - 7 equal to 11?" names
    x twice, "Solve 3x - 7 = 11" once, and both ask for the same x."""
    vars_a, vars_b = set(a.variables), set(b.variables)
    var_diff = len(vars_a ^ vars_b)
    # identifiers as sets too: "orders(customer_id)" vs "each customer_id ... return
    # customer_id" name one column
    id_diff = len(set(a.identifiers) ^ set(b.identifiers))
    return {
        "var_diff": float(var_diff),
        "var_rename": _flag(var_diff > 0 and len(vars_a) == len(vars_b) > 0),
        "ident_diff": float(id_diff),
    }


def entity_features(a: Side, b: Side, d: Diff) -> Features:
    """Capitalised tokens (names, places, acronyms) missing from the other side
    (case-insensitive, so a lower-cased retype is not a change; see
    :func:`.names.missing_entities` and :func:`.names.spelled_out` for what else is no
    change)."""
    a, b = with_examples(a, b)
    only_a, only_b = set(d.a_only), set(d.b_only)
    miss_a = missing_entities(a, only_a, b)
    miss_b = missing_entities(b, only_b, a)
    if miss_a or miss_b:
        spelled_a, spelled_b = spelled_out(a, b)
        miss_a = [e for e in miss_a if e not in spelled_a]
        miss_b = [e for e in miss_b if e not in spelled_b]
    return {
        "entity_diff": float(len(miss_a) + len(miss_b)),
        "entity_both_changed": _flag(bool(miss_a) and bool(miss_b)),
        "quoted_diff": _flag(_quote_changed(a, b) or _quote_changed(b, a)),
    }


#: A quoted span longer than this is reported speech ("'We will not cut rates this
#: year,' the chairman said"), whose wording the other side may render freely.
QUOTE_MAX_WORDS = 8


def _quote_changed(a: Side, b: Side) -> bool:
    """Whether ``a`` quotes words that ``b`` does not say at all: quoting or
    unquoting the same words ("e.g. "user_id" -> "userId"" vs "user_id becomes
    userId") or typing other quote marks is no change; "translate 'good
    morning'" vs "translate 'good night'" is. Filler words in the quote are read
    only when it has nothing else."""
    words = set(b.tokens)
    for quote in Counter(a.quoted) - Counter(b.quoted):
        toks = quote.split()
        if len(toks) > QUOTE_MAX_WORDS:
            continue  # reported speech, not a string the answer repeats
        content = [w for w in toks if w not in FILLER] or toks
        if any(w not in words for w in content):
            return True
    return False


def order_features(a: Side, b: Side, d: Diff) -> Features:
    """Direction swaps: a token that is a source on one side and a destination on
    the other (NYC->FL vs FL->NYC), or preferred on one side and the alternative
    on the other ("tea over coffee" vs "coffee over tea"), and other exchanged
    roles (:func:`_role_swaps`)."""
    roles_a: dict[str, set[str]] = {}
    for tok, role in a.roles:
        roles_a.setdefault(tok, set()).add(role)
    swapped = 0
    for tok, role in b.roles:
        other = roles_a.get(tok)
        if other and role not in other:
            swapped += 1
    return {"direction_swap": float(swapped + _role_swaps(a.content, b.content))}


#: Longest replaced span (content words per side) read as a swap of roles.
ROLE_SWAP_SPAN = 2


def _kept_quantities(x: Sequence[str], y: Sequence[str]) -> set[str]:
    """The numbers and units of quantities both sides state alike, each in a unit
    that side uses once ("55 kg and 160 cm" vs "160 cm and 55 kg"): a weight and
    a height listed in another order keep their roles. Two quantities in one
    unit ("from 70 kg to 80 kg") can be exchanged, so they are not kept.

    >>> sorted(_kept_quantities("55 u:kg 160 u:cm".split(), "160 u:cm 55 u:kg".split()))
    ['160', '55', 'u:cm', 'u:kg']
    >>> _kept_quantities("70 u:kg to 80 u:kg".split(), "80 u:kg to 70 u:kg".split())
    set()
    """

    def quantities(seq: Sequence[str]) -> set[tuple[str, str]]:
        units = Counter(w for w in seq if w.startswith("u:"))
        return {
            (seq[k], seq[k + 1])
            for k in range(len(seq) - 1)
            if seq[k + 1].startswith("u:")
            and units[seq[k + 1]] == 1
            and seq[k].replace(".", "", 1).isdigit()
        }

    return {w for q in quantities(x) & quantities(y) for w in q}


def _role_swaps(x: Sequence[str], y: Sequence[str]) -> int:
    """How many short replacements in the aligned content words put on each side a
    word the other side uses elsewhere: the same things in each other's places ("in
    London when it's 9 am in Chicago" vs "in Chicago when it's 9 am in London";
    'dicts with "name" and "age" keys, sorted by age' vs '..., sorted by name'). A reworded
    request moves whole phrases, which the alignment sees as an insertion and a
    deletion, not as a replacement.

    >>> _role_swaps("time london 9 am chicago".split(), "time chicago 9 am london".split())
    2
    >>> _role_swaps("sort by age".split(), "sort by name".split())
    0
    >>> _role_swaps("bmi 55 u:kg 160 u:cm".split(), "160 u:cm 55 u:kg bmi".split())
    0
    """
    swaps = 0
    kept = _kept_quantities(x, y)
    matcher = difflib.SequenceMatcher(a=x, b=y, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op != "replace" or i2 - i1 > ROLE_SWAP_SPAN or j2 - j1 > ROLE_SWAP_SPAN:
            continue
        span_x, span_y = set(x[i1:i2]) - kept, set(y[j1:j2]) - kept
        rest_x, rest_y = set(x[:i1]) | set(x[i2:]), set(y[:j1]) | set(y[j2:])
        if any(w not in span_y and w in rest_y for w in span_x) and any(
            w not in span_x and w in rest_x for w in span_y
        ):
            swaps += 1
    return swaps


def language_features(a: Side, b: Side, d: Diff) -> Features:
    """Natural language of the text and languages named in it; programming
    languages named or recognisable by syntax."""
    pa, pb = set(a.prog_langs), set(b.prog_langs)
    na, nb = set(a.nat_langs), set(b.nat_langs)
    return {
        "text_lang_diff": _flag(a.text_lang != b.text_lang),
        "nat_lang_conflict": _flag(bool(na) and bool(nb) and na != nb),
        "prog_lang_conflict": _flag(bool(pa) and bool(pb) and pa != pb),
        "prog_lang_one_sided": _flag(bool(pa) != bool(pb)),
    }


def unit_features(a: Side, b: Side, d: Diff) -> Features:
    """Units and currencies (canonical names: km = kilometres, $ = USD)."""
    return {
        "unit_diff": _flag(set(a.units) != set(b.units)),
        "currency_diff": _flag(set(a.currencies) != set(b.currencies)),
    }


def _times_match(x: Sequence[str], y: Sequence[str]) -> bool:
    """Same times, where ``T~6:30`` (no am/pm) matches T06:30 and T18:30."""
    if len(x) != len(y):
        return False
    left = list(y)
    for t in x:
        found = next((u for u in left if _time_eq(t, u)), None)
        if found is None:
            return False
        left.remove(found)
    return True


def _time_eq(t: str, u: str) -> bool:
    if t == u:
        return True

    def options(s: str) -> set[str]:
        if s.startswith("T~"):
            h, m = s[2:].split(":")
            return {f"T{int(h):02d}:{m}", f"T{(int(h) % 12) + 12:02d}:{m}"}
        return {s}

    return bool(options(t) & options(u))


def date_features(a: Side, b: Side, d: Diff) -> Features:
    """Dates, weekdays, clock times and relative days (today/tomorrow/now)."""
    return {
        "date_diff": _flag(Counter(a.dates) != Counter(b.dates)),
        "weekday_diff": _flag(set(a.weekdays) != set(b.weekdays)),
        "time_diff": _flag(not _times_match(a.times, b.times)),
        "relative_diff": _flag(set(a.relative) != set(b.relative)),
    }


def context_features(a: Side, b: Side, d: Diff) -> Features:
    """Prior turns and system prompt: equal or not, present or not, and what differs
    between the two histories (the same content diff and answer-determining items
    as for the queries: "my last three commits" vs "my last two commits")."""
    ha, hb = a.history, b.history
    if ha is not None and hb is not None:
        dh = content_diff(ha, hb)
        ctx_diff = float(len(dh.a_only) + len(dh.b_only))
        ctx_critical = critical_features(ha, hb, dh)["critical_diff"]
        ctx_entities = entity_features(ha, hb, dh)["entity_diff"]
        ctx_numbers = number_features(ha, hb, dh)["num_diff"]
        ctx_ratio = difflib.SequenceMatcher(None, ha.tokens, hb.tokens, autojunk=False).ratio()
        # one history is the other plus extra turns (small talk), not a substitution
        ctx_added = _flag(ctx_diff > 0 and (not dh.a_only or not dh.b_only))
    elif ha is None and hb is None:
        ctx_diff = ctx_critical = ctx_entities = ctx_numbers = ctx_added = 0.0
        ctx_ratio = 1.0
    else:
        only = ha if ha is not None else hb
        assert only is not None
        ctx_diff, ctx_critical, ctx_added = float(len(only.content)), 1.0, 1.0
        ctx_entities, ctx_numbers, ctx_ratio = float(len(only.entities)), 0.0, 0.0
    return {
        "ctx_equal": _flag(a.context_key == b.context_key),
        "ctx_present": _flag(bool(a.context_key or b.context_key)),
        "ctx_turns_diff": float(abs(a.context_turns - b.context_turns)),
        "ctx_diff": ctx_diff,
        "ctx_critical": ctx_critical,
        "ctx_entity_diff": ctx_entities,
        "ctx_num_diff": ctx_numbers,
        "ctx_seq_ratio": ctx_ratio,
        "ctx_added_only": ctx_added,
        "sys_equal": _flag(a.system_key == b.system_key),
        "sys_present": _flag(bool(a.system_key or b.system_key)),
    }


def tool_features(a: Side, b: Side, d: Diff) -> Features:
    """Tool-call canonical forms: the offered tool sets and the tool each query
    most plausibly calls (its words against the tools' names and descriptions)."""
    ta, tb = set(a.tool_names), set(b.tool_names)
    return {
        "tools_present": _flag(bool(ta or tb)),
        "tools_equal": _flag(ta == tb),
        "tools_jaccard": _jaccard(ta, tb),
        "tool_intent_diff": _flag(a.tool_intent != b.tool_intent),
        "tool_needed_changed": _flag(_tool_needed_changed(a, b)),
    }


def _tool_needed_changed(a: Side, b: Side) -> bool:
    """The tool one side's query needs is not offered on the other side, or is
    offered with another definition (a changed schema changes the call)."""
    defs_a, defs_b = dict(a.tool_defs), dict(b.tool_defs)
    for needed, mine, other in ((a.tool_intent, defs_a, defs_b), (b.tool_intent, defs_b, defs_a)):
        if needed and other.get(needed) != mine.get(needed):
            return True
    return False


def difference_features(a: Side, b: Side, d: Diff) -> Features:
    """Whether any content differs at all, after case, punctuation, filler words,
    typos, inflections and transliterations are set aside.

    (The number of content words one side adds - "largest mammal" vs "largest land
    mammal" - was tried as a veto and dropped: it bought CacheEval recall (test
    0.59 -> 0.70 at FHR <= 0.04) but on real paraphrase pairs the added words are
    mostly asides and greetings: on the forum pairs its recall at the cache's FHR
    fell from 0.42 to 0.17 where the cosine has 0.38, and MRPC's ROC-AUC from 0.743
    to 0.732. The ablation rule keeps a feature only when it helps both.)"""
    return {"content_equal": _flag(not d.a_only and not d.b_only)}


#: Question words whose change asks for another kind of answer (why vs how, when
#: vs where); "what" and "which" name no kind of answer.
_ANSWER_KIND_WH = WH_WORDS - {"what", "which"}


def _one_replacement(
    x: Sequence[str], y: Sequence[str]
) -> tuple[Sequence[str], Sequence[str]] | None:
    """The two spans when ``y`` is ``x`` with one span replaced, else None."""
    ops = [
        op
        for op in difflib.SequenceMatcher(None, x, y, autojunk=False).get_opcodes()
        if op[0] != "equal"
    ]
    if len(ops) != 1 or ops[0][0] != "replace":
        return None
    _, i1, i2, j1, j2 = ops[0]
    return x[i1:i2], y[j1:j2]


_RAW_WORD_RE = re.compile(r"[^\W_]+(?:'[^\W_]+)?")


def _slip(x: str, y: str) -> bool:
    """One letter dropped, doubled or added, or two adjacent letters swapped: how a
    word is mistyped ("were"/"where", "horus"/"hours"). A changed letter is not a
    slip: "cat" and "bat" are two words."""
    if len(x) > len(y):
        x, y = y, x
    if len(y) == len(x) + 1:
        return any(y[:k] + y[k + 1 :] == x for k in range(len(y)))
    if len(x) != len(y) or x == y:
        return False
    k = next(i for i in range(len(x)) if x[i] != y[i])
    return k + 1 < len(x) and x[k] == y[k + 1] and x[k + 1] == y[k] and x[k + 2 :] == y[k + 2 :]


def _slipped_word(qa: str, qb: str) -> bool:
    """Whether the two queries as typed differ in one word only, mistyped
    (:func:`_slip`): before canonical forms ("doesnt" -> "does not") hide it."""
    replaced = _one_replacement(_RAW_WORD_RE.findall(qa.lower()), _RAW_WORD_RE.findall(qb.lower()))
    if replaced is None or len(replaced[0]) != 1 or len(replaced[1]) != 1:
        return False
    return _slip(replaced[0][0], replaced[1][0])


#: The shortest clipped word (:func:`_clipped`) and how many times longer the full one is.
CLIP_MIN, CLIP_RATIO = 3, 2


def _clipped(x: str, y: str) -> bool:
    """Whether one word is the other cut short, as people shorten long words
    ("info" / "information", "temp" / "temperature", "approx" / "approximately"): the
    shorter (3+ letters) opens the longer, which is at least twice as long.
    "car" / "cart" and "sun" / "sunny" are other words.

    >>> _clipped("temp", "temperature"), _clipped("info", "information")
    (True, True)
    >>> _clipped("car", "cart"), _clipped("sun", "sunny"), _clipped("information", "formation")
    (False, False, False)
    """
    short, long_ = sorted((x, y), key=len)
    return (
        short.isalpha()
        and len(short) >= CLIP_MIN
        and len(long_) >= CLIP_RATIO * len(short)
        and long_.startswith(short)
    )


def _in_place_swap(a: Side, b: Side, d: Diff) -> bool:
    """Whether the two queries are one word sequence with one short span replaced
    ("my dog is afraid" vs "my cat is afraid", "a short text" vs "a long text",
    "what time" vs "what day", "with the code" vs "without the code"), the
    replacement a real change: a content word on each side that the content diff
    kept (no typo, inflection or transliteration of the other), or a negation or
    a question word that names the kind of answer, added or changed.

    >>> from .side import analyze
    >>> def swap(x, y):
    ...     a, b = analyze(x), analyze(y)
    ...     return _in_place_swap(a, b, content_diff(a, b))
    >>> swap("my dog is afraid of storms", "my cat is afraid of storms")
    True
    >>> swap("how much with the code", "how much without the code")
    True
    >>> swap("why is the sky blue", "how is the sky blue")
    True
    >>> swap("my dog is afraid of thunderstorms", "my dog is afriad of thunderstorms")
    False
    >>> swap("can you fix my laptop", "could you fix my laptop")
    False
    >>> swap("where were the games held", "were were the games held")
    False
    >>> swap("so it doesnt taste bitter", "so it dosnt taste bitter")
    False
    >>> swap("my dog is afraid of storms", "my cat is afraid of loud storms")
    False
    >>> swap("what is the temp in the lab", "what is the temperature in the lab")
    False
    >>> swap("how does mfa work", "how does multi factor authentication work")
    False
    """
    replaced = _one_replacement(a.tokens, b.tokens)
    if replaced is None or _slipped_word(a.query, b.query):
        return False
    span_a, span_b = replaced
    if len(span_a) > SHORT_SPAN or len(span_b) > SHORT_SPAN:
        return False
    if len(span_a) == len(span_b) == 1 and _clipped(span_a[0], span_b[0]):
        return False
    if (len(span_a) == 1 and len(span_b) > 1 and initials_run(span_b, span_a[0])) or (
        len(span_b) == 1 and len(span_a) > 1 and initials_run(span_a, span_b[0])
    ):
        return False  # an acronym and its words: "mfa" / "multi factor authentication"
    kept_a = set(d.a_only) | set(d.a_surface)
    kept_b = set(d.b_only) | set(d.b_surface)
    if any(w in kept_a for w in span_a) and any(w in kept_b for w in span_b):
        return True
    marked = NEGATIONS | _ANSWER_KIND_WH
    return (set(span_a) & marked) != (set(span_b) & marked)


def swap_features(a: Side, b: Side, d: Diff) -> Features:
    """An in-place replacement of one short span (:func:`_in_place_swap`): the
    sentence is the same, one thing in it is another. In the training rows such
    pairs are almost all must-miss swaps; a synonym ("mean" vs "average") keeps
    a high ``cos_diff``, which the verifier weighs against this flag."""
    return {"word_swap": _flag(_in_place_swap(a, b, d))}


def critical_features(a: Side, b: Side, d: Diff) -> Features:
    """How many kinds of answer-determining item differ: numbers, swapped operands, operators,
    variables, identifiers, dates, times, quoted spans, both-sided name changes,
    direction swaps, contrast swaps, negation, languages, units, the tool the query
    needs. Each kind alone is rare in training data; pooled, the verifier learns one
    effect from all."""
    feats: Features = {}
    for ex in _CRITICAL_SOURCES:
        feats.update(ex(a, b, d))
    return _critical_from(feats)


def _critical_from(f: Features) -> Features:
    """:func:`critical_features` from the other extractors' outputs."""
    parts = (
        f["num_any_diff"],
        f["num_order_swap"],
        _flag(f["op_diff"] > 0),
        _flag(f["var_diff"] > 0),
        _flag(f["ident_diff"] > 0),
        f["date_diff"],
        f["time_diff"],
        f["quoted_diff"],
        f["entity_both_changed"],
        _flag(f["direction_swap"] > 0),
        _flag(f["contrast_swap"] > 0),
        _flag(f["neg_diff"] > 0 or f["neg_scope_flip"] > 0),
        f["prog_lang_conflict"],
        f["nat_lang_conflict"],
        f["text_lang_diff"],
        f["unit_diff"],
        f["tool_needed_changed"],
    )
    return {"critical_diff": float(sum(parts))}


Extractor = Callable[[Side, Side, Diff], Features]

#: Every extractor, in feature-vector order.
EXTRACTORS: tuple[Extractor, ...] = (
    number_features,
    operator_features,
    identifier_features,
    entity_features,
    order_features,
    language_features,
    unit_features,
    date_features,
    context_features,
    tool_features,
    difference_features,
    swap_features,
    critical_features,
)

#: The extractors whose outputs :func:`critical_features` pools: all but the context,
#: content-difference and pooling ones.
_CRITICAL_SOURCES: tuple[Extractor, ...] = tuple(
    ex
    for ex in EXTRACTORS
    if ex not in (context_features, difference_features, swap_features, critical_features)
)

#: The cosines the cache computes with the embedding model.
EMBEDDING_FEATURES: tuple[str, ...] = ("cos_query", "cos_context", "cos_diff", "cos_ctx_added")

#: Word-piece alignment of the two queries (BERTScore-style, from the same model
#: run as ``cos_query``): every token's best cosine to the other side's tokens.
#: A swapped entity leaves one token with no good partner; a paraphrase does not.
TOKEN_ALIGN_FEATURES: tuple[str, ...] = (
    "tok_align_p",  # mean best match of a's tokens in b
    "tok_align_r",  # mean best match of b's tokens in a
    "tok_align_f",  # harmonic mean of the two
    "tok_diff_cos",  # cosine of the mean vectors of the pieces only one side has
)


def _names() -> tuple[str, ...]:
    probe = analyze("probe")
    d = content_diff(probe, probe)
    names: list[str] = list(EMBEDDING_FEATURES)
    for ex in EXTRACTORS:
        names.extend(ex(probe, probe, d))
    return tuple(names) + TOKEN_ALIGN_FEATURES


#: The verifier's input columns, in order.
FEATURE_NAMES: tuple[str, ...] = _names()

#: The direction in which each feature may move P(HIT) (LightGBM monotone
#: constraints): +1 for a similarity (more similar never lowers P(HIT)), -1 for a
#: detected difference (a difference never raises it), 0 for a fact about the pair
#: that is neither. With every difference at zero the verifier is a non-decreasing
#: function of the similarities: it can only veto what the embedding would serve.
SIMILARITIES: frozenset[str] = frozenset(
    {"cos_query", "cos_context", "cos_diff", "ctx_equal", "ctx_seq_ratio", "sys_equal",
     "tools_equal", "tools_jaccard", "content_equal", *TOKEN_ALIGN_FEATURES}
)  # fmt: skip

NEUTRAL: frozenset[str] = frozenset(
    {"cos_ctx_added", "ctx_present", "ctx_added_only", "sys_present", "tools_present"}
)


def direction(name: str) -> int:
    """+1, -1 or 0: how feature ``name`` may move P(HIT) (see :data:`SIMILARITIES`)."""
    if name in SIMILARITIES:
        return 1
    return 0 if name in NEUTRAL else -1


def history_diff_spans(a: Side, b: Side) -> tuple[str, str]:
    """What each history has that the other lacks (surplus content words, in order):
    ``("", "")`` when the histories are equal or neither side has one."""
    if a.history is None and b.history is None:
        return "", ""
    if a.history is None or b.history is None:
        only = a.history if a.history is not None else b.history
        assert only is not None
        text = " ".join(only.surface)
        return ("", text) if a.history is None else (text, "")
    d = content_diff(a.history, b.history)
    return " ".join(d.a_surface), " ".join(d.b_surface)


def pair_features(
    a: Side,
    b: Side,
    *,
    cos_query: float,
    cos_context: float,
    cos_diff: float,
    cos_ctx_added: float = 0.0,
    token_align: Sequence[float] | None = None,
    diff: Diff | None = None,
) -> tuple[float, ...]:
    """The feature vector of a pair, in :data:`FEATURE_NAMES` order.

    The cosines come from the cache's embedding model: ``cos_query`` of the two
    queries; ``cos_diff`` of the two spans of a short substitution
    (:func:`substitution_spans`; 1.0 when the difference is no such swap);
    ``cos_context`` of the two histories' differing spans
    (:func:`history_diff_spans`: 1.0 when nothing differs, -1.0 when only one
    history has a differing span); ``cos_ctx_added``: the highest cosine between a
    history's differing span and the new query - is the extra or changed turn
    about the question (a constraint) or small talk? (0.0 when the histories do
    not differ). ``token_align``: the :data:`TOKEN_ALIGN_FEATURES` (NaN - missing
    to LightGBM - when the embedder gives no word-piece vectors).
    """
    if token_align is None:
        token_align = (float("nan"),) * len(TOKEN_ALIGN_FEATURES)
    elif len(token_align) != len(TOKEN_ALIGN_FEATURES):
        raise ValueError(f"expected {len(TOKEN_ALIGN_FEATURES)} token-alignment values")
    d = content_diff(a, b) if diff is None else diff
    out = [float(cos_query), float(cos_context), float(cos_diff), float(cos_ctx_added)]
    seen: Features = {}
    for ex in EXTRACTORS:
        # critical_features pools the others: reuse their values, not recompute them
        f = _critical_from(seen) if ex is critical_features else ex(a, b, d)
        seen.update(f)
        out.extend(f.values())
    out.extend(float(v) for v in token_align)
    return tuple(out)


def feature_dict(values: Sequence[float]) -> dict[str, float]:
    """A feature vector as ``{name: value}`` (for reports and tests)."""
    if len(values) != len(FEATURE_NAMES):
        raise ValueError(f"expected {len(FEATURE_NAMES)} features, got {len(values)}")
    return dict(zip(FEATURE_NAMES, values, strict=True))
