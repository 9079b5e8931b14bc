"""Detection over HTTP (``python -m watermark serve``): the JSON API, its limits, and the page.

Endpoints:

* ``POST /v1/detect``: ``{"texts": [...], "windows": [sizes] (optional), "per_token": bool
  (optional)}`` -> ``{"results": [...]}``, each result exactly the JSON line ``python -m
  watermark detect`` prints for that text (``windows`` as its ``--windows``; ``[]``: off).
* ``POST /v1/highlight``: ``{"text": "..."}`` -> ``{"result": ..., "html": ...}``, the tokens
  highlighted as ``python -m watermark show`` does (what the page at ``/`` shows).
* ``GET /v1/health``, ``GET /v1/config`` (the config without its secrets, its fingerprints and
  its keys' public ids), ``GET /`` (the page), ``GET /openapi.json`` and ``/docs``.

Texts are plain strings, with no record of what made them: each result names the
``fingerprint`` and ``key_id`` it was tested under, for the client to compare with its own.

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

import json
import logging
import time
from collections import OrderedDict
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, Response

from watermark.app.access import Clients, QuotaExceededError, audit
from watermark.app.batcher import Batcher, QueueFullError
from watermark.app.page import STYLE, legend, summary_html, text_html
from watermark.app.requests import (
    MAX_WINDOWS,
    WINDOW_RANGE,
    BadRequestError,
    DetectAnswer,
    HighlightAnswer,
    Limits,
    body_schema,
    read_json,
    request_models,
    validate,
)

logger = logging.getLogger(__name__)

PAGE = Path(__file__).with_name("service_page.html")
OPEN_PATHS = ("/", "/v1/health", "/openapi.json", "/docs", "/docs/oauth2-redirect")


def public_config(config: Any) -> dict[str, Any]:
    """The config's sections without its secrets (keys and opening sentence)."""
    return config.public_sections()


def _json(obj: Any, status: int = 200, headers: dict[str, str] | None = None):
    """A JSON response serialised as the command line prints it."""
    body = json.dumps(obj, ensure_ascii=False)
    return Response(body, status_code=status, media_type="application/json", headers=headers)


