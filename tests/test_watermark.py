"""Watermark tests with tiny random models: fast paths against the reference, round trips, stats."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from itertools import product
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from transformers import LogitsProcessor, LogitsProcessorList

from tests.test_watermark_support import (
    bpe_tokenizer,
    sentences,
    tiny_llama,
    tiny_mapper,
    word_tokenizer,
)
from watermark import reference
from watermark.config import REPO_ROOT, WatermarkConfig
from watermark.stats import green_test, poisson_binomial_sf
from watermark.token_map import build_token_map
from watermark.watermark import Watermark

SPECIAL_IDS = [0, 1, 2]  # [PAD] [UNK] [BOS]: suppressed in round trips (decoding drops them)


@pytest.fixture(scope="module")
def tiny(tiny_embedder_dir: Path) -> SimpleNamespace:
    from sentence_transformers import SentenceTransformer

    gtok, mtok = word_tokenizer(), bpe_tokenizer()
    ns = SimpleNamespace(
        gtok=gtok,
        mtok=mtok,
        gen=tiny_llama(len(gtok), seed=0),
        mm=tiny_llama(len(gtok), seed=1),
        mmx=tiny_llama(len(mtok), seed=2),
        emb=SentenceTransformer(str(tiny_embedder_dir), device="cpu"),
        mapper=tiny_mapper(16, 24),
    )

    def make(cross: bool = False, **overrides: object) -> Watermark:
        fields = dict(
            mapper="unused",
            generator="tiny-gen",
            measurement_model="tiny-mmx" if cross else "tiny-mm",
            key="test-key",
            opening_sentence="a secret opening sentence",
            alpha=1.0,
            delta=1.5,
            opening_steps=5,
            top_k=10,
            top_p=0.9,
            scaling="floor",  # the first version's rule; cases below pin their own
            filter_first=False,
            fresh_only=False,
        )
        fields.update(overrides)
        return Watermark.load(
            WatermarkConfig(**fields),
            tokenizer=ns.gtok,
            generator=ns.gen,
            measurement_model=ns.mmx if cross else ns.mm,
            mm_tokenizer=ns.mtok if cross else ns.gtok,
            embedder=ns.emb,
            mapper=ns.mapper,
        )

    ns.make = make
    return ns


PROMPTS = ["river city council", "the storm hit the north road and the bridge", "bank"]
# every strength rule, both filter orders, with and without the context guard
RULE_CASES = [
    {"scaling": "paper"},
    {"scaling": "floor"},
    {"scaling": "floor", "filter_first": True, "context_guard": 1},
    {"scaling": "additive", "bias": 2.0},
    {"scaling": "additive", "bias": 2.0, "filter_first": True, "context_guard": 2},
    {"scaling": "tournament", "layers": 3, "filter_first": True},
    {"scaling": "tournament", "layers": 2, "context_guard": 1},
    {"scaling": "tournament", "layers": 3, "filter_first": True, "fresh_only": True},
    {"scaling": "additive", "bias": 2.0, "fresh_only": True, "context_guard": 2},
]


# --- configuration and loading ---------------------------------------------------------------


def test_config_json_roundtrip_and_secrets_hidden(tmp_path: Path) -> None:
    cfg = WatermarkConfig(key="s3cret", opening_sentence="hidden words", alpha=1.5, scaling="paper")
    path = cfg.save(tmp_path / "wm.json")
    loaded = WatermarkConfig.load(path)
    assert loaded == cfg and loaded.source == str(path.resolve())
    assert "s3cret" not in repr(loaded) and "hidden words" not in repr(loaded)
    with pytest.raises(ValueError, match="unknown watermark config keys"):
        WatermarkConfig.from_dict({**cfg.to_dict(), "alhpa": 2})
    with pytest.raises(ValueError, match="scaling"):
        WatermarkConfig(scaling="linear", opening_sentence="x")


def test_config_rules_strengths_and_cache_views() -> None:
    base = WatermarkConfig(opening_sentence="x", scaling="additive", bias=3.0, filter_first=True)
    assert base.strength == 3.0
    assert WatermarkConfig(opening_sentence="x", scaling="tournament", layers=4).strength == 4
    assert WatermarkConfig(opening_sentence="x", scaling="paper", delta=0.5).strength == 0.5
    # generation ignores the strengths of other rules; detection ignores the rule altogether
    other_delta = WatermarkConfig(**{**base.to_dict(), "delta": 9.0})
    assert other_delta.generation_dict() == base.generation_dict()
    assert WatermarkConfig(**{**base.to_dict(), "bias": 1.0}).generation_dict() != (
        base.generation_dict()
    )
    floor = WatermarkConfig(**{**base.to_dict(), "scaling": "floor", "filter_first": False})
    assert floor.detection_dict() == base.detection_dict()
    guarded = WatermarkConfig(**{**base.to_dict(), "context_guard": 4})
    assert guarded.detection_dict() != base.detection_dict()
    for bad, match in (({"layers": 3}, "layers"), ({"bias": -1.0}, "bias"),
                       ({"context_guard": -1}, "context_guard")):  # fmt: skip
        with pytest.raises(ValueError, match=match):
            WatermarkConfig(opening_sentence="x", **bad)


def test_default_config_points_at_committed_mapper(tmp_path: Path, monkeypatch) -> None:
    cfg = WatermarkConfig.default()
    assert cfg.mapper == "checkpoints/mapper-minilm" and cfg.generator == "smollm2-135m"
    assert (cfg.alpha, cfg.delta, cfg.opening_steps, cfg.top_k, cfg.top_p) == (2, 1.5, 50, 50, 0.9)
    assert (cfg.scaling, cfg.bias, cfg.filter_first, cfg.fresh_only) == ("additive", 2, True, True)
    # the dataclass defaults are the shipped rule (secrets and paths aside)
    plain = WatermarkConfig(opening_sentence="x")
    rule = ("scaling", "bias", "delta", "layers", "filter_first", "context_guard", "fresh_only")
    assert all(getattr(plain, f) == getattr(cfg, f) for f in rule)
    monkeypatch.chdir(tmp_path)  # resolution does not depend on the working directory
    expected = REPO_ROOT / "checkpoints" / "mapper-minilm"
    if expected.is_dir():
        assert cfg.mapper_dir() == expected.resolve()
    else:
        with pytest.raises(FileNotFoundError, match="mapper-minilm"):
            cfg.mapper_dir()
    # a relative path next to a user's config file wins
    (tmp_path / "cfgdir" / "my-mapper").mkdir(parents=True)
    user = WatermarkConfig(mapper="my-mapper", opening_sentence="x").save(
        tmp_path / "cfgdir" / "c.json"
    )
    assert WatermarkConfig.load(user).mapper_dir() == (tmp_path / "cfgdir" / "my-mapper").resolve()


def test_token_map_keyed_balanced_deterministic() -> None:
    V, D = 1003, 24
    a = build_token_map("k1", V, D)
    assert a.shape == (V,) and int(a.min()) >= 0 and int(a.max()) < D
    counts = torch.bincount(a, minlength=D)
    assert int(counts.max() - counts.min()) <= 1  # balanced: V // D or V // D + 1
    assert torch.equal(a, build_token_map("k1", V, D))
    assert not torch.equal(a, build_token_map("k2", V, D))
    assert torch.equal(build_token_map("k", 7, 7, "identity"), torch.arange(7))
    assert sorted(build_token_map("k", 50, 50).tolist()) == list(
        range(50)
    )  # D == V keyed: a permutation
    with pytest.raises(ValueError, match="D == LM-head width V"):
        build_token_map("k", 10, 5, "identity")
    with pytest.raises(ValueError, match="exceeds"):
        build_token_map("k", 10, 20)
    code = "from watermark.token_map import build_token_map as b; print(b('k1', 1003, 24).tolist())"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(other.stdout) == a.tolist()  # identical in another process


def test_load_rejects_parts_that_do_not_fit(tiny: SimpleNamespace) -> None:
    cfg = dict(mapper="m", generator="g", key="k", opening_sentence="o")
    common = dict(
        tokenizer=tiny.gtok, generator=tiny.gen, measurement_model=tiny.mm, embedder=tiny.emb
    )
    with pytest.raises(ValueError, match="16-d embeddings.*input_dim=24"):
        Watermark.load(
            WatermarkConfig(**cfg, measurement_model="g"), mapper=tiny_mapper(24, 8), **common
        )
    with pytest.raises(ValueError, match="D == LM-head width V"):
        Watermark.load(
            WatermarkConfig(**cfg, measurement_model="g", token_map="identity"),
            mapper=tiny.mapper,
            **common,
        )
    with pytest.raises(ValueError, match="vocab_size=999"):
        Watermark.load(
            WatermarkConfig(**cfg, measurement_model="g", vocab_size=999),
            mapper=tiny.mapper,
            **common,
        )
    with pytest.raises(ValueError, match="null_model='mm'"):
        tiny.make(cross=True, null_model="mm")


def test_token_map_sized_by_lm_head_not_tokenizer(tiny: SimpleNamespace) -> None:
    wide = tiny_llama(len(tiny.gtok) + 7, seed=5)
    wm = Watermark.load(
        WatermarkConfig(
            mapper="m", generator="g", measurement_model="g", key="k", opening_sentence="o"
        ),
        tokenizer=tiny.gtok,
        generator=wide,
        embedder=tiny.emb,
        mapper=tiny.mapper,
    )
    assert wm.core.vocab_size == len(tiny.gtok) + 7 == wm.core.semantic.token_maps.shape[1]
    outs = wm.generate(wide, PROMPTS[:2], max_new_tokens=8, seed=0)  # logits width V works
    assert all(len(o.token_ids) <= 8 for o in outs)
    with pytest.raises(ValueError, match="LM head has width"):
        wm.generate(tiny.gen, PROMPTS[:1], max_new_tokens=2)


# --- AWTS and statistics ---------------------------------------------------------------------


def test_poisson_binomial_matches_brute_force() -> None:
    probs = [0.1, 0.5, 0.9, 0.3, 0.65, 0.2, 0.5]
    for k in range(len(probs) + 2):
        brute = 0.0
        for bits in product([0, 1], repeat=len(probs)):
            if sum(bits) >= k:
                brute += math.prod(p if b else 1 - p for p, b in zip(probs, bits))
        assert poisson_binomial_sf(k, probs) == pytest.approx(brute, abs=1e-12)
    assert poisson_binomial_sf(60, [0.5] * 100) == pytest.approx(
        sum(math.comb(100, j) for j in range(60, 101)) / 2**100, rel=1e-9
    )
    assert green_test([], []) == (0.0, 1.0)
    z, p = green_test([True] * 5, [1.0] * 5)  # degenerate null: finite, uninformative
    assert math.isfinite(z) and p == pytest.approx(1.0)
    z, p = green_test([True] * 30, [0.5] * 30)
    assert z == pytest.approx(math.sqrt(30)) and p == pytest.approx(0.5**30)


# --- detection -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,reason",
    [
        ("", "empty text"),
        ("   \n\t ", "whitespace only"),
        ("12345 678", "no letters"),
        ("河流城市议会投票预算学校", "unsupported script"),
        ("Река городской совет", "unsupported script"),
    ],
)
def test_unscorable_texts(tiny: SimpleNamespace, text: str, reason: str) -> None:
    result = tiny.make().detect([text])[0]
    assert (result.num_scored, result.p_value, result.is_watermarked) == (0, 1.0, False)
    assert result.reason == reason
    json.dumps(result.to_dict(per_token=True), allow_nan=False)  # never NaN


def test_gate_first_m_steps_exactly(tiny: SimpleNamespace) -> None:
    text = sentences(1, seed=3, length=12)[0]
    closed = tiny.make(alpha=1e9, opening_steps=5).detect([text])[0]
    assert closed.scored_steps() == [1, 2, 3, 4, 5]  # exactly M steps, not M + 1
    assert closed.awr == pytest.approx(5 / 12)
    assert tiny.make(alpha=-1.0, opening_steps=5).detect([text])[0].num_scored == 12
    none = tiny.make(alpha=1e9, opening_steps=0, opening_sentence="").detect([text])[0]
    assert none.num_scored == 0 and none.reason == "no scored tokens" and none.p_value == 1.0


@pytest.mark.parametrize(
    "cross,null,guard,layers,fresh",
    [(False, "vocab", 0, 1, False), (False, "mm", 0, 1, False), (True, "vocab", 0, 1, False),
     (False, "vocab", 2, 3, False), (False, "mm", 1, 2, True), (True, "vocab", 3, 1, True)],
)  # fmt: skip
def test_fast_detection_matches_reference(
    tiny: SimpleNamespace, cross: bool, null: str, guard: int, layers: int, fresh: bool
) -> None:
    scaling = "tournament" if layers > 1 else "floor"
    wm = tiny.make(cross=cross, null_model=null, context_guard=guard, layers=layers,
                   scaling=scaling, fresh_only=fresh)  # fmt: skip
    texts = sentences(3, seed=7, length=20) + ["river"]
    fast = wm.detect(texts)
    for text, res in zip(texts, fast):
        ref = reference.detect(wm, text)
        assert res.token_ids == ref.ids
        assert res.scored == ref.scored
        assert 0 < sum(res.scored[5:]) < len(res.scored) - 5 or len(res.scored) <= 5  # gate mixes
        assert res.green == ref.green
        assert res.score == ref.score
        assert res.p_value == pytest.approx(ref.p_value, rel=1e-5, abs=1e-12)  # MM float noise
        for h_fast, h_ref in zip(res.entropy[5:], ref.entropy[5:]):
            assert h_fast == pytest.approx(h_ref, abs=1e-4)
    if cross:
        assert wm.core.measurement.extra_forwards > 0  # boundary re-encodings were exercised


# --- generation ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cross,rule", [(False, RULE_CASES[1]), (True, RULE_CASES[1]), (False, RULE_CASES[4]),
                   (True, RULE_CASES[6])]
)  # fmt: skip
def test_greedy_batch_generation_matches_reference(
    tiny: SimpleNamespace, cross: bool, rule: dict
) -> None:
    wm = tiny.make(cross=cross, **rule)
    proc = wm.logits_processor(record=True)
    from watermark.generation import generate

    outs = generate(tiny.gen, tiny.gtok, PROMPTS, proc, max_new_tokens=24, do_sample=False)
    closed = 0
    for row, (prompt, out) in enumerate(zip(PROMPTS, outs)):
        ids, steps = reference.generate(wm, tiny.gen, prompt, 24, greedy=True)
        assert out.token_ids == ids
        # steps past the text (the one that drew EOS) are not part of it
        assert out.watermarked_steps == [
            t for t, s in enumerate(steps, 1) if s.gated and t <= len(ids)
        ]
        closed += len(ids) - len(out.watermarked_steps)
        for decision, ref_step in zip(proc.record.decisions, steps):
            if ref_step.gated:  # same green list, row by row
                got = wm.core.semantic.expand(decision.green_dims[row : row + 1])[0]
                assert torch.equal(got, ref_step.green)
    assert closed > 0  # the entropy gate closed at some steps


class Tap(LogitsProcessor):
    """Records the scores it sees, per step."""

    def __init__(self) -> None:
        self.seen: list[torch.Tensor] = []

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        self.seen.append(scores.clone())
        return scores


@pytest.mark.parametrize("rule", RULE_CASES)
def test_sampling_distribution_matches_reference(tiny: SimpleNamespace, rule: dict) -> None:
    """At every step of a sampled batch the processor's output equals the reference's."""
    wm = tiny.make(**rule)
    before, after = Tap(), Tap()
    processors = LogitsProcessorList([before, wm.logits_processor(), after])
    enc = tiny.gtok(PROMPTS, return_tensors="pt", padding=True, padding_side="left")
    torch.manual_seed(0)
    out = tiny.gen.generate(**enc, logits_processor=processors, do_sample=True, top_k=0,
                            top_p=1.0, max_new_tokens=24, suppress_tokens=SPECIAL_IDS)  # fmt: skip
    gen = out[:, enc["input_ids"].shape[1] :]
    eos = tiny.gtok.eos_token_id
    gated = guarded = 0
    for t, (raw, got) in enumerate(zip(before.seen, after.seen), start=1):
        for row in range(len(PROMPTS)):
            prefix = gen[row, : t - 1].tolist()
            if eos in prefix:
                continue
            step = reference.step(wm, prefix)
            gated += step.gated
            guarded += reference.repeated(prefix, wm.config.context_guard)
            want = reference.sampling_logits(raw[row], step, wm.config, prefix, {eos})
            assert torch.equal(torch.isfinite(got[row]), torch.isfinite(want))
            finite = torch.isfinite(want)
            assert torch.allclose(got[row][finite], want[finite], atol=1e-4)
    assert gated > 10
    assert guarded > 0 or wm.config.context_guard == 0


@pytest.mark.parametrize("cross,rule", [(False, RULE_CASES[1]), (True, RULE_CASES[1])] + [
    (False, rule) for rule in RULE_CASES[2:]])  # fmt: skip
def test_round_trip_positions(tiny: SimpleNamespace, cross: bool, rule: dict) -> None:
    wm = tiny.make(cross=cross, **rule)
    prompts = PROMPTS + ["the price of water", "police said"]
    outs = wm.generate(tiny.gen, prompts, max_new_tokens=40, seed=3, suppress_tokens=SPECIAL_IDS)
    results = wm.detect([o.text for o in outs])
    for out, res in zip(outs, results):
        assert res.token_ids == out.token_ids  # word-level tokens re-tokenize exactly
        assert res.scored_steps() == out.watermarked_steps
    assert sum(len(o.watermarked_steps) for o in outs) > 25
    # the watermark is visible: green fraction above the null expectation on average
    wm_green = sum(r.num_green_tested for r in results) - sum(r.expected_green for r in results)
    assert wm_green > 0


def test_processor_with_model_generate_and_reuse(tiny: SimpleNamespace) -> None:
    from transformers import LogitsProcessorList

    wm = tiny.make()
    proc = wm.logits_processor(record=True)
    enc = tiny.gtok(PROMPTS, return_tensors="pt", padding=True, padding_side="left")
    for seed, new in ((0, 12), (1, 9)):
        torch.manual_seed(seed)
        out = tiny.gen.generate(
            **enc,
            logits_processor=LogitsProcessorList([proc]),
            do_sample=True,
            top_k=10,
            top_p=0.9,
            max_new_tokens=new,
            suppress_tokens=SPECIAL_IDS,
        )
        assert proc.record.prompt_length == enc["input_ids"].shape[1]  # a new generation was seen
        assert [d.step for d in proc.record.decisions] == list(range(1, new + 1))
        assert out.shape[1] == enc["input_ids"].shape[1] + new
    with pytest.raises(ValueError, match="width"):
        proc(enc["input_ids"], torch.zeros(3, len(tiny.gtok) + 1))


def test_cli_generate_detect_show(
    tiny: SimpleNamespace, tiny_embedder_dir: Path, tmp_path: Path, capsys
) -> None:
    from watermark.cli import main

    tiny.gen.save_pretrained(tmp_path / "gen")
    tiny.gtok.save_pretrained(tmp_path / "gen")
    tiny.mapper.save_pretrained(tmp_path / "mapper")
    cfg = WatermarkConfig(
        mapper="mapper",  # relative to the config file
        generator="gen",
        measurement_model="gen",
        embedder=str(tiny_embedder_dir),
        key="cli-key",
        opening_sentence="opening",
        alpha=1.0,
        opening_steps=4,
        top_k=10,
    ).save(tmp_path / "wm.json")
    assert main(["generate", "--config", str(cfg), "--prompt", "river city", "--prompt", "bank",
                 "--max-new-tokens", "10", "--seed", "1"]) == 0  # fmt: skip
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [x["prompt"] for x in lines] == ["river city", "bank"] and all(
        "text" in x for x in lines
    )
    gen_file = tmp_path / "gen.jsonl"
    gen_file.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    assert main(["detect", "--config", str(cfg), "--file", str(gen_file), "--text", ""]) == 0
    detected = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert len(detected) == 3 and detected[0]["reason"] == "empty text"  # --text first, then --file
    for key in (
        "score",
        "green_fraction",
        "num_scored",
        "awr",
        "z_score",
        "p_value",
        "is_watermarked",
    ):
        assert key in detected[1]
    page = tmp_path / "page.html"
    assert main(["show", "--config", str(cfg), "--file", str(gen_file), "--out", str(page)]) == 0
    html = page.read_text()
    assert html.count('class="g"') + html.count('class="r"') == sum(
        d["num_scored"] for d in detected[1:]
    )
