"""Several caches in one ``eval`` or ``external`` call: the options that name
them and the ``--caches`` TOML file.

On the command line, ``--baseline`` and ``--cache-module`` may be repeated;
``--cache-class``, ``--cache-arg`` and ``--cache-name`` belong to the cache
named last before them (those given before the first cache belong to the
first, so one cache per call reads exactly as it always did)::

    cacheeval eval --bench cachebench.jsonl --split dev \\
        --baseline exact_match \\
        --cache-module adapters.cosine_baseline --cache-class MiniLMCosine \\
            --cache-arg threshold=0.8 --cache-name "cosine 0.80" \\
        --out compare.md

``--caches FILE`` lists caches in TOML, one table per cache, its key the
name shown in the reports (``tomllib``, standard library)::

    [exact]
    baseline = "exact_match"

    ["cosine 0.80"]
    module = "adapters.cosine_baseline"   # dotted module or path to a .py file
    class = "MiniLMCosine"                # optional
    args = { threshold = 0.8 }            # optional constructor arguments
    keyed = true                          # optional: behind --keyed's key

A problem in the file is one line ``path:LINE: what is wrong`` (exit 2).
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._running import UsageError

#: Where the parsed command line keeps the caches it names, in order.
ENTRIES = "_cache_entries"
#: The keys a table of a ``--caches`` file may have.
TOML_KEYS = ("baseline", "module", "class", "args", "keyed")


@dataclass(slots=True)
class CacheEntry:
    """One cache as the command line or a ``--caches`` table names it."""

    baseline: str | None = None
    cache_module: str | None = None
    cache_class: str | None = None
    cache_args: list[str] = field(default_factory=list)
    cache_name: str | None = None
    keyed: bool = False
    #: Where it was named (``path:LINE`` for a TOML table), for messages.
    origin: str = "the command line"

    @property
    def named(self) -> bool:
        return self.baseline is not None or self.cache_module is not None

    def label(self) -> str:
        """A name known before the cache is built (files are named after it)."""
        if self.cache_name:
            return self.cache_name
        if self.baseline:
            return self.baseline
        module = self.cache_module or "cache"
        stem = Path(module).stem if module.endswith(".py") else module.rsplit(".", 1)[-1]
        return self.cache_class or stem


def _entries(ns: argparse.Namespace) -> list[CacheEntry]:
    found = getattr(ns, ENTRIES, None)
    if found is None:
        found = []
        setattr(ns, ENTRIES, found)
    return found


class StartCache(argparse.Action):
    """``--baseline`` / ``--cache-module``: a new cache (or the first one,
    when its options came before it)."""

    def __call__(
        self, parser: argparse.ArgumentParser, ns: argparse.Namespace, value: Any,
        option_string: str | None = None,
    ) -> None:  # fmt: skip
        entries = _entries(ns)
        entry = entries[-1] if entries and not entries[-1].named else None
        if entry is None:
            entry = CacheEntry()
            entries.append(entry)
        setattr(entry, self.dest, value)
        setattr(ns, self.dest, value)


class CacheOption(argparse.Action):
    """``--cache-class``, ``--cache-arg``, ``--cache-name``: an option of the
    cache named last (of the first, before any is named)."""

    def __call__(
        self, parser: argparse.ArgumentParser, ns: argparse.Namespace, value: Any,
        option_string: str | None = None,
    ) -> None:  # fmt: skip
        entries = _entries(ns)
        if not entries:
            entries.append(CacheEntry())
        entry = entries[-1]
        if self.dest == "cache_args":
            entry.cache_args.append(value)
            ns.cache_args = [*(getattr(ns, "cache_args", None) or []), value]
            return
        if getattr(entry, self.dest) is not None:
            parser.error(f"{option_string} given twice for one cache")
        setattr(entry, self.dest, value)
        setattr(ns, self.dest, value)


def add_several_arguments(
    parser: argparse.ArgumentParser, baselines: Sequence[str], module_help: str
) -> None:
    """The cache options of a command that takes several caches."""
    g = parser.add_argument_group(
        "the caches (repeat --baseline/--cache-module for several; --cache-class, --cache-arg "
        "and --cache-name belong to the cache named before them)"
    )
    g.add_argument("--baseline", action=StartCache, choices=baselines, help="a reference cache")
    g.add_argument("--cache-module", action=StartCache, metavar="MOD", help=module_help)
    g.add_argument("--cache-class", action=CacheOption, metavar="CLS",
                   help="class in the module to instantiate")  # fmt: skip
    g.add_argument(
        "--cache-arg",
        dest="cache_args",
        action=CacheOption,
        metavar="KEY=VALUE",
        help="constructor argument (VALUE parsed as JSON when it parses, else a string)",
    )
    g.add_argument("--cache-name", action=CacheOption, help="name shown in the reports")
    g.add_argument(
        "--caches",
        type=Path,
        metavar="FILE",
        help="a TOML file listing caches, one table each, named by its key (keys: "
        + ", ".join(TOML_KEYS)
        + ")",
    )
    parser.set_defaults(baseline=None, cache_module=None, cache_class=None, cache_args=[],
                        cache_name=None, caches=None)  # fmt: skip


# --- the TOML file ------------------------------------------------------------------------

_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")


def _header_line(lines: Sequence[str], name: str) -> int:
    """The line (1-based) of the table header naming ``name``; 1 if not found."""
    for i, line in enumerate(lines, 1):
        head = line.strip()
        if head.startswith("[") and not head.startswith("[["):
            inner = head[1 : head.find("]")].strip() if "]" in head else ""
            if inner.strip("\"'") == name:
                return i
    return 1


def _key_line(lines: Sequence[str], start: int, key: str) -> int:
    """The line of ``key = ...`` in the table whose header is on line ``start``
    (0: the keys before any table); ``start`` when it is not found."""
    for i in range(start, len(lines)):
        if lines[i].lstrip().startswith("["):
            break
        if re.match(rf"\s*[\"']?{re.escape(key)}[\"']?\s*=", lines[i]):
            return i + 1
    return max(start, 1)


def read_caches_file(path: Path) -> list[CacheEntry]:
    """The caches a ``--caches`` file lists, in file order; a problem is a
    :class:`UsageError` ``path:LINE: what is wrong``."""
    import tomllib

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except UnicodeDecodeError as e:
        raise UsageError(f"{path}:1: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise UsageError(f"{path}: {e.strerror or type(e).__name__}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        message = str(e)
        at = _AT.search(message)
        line = at.group(1) if at else "1"
        where = f" (column {at.group(2)})" if at else ""
        raise UsageError(f"{path}:{line}: not TOML: {_AT.sub('', message)}{where}") from None
    lines = text.splitlines()
    out = []
    for name, table in data.items():
        start = _header_line(lines, name)
        if not isinstance(table, dict):
            raise UsageError(
                f"{path}:{_key_line(lines, 0, name)}: {name!r} is not a table: write each "
                f"cache as [name] with baseline = ... or module = ..."
            )
        out.append(_entry_of(path, lines, name, table, start))
    if not out:
        raise UsageError(f"{path}:1: no caches: write one [name] table per cache")
    return out


def _entry_of(
    path: Path, lines: Sequence[str], name: str, table: dict[str, Any], start: int
) -> CacheEntry:
    def bad(key: str | None, what: str) -> UsageError:
        line = start if key is None else _key_line(lines, start, key)
        return UsageError(f"{path}:{line}: [{name}]: {what}")

    unknown = [k for k in table if k not in TOML_KEYS]
    if unknown:
        raise bad(unknown[0], f"unknown key {unknown[0]!r} (expected {', '.join(TOML_KEYS)})")
    if ("baseline" in table) == ("module" in table):
        raise bad(None, "give exactly one of baseline = ... and module = ...")
    for key in ("baseline", "module", "class"):
        if key in table and not (isinstance(table[key], str) and table[key]):
            raise bad(key, f"{key} must be a non-empty string")
    args = table.get("args", {})
    if not isinstance(args, dict):
        raise bad("args", "args must be a table, e.g. args = { threshold = 0.8 }")
    if "baseline" in table and (args or "class" in table):
        raise bad("args" if args else "class", "class and args apply to a module, not a baseline")
    keyed = table.get("keyed", False)
    if not isinstance(keyed, bool):
        raise bad("keyed", "keyed must be true or false")
    if not name.strip():
        raise bad(None, "the table's name (the cache's name) is empty")
    try:
        items = [f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items()]
    except (TypeError, ValueError):
        raise bad(
            "args", "args values must be strings, numbers, booleans, arrays or tables"
        ) from None
    return CacheEntry(
        baseline=table.get("baseline"),
        cache_module=table.get("module"),
        cache_class=table.get("class"),
        cache_args=items,
        cache_name=name,
        keyed=keyed,
        origin=f"{path}:{start}",
    )


# --- from the options to one Namespace per cache ------------------------------------------


def cache_choices(args: argparse.Namespace) -> list[argparse.Namespace]:
    """One copy of ``args`` per cache named (command line first, then the
    ``--caches`` file), each with ``baseline``, ``cache_module``,
    ``cache_class``, ``cache_args``, ``cache_name`` and ``keyed`` of its own,
    as a one-cache command reads them."""
    entries = list(getattr(args, ENTRIES, None) or [])
    for entry in entries:
        if not entry.named:
            raise UsageError(
                "--cache-class/--cache-arg/--cache-name given, but no --baseline or "
                "--cache-module for them to belong to"
            )
    if args.caches is not None:
        entries += read_caches_file(args.caches)
    if not entries:
        raise UsageError("name a cache: --baseline, --cache-module or --caches FILE")
    out = []
    for entry in entries:
        ns = argparse.Namespace(**vars(args))
        ns.baseline, ns.cache_module = entry.baseline, entry.cache_module
        ns.cache_class, ns.cache_args = entry.cache_class, list(entry.cache_args)
        ns.cache_name = entry.cache_name
        ns.keyed = bool(getattr(args, "keyed", False)) or entry.keyed
        ns.cache_label = entry.label()
        ns.cache_origin = entry.origin
        out.append(ns)
    return out


def file_slugs(labels: Sequence[str]) -> list[str]:
    """A distinct file-name-safe slug per cache label (``-2``, ``-3`` ... on repeats).

    >>> file_slugs(["exact_match", "cosine 0.80", "cosine 0.80"])
    ['exact_match', 'cosine-0.80', 'cosine-0.80-2']
    """
    from ..reporting.plotdata import slug

    out: list[str] = []
    for label in labels:
        base = slug(label)
        candidate, k = base, 1
        while candidate in out:
            k += 1
            candidate = f"{base}-{k}"
        out.append(candidate)
    return out


def beside(path: Path | None, tag: str) -> Path | None:
    """``path`` with ``.tag`` before its suffix: ``cmp.md`` -> ``cmp.exact_match.md``.

    >>> beside(Path("out/cmp.md"), "exact_match").as_posix()
    'out/cmp.exact_match.md'
    """
    if path is None:
        return None
    return path.with_name(f"{path.stem}.{tag}{path.suffix}")


def distinct_names(names: Sequence[str]) -> list[str]:
    """The names, a repeat marked `` #2``, `` #3`` ...

    >>> distinct_names(["a", "b", "a"])
    ['a', 'b', 'a #2']
    """
    out: list[str] = []
    for name in names:
        candidate, k = name, 1
        while candidate in out:
            k += 1
            candidate = f"{name} #{k}"
        out.append(candidate)
    return out
