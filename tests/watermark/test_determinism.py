"""Same text, same answer: a detection result is a function of the text and the config alone.

The real default models (SmolLM2-135M, MiniLM, the shipped mapper) detect the same held-out
texts alone, in mixed batches of other sizes and orders, at one, two and four threads, in a
second process with one thread, through ``detect-corpus`` on two DDP processes and through the
HTTP service; every field of every result (per-token flags included) must be identical. The
key's computations run at one intra-op thread whatever the process has
(:mod:`watermark.core.threads`): hooks on the models check it, since on this CPU a product's
last bits may not move with the thread count even where they do on another (AVX-512 MKL).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
CHILD = """
import json, sys, torch
torch.set_num_threads(1)
from watermark.api import Watermark
texts = [json.loads(line)["text"] for line in open(sys.argv[1])]
for r in Watermark.load().detect(texts, batch_size=1):
    print(json.dumps(r.to_dict(per_token=True)))
"""


def _signs_by_threads() -> list[list[torch.Tensor]]:
    """Per thread count (1, 2, 4): the signs of 40 rows computed alone, among 5, 7, 10 and 40
    rows, row by row and in reverse order."""
    from watermark.api import Watermark

    semantic = Watermark.load().core.semantic
    torch.manual_seed(0)
    u = torch.randn(40, 384)
    before = torch.get_num_threads()
    found = []
    try:
        for threads in (1, 2, 4):
            torch.set_num_threads(threads)
            runs = [semantic.signs(u[:n]) for n in (1, 5, 7, 10, 40)]
            runs.append(torch.cat([semantic.signs(u[i : i + 1]) for i in range(40)]))
            runs.append(semantic.signs(u.flip(0)).flip(0))
            found.append(runs)
    finally:
        torch.set_num_threads(before)
    return found


def test_mapper_signs_of_a_row_depend_on_that_row_only() -> None:
    """Signs are computed in blocks of one shape: under a given number of threads a row's
    signs are the same alone, among other rows and at another position (with free shapes the
    BLAS moves some outputs near zero; 5, 7 and 10 rows did under two threads)."""
    for runs in _signs_by_threads():
        for signs in runs:
            assert torch.equal(signs, runs[4][: len(signs)])


def test_mapper_signs_are_the_same_at_one_two_and_four_threads() -> None:
    """On an AVX-512 Xeon (2026-11-28) MKL's two-thread product of a block moved one of 40 x
    1024 outputs across zero against one thread, before the mapper ran at one thread."""
    one, two, four = _signs_by_threads()
    assert torch.equal(one[4], two[4]) and torch.equal(one[4], four[4])


def test_the_key_is_computed_at_one_intra_op_thread(tiny) -> None:
    """Whatever the process's thread count, the MM, the embedder and the mapper run at one
    intra-op thread in detection and generation (also in detection's worker threads), and the
    count is restored after."""
    wm = tiny.make(alpha=0.0, opening_steps=0)
    seen: list[int] = []
    hooks = [
        layer.register_forward_pre_hook(lambda *_: seen.append(torch.get_num_threads()))
        for model in (tiny.mm, tiny.emb, tiny.mapper)
        for layer in model.modules()
        if isinstance(layer, torch.nn.Linear)
    ]
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        wm.detect(["river bank city of the north", "a city by the sea and a bank"])
        wm.generate(tiny.gen, ["river bank"], max_new_tokens=6, seed=0)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
        for hook in hooks:
            hook.remove()
    assert seen and set(seen) == {1}


@pytest.fixture(scope="module")
def texts() -> list[str]:
    from transformers import AutoTokenizer

    from evaluation.heldout import units
    from watermark.models.loaders import resolve_lm

    tokenizer = AutoTokenizer.from_pretrained(resolve_lm("smollm2-135m"))
    found = units(ROOT / "data/corpus/heldout.jsonl.gz", tokenizer, None, 90, 120)
    return [u["human"] for u in found[:3]] + ["", "Ok."]  # and two texts that score nothing


@pytest.mark.slow
def test_every_way_of_detecting_gives_the_same_fields(texts, tmp_path) -> None:
    from fastapi.testclient import TestClient

    from watermark.api import Watermark
    from watermark.app.service import Limits, create_app

    wm = Watermark.load()
    lines = lambda results: [json.dumps(r.to_dict(per_token=True)) for r in results]  # noqa: E731
    alone = [lines(wm.detect([t]))[0] for t in texts]
    assert lines(wm.detect(texts, batch_size=8)) == alone
    before = torch.get_num_threads()
    try:
        for threads in (1, 2, 4):
            torch.set_num_threads(threads)
            assert lines(wm.detect(texts[:2], batch_size=2)) == alone[:2]
    finally:
        torch.set_num_threads(before)
    assert lines(wm.detect(texts[::-1], batch_size=3, progress=True, workers=1))[::-1] == alone
    corpus = tmp_path / "in.jsonl"
    corpus.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(corpus)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert child.stdout.splitlines() == alone
    out = tmp_path / "out.jsonl"
    argv = [
        sys.executable,
        "-m",
        "watermark",
        "detect-corpus",
        "--input",
        str(corpus),
        "--output",
        str(out),
        "--devices",
        "2",
        "--accelerator",
        "cpu",
        "--shard-size",
        "3",
        "--per-token",
    ]
    subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, check=True)
    assert [json.dumps(json.loads(line)) for line in out.read_text().splitlines()] == alone
    with TestClient(create_app(wm, Limits(max_batch=4, max_texts=8, max_chars=4000))) as client:
        body = client.post("/v1/detect", json={"texts": texts, "per_token": True}).json()
    assert [json.dumps(r) for r in body["results"]] == alone


@pytest.mark.slow
def test_generation_draws_the_same_tokens_at_one_and_two_threads() -> None:
    from watermark.api import Watermark
    from watermark.models.loaders import load_lm

    model, tokenizer = load_lm("smollm2-135m")
    wm = Watermark.load(tokenizer=tokenizer, generator=model)
    before, found = torch.get_num_threads(), []
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            outs = wm.generate(
                ["The storm hit the coast.", "Prices rose again."], seed=3, max_new_tokens=24
            )
            found.append([o.token_ids for o in outs])
    finally:
        torch.set_num_threads(before)
    assert found[0] == found[1]
