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

Everything is bounded: a fixed number of requests, and the server is stopped at the end. The
load runs themselves are in ``benchmarks/service_load.py``.

Example::

    python -m benchmarks.bench_service --texts 200 --clients 1,8,32
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from benchmarks.service_load import (
    distinct_windows_run,
    interleaved_run,
    overload_run,
    post,
    rss_mib,
    tokens_file,
)

ROOT = Path(__file__).resolve().parents[1]


def held_out_texts(n: int) -> list[str]:
    from evaluation.heldout import units
    from watermark.config.watermark_config import as_config
    from watermark.loading import load_tokenizer

    cfg = as_config(None)
    tokenizer = load_tokenizer(cfg.resolve_path(cfg.models.generator))
    rows = units(ROOT / "data/corpus/heldout.jsonl.gz", tokenizer, None, 150, 200)
    return [u["human"] for u in rows[:n]]


def _parser() -> argparse.ArgumentParser:
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
    return parser


def cli_lines(path: Path, config: list[str], env: dict) -> tuple[list[str], float]:
    """The lines ``python -m watermark detect --file path`` prints, and its wall time."""
    start = time.perf_counter()
    command = [sys.executable, "-m", "watermark", "detect", "--file", str(path), *config]
    cli = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    return cli.stdout.splitlines(), time.perf_counter() - start


def start_server(
    args: argparse.Namespace, config: list[str], work: Path, env: dict
) -> tuple[subprocess.Popen, str]:
    """The server on a free loopback port (with a tokens file and an audit log under ``work``
    for ``--tokens``), and its base URL; not yet waited for."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
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
    return server, f"http://127.0.0.1:{port}"


def wait_for_health(server: subprocess.Popen, base: str) -> None:
    """Until ``/v1/health`` answers (at most 300 s; exits if the server stops first)."""
    deadline = time.monotonic() + 300
    while True:
        try:
            with urllib.request.urlopen(base + "/v1/health", timeout=2):
                return
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("error: the server did not start") from None
            time.sleep(0.5)


def overload_row(
    args: argparse.Namespace, base: str, texts: list[str], expected: list[str], pid: int
) -> dict:
    """The overload run, the server's peak memory after it, and whether a normal request then
    gets the command line's line."""
    row = overload_run(
        base, texts, args.overload_clients, args.overload_requests, args.overload_texts
    )
    row["max_queue"] = args.max_queue
    row["server_peak_rss_mib"] = rss_mib(pid)
    status, body, _ = post(base, texts[:1])
    row["after_overload_ok"] = status == 200 and (
        json.dumps(json.loads(body)["results"][0], ensure_ascii=False) == expected[0]
    )
    return row


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
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
    expected, cli_seconds = cli_lines(path, config, env)
    assert len(expected) == len(texts), "the command line printed one line per text"

    from watermark.api import Watermark
    from watermark.config.watermark_config import as_config

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
    server, base = start_server(args, config, work, env)
    try:
        wait_for_health(server, base)
        post(base, texts[:2])  # warm-up
        for clients in (int(c) for c in args.clients.split(",") if c):
            row = interleaved_run(base, texts, expected, clients, args.blocks, wm.detect)
            print(json.dumps({**row, "tokens": args.tokens}), flush=True)
        if args.distinct_windows:
            row = distinct_windows_run(
                base, " ".join(texts[0].split()[:30]), args.distinct_windows, server.pid
            )
            print(json.dumps(row), flush=True)
        if args.overload_clients > 0:
            print(json.dumps(overload_row(args, base, texts, expected, server.pid)), flush=True)
    finally:
        server.terminate()
        server.wait(30)


if __name__ == "__main__":
    main()
