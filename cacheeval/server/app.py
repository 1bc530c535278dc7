"""The Starlette application of the grading service.

Routes::

    GET  /                        leaderboard page (sortable table + upload form)
    GET  /submissions/{id}        a submission's page (its Ladder answer)
    GET  /api/leaderboard         the board as JSON
    POST /api/submissions         grade and store an upload (bearer token)
    GET  /api/submissions/{id}    the caller's own submission (bearer token; 404 otherwise)
    GET  /api/rounds, /rounds/{name}  closed private-slice rounds (per-domain breakdowns)
    GET  /healthz                 liveness, the test-set identity and the upload limit
    GET  /static/...              the page's script and stylesheet

Upload body: JSON or JSONL (any content type but multipart), or
``multipart/form-data`` with a file field ``file``. ``name`` and
``training_data`` come from form fields, else query parameters, else the
JSON object form, else (name only) the predictions header's cache name. The
stored bytes are the JSON/JSONL document itself (the file part for
multipart). Order of checks: token (401), idempotency key (a key this
submitter already used answers 200 with that first submission, stored once and
counted once), rate limit (429), size (413), format and content (400/422), then
grading; the rate limit and the key are checked again in the insert
transaction. Nothing is written unless the upload is accepted. Errors are
``{"error": message}``. A body over the size limit is read to its end (up to
:data:`~cacheeval.server.handlers.DRAIN_FACTOR` times the limit) and dropped, so the client, still
sending, gets the 413 and its message instead of a reset connection.
Submission ids in paths above SQLite's integer range are simply absent (404).
Feedback is the Ladder's answer on the public half of the test rows
(:mod:`cacheeval.server.ladder`, :func:`~cacheeval.server.grading.public_feedback`);
the stored exact counts never leave the server.

The handlers live in :mod:`cacheeval.server.handlers`; this module only
routes. Blocking work (SQLite, grading) runs in Starlette's thread pool.
"""

from __future__ import annotations

from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from .handlers import Handlers, ServerConfig

__all__ = ["STATIC_DIR", "ServerConfig", "create_app", "routes"]

STATIC_DIR = Path(__file__).resolve().parent / "static"


def routes(h: Handlers) -> list[BaseRoute]:
    """The route table (see the module docstring)."""
    return [
        Route("/", h.index, methods=["GET"]),
        Route("/submissions/{sid:int}", h.submission_page, methods=["GET"]),
        Route("/api/leaderboard", h.get_leaderboard, methods=["GET"]),
        Route("/api/submissions", h.post_submission, methods=["POST"]),
        Route("/api/submissions/{sid:int}", h.get_submission, methods=["GET"]),
        Route("/api/rounds", h.get_rounds, methods=["GET"]),
        Route("/rounds/{name}", h.round_page, methods=["GET"]),
        Route("/healthz", h.healthz, methods=["GET"]),
        Mount("/static", app=StaticFiles(directory=STATIC_DIR), name="static"),
    ]


def create_app(config: ServerConfig) -> Starlette:
    """The ASGI app serving ``config``."""
    handlers = Handlers(config)
    return Starlette(
        routes=routes(handlers), exception_handlers={HTTPException: handlers.http_error}
    )
