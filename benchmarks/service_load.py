"""The load runs of :mod:`benchmarks.bench_service` against a running ``python -m watermark
serve``: one request (:func:`post`, with the load thread's bearer token where ``TOKENS`` holds
some), every text once from several client threads (plain and interleaved with a reference),
overload past the queue bound, distinct ``windows`` lists, and the server's resident memory.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

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
