"""The ``personalized`` shard: requests whose answer reads the user's profile.

The system prompt carries the signed-in user's identity, records, locale,
permissions or preferences. Every row is MISS by policy (``policy_no_cache``):
``{"kind": "policy", "policy": "cross_user", ...}`` when the two sides belong to
different people, ``"personalized"`` when they are the same person (the answer
quotes private profile data, so a shared cache keyed on the text must not hold
it). The five-class label records the relation of the two requests.

Fixtures: ``sources/personalized/*.json``, each ``{"families": [...]}``::

    {"key": "hr_leave_balance",
     "topic": "their remaining vacation days",   # for rationales
     "grounding": "where such traffic occurs",
     "adv_axis": "cross_user_same_query",        # subcategory of the ADVERSARIAL row
     "unrelated_with": ["flight_seat"],          # partner families (0 or more)
     "system": "You are ... {name} ... {annual_leave_days} ...",   # str.format template
     "users": [{"name": ..., <slot>: ...}, {...}],                 # exactly two profiles
     "base":       {"text": ..., "answer": "template"},
     "surface":    {"text": ..., "note": ...},                     # -> EQUIV
     "paraphrase": {"text": ..., "note": ...},                     # -> PARA_SAFE
     "related":    {"text": ..., "note": ..., "answer": "template"}}  # -> RELATED_UNSAFE

Templates may use every key of a user plus ``{first}`` (the first name). Two
users with the same ``name`` are one person under two settings (a changed unit
or locale); otherwise they are two people. Per family: one EQUIV, PARA_SAFE and
RELATED_UNSAFE row from one user (the same system prompt on both sides), one
ADVERSARIAL row with the byte-identical base question under the two profiles,
and one UNRELATED row per partner family (partners name each other, so linked
families form pairs the split packer keeps in one split). A seeded coin picks
side a.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..schema import ADVERSARIAL, EQUIV, PARA_SAFE, RELATED_UNSAFE, UNRELATED
from ..support.layout import rng
from .common import DraftRow, coin_order, fixture_source, lower_first
from .creative import (
    FamilyItems,
    Fixture,
    req_list,
    req_str,
    rows_by_family,
    sentence,
    sub_str,
)

DOMAIN = "personalized"


@dataclass(frozen=True, slots=True)
class Query:
    """A hand-written question of a family; ``answer`` is a template (or None)."""

    text: str
    note: str | None
    answer: str | None


@dataclass(frozen=True, slots=True)
class Family:
    """One personalised question, its variants, and two user profiles."""

    key: str
    topic: str
    grounding: str
    adv_axis: str
    unrelated_with: tuple[str, ...]
    system: str
    users: tuple[dict[str, str], dict[str, str]]
    base: Query
    surface: Query
    paraphrase: Query
    related: Query
    path: Path


def _fields(template: str) -> list[str]:
    return [f for _, f, _, _ in string.Formatter().parse(template) if f]


def fill(template: str, user: dict[str, str]) -> str:
    """``template`` with the user's slots (plus ``first``) substituted."""
    return template.format_map({**user, "first": user["name"].split()[0]})


def _query(fx: Fixture, item: dict[str, Any], field: str, *, note: bool, answer: bool) -> Query:
    obj = item.get(field)
    return Query(
        text=sub_str(fx, item["key"], obj, "text", field),
        note=sub_str(fx, item["key"], obj, "note", field) if note else None,
        answer=sub_str(fx, item["key"], obj, "answer", field) if answer else None,
    )


