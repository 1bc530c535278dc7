"""``cacheeval serve``: the hidden-label grading service and its maintenance.

Four modes::

    cacheeval serve --labels private/test_labels.jsonl --db leaderboard.sqlite \\
        [--bench cachebench.jsonl] [--manifest domains/manifest.json] \\
        [--host 127.0.0.1] [--port 8000] [--rate-limit 5] [--rate-window-hours 24] \\
        [--references reports/reference_predictions] [--rounds-dir rounds] [--salt-file F]
    cacheeval serve --add-submitter NAME --db leaderboard.sqlite   # prints the token once
    cacheeval serve --regrade --labels ... --db ...                # after a labels fix
    cacheeval serve --standings --labels ... --db ...              # public vs private half

The public/private split of the test rows is keyed by the secret in
``--salt-file`` (default: ``<db>.salt`` next to the database, created with
32 random hex digits on first use and never served).

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

from ._running import positive_float, positive_int

NAME = "serve"
HELP = "Run the hidden-label grading service (or add a submitter, or regrade the board)."

_PROG = f"cacheeval {NAME}"


def _port(text: str) -> int:
    value = positive_int(text)
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
    mode.add_argument(
        "--standings",
        action="store_true",
        help="print each submitter's best released level on the public half and the same "
        "submission's level on the private half (for a maintainer closing a round), then exit",
    )
    parser.add_argument(
        "--salt-file",
        type=Path,
        default=None,
        help="secret that keys the public/private half split (default: <db>.salt, "
        "created on first use)",
    )
    parser.add_argument(
        "--references",
        type=Path,
        default=None,
        metavar="DIR",
        help="predictions files of the fixed reference rows "
        "(e.g. reports/reference_predictions, written by python -m scripts.run_shift)",
    )
    parser.add_argument(
        "--rounds-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="closed private-slice rounds: DIR/<round>/{slice.jsonl, seed.txt, reports/*.json}",
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
        type=positive_int,
        default=5,
        metavar="N",
        help="graded submissions allowed per submitter per window (default: 5)",
    )
    parser.add_argument(
        "--rate-window-hours",
        type=positive_float,
        default=24.0,
        metavar="H",
        help="length of the rate-limit window in hours (default: 24)",
    )
    parser.add_argument(
        "--max-body-mb",
        type=positive_float,
        default=5.0,
        metavar="MB",
        help="largest upload accepted, in MiB (default: 5)",
    )


def _fail(message: str) -> int:
    print(f"{_PROG}: error: {message}", file=sys.stderr)
    return 2


def _salt(path: Path) -> str:
    """The hold-out secret in ``path``, created (owner-only) when missing."""
    import os
    import secrets

    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(secrets.token_hex(16) + "\n")
    salt = path.read_text(encoding="utf-8").strip()
    if not salt:
        raise ValueError(f"{path}: empty hold-out salt")
    return salt


def _standings(store: object, halves: object) -> int:
    from ..server.grading import ladder_states, stored_level
    from ..server.store import Store

    assert isinstance(store, Store)
    subs = store.submissions()
    states = ladder_states(subs)
    best: dict[str, tuple[int, str, str, str]] = {}
    for sub in sorted(subs, key=lambda x: x.id):
        st = states.get(sub.id)
        if st is not None and st.released is not None:
            private = stored_level(sub.scores, "private_half")
            best[sub.submitter] = (
                sub.id,
                sub.name,
                st.released.name,
                private.name if private else "n/a",
            )
    for submitter, (sid, name, pub, priv) in sorted(best.items()):
        print(f"{submitter}: #{sid} {name}: public half {pub!r}; private half {priv!r}")
    print(f"{len(best)} submitter(s) with a released level")
    return 0


def run(args: argparse.Namespace) -> int:
    from ..reporting.report import utc_now
    from ..server.grading import SetupError, halves_of, load_references, load_test_set, regrade
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
        halves = halves_of(test, _salt(args.salt_file or Path(f"{args.db}.salt")))
        references = load_references(args.references, test, halves) if args.references else ()
    except (StoreError, SetupError) as e:
        return _fail(str(e))
    except (OSError, ValueError) as e:
        return _fail(str(e))

    if args.standings:
        return _standings(store, halves)
    if args.regrade:
        results = regrade(store, test, halves, utc_now())
        for r in results:
            after = f"invalid ({r.problem})" if r.problem else r.level_after
            print(f"#{r.id} {r.name}: level {r.level_before} -> {after}")
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
        halves=halves,
        references=references,
        rounds_dir=args.rounds_dir,
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
