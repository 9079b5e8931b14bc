"""Tests for detection with tiny models: unscorable texts, the gate, fast path vs reference."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from tests import reference
from tests.helpers import scored_steps, sentences
from watermark.base import UserError


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
    assert scored_steps(closed) == [1, 2, 3, 4, 5]  # exactly M steps, not M + 1
    assert closed.awr == pytest.approx(5 / 12)
    assert tiny.make(alpha=-1.0, opening_steps=5).detect([text])[0].num_scored == 12
    none = tiny.make(alpha=1e9, opening_steps=0, opening_sentence="").detect([text])[0]
    assert none.num_scored == 0 and none.reason == "no scored tokens" and none.p_value == 1.0


def test_score_uses_the_active_rule_strength(tiny: SimpleNamespace) -> None:
    text = sentences(1, seed=5, length=30)[0]
    additive = tiny.make(rule="additive", bias=3.0, alpha=0.0).detect([text])[0]
    assert additive.num_scored == 30 and 0 < additive.green_fraction < 1
    assert additive.score == pytest.approx(3.0 * additive.green_fraction)  # bias, not delta
    paper = tiny.make(rule="paper", delta=1.5, alpha=0.0).detect([text])[0]
    assert paper.score == pytest.approx(1.5 * paper.green_fraction)
    tour = tiny.make(rule="tournament", layers=3, alpha=0.0).detect([text])[0]
    assert tour.score == pytest.approx(sum(tour.green_bits) / (3 * tour.num_scored))
    assert tour.score != pytest.approx(3 * tour.green_fraction)


@pytest.mark.parametrize(
    "cross,guard,layers,fresh",
    [
        (False, 0, 1, False),
        (True, 0, 1, False),
        (False, 2, 3, False),
        (False, 1, 2, True),
        (True, 3, 1, True),
    ],
)
def test_fast_detection_matches_reference(
    tiny: SimpleNamespace,
    cross: bool,
    guard: int,
    layers: int,
    fresh: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    strength = {"rule": "tournament", "layers": layers} if layers > 1 else {}  # else paper
    wm = tiny.make(
        cross=cross,
        context_guard=guard,
        **strength,
        fresh_only=fresh,
        window_sizes=[6],
    )
    texts = sentences(3, seed=7, length=20) + ["river"]
    mm, full_forwards = wm.core.measurement, []  # a full forward per prefix whose re-encoding
    forward = mm._logits  # changed earlier MM tokens (counted here, not by the runtime class)

    def counted(ids: list[int]) -> object:
        full_forwards.append(len(ids))
        return forward(ids)

    monkeypatch.setattr(mm, "_logits", counted)
    fast = wm.detect(texts)
    for text, res in zip(texts, fast):
        ref = reference.detect(wm, text)
        assert res.token_ids == ref.ids
        assert res.scored == ref.scored
        assert 0 < sum(res.scored[5:]) < len(res.scored) - 5 or len(res.scored) <= 5  # gate mixes
        assert res.green == ref.green
        assert res.score == ref.score
        assert res.p_value == pytest.approx(ref.p_value, rel=1e-5, abs=1e-12)  # MM float noise
        assert res.window_p_value == pytest.approx(ref.window_p_value, rel=1e-5, abs=1e-12)
        for h_fast, h_ref in zip(res.entropy[5:], ref.entropy[5:]):
            assert h_fast == pytest.approx(h_ref, abs=1e-4)
    if cross:
        assert full_forwards  # boundary re-encodings were exercised


def test_worker_processes_give_the_same_results(tiny: SimpleNamespace) -> None:
    """Results assembled in worker processes equal the in-process ones, field for field, under
    the shipped design's rules (tournament, bigram repeats, outputs once, windows, two keys)."""
    wm = tiny.make(
        rule="tournament",
        layers=3,
        fresh_only=True,
        repeats="bigram",
        outputs_once=True,
        context_guard=2,
        window_sizes=[8, 16],
        old_keys=["an-earlier-key"],
    )
    texts = sentences(6, seed=21, length=30) + ["", "river bank"]
    alone = wm.detect(texts, batch_size=3)
    try:
        pooled = wm.detect(texts, batch_size=3, workers=2)
    finally:
        wm.detector.close()
    assert [r.to_dict() for r in pooled] == [r.to_dict() for r in alone]
    assert [r.tokens for r in pooled] == [r.tokens for r in alone]
    assert any(r.window_p_value is not None and r.num_scored for r in pooled)
    with pytest.raises(UserError, match="workers"):
        wm.detect(texts, workers=-1)


