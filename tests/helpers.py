"""Shared non-fixture helpers for the tests: tiny offline models, tokenizers and records.

* a word-level generator tokenizer (decode -> encode is the identity on any id sequence, so
  round trips re-tokenize exactly) and a byte-pair MM tokenizer without pre-tokenization (its
  merges cross spaces, so re-encoding a longer prefix can change earlier tokens);
* tiny random Llama models whose LM heads are scaled up so that entropies spread over a few nats;
* a random semantic mapper; the tiny sentence embedder comes from ``conftest.tiny_embedder_dir``;
* synthetic corpus records (``make_records``) and the prompts and rule cases of the watermark
  tests.
"""

from __future__ import annotations

import random
import socket
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from watermark.models.semantic_mapper import MapperConfig, SemanticMapper

_WORD_LINES = (
    "river city council vote budget school team player season storm rain flood farmer crop",
    "price market bank loan doctor patient hospital court judge law police fire road",
    "bridge train station music band song film actor museum art history war peace treaty",
    "election the a of and to in on for with at by from after before said new old big",
    "small early late north south east west night morning week year people water power",
    "money state report . ,",
)


WORDS = " ".join(_WORD_LINES).split(" ")


SPECIALS = ["[PAD]", "[UNK]", "[BOS]", "[EOS]"]


SPECIAL_IDS = [0, 1, 2]  # [PAD] [UNK] [BOS]: suppressed in round trips (decoding drops them)


# the sentence layer's own parts: a flat file names the models' fields of these names
OWN_PARTS = ("mapper", "mapper_digest", "embedder", "embedder_digest")
PROMPTS = ["river city council", "the storm hit the north road and the bridge", "bank"]


# every strength rule, both filter orders, with and without the context guard
RULE_CASES = [
    {"rule": "paper"},
    {"rule": "paper", "filter_first": True, "context_guard": 1},
    {"rule": "additive", "bias": 2.0},
    {"rule": "additive", "bias": 2.0, "filter_first": True, "context_guard": 2},
    {"rule": "tournament", "layers": 3, "filter_first": True},
    {"rule": "tournament", "layers": 2, "context_guard": 1},
    {"rule": "tournament", "layers": 3, "filter_first": True, "fresh_only": True},
    {"rule": "additive", "bias": 2.0, "fresh_only": True, "context_guard": 2},
    {
        "rule": "tournament",
        "layers": 3,
        "filter_first": True,
        "fresh_only": True,
        "repeats": "bigram",
    },
    {"rule": "tournament", "layers": 2, "fresh_only": True, "repeats": "bigram"},
    {"rule": "additive", "bias": 2.0, "fresh_only": True, "repeats": "bigram"},
    {
        "rule": "tournament",
        "layers": 3,
        "filter_first": True,
        "fresh_only": True,
        "repeats": "bigram",
        "neutral": "half",
    },
    {
        "rule": "additive",
        "bias": 2.0,
        "fresh_only": True,
        "repeats": "bigram",
        "neutral": "half",
    },
]


def scored_steps(result: object) -> list[int]:
    """The 1-based steps a detection result scored (its W)."""
    return [i + 1 for i, s in enumerate(result.scored) if s]


def sentences(n: int, seed: int = 0, length: int = 12) -> list[str]:
    """Random word sentences from ``WORDS``."""
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(length)) for _ in range(n)]


def _fast(tok: Tokenizer) -> PreTrainedTokenizerFast:
    """Wraps a ``tokenizers`` object with this module's special tokens."""
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        bos_token="[BOS]",
        eos_token="[EOS]",
    )


def word_tokenizer(words: list[str] | None = None) -> PreTrainedTokenizerFast:
    """Word-level tokenizer over ``words`` (default ``WORDS``): ids 0-3 special, one id per word."""
    vocab = {w: i for i, w in enumerate(SPECIALS + list(dict.fromkeys(words or WORDS)))}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)
    return _fast(tok)


def bpe_tokenizer(vocab_size: int = 160) -> PreTrainedTokenizerFast:
    """Byte-pair tokenizer trained on random sentences, merges crossing spaces."""
    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=SPECIALS, show_progress=False
    )
    tok.train_from_iterator(sentences(400, seed=1), trainer=trainer)
    return _fast(tok)


