"""Assemble the domain shards into the benchmark files.

Inputs: ``<root>/domains/<domain>.jsonl`` for every domain of
:data:`~cacheeval.schema.DOMAINS` whose shard exists. Outputs (canonical, under
``--out-dir``, default the repository root):

* ``cachebench.jsonl``: every row with its ``split``, sorted by DOMAINS order
  then id; test rows carry null in every field of
  :data:`~cacheeval.schema.HIDDEN_TEST_FIELDS`.
* ``private/test_labels.jsonl`` (git-ignored): per test row, ``id`` plus the
  withheld fields, in that key order and in the order of the public file.
* ``domains/manifest.json``: see :mod:`cacheeval.pipeline.manifest`.

Nothing is written unless every check of :mod:`cacheeval.pipeline.checks` passes;
all violations are printed (``shard:LINE: id: reason``) and the exit status is 1.

``--check`` regenerates every shard of a domain with a generator (every
domain of :data:`cacheeval.pipeline.domains.SPECS`, through
:func:`cacheeval.pipeline.generate.generate_shard`), keeps the committed shard
of a domain without one, assembles the lot in a temporary directory, and exits
1 naming every committed file whose bytes differ.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..schema import DOMAINS, HIDDEN_TEST_FIELDS, ROW_FIELDS, SPLITS
from ..support.jsonio import JsonlError, dumps_pretty, jsonl_bytes, sha256_bytes, write_bytes_atomic
from ..support.layout import REPO_ROOT
from .checks import BuildFailed, check_shards
from .domains import MATRIX, SPECS
from .generate import generate_shard
from .manifest import DATASET_PATH, LABELS_PATH, MANIFEST_PATH, FileInfo, build_manifest
from .shards import ShardRow, present_domains, read_shard, shard_path
from .splits import assign_splits

__all__ = [
    "Build",
    "BuildFailed",
    "ShardMaker",
    "assemble",
    "build_dir",
    "check_build",
    "regenerate_shards",
    "write_build",
]


@dataclass(frozen=True)
class Build:
    """The outputs of one assembly, as bytes keyed by path relative to the out dir."""

    files: dict[str, bytes]
    rows: list[dict[str, Any]]  # full rows (labels and split), file order
    present: list[str]
    missing: list[str]
    notes: list[str] = field(default_factory=list)


def display_path(path: Path) -> str:
    """``path`` relative to the working directory when it lies below it, else as is."""
    rel = os.path.relpath(path)
    return str(path) if rel.startswith("..") else Path(rel).as_posix()


def load_shards(
    shards_dir: Path, *, display_dir: str | None = None
) -> tuple[dict[str, list[ShardRow]], dict[str, bytes]]:
    """The rows and the raw bytes of every present shard. Messages name
    ``display_dir/<domain>.jsonl`` (default: the path itself, relative when
    possible). Raises BuildFailed on a line that is not JSON."""
    rows: dict[str, list[ShardRow]] = {}
    raw: dict[str, bytes] = {}
    errors: list[str] = []
    for d in present_domains(shards_dir):
        p = shard_path(shards_dir, d)
        raw[d] = p.read_bytes()
        shown = f"{display_dir}/{d}.jsonl" if display_dir is not None else display_path(p)
        try:
            rows[d] = read_shard(p, d, display=shown)
        except JsonlError as e:
            errors.append(str(e))
    if errors:
        raise BuildFailed(errors)
    if not rows:
        raise BuildFailed([f"no domain shards (<domain>.jsonl) in {display_path(shards_dir)}"])
    return rows, raw


def public_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """The row as published: a test row with its withheld fields nulled."""
    if row["split"] != "test":
        return dict(row)
    return {f: (None if f in HIDDEN_TEST_FIELDS else row[f]) for f in ROW_FIELDS}


def label_record(row: Mapping[str, Any]) -> dict[str, Any]:
    """The private labels-file record of a test row: id + HIDDEN_TEST_FIELDS."""
    return {"id": row["id"], **{f: row[f] for f in HIDDEN_TEST_FIELDS}}


def assemble(
    shards: Mapping[str, Sequence[ShardRow]],
    raw: Mapping[str, bytes],
    *,
    matrix: Mapping[str, Sequence[int]] = MATRIX,
    require_all: bool = False,
    previous_manifest: Mapping[str, Any] | None = None,
) -> Build:
    """Check the shards and produce the output files (pure: nothing is written).

    Raises :class:`BuildFailed` with every violation when a check fails.
    """
    if not shards:
        raise BuildFailed(["no domain shards"])
    violations = check_shards(shards, matrix=matrix, require_all=require_all)
    if violations:
        raise BuildFailed(violations)
    present = [d for d in DOMAINS if d in shards]
    shard_rows = [sr.data for d in present for sr in shards[d]]
    splits = assign_splits(shard_rows)
    full = [
        {**{f: r[f] for f in ROW_FIELDS if f != "split"}, "split": splits[r["id"]]}
        for r in shard_rows
    ]
    full.sort(key=lambda r: (DOMAINS.index(r["domain"]), r["id"]))
    dataset = jsonl_bytes(public_row(r) for r in full)
    labels = jsonl_bytes(label_record(r) for r in full if r["split"] == "test")
    n_test = sum(1 for r in full if r["split"] == "test")
    manifest = build_manifest(
        shards=[
            (d, FileInfo(f"domains/{d}.jsonl", sha256_bytes(raw[d]), len(shards[d])))
            for d in present
        ],
        dataset=FileInfo(DATASET_PATH, sha256_bytes(dataset), len(full)),
        test_labels=FileInfo(LABELS_PATH, sha256_bytes(labels), n_test),
        rows=full,
        previous=previous_manifest,
    )
    return Build(
        files={
            DATASET_PATH: dataset,
            LABELS_PATH: labels,
            MANIFEST_PATH: dumps_pretty(manifest).encode("utf-8"),
        },
        rows=full,
        present=present,
        missing=[d for d in DOMAINS if d not in shards],
    )


def read_previous_manifest(path: Path) -> dict[str, Any] | None:
    """The manifest a build replaces (for its preserved keys), or None."""
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise BuildFailed([f"{display_path(path)}: not valid JSON ({e})"]) from None
    if not isinstance(data, dict):
        raise BuildFailed([f"{display_path(path)}: expected a JSON object"])
    return data


def build_dir(
    shards_dir: Path,
    *,
    require_all: bool = False,
    matrix: Mapping[str, Sequence[int]] = MATRIX,
    previous_manifest: Path | None = None,
    display_dir: str | None = None,
) -> Build:
    """Read ``shards_dir`` and assemble (nothing is written)."""
    shards, raw = load_shards(shards_dir, display_dir=display_dir)
    prev = read_previous_manifest(previous_manifest) if previous_manifest is not None else None
    return assemble(shards, raw, matrix=matrix, require_all=require_all, previous_manifest=prev)


def write_build(build: Build, out_dir: Path) -> list[str]:
    """Write the outputs under ``out_dir`` (only files whose bytes change);
    returns the relative paths written."""
    written = []
    for rel, data in build.files.items():
        p = out_dir / rel
        if p.is_file() and p.read_bytes() == data:
            continue
        write_bytes_atomic(p, data, mode=0o600 if rel.startswith("private/") else 0o644)
        written.append(rel)
    return written


# --- --check: regenerate and compare -------------------------------------------------


#: Makes one domain's shard rows (numbered) from a sources directory.
ShardMaker = Callable[[Path], list[dict[str, Any]]]


def default_shard_makers() -> dict[str, ShardMaker]:
    """domain -> ``generate_shard`` of its spec, reading ``sources_dir/<domain>``."""

    def maker(domain: str) -> ShardMaker:
        return lambda sources_dir: generate_shard(domain, sources_dir / domain)

    return {d: maker(d) for d in SPECS}


def regenerate_shards(
    sources_dir: Path,
    committed_dir: Path,
    dest_dir: Path,
    generators: Mapping[str, ShardMaker] | None = None,
) -> tuple[list[str], list[str]]:
    """Write into ``dest_dir`` every committed shard: regenerated where a
    generator exists, else copied from ``committed_dir``. ``generators``
    (domain -> shard maker) defaults to every domain's spec
    (:func:`default_shard_makers`).

    A domain without a committed shard is a domain still being written: it is
    not part of the check (its generator is not run) and only earns a note, so
    ``--check`` answers exactly "do the committed files reproduce?".
    Returns (notes, errors).
    """
    makers = default_shard_makers() if generators is None else generators
    notes: list[str] = []
    errors: list[str] = []
    regenerated, kept, unchecked = [], [], []
    dest_dir.mkdir(parents=True, exist_ok=True)
    for d in DOMAINS:
        committed = shard_path(committed_dir, d)
        has_generator = d in makers
        if not committed.is_file():
            if has_generator:
                unchecked.append(d)
            continue
        if not has_generator:
            shutil.copyfile(committed, shard_path(dest_dir, d))
            kept.append(d)
            continue
        try:
            data = jsonl_bytes(makers[d](sources_dir))
        except Exception as e:  # another author's generator: report, do not crash
            errors.append(f"generator {d} failed: {type(e).__name__}: {e}")
            continue
        write_bytes_atomic(shard_path(dest_dir, d), data)
        regenerated.append(d)
    if regenerated:
        notes.append(f"regenerated {len(regenerated)} shard(s): {', '.join(regenerated)}")
    if kept:
        notes.append(f"no generator module, committed shard used as is: {', '.join(kept)}")
    if unchecked:
        notes.append(
            f"generator but no committed shard, not checked: {', '.join(unchecked)} "
            "(run `cacheeval generate DOMAIN` to create the shard)"
        )
    return notes, errors


def first_difference(a: bytes, b: bytes) -> int:
    """1-based line number of the first line where ``a`` and ``b`` differ."""
    la, lb = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(la, lb, strict=False), 1):
        if x != y:
            return i
    return min(len(la), len(lb)) + 1


def compare_files(expected: Mapping[str, bytes], root: Path) -> list[str]:
    """One line per file under ``root`` whose bytes differ from ``expected``."""
    out = []
    for rel, data in expected.items():
        p = root / rel
        if not p.is_file():
            out.append(f"{rel} (missing)")
            continue
        have = p.read_bytes()
        if have != data:
            out.append(f"{rel} (first difference at line {first_difference(have, data)})")
    return out


def check_build(
    root: Path,
    out_dir: Path,
    *,
    sources_dir: Path | None = None,
    require_all: bool = False,
    matrix: Mapping[str, Sequence[int]] = MATRIX,
    generators: Mapping[str, ShardMaker] | None = None,
) -> tuple[list[str], list[str]]:
    """Rebuild from scratch in a temp dir and compare with what is committed.

    Returns (notes, differences): every shard of ``root/domains`` and the
    build outputs under ``out_dir`` that differ (the labels file only when it
    exists locally). Raises BuildFailed when the rebuild itself fails.
    """
    committed_shards = root / "domains"
    with tempfile.TemporaryDirectory(prefix="cacheeval-check-") as tmp:
        tmp_root = Path(tmp)
        notes, errors = regenerate_shards(
            sources_dir or root / "sources", committed_shards, tmp_root / "domains", generators
        )
        if errors:
            raise BuildFailed(errors)
        fresh = build_dir(
            tmp_root / "domains",
            require_all=require_all,
            matrix=matrix,
            previous_manifest=out_dir / MANIFEST_PATH,
            display_dir="domains (regenerated)",
        )
        diffs: list[str] = []
        for d in DOMAINS:
            fresh_shard = shard_path(tmp_root / "domains", d)
            if fresh_shard.is_file():
                diffs += compare_files({f"domains/{d}.jsonl": fresh_shard.read_bytes()}, root)
        outputs = dict(fresh.files)
        if not (out_dir / LABELS_PATH).is_file():
            outputs.pop(LABELS_PATH)
            notes.append(f"{LABELS_PATH} is not present locally: not compared")
        diffs += compare_files(outputs, out_dir)
    return notes, diffs


# --- command line ----------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--root",
        type=Path,
        default=REPO_ROOT,
        help="repository root: shards in ROOT/domains, sources in ROOT/sources "
        "(default: this checkout)",
    )
    parser.add_argument(
        "--out-dir",
        type=Path,
        default=None,
        help="write cachebench.jsonl, private/ and domains/manifest.json here (default: ROOT)",
    )
    parser.add_argument(
        "--require-all",
        action="store_true",
        help=f"fail unless all {len(DOMAINS)} domain shards exist",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="regenerate every shard and rebuild in a temp dir; "
        "exit 1 naming every committed file that differs",
    )


def run(args: argparse.Namespace) -> int:
    root: Path = args.root
    out_dir: Path = args.out_dir if args.out_dir is not None else root
    try:
        if args.check:
            return _run_check(root, out_dir, require_all=args.require_all)
        build = build_dir(
            root / "domains",
            require_all=args.require_all,
            previous_manifest=out_dir / MANIFEST_PATH,
        )
    except BuildFailed as e:
        print(f"build failed: {len(e.violations)} problem(s)", file=sys.stderr)
        for v in e.violations:
            print(f"  {v}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"build failed: {e}", file=sys.stderr)
        return 1
    written = write_build(build, out_dir)
    print(summary(build))
    for rel in build.files:
        state = "wrote" if rel in written else "unchanged"
        print(f"  {state} {display_path(out_dir / rel)}")
    return 0


def _run_check(root: Path, out_dir: Path, *, require_all: bool) -> int:
    notes, diffs = check_build(root, out_dir, require_all=require_all)
    for n in notes:
        print(f"check: {n}")
    if diffs:
        print(f"check: {len(diffs)} committed file(s) differ from a fresh build:")
        for d in diffs:
            print(f"  {d}")
        print(
            "check: regenerate with `cacheeval generate`, rebuild with `cacheeval build` "
            "and commit the result"
        )
        return 1
    print("check: every committed file matches a fresh build")
    return 0


def summary(build: Build) -> str:
    """A few lines describing a build."""
    rows = build.rows
    n = len(rows)
    by_split = {s: sum(1 for r in rows if r["split"] == s) for s in SPLITS}
    hits = sum(1 for r in rows if r["binary_label"] == "HIT")
    lines = [
        f"assembled {n} rows from {len(build.present)}/{len(DOMAINS)} shards: "
        + ", ".join(f"{s} {by_split[s]}" for s in SPLITS)
        + f"; HIT {hits} / MISS {n - hits}"
    ]
    if build.missing:
        lines.append(
            f"missing shards ({len(build.missing)}): {', '.join(build.missing)} "
            "(the matrix is enforced for present shards only; --require-all to insist)"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="assemble", description="Assemble domain shards into cachebench.jsonl + manifest."
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
