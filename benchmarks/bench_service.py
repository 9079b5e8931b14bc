"""Load benchmark of ``python -m watermark serve`` on loopback (a script; prints JSON lines).

1. The texts: ``--texts`` held-out passages of ~200 generator tokens (as ``calibration_texts.py``
   writes them), or ``--file`` (JSONL with a ``text`` field).
2. The command line: ``python -m watermark detect --file`` in a subprocess (its printed lines,
   and its wall time including model loading).
3. The server, started as a subprocess on 127.0.0.1 with the same config. For each concurrency
   in ``--clients``, the texts are split into ``--blocks`` slices. Each slice is first detected
   in this process, timed without loading (the reference: the command line's detection work),
   then served: that many client threads send each text of the slice once, one text per
   request, and each response is compared byte for byte with the command line's line for its
   text. Interleaving makes both throughputs see the same drift of the CPU's speed. Printed:
   texts/s served and of the reference, their ratio, p50 and p99 latency, errors, mismatches
   (with the fields that differ).
4. Overload (skipped with ``--overload-clients 0``): ``--overload-clients`` clients each send
   ``--overload-requests`` requests of ``--overload-texts`` texts at once, past the queue
   bound; 503s are counted, the server's peak RSS is read from /proc, and one normal request
   must then succeed.
5. Distinct windows (``--distinct-windows N``): N requests of one short text, each with another
   ``windows`` list; the server's RSS before and after (it keeps a small LRU of detectors).

``--tokens`` serves with a tokens file (one client, and one token, per load thread; quotas set
high, as the run measures throughput) and an audit log, and every request carries its client's
bearer token.

Everything is bounded: a fixed number of requests, and the server is stopped at the end.

Example::

    python benchmarks/bench_service.py --texts 200 --clients 1,8,32
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def held_out_texts(n: int) -> list[str]:
    from evaluation.heldout import units
    from watermark.core.config import as_config
    from watermark.loading import load_tokenizer

    cfg = as_config(None)
    tokenizer = load_tokenizer(cfg.resolve_path(cfg.models.generator))
    rows = units(ROOT / "data/corpus/heldout.jsonl.gz", tokenizer, None, 150, 200)
    return [u["human"] for u in rows[:n]]


TOKENS: list[str] = []  # bearer tokens of the load threads (--tokens); empty: no auth


def post(
    base: str, texts: list[str], timeout: float = 600, client: int = 0, windows=None
) -> tuple[int, bytes, object]:
    """Status, body and headers of ``POST /v1/detect`` (as load thread ``client``)."""
    body: dict = {"texts": texts} if windows is None else {"texts": texts, "windows": windows}
    headers = {"Content-Type": "application/json"}
    if TOKENS:
        headers["Authorization"] = "Bearer " + TOKENS[client % len(TOKENS)]
    request = urllib.request.Request(
        base + "/v1/detect", data=json.dumps(body).encode(), headers=headers
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            return r.status, r.read(), r.headers
    except urllib.error.HTTPError as err:
        return err.code, err.read(), err.headers


def load_run(base: str, texts: list[str], expected: list[str], clients: int) -> dict:
    """Every text once, one per request, from ``clients`` threads."""
    todo = list(range(len(texts)))
    lock, latencies = threading.Lock(), []
    counts = {"errors": 0, "mismatches": 0}
    differing: list[dict] = []  # per mismatch: the text's index and the fields that differ

    def client(c: int) -> None:
        while True:
            with lock:
                if not todo:
                    return
                i = todo.pop(0)
            start = time.perf_counter()
            status, body, _ = post(base, [texts[i]], client=c)
            elapsed = time.perf_counter() - start
            with lock:
                latencies.append(elapsed)
                if status != 200:
                    counts["errors"] += 1
                    continue
                got = json.loads(body)["results"][0]
                if json.dumps(got, ensure_ascii=False) != expected[i]:
                    counts["mismatches"] += 1
                    want = json.loads(expected[i])
                    fields = {k: [want.get(k), v] for k, v in got.items() if want.get(k) != v}
                    differing.append({"text": i, "cli_vs_server": fields})

    start = time.perf_counter()
    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    return {
        "clients": clients,
        "texts": len(texts),
        "seconds": wall,
        "latencies": latencies,
        **counts,
        "differing": differing,
    }


def interleaved_run(
    base: str, texts: list[str], expected: list[str], clients: int, blocks: int, reference: object
) -> dict:
    """The load run in ``blocks`` slices of the texts, each slice first detected in this process
    (``reference``: the command line's detection work) and then served, so that both throughputs
    see the same drift of the CPU's speed."""
    size = -(-len(texts) // blocks)
    reference_s, parts, reference_lines = 0.0, [], []
    for start in range(0, len(texts), size):
        block = slice(start, start + size)
        began = time.perf_counter()
        results = reference(texts[block])
        reference_s += time.perf_counter() - began
        reference_lines += [json.dumps(r.to_dict(), ensure_ascii=False) for r in results]
        part = load_run(base, texts[block], expected[block], clients)
        for d in part["differing"]:
            d["text"] += start
        parts.append(part)
    latencies = sorted(x for p in parts for x in p["latencies"])
    pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))]  # noqa: E731
    served_s = sum(p["seconds"] for p in parts)
    return {
        "clients": clients,
        "texts": len(texts),
        "blocks": len(parts),
        "seconds": round(served_s, 2),
        "texts_per_s": round(len(texts) / served_s, 3),
        "reference_texts_per_s": round(len(texts) / reference_s, 3),
        "reference_equals_cli": reference_lines == expected,
        "throughput_vs_reference": round(reference_s / served_s, 3),
        "p50_s": round(pick(0.5), 3),
        "p99_s": round(pick(0.99), 3),
        "errors": sum(p["errors"] for p in parts),
        "mismatches": sum(p["mismatches"] for p in parts),
        "differing": [d for p in parts for d in p["differing"]],
    }


