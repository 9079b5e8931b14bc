"""Property-based fuzzing of the service (Hypothesis): requests generated from its request
schemas (the ones its OpenAPI document publishes) and around them (any JSON, raw bytes, wrong
methods, paths, content types and tokens) must never get a 5xx, every error must be one JSON
line, and memory must stay bounded: replaying every generated request again twice must not
grow the process (a leak grows with each replay; Hypothesis's own bookkeeping does not count).

``WM_FUZZ_CASES`` sets the number of generated requests (default 300; the published run used
2,000, see docs/service.md, "Exposing the detection service").
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

try:
    from fastapi.testclient import TestClient
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
except ImportError as missing:  # the serve extra or hypothesis is not installed
    pytest.skip(f"needs fastapi and hypothesis: {missing}", allow_module_level=True)

from watermark.app.access import Clients
from watermark.app.service import Limits, create_app

CASES = int(os.environ.get("WM_FUZZ_CASES", "300"))


def from_schema(schema: dict) -> st.SearchStrategy:
    """Values valid under the JSON-schema subset the service's request schemas use (objects
    with required and optional properties, alternatives, arrays with bounds, strings with a
    length bound, integers with bounds, booleans, null)."""
    if "anyOf" in schema:
        return st.one_of([from_schema(option) for option in schema["anyOf"]])
    kind = schema.get("type")
    if kind == "null":
        return st.none()
    if kind == "object":
        props = {k: from_schema(v) for k, v in schema.get("properties", {}).items()}
        need = set(schema.get("required", []))
        required = {k: v for k, v in props.items() if k in need}
        optional = {k: v for k, v in props.items() if k not in need}
        return st.fixed_dictionaries(required, optional=optional)
    if kind == "array":
        return st.lists(
            from_schema(schema["items"]),
            min_size=schema.get("minItems", 0),
            max_size=schema.get("maxItems", 6),
        )
    if kind == "integer":
        return st.integers(schema.get("minimum"), schema.get("maximum"))
    if kind == "boolean":
        return st.booleans()
    return st.text(max_size=min(120, schema.get("maxLength", 120)))


def published_bodies(app: object) -> st.SearchStrategy:
    """JSON bodies valid under the request schemas the app's OpenAPI document publishes."""
    paths = app.openapi()["paths"]
    schemas = [
        paths[path]["post"]["requestBody"]["content"]["application/json"]["schema"]
        for path in ("/v1/detect", "/v1/highlight")
    ]
    assert all(schema["properties"] for schema in schemas)
    return st.one_of([from_schema(schema) for schema in schemas]).map(json.dumps)


TOKEN = "fuzz-client-token-0123456789"
# weighted towards the endpoints that do work
PATHS = ["/v1/detect"] * 4 + ["/v1/highlight"] * 2 + ["/v1/config", "/v1/health", "/", "/v1/nope"]
METHODS = ["POST"] * 6 + ["GET", "GET", "PUT", "DELETE"]
SCALARS = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40)
)
JSON = st.deferred(
    lambda: (
        SCALARS
        | st.lists(JSON, max_size=4)
        | st.dictionaries(st.text(max_size=8), JSON, max_size=3)
    )
)
SHORT_TEXT = st.text(max_size=120)
OTHER_BODIES = st.one_of(
    st.fixed_dictionaries(
        {"texts": st.lists(SHORT_TEXT, min_size=1, max_size=4)},
        optional={"windows": st.lists(st.integers(-5, 5000), max_size=6), "per_token": JSON},
    ).map(json.dumps),
    st.fixed_dictionaries({"text": SHORT_TEXT}).map(json.dumps),
    JSON.map(json.dumps),
    st.binary(max_size=200),
)


def requests(bodies: st.SearchStrategy) -> st.SearchStrategy:
    """(method, path, body, content type, authorization) tuples."""
    return st.tuples(
        st.sampled_from(METHODS),
        st.sampled_from(PATHS),
        st.one_of(bodies, OTHER_BODIES),
        st.sampled_from(["application/json", "application/json; charset=utf-8", "text/plain", ""]),
        st.sampled_from([f"Bearer {TOKEN}", f"Bearer {TOKEN}", "Bearer nope", "", "Basic abc"]),
    )


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs Linux /proc")
def test_fuzzed_requests_never_get_a_server_error(tiny: SimpleNamespace, tmp_path: Path) -> None:
    wm = tiny.make(window_sizes=[4, 8], fresh_only=True, rule="additive", bias=2.0)
    tokens = tmp_path / "tokens"
    tokens.write_text(f"fuzz {TOKEN} texts_per_minute=1000000 chars_per_day=1000000000\n")
    tokens.chmod(0o600)
    app = create_app(wm, Limits(max_batch=4, max_texts=8, max_chars=400), Clients(tokens))
    seen: dict = {"cases": 0, "codes": {}, "sent": []}
    with TestClient(app) as client:

        @settings(
            max_examples=CASES,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(requests(published_bodies(app)))
        def one(request: tuple) -> None:
            method, path, body, kind, auth = request
            headers = {k: v for k, v in (("content-type", kind), ("authorization", auth)) if v}
            response = client.request(method, path, content=body, headers=headers)
            seen["sent"].append((method, path, body, headers))
            seen["cases"] += 1
            seen["codes"][response.status_code] = seen["codes"].get(response.status_code, 0) + 1
            assert response.status_code < 500, response.text
            if response.status_code >= 400:
                assert "\n" not in response.text
                assert isinstance(response.json()["error"], str)

        one()
        rss = []
        for _ in range(3):  # the first replay settles caches and allocator pools
            for method, path, body, headers in seen["sent"]:
                assert client.request(method, path, content=body, headers=headers).status_code < 500
            rss.append(rss_mb())
        grown = rss[2] - rss[1]
    assert seen["cases"] >= CASES
    assert {200, 401, 422} <= set(seen["codes"]), seen["codes"]  # every kind of answer reached
    assert grown < 20, f"RSS grew by {grown:.1f} MB replaying {seen['cases']} requests"
    print(
        json.dumps(
            {
                "fuzz_cases": seen["cases"],
                "codes": seen["codes"],
                "rss_mb_per_replay": [round(x, 1) for x in rss],
            }
        )
    )
