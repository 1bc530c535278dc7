"""The ``multi_turn`` shard: the same final message means different things
after different conversations.

``context_a`` / ``context_b`` hold the prior turns (``{"role", "content"}``,
oldest first, ending with the assistant); ``query_a`` / ``query_b`` are the
final user messages. A short follow-up such as "How long should I bake it?"
is answer-determined by what the earlier turns said "it" is and by any
constraint stated on the way (a fan oven, an allergy, a budget).

Fixtures: ``sources/multi_turn/*.json``, each ``{"families": [...]}``. A family
is one hand-written conversation template with everything derived from it::

    {"key": "bake_time",                     # family id (grouped CV), unique
     "topic": "a baking recipe",             # for rationales
     "kind": "dish",                         # what a referent is, for rationales
     "asks": "how long to bake the {{referent}}",   # what the final message asks
     "grounding": "where such conversations occur",
     "adv_axis": "dish_swap",                # subcategory of the ADVERSARIAL rows
     "para": "final" | "small_talk",         # how the PARA_SAFE row is made
     "unrelated_with": "sort_rows",          # partner family of the UNRELATED row
     "intent": "bake_time",                  # intent id of the final message
     "constraints": [],                      # literals of the base history that shape the answer
     "turns": [["user", "I'm making {{dish}} ..."], ["assistant", "..."]],
     "values": [                             # 2 or 3 referents; the first is the main one
        {"referent": "banana bread", "slots": {"dish": "banana bread"}, "answer": "..."}, ...],
     "final": "How long should I bake it?",
     "surface":    {"text", "axis", "note"},            # surface variant of final -> EQUIV
     "paraphrase": {"text", "note"},                    # reworded final -> PARA_SAFE
     "related":    {"text", "note", "intent", "answer"},  # only with 2 values -> RELATED_UNSAFE
     "constraint": {"axis", "note", "literal", "answer", # history changes a constraint
                    "turns": [[role, text], ...],        #   turns appended to the history,
                    "slots": {...},                      #   and/or slot values overridden,
                    "replaces": "compounded annually"},  #   optionally replacing a base literal
     "small_talk": {"at", "note", "turns"}}             # only with para == "small_talk"

Templates fill ``{{slot}}`` from the value's ``slots`` plus ``{{referent}}``.

Rows per family (H(v) = the history filled with value v; F, S, P, R = base,
surface, paraphrased and related final messages; X1, X2 = S and P in a seeded
order, so the surface and paraphrased finals also appear in MISS rows and no
final-message style predicts the label):

* EQUIV ``<surface axis>``: (H(v0), F) vs (H(v0), S);
* PARA_SAFE ``final_paraphrase``: (H(v0), F) vs (H(v0), P), or
  ``small_talk_history``: (H(v0), F) vs (H(v0) + small talk, F);
* RELATED_UNSAFE ``<constraint axis>``: (H(v0), X1) vs (H(v0) + constraint, X1);
  with two values also ``followup_question_change``: (H(v0), F) vs (H(v0), R);
* ADVERSARIAL ``<adv axis>``: (H(v0), X2) vs (H(v1), X2); with three values
  also (H(v1), F) vs (H(v2), F) - the same final after a referent swap;
* UNRELATED ``different_conversation``: (H(v0), F) vs the partner's (H(v1), F).
  Two families may name each other (their rows differ: each side's history is
  filled with another value); partners are paired so that families linked by
  UNRELATED rows form pairs, which the split packer keeps in one split.

So a family gives 6 rows; 10 three-value and 20 two-value families give the
matrix counts (30, 30, 50, 40, 30). A seeded coin picks side a of each row.

Verification: kind ``multi_turn`` (see :mod:`cacheeval.verify.multi_turn`),
method ``exact_match`` when the normalised finals are equal, else ``rubric``.
Construction: EQUIV and final-paraphrase rows ``paraphrase_rewrite`` (a
hand-written rewrite of the final message), ADVERSARIAL
``adversarial_perturbation`` (a slot swap of a curated conversation), the rest
``template``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..schema import ADVERSARIAL, EQUIV, PARA_SAFE, RELATED_UNSAFE, UNRELATED
from ..support.layout import rng
from ..verify.textnorm import normalize_answer
from .common import DraftRow, FixtureError, coin_order, fixture_source, lower_first
from .creative import (
    FamilyItems,
    Fixture,
    req_list,
    req_str,
    rows_by_family,
    sub_str,
)

DOMAIN = "multi_turn"
ROLES = ("user", "assistant")
MAX_TURNS = 6
PARA_MODES = ("final", "small_talk")
_SLOT = re.compile(r"\{\{([a-z_]+)\}\}")

Turn = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Value:
    """One referent of a family: what fills the history's slots, and the answer."""

    referent: str
    slots: dict[str, str]
    answer: str


