"""A stress row: one prompt and one edit, as an ordinary benchmark row."""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet
from json.encoder import encode_basestring
from typing import Any

from ...generators.common import difficulty_of_tokens, provisional_difficulty, token_set
from ...schema import DOMAINS, POLICY_NO_CACHE, ROW_FIELDS, derive_binary_label
from ...support.jsonio import dumps
from ...verify.never_cache import PolicyVerdict
from ...verify.perturbation import KINDS, family_of
from .edits import Edit, Prompt, memo_dict

#: ``construction_method`` of every stress row.
CONSTRUCTION_METHOD = "stress_perturbation"
#: ``verification_payload["kind"]`` of every stress row.
PAYLOAD_KIND = "perturbation"

_WORD = re.compile(r"[a-z]+")
_CODE_WORDS = frozenset(
    """python javascript typescript java rust golang sql regex function array list dict
    string bug error exception compile script api json css html git docker bash code
    variable loop class method library npm pip""".split()
)
_MATH_WORDS = frozenset(
    """solve equation integral derivative percent percentage probability average sum
    root factorial prime divisible calculate""".split()
)
_MATH_SIGNS = re.compile(r"\d\s*[-+*/^=x×]\s*\d|how many")
_TRANSLATE_WORDS = frozenset({"translate", "translation"})
_LANGUAGES = frozenset("french spanish german italian japanese portuguese".split())
_CHAT = re.compile(
    r"\b(?:i feel|i'm feeling|my (?:friend|partner|boss|mom|dad|wife|husband)|advice|should i)\b"
)


def guess_domain(prompt: Prompt, policy: PolicyVerdict) -> str:
    """The CacheEval domain a prompt most looks like (used for ids and per-domain
    tables only; it never decides a label).

    >>> from ...verify.never_cache import ALLOWED
    >>> guess_domain(Prompt("Fix this Python error", None, None, "p", 1), ALLOWED)
    'code'
    """
    if prompt.turns:
        return "multi_turn"
    if policy.rule == "creative":
        return "creative"
    if policy.rule == "personal_data":
        return "personalized"
    low = prompt.query.lower()
    words = set(_WORD.findall(low))
    if (
        words & _TRANSLATE_WORDS
        or "how do you say" in low
        or ("in" in words and words & _LANGUAGES)
    ):
        return "multilingual"
    if "`" in low or words & _CODE_WORDS:
        return "code"
    if words & _MATH_WORDS or _MATH_SIGNS.search(low):
        return "math"
    if _CHAT.search(low):
        return "conversational"
    return "qa_open"


def payload(edit: Edit, policy: PolicyVerdict) -> dict[str, Any]:
    """The verification payload (see :mod:`cacheeval.verify.perturbation`)."""
    return {
        "kind": PAYLOAD_KIND,
        "perturbation": edit.kind,
        "family": family_of(edit.kind),
        "field": edit.field,
        "turn": edit.turn,
        "edit": edit.inner,
        "start": edit.start,
        "end": edit.end,
        "original": edit.original,
        "replacement": edit.replacement,
        "policy": None if policy.allowed else {"rule": policy.rule, "reason": policy.reason},
    }


def _rationale(edit: Edit, policy: PolicyVerdict) -> str:
    family = family_of(edit.kind)
    if edit.field == "system_prompt":
        what = "The same request under another user's system prompt"
    elif edit.kind == "turns_other":
        what = "The same request after the prior turns of another conversation"
    elif edit.field == "context":
        what = (
            f"The same request after a prior turn with {edit.original!r} changed to "
            f"{edit.replacement!r} ({edit.inner})"
        )
    else:
        what = f"Side b changes {edit.original!r} to {edit.replacement!r} ({edit.kind})"
    effect = "keeps the answer" if family == "noise" else "changes the answer"
    text = f"{what}: a {family} edit that {effect}."
    if not policy.allowed:
        text += f" Side a is never cached ({policy.rule}: {policy.reason})."
    return text


def stress_row(
    prompt: Prompt, edit: Edit, policy: PolicyVerdict, row_id: str, domain: str, split: str
) -> dict[str, Any]:
    """The row for ``edit`` of ``prompt``, in file key order."""
    label = KINDS[edit.kind][1]
    method = "exact_match" if policy.allowed else POLICY_NO_CACHE
    binary = derive_binary_label(label, method)
    query_b = edit.apply(prompt.query) if edit.field == "query" else prompt.query
    system_b = edit.system_prompt_b if edit.field == "system_prompt" else prompt.system_prompt
    turns_b = edit.turns_b if edit.field == "context" else prompt.turns
    turns_a = [dict(t) for t in prompt.turns] if prompt.turns else None
    values = {
        "id": row_id,
        "domain": domain,
        "subcategory": edit.kind,
        "label": label,
        "binary_label": binary,
        "difficulty": provisional_difficulty(prompt.query, query_b, binary),
        "query_a": prompt.query,
        "query_b": query_b,
        "context_a": turns_a,
        "context_b": [dict(t) for t in turns_b] if turns_b else None,
        "system_prompt_a": prompt.system_prompt,
        "system_prompt_b": system_b,
        "tools_a": list(prompt.tools) if prompt.tools else None,
        "tools_b": list(prompt.tools) if prompt.tools else None,
        "expected_answer_a": None,
        "expected_answer_b": None,
        "rationale": _rationale(edit, policy),
        "verification_method": method,
        "verification_payload": payload(edit, policy),
        "construction_method": CONSTRUCTION_METHOD,
        "source": prompt.source,
        "real_world_grounding": None,
        "split": split,
    }
    assert domain in DOMAINS
    return {f: values[f] for f in ROW_FIELDS}


