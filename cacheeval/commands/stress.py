"""``cacheeval stress``: benchmark rows from your own unlabelled prompts.

    cacheeval stress prompts.txt --out rows.jsonl --seed 0
    cacheeval stress chats.jsonl --field message --system-field system --out rows.jsonl
    cacheeval stress requests.jsonl --messages-field messages --out rows.jsonl   # chat requests
    cacheeval stress tickets.csv --column text --out rows.jsonl
    cacheeval stress big-log.txt --workers 4 --out rows.jsonl     # same bytes, 4 processes
    cacheeval eval --bench rows.jsonl --baseline exact_match --out report.md

Each prompt is paired with controlled edits whose label is known by
construction (:mod:`cacheeval.benches.stress`): noise that keeps the answer,
identity edits and context edits that change it. ``cacheeval verify --rows
rows.jsonl`` re-derives every label from the rows' payloads.

A blind audit: ``cacheeval stress rows.jsonl --audit 200 --out sheet.jsonl``
draws 200 rows without their labels (and writes the key beside the sheet);
a person fills in each item's ``same_answer`` and ``natural``;
``cacheeval stress --audit-score sheet.jsonl`` scores the sheet against the
constructed labels, per kind.

Exit codes: 0 written, 2 bad input (the message names ``file:LINE``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

NAME = "stress"
HELP = (
    "Benchmark rows from unlabelled prompts (text, JSONL, CSV/TSV): noise edits that keep "
    "the answer, identity and context edits that change it; also a blind audit sheet."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..benches.stress.generate import DEFAULT_PER_PROMPT
    from ..benches.stress.reader import FORMATS
    from ..schema import DOMAINS, SPLITS

    parser.add_argument(
        "prompts",
        type=Path,
        nargs="?",
        help="prompts file: text (one request a line), .jsonl (--field) or .csv/.tsv "
        "(--column); with --audit, a rows file this command wrote",
    )
    parser.add_argument(
        "--out", type=Path, help="rows JSONL (or, with --audit, the sheet) to write"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of every choice (default 0)")
    parser.add_argument(
        "--per-prompt",
        type=int,
        default=DEFAULT_PER_PROMPT,
        metavar="K",
        help=f"rows per prompt at most (default {DEFAULT_PER_PROMPT})",
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--field", help="JSONL: the field holding the request")
    which.add_argument("--column", help="CSV/TSV: the column holding the request")
    which.add_argument(
        "--messages-field",
        metavar="FIELD",
        help="JSONL: the field holding a chat request's messages (OpenAI style): the last user "
        "message is the request, system and developer messages its system prompt, the messages "
        "before it its turns; tools from the 'tools' field unless --tools-field says otherwise",
    )
    parser.add_argument("--system-field", help="JSONL: the field holding a system prompt")
    parser.add_argument("--turns-field", help="JSONL: the field holding prior turns")
    parser.add_argument(
        "--tools-field",
        help="JSONL: the field holding the tools offered (the never-cache rules read them)",
    )
    parser.add_argument(
        "--where",
        metavar="FIELD=VALUE",
        help="JSONL: only records whose FIELD is VALUE (e.g. split=dev)",
    )
    parser.add_argument("--format", choices=FORMATS, help="input format (default: from extension)")
    parser.add_argument(
        "--split", default="test", choices=SPLITS, help="split of every row (default test)"
    )
    parser.add_argument(
        "--domain", choices=DOMAINS, help="domain of every row (default: guessed per prompt)"
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=0,
        metavar="N",
        help="make the rows in N worker processes (default 0: this process; at most 4 per CPU); "
        "the same bytes",
    )
    parser.add_argument(
        "--audit", type=int, metavar="N", help="draw N rows of a rows file as a blind audit sheet"
    )
    parser.add_argument(
        "--audit-score", type=Path, metavar="SHEET", help="score a labelled audit sheet"
    )


def run(args: argparse.Namespace) -> int:
    if args.audit_score is not None:
        from ..benches.stress.audit import score_command

        return score_command(args.audit_score, NAME)
    if args.prompts is None or args.out is None:
        print(f"{NAME}: give a prompts file and --out (or --audit-score SHEET)", file=sys.stderr)
        return 2
    if args.per_prompt < 1:
        print(f"{NAME}: --per-prompt must be >= 1, got {args.per_prompt}", file=sys.stderr)
        return 2
    if args.workers < 0:
        print(f"{NAME}: --workers must be >= 0, got {args.workers}", file=sys.stderr)
        return 2
    if args.workers:
        from ..support.cpus import too_many_workers

        problem = too_many_workers("--workers", args.workers)
        if problem:
            print(f"{NAME}: {problem}", file=sys.stderr)
            return 2
    from ..support.jsonio import not_a_file

    if not args.prompts.is_file():
        print(f"{NAME}: {args.prompts}: {not_a_file(args.prompts)}", file=sys.stderr)
        return 2
    from ._running import output_problem

    clash = output_problem(args, ("out",), ("prompts",), ("prompts",)) or _key_over_input(args)
    if clash is not None:
        print(f"{NAME}: {clash}", file=sys.stderr)
        return 2
    if args.audit is not None:
        from ..benches.stress.audit import sheet_command

        return sheet_command(args.prompts, args.out, args.audit, args.seed, NAME)
    return _generate(args)


def _key_over_input(args: argparse.Namespace) -> str | None:
    """With --audit, the key written beside the sheet must not be the rows file."""
    from ..benches.stress.audit import key_path

    key = key_path(args.out)
    if args.audit is None or not key.exists() or key.resolve() != args.prompts.resolve():
        return None
    return f"{key}: is the input; write --out somewhere else"


def _generate(args: argparse.Namespace) -> int:
    from ..benches.stress.generate import StressStats, stress_lines
    from ..benches.stress.reader import PromptSpec, Skipped, detect_format, read_prompts
    from ..support.jsonio import AtomicFile
    from ..support.progress import terminal_progress

    fmt = args.format or detect_format(args.prompts)
    where = None
    if args.where is not None:
        key, sep, value = args.where.partition("=")
        if not sep or not key:
            print(f"{NAME}: --where must be FIELD=VALUE, got {args.where!r}", file=sys.stderr)
            return 2
        where = (key, value)
    messages = args.messages_field
    if messages is not None and (args.system_field or args.turns_field or fmt != "jsonl"):
        print(
            f"{NAME}: --messages-field reads a JSONL file's chat requests whole "
            "(no --system-field or --turns-field beside it)",
            file=sys.stderr,
        )
        return 2
    spec = PromptSpec(
        fmt=fmt,
        field=args.field if fmt == "jsonl" else args.column if fmt in ("csv", "tsv") else None,
        system_field=args.system_field,
        turns_field=args.turns_field,
        where=where,
        tools_field=args.tools_field or ("tools" if messages is not None else None),
        messages_field=messages,
    )
    skipped = Skipped()
    stats = StressStats()
    progress = terminal_progress()
    out: AtomicFile | None = None
    try:
        out = AtomicFile(args.out)
        prompts = read_prompts(args.prompts, spec, skipped)
        options = dict(
            seed=args.seed,
            per_prompt=args.per_prompt,
            split=args.split,
            domain=args.domain,
            stats=stats,
            progress=progress,
        )
        if args.workers:
            from ..benches.stress.parallel import stress_lines_parallel

            chunks = stress_lines_parallel(prompts, workers=args.workers, **options)
        else:
            chunks = stress_lines(prompts, **options)
        for lines in chunks:
            out.write(lines.encode("utf-8"))
        out.commit()
    except (ValueError, OSError) as e:  # JsonlError is a ValueError: "file:LINE: ..."
        if progress is not None:
            progress.finish()
        if out is not None:
            out.discard()
        message = (
            str(e) if not isinstance(e, OSError) else f"{e.filename or args.out}: {e.strerror}"
        )
        print(f"{NAME}: {message}", file=sys.stderr)
        return 2
    if progress is not None:
        progress.finish()
    for line in skipped.lines(str(args.prompts)):
        print(f"{NAME}: {line}", file=sys.stderr)
    print(stats.summary())
    print(f"wrote {args.out}")
    return 0
