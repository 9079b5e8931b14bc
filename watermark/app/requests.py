"""The detection service's limits, reading a request's JSON body, and its request and answer
bodies as pydantic models.

The models are built from a service's :class:`Limits` (:func:`request_models`), so each limit is
stated once: the validation and the OpenAPI schema at ``/docs`` read it from the same field.
:func:`validate` turns the first problem pydantic finds into a :class:`BadRequestError`: 413 for
too many or too long texts, 422 for anything else, with a one-line message that names the field.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from watermark.detect.result import DetectionResult

MAX_WINDOWS, WINDOW_RANGE = 4, (16, 4096)  # a request's windowed-test sizes


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


class DetectAnswer(BaseModel):
    """``POST /v1/detect``: one result per text, each the line ``python -m watermark detect``
    prints (the per-token lists only with ``per_token``)."""

    results: list[DetectionResult]


class HighlightAnswer(BaseModel):
    """``POST /v1/highlight``: the text's result and its tokens highlighted as HTML."""

    result: DetectionResult
    html: str


def request_models(limits: Limits) -> tuple[type[BaseModel], type[BaseModel]]:
    """The request bodies of ``/v1/detect`` and ``/v1/highlight`` under ``limits``."""
    text = Annotated[str, Field(max_length=limits.max_chars)]
    low, high = WINDOW_RANGE
    window = Annotated[int, Field(ge=low, le=high)]
    strict = ConfigDict(extra="forbid", strict=True)

    class DetectRequest(BaseModel):
        """Texts to detect the watermark in."""

        model_config = strict
        texts: list[text] = Field(min_length=1, max_length=limits.max_texts)
        windows: list[window] | None = Field(
            None,
            max_length=MAX_WINDOWS,
            description="windowed-test span sizes ([]: whole-text test only; default: the "
            "config's)",
        )
        per_token: bool = Field(False, description="add the per-token lists to each result")

    class HighlightRequest(BaseModel):
        """One text to detect and highlight."""

        model_config = strict
        text: text

    return DetectRequest, HighlightRequest


async def read_json(request: Any, limit: int, timeout: float) -> Any:
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


def body_schema(model: type[BaseModel]) -> dict[str, Any]:
    """OpenAPI extra of an endpoint that reads and validates its JSON body itself."""
    content = {"application/json": {"schema": model.model_json_schema()}}
    return {"requestBody": {"required": True, "content": content}}


def validate(model: type[BaseModel], data: Any, limits: Limits) -> BaseModel:
    """``data`` as ``model``; a :class:`BadRequestError` naming the first problem if it is not."""
    if not isinstance(data, dict):
        fields = "texts" if "texts" in model.model_fields else "text"
        raise BadRequestError(422, f'expected a JSON object like {{"{fields}": ...}}')
    try:
        return model.model_validate(data)
    except ValidationError as err:
        errors = sorted(err.errors(), key=lambda e: e["type"] != "missing")  # missing first
        extra = [str(e["loc"][0]) for e in errors if e["type"] == "extra_forbidden"]
        if extra and errors[0]["type"] != "missing":
            known = ", ".join(model.model_fields)
            raise BadRequestError(422, f"unknown fields {extra}; known: {known}") from None
        raise _problem(errors[0], data, limits) from None


def _problem(error: dict, data: dict, limits: Limits) -> BadRequestError:
    """The one-line error of one pydantic error."""
    loc, kind = error["loc"], error["type"]
    name = str(loc[0])
    if kind == "missing":
        return BadRequestError(422, f'missing field "{name}"')
    if name == "windows":
        low, high = WINDOW_RANGE
        return BadRequestError(
            422,
            f'"windows" must be a list of at most {MAX_WINDOWS} span sizes in [{low}, {high}]'
            " ([]: off)",
        )
    if name == "per_token":
        return BadRequestError(422, '"per_token" must be true or false')
    if len(loc) == 1 and kind == "too_short":
        return BadRequestError(422, f'"{name}" is empty; give at least one text')
    if len(loc) == 1 and kind == "too_long":
        count = len(data[name])
        return BadRequestError(
            413, f"{count} texts is over the limit of {limits.max_texts} per request"
        )
    where = name if len(loc) == 1 else f"{name}[{loc[1]}]"
    value = data[name] if len(loc) == 1 else data[name][loc[1]]
    if kind == "string_too_long":
        return BadRequestError(
            413, f"{where} has {len(value)} characters, over the limit of {limits.max_chars}"
        )
    if len(loc) == 1 and kind == "list_type":
        return BadRequestError(422, f'"{name}" must be a list of strings')
    return BadRequestError(422, f"{where} must be a string, got {type(value).__name__}")
