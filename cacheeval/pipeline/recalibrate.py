"""The whole recalibration: score every labelled row, write
``sources/difficulty.json``, regenerate the shards with it in effect, rebuild,
and write ``reports/DIFFICULTY.md`` (run by ``scripts/recalibrate_difficulty.py``)."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..support.jsonio import dumps_pretty, iter_jsonl, write_bytes_atomic, write_jsonl
from ..support.layout import using_difficulty_file
from .assemble import (
    Build,
    ShardMaker,
    build_dir,
    default_shard_makers,
    regenerate_shards,
    write_build,
)
from .calibration import Calibration, Scored, calibrate, calibration_document
from .checks import BuildFailed
from .difficulty import (
    CONTENT_FIELDS,
    DIFFICULTY_PATH,
    CommittedCalibration,
    apply_calibration,
    content_key,
    load_calibration,
)
from .difficulty_report import REPORT_PATH, report_markdown
from .domains import MATRIX
from .manifest import MANIFEST_PATH
from .similarity import PairScorer, score_rows


@dataclass(frozen=True)
class Outcome:
    """What :func:`recalibrate` did."""

    calibration: Calibration
    report: str
    written: list[str]
    notes: list[str]


@dataclass(frozen=True)
class _Pass:
    """One attempt: the scored rows, their calibration, and the rebuild with it."""

    rows: list[dict[str, Any]]
    calibration: Calibration
    document: bytes
    build: Build
    out_dir: Path
    notes: list[str]
    changed: list[str]


def recalibrate(
    root: Path,
    ensemble: Sequence[PairScorer],
    held_out: PairScorer,
    *,
    sources_dir: Path | None = None,
    require_all: bool = False,
    matrix: Mapping[str, Sequence[int]] = MATRIX,
    generators: Mapping[str, ShardMaker] | None = None,
    attempts: int = 3,
    log: Callable[[str], None] = lambda msg: print(msg, file=sys.stderr),
) -> Outcome:
    """Score every labelled row, write the calibration, regenerate the shards and
    rebuild, all under ``root`` (fixtures from ``sources_dir``, default
    ``root/sources``).

    Everything is computed in a temporary directory first; ``root`` is only
    touched once the regenerated shards assemble cleanly and every row carries
    its calibrated difficulty, and then only files whose bytes change. When a
    fixture changes while the models score (the regenerated rows are not the
    scored ones), the whole pass is repeated, up to ``attempts`` times. Raises
    :class:`~cacheeval.pipeline.checks.BuildFailed` when a generator fails, the
    shards do not assemble, or the rows never settle. Outputs:
    ``sources/difficulty.json``, ``domains/<domain>.jsonl``, the build files
    and ``reports/DIFFICULTY.md``. ``matrix`` and ``generators`` (domain ->
    shard maker, default every domain's spec) are as in
    :func:`~cacheeval.pipeline.assemble.check_build`.
    """
    sources = sources_dir if sources_dir is not None else root / "sources"
    makers = default_shard_makers() if generators is None else generators
    with tempfile.TemporaryDirectory(prefix="cacheeval-difficulty-") as tmp_name:
        for attempt in range(1, attempts + 1):
            tmp = Path(tmp_name) / f"attempt-{attempt}"
            done = _one_pass(
                root, sources, tmp, ensemble, held_out, makers, require_all, matrix, log
            )
            if done.changed and attempt == attempts:
                raise BuildFailed(done.changed)
            if not done.changed:
                break
            log(
                f"{len(done.changed)} row(s) changed while scoring (fixtures edited during the "
                f"run?); scoring again (attempt {attempt + 1} of {attempts})"
            )
        report = report_markdown(done.calibration, [r["difficulty"] for r in done.rows])
        written = _write_outputs(root, done, report)
    return Outcome(done.calibration, report, written, done.notes)


def _one_pass(
    root: Path,
    sources: Path,
    tmp: Path,
    ensemble: Sequence[PairScorer],
    held_out: PairScorer,
    makers: Mapping[str, ShardMaker],
    require_all: bool,
    matrix: Mapping[str, Sequence[int]],
    log: Callable[[str], None],
) -> _Pass:
    """Fresh rows, scored and calibrated, then regenerated and rebuilt with the
    calibration in effect (all under ``tmp``). Raises BuildFailed when a
    generator fails, the build fails or a row misses its calibrated difficulty."""
    committed = root / "domains"
    # 1. Fresh rows, with no calibration in effect (difficulty is not an input).
    with using_difficulty_file(tmp / "no-calibration.json"):
        notes, errors = regenerate_shards(sources, committed, tmp / "fresh", makers)
        if errors:
            raise BuildFailed(errors)
        fresh = build_dir(
            tmp / "fresh", require_all=require_all, matrix=matrix, display_dir="domains"
        )
    rows = fresh.rows
    log(f"scoring {len(rows)} rows from {len(fresh.present)} shard(s)")

    # 2. Score and calibrate.
    scored = []
    for scorer in (*ensemble, held_out):
        log(f"  {scorer.name} ...")
        scored.append(Scored(scorer.name, scorer.version, score_rows(rows, scorer)))
    cal = calibrate(rows, scored[:-1], scored[-1])
    doc_bytes = dumps_pretty(calibration_document(cal)).encode("utf-8")
    calib_tmp = tmp / "difficulty.json"
    write_bytes_atomic(calib_tmp, doc_bytes)
    committed_cal = load_calibration(calib_tmp)
    assert committed_cal is not None

    # 3. Regenerate with the calibration in effect and rebuild.
    out_dir = tmp / "out"
    with using_difficulty_file(calib_tmp):
        _, errors = regenerate_shards(sources, committed, out_dir, makers)
        if errors:
            raise BuildFailed(errors)
        # A shard without a generator is copied as is: calibrate it in place.
        for d in fresh.present:
            if d not in makers:
                _calibrate_shard_file(out_dir / f"{d}.jsonl", committed_cal)
                notes.append(f"{d}: no generator, difficulty rewritten in the committed shard")
        build = build_dir(
            out_dir,
            require_all=require_all,
            matrix=matrix,
            previous_manifest=root / MANIFEST_PATH,
            display_dir="domains",
        )
    changed, wrong = _uncalibrated(build.rows, committed_cal)
    if wrong:
        raise BuildFailed(wrong + changed)
    return _Pass(rows, cal, doc_bytes, build, out_dir, notes, changed)


def _write_outputs(root: Path, done: _Pass, report: str) -> list[str]:
    """Write the calibration, the report, the shards and the build under
    ``root`` (only files whose bytes change); the relative paths written."""
    written = []
    outputs: dict[str, bytes] = {
        DIFFICULTY_PATH: done.document,
        REPORT_PATH: report.encode("utf-8"),
    }
    for d in done.build.present:
        outputs[f"domains/{d}.jsonl"] = (done.out_dir / f"{d}.jsonl").read_bytes()
    for rel, data in outputs.items():
        p = root / rel
        if p.is_file() and p.read_bytes() == data:
            continue
        write_bytes_atomic(p, data)
        written.append(rel)
    return written + write_build(done.build, root)


def _uncalibrated(
    rows: Sequence[Mapping[str, Any]], calibration: CommittedCalibration
) -> tuple[list[str], list[str]]:
    """Regenerated rows that do not carry their calibrated difficulty, as
    (rows that were not scored: changed content or label, rows whose
    difficulty differs from their entry), one message each."""
    changed, wrong = [], []
    for r in rows:
        entry = calibration.entries.get(content_key(r))
        if entry is None or entry.binary_label != r["binary_label"]:
            changed.append(
                f"{r['id']}: this pair was not among the scored rows; its content or label "
                "changed between scoring and regeneration"
            )
        elif entry.difficulty != r["difficulty"]:
            wrong.append(
                f"{r['id']}: difficulty {r['difficulty']!r}, calibrated {entry.difficulty!r} "
                "(does its shard maker number rows through number_rows?)"
            )
    return changed, wrong


def _calibrate_shard_file(path: Path, calibration: CommittedCalibration) -> None:
    rows = []
    for _, data in iter_jsonl(path):
        if isinstance(data, dict) and set(CONTENT_FIELDS) <= set(data):
            data = {**data, "difficulty": apply_calibration(data, calibration)}
        rows.append(data)
    write_jsonl(path, rows)
