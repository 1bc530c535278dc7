"""Reading domain shards: ``domains/<domain>.jsonl``, one per domain of
:data:`~cacheeval.schema.DOMAINS`, each row holding every field but ``split``.

A shard row keeps where it came from (path and line) so that every later
complaint can name ``path:LINE``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..schema import DOMAINS, Row
from ..support.jsonio import JsonlError, iter_jsonl

#: Placeholder ``split`` of a Row built from a shard row: shards carry no split
#: and no checker reads it.
UNASSIGNED = "unassigned"


@dataclass(frozen=True, slots=True)
class ShardRow:
    """One decoded line of a shard: ``data`` is whatever JSON the line held."""

    path: str
    line: int
    domain: str
    data: Any

    @property
    def where(self) -> str:
        """``path:LINE``."""
        return f"{self.path}:{self.line}"

    @property
    def row_id(self) -> str | None:
        """The row's id when it has a string one."""
        if isinstance(self.data, dict) and isinstance(self.data.get("id"), str):
            return self.data["id"]
        return None


def shard_path(shards_dir: str | os.PathLike[str], domain: str) -> Path:
    """Where the shard of ``domain`` lives."""
    return Path(shards_dir) / f"{domain}.jsonl"


def present_domains(shards_dir: str | os.PathLike[str]) -> list[str]:
    """Domains (in DOMAINS order) whose shard file exists."""
    return [d for d in DOMAINS if shard_path(shards_dir, d).is_file()]


def read_shard(
    path: str | os.PathLike[str], domain: str, *, display: str | None = None
) -> list[ShardRow]:
    """Every non-blank line of one shard. ``display`` is the path shown in
    messages (default: ``path`` as given). Raises JsonlError on a non-JSON line."""
    shown = display if display is not None else str(path)
    out: list[ShardRow] = []
    try:
        for lineno, data in iter_jsonl(path):
            out.append(ShardRow(shown, lineno, domain, data))
    except JsonlError as e:
        raise JsonlError(shown, e.line, e.reason) from None
    except UnicodeDecodeError as e:
        # Decoding is buffered, so the bad byte is at or after the next row.
        last = out[-1].line if out else 0
        raise JsonlError(shown, last + 1, f"not valid UTF-8 here or later ({e.reason})") from None
    return out


def read_shards(
    shards_dir: str | os.PathLike[str],
    domains: Iterable[str] | None = None,
    *,
    display_dir: str | None = None,
) -> dict[str, list[ShardRow]]:
    """The rows of every present shard (optionally only ``domains``), keyed by
    domain in DOMAINS order. ``display_dir`` replaces ``shards_dir`` in messages."""
    wanted = set(DOMAINS if domains is None else domains)
    out: dict[str, list[ShardRow]] = {}
    for d in present_domains(shards_dir):
        if d not in wanted:
            continue
        display = f"{display_dir}/{d}.jsonl" if display_dir is not None else None
        out[d] = read_shard(shard_path(shards_dir, d), d, display=display)
    return out


def to_row(data: dict[str, Any], split: str = UNASSIGNED) -> Row:
    """A :class:`Row` from a shard row dict (which has no ``split``)."""
    return Row.from_dict({**data, "split": split})
