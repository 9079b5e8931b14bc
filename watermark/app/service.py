"""Detection over HTTP (``python -m watermark serve``): the JSON API, its limits, and the page.

Endpoints:

* ``POST /v1/detect``: ``{"texts": [...], "windows": [sizes] (optional), "per_token": bool
  (optional)}`` -> ``{"results": [...]}``, each result exactly the JSON line ``python -m
  watermark detect`` prints for that text (``windows`` as its ``--windows``; ``[]``: off).
* ``POST /v1/highlight``: ``{"text": "..."}`` -> ``{"result": ..., "html": ...}``, the tokens
  highlighted as ``python -m watermark show`` does (what the page at ``/`` shows).
* ``GET /v1/health``, ``GET /v1/config`` (the config without its secrets), ``GET /`` (the page),
  ``GET /openapi.json`` and ``/docs``.

Requests of concurrent clients are batched into detector calls (:mod:`watermark.app.batcher`); the
queue is bounded in texts and in work (a text's characters / 4, about its tokens, times the tests
it runs: the whole text and each window size), and a full queue answers 503 with ``Retry-After``.
``windows`` holds at most 4 sizes in [16, 4096] (or the configured ones); detectors for other
window sizes live in a small LRU cache. Bad input gets a 4xx whose body is ``{"error": "<one
line>"}``: 400 malformed JSON, 408 a body not received in time, 413 too large (a text over
``max_chars``, more than ``max_texts`` texts, a body over its bound), 415 not JSON, 422 wrong
fields.

With a tokens file (:mod:`watermark.app.access`), every endpoint but ``/v1/health``, the page's HTML
and the schema needs ``Authorization: Bearer <token>`` (401 without a valid one), each client has
quotas (429 with ``Retry-After``), and every request is written to the audit log.
"""

import asyncio
import json
import logging
import time
from collections import OrderedDict
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, Response

from watermark.app.access import Clients, QuotaExceededError, audit
from watermark.app.batcher import Batcher, QueueFullError
from watermark.app.page import STYLE, legend, summary_html, text_html

logger = logging.getLogger(__name__)

PAGE = Path(__file__).with_name("service_page.html")
DETECT_SCHEMA = {
    "type": "object",
    "required": ["texts"],
    "properties": {
        "texts": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "windows": {
            "type": "array",
            "maxItems": 4,
            "items": {"type": "integer", "minimum": 16, "maximum": 4096},
            "description": "windowed-test span sizes ([]: whole-text test only)",
        },
        "per_token": {"type": "boolean", "default": False},
    },
}
MAX_WINDOWS, WINDOW_RANGE = 4, (16, 4096)  # a request's windowed-test sizes
OPEN_PATHS = ("/", "/v1/health", "/openapi.json", "/docs", "/docs/oauth2-redirect")
HIGHLIGHT_SCHEMA = {
    "type": "object",
    "required": ["text"],
    "properties": {"text": {"type": "string"}},
}


@dataclass(frozen=True)
class Limits:
    """Request limits of the service."""

    max_batch: int = 8  # texts per detector call
    max_queue: int = 256  # texts waiting for the detector; past it: 503
    max_texts: int = 64  # texts per request
    max_chars: int = 20_000  # characters per text
    max_work: int = 256 * 512 * 3  # queued work: tokens (chars / 4) x tests (whole text + windows)
    body_timeout: float = 30.0  # seconds a client may take to send its request body
    cached_detectors: int = 8  # detectors kept for window sizes other than the configured ones

    @property
    def max_body(self) -> int:
        """Bytes a request body may have (every text at its limit, 4 bytes per character)."""
        return self.max_texts * (4 * self.max_chars + 16) + 4096


class BadRequestError(Exception):
    """A request the client must fix: an HTTP status and a one-line message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _body(schema: dict) -> dict:
    """OpenAPI extra of an endpoint that reads its JSON body itself."""
    content = {"application/json": {"schema": schema}}
    return {"requestBody": {"required": True, "content": content}}


def public_config(config: Any) -> dict[str, Any]:
    """The config's fields without its secrets (keys and opening sentence)."""
    return config.public_dict()


def _json(obj: Any, status: int = 200, headers: dict[str, str] | None = None):
    """A JSON response serialised as the command line prints it."""
    body = json.dumps(obj, ensure_ascii=False)
    return Response(body, status_code=status, media_type="application/json", headers=headers)


