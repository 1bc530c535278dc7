"""Bearer tokens of submitters: created once, shown once, stored hashed.

A token is ``cet_`` + 43 URL-safe characters (32 random bytes from
:mod:`secrets`). The store keeps only ``sha256(token)`` as hex. A plain hash
suffices (no salt, no slow KDF) because the token carries 256 bits of
randomness: there is no dictionary to attack, and an index on the hash gives
O(1) lookup without ever comparing secrets in Python.
"""

from __future__ import annotations

import hashlib
import re
import secrets

TOKEN_PREFIX = "cet_"
#: 32 random bytes -> 43 base64url characters.
TOKEN_BYTES = 32
_TOKEN = re.compile(r"\Acet_[A-Za-z0-9_-]{43}\Z")
_BEARER = re.compile(r"\A\s*Bearer\s+(\S+)\s*\Z", re.IGNORECASE)


def new_token() -> str:
    """A fresh random token."""
    return TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)


def hash_token(token: str) -> str:
    """Hex ``sha256`` of the token's UTF-8 bytes (what the store keeps)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def is_well_formed(token: str) -> bool:
    """True when ``token`` has the shape :func:`new_token` gives (no lookup needed
    to reject anything else)."""
    return bool(_TOKEN.match(token))


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header value, or None."""
    if not authorization:
        return None
    m = _BEARER.match(authorization)
    return m.group(1) if m else None