@pytest.mark.parametrize("cross,window", [(False, 2048), (False, 16), (True, 2048)])
def test_batched_detection_matches_per_text_and_reference(
    tiny: SimpleNamespace, cross: bool, window: int
) -> None:
    """Texts sharing fixed-shape forwards (batched detection) get the per-text gates and green
    bits; texts longer than the MM window and cross-tokenizer MMs stream alone."""
    wm = tiny.make(cross=cross, context_guard=1, mm_window=window)
    texts = sentences(5, seed=11, length=24) + ["river", "bank loan price"]
    per_text = wm.detect(texts, batch_size=len(texts))
    wm.detector.batched = True
    batched = wm.detect(texts, batch_size=4)
    for text, a, b in zip(texts, per_text, batched):
        assert a.scored == b.scored and a.green == b.green and a.green_bits == b.green_bits
        assert a.is_watermarked == b.is_watermarked
        assert a.p_value == pytest.approx(b.p_value, rel=1e-5, abs=1e-12)
        for h_a, h_b in zip(a.entropy, b.entropy):
            assert h_a == h_b or h_a == pytest.approx(h_b, abs=1e-4)
        assert b.scored == reference.detect(wm, text).scored


def test_batched_detection_shares_forwards(
    tiny: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """32 texts in one chunk: the MM's forward runs once (they fall in one padded length),
    the SE's once per :data:`SE_ROWS` distinct windows of a padded length, and the decisions
    and green counts are the per-text path's."""
    from watermark.core.fixed_shapes import SE_ROWS, padded_length

    wm = tiny.make(context_guard=1, opening_steps=2, alpha=0.5)
    texts = sentences(32, seed=31, length=24)
    per_text = wm.detect(texts)
    forwards = {"mm": 0, "se": 0}

    def count(name: str) -> object:
        return lambda *_: forwards.__setitem__(name, forwards[name] + 1)

    hooks = [tiny.mm.register_forward_pre_hook(count("mm"))]
    hooks.append(tiny.emb.register_forward_pre_hook(count("se")))
    embedded: list[str] = []
    embed = wm.core.semantic.embed

    def recording(inputs: list[str], progress: bool = False, fixed: bool = False) -> object:
        embedded.extend(inputs)
        return embed(inputs, progress=progress, fixed=fixed)

    monkeypatch.setattr(wm.core.semantic, "embed", recording)
    wm.detector.batched = True
    try:
        batched = wm.detect(texts, batch_size=32)
    finally:
        for hook in hooks:
            hook.remove()
    windows = [w for w in embedded if w != wm.config.keys.opening_sentence]
    assert len(windows) == len(set(windows)) > SE_ROWS  # distinct windows, several batches
    lengths: dict[int, int] = {}
    for ids in wm.core.semantic._fixed.token_ids(windows):
        lengths[padded_length(len(ids))] = lengths.get(padded_length(len(ids)), 0) + 1
    assert forwards["mm"] == 1
    assert forwards["se"] == sum(-(-n // SE_ROWS) for n in lengths.values())
    for a, b in zip(per_text, batched):
        assert (a.scored, a.green, a.num_green_tested) == (b.scored, b.green, b.num_green_tested)
        assert a.is_watermarked == b.is_watermarked


@pytest.mark.parametrize("batched", [False, True])
def test_a_verdict_does_not_depend_on_batch_mates(
    tiny: SimpleNamespace, monkeypatch: pytest.MonkeyPatch, batched: bool
) -> None:
    """A text's CLI line is the same alone or in any chunk (the service relies on it). Per
    text, each SE batch holds one text's spans and the MM runs per text (0.5.0; an H200 had
    failed this when chunks shared padded forwards); batched, the chunk shares forwards of
    shapes that each text's length chooses (:mod:`watermark.core.fixed_shapes`). The GPU
    suite runs this on CUDA.
    """
    wm = tiny.make(context_guard=1, window_sizes=[8])
    wm.detector.batched = batched
    texts = sentences(6, seed=21, length=30) + ["river"] + sentences(3, seed=22, length=12)
    semantic, calls = wm.core.semantic, []
    embed = semantic.green_lists

    def recording(inputs: list[str], progress: bool = False, fixed: bool = False) -> object:
        calls.append(list(inputs))
        return embed(inputs, progress=progress, fixed=fixed)

    monkeypatch.setattr(semantic, "green_lists", recording)
    spans = lambda: [sorted(c) for c in calls if c != [wm.config.keys.opening_sentence]]  # noqa: E731
    alone, alone_batches = [], []
    for text in texts:
        calls.clear()
        alone.append(wm.detect([text])[0])
        alone_batches += spans()
    calls.clear()
    together = wm.detect(texts[::-1], batch_size=4)[::-1]
    if not batched:
        assert len(alone_batches) == len(texts) - 1  # "river": no tested step after the opening
        assert sorted(spans()) == sorted(alone_batches)
    else:
        assert len(spans()) < len(alone_batches)  # texts shared SE calls
    for a, b in zip(alone, together):
        assert json.dumps(a.to_dict(per_token=True)) == json.dumps(b.to_dict(per_token=True))


def test_detect_batch_size_is_checked(tiny: SimpleNamespace) -> None:
    with pytest.raises(ValueError, match="batch_size"):
        tiny.make().detect(["river city"], batch_size=0)


@pytest.mark.parametrize("cross,local", [(False, 0), (True, 0), (True, 6)])
def test_long_text_rules_match_reference(tiny: SimpleNamespace, cross: bool, local: int) -> None:
    """The MM window, the SE prefix cap or local context and chunked streaming against the
    reference."""
    wm = tiny.make(
        cross=cross,
        mm_window=8,
        embed_prefix_tokens=9,
        embed_window=local,
        opening_steps=0 if local else 4,
    )
    wm.core.measurement.chunk = 5  # several chunks per window segment
    texts = sentences(2, seed=3, length=40)
    for text, res in zip(texts, wm.detect(texts)):
        ref = reference.detect(wm, text)
        assert len(res.token_ids) > 30 and res.scored == ref.scored and res.green == ref.green
        assert res.p_value == pytest.approx(ref.p_value, rel=1e-5, abs=1e-12)
        for h_fast, h_ref in zip(res.entropy[5:], ref.entropy[5:]):
            assert h_fast == pytest.approx(h_ref, abs=1e-4)
    texts[0] = texts[0] + " " + texts[0]  # pieces still rebuild a long text
    assert "".join(wm.detect(texts[:1])[0].tokens) == texts[0]


def test_window_start_rule() -> None:
    from watermark.core.measurement import window_start

    assert [window_start(n, 8) for n in (0, 7, 8, 11, 12, 15, 16)] == [0, 0, 4, 4, 8, 8, 12]
    assert all(4 <= n - window_start(n, 8) < 8 for n in range(8, 100))
    assert window_start(10**6, 0) == 0


def test_windowed_detection_matches_reference(tiny: SimpleNamespace) -> None:
    from watermark.detect.stats import window_spans

    wm = tiny.make(window_sizes=[4, 8], fresh_only=True, rule="additive", bias=2.0)
    texts = sentences(3, seed=9, length=30)
    for text, res in zip(texts, wm.detect(texts)):
        ref = reference.detect(wm, text)
        assert res.window_p_value == pytest.approx(ref.window_p_value, rel=1e-5, abs=1e-12)
        spans = len(window_spans(res.num_tokens, [4, 8]))  # the whole text is one of them
        assert res.window_p_value <= min(1.0, spans * res.p_value) + 1e-12
        first, last = res.window
        assert res.scored[first - 1] and res.scored[last - 1] and first <= last
        assert res.is_watermarked == (res.window_p_value < wm.config.detection.target_fpr)
    plain = tiny.make(window_sizes=[], fresh_only=True, rule="additive", bias=2.0)
    plain = plain.detect(texts[:1])[0]
    assert plain.window_p_value is None and plain.window is None
    empty = wm.detect([""])[0]
    assert empty.window_p_value == 1.0 and not empty.is_watermarked


@pytest.mark.parametrize(
    "rule", [{"rule": "tournament", "layers": 3}, {"rule": "additive", "bias": 2.0}]
)
def test_bigram_repeats_match_reference(tiny: SimpleNamespace, rule: dict) -> None:
    """``repeats="bigram"``: repeated tokens read their shifted outputs and each (previous,
    token) pair of a repeat is tested once, in the whole text and in every window."""
    wm = tiny.make(repeats="bigram", fresh_only=True, window_sizes=[6, 12], **rule)
    neutral = tiny.make(fresh_only=True, window_sizes=[6, 12], **rule)
    texts = sentences(3, seed=5, length=30)
    for text, res, plain in zip(texts, wm.detect(texts), neutral.detect(texts)):
        ref = reference.detect(wm, text)
        assert res.scored == ref.scored and res.green == ref.green and res.score == ref.score
        assert res.p_value == pytest.approx(ref.p_value, rel=1e-5, abs=1e-12)
        assert res.window_p_value == pytest.approx(ref.window_p_value, rel=1e-5, abs=1e-12)
        assert res.num_tested > plain.num_tested  # repeats are tested too
        assert res.expected_green != plain.expected_green


@pytest.mark.parametrize(
    "rule",
    [
        {"rule": "tournament", "layers": 3, "repeats": "bigram"},
        {"rule": "additive", "bias": 2.0},
    ],
)
def test_outputs_once_matches_reference(tiny: SimpleNamespace, rule: dict) -> None:
    """``outputs_once``: each of the D = 24 mapper outputs enters a span's test at most once (its
    first read), in the whole text and in every window; gates and flags do not change."""
    wm = tiny.make(outputs_once=True, fresh_only=True, window_sizes=[6, 12], **rule)
    every = tiny.make(fresh_only=True, window_sizes=[6, 12], **rule)
    texts = sentences(3, seed=5, length=30)
    for text, res, plain in zip(texts, wm.detect(texts), every.detect(texts)):
        ref = reference.detect(wm, text)
        assert res.scored == ref.scored == plain.scored and res.green == ref.green == plain.green
        assert res.z_score == pytest.approx(ref.z_score, rel=1e-9)
        assert res.p_value == pytest.approx(ref.p_value, rel=1e-5, abs=1e-12)
        assert res.window_p_value == pytest.approx(ref.window_p_value, rel=1e-5, abs=1e-12)
        assert res.expected_green <= 24  # at most one bit per output, each gamma <= 1
        assert res.expected_green < plain.expected_green and res.p_value != plain.p_value
        if rule["rule"] == "tournament":
            assert plain.expected_green > 24  # three lists read more than D bits


def test_first_reads() -> None:
    from watermark.detect.units import first_reads

    dims = [[1, 2], [2, 3], [4, 1]]  # the outputs 3 units read in 2 lists
    assert first_reads(dims, [0, 1, 2], once=True) == [0, 1, 3, 4]
    assert first_reads(dims, [2, 0], once=True) == [4, 5, 1]  # the span's order decides
    assert first_reads(dims, [0, 1, 2], once=False) == [0, 1, 2, 3, 4, 5]
    assert first_reads([], [], once=True) == []


def test_repeat_units() -> None:
    from watermark.detect.units import repeat_indices

    ids = [5, 6, 5, 6, 5, 6, 7, 5, 6]
    steps = list(range(1, 10))
    # repeats: step 3 (6, 5) new; 4 (5, 6) already at step 2; 5, 6 and 9 pairs again; 8 (7, 5)
    assert repeat_indices(ids, steps, (0, 9)) == [2, 7]
    assert repeat_indices(ids, [1, 2, 5, 6, 8], (0, 9)) == [4]  # a pair's first occurrence only
    assert repeat_indices(ids, steps, (4, 9)) == [7]  # (5, 6) is at steps 6 and 9 in the span
    assert repeat_indices(ids, steps, (2, 2)) == []


def test_followers_are_the_pairs_already_in_the_text() -> None:
    import torch

    from watermark.core.repeats import followers

    gen = torch.tensor([[5, 6, 5, 7, 5], [1, 2, 3, 4, 1]])
    found = followers(gen, 9)
    assert torch.nonzero(found).tolist() == [[0, 6], [0, 7], [1, 2]]
    assert not followers(gen[:, :1], 9).any()


def test_a_window_is_tested_as_a_text_of_its_own() -> None:
    from watermark.detect.units import tested_indices

    ids = [5, 6, 7, 5, 8, 6, 9, 5]
    steps = [1, 2, 4, 5, 6, 7, 8]  # step 3 (token 7) is not scored
    whole = (0, len(ids))
    assert tested_indices(ids, steps, whole, unique=False, fresh=False) == list(range(7))
    assert tested_indices(ids, steps, whole, unique=True, fresh=False) == [0, 1, 3, 5]
    assert tested_indices(ids, steps, whole, unique=True, fresh=True) == [0, 1, 3, 5]
    # From token 4 on, 5 and 6 are new again: a pasted passage keeps the tokens the text
    # before it already used.
    assert tested_indices(ids, steps, (3, 8), unique=True, fresh=True) == [2, 3, 4, 5]
    assert tested_indices(ids, steps, (2, 8), unique=True, fresh=True) == [2, 3, 4, 5]
    assert tested_indices(ids, [2, 4], (0, 8), unique=True, fresh=True) == [0]  # 5 seen unscored
    assert tested_indices(ids, steps, (7, 7), unique=True, fresh=True) == []


def test_windowed_detection_counts_a_passage_after_text_that_uses_its_words(
    tiny: SimpleNamespace,
) -> None:
    """The tokens of a passage that the text before it already used still count in a window:
    the fast path agrees with the reference where the whole-text and window rules differ."""
    wm = tiny.make(window_sizes=[8], alpha=-1.0, embed_window=4, fresh_only=True)
    passage = sentences(1, seed=4, length=24)[0]
    res = wm.detect([passage + " " + passage])[0]  # every token of the copy was used before
    half = res.num_tokens // 2
    assert not any(res.tested[half:])  # the whole-text test drops the copy
    ref = reference.detect(wm, passage + " " + passage)
    assert res.window_p_value == pytest.approx(ref.window_p_value, rel=1e-5, abs=1e-12)


def test_local_context_keeps_a_pasted_passage_green_lists(tiny: SimpleNamespace) -> None:
    """With embed_window W, a passage's green lists past its first W tokens do not depend on
    the text pasted before it (without it, they do)."""
    passage, before = sentences(1, seed=4, length=30)[0], sentences(1, seed=5, length=15)[0]
    for window, same in ((5, True), (0, False)):
        wm = tiny.make(alpha=-1.0, opening_steps=0, embed_window=window)  # every step scored
        alone, pasted = wm.detect([passage, before + " " + passage])
        offset = len(pasted.token_ids) - len(alone.token_ids)
        assert pasted.token_ids[offset:] == alone.token_ids  # word-level tokens
        tail = range(6, len(alone.token_ids))
        agree = [pasted.green[offset + i] == alone.green[i] for i in tail]
        assert all(agree) if same else not all(agree)


def test_per_key_results_are_the_ones_the_verdict_picks_from(tiny: SimpleNamespace) -> None:
    """``Detector.detect_per_key``: each text's results under every key, in the config's order;
    the verdict over them (``best_key``) is what ``detect`` returns; an unscorable text gets its
    one result with the reason."""
    from watermark.detect.verdict import best_key

    wm = tiny.make(old_keys=["an-earlier-key", "a-third-key"], window_sizes=[8])
    texts = sentences(3, seed=5, length=24) + ["12345"]
    per_key = wm.detector.detect_per_key(texts)
    found = wm.detect(texts)
    assert [len(k) for k in per_key] == [3, 3, 3, 1] and per_key[3][0].reason == "no letters"
    fpr = wm.config.detection.target_fpr
    for keys, result in zip(per_key[:3], found):
        assert best_key(keys, fpr).to_dict() == result.to_dict()
        assert result.key_p_values == [k.verdict_p_value for k in keys]
    alone = tiny.make(key="a-third-key", window_sizes=[8]).detect(texts[:3])
    assert [k[2].p_value for k in per_key[:3]] == [r.p_value for r in alone]
    assert all(r.fingerprint == wm.fingerprint for k in per_key for r in k)
    ids = wm.identity.key_ids  # each result names the key it was tested under
    assert all([r.key_id for r in k] == list(ids) for k in per_key[:3]) and len(set(ids)) == 3
    assert [r.key_id for r in found[:3]] == [ids[r.key_index] for r in found[:3]]


@pytest.mark.parametrize("batched,workers", [(False, 0), (True, 2)])
def test_the_verdict_step_runs_once_per_text(
    tiny: SimpleNamespace, monkeypatch: pytest.MonkeyPatch, batched: bool, workers: int
) -> None:
    """Each text read goes through the verdict step exactly once (its keys' results joined with
    its sentence test, which reads the text as given), in this process or with its results
    assembled in worker processes; a text that cannot be read has none."""
    import watermark.detect.detector as detector

    wm = tiny.make(sentence_bits=8, old_keys=["an-earlier-key"], window_sizes=[8])
    wm.detector.batched = batched
    texts = sentences(5, seed=3, length=20) + ["12345"]
    verdicts, tested = [], []

    def counted(verdict: object) -> object:
        def run(per_key: list, *args: object) -> object:
            verdicts.append(tuple(per_key[0].token_ids))
            return verdict(per_key, *args)

        return run

    def test_of(text: str) -> list:
        tested.append(text)
        return wm.sentences.tests(text)

    monkeypatch.setattr(detector, "best_key", counted(detector.best_key))
    monkeypatch.setattr(detector, "with_sentences", counted(detector.with_sentences))
    monkeypatch.setattr(wm.detector, "sentence_tests", test_of)
    try:
        found = wm.detect(texts, batch_size=2, workers=workers)
    finally:
        wm.detector.close()
    read = [tuple(r.token_ids) for r in found[:5]]
    assert sorted(verdicts) == sorted(read) and len(set(read)) == 5
    assert sorted(tested) == sorted(texts[:5])
    assert found[5].reason == "no letters" and found[5].key_p_values == []
    assert all(r.sentence_p_value is not None for r in found[:5])