@dataclass(frozen=True, slots=True)
class Final:
    """A final user message; ``axis``/``note`` describe how it differs from the base."""

    text: str
    axis: str | None
    note: str | None


@dataclass(frozen=True, slots=True)
class Related:
    """A different follow-up on the same conversation (RELATED_UNSAFE)."""

    text: str
    note: str
    intent: str
    answer: str


@dataclass(frozen=True, slots=True)
class Constraint:
    """A history change that alters the answer of the main value."""

    axis: str
    note: str
    literal: str
    answer: str
    turns: tuple[Turn, ...]
    slots: dict[str, str]
    replaces: str | None


@dataclass(frozen=True, slots=True)
class SmallTalk:
    """Irrelevant turns inserted at turn index ``at``."""

    at: int
    note: str
    turns: tuple[Turn, ...]


@dataclass(frozen=True, slots=True)
class Family:
    """One authored conversation template (see the module docstring)."""

    key: str
    topic: str
    kind: str
    asks: str
    grounding: str
    adv_axis: str
    para: str
    unrelated_with: str
    intent: str
    constraints: tuple[str, ...]
    turns: tuple[Turn, ...]
    values: tuple[Value, ...]
    final: Final
    surface: Final
    paraphrase: Final
    related: Related | None
    constraint: Constraint
    small_talk: SmallTalk | None
    path: Path


@dataclass(frozen=True, slots=True)
class Side:
    """One side of a row: the conversation, its final message and what pins its answer."""

    context: tuple[Turn, ...]
    query: str
    answer: str
    referent: str
    constraints: tuple[str, ...]
    intent: str
    small_talk: tuple[int, ...]


# --- parsing -----------------------------------------------------------------------


def fill(template: str, slots: dict[str, str]) -> str:
    """``template`` with every ``{{slot}}`` replaced; KeyError names a missing slot."""
    return _SLOT.sub(lambda m: slots[m.group(1)], template)


def _turns(fx: Fixture, key: str, value: Any, where: str) -> tuple[Turn, ...]:
    if not isinstance(value, list) or not value:
        raise fx.error(key, f"{where} must be a non-empty list of [role, text] pairs")
    out = []
    for n, t in enumerate(value):
        if (
            not isinstance(t, list)
            or len(t) != 2
            or t[0] not in ROLES
            or not isinstance(t[1], str)
            or not t[1].strip()
        ):
            raise fx.error(key, f'{where}[{n}] must be ["user"|"assistant", non-empty text]')
        out.append((t[0], t[1]))
    return tuple(out)


def _slots(fx: Fixture, key: str, value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and v.strip() for k, v in value.items()
    ):
        raise fx.error(key, f"{where} must map slot names to non-empty strings")
    return dict(value)


def _final(fx: Fixture, key: str, obj: Any, where: str, *, axis: bool) -> Final:
    return Final(
        text=sub_str(fx, key, obj, "text", where),
        axis=sub_str(fx, key, obj, "axis", where) if axis else None,
        note=sub_str(fx, key, obj, "note", where),
    )