# --- the same rows as JSON lines, fast --------------------------------------------------

#: A JSON string, escaped as :func:`~cacheeval.support.jsonio.dumps` escapes it
#: (the C encoder ``json.dumps(ensure_ascii=False)`` itself calls).
_json_str = json_str = encode_basestring
#: The keys of a row line, in the order :class:`RowLines` writes them.
_LINE_KEYS = (
    "id", "domain", "subcategory", "label", "binary_label", "difficulty", "query_a", "query_b",
    "context_a", "context_b", "system_prompt_a", "system_prompt_b", "tools_a", "tools_b",
    "expected_answer_a", "expected_answer_b", "rationale", "verification_method",
    "verification_payload", "construction_method", "source", "real_world_grounding", "split",
)  # fmt: skip
assert _LINE_KEYS == ROW_FIELDS, "RowLines writes the row keys in file order"
#: Kinds, families, labels, fields and methods go into a line unescaped: plain words.
assert all(re.fullmatch(r"\w+", w) for k, fl in KINDS.items() for w in (k, *fl)), KINDS


def _json_turns(turns: Any) -> str:
    return dumps([dict(t) for t in turns]) if turns else "null"


def _opt_str(text: str | None) -> str:
    return "null" if text is None else _json_str(text)


class RowLines:
    """The canonical JSON lines of one prompt's rows: ``dumps(stress_row(...))``
    byte for byte (a test holds them equal), without building each row's dict.
    What every row of the prompt shares (side a, the policy, the domain, the
    source, side a's tokens) is encoded once."""

    def __init__(
        self,
        prompt: Prompt,
        policy: PolicyVerdict,
        domain: str,
        split: str,
        side_a: tuple[AbstractSet[str], str] | None = None,
    ) -> None:
        """``side_a``: side a's :func:`token_set` and its query as JSON, when
        the caller has them (:mod:`.facts`)."""
        assert domain in DOMAINS
        self.prompt = prompt
        self.policy = policy
        self.method = "exact_match" if policy.allowed else POLICY_NO_CACHE
        if side_a is None:
            side_a = token_set(prompt.query), _json_str(prompt.query)
        self.tokens_a, self.query_a = side_a
        self.context_a = _json_turns(prompt.turns)
        self.system_a = _opt_str(prompt.system_prompt)
        self.tools = dumps(list(prompt.tools)) if prompt.tools else "null"
        self.domain = ', "domain": ' + _json_str(domain) + ', "subcategory": '
        self.policy_json = (
            "null" if policy.allowed else dumps({"rule": policy.rule, "reason": policy.reason})
        )
        self.tail = (
            ', "construction_method": ' + _json_str(CONSTRUCTION_METHOD) + ', "source": '
            + _opt_str(prompt.source) + ', "real_world_grounding": null, "split": '
            + _json_str(split) + "}"
        )  # fmt: skip
        # what every query edit's line shares, between side b's query and the rationale
        self.query_middle = (
            f'"context_a": {self.context_a}, "context_b": {self.context_a}, "system_prompt_a": '
            f'{self.system_a}, "system_prompt_b": {self.system_a}, "tools_a": {self.tools}, '
            f'"tools_b": {self.tools}, "expected_answer_a": null, "expected_answer_b": null, '
            '"rationale": '
        )
        self.heads = _HEADS[self.method]
        self.policy_note = (
            "" if policy.allowed else f" Side a is never cached ({policy.rule}: {policy.reason})."
        )
        self.payload_tail = f', "policy": {self.policy_json}}}{self.tail}'
        #: what a line's body depends on besides the edit (:data:`_BODIES`)
        self.body_key = (prompt.query, self.query_middle, self.method, self.policy_note)

    def line(self, edit: Edit, row_id: str) -> str:
        """The line (no newline) of the row for ``edit`` under ``row_id``."""
        return f'{{"id": {_json_str(row_id)}{self.after_id(edit)}'

    def after_id(self, edit: Edit) -> str:
        """:meth:`line` after the id: what a worker process makes, the id being
        numbered in output order by whoever writes the file (:mod:`.parallel`)."""
        if edit.turns_b is not None:  # other turns: a dict is no memo key
            return self._tail(self._other_body(edit))
        key = (
            self.body_key, edit.kind, edit.field, edit.start, edit.end, edit.original,
            edit.replacement, edit.turn, edit.inner, edit.system_prompt_b,
        )  # fmt: skip
        body = _BODIES.get(key)
        if body is None:
            if edit.field == "query" and edit.turn is None and edit.inner is None:
                body = self._query_body(edit)
            else:
                body = self._other_body(edit)
            if len(_BODIES) >= _BODIES_LIMIT:
                _BODIES.clear()
            _BODIES[key] = body
        return self._tail(body)

    def _tail(self, body: str) -> str:
        return f"{self.domain}{body}{self.payload_tail}"

    def _query_body(self, edit: Edit) -> str:
        """A query edit's line from its kind to its payload's replacement."""
        kind = edit.kind
        text = self.prompt.query
        start, end = edit.start, edit.end
        original, replacement = edit.original, edit.replacement
        query_b = text[:start] + replacement + text[end:]
        head, binary, effect = self.heads[kind]
        difficulty = difficulty_of_tokens(self.tokens_a, token_set(query_b), binary)
        rationale = f"Side b changes {original!r} to {replacement!r} {effect}{self.policy_note}"
        return (
            f'{head}{difficulty}", "query_a": {self.query_a}, "query_b": {_json_str(query_b)}, '
            f'{self.query_middle}{_json_str(rationale)}, "verification_method": '
            f'"{self.method}", "verification_payload": {_QUERY_PAYLOAD[kind]}{int(start)}, '
            f'"end": {int(end)}, "original": {_json_str(original)}, "replacement": '
            f"{_json_str(replacement)}"
        )

    def _other_body(self, edit: Edit) -> str:
        """:meth:`_query_body` of a context edit (another system prompt or other turns)."""
        prompt = self.prompt
        kind = edit.kind
        label = KINDS[kind][1]
        binary = derive_binary_label(label, self.method)
        field = edit.field
        query_b, tokens_b = prompt.query, self.tokens_a
        system_b = _opt_str(edit.system_prompt_b) if field == "system_prompt" else self.system_a
        context_b = _json_turns(edit.turns_b) if field == "context" else self.context_a
        difficulty = difficulty_of_tokens(self.tokens_a, tokens_b, binary)
        turn = "null" if edit.turn is None else int(edit.turn)
        payload = (
            f'{{"kind": "{PAYLOAD_KIND}", "perturbation": "{kind}", "family": '
            f'"{family_of(kind)}", "field": "{field}", "turn": {turn}, "edit": '
            f'{_opt_str(edit.inner)}, "start": {int(edit.start)}, "end": {int(edit.end)}, '
            f'"original": {_json_str(edit.original)}, "replacement": '
            f"{_json_str(edit.replacement)}"
        )
        return (
            f'"{kind}", "label": "{label}", '
            f'"binary_label": "{binary}", "difficulty": "{difficulty}", "query_a": '
            f'{self.query_a}, "query_b": {_json_str(query_b)}, "context_a": '
            f'{self.context_a}, "context_b": {context_b}, "system_prompt_a": {self.system_a}, '
            f'"system_prompt_b": {system_b}, "tools_a": {self.tools}, "tools_b": {self.tools}, '
            f'"expected_answer_a": null, "expected_answer_b": null, "rationale": '
            f'{_json_str(_rationale(edit, self.policy))}, "verification_method": '
            f'"{self.method}", "verification_payload": {payload}'
        )


