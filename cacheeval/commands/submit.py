"""``cacheeval submit``: upload a predictions file to a grading server and print
the feedback it returns (the Ladder's level answer). Standard library only (urllib).

The file's bytes are sent unchanged as the request body (the server stores
exactly them and their sha256); ``--name`` and ``--training-data`` travel as
query parameters. Every upload carries an ``Idempotency-Key`` derived from
those three, so running the same ``submit`` again after a lost answer (a
dropped connection, a killed server) gets the first submission back instead
of storing it twice and spending a second rate-limit slot. Exit 0 when the
server accepted and graded the upload (or had already), 1 when it refused it
(its message is printed, a 413 for a file over its size limit included), 2
for a local problem (missing file, unreachable server).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

NAME = "submit"
HELP = "Upload a predictions file to a CacheEval grading server and print its feedback."

_PROG = f"cacheeval {NAME}"
TIMEOUT_S = 120.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("predictions", type=Path, help="predictions JSONL from `cacheeval predict`")
    parser.add_argument(
        "--server", required=True, help="server base URL, e.g. http://127.0.0.1:8000"
    )
    parser.add_argument("--token", required=True, help="your submitter token")
    parser.add_argument("--name", help="name on the board (default: the file's cache name)")
    parser.add_argument(
        "--training-data", help="what the cache was trained or tuned on (shown on the board)"
    )
    parser.add_argument("--json", action="store_true", help="print the server's JSON answer")


def render(answer: dict[str, Any], server: str) -> str:
    """The human summary of an accepted submission: the Ladder's answer."""
    fb = answer["feedback"]
    lines = [
        f"submission #{answer['id']} {answer['name']!r} by {answer['submitter']}: "
        f"{fb['n_rows']} test rows graded (level on a fixed half of {fb['n_public_rows']} rows)",
    ]
    if fb["released"]:
        lines.append(f"  level: {fb['level']['name']} (your best so far)")
    else:
        best = fb["best_level"]["name"] if fb["best_level"] else "none"
        lines.append(f"  not above your best level so far ({best})")
    lines.append(f"  this is your submission number {fb['submission_number']}")
    lat = fb.get("latency_ms") or {}
    if lat.get("p95") is not None:
        lines.append(f"  latency you reported: p50 {lat['p50']:.2f} ms, p95 {lat['p95']:.2f} ms")
    lines.append(f"  upload sha256 {answer['sha256']}")
    lines.append(f"  page {server.rstrip('/')}{answer['url']}")
    return "\n".join(lines)


def idempotency_key(body: bytes, name: str | None, training_data: str | None) -> str:
    """The key of one upload: the same file, name and training data give the same key."""
    h = hashlib.sha256(body)
    for part in (name, training_data):
        h.update(b"\0" + (part or "").encode("utf-8", "surrogatepass"))
    return "submit-" + h.hexdigest()


def _server_limit(base: str) -> int | None:
    """The server's upload limit from /healthz, or None."""
    import urllib.request

    try:
        with urllib.request.urlopen(f"{base}/healthz", timeout=10) as response:
            limit = json.loads(response.read().decode("utf-8")).get("max_upload_bytes")
    except (OSError, ValueError, AttributeError):
        return None
    return limit if isinstance(limit, int) else None


def run(args: argparse.Namespace) -> int:
    import urllib.error
    import urllib.parse
    import urllib.request

    try:
        body = args.predictions.read_bytes()
    except OSError as e:
        print(f"{_PROG}: error: {args.predictions}: {e.strerror}", file=sys.stderr)
        return 2
    base = args.server.rstrip("/")
    if not base.startswith(("http://", "https://")):
        print(
            f"{_PROG}: error: --server must be an http(s) URL, got {args.server!r}", file=sys.stderr
        )
        return 2
    params = {k: v for k, v in (("name", args.name), ("training_data", args.training_data)) if v}
    url = f"{base}/api/submissions"
    if params:
        url += "?" + urllib.parse.urlencode(params)
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={
            "Authorization": f"Bearer {args.token}",
            "Content-Type": "application/x-ndjson",
            "Accept": "application/json",
            "Idempotency-Key": idempotency_key(body, args.name, args.training_data),
        },
    )
    replayed = False
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            replayed = response.headers.get("Idempotent-Replayed") == "true"
            answer = json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as e:
        detail = e.read().decode("utf-8", "replace")
        try:
            detail = json.loads(detail)["error"]
        except (ValueError, KeyError, TypeError):
            pass
        print(f"{_PROG}: the server refused the upload ({e.code}): {detail}", file=sys.stderr)
        return 1
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        if isinstance(reason, (ConnectionResetError, BrokenPipeError)):
            # A server may close the connection on a body far over its limit.
            limit = _server_limit(base)
            if limit is not None and len(body) > limit:
                print(
                    f"{_PROG}: the server refused the upload (413): the file is "
                    f"{len(body)} bytes, over its {limit} byte limit",
                    file=sys.stderr,
                )
                return 1
        print(f"{_PROG}: error: cannot reach {base}: {reason}", file=sys.stderr)
        return 2
    except ValueError as e:
        print(f"{_PROG}: error: the server's answer is not JSON ({e})", file=sys.stderr)
        return 2
    if replayed:
        print(
            f"{_PROG}: already submitted: the server returned the first submission "
            f"#{answer.get('id')} of this file (nothing stored again)",
            file=sys.stderr,
        )
    if args.json:
        print(json.dumps(answer, indent=2, ensure_ascii=False))
    else:
        print(render(answer, base))
    return 0