def _family(fx: Fixture, item: dict[str, Any]) -> Family:
    key = item["key"]
    values = []
    for n, v in enumerate(req_list(fx, item, "values", min_len=2)):
        where = f"values[{n}]"
        values.append(
            Value(
                referent=sub_str(fx, key, v, "referent", where),
                slots=_slots(fx, key, v.get("slots"), f"{where}.slots"),
                answer=sub_str(fx, key, v, "answer", where),
            )
        )
    if len(values) > 3:
        raise fx.error(key, "a family has 2 or 3 values")
    rel = item.get("related")
    related = None
    if rel is not None:
        related = Related(
            text=sub_str(fx, key, rel, "text", "related"),
            note=sub_str(fx, key, rel, "note", "related"),
            intent=sub_str(fx, key, rel, "intent", "related"),
            answer=sub_str(fx, key, rel, "answer", "related"),
        )
    c = item.get("constraint")
    replaces = c.get("replaces") if isinstance(c, dict) else None
    if replaces is not None and not isinstance(replaces, str):
        raise fx.error(key, "constraint.replaces must be a string")
    c_turns = c.get("turns") if isinstance(c, dict) else None
    constraint = Constraint(
        axis=sub_str(fx, key, c, "axis", "constraint"),
        note=sub_str(fx, key, c, "note", "constraint"),
        literal=sub_str(fx, key, c, "literal", "constraint"),
        answer=sub_str(fx, key, c, "answer", "constraint"),
        turns=() if c_turns is None else _turns(fx, key, c_turns, "constraint.turns"),
        slots=_slots(fx, key, c.get("slots") if isinstance(c, dict) else None, "constraint.slots"),
        replaces=replaces,
    )
    st = item.get("small_talk")
    small_talk = None
    if st is not None:
        at = st.get("at") if isinstance(st, dict) else None
        if not isinstance(at, int) or isinstance(at, bool):
            raise fx.error(key, "small_talk.at must be a turn index")
        small_talk = SmallTalk(
            at=at,
            note=sub_str(fx, key, st, "note", "small_talk"),
            turns=_turns(fx, key, st.get("turns"), "small_talk.turns"),
        )
    constraints = item.get("constraints", [])
    if not isinstance(constraints, list) or not all(
        isinstance(s, str) and s.strip() for s in constraints
    ):
        raise fx.error(key, "field 'constraints' must be a list of non-empty strings")
    return Family(
        key=key,
        topic=req_str(fx, item, "topic"),
        kind=req_str(fx, item, "kind"),
        asks=req_str(fx, item, "asks"),
        grounding=req_str(fx, item, "grounding"),
        adv_axis=req_str(fx, item, "adv_axis"),
        para=req_str(fx, item, "para"),
        unrelated_with=req_str(fx, item, "unrelated_with"),
        intent=req_str(fx, item, "intent"),
        constraints=tuple(constraints),
        turns=_turns(fx, key, item.get("turns"), "turns"),
        values=tuple(values),
        final=Final(req_str(fx, item, "final"), None, None),
        surface=_final(fx, key, item.get("surface"), "surface", axis=True),
        paraphrase=_final(fx, key, item.get("paraphrase"), "paraphrase", axis=False),
        related=related,
        constraint=constraint,
        small_talk=small_talk,
        path=fx.path,
    )


