"""The ``creative`` shard: poems, stories, slogans, jokes, names, toasts.

Every row is MISS by policy (``policy_no_cache``, payload ``{"kind": "policy",
"policy": "creative", "reason": ...}``): whoever asks for a poem again expects
a new poem. The five-class label still records the semantic relation of the two
requests, so the shard also measures whether a cache *knows* the relation.

Fixtures: ``sources/creative/*.json``, each ``{"families": [...]}``. A family is
one hand-written request with everything derived from it::

    {"key": "autumn_rain_haiku",            # family id (grouped CV), unique
     "form": "haiku",                       # what kind of piece, for rationales
     "what": "a haiku about autumn rain",   # the request in words, for rationales
     "grounding": "where such traffic occurs",
     "unrelated_with": ["vegan_bar_names",  # hand-picked partner families; a
                        "bakery_slogan#paraphrase.0"], # "#field.i" takes that variant
     "request": "Write a haiku about autumn rain.",
     "outputs": [str, str],                 # two example outputs of the request
     "surface":    [{"text", "axis", "note"}, ...],            # -> EQUIV
     "paraphrase": [{"text", "axis", "note"}, ...],            # -> PARA_SAFE
     "related":    [{"text", "axis", "note", "output"}, ...],  # -> RELATED_UNSAFE
     "adversarial":[{"text", "axis", "note", "output"}, ...]}  # -> ADVERSARIAL

Each variant gives one row pairing it with the family's request (the variant's
``axis`` is the row's subcategory); each partner gives one UNRELATED row
pairing this family's request with the partner's request, or with the partner's
``surface``/``paraphrase`` variant named by ``#field.i`` (the same request in
other words), so two families may partner each other without repeating a pair.
Partners are chosen so that families linked by UNRELATED rows form small
groups (the split packer keeps each group in one split). Which text sits on side a is decided per
row by a seeded coin, so query_b alone does not reveal the label. The shared
fixture helpers below (:class:`Fixture`, :func:`read_fixtures`, ...) are
also used by the personalized and multi_turn generators.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from ..schema import ADVERSARIAL, EQUIV, PARA_SAFE, RELATED_UNSAFE, UNRELATED
from .common import (
    DraftRow,
    FixtureError,
    coin_order,
    fixture_files,
    fixture_source,
    lower_first,
    read_fixture_json,
)

DOMAIN = "creative"

# --- fixture helpers shared by the creative, personalized and multi_turn generators ---


@dataclass(frozen=True, slots=True)
class Fixture:
    """One parsed fixture file: its path, raw text (for line lookups) and data."""

    path: Path
    text: str
    data: Any

    def where(self, needle: str | None = None) -> str:
        """``path:LINE`` of the first line containing ``needle`` (``path`` if absent)."""
        if needle:
            for lineno, line in enumerate(self.text.splitlines(), 1):
                if needle in line:
                    return f"{self.path}:{lineno}"
        return str(self.path)

    def error(self, item: str | None, message: str) -> FixtureError:
        """A :class:`FixtureError` located at the item whose key is ``item``."""
        needle = f'"{item}"' if item else None
        label = f"item {item!r}: " if item else ""
        return FixtureError(f"{self.where(needle)}: {label}{message}")


def read_fixtures(fixture_dir: Path) -> list[Fixture]:
    """Every ``fixture_dir/*.json`` file in name order, parsed.

    Raises :class:`FixtureError` naming ``path:LINE`` (and the column) for invalid JSON,
    and when the folder holds no fixture at all.
    """
    out = []
    for path in fixture_files(fixture_dir):
        data, text = read_fixture_json(path)
        out.append(Fixture(path, text, data))
    return out


def items_of(fx: Fixture, list_key: str) -> list[dict[str, Any]]:
    """The list ``fx.data[list_key]`` of objects, each with a string ``key``."""
    items = fx.data.get(list_key) if isinstance(fx.data, dict) else None
    if not isinstance(items, list) or not items:
        raise fx.error(None, f"expected a top-level object with a non-empty list {list_key!r}")
    for n, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("key"), str) or not item["key"]:
            raise fx.error(None, f"{list_key}[{n}] must be an object with a non-empty string 'key'")
    return items


class FamilyItems:
    """The ``families`` items of every fixture of a folder, each with its
    fixture, in file then list order; a key used twice is a located
    :class:`FixtureError`. :attr:`fixture_of` maps each key met so far to its
    fixture (to locate what is found wrong once all families are read).
    Shared with the personalized and multi_turn generators."""

    def __init__(self, fixture_dir: Path) -> None:
        self._dir = fixture_dir
        self.fixture_of: dict[str, Fixture] = {}

    def __iter__(self) -> Iterator[tuple[Fixture, dict[str, Any]]]:
        seen = self.fixture_of
        for fx in read_fixtures(self._dir):
            for item in items_of(fx, "families"):
                key = item["key"]
                if key in seen:
                    raise fx.error(key, f"duplicate family key (also in {seen[key].path})")
                seen[key] = fx
                yield fx, item


class Keyed(Protocol):
    @property
    def key(self) -> str: ...


F = TypeVar("F", bound=Keyed)


def rows_by_family(
    families: Sequence[F], family_rows: Callable[[F, dict[str, F]], list[DraftRow]]
) -> list[DraftRow]:
    """Every family's rows, in family order; ``family_rows`` also gets the
    families by key (an UNRELATED row's other side comes from another family)."""
    by_key = {f.key: f for f in families}
    return [r for fam in families for r in family_rows(fam, by_key)]


def req_str(fx: Fixture, item: dict[str, Any], field: str) -> str:
    """``item[field]`` as a non-empty string, or a located :class:`FixtureError`."""
    value = item.get(field)
    if not isinstance(value, str) or not value.strip():
        raise fx.error(item["key"], f"field {field!r} must be a non-empty string")
    return value


def req_list(fx: Fixture, item: dict[str, Any], field: str, *, min_len: int = 1) -> list[Any]:
    """``item[field]`` as a list of at least ``min_len`` entries."""
    value = item.get(field)
    if not isinstance(value, list) or len(value) < min_len:
        raise fx.error(item["key"], f"field {field!r} must be a list of at least {min_len}")
    return value


def sub_str(fx: Fixture, key: str, obj: Any, field: str, where: str) -> str:
    """``obj[field]`` as a non-empty string, where ``obj`` sits inside item ``key``."""
    value = obj.get(field) if isinstance(obj, dict) else None
    if not isinstance(value, str) or not value.strip():
        raise fx.error(key, f"{where}: field {field!r} must be a non-empty string")
    return value


_SENTENCE_END = re.compile(r"[.!?]\s*$")


def sentence(text: str) -> str:
    """``text`` with a capital first letter and a closing full stop."""
    text = text.strip()
    text = text[0].upper() + text[1:]
    return text if _SENTENCE_END.search(text) else text + "."


# --- the creative families ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Variant:
    """A hand-written variant of a family's request."""

    text: str
    axis: str
    note: str
    output: str | None


@dataclass(frozen=True, slots=True)
class Family:
    """One authored creative request and its variants (see the module docstring)."""

    key: str
    form: str
    what: str
    grounding: str
    unrelated_with: tuple[str, ...]
    request: str
    outputs: tuple[str, str]
    surface: tuple[Variant, ...]
    paraphrase: tuple[Variant, ...]
    related: tuple[Variant, ...]
    adversarial: tuple[Variant, ...]
    path: Path


def _variants(
    fx: Fixture, item: dict[str, Any], field: str, *, output: bool
) -> tuple[Variant, ...]:
    out = []
    for n, v in enumerate(req_list(fx, item, field)):
        where = f"{field}[{n}]"
        out.append(
            Variant(
                text=sub_str(fx, item["key"], v, "text", where),
                axis=sub_str(fx, item["key"], v, "axis", where),
                note=sub_str(fx, item["key"], v, "note", where),
                output=sub_str(fx, item["key"], v, "output", where) if output else None,
            )
        )
    return tuple(out)


def load_families(fixture_dir: Path) -> list[Family]:
    """Parse and check every creative fixture; families in file then list order."""
    families: list[Family] = []
    items = FamilyItems(fixture_dir)
    seen = items.fixture_of
    for fx, item in items:
        key = item["key"]
        outputs = req_list(fx, item, "outputs", min_len=2)
        if len(outputs) != 2 or not all(isinstance(o, str) and o.strip() for o in outputs):
            raise fx.error(key, "field 'outputs' must hold exactly two non-empty strings")
        partners = req_list(fx, item, "unrelated_with")
        if not all(isinstance(p, str) for p in partners):
            raise fx.error(key, "field 'unrelated_with' must list family keys")
        fam = Family(
            key=key,
            form=req_str(fx, item, "form"),
            what=req_str(fx, item, "what"),
            grounding=req_str(fx, item, "grounding"),
            unrelated_with=tuple(partners),
            request=req_str(fx, item, "request"),
            outputs=(outputs[0], outputs[1]),
            surface=_variants(fx, item, "surface", output=False),
            paraphrase=_variants(fx, item, "paraphrase", output=False),
            related=_variants(fx, item, "related", output=True),
            adversarial=_variants(fx, item, "adversarial", output=True),
            path=fx.path,
        )
        texts = [fam.request] + [v.text for v in _all_variants(fam)]
        if len(set(texts)) != len(texts):
            raise fx.error(key, "two of the family's requests are identical")
        families.append(fam)
    by_key = {f.key: f for f in families}
    for fam in families:
        for partner in fam.unrelated_with:
            if partner.partition("#")[0] not in by_key:
                raise seen[fam.key].error(
                    fam.key, f"unrelated_with names unknown family {partner!r}"
                )
            try:
                other, _ = partner_text(partner, by_key)
            except (IndexError, ValueError):
                raise seen[fam.key].error(
                    fam.key, f"unrelated_with names unknown variant {partner!r}"
                ) from None
            if other is fam:
                raise seen[fam.key].error(fam.key, "unrelated_with names the family itself")
    return families


#: Variant lists an ``unrelated_with`` reference may name after ``#``.
PARTNER_FIELDS = ("surface", "paraphrase")


def partner_text(ref: str, by_key: dict[str, Family]) -> tuple[Family, Variant | None]:
    """The family an ``unrelated_with`` reference names, and its variant (None: the
    family's request). Raises KeyError/IndexError/ValueError on a bad reference."""
    key, _, var = ref.partition("#")
    fam = by_key[key]
    if not var:
        return fam, None
    field, _, idx = var.partition(".")
    if field not in PARTNER_FIELDS or not idx.isdigit():
        raise ValueError(ref)
    variants: tuple[Variant, ...] = getattr(fam, field)
    return fam, variants[int(idx)]


def _all_variants(fam: Family) -> Iterator[Variant]:
    yield from fam.surface
    yield from fam.paraphrase
    yield from fam.related
    yield from fam.adversarial


# --- rows -----------------------------------------------------------------------

_POLICY_REASON = {
    EQUIV: "the same creative request asked again expects a newly written {form}, not a replay",
    PARA_SAFE: "a reworded request for {a_form} still expects a fresh piece of writing",
    RELATED_UNSAFE: (
        "creative output is never served from cache; here the {form} would also be wrong"
    ),
    ADVERSARIAL: (
        "creative output is never served from cache; "
        "the edited request also needs a different {form}"
    ),
    UNRELATED: "creative output is never served from cache, and these requests are unrelated",
}

_CONSTRUCTION = {
    EQUIV: "paraphrase_rewrite",
    PARA_SAFE: "paraphrase_rewrite",
    RELATED_UNSAFE: "curated",
    ADVERSARIAL: "adversarial_perturbation",
    UNRELATED: "curated",
}

_GROUNDING_TAIL = {
    EQUIV: "a user often resends the same ask, retyped, to get another version",
    PARA_SAFE: "different users phrase the same ask in their own words",
    RELATED_UNSAFE: "follow-up asks keep the theme but change the form or add a requirement",
    ADVERSARIAL: "users reuse a saved prompt and change one word",
    UNRELATED: "one assistant sees many unrelated creative asks in the same hour",
}


def _with_article(noun: str) -> str:
    """``noun`` with its indefinite article: "an acrostic poem", "a haiku"."""
    # Vowel letters that are not vowel sounds ("a one-line", "a unicorn") keep "a".
    vowel_sound = noun[:1].lower() in "aeiou" and not noun.lower().startswith(("one", "uni", "use"))
    return f"{'an' if vowel_sound else 'a'} {noun}"


def _rationale(label: str, fam: Family, v: Variant | None, other: Family | None) -> str:
    """One sentence naming the row's own content: the relation, then the policy."""
    if label == EQUIV:
        assert v is not None
        return (
            f"One side is the plain request for {fam.what} and the other differs only by "
            f"{v.note}, a surface change with the same meaning, yet the creative policy makes it "
            f"a MISS because a repeated ask for {_with_article(fam.form)} wants new writing."
        )
    if label == PARA_SAFE:
        assert v is not None
        return (
            f"Both sides want {fam.what}; the rewording ({v.note}) keeps the intent, so the "
            f"relation is a safe paraphrase, but the creative policy still never replays a cached "
            f"{fam.form}."
        )
    if label == RELATED_UNSAFE:
        assert v is not None
        return (
            f"Both sides share the theme of {fam.what}, but one {v.note}, so the right output "
            f"differs materially, and the creative policy would refuse the cached {fam.form} "
            "anyway."
        )
    if label == ADVERSARIAL:
        assert v is not None
        return (
            f"A one-spot edit ({v.note}) turns the request for {fam.what} into a different "
            f"request whose output must change with it; the creative policy forbids caching here, "
            f"and the near-identical wording shows why similarity alone is unsafe."
        )
    assert other is not None
    worded = ""
    if v is not None:
        how = f"reworded so that it {v.note}" if v in other.paraphrase else f"written with {v.note}"
        worded = f" (the second request {how})"
    return (
        f"The sides ask for unrelated pieces, {fam.what} versus {other.what}{worded}, and under "
        f"the creative policy neither is ever served from cache."
    )


def _row(
    label: str,
    fam: Family,
    subcategory: str,
    base: tuple[str, str],
    variant: tuple[str, str],
    swap_key: str,
    rationale: str,
    other: Family | None = None,
) -> DraftRow:
    """A row pairing ``base`` (text, output) with ``variant``; a seeded coin picks side a."""
    a, b = coin_order((base, variant), DOMAIN, fam.key, label, swap_key)
    grounding = f"{fam.grounding}; {_GROUNDING_TAIL[label]}."
    if other is not None:
        grounding = f"{fam.grounding}, and {lower_first(other.grounding)}."
    return DraftRow(
        domain=DOMAIN,
        subcategory=subcategory,
        label=label,
        query_a=a[0],
        query_b=b[0],
        expected_answer_a=a[1],
        expected_answer_b=b[1],
        rationale=rationale,
        verification_method="policy_no_cache",
        verification_payload={
            "kind": "policy",
            "policy": "creative",
            "reason": sentence(
                _POLICY_REASON[label].format(form=fam.form, a_form=_with_article(fam.form))
            ),
        },
        construction_method=_CONSTRUCTION[label],
        source=fixture_source(fam.path, fam.key),
        real_world_grounding=grounding,
    )


def family_rows(fam: Family, by_key: dict[str, Family]) -> list[DraftRow]:
    """The rows of one family, in label order."""
    rows = []
    # EQUIV / PARA_SAFE: both sides are the same request, so each gets its own fresh example.
    for label, variants in ((EQUIV, fam.surface), (PARA_SAFE, fam.paraphrase)):
        for v in variants:
            rows.append(
                _row(
                    label,
                    fam,
                    v.axis,
                    (fam.request, fam.outputs[0]),
                    (v.text, fam.outputs[1]),
                    v.text,
                    _rationale(label, fam, v, None),
                )
            )
    for label, variants in ((RELATED_UNSAFE, fam.related), (ADVERSARIAL, fam.adversarial)):
        for n, v in enumerate(variants):
            assert v.output is not None
            rows.append(
                _row(
                    label,
                    fam,
                    v.axis,
                    (fam.request, fam.outputs[n % 2]),
                    (v.text, v.output),
                    v.text,
                    _rationale(label, fam, v, None),
                )
            )
    for partner in fam.unrelated_with:
        other, ov = partner_text(partner, by_key)
        rows.append(
            _row(
                UNRELATED,
                fam,
                "different_request",
                (fam.request, fam.outputs[0]),
                (other.request if ov is None else ov.text, other.outputs[1]),
                partner,
                _rationale(UNRELATED, fam, ov, other),
                other,
            )
        )
    return rows


def generate(fixture_dir: Path) -> list[DraftRow]:
    """The creative rows of ``fixture_dir``: every family's rows, in fixture order."""
    return rows_by_family(load_families(fixture_dir), family_rows)
