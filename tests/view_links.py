"""Checking a report's links to a per-pair page: each ``[N false hits](page#...)``
opens exactly N pairs of the page's own data, filtered as the address says
(the filters the page's script applies: domain, label, sub or a family
``sub=identity/``, what-differs kind, cache, outcome)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote

#: A link of a count to a page: (count text, page, address).
LINK = re.compile(r"\[([^\]]+)\]\(([^)#\s]+\.html)#([^)\s]+)\)")


def page_data(path: Path) -> dict[str, Any]:
    """The JSON a page embeds (``#viewer-data``)."""
    html = path.read_text(encoding="utf-8")
    found = re.search(
        r'<script type="application/json" id="viewer-data">(.*?)</script>', html, re.S
    )
    assert found, path
    data: dict[str, Any] = json.loads(found.group(1))
    return data


def count_on_page(data: dict[str, Any], address: str) -> int:
    """How many of the page's pairs the address selects (outcome of its cache)."""
    want = dict(parse_qsl(address))
    rows, strings = data["rows"], data["strings"]
    cache = next(c for c in data["caches"] if c["name"] == want["cache"])
    kinds = data["kinds"]
    n = 0
    for i in range(len(rows["id"])):
        sub = strings[rows["sub"][i]] if rows["sub"][i] >= 0 else None
        if "sub" in want:
            w = want["sub"]
            if sub is None or not (sub.startswith(w) if w.endswith("/") else sub == w):
                continue
        if "domain" in want and strings[rows["domain"][i]] != want["domain"]:
            continue
        if "label" in want and strings[rows["label"][i]] != want["label"]:
            continue
        if "kind" in want and kinds[rows["kind"][i]] != want["kind"]:
            continue
        dec, truth = cache["dec"][i], rows["bin"][i]
        if dec in "E-":
            outcome = "error"
        elif (dec == "H") != (truth == "H"):
            outcome = "false hit" if dec == "H" else "missed hit"
        else:
            outcome = "correct"
        n += outcome == want["outcome"]
    return n


def check_links(markdown: str, base: Path) -> int:
    """Assert every count link of ``markdown`` (a file in ``base``) opens that
    many pairs; the number of links checked."""
    pages: dict[str, dict[str, Any]] = {}
    checked = 0
    for text, page, address in LINK.findall(markdown):
        number = re.fullmatch(r"(\d+)(?: (?:false|missed) hits?)?", text)
        if number is None:  # a rate that links (the stress per-kind table): no count to check
            continue
        if page not in pages:
            pages[page] = page_data(base / unquote(page))
        assert count_on_page(pages[page], address) == int(number.group(1)), (page, address)
        checked += 1
    return checked