def tiny_llama(vocab_size: int, seed: int, head_scale: float = 40.0) -> LlamaForCausalLM:
    """Random 2-layer Llama; the LM head is scaled so next-token entropies spread out."""
    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        tie_word_embeddings=False,
        bos_token_id=2,
        eos_token_id=3,
        pad_token_id=0,
    )
    model = LlamaForCausalLM(cfg)
    with torch.no_grad():
        model.lm_head.weight.mul_(head_scale)
    model.generation_config.eos_token_id = 3
    model.generation_config.pad_token_id = 0
    return model.eval()


def tiny_mapper(input_dim: int, output_dim: int, seed: int = 0) -> SemanticMapper:
    """Random mapper with a larger input layer so that different texts get different signs."""
    torch.manual_seed(seed)
    mapper = SemanticMapper(MapperConfig(input_dim=input_dim, hidden_dim=32, output_dim=output_dim))
    with torch.no_grad():
        mapper.inp.weight.mul_(25.0)
    return mapper.eval()


RECORD_WORDS = (
    "river city council vote budget school team player season storm rain flood farmer crop "
    "price market bank loan doctor patient hospital court judge law police fire road bridge "
    "train station music band song film actor museum art history war peace treaty election"
).split()


def make_records(n_docs: int = 12, per_doc: int = 8, seed: int = 0) -> list[dict]:
    """Synthetic corpus records in the `data/` schema, with every augmentation kind."""
    rng = random.Random(seed)
    records = []
    for d in range(n_docs):
        split = "val" if d % 4 == 0 else "train"
        for s in range(per_doc):
            words = rng.sample(RECORD_WORDS, 10)
            text = " ".join(words).capitalize() + "."
            records.append(
                {
                    "id": f"d{d}-s{s}",
                    "doc": f"d{d}",
                    "source": "news",
                    "split": split,
                    "text": text,
                    "paraphrase": [" ".join(reversed(words)).capitalize() + "."],
                    "shortened": [" ".join(words[:7]).capitalize() + "."],
                    "expanded": ["In fact, " + " ".join(words) + " too."],
                    "synonym": [
                        " ".join(words[:5] + rng.sample(RECORD_WORDS, 5)).capitalize() + "."
                    ]
                    if s % 2 == 0
                    else [],
                }
            )
    return records


def save_tiny_watermark(
    tiny: object, embedder_dir: object, root: Path, **overrides: object
) -> dict:
    """Saves the tiny generator (with its tokenizer) and mapper under ``root`` and a config
    ``root / "wm.json"`` naming them by relative paths; returns the config's fields."""
    from watermark.config.watermark_config import WatermarkConfig

    tiny.gen.save_pretrained(root / "gen")
    tiny.gtok.save_pretrained(root / "gen")
    tiny.mapper.save_pretrained(root / "mapper")
    fields = dict(
        mapper="mapper",
        generator="gen",
        measurement_model="gen",
        embedder=str(embedder_dir),
        key="k",
        opening_sentence="opening",
        alpha=1.0,
        opening_steps=4,
        top_k=10,
    )
    fields.update(overrides)
    WatermarkConfig.of(**fields).save(root / "wm.json")
    return fields


def fused_watermark(tiny: object, **overrides: object) -> object:
    """A watermark whose MM is the generator itself (same object), so generation can fuse."""
    from watermark.api import Watermark
    from watermark.config.watermark_config import WatermarkConfig

    fields = dict(
        mapper="unused",
        generator="tiny-gen",
        measurement_model="tiny-gen",
        key="k",
        opening_sentence="a secret opening sentence",
        alpha=1.0,
        opening_steps=5,
        top_k=10,
        top_p=0.9,
    )
    return Watermark.load(
        WatermarkConfig.of(**{**fields, **overrides}),
        tokenizer=tiny.gtok,
        generator=tiny.gen,
        embedder=tiny.emb,
        mapper=tiny.mapper,
    )


@contextmanager
def serving(app: object):
    """``app`` served by uvicorn on a free loopback port, in a thread; yields its base URL."""
    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "server did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def flat_fields(cfg: object) -> dict:
    """A config as a flat file of 0.1-0.4 would hold it: every field by its own name (the
    models' ``mapper``, ``embedder`` and their digests, the sentence layer's left at their
    defaults) and the rule as ``scaling``."""
    out = {"scaling": cfg.scheme.rule}
    for name, part in cfg.sections().items():
        for key, value in part.items():
            if key != "rule" and not (name == "sentences" and key in OWN_PARTS):
                out.setdefault(key, value)
    return out
