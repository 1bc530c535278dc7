"""A set of row ids in about one bit per id, for duplicate checks over files
of millions of rows.

Benchmark ids are ``cb-<domain>-<number>`` with the number written in its
canonical form (four digits zero-padded below 10,000, no leading zero above).
Such an id is stored as one bit in a per-domain bit array indexed by the
number; any other string (an id of another shape, or a number too large for a
bit array) goes into an ordinary set. One million ids of one domain take
125 kB instead of the ~100 MB a ``set`` of strings takes.

>>> ids = IdSet()
>>> ids.add("cb-math-0001"), ids.add("cb-math-0001"), ids.add("other")
(True, False, True)
>>> "cb-math-0001" in ids, "cb-math-0002" in ids, "other" in ids, len(ids)
(True, False, True, 2)
"""

from __future__ import annotations

import re

_ID = re.compile(r"\Acb-([a-z_]+)-(0[0-9]{3}|[1-9][0-9]{3,8})\Z")
#: Numbers at or above this go to the plain set (a bit array stays <= 16 MB).
MAX_BIT_INDEX = 1 << 27


class IdSet:
    """A set of strings, compact for canonical benchmark ids (module docstring)."""

    __slots__ = ("_bits", "_other", "_n")

    def __init__(self) -> None:
        self._bits: dict[str, bytearray] = {}
        self._other: set[str] = set()
        self._n = 0

    def _slot(self, value: str) -> tuple[str, int] | None:
        m = _ID.match(value)
        if m is None:
            return None
        number = int(m.group(2))
        return (m.group(1), number) if number < MAX_BIT_INDEX else None

    def add(self, value: str) -> bool:
        """Add ``value``; True when it was not in the set yet."""
        slot = self._slot(value)
        if slot is None:
            if value in self._other:
                return False
            self._other.add(value)
            self._n += 1
            return True
        domain, number = slot
        bits = self._bits.get(domain)
        byte, mask = number >> 3, 1 << (number & 7)
        if bits is None:
            bits = self._bits[domain] = bytearray()
        if byte >= len(bits):
            bits.extend(bytes(max(byte + 1 - len(bits), len(bits))))  # grow geometrically
        if bits[byte] & mask:
            return False
        bits[byte] |= mask
        self._n += 1
        return True

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, str):
            return False
        slot = self._slot(value)
        if slot is None:
            return value in self._other
        domain, number = slot
        bits = self._bits.get(domain)
        byte = number >> 3
        return bits is not None and byte < len(bits) and bool(bits[byte] & (1 << (number & 7)))

    def __len__(self) -> int:
        return self._n
