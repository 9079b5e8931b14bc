"""The detection service: every endpoint, every bad-input case, batching and the full queue."""

from __future__ import annotations

import asyncio
import json
import threading
from types import SimpleNamespace

import pytest

try:
    from fastapi.testclient import TestClient  # FastAPI's test client needs httpx too
except ImportError as missing:  # the serve extra or httpx is not installed
    pytest.skip(f"needs fastapi and httpx: {missing}", allow_module_level=True)

from tests.helpers import sentences
from watermark.app.batcher import Batcher, QueueFullError
from watermark.app.service import Limits, create_app


@pytest.fixture(scope="module")
def wm(tiny: SimpleNamespace):
    return tiny.make(window_sizes=[4, 8], fresh_only=True, rule="additive", bias=2.0)


@pytest.fixture(scope="module")
def client(wm):
    app = create_app(wm, Limits(max_batch=3, max_queue=64, max_texts=5, max_chars=400))
    with TestClient(app) as c:
        yield c


def cli_lines(wm, texts: list[str], per_token: bool = False) -> list[str]:
    """What ``python -m watermark detect`` prints for ``texts`` (its emit, per result)."""
    results = wm.detect(texts)
    return [json.dumps(r.to_dict(per_token=per_token), ensure_ascii=False) for r in results]


def test_detect_returns_what_the_cli_prints(client, wm) -> None:
    texts = sentences(4, seed=3, length=20)
    response = client.post("/v1/detect", json={"texts": texts})
    assert response.status_code == 200 and response.headers["content-type"] == "application/json"
    results = response.json()["results"]
    assert [json.dumps(r, ensure_ascii=False) for r in results] == cli_lines(wm, texts)
    assert all(r["window_p_value"] is not None for r in results)  # the config's windows
    full = client.post("/v1/detect", json={"texts": texts[:2], "per_token": True}).json()
    assert [json.dumps(r, ensure_ascii=False) for r in full["results"]] == cli_lines(
        wm, texts[:2], per_token=True
    )
    off = client.post("/v1/detect", json={"texts": texts[:2], "windows": []}).json()["results"]
    assert all(r["window_p_value"] is None for r in off)  # as detect --windows off
    assert [r["p_value"] for r in off] == [r["p_value"] for r in results[:2]]


def test_concurrent_requests_are_batched_and_exact(client, wm) -> None:
    texts = sentences(12, seed=5, length=16)
    expected = cli_lines(wm, texts)
    got: dict[int, list[str]] = {}

    def ask(i: int) -> None:
        body = client.post("/v1/detect", json={"texts": texts[2 * i : 2 * i + 2]}).json()
        got[i] = [json.dumps(r, ensure_ascii=False) for r in body["results"]]

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [line for i in range(6) for line in got[i]] == expected


def test_health_config_page_and_schema(client, wm) -> None:
    health = client.get("/v1/health").json()
    assert health["status"] == "ok" and health["max_queue"] == 64
    config = client.get("/v1/config").json()
    assert config["config"]["detection"]["window_sizes"] == [4, 8]
    assert config["limits"]["max_texts"] == 5
    body = client.get("/v1/config").text
    for secret in ("test-key", "a secret opening sentence"):
        assert secret not in body
    shown = {field for part in config["config"].values() for field in part}
    assert not {"key", "old_keys", "opening_sentence"} & shown and "keys" not in config["config"]
    page = client.get("/")
    assert page.status_code == 200 and "<textarea" in page.text and "legend" in page.text
    assert "purple outline" in page.text  # the windowed test's mark is explained
    schema = client.get("/openapi.json").json()
    assert {"/v1/detect", "/v1/highlight", "/v1/health", "/v1/config"} <= set(schema["paths"])
    request = schema["paths"]["/v1/detect"]["post"]["requestBody"]["content"]
    assert request["application/json"]["schema"]["required"] == ["texts"]


def test_highlight_marks_tokens_and_the_best_window(client, wm) -> None:
    text = sentences(1, seed=11, length=24)[0]
    data = client.post("/v1/highlight", json={"text": text}).json()
    assert json.dumps(data["result"], ensure_ascii=False) == cli_lines(wm, [text])[0]
    assert data["html"].count('class="t ') == data["result"]["num_tokens"]
    first, last = data["result"]["window"]
    assert data["html"].count("in the best window") == last - first + 1
    assert "<table class='summary'>" in data["html"]
    evil = client.post("/v1/highlight", json={"text": "<script>alert(1)</script> river"})
    assert "<script>" not in evil.json()["html"]


