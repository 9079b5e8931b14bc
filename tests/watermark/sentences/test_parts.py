"""The sentence layer's own parts (:mod:`watermark.sentences.parts`): its own sentence embedder
(``sentences.embedder``) read with its mapper, pinned, named in the fingerprint, and the outputs
it keys (``Watermark.sentence_outputs``), on the tiny models."""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from tests.helpers import PROMPTS

LAYER = {"sentence_bits": 8, "sentence_candidates": 4}
SENTENCES = ["the storm hit the north road .", "the bridge said ."]
OTHER = "sha256:" + "0" * 64


def save_tiny_se(tiny_embedder_dir: Path, folder: Path, seed: int, width: int = 16) -> Path:
    """A random sentence-transformers model (BERT, 1 layer, ``width``-d) with the tiny
    embedder's tokenizer, saved with ``SentenceTransformer.save`` to ``folder``."""
    from sentence_transformers import SentenceTransformer, models
    from transformers import AutoTokenizer, BertConfig, BertModel

    tok = AutoTokenizer.from_pretrained(str(tiny_embedder_dir))
    torch.manual_seed(seed)
    cfg = BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=width,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=2 * width,
        max_position_embeddings=128,
    )
    BertModel(cfg).save_pretrained(folder / "bert")
    tok.save_pretrained(folder / "bert")
    word = models.Transformer(str(folder / "bert"), max_seq_length=64)
    SentenceTransformer(modules=[word, models.Pooling(width), models.Normalize()]).save(
        str(folder / "st")
    )
    return folder / "st"


def load_se(folder: Path) -> object:
    """A saved SE loaded as ``sentences.embedder`` loads it."""
    from watermark.models.loaders import load_embedder

    return load_embedder(str(folder))


@pytest.fixture(scope="module")
def own(tiny: SimpleNamespace, tiny_embedder_dir: Path, tmp_path_factory) -> SimpleNamespace:
    """Two 16-d SEs of their own (seeds 11 and 12) and an 8-d one, the tiny parts to load with,
    and the layer's config reading with the first."""
    root = tmp_path_factory.mktemp("own_se")
    ns = SimpleNamespace(
        first=save_tiny_se(tiny_embedder_dir, root / "first", 11),
        second=save_tiny_se(tiny_embedder_dir, root / "second", 12),
        narrow=save_tiny_se(tiny_embedder_dir, root / "narrow", 13, width=8),
        shared=tiny.make(**LAYER),  # the layer on the token level's SE and mapper
        parts=dict(tokenizer=tiny.gtok, generator=tiny.gen, measurement_model=tiny.mm),
    )
    ns.parts.update(mm_tokenizer=tiny.gtok, embedder=tiny.emb, mapper=tiny.mapper)
    ns.cfg = ns.shared.config.with_settings({"sentences.embedder": str(ns.first)})
    return ns


def test_the_layer_embeds_with_its_own_se_and_maps_with_its_mapper(
    tiny: SimpleNamespace, own: SimpleNamespace
) -> None:
    """``sentences.embedder``: the layer's outputs are the token level's mapper on the own SE;
    ``sentence_outputs`` gives exactly them; the token level is unchanged."""
    from sentence_transformers import SentenceTransformer

    from watermark.api import Watermark

    wm = Watermark.load(own.cfg, **own.parts)
    assert wm.sentences.semantic.embedder is not wm.core.semantic.embedder
    assert wm.sentences.semantic.mapper is wm.core.semantic.mapper
    v = wm.sentence_outputs(SENTENCES)
    assert v.shape == (2, 24) and v.dtype == torch.float32
    assert torch.equal(v, wm.sentences.outputs(SENTENCES))
    assert torch.equal(wm.sentence_outputs(SENTENCES[0]), v[:1])  # a string is one sentence
    se = SentenceTransformer(str(own.first), device=tiny.device)
    direct = tiny.mapper(se.encode(SENTENCES, convert_to_tensor=True)).detach().cpu()
    assert torch.allclose(v, direct, atol=1e-5)
    assert not torch.allclose(v, own.shared.sentence_outputs(SENTENCES), atol=1e-3)
    text = " ".join(SENTENCES) + " river city council ."
    token = ("p_value", "num_scored", "green_bits")
    a, b = wm.detect([text])[0], own.shared.detect([text])[0]
    assert all(getattr(a, k) == getattr(b, k) for k in token)


