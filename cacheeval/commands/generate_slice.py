"""``cacheeval generate-slice``: draw the private slice of fresh, verified
ADVERSARIAL / PARA_SAFE rows with a secret seed (see :mod:`cacheeval.slice`).

The output is a labelled benchmark file (split ``test``, ids
``cb-<domain>-9NNN``) that ``cacheeval eval --bench`` grades directly. Keep it
and the seed private (``private/`` is git-ignored). Exit 0 on success, 2 on a
usage or data error (one line on stderr), never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

NAME = "generate-slice"
HELP = "Draw fresh ADVERSARIAL/PARA_SAFE rows with a secret seed, unseen by the public set."

_SLICE_DOMAINS = ("math", "tool")  # mirrors cacheeval.slice.SLICE_DOMAINS (kept import-free)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--seed",
        required=True,
        metavar="SECRET",
        help="secret seed string; the same seed and options give the same slice",
    )
    parser.add_argument("--size", type=int, default=50, help="rows to draw (default: 50)")
    parser.add_argument("--out", required=True, type=Path, help="slice JSONL to write")
    parser.add_argument(
        "--public",
        action="append",
        type=Path,
        metavar="BENCH",
        help="public benchmark file(s) the slice must not overlap "
        "(repeatable; default: cachebench.jsonl)",
    )
    parser.add_argument(
        "--domain",
        dest="domains",
        action="append",
        choices=_SLICE_DOMAINS,
        metavar="D",
        help=f"only these domains (repeatable; default: {', '.join(_SLICE_DOMAINS)})",
    )
    parser.add_argument(
        "--sources-dir",
        type=Path,
        default=None,
        help="fixture directory the templates read (default: sources/ of this checkout)",
    )


def run(args: argparse.Namespace) -> int:
    from ..generators.common import SOURCES_DIR
    from ..jsonio import PRIVATE_MODE, sha256_file, write_jsonl
    from ..slice import SLICE_DOMAINS, SliceError, generate_slice, load_public_texts, summary

    prog = f"cacheeval {NAME}"
    publics: list[Path] = args.public or [Path("cachebench.jsonl")]
    try:
        for p in publics:
            if not p.is_file():
                raise SliceError(
                    f"{p}: no such file (build the public set with scripts/assemble.py "
                    "or name it with --public)"
                )
        texts, n_public = load_public_texts(publics)
        rows = generate_slice(
            args.seed,
            args.size,
            texts,
            domains=args.domains or SLICE_DOMAINS,
            sources_dir=args.sources_dir or SOURCES_DIR,
        )
        write_jsonl(args.out, rows, mode=PRIVATE_MODE)  # the slice is private: 0600
    except SliceError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except ValueError as e:  # JsonlError from a public file: path:LINE: ...
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"{prog}: error: {e.filename}: {e.strerror}", file=sys.stderr)
        return 2
    print(
        f"{len(rows)} slice rows, none overlapping {n_public} public rows, every row "
        f"verified: {summary(rows)} -> {args.out} (sha256 {sha256_file(args.out)})"
    )
    return 0
