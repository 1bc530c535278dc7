"""The plain-data protocol between the driver and a cache process.

A cache under test runs in its own process (:mod:`cacheeval.run.child`); the
driver, which holds the labels, never unpickles anything it sends. Messages
are JSON arrays, one per line (UTF-8, no NaN or infinities), and every value
that comes back is checked here before it becomes a
:class:`~cacheeval.results.predictions.Prediction`: booleans are booleans,
numbers are finite and in range, strings are short and printable, tiers come
from a fixed shape and are never one the harness reserves.

The same checks make a verdict plain in this process too
(:func:`plain_verdict`): each field of a :class:`~cacheeval.schema.Verdict`
is read once, through the base class's slots, and checked as the exact
built-in type, so a subclass whose property or ``__float__`` changes its
answer cannot pass the check and then score as something else.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from ..schema import FAILED_TIERS, MAX_ERROR_CHARS, MAX_LATENCY_MS, Verdict, tier_problem

#: Longest cache name or reference the driver accepts.
MAX_NAME_CHARS = 200
#: Longest line a cache process may send (a block's results come one per line).
MAX_LINE_BYTES = 1 << 20
#: Most tiers a price table may list.
MAX_PRICED_TIERS = 64

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class WireError(ValueError):
    """A message from a cache process that is not what the protocol allows."""


def encode(message: Any) -> bytes:
    """One protocol line.

    >>> encode(["r", 3, [True, 0.9, None, "exact", 0.01, None]])
    b'["r",3,[true,0.9,null,"exact",0.01,null]]\\n'
    """
    return (
        json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode(
            "utf-8"
        )
        + b"\n"
    )


def _no_constant(name: str) -> Any:
    raise WireError(f"{name} is not allowed")


def decode(line: bytes) -> list[Any]:
    """A protocol line as a JSON array; WireError when it is not one.

    >>> decode(b'["ready", {}]\\n')
    ['ready', {}]
    >>> decode(b'[NaN]')
    Traceback (most recent call last):
    ...
    cacheeval.run.wire.WireError: NaN is not allowed
    """
    if len(line) > MAX_LINE_BYTES:
        raise WireError(f"a line of {len(line)} bytes (limit {MAX_LINE_BYTES})")
    try:
        value = json.loads(line.decode("utf-8"), parse_constant=_no_constant)
    except WireError:
        raise
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise WireError(f"not a JSON line: {type(e).__name__}") from None
    if not isinstance(value, list) or not value or not isinstance(value[0], str):
        raise WireError("not a message (a JSON array led by its kind)")
    return value


def clean_text(value: Any, limit: int, what: str) -> str:
    """``value`` as printable text of at most ``limit`` characters: control
    characters (ANSI escapes among them) become spaces; WireError if not a str.

    >>> clean_text("bad\\x1b[31m red", 20, "name"), clean_text("x" * 50, 9, "name")
    ('bad [31m red', 'xxxxxx...')
    """
    if type(value) is not str:
        raise WireError(f"{what} is {type(value).__name__}, not str")
    text = _CONTROL.sub(" ", value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _number(value: Any) -> float | None:
    """A finite int or float of exactly those types (never bool or a subclass)."""
    if type(value) not in (int, float):
        return None
    x = float(value)
    return x if math.isfinite(x) else None


#: The base class's slot descriptors: reading through them skips any property
#: a subclass puts over a field.
_FIELDS = {name: Verdict.__dict__[name] for name in ("is_hit", "confidence", "tier_used", "score")}


def plain_verdict(value: Any) -> tuple[bool, float, float | None, str] | str:
    """``(is_hit, confidence, score, tier_used)`` as plain built-in values, or
    the problem that makes ``value`` unusable.

    >>> plain_verdict(Verdict(is_hit=True, confidence=1, tier_used="exact", score=0.5))
    (True, 1.0, 0.5, 'exact')
    >>> class Float(float):
    ...     def __float__(self): return 7.5
    >>> plain_verdict(Verdict(is_hit=True, confidence=Float(0.5), tier_used="exact"))
    'confidence is Float, not a number'
    """
    if not isinstance(value, Verdict):
        return f"returned {type(value).__name__}, not Verdict"
    try:
        raw = {name: slot.__get__(value, Verdict) for name, slot in _FIELDS.items()}
    except Exception as e:  # a slot left unset by a hostile __init__
        return f"the verdict could not be read: {type(e).__name__}"
    problems = []
    if type(raw["is_hit"]) is not bool:
        problems.append(f"is_hit is {type(raw['is_hit']).__name__}, not bool")
    confidence = _number(raw["confidence"])
    if confidence is None:
        if type(raw["confidence"]) in (int, float):
            shown = "NaN" if math.isnan(raw["confidence"]) else repr(raw["confidence"])
            problems.append(f"confidence is {shown}")
        else:
            problems.append(f"confidence is {type(raw['confidence']).__name__}, not a number")
    elif not 0.0 <= confidence <= 1.0:
        problems.append(f"confidence {confidence!r} is outside [0, 1]")
    score = None
    if raw["score"] is not None:
        score = _number(raw["score"])
        if score is None:
            if type(raw["score"]) in (int, float):
                problems.append(f"score is {raw['score']!r}")
            else:
                problems.append(f"score is {type(raw['score']).__name__}, not a number")
    tier = tier_problem(raw["tier_used"])
    if tier is not None:
        problems.append(tier)
    if problems:
        return "; ".join(problems)
    assert confidence is not None
    return raw["is_hit"], confidence, score, raw["tier_used"]


#: A prediction as plain values: is_hit, confidence, score, tier_used, latency_ms, error.
Result = tuple[bool, float | None, float | None, str, float | None, str | None]


def checked_result(raw: Any) -> Result:
    """A prediction result from a cache process, checked:
    ``(is_hit, confidence, score, tier_used, latency_ms, error)``.

    A decided call has no error, a usable tier and a confidence; a failed one
    is a MISS with tier ``error`` or ``timeout`` and a message. WireError
    otherwise.

    >>> checked_result([True, 0.9, 0.8, "exact", 0.2, None])
    (True, 0.9, 0.8, 'exact', 0.2, None)
    >>> checked_result([False, None, None, "timeout", 200.0, "Timeout: over 200 ms"])
    (False, None, None, 'timeout', 200.0, 'Timeout: over 200 ms')
    >>> checked_result([True, 0.9, 1e400, "exact", 0.2, None])
    Traceback (most recent call last):
    ...
    cacheeval.run.wire.WireError: score is not a finite number
    """
    if type(raw) is not list or len(raw) != 6:
        raise WireError("a result is a list of 6 values")
    is_hit, confidence, score, tier, latency, error = raw
    if type(is_hit) is not bool:
        raise WireError("is_hit is not a bool")
    latency_ms = None
    if latency is not None:
        latency_ms = _number(latency)
        if latency_ms is None or not 0.0 <= latency_ms <= MAX_LATENCY_MS:
            raise WireError("latency_ms is not a number of ms in range")
    if error is not None:
        if is_hit or confidence is not None or score is not None or tier not in FAILED_TIERS:
            raise WireError("a failed call is a MISS with tier error or timeout and no scores")
        return False, None, None, tier, latency_ms, clean_text(error, MAX_ERROR_CHARS, "error")
    conf = _number(confidence)
    if conf is None or not 0.0 <= conf <= 1.0:
        raise WireError("confidence is not a number in [0, 1]")
    if score is not None and _number(score) is None:
        raise WireError("score is not a finite number")
    problem = tier_problem(tier)
    if problem is not None:
        raise WireError(problem)
    return is_hit, conf, None if score is None else float(score), tier, latency_ms, None


def checked_meta(raw: Any) -> dict[str, Any]:
    """What a cache process says about its cache once built, checked.

    >>> checked_meta({"name": "x", "ref": "m:X", "cost_per_call_usd": {"exact": 0},
    ...               "price_error": None, "has_prepare": False})["cost_per_call_usd"]
    {'exact': 0.0}
    """
    if not isinstance(raw, Mapping):
        raise WireError("the cache's description is not an object")
    prices = raw.get("cost_per_call_usd")
    if not isinstance(prices, Mapping) or len(prices) > MAX_PRICED_TIERS:
        raise WireError(f"cost_per_call_usd is not a table of at most {MAX_PRICED_TIERS} tiers")
    table: dict[str, float] = {}
    for tier, price in prices.items():
        usd = _number(price)
        if tier_problem(tier) is not None or usd is None or usd < 0:
            raise WireError("cost_per_call_usd maps tier names to finite prices >= 0")
        table[tier] = usd
    price_error = raw.get("price_error")
    if type(raw.get("has_prepare")) is not bool:
        raise WireError("has_prepare is not a bool")
    out = dict(raw)
    out.update(
        name=clean_text(raw.get("name"), MAX_NAME_CHARS, "name"),
        ref=clean_text(raw.get("ref"), MAX_NAME_CHARS, "ref"),
        version=clean_text(raw.get("version", "unknown"), MAX_NAME_CHARS, "version"),
        cost_per_call_usd=table,
        price_error=None
        if price_error is None
        else clean_text(price_error, MAX_ERROR_CHARS, "price_error"),
    )
    return out


def prepare_ms(raw: Any) -> float:
    """The wall time of ``prepare`` a worker reports, checked: a number of ms
    from 0 to :data:`PREPARE_MS_MAX`.

    >>> prepare_ms(12.5)
    12.5
    >>> prepare_ms(-1)
    Traceback (most recent call last):
    ...
    cacheeval.run.wire.WireError: prepare time is not a number of ms in range
    """
    ms = _number(raw)
    if ms is None or not 0.0 <= ms <= PREPARE_MS_MAX:
        raise WireError("prepare time is not a number of ms in range")
    return ms


#: The longest ``prepare`` a worker may report: a day, in ms.
PREPARE_MS_MAX = 86_400_000.0
