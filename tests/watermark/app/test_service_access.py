"""The service behind a tokens file: who may ask, quotas, the audit log and bounded work."""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

try:
    import httpx
    from fastapi.testclient import TestClient
except ImportError as missing:  # the serve extra or httpx is not installed
    pytest.skip(f"needs fastapi and httpx: {missing}", allow_module_level=True)

from tests.helpers import sentences, serving
from watermark.app.access import Clients, parse_tokens, read_tokens_file, token_hash
from watermark.app.service import Limits, create_app
from watermark.base import UserError

ALICE, BOB = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef"


def tokens_file(tmp_path: Path, text: str, mode: int = 0o600) -> Path:
    path = tmp_path / "tokens"
    path.write_text(text)
    path.chmod(mode)
    return path


@pytest.fixture(scope="module")
def wm(tiny: SimpleNamespace):
    return tiny.make(window_sizes=[4, 8], fresh_only=True, rule="additive", bias=2.0)


@pytest.fixture()
def served(wm, tmp_path: Path):
    bob_hash = "sha256:" + token_hash(BOB).hex()
    path = tokens_file(
        tmp_path,
        f"# clients\nalice {ALICE} texts_per_minute=60\nbob {bob_hash} chars_per_day=400\n",
    )
    now = [0.0]
    clients = Clients(path, clock=lambda: now[0])
    app = create_app(wm, Limits(max_batch=3, max_queue=64, max_texts=8, max_chars=400), clients)
    with TestClient(app) as client:
        yield SimpleNamespace(client=client, clients=clients, path=path, app=app, now=now)


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_tokens_file_format_and_mode(tmp_path: Path) -> None:
    clients = parse_tokens(f"a {ALICE}\nb sha256:{'ab' * 32} chars_per_day=5 # note\n", "t")
    assert [c.name for c in clients] == ["a", "b"] and clients[1].chars_per_day == 5
    cases = (
        (f"a {ALICE}\na {BOB}", "listed twice"),
        ("a short", "shorter than 16"),
        (f"a {ALICE} rate=3", "unknown option"),
        ("a sha256:12", "64 hex"),
        ("# nothing", "no clients"),
        ("lonely", "expected 'NAME TOKEN"),
    )
    for bad, words in cases:
        with pytest.raises(UserError, match=words):
            parse_tokens(bad, "t")
    with pytest.raises(UserError, match="readable by group or others.*chmod 600"):
        read_tokens_file(tokens_file(tmp_path, f"a {ALICE}\n", mode=0o640))


def test_missing_wrong_and_revoked_tokens_get_401(served) -> None:
    c = served.client
    texts = {"texts": sentences(1, seed=1)}
    assert c.post("/v1/detect", json=texts).status_code == 401
    wrong = c.post("/v1/detect", json=texts, headers=auth("not-" + ALICE))
    assert wrong.status_code == 401 and wrong.headers["www-authenticate"] == "Bearer"
    assert "bearer token" in wrong.json()["error"]
    assert c.post("/v1/detect", json=texts, headers=auth(ALICE)).status_code == 200
    assert c.post("/v1/detect", json=texts, headers=auth(BOB)).status_code == 200  # hashed
    assert c.get("/v1/config").status_code == 401
    assert c.get("/v1/config", headers=auth(ALICE)).status_code == 200
    assert c.post("/v1/highlight", json={"text": "river"}).status_code == 401
    health = c.get("/v1/health").json()  # open, and tells the page to ask for a token
    assert health["status"] == "ok" and health["auth"] is True
    assert c.get("/").status_code == 200 and 'id="token"' in c.get("/").text
    served.path.write_text(f"bob {BOB}\n")  # alice revoked; SIGHUP calls reload()
    served.clients.reload()
    assert c.post("/v1/detect", json=texts, headers=auth(ALICE)).status_code == 401
    assert c.post("/v1/detect", json=texts, headers=auth(BOB)).status_code == 200
    served.path.write_text("broken")  # a bad file keeps the current clients
    served.clients.reload()
    assert c.post("/v1/detect", json=texts, headers=auth(BOB)).status_code == 200


def test_quotas_answer_429_and_recover(served) -> None:
    c = served.client
    one = {"texts": ["river city council"]}
    codes = [c.post("/v1/detect", json=one, headers=auth(ALICE)).status_code for _ in range(60)]
    assert codes == [200] * 60
    over = c.post("/v1/detect", json=one, headers=auth(ALICE))
    assert over.status_code == 429 and over.headers["retry-after"] == "1"
    assert "texts per minute" in over.json()["error"]
    served.now[0] += 1.0  # 60 texts per minute: one more text per second
    assert c.post("/v1/detect", json=one, headers=auth(ALICE)).status_code == 200
    assert c.post("/v1/detect", json=one, headers=auth(ALICE)).status_code == 429
    big = {"texts": ["river " * 60]}  # 360 of bob's 400 characters per day
    assert c.post("/v1/detect", json=big, headers=auth(BOB)).status_code == 200
    day = c.post("/v1/detect", json=big, headers=auth(BOB))
    assert day.status_code == 429 and "characters per day" in day.json()["error"]
    assert int(day.headers["retry-after"]) > 3600
    served.now[0] += 86400
    assert c.post("/v1/detect", json=big, headers=auth(BOB)).status_code == 200


