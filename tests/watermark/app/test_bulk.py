"""Tests for bulk detection (watermark.app.bulk): same rows as detect, resume, two DDP processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.helpers import save_tiny_watermark, sentences
from watermark.app.cli import main

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def setup(tiny: SimpleNamespace, tiny_embedder_dir: Path, tmp_path_factory) -> SimpleNamespace:
    """A tiny config on disk, a 40-row corpus and what ``detect`` prints for it."""
    root = tmp_path_factory.mktemp("corpus")
    save_tiny_watermark(tiny, tiny_embedder_dir, root, opening_sentence="o")
    config = root / "wm.json"
    texts = sentences(40, seed=11, length=14)
    texts[5] = ""  # an unscorable row keeps its place
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "body": t}) + "\n" for i, t in enumerate(texts)))
    expected = root / "expected.jsonl"
    expected.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    return SimpleNamespace(
        root=root, config=str(config), corpus=str(corpus), texts=texts, expected_file=str(expected)
    )


def detect_lines(setup: SimpleNamespace, capsys) -> list[str]:
    assert main(["detect", "--config", setup.config, "--file", setup.expected_file]) == 0
    return capsys.readouterr().out.splitlines()


@pytest.mark.parametrize("workers", [0, 1])  # 1: results assembled in a worker process
def test_one_process_matches_detect_and_skips_finished_shards(
    setup, tmp_path, capsys, workers: int
) -> None:
    from watermark.app.bulk import detect_corpus, part_file

    expected = detect_lines(setup, capsys)
    out = tmp_path / "out.jsonl"
    parts = tmp_path / "out.jsonl.parts"
    parts.mkdir()
    part_file(parts, 1).write_text('{"marker": 1}\n' * 8)  # a finished shard is not redone
    summary = detect_corpus(
        setup.corpus,
        str(out),
        field="body",
        config=setup.config,
        accelerator="cpu",
        shard_size=8,
        workers=workers,
    )
    assert summary == {"rows": 40, "shards": 5, "output": str(out)}
    lines = out.read_text().splitlines()
    assert lines[8:16] == ['{"marker": 1}'] * 8
    assert lines[:8] + lines[16:] == expected[:8] + expected[16:]
    assert not parts.exists()


def test_input_mistakes(setup, tmp_path, capsys) -> None:
    argv = ["detect-corpus", "--config", setup.config, "--output", str(tmp_path / "o.jsonl")]
    assert main([*argv, "--input", str(tmp_path / "none.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main([*argv, "--input", setup.corpus, "--field", "nope"]) == 2
    assert "no 'nope' column" in capsys.readouterr().err
    sharing = [*argv, "--input", setup.corpus, "--processes-per-gpu", "4", "--accelerator", "cpu"]
    assert main(sharing) == 2
    assert "--processes-per-gpu needs a GPU" in capsys.readouterr().err


def test_processes_sharing_gpus_run_as_cpu_processes_one_gpu_each() -> None:
    from watermark.app.bulk import placement

    assert placement("auto", 2, 1, cuda=False) == ("auto", 2, 0)  # no sharing: as asked
    assert placement("gpu", 1, 8, cuda=True) == ("cpu", 8, 1)
    assert placement("auto", 2, 4, cuda=True) == ("cpu", 8, 2)  # ranks 0..7 on GPUs r % 2
    for accelerator, cuda in (("cpu", True), ("auto", False), ("gpu", False)):
        with pytest.raises(ValueError, match="needs a GPU"):
            placement(accelerator, 1, 2, cuda=cuda)


def run_cli(setup: SimpleNamespace, corpus: Path, out: Path, shard_size: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [
        sys.executable,
        "-m",
        "watermark",
        "detect-corpus",
        "--config",
        setup.config,
        "--input",
        str(corpus),
        "--field",
        "body",
        "--output",
        str(out),
        "--devices",
        "2",
        "--accelerator",
        "cpu",
        "--shard-size",
        str(shard_size),
    ]
    return subprocess.Popen(
        argv,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


@pytest.mark.slow
def test_two_cpu_processes_match_detect_and_survive_a_kill(setup, tmp_path, capsys, caplog) -> None:
    """Two DDP processes write shards that match ``detect``; killed mid-run, the run resumes
    from the finished shards (here in one process: the pending shards are spread over ranks the
    same way, see the next test) and the output is whole and in order."""
    from watermark.app.bulk import detect_corpus

    expected = detect_lines(setup, capsys) * 3  # rows are detected one by one
    corpus = tmp_path / "corpus.jsonl"  # 120 rows: 60 shards, so the kill lands mid-run
    corpus.write_text(Path(setup.corpus).read_text() * 3)
    out = tmp_path / "out.jsonl"
    parts = tmp_path / "out.jsonl.parts"
    proc = run_cli(setup, corpus, out, shard_size=2)
    deadline = time.time() + 240
    while len(list(parts.glob("shard-*.jsonl"))) < 4 and proc.poll() is None:
        assert time.time() < deadline, "no shard was written"
        time.sleep(0.02)
    assert proc.poll() is None, proc.communicate()[1]
    os.killpg(proc.pid, signal.SIGKILL)  # the launcher and both DDP processes
    proc.wait()
    done = {p.name: p.stat().st_mtime_ns for p in parts.glob("shard-*.jsonl")}
    assert 4 <= len(done) < 60 and not out.exists()
    with caplog.at_level("INFO", logger="watermark.app.bulk"):
        summary = detect_corpus(
            str(corpus),
            str(out),
            field="body",
            config=setup.config,
            accelerator="cpu",
            shard_size=2,
        )
    assert f"resuming: {len(done)} of 60 shards already done" in caplog.text
    assert summary["rows"] == 120
    assert out.read_text().splitlines() == expected


def test_fewer_pending_shards_than_processes_still_give_each_process_one(setup, tmp_path) -> None:
    """A process without a shard would wait for the others forever: the last pending shard is
    repeated until every rank of the distributed sampler gets one (both write the same part)."""
    from torch.utils.data import DistributedSampler

    from watermark.app.bulk import CorpusDataModule, part_file

    parts = tmp_path / "parts"
    parts.mkdir()
    for i in range(4):  # 40 rows, shards of 8: shard 4 is the only one left
        part_file(parts, i).write_text("{}\n")
    barriers: list[int] = []
    for world in (1, 2, 3):
        data = CorpusDataModule(setup.corpus, "body", parts, shard_size=8)
        strategy = SimpleNamespace(barrier=lambda: barriers.append(1))
        data.trainer = SimpleNamespace(world_size=world, strategy=strategy)
        data.setup("predict")
        assert data.pending == [4] * world
        shards = data.predict_dataloader().dataset
        for rank in range(world):
            got = [shards[i]["shard"] for i in DistributedSampler(shards, world, rank, False)]
            assert got == [4]
    assert len(barriers) == 3


@pytest.mark.parametrize(
    "rank, shared, expected", [(5, 2, "cuda:1"), (3, 1, "cuda:0"), (3, 0, "cpu")]
)
def test_each_process_loads_its_models_on_its_share_of_the_gpus(
    monkeypatch, rank: int, shared: int, expected: str
) -> None:
    import torch

    from watermark.api import Watermark
    from watermark.app.bulk import DetectionModule

    loaded = {}
    monkeypatch.setattr(Watermark, "load", lambda config, device, dtype: loaded.update(at=device))
    module = DetectionModule(None, None, False, shared_gpus=shared)
    strategy = SimpleNamespace(root_device=torch.device("cpu"))
    module._trainer = SimpleNamespace(strategy=strategy, local_rank=rank)
    module.setup("predict")
    assert str(loaded["at"]) == expected
