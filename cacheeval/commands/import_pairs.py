"""``cacheeval import-pairs``: turn your own labelled request pairs into benchmark
rows, so any cache can be graded on your traffic.

    cacheeval import-pairs pairs.csv --text-a q1 --text-b q2 --label dup \\
        --positive 1 --domain qa_factual --out my_rows.jsonl
    cacheeval eval --bench my_rows.jsonl --baseline exact_match --out report.md

See :mod:`cacheeval.benches.importers` for the field mapping (positive -> PARA_SAFE/HIT,
negative -> RELATED_UNSAFE/MISS). Exit codes: 0 written, 2 bad input (the
message names ``file:LINE``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

NAME = "import-pairs"
HELP = (
    "Turn your own labelled pairs (CSV, TSV or JSONL) into benchmark rows: "
    "positive -> PARA_SAFE (HIT), anything else -> RELATED_UNSAFE (MISS)."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..benches.importers import FORMATS
    from ..schema import DOMAINS, SPLITS
    from ._running import add_label_arguments

    parser.add_argument("file", type=Path, help="pairs file: .csv, .tsv or .jsonl")
    add_label_arguments(parser)
    parser.add_argument("--domain", required=True, choices=DOMAINS, help="domain of every row")
    parser.add_argument("--out", required=True, type=Path, help="rows JSONL to write")
    parser.add_argument("--split", default="test", choices=SPLITS, help="split of every row")
    parser.add_argument("--format", choices=FORMATS, help="input format (default: from extension)")


def run(args: argparse.Namespace) -> int:
    from ..benches.importers import ImportSpec, iter_import_pairs, summary_counts
    from ..support.jsonio import AtomicFile, dumps, not_a_file

    spec = ImportSpec(
        text_a=args.text_a,
        text_b=args.text_b,
        label=args.label,
        positive=args.positive,
        domain=args.domain,
        negative=args.negative,
        split=args.split,
    )
    if not args.file.is_file():
        print(f"{NAME}: {args.file}: {not_a_file(args.file)}", file=sys.stderr)
        return 2
    from ._running import output_problem

    clash = output_problem(args, ("out",), ("file",), positional=("file",))
    if clash is not None:
        print(f"{NAME}: {clash}", file=sys.stderr)
        return 2
    n = positive = 0
    out: AtomicFile | None = None
    try:
        rows = iter_import_pairs(args.file, spec, args.format)
        out = AtomicFile(args.out)
        for row in rows:  # one row in memory at a time; the file appears at the end
            out.write((dumps(row) + "\n").encode("utf-8"))
            n += 1
            positive += row["binary_label"] == "HIT"
        out.commit()
    except FileNotFoundError:
        return _failed(out, f"{args.file}: no such file")
    except UnicodeDecodeError as e:
        return _failed(out, f"{args.file}: not UTF-8 text ({e.reason} at byte {e.start})")
    except (ValueError, OSError) as e:  # JsonlError is a ValueError: "file:LINE: ..."
        if out is None and isinstance(e, OSError):
            return _failed(out, f"cannot write {args.out}: {e.strerror}")
        return _failed(out, str(e))
    print(f"{NAME}: {summary_counts(n, positive)}; wrote {args.out}", file=sys.stderr)
    return 0


def _failed(out: object, message: str) -> int:
    """Print the error, leave no output file behind, exit 2."""
    from ..support.jsonio import AtomicFile

    if isinstance(out, AtomicFile):
        out.discard()
    print(f"{NAME}: {message}", file=sys.stderr)
    return 2