def work(texts: list[str], windows: tuple[int, ...]) -> int:
    """A request's queued work: about its tokens (characters / 4) times its tests."""
    return sum(max(1, len(t) // 4) for t in texts) * (1 + len(windows))


class Detectors:
    """The watermark's detector for its configured window sizes, and an LRU cache of detectors
    for other sizes a request asks for."""

    def __init__(self, watermark: Any, limits: Limits) -> None:
        from watermark.detect.detector import Detector

        self.watermark, self.limits, self.make = watermark, limits, Detector
        self.configured = tuple(watermark.config.detection.window_sizes)
        self.others: OrderedDict[tuple[int, ...], Any] = OrderedDict()

    def get(self, windows: tuple[int, ...]) -> Any:
        """The detector testing ``windows``."""
        if windows == self.configured:
            return self.watermark.detector
        if windows not in self.others:
            wm = self.watermark
            self.others[windows] = self.make(
                wm.core,
                window_sizes=windows,
                sentence_tests=wm.detector.sentence_tests,
                fingerprint=wm.fingerprint,
            )
            while len(self.others) > self.limits.cached_detectors:
                self.others.popitem(last=False)
        self.others.move_to_end(windows)
        return self.others[windows]

    def detect(self, texts: list[str], windows: tuple[int, ...]) -> list[Any]:
        """The results of ``texts`` under ``windows`` (the batcher's detector call)."""
        return self.get(windows).detect(texts, chunk_size=self.limits.max_batch)


def create_app(watermark: Any, limits: Limits | None = None, clients: Clients | None = None):
    """The FastAPI application serving ``watermark``'s detector (models already loaded).

    ``clients``: the admitted clients (tokens, quotas, audit log); ``None`` admits anyone (a
    loopback service for its own user).
    """
    limits = limits or Limits()
    detectors = Detectors(watermark, limits)
    batcher = Batcher(detectors.detect, limits.max_batch, limits.max_queue, limits.max_work)

    @asynccontextmanager
    async def lifespan(_app: Any):
        batcher.start()
        yield
        await batcher.stop()

    app = FastAPI(title="Adaptive watermark detection", version="1", lifespan=lifespan)
    app.state.batcher, app.state.limits, app.state.clients = batcher, limits, clients
    app.state.detectors = detectors.others
    _guard(app, clients)
    _error_handlers(app)
    _detection_endpoints(app, watermark.config, limits, clients, batcher)
    _info_endpoints(app, watermark, limits, clients, batcher)
    return app


def _guard(app: FastAPI, clients: Clients | None) -> None:
    """Admits listed clients only (with a tokens file) and writes each request's audit line."""

    @app.middleware("http")
    async def guard(request: Request, call_next):
        path, start, client = request.url.path, time.perf_counter(), None
        request.state.counts = {}
        guarded = clients is not None and path not in OPEN_PATHS
        if guarded:
            client = clients.authenticate(request.headers.get("authorization"))
        if guarded and client is None:
            refused = {"error": "missing or invalid bearer token"}
            response = _json(refused, 401, {"WWW-Authenticate": "Bearer"})
        else:
            request.state.client = client
            response = await call_next(request)
        if guarded:
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


def _error_handlers(app: FastAPI) -> None:
    """Every error as one JSON line ``{"error": ...}`` with its status."""

    @app.exception_handler(QuotaExceededError)
    async def over_quota(_request: Request, err: QuotaExceededError):
        return _json({"error": str(err)}, 429, {"Retry-After": str(err.retry_after)})

    @app.exception_handler(BadRequestError)
    async def bad_request(_request: Request, err: BadRequestError):
        return _json({"error": str(err)}, err.status)

    @app.exception_handler(QueueFullError)
    async def queue_full(_request: Request, err: QueueFullError):
        return _json({"error": str(err)}, 503, {"Retry-After": str(err.retry_after)})

    @app.exception_handler(404)
    async def not_found(request: Request, _err: Exception):
        return _json({"error": f"no such endpoint: {request.method} {request.url.path}"}, 404)

    @app.exception_handler(405)
    async def wrong_method(request: Request, _err: Exception):
        return _json({"error": f"{request.method} is not allowed on {request.url.path}"}, 405)


def _detection_endpoints(
    app: FastAPI, config: Any, limits: Limits, clients: Clients | None, batcher: Batcher
) -> None:
    """``POST /v1/detect`` and ``POST /v1/highlight``."""
    configured = tuple(config.detection.window_sizes)
    detect_request, highlight_request = request_models(limits)

    async def read(request: Request, model: type) -> Any:
        data = await read_json(request, limits.max_body, limits.body_timeout)
        if isinstance(data, dict) and data.get("windows") == list(configured):
            data = {k: v for k, v in data.items() if k != "windows"}  # the configured sizes
        return validate(model, data, limits)

    async def run(request: Request, texts: list[str], windows: tuple[int, ...]) -> list[Any]:
        """Counts the request for the audit line, takes it from the client's quotas and
        queues its texts."""
        chars = sum(len(t) for t in texts)
        request.state.counts = {"texts": len(texts), "chars": chars, "windows": list(windows)}
        if clients is not None:
            clients.charge(request.state.client, len(texts), chars)
        results = await batcher.submit(texts, windows, work(texts, windows))
        request.state.counts["watermarked"] = sum(bool(r.is_watermarked) for r in results)
        return results

    answer = {200: {"model": DetectAnswer}}

    @app.post("/v1/detect", openapi_extra=body_schema(detect_request), responses=answer)
    async def detect_endpoint(request: Request):
        """Detects the watermark in each text; results as ``python -m watermark detect``."""
        body = await read(request, detect_request)
        windows = configured if body.windows is None else tuple(body.windows)
        results = await run(request, body.texts, windows)
        return _json({"results": [r.to_dict(per_token=body.per_token) for r in results]})

    shown = {200: {"model": HighlightAnswer}}

    @app.post("/v1/highlight", openapi_extra=body_schema(highlight_request), responses=shown)
    async def highlight_endpoint(request: Request):
        """One text's detection, its tokens highlighted as ``python -m watermark show``."""
        body = await read(request, highlight_request)
        (result,) = await run(request, [body.text], configured)
        html = text_html(result, config.scheme.opening_steps or None) + summary_html(result)
        return _json({"result": result.to_dict(), "html": html})


def _info_endpoints(
    app: FastAPI, watermark: Any, limits: Limits, clients: Clients | None, batcher: Batcher
) -> None:
    """``GET /v1/health``, ``GET /v1/config`` and the page at ``/``."""
    config, identity = watermark.config, watermark.identity

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

    request_limits = {
        "max_texts": limits.max_texts,
        "max_chars": limits.max_chars,
        "max_batch": limits.max_batch,
        "max_queue": limits.max_queue,
        "max_work": limits.max_work,
        "max_windows": MAX_WINDOWS,
        "window_range": list(WINDOW_RANGE),
    }

    @app.get("/v1/config")
    async def public_config_endpoint():
        """The config without its secrets, the request limits, and what a text must be made
        with to test here (the fingerprints, the keys' public ids)."""
        answer = {"config": public_config(config), "limits": request_limits}
        return _json({**answer, "identity": identity.public()})

    marks = legend(
        config.scheme.opening_steps or None, windowed=bool(config.detection.window_sizes)
    )
    page_html = PAGE.read_text().replace("/*STYLE*/", STYLE).replace("<!--LEGEND-->", marks)

    @app.get("/", response_class=HTMLResponse)
    async def page():
        """The detection page: paste a text, read the verdict and the highlighted tokens."""
        return HTMLResponse(page_html)


def serve(
    watermark: Any, host: str, port: int, limits: Limits, clients: Clients | None = None
) -> None:
    """Runs the service with uvicorn until interrupted; SIGHUP re-reads the tokens file."""
    import signal

    if clients is not None and hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, lambda *_: clients.reload())
    logger.info("serving detection on http://%s:%d/", host, port)
    uvicorn.run(create_app(watermark, limits, clients), host=host, port=port, log_level="warning")