async def _read_json(request: Any, limit: int, timeout: float) -> Any:
    """The request body parsed as JSON, checking its content type and size."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        got = kind or "none"
        raise BadRequestError(415, f"expected Content-Type application/json, got {got!r}")
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BadRequestError(413, f"request body of {declared} bytes is over the limit of {limit}")
    body = bytearray()

    async def receive() -> None:
        async for chunk in request.stream():
            body.extend(chunk)
            if len(body) > limit:
                raise BadRequestError(413, f"request body is over the limit of {limit} bytes")

    try:
        await asyncio.wait_for(receive(), timeout)
    except asyncio.TimeoutError:
        raise BadRequestError(408, f"request body not received within {timeout:g} s") from None
    try:
        return json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        message = err.msg if isinstance(err, json.JSONDecodeError) else "not UTF-8"
        raise BadRequestError(400, f"malformed JSON body ({message})") from None


def _texts(data: Any, limits: Limits) -> list[str]:
    if not isinstance(data, dict):
        raise BadRequestError(422, 'expected a JSON object like {"texts": ["..."]}')
    texts = data.get("texts")
    if texts is None:
        raise BadRequestError(422, 'missing field "texts" (a list of strings)')
    if not isinstance(texts, list):
        raise BadRequestError(422, '"texts" must be a list of strings')
    if not texts:
        raise BadRequestError(422, '"texts" is empty; give at least one text')
    if len(texts) > limits.max_texts:
        raise BadRequestError(
            413, f"{len(texts)} texts is over the limit of {limits.max_texts} per request"
        )
    for i, text in enumerate(texts):
        _check_text(text, f"texts[{i}]", limits)
    return texts


def _check_text(text: Any, name: str, limits: Limits) -> None:
    if not isinstance(text, str):
        raise BadRequestError(422, f"{name} must be a string, got {type(text).__name__}")
    if len(text) > limits.max_chars:
        raise BadRequestError(
            413, f"{name} has {len(text)} characters, over the limit of {limits.max_chars}"
        )


def work(texts: list[str], windows: tuple[int, ...]) -> int:
    """A request's queued work: about its tokens (characters / 4) times its tests."""
    return sum(max(1, len(t) // 4) for t in texts) * (1 + len(windows))


def _options(data: dict, default_windows: list[int]) -> tuple[tuple[int, ...], bool]:
    unknown = sorted(set(data) - {"texts", "windows", "per_token"})
    if unknown:
        raise BadRequestError(422, f"unknown fields {unknown}; known: texts, windows, per_token")
    per_token = data.get("per_token", False)
    if not isinstance(per_token, bool):
        raise BadRequestError(422, '"per_token" must be true or false')
    windows = data.get("windows", default_windows)
    if windows is None:
        windows = default_windows
    low, high = WINDOW_RANGE
    if windows != default_windows and (
        not isinstance(windows, list)
        or len(windows) > MAX_WINDOWS
        or not all(
            isinstance(w, int) and not isinstance(w, bool) and low <= w <= high for w in windows
        )
    ):
        raise BadRequestError(
            422,
            f'"windows" must be a list of at most {MAX_WINDOWS} span sizes '
            f"in [{low}, {high}] ([]: off)",
        )
    return tuple(windows), per_token


def create_app(watermark: Any, limits: Limits | None = None, clients: Clients | None = None):
    """The FastAPI application serving ``watermark``'s detector (models already loaded).

    ``clients``: the admitted clients (tokens, quotas, audit log); ``None`` admits anyone (a
    loopback service for its own user).
    """
    from watermark.detector import Detector

    limits = limits or Limits()
    config = watermark.config
    configured = tuple(config.window_sizes)
    others: OrderedDict[tuple[int, ...], Any] = OrderedDict()  # LRU of other window sizes

    def detector(windows: tuple[int, ...]) -> Any:
        if windows == configured:
            return watermark.detector
        if windows not in others:
            others[windows] = Detector(watermark.core, window_sizes=windows)
            while len(others) > limits.cached_detectors:
                others.popitem(last=False)
        others.move_to_end(windows)
        return others[windows]

    def detect(texts: list[str], windows: tuple[int, ...]) -> list[Any]:
        return detector(windows).detect(texts, chunk_size=limits.max_batch)

    batcher = Batcher(detect, limits.max_batch, limits.max_queue, limits.max_work)

    @asynccontextmanager
    async def lifespan(_app: Any):
        batcher.start()
        yield
        await batcher.stop()

    app = FastAPI(title="Adaptive watermark detection", version="1", lifespan=lifespan)
    app.state.batcher, app.state.limits, app.state.clients = batcher, limits, clients
    app.state.detectors = others

    @app.middleware("http")
    async def guard(request: Request, call_next):
        """Admits listed clients only (with a tokens file) and writes the audit line."""
        path, start, client = request.url.path, time.perf_counter(), None
        request.state.counts = {}
        if clients is not None and path not in OPEN_PATHS:
            client = clients.authenticate(request.headers.get("authorization"))
            if client is None:
                response = _json(
                    {"error": "missing or invalid bearer token"},
                    401,
                    {"WWW-Authenticate": "Bearer"},
                )
            else:
                request.state.client = client
                response = await call_next(request)
        else:
            response = await call_next(request)
        if clients is not None and path not in OPEN_PATHS:
            audit(
                {
                    "time": round(time.time(), 3),
                    "client": client.name if client else None,
                    "method": request.method,
                    "path": path,
                    "status": response.status_code,
                    "seconds": round(time.perf_counter() - start, 4),
                    **request.state.counts,
                }
            )
        return response

    def charge(request: Request, texts: list[str], windows: tuple[int, ...]) -> None:
        """Counts the request for the audit line and takes it from the client's quotas."""
        chars = sum(len(t) for t in texts)
        request.state.counts = {"texts": len(texts), "chars": chars, "windows": list(windows)}
        if clients is not None:
            clients.charge(request.state.client, len(texts), chars)

    @app.exception_handler(QuotaExceededError)
    async def over_quota(_request: Request, err: QuotaExceededError):
        return _json({"error": str(err)}, 429, {"Retry-After": str(err.retry_after)})

    @app.exception_handler(BadRequestError)
    async def bad_request(_request: Request, err: BadRequestError):
        return _json({"error": str(err)}, err.status)

    @app.exception_handler(QueueFullError)
    async def queue_full(_request: Request, err: QueueFullError):
        headers = {"Retry-After": str(err.retry_after)}
        return _json({"error": str(err)}, 503, headers)

    @app.exception_handler(404)
    async def not_found(request: Request, _err: Exception):
        return _json({"error": f"no such endpoint: {request.method} {request.url.path}"}, 404)

    @app.exception_handler(405)
    async def wrong_method(request: Request, _err: Exception):
        return _json({"error": f"{request.method} is not allowed on {request.url.path}"}, 405)

    @app.post("/v1/detect", openapi_extra=_body(DETECT_SCHEMA))
    async def detect_endpoint(request: Request):
        """Detects the watermark in each text; results as ``python -m watermark detect``."""
        data = await _read_json(request, limits.max_body, limits.body_timeout)
        texts = _texts(data, limits)
        windows, per_token = _options(data, list(configured))
        charge(request, texts, windows)
        results = await batcher.submit(texts, windows, work(texts, windows))
        request.state.counts["watermarked"] = sum(bool(r.is_watermarked) for r in results)
        return _json({"results": [r.to_dict(per_token=per_token) for r in results]})

    @app.post("/v1/highlight", openapi_extra=_body(HIGHLIGHT_SCHEMA))
    async def highlight_endpoint(request: Request):
        """One text's detection, its tokens highlighted as ``python -m watermark show``."""
        data = await _read_json(request, limits.max_body, limits.body_timeout)
        if not isinstance(data, dict) or "text" not in data:
            raise BadRequestError(422, 'expected a JSON object like {"text": "..."}')
        _check_text(data["text"], "text", limits)
        charge(request, [data["text"]], configured)
        (result,) = await batcher.submit(
            [data["text"]], configured, work([data["text"]], configured)
        )
        request.state.counts["watermarked"] = int(bool(result.is_watermarked))
        opening = config.opening_steps or None
        html = text_html(result, opening) + summary_html(result)
        return _json({"result": result.to_dict(), "html": html})

    @app.get("/v1/health")
    async def health():
        """Liveness and the queue's state."""
        return _json(
            {
                "status": "ok",
                "auth": clients is not None,
                "queued_texts": batcher.waiting,
                "max_queue": limits.max_queue,
                "queued_work": batcher.work,
                "max_work": limits.max_work,
            }
        )

    @app.get("/v1/config")
    async def public_config_endpoint():
        """The watermark config without its secrets, and the request limits."""
        return _json(
            {
                "config": public_config(config),
                "limits": {
                    "max_texts": limits.max_texts,
                    "max_chars": limits.max_chars,
                    "max_batch": limits.max_batch,
                    "max_queue": limits.max_queue,
                    "max_work": limits.max_work,
                    "max_windows": MAX_WINDOWS,
                    "window_range": list(WINDOW_RANGE),
                },
            }
        )

    marks = legend(config.opening_steps or None, windowed=bool(config.window_sizes))
    page_html = PAGE.read_text().replace("/*STYLE*/", STYLE).replace("<!--LEGEND-->", marks)

    @app.get("/", response_class=HTMLResponse)
    async def page():
        """The detection page: paste a text, read the verdict and the highlighted tokens."""
        return HTMLResponse(page_html)

    return app


def serve(
    watermark: Any, host: str, port: int, limits: Limits, clients: Clients | None = None
) -> None:
    """Runs the service with uvicorn until interrupted; SIGHUP re-reads the tokens file."""
    import signal

    if clients is not None and hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, lambda *_: clients.reload())
    logger.info("serving detection on http://%s:%d/", host, port)
    uvicorn.run(create_app(watermark, limits, clients), host=host, port=port, log_level="warning")