def _check_family(fx: Fixture, fam: Family) -> None:
    """Shape rules and the facts the checker will rely on (so a slip fails here,
    located, rather than as a verify disagreement)."""
    key = fam.key
    if fam.para not in PARA_MODES:
        raise fx.error(key, f"field 'para' must be one of {', '.join(PARA_MODES)}")
    if (fam.para == "small_talk") != (fam.small_talk is not None):
        raise fx.error(key, "give 'small_talk' exactly when para is 'small_talk'")
    if (len(fam.values) == 2) != (fam.related is not None):
        raise fx.error(key, "a two-value family needs 'related'; a three-value family has none")
    if fam.related is not None and fam.related.intent == fam.intent:
        raise fx.error(key, "the related follow-up needs its own intent id")
    finals = [fam.final.text, fam.surface.text, fam.paraphrase.text]
    finals += [fam.related.text] if fam.related else []
    if len(set(finals)) != len(finals):
        raise fx.error(key, "two of the family's final messages are identical")
    if normalize_answer(fam.paraphrase.text) == normalize_answer(fam.final.text):
        raise fx.error(key, "the paraphrase differs from the final only by case/punctuation")
    referents = [v.referent.casefold() for v in fam.values]
    if len(set(referents)) != len(referents):
        raise fx.error(key, "two values share a referent")
    c = fam.constraint
    if not c.turns and not c.slots:
        raise fx.error(key, "the constraint needs 'turns' or 'slots'")
    if c.replaces is not None and c.replaces not in fam.constraints:
        raise fx.error(key, f"constraint.replaces {c.replaces!r} is not a base constraint")
    try:
        for v in fam.values:
            # Constraint and small talk only ever apply to the main value.
            for variant in _variants(fam) if v is fam.values[0] else [{}]:
                hist, _ = history(fam, v, **variant)
                _check_history(fx, fam, v, hist, variant)
            fill(fam.asks, {**v.slots, "referent": v.referent})
    except KeyError as e:
        raise fx.error(key, f"template slot {{{{{e.args[0]}}}}} has no value") from None
    v0 = fam.values[0]
    answers = [(v.answer, v.referent) for v in fam.values] + [(c.answer, v0.referent)]
    answers += [(fam.related.answer, v0.referent)] if fam.related else []
    for answer, ref in answers:
        if ref.casefold() not in answer.casefold():
            raise fx.error(key, f"answer {answer[:40]!r}... does not name its referent {ref!r}")
    if len({normalize_answer(a) for a, _ in answers}) != len(answers):
        raise fx.error(key, "two of the family's answers are the same")


def _variants(fam: Family) -> list[dict[str, bool]]:
    out: list[dict[str, bool]] = [{}, {"constrained": True}]
    if fam.small_talk is not None:
        out.append({"chatty": True})
    return out


def _check_history(
    fx: Fixture, fam: Family, v: Value, hist: tuple[Turn, ...], variant: dict[str, bool]
) -> None:
    key = fam.key
    if not 2 <= len(hist) <= MAX_TURNS:
        raise fx.error(key, f"a history has {len(hist)} turns (want 2..{MAX_TURNS})")
    roles = [r for r, _ in hist]
    if roles != [ROLES[i % 2] for i in range(len(hist))]:
        raise fx.error(key, "turns must alternate user/assistant, starting with the user")
    text = "\n".join(t for _, t in hist).casefold()
    if v.referent.casefold() not in text:
        raise fx.error(key, f"the history never names the referent {v.referent!r}")
    literal = fam.constraint.literal.casefold()
    if variant.get("constrained"):
        if literal not in text:
            raise fx.error(key, f"the constrained history lacks {fam.constraint.literal!r}")
    elif literal in text:
        raise fx.error(key, f"the plain history already says {fam.constraint.literal!r}")
    for lit in side_constraints(fam, bool(variant.get("constrained"))):
        if lit.casefold() not in text:
            raise fx.error(key, f"a history lacks its constraint {lit!r}")


def load_families(fixture_dir: Path) -> list[Family]:
    """Parse and check every multi_turn fixture; families in file then list order."""
    families: list[Family] = []
    items = FamilyItems(fixture_dir)
    seen = items.fixture_of
    for fx, item in items:
        fam = _family(fx, item)
        _check_family(fx, fam)
        families.append(fam)
    by_key = {f.key: f for f in families}
    for fam in families:
        partner = by_key.get(fam.unrelated_with)
        if partner is None or partner is fam:
            raise seen[fam.key].error(fam.key, f"unrelated_with names {fam.unrelated_with!r}")
    return families


# --- sides and rows -------------------------------------------------------------------


def side_constraints(fam: Family, constrained: bool) -> tuple[str, ...]:
    """The constraint literals a history states."""
    if not constrained:
        return fam.constraints
    c = fam.constraint
    kept = tuple(s for s in fam.constraints if s != c.replaces)
    return (*kept, c.literal)


