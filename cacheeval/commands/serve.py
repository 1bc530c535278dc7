"""``cacheeval serve``: the hidden-label grading service and its maintenance.

Three modes::

    cacheeval serve --labels private/test_labels.jsonl --db leaderboard.sqlite \\
        [--bench cachebench.jsonl] [--manifest domains/manifest.json] \\
        [--host 127.0.0.1] [--port 8000] [--rate-limit 5] [--rate-window-hours 24]
    cacheeval serve --add-submitter NAME --db leaderboard.sqlite   # prints the token once
    cacheeval serve --regrade --labels ... --db ...                # after a labels fix

Serving and regrading refuse to start when the labels file's (or the
benchmark's) sha256 differs from the manifest. Needs the ``server`` extra
(starlette, uvicorn, python-multipart) only to serve; it is imported in
:func:`run`, never at module import. Exit 0 on success, 2 on a usage or
setup error (one line on stderr).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

NAME = "serve"
HELP = "Run the hidden-label grading service (or add a submitter, or regrade the board)."

_PROG = f"cacheeval {NAME}"


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number: {text!r}")
    return value


def _port(text: str) -> int:
    value = _positive_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"not a TCP port: {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", required=True, type=Path, help="SQLite database of the board")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--add-submitter",
        metavar="NAME",
        help="create a submitter and print its bearer token (shown once, stored hashed)",
    )
    mode.add_argument(
        "--regrade",
        action="store_true",
        help="re-grade every stored submission from its stored bytes with --labels, then exit",
    )
    parser.add_argument(
        "--labels",
        type=Path,
        default=Path("private/test_labels.jsonl"),
        help="private labels of the test split (default: private/test_labels.jsonl)",
    )
    parser.add_argument(
        "--bench",
        type=Path,
        default=Path("cachebench.jsonl"),
        help="public benchmark file (default: cachebench.jsonl)",
    )
    parser.add_argument(
        "--manifest",
        type=Path,
        default=Path("domains/manifest.json"),
        help="build manifest holding the labels' sha256 (default: domains/manifest.json)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    parser.add_argument("--port", type=_port, default=8000, help="port to bind (default: 8000)")
    parser.add_argument(
        "--rate-limit",
        type=_positive_int,
        default=5,
        metavar="N",
        help="graded submissions allowed per submitter per window (default: 5)",
    )
    parser.add_argument(
        "--rate-window-hours",
        type=_positive_float,
        default=24.0,
        metavar="H",
        help="length of the rate-limit window in hours (default: 24)",
    )
    parser.add_argument(
        "--max-body-mb",
        type=_positive_float,
        default=5.0,
        metavar="MB",
        help="largest upload accepted, in MiB (default: 5)",
    )


def _fail(message: str) -> int:
    print(f"{_PROG}: error: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    from ..report import utc_now
    from ..server.grading import SetupError, load_test_set, regrade
    from ..server.store import Store, StoreError

    try:
        store = Store(args.db)
        if args.add_submitter is not None:
            token = store.add_submitter(args.add_submitter, utc_now())
            print(
                f"{_PROG}: added submitter {args.add_submitter.strip()!r} to {args.db}; "
                "its token follows (shown once, stored only as a hash):",
                file=sys.stderr,
            )
            print(token)
            return 0
        test = load_test_set(args.bench, args.labels, args.manifest)
    except (StoreError, SetupError) as e:
        return _fail(str(e))

    if args.regrade:
        results = regrade(store, test, utc_now())
        for r in results:
            before = "n/a" if r.fhr_before is None else f"{r.fhr_before:.3f}"
            after = f"invalid ({r.problem})" if r.problem else f"{r.fhr_after:.3f}"
            print(f"#{r.id} {r.name}: FHR {before} -> {after}")
        n_bad = sum(1 for r in results if r.problem)
        print(
            f"regraded {len(results)} submission(s) against labels {test.labels_sha256[:12]}... "
            f"({n_bad} no longer valid)"
        )
        return 0

    try:
        import uvicorn

        from ..server.app import ServerConfig, create_app
        from ..server.ratelimit import RateLimit
    except ImportError as e:
        return _fail(f"{e.name} is not installed: pip install 'cacheeval[server]'")
    config = ServerConfig(
        store=store,
        test=test,
        rate_limit=RateLimit(args.rate_limit, args.rate_window_hours * 3600.0),
        max_body_bytes=int(args.max_body_mb * 1024 * 1024),
    )
    print(
        f"{_PROG}: grading {len(test.rows)} test rows (labels sha256 "
        f"{test.labels_sha256[:12]}...), board in {args.db}, "
        f"{config.rate_limit.describe()} per submitter; http://{args.host}:{args.port}/",
        file=sys.stderr,
        flush=True,
    )
    try:
        uvicorn.run(create_app(config), host=args.host, port=args.port, log_level="info")
    except (OSError, SystemExit) as e:
        return _fail(f"cannot serve on {args.host}:{args.port}: {e}")
    return 0
