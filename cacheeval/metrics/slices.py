"""Stratified metrics: the classification metrics on one slice of the rows
(a domain, a five-way label, a difficulty)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .classification import (
    Confusion,
    Estimate,
    accuracy,
    confusion,
    f1,
    fhr,
    hit_rate,
    precision,
    recall,
)


@dataclass(frozen=True, slots=True)
class Slice:
    """Every classification metric restricted to the rows whose key is ``key``.

    On a label slice, ``hit_rate`` (share of rows served) is the headline for
    EQUIV/PARA_SAFE and ``fhr`` for the MISS classes; a HIT-label slice can
    still have an FHR when policy rows (``policy_no_cache``) force some of its
    rows to MISS.
    """

    key: str
    n: int
    confusion: Confusion
    accuracy: Estimate
    precision: Estimate
    recall: Estimate
    f1: Estimate
    fhr: Estimate
    hit_rate: Estimate


def slice_of(key: str, c: Confusion) -> Slice:
    """All metrics of one slice from its confusion counts."""
    return Slice(
        key=key,
        n=c.n,
        confusion=c,
        accuracy=accuracy(c),
        precision=precision(c),
        recall=recall(c),
        f1=f1(c),
        fhr=fhr(c),
        hit_rate=hit_rate(c),
    )


def slices(
    keys: Sequence[str | None],
    y_true: Sequence[int],
    y_pred: Sequence[bool],
    order: Sequence[str],
) -> tuple[Slice, ...]:
    """One :class:`Slice` per key present, in ``order`` then alphabetically for
    keys outside it; rows whose key is None are left out."""
    if not len(keys) == len(y_true) == len(y_pred):
        raise ValueError("keys, y_true and y_pred differ in length")
    groups: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        if key is not None:
            groups.setdefault(key, []).append(i)
    return tuple(
        slice_of(k, confusion([y_true[i] for i in groups[k]], [y_pred[i] for i in groups[k]]))
        for k in slice_order(groups, order)
    )


def slice_order(present: Iterable[str], order: Sequence[str]) -> list[str]:
    """The keys present, in ``order`` first, then alphabetically.

    >>> slice_order({"zeta", "math", "code"}, ("math", "code"))
    ['math', 'code', 'zeta']
    """
    present = set(present)
    known = set(order)
    return [k for k in order if k in present] + sorted(k for k in present if k not in known)
