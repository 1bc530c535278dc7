"""Is the committed verifier what this code trains on this machine? The check the
training script and the report script run, and the only code that writes the
committed model.

The committed model (``model/verifier.txt``, ``meta.json``) comes with the table of
every train and dev row it was trained and certified on, features included
(``model/features.jsonl``, :func:`~.training.table_records`; its sha256 is in
``meta.json``). :func:`check_committed` then tells three cases apart:

* **reproduced**: retraining on the features computed here gives the committed
  model byte for byte;
* **CPU noise**: the features computed here differ from the table only by
  floating-point noise - each differing value by at most one rounding step of
  :mod:`.features.precision` (a cosine that fell on the other side of a rounding
  midpoint). Then the model is retrained *from the table*, which must give the
  committed bytes (it checks LightGBM and the certification, byte for byte), and
  the committed model is kept and used; what differs is listed feature by feature;
* **other data**: rows, labels, tiers or values beyond the noise differ (a new
  dataset or new features). The difference is listed; the committed files are
  kept unless the caller asks to write (``--write-model``): a committed artefact
  is never rewritten silently.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cacheeval.support.jsonio import JsonlError, iter_jsonl, sha256_file, write_bytes_atomic

from .features import FEATURE_NAMES, quantize
from .features.precision import STEP
from .model import Verifier
from .training import (
    TABLE_SPLITS,
    PairCase,
    Shipped,
    case_from_record,
    fit_shipped,
    score_cases,
    table_bytes,
)

TABLE_FILE = "features.jsonl"
#: The largest difference between a value computed here and the table's that counts
#: as CPU noise: one rounding step (plus the float error of the subtraction).
NOISE = STEP * 1.001
#: The name :class:`Drift` gives the query cosine of a row without features.
GATE_COSINE = "cos_query (recall gate)"


@dataclass(frozen=True, slots=True)
class FeatureDiff:
    """One feature's differences between two tables: in how many rows it differs,
    the largest absolute difference (inf: missing on one side only) and the row
    where it is largest."""

    name: str
    rows: int
    max_abs: float
    worst_id: str


@dataclass(frozen=True, slots=True)
class Drift:
    """What differs between the cases computed here and the committed table (train
    and dev rows only)."""

    only_committed: tuple[str, ...]
    only_here: tuple[str, ...]
    #: rows whose label, split or tier (policy/exact/verifier) differ
    changed: tuple[str, ...]
    features: tuple[FeatureDiff, ...]

    @property
    def empty(self) -> bool:
        return not (self.only_committed or self.only_here or self.changed or self.features)

    @property
    def values(self) -> int:
        """How many feature values differ."""
        return sum(f.rows for f in self.features)

    @property
    def is_noise(self) -> bool:
        """Only values differ, each by at most one rounding step (:data:`NOISE`)."""
        structural = self.only_committed or self.only_here or self.changed
        return not structural and all(f.max_abs <= NOISE for f in self.features)

    def lines(self) -> list[str]:
        """One line per kind of difference, feature by feature."""
        out: list[str] = []
        for what, ids in (
            ("rows only in the committed table", self.only_committed),
            ("rows only computed here", self.only_here),
            ("rows whose label, split or tier differ", self.changed),
        ):
            if ids:
                shown = ", ".join(ids[:5]) + (", ..." if len(ids) > 5 else "")
                out.append(f"{len(ids)} {what} ({shown})")
        for f in self.features:
            out.append(
                f"{f.name}: {f.rows} row(s) differ, max |difference| {f.max_abs:.6g} "
                f"(row {f.worst_id})"
            )
        return out


def _same(x: float, y: float) -> bool:
    return x == y or (math.isnan(x) and math.isnan(y))


def _gap(x: float, y: float) -> float:
    if math.isnan(x) or math.isnan(y):
        return math.inf
    return abs(x - y)


def compare(here: Sequence[PairCase], committed: Sequence[PairCase]) -> Drift:
    """The :class:`Drift` from ``committed`` to the train and dev cases of ``here``.

    >>> from adapters.verified_cache.training import PairCase
    >>> rest = (0.0,) * (len(FEATURE_NAMES) - 1)
    >>> a = PairCase("r1", 1, "train", "qa", "EQUIV", "f", "", "", 0.9, (0.9,) + rest)
    >>> b = PairCase("r1", 1, "train", "qa", "EQUIV", "f", "", "", 0.9, (0.9001,) + rest)
    >>> d = compare([b], [a]); d.lines(), d.is_noise
    (['cos_query: 1 row(s) differ, max |difference| 0.0001 (row r1)'], True)
    """
    mine = {c.id: c for c in here if c.split in TABLE_SPLITS}
    theirs = {c.id: c for c in committed}
    only_committed = tuple(i for i in theirs if i not in mine)
    only_here = tuple(i for i in mine if i not in theirs)
    changed: list[str] = []
    gaps: dict[str, list[tuple[float, str]]] = {}
    for rid, old in theirs.items():
        new = mine.get(rid)
        if new is None:
            continue
        if (new.y, new.split, new.settled) != (old.y, old.split, old.settled):
            changed.append(rid)
            continue
        if new.features is not None and old.features is not None:
            pairs = list(zip(FEATURE_NAMES, new.features, old.features, strict=True))
        else:
            # a settled row: only the query cosine (the recall gate's input) is kept
            # (for a row with features it is the feature cos_query)
            pairs = [(GATE_COSINE, new.cos_query, old.cos_query)]
        for name, x, y in pairs:
            x, y = quantize(x), quantize(y)
            if not _same(x, y):
                gaps.setdefault(name, []).append((_gap(x, y), rid))
    order = {n: i for i, n in enumerate((GATE_COSINE, *FEATURE_NAMES))}
    features = tuple(
        FeatureDiff(name, len(g), max(g)[0], max(g)[1])
        for name, g in sorted(gaps.items(), key=lambda kv: order[kv[0]])
    )
    return Drift(only_committed, only_here, tuple(changed), features)


def read_table(directory: Path) -> list[PairCase]:
    """The committed feature table; FileNotFoundError, or ValueError as
    ``path:LINE: what is wrong``."""
    path = directory / TABLE_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found")
    out: list[PairCase] = []
    try:
        for line, record in iter_jsonl(path):
            try:
                out.append(case_from_record(record))
            except ValueError as e:
                raise ValueError(f"{path}:{line}: {e}") from None
    except JsonlError as e:
        raise ValueError(str(e)) from None
    return out


def write_model(shipped: Shipped, cases: Sequence[PairCase], directory: Path) -> None:
    """Write the model, its meta and its feature table (each atomically)."""
    shipped.verifier.save(directory)
    write_bytes_atomic(directory / TABLE_FILE, table_bytes(cases))


@dataclass(frozen=True, slots=True)
class Check:
    """What :func:`check_committed` found: the model to use (``shipped``), what to
    say about it, whether ``directory`` holds that model (worker processes load it
    from there), the feature drift (None: no usable table) and whether it wrote."""

    shipped: Shipped
    status: str
    on_disk: bool
    drift: Drift | None
    wrote: bool


def _short(sha: str) -> str:
    return sha[:12] + "..."


def _described(shipped: Shipped) -> str:
    meta = shipped.verifier.meta
    return (
        f"model sha256 {_short(meta.model_sha256)}, training data sha256 "
        f"{_short(str(meta.training.get('data_sha256', '')))}, threshold {meta.threshold:.5f}"
    )


def _load(directory: Path) -> tuple[Verifier | None, list[PairCase] | None, str]:
    """The committed model and table, and why either is unusable ("" when both are)."""
    try:
        committed = Verifier.load(directory)
    except (FileNotFoundError, ValueError) as e:
        return None, None, f"no usable committed model ({e})"
    try:
        table = read_table(directory)
    except (FileNotFoundError, ValueError) as e:
        return committed, None, f"no usable committed feature table ({e})"
    want = committed.meta.training.get("feature_table_sha256")
    got = sha256_file(directory / TABLE_FILE)
    if want != got:
        return (
            committed,
            None,
            (
                f"{directory / TABLE_FILE} (sha256 {_short(got)}) is not the table "
                f"meta.json records ({_short(str(want))})"
            ),
        )
    return committed, table, ""


def _kept(committed: Verifier, retrained: Shipped, cases: Sequence[PairCase]) -> Shipped:
    """The committed model as a :class:`Shipped`, scored on ``cases`` (its certificate
    from ``meta.json``; ``retrained``'s only when it carries none)."""
    cert = committed.certificate or retrained.operating_point
    scored = score_cases(cases, committed, committed.gate_threshold, cert.point)
    return Shipped(committed, cert, scored)


def meta_diff(a: Verifier, b: Verifier) -> list[str]:
    """The ``meta.json`` keys (``training.<key>`` inside the training record) whose
    values differ between two models; empty when the artefacts are the same."""
    da, db = a.meta.to_dict(), b.meta.to_dict()
    out = [k for k in da if k != "training" and da[k] != db.get(k)]
    ta, tb = da["training"], db["training"]
    out += [f"training.{k}" for k in sorted(set(ta) | set(tb)) if ta.get(k) != tb.get(k)]
    return out


def check_committed(
    cases: Sequence[PairCase],
    directory: Path,
    *,
    data_id: str,
    embedder: str,
    write: bool = False,
) -> Check:
    """Retrain on ``cases`` and compare with the committed model in ``directory``
    (see the module docstring): the artefact is reproduced when ``verifier.txt``
    and every field of ``meta.json`` (which holds the sha256 of the training data
    and of the feature table) come out equal. Writes only with ``write=True``, and
    only when the committed model is not reproduced."""
    fresh = fit_shipped(cases, data_id=data_id, embedder=embedder)
    committed, table, problem = _load(directory)
    drift = compare(cases, table) if table is not None else None
    if committed is not None and table is not None and not meta_diff(fresh.verifier, committed):
        status = (
            "reproduced: retraining on the features computed here gives the committed "
            f"model, meta and feature table byte for byte ({_described(fresh)})"
        )
        return Check(fresh, status, True, drift, False)
    noise = committed is not None and table is not None and drift is not None and drift.is_noise
    if committed is not None and table is not None and drift is not None and noise:
        replay = fit_shipped(table, data_id=data_id, embedder=embedder)
        here = (
            f"the features computed here differ from the committed table in {drift.values} "
            "value(s), each by at most one rounding step (floating-point differences "
            "between CPUs; listed below)"
        )
        differs = meta_diff(replay.verifier, committed)
        if not differs:
            status = (
                f"reproduced from the committed feature table: {here}. Retraining from "
                "the table gives the committed model and meta byte for byte "
                f"({_described(replay)}); the committed model is kept and used "
                f"(retraining on this CPU's features would give {_described(fresh)}; "
                "not written)"
            )
            return Check(_kept(committed, replay, cases), status, True, drift, False)
        problem = (
            f"{here}, and retraining from the committed table does not give the committed "
            f"artefact ({_described(replay)}; differs in {', '.join(differs)})"
        )
    elif drift is not None and not drift.empty:
        problem = (
            "the committed model was trained on other data: the train and dev rows "
            "computed here differ from its feature table (listed below)"
        )
    elif committed is not None and table is not None:
        problem = (
            "retraining on the very features of the committed table gives another artefact "
            f"({_described(fresh)}; differs in {', '.join(meta_diff(fresh.verifier, committed))})"
        )
    if write:
        write_model(fresh, cases, directory)
        status = f"{problem}. Retrained on the current train split and wrote {directory} " \
            f"({_described(fresh)}): commit it"  # fmt: skip
        return Check(fresh, status, True, drift, True)
    if committed is not None and noise:
        # the same data up to CPU noise, but the artefact does not come out the same
        # (another LightGBM?): keep serving the committed model, and say so
        status = f"{problem}. The committed model is kept and used (not rewritten)"
        return Check(_kept(committed, fresh, cases), status, True, drift, False)
    status = (
        f"{problem}. This run uses a model retrained in memory on the current train split "
        f"({_described(fresh)}); the committed files are left as they are (rerun with "
        "--write-model to replace them)"
    )
    return Check(fresh, status, False, drift, False)
