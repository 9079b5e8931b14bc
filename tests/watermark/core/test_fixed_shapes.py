"""Fixed-shape forwards (batched detection): a text's entropies and embedding are the same alone
or among any texts, and match the per-text path up to float noise."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from tests.helpers import sentences
from watermark.core.fixed_shapes import (
    MIN_LENGTH,
    FixedShapeEmbedder,
    fixed_shape_entropies,
    padded_length,
)

WINDOWS = [
    "a plain sentence.",
    "  spaces around, Ünïcödé and CAPITALS ",
    "x",
    "punctuation!? (x) [y] --- 'quoted' and 3.14",
    "word " * 200,  # past the tiny model's 64 word pieces: truncated
] + sentences(40, seed=4, length=9)


def test_padded_length() -> None:
    assert [padded_length(n) for n in (0, 1, 16, 17, 32, 33, 200, 256, 257)] == [
        MIN_LENGTH,
        MIN_LENGTH,
        16,
        32,
        32,
        64,
        256,
        256,
        512,
    ]


def test_pre_tokenised_inputs_are_sentence_transformers_own(tiny: SimpleNamespace) -> None:
    fast = FixedShapeEmbedder(tiny.emb)
    assert fast.backend is not None  # MiniLM's tokenizer: the Rust backend path
    found = tiny.emb.preprocess(WINDOWS)
    lengths = found["attention_mask"].sum(1).tolist()
    expected = [found["input_ids"][i, :m].tolist() for i, m in enumerate(lengths)]
    assert fast.token_ids(WINDOWS) == expected
    assert max(map(len, expected)) == 64  # the long window was truncated as ST does
    fast.backend = None  # the fallback reads preprocess
    assert fast.token_ids(WINDOWS) == expected


def test_an_embedding_does_not_depend_on_the_texts_beside_it(tiny: SimpleNamespace) -> None:
    fast = FixedShapeEmbedder(tiny.emb, rows=8)
    together = fast.embed(WINDOWS)
    alone = torch.cat([fast.embed([w]) for w in WINDOWS])
    shuffled = fast.embed(WINDOWS[::-1]).flip(0)
    assert torch.equal(together, alone) and torch.equal(together, shuffled)
    encoded = tiny.emb.encode(WINDOWS, convert_to_tensor=True, normalize_embeddings=False)
    torch.testing.assert_close(together, encoded.float(), atol=1e-5, rtol=1e-4)


def test_entropies_do_not_depend_on_the_texts_beside_them(tiny: SimpleNamespace) -> None:
    mm = tiny.make().core.measurement
    texts = [mm.gen_tokenizer.encode(t) for t in sentences(7, seed=9, length=20)]
    texts += [texts[0][:3], texts[1][:17]]  # three padded lengths
    steps = [list(range(2, len(ids) + 1)) for ids in texts]
    together = fixed_shape_entropies(mm, texts, steps, first_step=2)
    for n, ids in enumerate(texts):
        alone = fixed_shape_entropies(mm, [ids], [steps[n]], first_step=2)[0]
        assert torch.equal(alone, together[n])
        streamed = mm.text_entropies(ids, steps[n])
        torch.testing.assert_close(together[n], streamed, atol=1e-4, rtol=1e-5)
    some = fixed_shape_entropies(mm, [texts[0]], [[3, 9, 20]], first_step=2)[0]
    assert torch.equal(some, together[0][[1, 7, 18]])  # any steps, read where all are


@pytest.mark.parametrize("length", [1, 5])
def test_texts_without_steps_get_none(tiny: SimpleNamespace, length: int) -> None:
    mm = tiny.make().core.measurement
    ids = mm.gen_tokenizer.encode(sentences(1, seed=2, length=length)[0])
    found = fixed_shape_entropies(mm, [ids, ids], [[], list(range(1, len(ids) + 1))])
    assert len(found[0]) == 0 and len(found[1]) == len(ids)