def history(
    fam: Family, v: Value, *, constrained: bool = False, chatty: bool = False
) -> tuple[tuple[Turn, ...], tuple[int, ...]]:
    """The filled prior turns for value ``v`` and the indices of small-talk turns."""
    slots = {**v.slots, "referent": v.referent}
    if constrained:
        slots.update(fam.constraint.slots)
    turns = [(role, fill(text, slots)) for role, text in fam.turns]
    if constrained:
        turns += [(role, fill(text, slots)) for role, text in fam.constraint.turns]
    small: tuple[int, ...] = ()
    if chatty:
        assert fam.small_talk is not None
        at = fam.small_talk.at
        turns[at:at] = list(fam.small_talk.turns)
        small = tuple(range(at, at + len(fam.small_talk.turns)))
    return tuple(turns), small


def side(
    fam: Family,
    v: Value,
    query: str,
    *,
    constrained: bool = False,
    chatty: bool = False,
    related: bool = False,
) -> Side:
    """One side: ``v``'s conversation ending in ``query`` (a base-intent final
    unless ``related``) and its expected answer."""
    context, small = history(fam, v, constrained=constrained, chatty=chatty)
    if related:
        assert fam.related is not None
        answer, intent = fam.related.answer, fam.related.intent
    else:
        answer = fam.constraint.answer if constrained else v.answer
        intent = fam.intent
    return Side(
        context=context,
        query=query,
        answer=answer,
        referent=v.referent,
        constraints=side_constraints(fam, constrained),
        intent=f"{fam.key}/{intent}",
        small_talk=small,
    )


_CONSTRUCTION = {
    "surface": "paraphrase_rewrite",
    "final_paraphrase": "paraphrase_rewrite",
    "small_talk_history": "template",
    "constraint": "template",
    "followup_question_change": "template",
    "adversarial": "adversarial_perturbation",
    "different_conversation": "template",
}

_GROUNDING_TAIL = {
    "surface": "the same follow-up is often retyped with a slip or different punctuation",
    "final_paraphrase": "people phrase the same follow-up in their own words",
    "small_talk_history": "users drop pleasantries and asides into task conversations",
    "constraint": "users mention a limitation a few turns before asking their question",
    "followup_question_change": "a second follow-up in the same chat asks something neighbouring",
    "adversarial": "short follow-ups like this are sent verbatim after many different chats",
}


def _payload(a: Side, b: Side) -> dict[str, Any]:
    return {
        "kind": "multi_turn",
        "final": {
            "normalized_a": normalize_answer(a.query),
            "normalized_b": normalize_answer(b.query),
            "intent_a": a.intent,
            "intent_b": b.intent,
        },
        "referents_a": [a.referent],
        "referents_b": [b.referent],
        "constraints_a": list(a.constraints),
        "constraints_b": list(b.constraints),
        "small_talk_a": list(a.small_talk),
        "small_talk_b": list(b.small_talk),
    }


def _context(turns: tuple[Turn, ...]) -> tuple[dict[str, Any], ...]:
    return tuple({"role": role, "content": text} for role, text in turns)


def _row(
    label: str,
    fam: Family,
    subcategory: str,
    kind: str,
    sides: tuple[Side, Side],
    rationale: str,
    grounding: str | None = None,
) -> DraftRow:
    """A row of two sides; a seeded coin decides which is side a."""
    a, b = coin_order(sides, DOMAIN, fam.key, label, kind, subcategory)
    same = normalize_answer(a.query) == normalize_answer(b.query)
    if grounding is None:
        grounding = f"{fam.grounding}; {_GROUNDING_TAIL[kind]}."
    return DraftRow(
        domain=DOMAIN,
        subcategory=subcategory,
        label=label,
        query_a=a.query,
        query_b=b.query,
        context_a=_context(a.context),
        context_b=_context(b.context),
        expected_answer_a=a.answer,
        expected_answer_b=b.answer,
        rationale=rationale,
        verification_method="exact_match" if same else "rubric",
        verification_payload=_payload(a, b),
        construction_method=_CONSTRUCTION[kind],
        source=fixture_source(fam.path, fam.key),
        real_world_grounding=grounding,
    )


def q(text: str) -> str:
    """``text`` in double quotes, for rationales."""
    return f'"{text}"'


def _asks(fam: Family, v: Value) -> str:
    return fill(fam.asks, {**v.slots, "referent": v.referent})