def _users(fx: Fixture, item: dict[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    users = req_list(fx, item, "users", min_len=2)
    if len(users) != 2:
        raise fx.error(item["key"], "field 'users' must hold exactly two profiles")
    for n, u in enumerate(users):
        if not isinstance(u, dict) or not all(isinstance(v, str) and v.strip() for v in u.values()):
            raise fx.error(item["key"], f"users[{n}] must map slot names to non-empty strings")
        sub_str(fx, item["key"], u, "name", f"users[{n}]")
    if users[0] == users[1]:
        raise fx.error(item["key"], "the two profiles are identical")
    return users[0], users[1]


def load_families(fixture_dir: Path) -> list[Family]:
    """Parse and check every personalized fixture; families in file then list order."""
    families: list[Family] = []
    items = FamilyItems(fixture_dir)
    seen = items.fixture_of
    for fx, item in items:
        key = item["key"]
        partners = item.get("unrelated_with")
        if not isinstance(partners, list) or not all(isinstance(p, str) for p in partners):
            raise fx.error(key, "field 'unrelated_with' must be a list of family keys")
        fam = Family(
            key=key,
            topic=req_str(fx, item, "topic"),
            grounding=req_str(fx, item, "grounding"),
            adv_axis=req_str(fx, item, "adv_axis"),
            unrelated_with=tuple(partners),
            system=req_str(fx, item, "system"),
            users=_users(fx, item),
            base=_query(fx, item, "base", note=False, answer=True),
            surface=_query(fx, item, "surface", note=True, answer=False),
            paraphrase=_query(fx, item, "paraphrase", note=True, answer=False),
            related=_query(fx, item, "related", note=True, answer=True),
            path=fx.path,
        )
        _check_family(fx, fam)
        families.append(fam)
    for fam in families:
        for partner in fam.unrelated_with:
            if partner not in seen or partner == fam.key:
                raise seen[fam.key].error(
                    fam.key, f"unrelated_with names unknown family {partner!r}"
                )
    return families


def _check_family(fx: Fixture, fam: Family) -> None:
    """Every template slot is filled by both users; the ADVERSARIAL pair really differs."""
    templates = [fam.system, fam.base.answer or "", fam.related.answer or ""]
    for n, user in enumerate(fam.users):
        for t in templates:
            for f in _fields(t):
                if f != "first" and f not in user:
                    raise fx.error(fam.key, f"users[{n}] has no value for template slot {{{f}}}")
    texts = [fam.base.text, fam.surface.text, fam.paraphrase.text, fam.related.text]
    if len(set(texts)) != len(texts):
        raise fx.error(fam.key, "two of the family's questions are identical")
    a, b = (fill(fam.base.answer or "", u) for u in fam.users)
    if a == b or fill(fam.system, fam.users[0]) == fill(fam.system, fam.users[1]):
        raise fx.error(fam.key, "the two profiles give the same system prompt or base answer")


# --- rows -----------------------------------------------------------------------

_GROUNDING_TAIL = {
    EQUIV: "the same person often re-sends a question with a typo or different punctuation",
    PARA_SAFE: "users ask the same thing in their own words from one session to the next",
    RELATED_UNSAFE: "a follow-up on a neighbouring field of the same account is typical",
    ADVERSARIAL: "identical questions arrive from many accounts, or after a settings change",
    UNRELATED: "one deployment serves many users asking about different things",
}


def _diff(fam: Family) -> str:
    """The system-template slots whose values differ between the two profiles."""
    u0, u1 = fam.users
    # Slots the base answer quotes come first: they are what makes the answers differ.
    order = _fields(fam.base.answer or "") + _fields(fam.system)
    system = set(_fields(fam.system))
    slots = [
        f
        for f in dict.fromkeys(order)
        if f in system and f not in ("name", "first") and u0[f] != u1[f]
    ]
    shown = [f"{s.replace('_', ' ')} {u0[s]!r} vs {u1[s]!r}" for s in slots[:2]]
    return "; ".join(shown) if shown else "only the name"


def _side(fam: Family, user: dict[str, str], q: Query) -> tuple[str, str, str]:
    answer = q.answer if q.answer is not None else fam.base.answer
    assert answer is not None
    return (q.text, fill(fam.system, user), fill(answer, user))


def _row(
    label: str,
    fam: Family,
    subcategory: str,
    sides: tuple[tuple[str, str, str], tuple[str, str, str]],
    names: tuple[str, str],
    swap_key: str,
    rationale: str,
    grounding: str,
) -> DraftRow:
    a, b = coin_order(sides, DOMAIN, fam.key, label, swap_key)
    same = names[0] == names[1]
    policy = "personalized" if same else "cross_user"
    if same:
        reason = f"the answer quotes {names[0]}'s private profile data, so it is not shared"
    else:
        reason = (
            f"{names[0]} and {names[1]} are different users; "
            "one's answer must never reach the other"
        )
    return DraftRow(
        domain=DOMAIN,
        subcategory=subcategory,
        label=label,
        query_a=a[0],
        query_b=b[0],
        system_prompt_a=a[1],
        system_prompt_b=b[1],
        expected_answer_a=a[2],
        expected_answer_b=b[2],
        rationale=rationale,
        verification_method="policy_no_cache",
        verification_payload={"kind": "policy", "policy": policy, "reason": sentence(reason)},
        construction_method="adversarial_perturbation" if label == ADVERSARIAL else "template",
        source=fixture_source(fam.path, fam.key),
        real_world_grounding=grounding,
    )


def family_rows(fam: Family, by_key: dict[str, Family]) -> list[DraftRow]:
    """The rows of one family, in label order."""
    r = rng(DOMAIN, fam.key, "users")
    k = r.randrange(2)
    # EQUIV and PARA_SAFE use different profiles, so both users appear in rows of every label.
    picks = {
        EQUIV: fam.users[k],
        PARA_SAFE: fam.users[1 - k],
        RELATED_UNSAFE: fam.users[r.randrange(2)],
    }
    tail = {lab: f"{fam.grounding}; {t}." for lab, t in _GROUNDING_TAIL.items()}
    rows = []
    for label, q, sub in (
        (EQUIV, fam.surface, "same_user_surface_variant"),
        (PARA_SAFE, fam.paraphrase, "same_user_paraphrase"),
        (RELATED_UNSAFE, fam.related, "same_user_related_question"),
    ):
        user = picks[label]
        name, first = user["name"], user["name"].split()[0]
        base = _side(fam, user, fam.base)
        other = _side(fam, user, q)
        if label == EQUIV:
            why = (
                f"Both sides are {name} asking about {fam.topic} under the same system prompt, "
                f"differing only by {q.note}; the request is the same, but the reply quotes "
                f"{first}'s own profile ({base[2]!r}), so it is personalised and never served "
                f"from a shared cache."
            )
        elif label == PARA_SAFE:
            why = (
                f"{name} rewords the question about {fam.topic} ({q.note}) under an unchanged "
                f"profile, so the intent matches, yet the reply is built from {first}'s private "
                f"records ({base[2]!r}) and the personalised policy keeps it out of the cache."
            )
        else:
            why = (
                f"Under {name}'s profile one side asks about {fam.topic} while the other switches "
                f"to {q.note}, so the answers differ ({base[2]!r} versus {other[2]!r}), and both "
                f"read private data that is never cached."
            )
        rows.append(_row(label, fam, sub, (base, other), (name, name), q.text, why, tail[label]))

    u0, u1 = fam.users
    s0, s1 = _side(fam, u0, fam.base), _side(fam, u1, fam.base)
    if u0["name"] == u1["name"]:
        who = f"{u0['name']}'s own setting changes ({_diff(fam)})"
    else:
        who = f"the profile switches from {u0['name']} to {u1['name']} ({_diff(fam)})"
    why = (
        f"The question {fam.base.text!r} is byte-identical on both sides, but {who}, so the "
        f"correct answer changes from {s0[2]!r} to {s1[2]!r}; a text-keyed cache would hand one "
        f"profile's answer to the other."
    )
    rows.append(
        _row(
            ADVERSARIAL,
            fam,
            fam.adv_axis,
            (s0, s1),
            (u0["name"], u1["name"]),
            "adv",
            why,
            tail[ADVERSARIAL],
        )
    )

    for partner in fam.unrelated_with:
        other_fam = by_key[partner]
        ua, ub = fam.users[0], other_fam.users[1]
        why = (
            f"{ua['name']} asks about {fam.topic} and {ub['name']} about {other_fam.topic}: "
            "different users with unrelated requests, and neither personalised answer may be "
            "cached."
        )
        grounding = f"{fam.grounding}; {lower_first(other_fam.grounding)}."
        rows.append(
            _row(
                UNRELATED,
                fam,
                "different_user_unrelated_request",
                (_side(fam, ua, fam.base), _side(other_fam, ub, other_fam.base)),
                (ua["name"], ub["name"]),
                partner,
                why,
                grounding,
            )
        )
    return rows


def generate(fixture_dir: Path) -> list[DraftRow]:
    """The personalized rows of ``fixture_dir``: every family's rows, in fixture order."""
    return rows_by_family(load_families(fixture_dir), family_rows)