def test_the_fingerprint_names_the_own_se_and_only_where_there_is_one(
    tiny: SimpleNamespace, own: SimpleNamespace, tmp_path: Path
) -> None:
    """Another SE, another fingerprint; a pinned or passed-in SE the same one; a config without
    one (or with the layer off) keeps the fingerprint it had; with an own mapper, both count."""
    from tests.helpers import tiny_mapper
    from watermark.api import Watermark
    from watermark.core.identity import fingerprint, tensor_digest

    first = Watermark.load(own.cfg, **own.parts)
    second = Watermark.load(
        own.cfg.with_settings({"sentences.embedder": str(own.second)}), **own.parts
    )
    assert len({first.fingerprint, second.fingerprint, own.shared.fingerprint}) == 3
    core = own.shared.core
    found = core.semantic.digests
    before = fingerprint(core.config, core.vocab_size, found["mapper"], found["embedder"])
    assert own.shared.sentence_parts is None and own.shared.fingerprint == before
    pin = tensor_digest(first.sentences.semantic.embedder)
    pinned = own.cfg.with_settings({"sentences.embedder_digest": pin})
    assert Watermark.load(pinned, **own.parts).fingerprint == first.fingerprint
    given = Watermark.load(own.shared.config, **own.parts, sentence_embedder=load_se(own.first))
    assert given.fingerprint == first.fingerprint
    off = Watermark.load(own.cfg.evolve(bits=0), **own.parts)
    assert off.sentence_parts is None and off.fingerprint == tiny.make().fingerprint
    tiny_mapper(16, 40, seed=7).save_pretrained(tmp_path / "mapper")
    mapper_only = own.shared.config.with_settings({"sentences.mapper": str(tmp_path / "mapper")})
    alone = Watermark.load(mapper_only, **own.parts)
    found = alone.sentence_parts.digests["mapper"]
    assert alone.fingerprint == alone.core.fingerprint(found)  # as before the own SE
    both = Watermark.load(
        mapper_only.with_settings({"sentences.embedder": str(own.first)}), **own.parts
    )
    assert both.sentences.semantic.num_dims == 40
    assert both.fingerprint not in {alone.fingerprint, first.fingerprint}


def test_a_wrong_pin_a_missing_folder_and_another_width_are_refused(
    own: SimpleNamespace, caplog: pytest.LogCaptureFixture
) -> None:
    """Each in one line naming the field; an unpinned SE loaded by name warns."""
    from watermark.api import Watermark

    wrong = own.cfg.with_settings({"sentences.embedder_digest": OTHER})
    with pytest.raises(ValueError, match="sentences.embedder .* is not the one") as err:
        Watermark.load(wrong, **own.parts)
    assert "\n" not in str(err.value) and "embedder_digest" in str(err.value)
    with pytest.raises(ValueError, match="sentences.embedder_digest is not sha256"):
        own.cfg.with_settings({"sentences.embedder_digest": "sha256:abc"})
    missing = own.cfg.with_settings({"sentences.embedder": str(own.first.parent / "none")})
    with pytest.raises(ValueError, match="sentences.embedder folder .* not found"):
        Watermark.load(missing, **own.parts)
    narrow = own.cfg.with_settings({"sentences.embedder": str(own.narrow)})
    with pytest.raises(ValueError, match="expects 16-d embeddings but sentences.embedder") as err:
        Watermark.load(narrow, **own.parts)
    assert "\n" not in str(err.value) and "gives 8-d" in str(err.value)
    with caplog.at_level(logging.WARNING, logger="watermark.core.identity"):
        Watermark.load(own.cfg, **own.parts)
    assert "does not pin its sentences.embedder" in caplog.text


def test_sentence_outputs_needs_the_layer(tiny: SimpleNamespace) -> None:
    """``sentence_outputs`` of a config with the layer off (``sentences.bits`` 0)."""
    with pytest.raises(ValueError, match="sentence layer off") as err:
        tiny.make().sentence_outputs(SENTENCES)
    assert "\n" not in str(err.value)


def test_generation_and_detection_run_with_the_own_se(own: SimpleNamespace) -> None:
    """A generation and its detection with the own SE: the texts carry its fingerprint, their
    token-level results are those of the token level's SE, their sentence results are not."""
    from watermark.api import Watermark

    wm = Watermark.load(own.cfg, **own.parts)
    outs = wm.generate(PROMPTS, max_new_tokens=60, seed=1, min_new_tokens=60)
    texts = [o.text for o in outs]
    results = wm.detect(texts)
    assert all(r.fingerprint == wm.fingerprint for r in results)
    assert all(r.sentence_p_value is not None for r in results)
    assert sum(r.num_sentences for r in results) > len(texts)
    other = own.shared.detect(texts)
    assert [r.p_value for r in results] == [r.p_value for r in other]  # the token level's
    assert [r.sentence_p_value for r in results] != [r.sentence_p_value for r in other]
