"""The parts of a request other than its query: prior turns and system prompt as
text, and the offered tools (their names, canonical definitions, and the tool the
query most plausibly calls).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from cacheeval.schema import Request

from .canonical import (
    stem,
)
from .lexicon import (
    FILLER,
    WH_WORDS,
)


def context_text(request: Request) -> str:
    """System prompt and prior turns as one string (``role: content`` lines)."""
    lines = []
    if request.system_prompt:
        lines.append(f"system: {request.system_prompt}")
    for turn in request.context or ():
        lines.append(f"{turn.get('role', '')}: {turn.get('content', '')}")
    return "\n".join(lines)


def full_text(request: Request) -> str:
    """The whole request as one string: system prompt, prior turns, then the query."""
    ctx = context_text(request)
    return f"{ctx}\nuser: {request.query}" if ctx else request.query


def tool_names(request: Request) -> tuple[str, ...]:
    """Sorted names of the offered tools (``name`` or ``function.name``)."""
    names = []
    for tool in request.tools or ():
        name = tool.get("name")
        fn = tool.get("function")
        if not isinstance(name, str) and isinstance(fn, Mapping):
            name = fn.get("name")
        if isinstance(name, str):
            names.append(name)
    return tuple(sorted(names))


def tool_defs(request: Request) -> tuple[tuple[str, str], ...]:
    """(name, canonical JSON) of each offered tool, sorted by name: two requests
    offer the same tool only when the whole definition (schema included) is equal."""
    out = []
    for tool in request.tools or ():
        fn = tool.get("function") if isinstance(tool.get("function"), Mapping) else tool
        assert isinstance(fn, Mapping)
        out.append((str(fn.get("name", "")), json.dumps(tool, sort_keys=True, default=str)))
    return tuple(sorted(out))


def _schema_words(node: Any, key: str = "", out: set[str] | None = None) -> set[str]:
    """Words of a tool definition a request can name: the tool's name and
    description, parameter names, their descriptions and enum values."""
    out = set() if out is None else out
    if isinstance(node, Mapping):
        for k, v in node.items():
            if key == "properties":
                out.update(re.split(r"[_\W]+", str(k).lower()))
            _schema_words(v, str(k), out)
    elif isinstance(node, list):
        for v in node:
            _schema_words(v, key, out)
    elif isinstance(node, str) and key in ("name", "description", "enum"):
        out.update(re.findall(r"[^\W\d_]+", node.lower()))
    return out


_TOOL_VOCAB: dict[str, frozenset[str]] = {}


def _tool_vocab(fn: Mapping[str, Any]) -> frozenset[str]:
    """Stemmed content words of one tool definition, memoised by its JSON (a cache
    sees the same few tool sets over and over)."""
    key = json.dumps(fn, sort_keys=True, default=str)
    vocab = _TOOL_VOCAB.get(key)
    if vocab is None:
        vocab = frozenset(stem(w) for w in _schema_words(fn) if w and w not in FILLER)
        if len(_TOOL_VOCAB) >= 4096:
            _TOOL_VOCAB.clear()
        _TOOL_VOCAB[key] = vocab
    return vocab


def tool_intent(request: Request, content: Sequence[str]) -> str:
    """The offered tool the query most plausibly calls: the one whose definition
    (name, description, parameter names and descriptions, enum values) shares most
    content words with the query ("" when none shares any; ties go to the first
    name). Units and currencies count by name ("u:minute" as "minute")."""
    if not request.tools:
        return ""
    words = {w.rpartition(":")[2] for w in content if w not in WH_WORDS}
    best, best_score = "", 0
    scored = []
    for tool in request.tools:
        fn = tool.get("function") if isinstance(tool.get("function"), Mapping) else tool
        assert isinstance(fn, Mapping)
        scored.append((str(fn.get("name", "")), len(words & _tool_vocab(fn))))
    for name, score in sorted(scored):
        if score > best_score:
            best, best_score = name, score
    return best


def _turn_text(request: Request) -> str:
    """The contents of the prior turns, one per line (roles left out: they are the
    same on both sides of any comparison that matters)."""
    return "\n".join(str(t.get("content", "")) for t in request.context or ())


def context_only(request: Request) -> str:
    """The prior turns alone, one ``role: content`` line each."""
    return "\n".join(f"{t.get('role', '')}: {t.get('content', '')}" for t in request.context or ())
