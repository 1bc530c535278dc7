"""``cacheeval generate-slice``: draw the private slice from the held-out pools
of all ten domains with a secret seed (see :mod:`cacheeval.benches.slice`).

The output starts with a header line (seed commitment, counts, and with
``--against`` the cache it was selected against and its error rate), then
labelled rows (split ``test``, ids ``cb-<domain>-9NNN``) that
``cacheeval eval --bench`` grades directly. Keep it and the seed private
(``private/`` is git-ignored). Exit 0 on success, 2 on a usage or data error
(one line on stderr), never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..schema import DOMAINS

NAME = "generate-slice"
HELP = "Draw the private slice from the held-out pools of every domain with a secret seed."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--seed",
        required=True,
        metavar="SECRET",
        help="secret seed string; the same seed and options give the same slice",
    )
    parser.add_argument(
        "--per-domain",
        type=int,
        default=40,
        metavar="N",
        help="rows per domain, in the label mix of the matrix (default: 40)",
    )
    parser.add_argument("--out", required=True, type=Path, help="slice JSONL to write")
    parser.add_argument(
        "--public",
        action="append",
        type=Path,
        metavar="FILE",
        help="public benchmark or shard file(s) whose texts the slice must not contain "
        "(repeatable; default: every domains/*.jsonl shard of this checkout)",
    )
    parser.add_argument(
        "--domain",
        dest="domains",
        action="append",
        choices=DOMAINS,
        metavar="D",
        help="only these domains (repeatable; default: all ten)",
    )
    parser.add_argument(
        "--pool-dir",
        type=Path,
        default=None,
        help="held-out fixture directory (default: sources/heldout of this checkout)",
    )
    parser.add_argument(
        "--against",
        metavar="MODULE[:CLASS]",
        default=None,
        help="keep, within each label quota, the candidates this cache gets wrong first "
        "(a dotted module or a .py file; CLASS is instantiated with --cache-arg)",
    )
    parser.add_argument(
        "--cache-arg",
        dest="cache_args",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="constructor argument of the --against class (repeatable; VALUE is JSON or text)",
    )


def _public_files(args: argparse.Namespace) -> list[Path]:
    from ..benches.slice import SliceError
    from ..support.layout import DOMAINS_DIR

    if args.public:
        files: list[Path] = list(args.public)
    else:
        files = sorted(DOMAINS_DIR.glob("*.jsonl"))
        if not files:
            raise SliceError(f"{DOMAINS_DIR}: no shards; name the public set with --public")
    for p in files:
        if not p.is_file():
            raise SliceError(f"{p}: no such file")
    return files


def run(args: argparse.Namespace) -> int:
    from ..benches.slice import (
        SliceError,
        generate_adversarial_slice,
        generate_slice,
        header,
        load_public_texts,
        summary,
    )
    from ..pipeline.heldout import HELDOUT_DIR
    from ..run.blockrun import CacheSpec
    from ..run.harness import CacheLoadError
    from ..run.isolate import IsolationError
    from ..support.jsonio import PRIVATE_MODE, sha256_file, write_jsonl
    from .eval import UsageError, parse_cache_args

    prog = f"cacheeval {NAME}"
    pool_dir = args.pool_dir or HELDOUT_DIR
    domains = args.domains or DOMAINS
    against = None
    try:
        if args.cache_args and not args.against:
            raise UsageError("--cache-arg applies to --against")
        texts, n_public = load_public_texts(_public_files(args))
        if args.against:
            module, _, cls = args.against.partition(":")
            # an entrant's cache: built in its own sandboxed process, never here
            cache = CacheSpec(module, cls or None, parse_cache_args(args.cache_args)).portable()
            rows, against = generate_adversarial_slice(
                args.seed,
                texts,
                cache,
                module=args.against,
                per_domain=args.per_domain,
                domains=domains,
                heldout_dir=pool_dir,
            )
        else:
            rows = generate_slice(
                args.seed, texts, per_domain=args.per_domain, domains=domains, heldout_dir=pool_dir
            )
        head = header(
            args.seed, rows, per_domain=args.per_domain, heldout_dir=pool_dir, against=against
        )
        write_jsonl(args.out, [head, *rows], mode=PRIVATE_MODE)  # the slice is private: 0600
    except (SliceError, UsageError, CacheLoadError, IsolationError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except ValueError as e:  # JsonlError from a public file: path:LINE: ...
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"{prog}: error: {e.filename}: {e.strerror}", file=sys.stderr)
        return 2
    tail = ""
    if against is not None:
        tail = (
            f"; against {against.cache} {against.version}: wrong on "
            f"{against.n_kept_wrong}/{against.n_kept} kept rows "
            f"({against.error_rate:.1%}; {against.n_candidates_wrong}/{against.n_candidates} "
            "candidates)"
        )
    print(
        f"{len(rows)} slice rows, no text shared with {n_public} public rows, every row "
        f"verified: {summary(rows)}{tail} -> {args.out} (sha256 {sha256_file(args.out)})"
    )
    return 0