def family_rows(fam: Family, by_key: dict[str, Family]) -> list[DraftRow]:
    """The six rows of one family, in label order."""
    v0 = fam.values[0]
    f, s, p = fam.final.text, fam.surface.text, fam.paraphrase.text
    x1, x2 = (s, p) if rng(DOMAIN, fam.key, "finals").random() < 0.5 else (p, s)
    base = side(fam, v0, f)
    ref, asks = v0.referent, _asks(fam, v0)
    rows = [
        _row(
            EQUIV,
            fam,
            fam.surface.axis or "surface_variant",
            "surface",
            (base, side(fam, v0, s)),
            f"Both sides are the same conversation about {ref}, and the final messages {q(f)} "
            f"and {q(s)} differ only by {fam.surface.note}, so both call for the same reply on "
            f"{asks} and the cached one fits.",
        )
    ]
    if fam.para == "final":
        rows.append(
            _row(
                PARA_SAFE,
                fam,
                "final_paraphrase",
                "final_paraphrase",
                (base, side(fam, v0, p)),
                f"The history about {ref} is identical and {q(p)} rewords {q(f)} "
                f"({fam.paraphrase.note}); either way the user wants a reply on {asks}, which "
                f"the cached answer gives.",
            )
        )
    else:
        assert fam.small_talk is not None
        rows.append(
            _row(
                PARA_SAFE,
                fam,
                "small_talk_history",
                "small_talk_history",
                (base, side(fam, v0, f, chatty=True)),
                f"Both chats settle on {ref} and end with {q(f)}; the extra exchange on one side "
                f"({fam.small_talk.note}) names no {fam.kind} and no constraint, so the reply on "
                f"{asks} is unchanged.",
            )
        )
    c = fam.constraint
    rows.append(
        _row(
            RELATED_UNSAFE,
            fam,
            c.axis,
            "constraint",
            (side(fam, v0, x1), side(fam, v0, x1, constrained=True)),
            f"Both conversations concern {ref} and end with {q(x1)}, but one of them also "
            f"states {q(c.literal)}, and {c.note}, so the unconstrained answer would mislead.",
        )
    )
    if fam.related is not None:
        r = fam.related
        rows.append(
            _row(
                RELATED_UNSAFE,
                fam,
                "followup_question_change",
                "followup_question_change",
                (base, side(fam, v0, r.text, related=True)),
                f"The shared history is about {ref}, but the follow-up changes from {q(f)} to "
                f"{q(r.text)}; {r.note}, so a reply on {asks} does not serve it.",
            )
        )
    adversarial = [(v0, fam.values[1], x2)]
    if len(fam.values) == 3:
        adversarial.append((fam.values[1], fam.values[2], f))
    for va, vb, text in adversarial:
        rows.append(
            _row(
                ADVERSARIAL,
                fam,
                fam.adv_axis,
                "adversarial",
                (side(fam, va, text), side(fam, vb, text)),
                f"The final message {q(text)} is identical, yet the earlier turns make it about "
                f"{va.referent} on one side and {vb.referent} on the other, so a reply on "
                f"{_asks(fam, va)} names the wrong {fam.kind} for the second conversation.",
            )
        )
    other = by_key[fam.unrelated_with]
    ov = other.values[1]
    rows.append(
        _row(
            UNRELATED,
            fam,
            "different_conversation",
            "different_conversation",
            (base, side(other, ov, other.final.text)),
            f"Two unrelated conversations: one about {fam.topic} ({ref}) ending in {q(f)}, the "
            f"other about {other.topic} ({ov.referent}) ending in {q(other.final.text)}.",
            f"{fam.grounding}, and {lower_first(other.grounding)}; "
            f"a shared cache sees both kinds of chat.",
        )
    )
    return rows


def generate(fixture_dir: Path) -> list[DraftRow]:
    """The multi_turn rows of ``fixture_dir``: every family's rows, in fixture order."""
    return rows_by_family(load_families(fixture_dir), family_rows)


__all__ = ["FixtureError", "generate", "load_families", "family_rows", "history", "side"]