@pytest.mark.parametrize(
    ("body", "headers", "status", "words"),
    [
        (b'{"texts": ["a"', None, 400, "malformed JSON"),
        (b"\xff\xfe", None, 400, "malformed JSON"),
        (b'["river"]', None, 422, "JSON object"),
        (b'{"text": ["river"]}', None, 422, 'missing field "texts"'),
        (b'{"texts": "river"}', None, 422, "list of strings"),
        (b'{"texts": ["river", 3]}', None, 422, "texts[1] must be a string"),
        (b'{"texts": ["river", null]}', None, 422, "texts[1] must be a string"),
        (b'{"texts": []}', None, 422, "empty"),
        (json.dumps({"texts": ["river"] * 6}).encode(), None, 413, "6 texts"),
        (json.dumps({"texts": ["river " * 100]}).encode(), None, 413, "texts[0] has 600"),
        (b'{"texts": ["river"]}', {"content-type": "text/plain"}, 415, "application/json"),
        (b'{"texts": ["river"]}', {"content-type": ""}, 415, "application/json"),
        (b'{"texts": ["river"], "per_token": "yes"}', None, 422, "per_token"),
        (b'{"texts": ["river"], "windows": [1]}', None, 422, "windows"),
        (b'{"texts": ["river"], "window": [8]}', None, 422, "unknown fields ['window']"),
        (b"x" * 2_000_000, None, 413, "over the limit"),
    ],
)
def test_bad_input_gets_a_one_line_4xx(client, body, headers, status, words) -> None:
    headers = {"content-type": "application/json"} if headers is None else headers
    response = client.post("/v1/detect", content=body, headers=headers)
    assert response.status_code == status, response.text
    message = response.json()["error"]
    assert words in message and "\n" not in message
    assert client.get("/v1/health").json()["status"] == "ok"  # still serving


def test_the_published_schema_states_the_limits(client) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    body = paths["/v1/detect"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    texts = body["properties"]["texts"]
    assert (texts["minItems"], texts["maxItems"], texts["items"]["maxLength"]) == (1, 5, 400)
    windows = body["properties"]["windows"]["anyOf"][0]
    assert (windows["maxItems"], windows["items"]["minimum"], windows["items"]["maximum"]) == (
        4,
        16,
        4096,
    )
    one = paths["/v1/highlight"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert one["properties"]["text"]["maxLength"] == 400
    assert "200" in paths["/v1/detect"]["post"]["responses"]


def test_unknown_paths_and_methods(client) -> None:
    assert client.get("/v1/nope").status_code == 404
    assert "no such endpoint" in client.get("/v1/nope").json()["error"]
    assert client.get("/v1/detect").status_code == 405
    assert client.post("/v1/highlight", json={"txt": "a"}).status_code == 422


def test_full_queue_answers_503_with_retry_after(wm) -> None:
    release = threading.Event()

    def slow_detect(texts, group):
        release.wait(10)
        return [f"r:{t}" for t in texts]

    async def scenario() -> None:
        batcher = Batcher(slow_detect, max_batch=2, max_queue=4)
        batcher.start()
        first = asyncio.create_task(batcher.submit(["a", "b"]))  # taken by the worker
        await asyncio.sleep(0.05)
        queued = asyncio.create_task(batcher.submit(["c", "d", "e", "f"]))  # fills the queue
        await asyncio.sleep(0.05)
        with pytest.raises(QueueFullError) as full:
            await batcher.submit(["g"])
        assert full.value.retry_after >= 1
        release.set()
        assert await first == ["r:a", "r:b"]
        assert await queued == ["r:c", "r:d", "r:e", "r:f"]
        assert await batcher.submit(["h"]) == ["r:h"]  # serves normally afterwards
        await batcher.stop()

    asyncio.run(scenario())


def test_full_queue_over_http(wm) -> None:
    app = create_app(wm, Limits(max_batch=1, max_queue=1, max_texts=5, max_chars=400))
    with TestClient(app) as c:
        response = c.post("/v1/detect", json={"texts": ["river city", "bank"]})
        assert response.status_code == 503 and int(response.headers["retry-after"]) >= 1
        assert "queue full" in response.json()["error"]
        assert c.post("/v1/detect", json={"texts": ["river city"]}).status_code == 200


def test_batches_keep_groups_apart() -> None:
    seen = []

    def detect(texts, group):
        seen.append((group, list(texts)))
        return [(group, t) for t in texts]

    async def scenario() -> list:
        batcher = Batcher(detect, max_batch=8, max_queue=16)
        batcher.start()
        out = await asyncio.gather(
            batcher.submit(["a", "b"], (4,)), batcher.submit(["c"], ()), batcher.submit(["d"], (4,))
        )
        await batcher.stop()
        return out

    out = asyncio.run(scenario())
    assert out == [[((4,), "a"), ((4,), "b")], [((), "c")], [((4,), "d")]]
    assert seen == [((4,), ["a", "b", "d"]), ((), ["c"])]
