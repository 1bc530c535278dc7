"""The request handlers of the grading service (routes: :mod:`cacheeval.server.app`).

:class:`Handlers` holds what every handler needs (the store, the labelled test
set, its public/private halves, the limits) and exposes one coroutine per
route; the helpers below it turn problems into ``{"error": message}`` answers
(:class:`ApiError`) and submissions into their JSON form. Blocking work
(SQLite, grading) runs in Starlette's thread pool.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException, MultiPartParser
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from ..support.jsonio import sha256_bytes
from . import pages
from .grading import (
    MAX_NAME,
    MAX_TRAINING_DATA,
    Halves,
    Reference,
    SubmissionError,
    TestSet,
    Upload,
    check_text,
    closed_rounds,
    grade,
    halves_of,
    ladder_states,
    parse_upload,
    public_feedback,
)
from .ratelimit import Decision, RateLimit
from .store import NewSubmission, RateLimited, Store, Submission, Submitter
from .tokens import bearer_token

DEFAULT_MAX_BODY = 5 * 1024 * 1024
#: An oversized body is read and dropped up to this many times the limit.
DRAIN_FACTOR = 8
#: Largest id SQLite stores (a larger path parameter names no submission).
MAX_ID = 2**63 - 1
IDEMPOTENCY_HEADER = "Idempotency-Key"
MAX_IDEMPOTENCY_KEY = 200

#: Headers on every page: only our own script and stylesheet may load.
PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


#: Refused uploads per submitter per :data:`REFUSAL_WINDOW_S`.
DEFAULT_REFUSALS = 20
REFUSAL_WINDOW_S = 3600.0


@dataclass(frozen=True)
class ServerConfig:
    """What the app serves: the store, the labelled test set, the limits, a clock,
    the public/private halves (default: split by the labels' sha256), the
    fixed reference rows and the directory of private-slice rounds."""

    store: Store
    test: TestSet
    rate_limit: RateLimit = field(default_factory=RateLimit)
    #: Refused uploads (4xx) a submitter may send per window before every
    #: upload is a 429: parsing a refused 5 MB body costs as much as grading.
    refusal_limit: RateLimit = field(
        default_factory=lambda: RateLimit(DEFAULT_REFUSALS, REFUSAL_WINDOW_S)
    )
    max_body_bytes: int = DEFAULT_MAX_BODY
    clock: Callable[[], float] = time.time
    halves: Halves | None = None
    references: tuple[Reference, ...] = ()
    rounds_dir: Path | None = None


class ApiError(Exception):
    """A request that cannot be served: its status, message and extra headers."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        self.status = status
        self.message = message
        self.headers = headers or {}
        super().__init__(message)


def _error(status: int, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _rate_headers(limit: RateLimit, decision: Decision) -> dict[str, str]:
    headers = {
        "X-RateLimit-Limit": str(limit.limit),
        "X-RateLimit-Remaining": str(decision.remaining),
    }
    if decision.retry_after_s is not None:
        headers["Retry-After"] = str(decision.retry_after_s)
    return headers


def _too_many(limit: RateLimit, decision: Decision) -> ApiError:
    return ApiError(
        429,
        f"rate limit reached: {limit.describe()} graded submissions per submitter; "
        f"retry in {decision.retry_after_s} s",
        _rate_headers(limit, decision),
    )


def _submission_json(sub: Submission, feedback: dict[str, Any]) -> dict[str, Any]:
    """A stored submission as the API shows it to its owner (``feedback``:
    :func:`~cacheeval.server.grading.public_feedback`, never the stored grade)."""
    return {
        "id": sub.id,
        "name": sub.name,
        "submitter": sub.submitter,
        "created": sub.created,
        "training_data": sub.training_data,
        "cache_name": sub.cache_name,
        "sha256": sub.body_sha256,
        "format": sub.body_format,
        "n_predictions": sub.n_predictions,
        "labels_sha256": sub.labels_sha256,
        "graded": sub.graded,
        "status": sub.status,
        "status_detail": sub.status_detail,
        "url": f"/submissions/{sub.id}",
        "feedback": feedback,
    }


def _idempotency_key(request: Request) -> str | None:
    """The upload's ``Idempotency-Key`` header (None when absent); 400 when it is
    not 1-200 printable ASCII characters."""
    raw = request.headers.get(IDEMPOTENCY_HEADER)
    if raw is None:
        return None
    key = raw.strip()
    if not 0 < len(key) <= MAX_IDEMPOTENCY_KEY or not all(" " <= c <= "~" for c in key):
        raise ApiError(
            400, f"{IDEMPOTENCY_HEADER} must be 1-{MAX_IDEMPOTENCY_KEY} printable ASCII characters"
        )
    return key


class Handlers:
    """One coroutine per route, over the state of one :class:`ServerConfig`."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.store = config.store
        self.test = config.test
        self.limit = config.rate_limit
        self.test_order = tuple(r.id for r in config.test.rows)
        self.halves = config.halves or halves_of(config.test)
        #: submitter id -> times of its refused uploads (in memory: a restart
        #: forgives them, which costs an attacker a restart it cannot cause).
        self.refusals: dict[int, list[float]] = {}

    # --- helpers ------------------------------------------------------------------

    def feedback_of(self, sub: Submission) -> dict[str, Any]:
        """The public feedback of a stored submission (runs in the thread pool)."""
        return public_feedback(sub.scores, ladder_states(self.store.submissions()).get(sub.id))

    async def authenticate(self, request: Request) -> Submitter:
        """The submitter whose bearer token the request carries; 401 otherwise."""
        token = bearer_token(request.headers.get("authorization"))
        if token is None:
            raise ApiError(
                401,
                "missing bearer token: send 'Authorization: Bearer <token>' "
                "(tokens come from `cacheeval serve --add-submitter`)",
                {"WWW-Authenticate": "Bearer"},
            )
        submitter = await run_in_threadpool(self.store.submitter_by_token, token)
        if submitter is None:
            raise ApiError(
                401, "unknown token", {"WWW-Authenticate": 'Bearer error="invalid_token"'}
            )
        return submitter

    async def read_body(self, request: Request) -> bytes:
        """The request body; 413 (after draining) when it is over the limit."""
        cap = self.config.max_body_bytes
        declared = request.headers.get("content-length")
        over = declared is not None and declared.isdigit() and int(declared) > cap
        chunks: list[bytes] = []
        size = 0
        try:
            async for chunk in request.stream():
                size += len(chunk)
                if size > cap:
                    over = True
                if over:  # keep reading (and dropping) so the client sees the 413
                    chunks.clear()
                    if size > DRAIN_FACTOR * cap:
                        break
                    continue
                chunks.append(chunk)
        except ClientDisconnect:
            if not over:
                raise ApiError(400, "the client disconnected during the upload") from None
        if over:
            raise ApiError(413, f"upload larger than the {cap} byte limit")
        return b"".join(chunks)

    async def split_upload(self, request: Request, body: bytes) -> tuple[bytes, dict[str, str]]:
        """(document bytes, form fields) of the request body."""
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        fields = {k: v for k, v in request.query_params.items() if k in ("name", "training_data")}
        # Any other content type is the document itself: curl and urllib label
        # raw bodies application/x-www-form-urlencoded unless told otherwise.
        if ctype != "multipart/form-data":
            return body, fields

        async def one_chunk() -> AsyncGenerator[bytes, None]:
            yield body
            yield b""

        parser = MultiPartParser(
            request.headers,
            one_chunk(),
            max_files=1,
            max_fields=10,
            max_part_size=self.config.max_body_bytes,
        )
        try:
            form = await parser.parse()
        except MultiPartException as e:
            raise ApiError(400, f"bad multipart upload: {e.message}") from None
        try:
            upload = form.get("file")
            if not isinstance(upload, UploadFile):
                raise ApiError(422, "the multipart upload needs a file field named 'file'")
            data = await upload.read()
            for key in ("name", "training_data"):  # form fields win over query parameters
                value = form.get(key)
                if isinstance(value, str):
                    fields[key] = value
            return data, fields
        finally:
            await form.close()

    def accept(
        self, submitter: Submitter, body: bytes, fields: dict[str, str], key: str | None
    ) -> tuple[int, Decision, dict[str, Any], NewSubmission, bool]:
        """Parse, grade and store (runs in the thread pool)."""
        test = self.test
        upload: Upload = parse_upload(body, test.ids, self.test_order)
        raw_name = fields.get("name", "")
        name = check_text(raw_name, "name", MAX_NAME) if raw_name.strip() else ""
        training = check_text(
            fields.get("training_data") or upload.training_data or "",
            "training_data",
            MAX_TRAINING_DATA,
        )
        name = name or upload.name or (upload.cache_name or "").strip()[:MAX_NAME] or "unnamed"
        scores = grade(upload, test, self.halves, cache_name=name)
        now = self.config.clock()
        new = NewSubmission(
            submitter_id=submitter.id,
            name=name,
            training_data=training,
            created=_iso(now),
            created_at=now,
            body=body,
            body_sha256=sha256_bytes(body),
            body_format=upload.body_format,
            cache_name=upload.cache_name,
            n_predictions=len(upload.predictions),
            labels_sha256=test.labels_sha256,
            scores=scores,
            idempotency_key=key,
        )
        sid, decision, stored = self.store.insert_submission(new, self.limit)
        state = ladder_states(self.store.submissions()).get(sid) if stored else None
        return sid, decision, public_feedback(scores, state), new, stored

    async def replay(self, submitter: Submitter, first: Submission, document: bytes) -> Response:
        """The answer to a retried upload: its first submission (200), when the
        document is the same bytes; 422 when the key was used for another one."""
        if sha256_bytes(document) != first.body_sha256:
            raise ApiError(
                422,
                f"{IDEMPOTENCY_HEADER} already used for a different upload "
                f"(submission {first.id}); send a new key with new predictions",
            )
        limit = self.limit
        decision = await run_in_threadpool(
            self.store.rate_decision, submitter.id, limit, self.config.clock()
        )
        headers = {  # the slots left now: the replay itself takes none
            "Location": f"/api/submissions/{first.id}",
            "Idempotent-Replayed": "true",
            "X-RateLimit-Limit": str(limit.limit),
            "X-RateLimit-Remaining": str(max(0, limit.limit - decision.used)),
        }
        feedback = await run_in_threadpool(self.feedback_of, first)
        return JSONResponse(_submission_json(first, feedback), status_code=200, headers=headers)

    # --- the API ------------------------------------------------------------------

    async def post_submission(self, request: Request) -> Response:
        """POST /api/submissions: grade and store an upload (see :mod:`.app`);
        refused uploads count against :attr:`ServerConfig.refusal_limit`."""
        try:
            submitter = await self.authenticate(request)
        except ApiError as e:
            return _error(e.status, e.message, e.headers)
        refused = self.refusal_decision(submitter)
        if not refused.allowed:
            return _error(
                429,
                f"too many refused uploads: {self.config.refusal_limit.describe()} per "
                "submitter; fix the file before sending it again",
                {"Retry-After": str(refused.retry_after_s or 1)},
            )
        response = await self._post_submission(request, submitter)
        if 400 <= response.status_code < 500 and response.status_code != 429:
            self.refusals.setdefault(submitter.id, []).append(self.config.clock())
        return response

    def refusal_decision(self, submitter: Submitter) -> Decision:
        """May this submitter upload, given its recent refused uploads?"""
        limit = self.config.refusal_limit
        now = self.config.clock()
        recent = [t for t in self.refusals.get(submitter.id, []) if t > limit.since(now)]
        self.refusals[submitter.id] = recent
        return limit.decide(recent, now)

    async def _post_submission(self, request: Request, submitter: Submitter) -> Response:
        """:meth:`post_submission` once the submitter is known and not barred."""
        store, limit = self.store, self.limit
        try:
            key = _idempotency_key(request)
            first = None
            if key is not None:
                first = await run_in_threadpool(store.submission_by_key, submitter.id, key)
            if first is None:  # a retry never counts against the limit
                early = await run_in_threadpool(
                    store.rate_decision, submitter.id, limit, self.config.clock()
                )
                if not early.allowed:
                    raise _too_many(limit, early)
            body = await self.read_body(request)
            document, fields = await self.split_upload(request, body)
            if first is not None:
                return await self.replay(submitter, first, document)
            try:
                sid, decision, scores, new, stored = await run_in_threadpool(
                    self.accept, submitter, document, fields, key
                )
            except SubmissionError as e:
                raise ApiError(e.status, str(e)) from None
            except RateLimited as e:
                raise _too_many(limit, e.decision) from None
            if not stored:  # a concurrent retry with the same key stored it first
                first = await run_in_threadpool(store.submission, sid)
                assert first is not None
                return await self.replay(submitter, first, document)
        except ApiError as e:
            return _error(e.status, e.message, e.headers)
        payload = {
            "id": sid,
            "name": new.name,
            "submitter": submitter.name,
            "created": new.created,
            "training_data": new.training_data,
            "cache_name": new.cache_name,
            "sha256": new.body_sha256,
            "format": new.body_format,
            "n_predictions": new.n_predictions,
            "labels_sha256": new.labels_sha256,
            "url": f"/submissions/{sid}",
            "feedback": scores,
        }
        headers = {"Location": f"/api/submissions/{sid}", **_rate_headers(limit, decision)}
        return JSONResponse(payload, status_code=201, headers=headers)

    async def get_submission(self, request: Request) -> Response:
        """GET /api/submissions/{id}: the caller's own submission, else 404."""
        try:
            submitter = await self.authenticate(request)
        except ApiError as e:
            return _error(e.status, e.message, e.headers)
        sid = request.path_params["sid"]
        sub = await run_in_threadpool(self.store.submission, sid) if sid <= MAX_ID else None
        if sub is None or sub.submitter_id != submitter.id:
            # The same answer for "absent" and "someone else's": ids reveal nothing.
            return _error(404, f"no submission {sid} for this token")
        return JSONResponse(_submission_json(sub, await run_in_threadpool(self.feedback_of, sub)))

    async def get_leaderboard(self, request: Request) -> Response:
        """GET /api/leaderboard: the board as JSON."""
        subs = await run_in_threadpool(self.store.submissions)
        return JSONResponse(
            {
                "sort": pages.BOARD_ORDER,
                "n_test_rows": len(self.test.rows),
                "n_public_rows": len(self.halves.public),
                "labels_sha256": self.test.labels_sha256,
                "entries": pages.board(subs, self.config.references),
            }
        )

    async def get_rounds(self, request: Request) -> Response:
        """GET /api/rounds: the closed private-slice rounds."""
        rounds = await run_in_threadpool(closed_rounds, self.config.rounds_dir)
        return JSONResponse({"rounds": [pages.round_json(r) for r in rounds]})

    async def healthz(self, request: Request) -> Response:
        """GET /healthz: liveness, the test set's identity and the upload limit."""
        return JSONResponse(
            {
                "status": "ok",
                "n_test_rows": len(self.test.rows),
                "dataset_sha256": self.test.dataset_sha256,
                "labels_sha256": self.test.labels_sha256,
                "max_upload_bytes": self.config.max_body_bytes,
            }
        )

    # --- the pages ------------------------------------------------------------------

    async def index(self, request: Request) -> Response:
        """GET /: the leaderboard page."""
        subs = await run_in_threadpool(self.store.submissions)
        html = pages.leaderboard_page(
            pages.board(subs, self.config.references),
            n_test_rows=len(self.test.rows),
            n_public_rows=len(self.halves.public),
            rate_limit=self.limit.describe(),
            rounds=[r.name for r in closed_rounds(self.config.rounds_dir)],
        )
        return HTMLResponse(html, headers=PAGE_HEADERS)

    async def submission_page(self, request: Request) -> Response:
        """GET /submissions/{id}: a submission's page (its Ladder answer)."""
        store = self.store
        sid = request.path_params["sid"]
        sub = await run_in_threadpool(store.submission, sid) if sid <= MAX_ID else None
        if sub is None:
            html = pages.not_found_page(f"There is no submission {sid}.")
            return HTMLResponse(html, status_code=404, headers=PAGE_HEADERS)
        states = await run_in_threadpool(lambda: ladder_states(store.submissions()))
        return HTMLResponse(pages.submission_page(sub, states.get(sub.id)), headers=PAGE_HEADERS)

    async def round_page(self, request: Request) -> Response:
        """GET /rounds/{name}: one closed round's page."""
        name = request.path_params["name"]
        rounds = await run_in_threadpool(closed_rounds, self.config.rounds_dir)
        found = next((r for r in rounds if r.name == name), None)
        if found is None:
            html = pages.not_found_page(f"No closed round {name}.")
            return HTMLResponse(html, status_code=404, headers=PAGE_HEADERS)
        return HTMLResponse(pages.round_page(found), headers=PAGE_HEADERS)

    async def http_error(self, request: Request, exc: Exception) -> Response:
        """Starlette's HTTP errors: JSON under /api/, the not-found page elsewhere."""
        assert isinstance(exc, HTTPException)
        if request.url.path.startswith("/api/"):
            return _error(exc.status_code, str(exc.detail), exc.headers)
        if exc.status_code == 404:
            html = pages.not_found_page(f"No page at {request.url.path}.")
            return HTMLResponse(html, status_code=404, headers=PAGE_HEADERS)
        return Response(str(exc.detail), status_code=exc.status_code, headers=exc.headers)
