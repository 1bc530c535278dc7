"""Pure, deterministic features of a pair of requests: what differs between the
stored request (side a) and the new one (side b).

Everything here is a function of the two *requests* only - query, prior turns,
system prompt, offered tools. Nothing reads a label, an id, a domain or any
benchmark metadata, because a production cache has none of them.

Two steps:

1. :func:`analyze` turns one :class:`Request` into a :class:`Side`: canonical
   tokens (case-folded, contractions expanded, number words as digits, units
   and currencies under one name, typos left alone) plus the answer-determining
   items pulled out of them - numbers, operators, variables, identifiers,
   capitalised names, dates, times, units, languages, quoted spans. A cache
   analyses a stored request once, at ``put`` time.
2. The extractors in :data:`EXTRACTORS` compare two sides. Each returns a small
   ordered dict of floats; :func:`pair_features` concatenates them in the order
   of :data:`FEATURE_NAMES`, the verifier's input vector.

The embedding cosines (queries, the two sides of a short substitution, prior
turns) are computed by the cache (they need the model) and passed in; this
module only says which spans differ (:func:`substitution_spans`).

The rule behind every extractor: if the answer will contain a token from the
prompt, that token is answer-determining, so the features describe *which
kinds* of tokens differ (a number, a variable, a direction, a language...), not
how the wording looks: lengths, raw overlap counts and word order describe a
template's style and do not carry over to requests people write. Each feature
has a direction (:func:`direction`): similarities may only raise P(HIT),
differences only lower it.

The package's modules, each one concern: :mod:`.lexicon` (word lists),
:mod:`.canonical` (tokenisation and canonical forms), :mod:`.context` (prior
turns, system prompt, tools), :mod:`.items` (operators, dates, direction roles,
language of one side), :mod:`.side` (:func:`analyze`), :mod:`.alignment`
(:func:`content_diff`), :mod:`.quantities` (a quantity restated in other units),
:mod:`.examples` (worked examples in a code request), :mod:`.names` (one name
written two ways),
:mod:`.pair` (the extractors and the feature vector),
:mod:`.precision` (the fixed precision the verifier reads features at).
Import from the package: ``from adapters.verified_cache.features import analyze``.
"""

from __future__ import annotations

from cacheeval.schema import Request

from .alignment import (
    SHORT_SPAN,
    Diff,
    content_diff,
    substitution_spans,
)
from .canonical import (
    Token,
    normalise_text,
    tokenize,
)
from .context import (
    context_only,
    context_text,
    full_text,
    tool_defs,
    tool_intent,
    tool_names,
)
from .items import (
    detect_language,
)
from .lexicon import (
    CONTRAST_GROUPS,
    FILLER,
    NEGATIONS,
    WH_WORDS,
)
from .pair import (
    EMBEDDING_FEATURES,
    EXTRACTORS,
    FEATURE_NAMES,
    NEUTRAL,
    SIMILARITIES,
    TOKEN_ALIGN_FEATURES,
    Extractor,
    Features,
    context_features,
    critical_features,
    date_features,
    difference_features,
    direction,
    entity_features,
    feature_dict,
    history_diff_spans,
    identifier_features,
    language_features,
    number_features,
    operator_features,
    order_features,
    pair_features,
    swap_features,
    tool_features,
    unit_features,
)
from .precision import (
    DECIMALS,
    quantize,
    quantize_features,
)
from .side import (
    Side,
    analyze,
)

__all__ = [
    "CONTRAST_GROUPS",
    "DECIMALS",
    "Diff",
    "EMBEDDING_FEATURES",
    "EXTRACTORS",
    "Extractor",
    "FEATURE_NAMES",
    "FILLER",
    "Features",
    "NEGATIONS",
    "NEUTRAL",
    "Request",
    "SHORT_SPAN",
    "SIMILARITIES",
    "Side",
    "TOKEN_ALIGN_FEATURES",
    "Token",
    "WH_WORDS",
    "analyze",
    "content_diff",
    "context_features",
    "context_only",
    "context_text",
    "critical_features",
    "date_features",
    "detect_language",
    "difference_features",
    "direction",
    "entity_features",
    "feature_dict",
    "full_text",
    "history_diff_spans",
    "identifier_features",
    "language_features",
    "normalise_text",
    "number_features",
    "operator_features",
    "order_features",
    "pair_features",
    "quantize",
    "quantize_features",
    "substitution_spans",
    "swap_features",
    "tokenize",
    "tool_defs",
    "tool_features",
    "tool_intent",
    "tool_names",
    "unit_features",
]