def overload_run(base: str, texts: list[str], clients: int, requests: int, size: int) -> dict:
    """``clients`` threads, each sending ``requests`` requests of ``size`` texts at once."""
    statuses: list[int] = []
    retry: list[str] = []
    lock = threading.Lock()

    def client(c: int) -> None:
        for r in range(requests):
            start = (c * requests + r) * size % max(1, len(texts) - size)
            status, _, headers = post(base, texts[start : start + size], client=c)
            with lock:
                statuses.append(status)
                if status == 503:
                    retry.append(headers.get("Retry-After") or "")

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {
        "overload_clients": clients,
        "requests": len(statuses),
        "texts_per_request": size,
        "ok": statuses.count(200),
        "503": statuses.count(503),
        "other": len(statuses) - statuses.count(200) - statuses.count(503),
        "retry_after_present": all(retry),
        "seconds": round(time.perf_counter() - start, 2),
    }


def rss_mib(pid: int, field: str = "VmHWM") -> float:
    """The process's peak (``VmHWM``) or current (``VmRSS``) resident memory in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def distinct_windows_run(base: str, text: str, n: int, pid: int) -> dict:
    """``n`` requests, each with another ``windows`` list; the server's RSS before and after."""
    before = rss_mib(pid, "VmRSS")
    statuses = [post(base, [text], windows=[16 + k % 2000, 2100 + k])[0] for k in range(n)]
    after = rss_mib(pid, "VmRSS")
    return {
        "distinct_windows": n,
        "ok": statuses.count(200),
        "rss_before_mib": before,
        "rss_after_mib": after,
        "rss_growth_mib": round(after - before, 1),
    }


def tokens_file(work: Path, clients: int) -> Path:
    """A tokens file (mode 600) with one client per load thread; fills ``TOKENS``."""
    import secrets

    TOKENS[:] = [secrets.token_urlsafe(24) for _ in range(clients)]
    path = work / "tokens"
    quota = "texts_per_minute=100000 chars_per_day=1000000000"  # throughput, not quotas, here
    path.write_text("".join(f"client{n} {t} {quota}\n" for n, t in enumerate(TOKENS)))
    path.chmod(0o600)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--texts", type=int, default=200)
    parser.add_argument("--file", help="JSONL with a 'text' field (default: held-out passages)")
    parser.add_argument("--config", help="watermark config (default: the shipped one)")
    parser.add_argument("--clients", default="1,8,32")
    parser.add_argument("--blocks", type=int, default=4, help="reference / served slices")
    parser.add_argument("--max-queue", type=int, default=256)
    parser.add_argument("--overload-clients", type=int, default=32)
    parser.add_argument("--overload-requests", type=int, default=2)
    parser.add_argument("--overload-texts", type=int, default=16)
    parser.add_argument("--tokens", action="store_true", help="serve with a tokens file")
    parser.add_argument("--distinct-windows", type=int, default=0)
    args = parser.parse_args()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    if args.file:
        texts = [json.loads(x)["text"] for x in Path(args.file).read_text().splitlines() if x]
        texts = texts[: args.texts]
    else:
        texts = held_out_texts(args.texts)
    config = ["--config", args.config] if args.config else []
    work = Path(tempfile.mkdtemp(prefix="bench-service-"))
    path = work / "texts.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))

    start = time.perf_counter()
    command = [sys.executable, "-m", "watermark", "detect", "--file", str(path), *config]
    cli = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    cli_seconds = time.perf_counter() - start
    expected = cli.stdout.splitlines()
    assert len(expected) == len(texts), "the command line printed one line per text"

    from watermark.api import Watermark
    from watermark.core.config import as_config

    wm = Watermark.load(as_config(args.config))
    wm.detect(texts[:2])  # warm-up, as the server gets in its first requests

    print(
        json.dumps(
            {
                "reference": "python -m watermark detect",
                "texts": len(texts),
                "cli_wall_s_with_loading": round(cli_seconds, 2),
            }
        ),
        flush=True,
    )

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    auth = []
    if args.tokens:
        most = max([int(c) for c in args.clients.split(",")] + [args.overload_clients, 1])
        auth = [
            "--tokens-file",
            str(tokens_file(work, most)),
            "--audit-log",
            str(work / "audit.log"),
        ]
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "watermark",
            "serve",
            "--port",
            str(port),
            "--max-queue",
            str(args.max_queue),
            *config,
            *auth,
        ],
        env=env,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                with urllib.request.urlopen(base + "/v1/health", timeout=2):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("error: the server did not start") from None
                time.sleep(0.5)
        post(base, texts[:2])  # warm-up
        for clients in (int(c) for c in args.clients.split(",") if c):
            row = interleaved_run(base, texts, expected, clients, args.blocks, wm.detect)
            print(json.dumps({**row, "tokens": args.tokens}), flush=True)
        if args.distinct_windows:
            row = distinct_windows_run(
                base, " ".join(texts[0].split()[:30]), args.distinct_windows, server.pid
            )
            print(json.dumps(row), flush=True)
        if args.overload_clients <= 0:
            return
        row = overload_run(
            base, texts, args.overload_clients, args.overload_requests, args.overload_texts
        )
        row["max_queue"] = args.max_queue
        row["server_peak_rss_mib"] = rss_mib(server.pid)
        status, body, _ = post(base, texts[:1])
        row["after_overload_ok"] = status == 200 and (
            json.dumps(json.loads(body)["results"][0], ensure_ascii=False) == expected[0]
        )
        print(json.dumps(row), flush=True)
    finally:
        server.terminate()
        server.wait(30)


if __name__ == "__main__":
    main()
