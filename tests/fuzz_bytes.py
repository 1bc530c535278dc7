"""Hypothesis strategies for hostile file and upload bytes: random bytes, and
valid samples with hostile fragments spliced in (deep brackets, broken UTF-8,
lone surrogate escapes, byte order marks, huge numbers, stray quotes)."""

from __future__ import annotations

import json

from hypothesis import strategies as st

#: Fragments that have broken a parser somewhere.
HOSTILE: tuple[bytes, ...] = (
    b"[" * 200,
    b"{" * 150,
    b"]}",
    b'"',
    b'\\"',
    b"\\ud800",
    b"\\udfff\\ud800",
    b"\xff",
    b"\xc3(",
    b"\xed\xa0\x80",  # a surrogate encoded as UTF-8 (invalid)
    b"\xef\xbb\xbf",
    b"9" * 5000,
    b"9" * 400,
    b"1e999",
    b"-0.0",
    b"NaN",
    b"Infinity",
    b"\x00",
    b"\x1b[31m",
    b"\r\n",
    b"\n",
    b"\r",
    b",",
    b"\t",
    b":",
    b"null",
    b"true",
    b'""',
    b'"\\u0000"',
    b"\xe2\x80\xa8",  # LINE SEPARATOR
)


def _splice(sample: bytes, edits: list[tuple[int, int, bytes]]) -> bytes:
    out = sample
    for pos, cut, fragment in edits:
        at = pos % (len(out) + 1)
        out = out[:at] + fragment + out[at + cut :]
    return out


def hostile_bytes(*samples: bytes) -> st.SearchStrategy[bytes]:
    """Random bytes, or one of ``samples`` with 1-4 hostile splices."""
    edit = st.tuples(
        st.integers(min_value=0, max_value=1 << 20),
        st.integers(min_value=0, max_value=8),
        st.one_of(st.sampled_from(HOSTILE), st.binary(min_size=1, max_size=6)),
    )
    spliced = st.builds(_splice, st.sampled_from(samples), st.lists(edit, min_size=1, max_size=4))
    return st.one_of(st.binary(max_size=600), spliced, st.sampled_from(samples))


#: Raw JSON texts of hostile values, for structure-aware fuzzing.
HOSTILE_VALUES: tuple[str, ...] = (
    "9" * 400,  # an int no float can hold
    "9" * 5000,  # an int Python refuses to parse
    "1e999",
    "-1e999",
    "NaN",
    "Infinity",
    '"\\ud800"',
    '"ok\\udc00"',
    '"\\ud83d\\ude00"',  # a valid pair: fine
    "[" * 2000 + "]" * 2000,
    '{"a": ' * 1100 + "1" + "}" * 1100,
    '"\\u0000\\u0007\\u001b[2J"',
    '"' + "x" * 300 + '"',
    '""',
    "null",
    "true",
    "0",
    "-0.5",
    "[]",
    "{}",
)
_SLOT = "\x00slot\x00"


def _set_field(records: list[dict[str, object]], pick: int, field: int, raw: str) -> bytes:
    records = [dict(r) for r in records]
    record = records[pick % len(records)]
    keys = list(record)
    record[keys[field % len(keys)]] = _SLOT
    text = "".join(json.dumps(r) + "\n" for r in records)
    return text.replace(json.dumps(_SLOT), raw, 1).encode("utf-8")


def hostile_records(records: list[dict[str, object]]) -> st.SearchStrategy[bytes]:
    """JSONL of ``records`` with one field replaced by a hostile JSON value."""
    return st.builds(
        _set_field,
        st.just(records),
        st.integers(min_value=0, max_value=10_000),
        st.integers(min_value=0, max_value=100),
        st.sampled_from(HOSTILE_VALUES),
    )