def test_audit_log_has_counts_never_texts_tokens_or_keys(served, caplog) -> None:
    text = "the storm hit the north road and the bridge"
    with caplog.at_level(logging.INFO, logger="watermark.audit"):
        served.client.post("/v1/detect", json={"texts": [text]}, headers=auth(ALICE))
        served.client.post("/v1/detect", json={"texts": [text]}, headers=auth("bad-" + BOB))
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "watermark.audit"]
    assert [(x["client"], x["status"]) for x in lines] == [("alice", 200), (None, 401)]
    assert lines[0]["texts"] == 1 and lines[0]["chars"] == len(text)
    assert lines[0]["watermarked"] in (0, 1)  # the verdict count
    logged = caplog.text
    for secret in (text, "storm", ALICE, BOB, "test-key", "a secret opening sentence"):
        assert secret not in logged


def test_windows_are_bounded_and_detectors_do_not_pile_up(served) -> None:
    c, body = served.client, {"texts": ["river city"]}
    for windows, status in (
        ([16, 32, 64, 128, 256], 422),
        ([8], 422),
        ([5000], 422),
        ([16, 4096], 200),
        ([], 200),
        ([4, 8], 200),
    ):
        got = c.post("/v1/detect", json={**body, "windows": windows}, headers=auth(BOB))
        assert got.status_code == status, (windows, got.text)
    assert (
        "at most 4 span sizes in [16, 4096]"
        in c.post("/v1/detect", json={**body, "windows": [8]}, headers=auth(BOB)).json()["error"]
    )
    served.clients.clients[0].texts_per_minute = 10_000  # room for many requests
    for n in range(40):
        windows = [16 + n, 200 + n]
        assert (
            c.post("/v1/detect", json={**body, "windows": windows}, headers=auth(ALICE)).status_code
            == 200
        )
    assert len(served.app.state.detectors) <= Limits().cached_detectors


def test_work_bound_answers_503(wm) -> None:
    app = create_app(
        wm, Limits(max_batch=1, max_queue=64, max_texts=8, max_chars=4000, max_work=1000)
    )
    with TestClient(app) as c:
        long = {"texts": ["river " * 300], "windows": [16, 32]}  # 450 tokens x 3 tests
        assert c.post("/v1/detect", json=long).status_code == 503
        assert c.post("/v1/detect", json={"texts": ["river " * 30]}).status_code == 200


def test_a_slow_client_does_not_block_others(wm) -> None:
    app = create_app(wm, Limits(max_batch=3, max_texts=8, max_chars=400, body_timeout=5.0))
    with serving(app) as base:
        port = int(base.rsplit(":", 1)[1])
        slow = socket.create_connection(("127.0.0.1", port))
        slow.sendall(
            b"POST /v1/detect HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b'Content-Length: 200\r\n\r\n{"te'
        )
        answers: list[str] = []

        def read_all() -> None:  # the answer may come in several segments
            slow.settimeout(30)
            got = b""
            while chunk := slow.recv(4096):
                got += chunk
                head, _, body = got.partition(b"\r\n\r\n")
                length = re.search(rb"content-length: (\d+)", head, re.IGNORECASE)
                if length and len(body) >= int(length.group(1)):
                    break
            answers.append(got.decode())

        reader = threading.Thread(target=read_all)
        reader.start()
        fast = httpx.post(f"{base}/v1/detect", json={"texts": ["river city"]}, timeout=30)
        assert fast.status_code == 200 and not answers  # served while the slow body waits
        reader.join(30)
        slow.close()
        assert answers and answers[0].startswith("HTTP/1.1 408")
        assert "not received within 5 s" in answers[0]


def test_serve_refuses_open_non_loopback_and_readable_tokens(tmp_path: Path, capsys) -> None:
    from watermark.app.cli import main

    assert main(["serve", "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--tokens-file" in err[0] and "--insecure-no-auth" in err[0]
    readable = tokens_file(tmp_path, f"a {ALICE}\n", mode=0o644)
    assert main(["serve", "--host", "0.0.0.0", "--tokens-file", str(readable)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "chmod 600" in err[0]
    assert main(["serve", "--audit-log", str(tmp_path / "a.log")]) == 2
    assert os.path.exists(readable)
