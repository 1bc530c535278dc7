"""The JSON Schema (draft 2020-12) of a benchmark row, generated from :mod:`cacheeval.schema`.

``cacheeval/schemas/row.schema.json`` is the committed output of
:func:`row_schema`; ``python -m cacheeval.pipeline.rowschema`` rewrites it and a
test fails when the two drift apart. The schema states what
:func:`cacheeval.dataset.row_problem` checks, as data other tools can read:

* ``#/$defs/labelled_row``: a row of any split carrying its label.
* ``#/$defs/hidden_test_row``: the public form of a test row, every field of
  :data:`~cacheeval.schema.HIDDEN_TEST_FIELDS` null.
* ``#/$defs/shard_row``: a labelled row as a domain shard holds it (no ``split``).
* the root: ``oneOf`` the first two, i.e. any line of ``cachebench.jsonl``.

Cross-field rules are ``if``/``then`` pairs: the id names the row's domain
(``cb-<domain>-NNNN``) and ``binary_label`` follows
:func:`~cacheeval.schema.derive_binary_label` (policy_no_cache -> MISS, else
EQUIV/PARA_SAFE -> HIT, else MISS).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..schema import (
    BINARY_LABELS,
    DIFFICULTIES,
    DOMAINS,
    HIDDEN_TEST_FIELDS,
    HIT,
    HIT_LABELS,
    LABELS,
    MISS,
    POLICY_NO_CACHE,
    ROW_FIELDS,
    SCHEMA_VERSION,
    SPLITS,
    VERIFICATION_METHODS,
)
from ..support.jsonio import dumps_pretty, write_bytes_atomic

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "schemas" / "row.schema.json"

# ASCII digits only: Python's \d also matches other scripts' digits.
#: Four digits zero-padded, or more without a leading zero (see cacheeval.dataset.ID_PATTERN).
ID_NUMBER = "(0[0-9]{3}|[1-9][0-9]{3,})"
ID_REGEX = f"^cb-[a-z_]+-{ID_NUMBER}$"

_NON_EMPTY = {"type": "string", "minLength": 1}
_OPT_STR = {"type": ["string", "null"]}

#: Fields row_problem requires to be non-empty strings on every row (id, domain
#: and split are non-empty through their pattern or enum).
_REQUIRED_STR = ("query_a", "query_b")


def _ordered(pred: frozenset[str], universe: Sequence[str]) -> list[str]:
    # Never iterate a frozenset into output: take the order of the tuple.
    return [x for x in universe if x in pred]


def _defs() -> dict[str, Any]:
    turn = {
        "type": "object",
        "required": ["role", "content"],
        "properties": {"role": {"type": "string"}, "content": {"type": "string"}},
    }
    return {
        "id": {"type": "string", "pattern": ID_REGEX},
        "domain": {"enum": list(DOMAINS)},
        "split": {"enum": list(SPLITS)},
        "label": {"enum": list(LABELS)},
        "binary_label": {"enum": list(BINARY_LABELS)},
        "difficulty": {"enum": list(DIFFICULTIES)},
        "verification_method": {"enum": list(VERIFICATION_METHODS)},
        "context": {
            "description": "Prior turns of the conversation, oldest first, or null.",
            "type": ["array", "null"],
            "items": turn,
        },
        "tools": {
            "description": "JSON-schema tool definitions offered with the request, or null.",
            "type": ["array", "null"],
            "items": {"type": "object"},
        },
        "payload": {
            "description": "Checker input; its 'kind' selects the checker (cacheeval.verify).",
            "type": ["object", "null"],
        },
    }


def _field_schemas(*, hidden: bool) -> dict[str, Any]:
    """Per-field schemas of a labelled row, or of a public hidden test row."""
    ref = {name: {"$ref": f"#/$defs/{name}"} for name in _defs()}
    props: dict[str, Any] = {}
    for f in ROW_FIELDS:
        if hidden and f in HIDDEN_TEST_FIELDS:
            props[f] = {"type": "null"}
        elif f == "id":
            props[f] = ref["id"]
        elif f in ("domain", "label", "binary_label", "difficulty", "verification_method"):
            props[f] = ref[f]
        elif f == "split":
            props[f] = {"const": "test"} if hidden else ref["split"]
        elif f in ("context_a", "context_b"):
            props[f] = ref["context"]
        elif f in ("tools_a", "tools_b"):
            props[f] = ref["tools"]
        elif f == "verification_payload":
            props[f] = ref["payload"]
        elif f in _REQUIRED_STR:
            props[f] = dict(_NON_EMPTY)
        else:
            props[f] = dict(_OPT_STR)
    return props


def _id_matches_domain() -> list[dict[str, Any]]:
    return [
        {
            "if": {"required": ["domain"], "properties": {"domain": {"const": d}}},
            "then": {"properties": {"id": {"pattern": f"^cb-{d}-{ID_NUMBER}$"}}},
        }
        for d in DOMAINS
    ]


def _binary_rule() -> list[dict[str, Any]]:
    """derive_binary_label as three if/then rules."""
    not_policy = {"not": {"const": POLICY_NO_CACHE}}
    return [
        {
            "if": {
                "required": ["verification_method"],
                "properties": {"verification_method": {"const": POLICY_NO_CACHE}},
            },
            "then": {"properties": {"binary_label": {"const": MISS}}},
        },
        {
            "if": {
                "required": ["verification_method", "label"],
                "properties": {
                    "verification_method": not_policy,
                    "label": {"enum": _ordered(HIT_LABELS, LABELS)},
                },
            },
            "then": {"properties": {"binary_label": {"const": HIT}}},
        },
        {
            "if": {
                "required": ["verification_method", "label"],
                "properties": {
                    "verification_method": not_policy,
                    "label": {"enum": [lab for lab in LABELS if lab not in HIT_LABELS]},
                },
            },
            "then": {"properties": {"binary_label": {"const": MISS}}},
        },
    ]


def _object(props: dict[str, Any], description: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "description": description,
        "type": "object",
        "required": list(props),
        "additionalProperties": False,
        "properties": props,
        "allOf": rules,
    }


def row_schema() -> dict[str, Any]:
    """The row schema as a dict (the content of ``row.schema.json``)."""
    labelled = _field_schemas(hidden=False)
    hidden = _field_schemas(hidden=True)
    shard = {f: s for f, s in labelled.items() if f != "split"}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"urn:cacheeval:row:{SCHEMA_VERSION}",
        "title": "CacheEval row",
        "description": (
            "One line of cachebench.jsonl: a labelled row, or the public form of a "
            "test row whose withheld fields are null. Generated by "
            "cacheeval.pipeline.rowschema from cacheeval/schema.py; do not edit by hand."
        ),
        "oneOf": [{"$ref": "#/$defs/labelled_row"}, {"$ref": "#/$defs/hidden_test_row"}],
        "$defs": {
            **_defs(),
            "labelled_row": _object(
                labelled,
                "A row carrying its label (train, dev, or a test row with the labels merged back).",
                _id_matches_domain() + _binary_rule(),
            ),
            "hidden_test_row": _object(
                hidden,
                "The public copy of a test row: the fields of HIDDEN_TEST_FIELDS are null.",
                _id_matches_domain(),
            ),
            "shard_row": _object(
                shard,
                "A row of a domain shard (domains/<domain>.jsonl): labelled, no split yet.",
                _id_matches_domain() + _binary_rule(),
            ),
        },
    }


def schema_text() -> str:
    """The canonical text of ``row.schema.json``."""
    return dumps_pretty(row_schema())


@lru_cache(maxsize=1)
def load_schema() -> dict[str, Any]:
    """The committed schema file, parsed."""
    with open(SCHEMA_PATH, encoding="utf-8") as f:
        data: dict[str, Any] = json.load(f)
    return data


def validator(definition: str | None = None) -> Any:
    """A jsonschema Draft 2020-12 validator for the root schema, or for
    ``#/$defs/<definition>`` (e.g. ``"shard_row"``)."""
    from jsonschema import Draft202012Validator  # build-time dependency, imported lazily

    schema = load_schema()
    if definition is not None:
        if definition not in schema["$defs"]:
            raise KeyError(f"row.schema.json has no $defs/{definition}")
        schema = {
            "$schema": schema["$schema"],
            "$defs": schema["$defs"],
            "$ref": f"#/$defs/{definition}",
        }
    return Draft202012Validator(schema)


def schema_errors(v: Any, instance: Any) -> list[str]:
    """Every schema violation of ``instance`` as ``"<field path>: <message>"``, sorted."""
    out = []
    for err in v.iter_errors(instance):
        where = "/".join(str(p) for p in err.absolute_path) or "(row)"
        out.append(f"{where}: {err.message}")
    return sorted(set(out))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cacheeval.pipeline.rowschema",
        description="Regenerate cacheeval/schemas/row.schema.json from cacheeval/schema.py.",
    )
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    args = parser.parse_args(argv)
    want = schema_text().encode("utf-8")
    have = SCHEMA_PATH.read_bytes() if SCHEMA_PATH.exists() else None
    if args.check:
        if have != want:
            print(
                f"{SCHEMA_PATH}: stale; run python -m cacheeval.pipeline.rowschema", file=sys.stderr
            )
            return 1
        return 0
    if have != want:
        write_bytes_atomic(SCHEMA_PATH, want)
        print(f"wrote {SCHEMA_PATH}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