#: Lines' bodies (from the kind to the payload's replacement) by what decides
#: them: the request as written into the line, its policy, and the edit. A
#: repeated prompt drawing an edit again writes it once. Emptied when full.
_BODIES: dict[tuple[Any, ...], str] = memo_dict()
_BODIES_LIMIT = 4096


def _heads() -> dict[str, dict[str, tuple[str, str, str]]]:
    """Per verification method and kind: the line from the kind to the opening
    quote of the difficulty, the binary label, and the rationale's end."""
    out: dict[str, dict[str, tuple[str, str, str]]] = {}
    for method in ("exact_match", POLICY_NO_CACHE):
        out[method] = {}
        for kind, (family, label) in KINDS.items():
            binary = derive_binary_label(label, method)
            head = f'"{kind}", "label": "{label}", "binary_label": "{binary}", "difficulty": "'
            effect = "keeps the answer" if family == "noise" else "changes the answer"
            out[method][kind] = head, binary, f"({kind}): a {family} edit that {effect}."
    return out


#: :func:`_heads`: what a line's kind and method decide, written once.
_HEADS = _heads()
#: A query edit's payload up to its start offset, per kind.
_QUERY_PAYLOAD = {
    kind: f'{{"kind": "{PAYLOAD_KIND}", "perturbation": "{kind}", "family": "{family}", '
    '"field": "query", "turn": null, "edit": null, "start": '
    for kind, (family, _) in KINDS.items()
}
