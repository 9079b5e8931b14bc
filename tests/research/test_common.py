"""What the research modules share (:mod:`research.common`): the choice is the layer's own
(``SentenceLayer.rank`` keeps what research chooses), keys are the section's, pools are read
with their predecessor, and context centring as the figure of merit reads it."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from mapper.sentence_data import complete_sentences
from research import common
from tests.research.tiny_data import write_pools
from watermark.sentences.spans import sentence_spans

TABLE = {"a": [1.0, 0.0], "b": [0.0, 1.0], "c": [3.0, 3.0]}
CANDIDATES = [
    "The storm hit the north road. The river rose",
    "The storm hit the north road. The bank closed early.",
    "The storm hit the north road. A new school opened.",
    "The storm hit the north road. People said the water was high.",
]


def fake_layer() -> SimpleNamespace:
    """Embeddings from TABLE, a mapper that is the identity less its centre (1, 1)."""
    embed = lambda xs: torch.tensor([TABLE[x] for x in xs])  # noqa: E731
    mapper = SimpleNamespace(center=torch.tensor([1.0, 1.0]))
    semantic = SimpleNamespace(embed=embed, mapper=mapper, outputs=lambda u: u - mapper.center)
    return SimpleNamespace(semantic=semantic, outputs=lambda xs: semantic.outputs(embed(xs)))


def test_centring_moves_each_sentence_by_its_context() -> None:
    layer = fake_layer()
    plain = common.read_outputs(layer, ["a", "b"], [["c"], []], 0.0)
    assert torch.equal(plain, torch.tensor([[0.0, -1.0], [-1.0, 0.0]]))
    # "a" after "c": (1, 0) - 0.5 * ((3, 3) - (1, 1)) = (0, -1), less the centre; "b" alone
    centred = common.read_outputs(layer, ["a", "b"], [["c"], []], 0.5)
    assert torch.equal(centred, torch.tensor([[-1.0, -2.0], [-1.0, 0.0]]))
    # two sentences of context: their mean (2, 1.5) is 1, 0.5 from the centre
    both = common.read_outputs(layer, ["b"], [["a", "c"]], 1.0)
    assert torch.equal(both, torch.tensor([[-2.0, -0.5]]))
    assert common.before(["x", "y", "z"], 2, 1) == ["y"] and common.before(["x"], 0, 2) == []


@pytest.mark.parametrize(
    "context_bits, keying, choice",
    [(2, "previous", "score"), (2, "previous", "survival"), (1, "own", "score")],
)
def test_what_research_chooses_is_what_the_layer_ranks_first(
    tiny: SimpleNamespace, context_bits: int, keying: str, choice: str
) -> None:
    """On the same sentences, the candidate research keeps (the layer's key, the pool's outputs
    read after the sentence before them) is the one ``SentenceLayer.rank`` puts first, and the
    keys of the section are the layer's."""
    wm = tiny.make(
        sentence_bits=8,
        sentence_context_bits=context_bits,
        sentence_keying=keying,
        settings={"sentences.choice": choice},
    )
    layer = wm.sentences
    order = layer.rank([CANDIDATES])[0]
    spans = [sentence_spans(t) for t in CANDIDATES]
    v = layer.outputs([t[s[-1][0] : s[-1][1]] for t, s in zip(CANDIDATES, spans)])
    previous = layer.outputs([CANDIDATES[0][: spans[0][0][1]]])[0]  # the one sentence before
    assert common.choose(layer.key, v, previous, choice) == order[0]
    assert layer.choose(v, previous) == order
    key = common.section_keys(wm.config.sentences, 1, layer.semantic.num_dims)[0]
    mine = type(layer)(layer.semantic, wm.config.sentences, ["measure-0"]).key
    assert torch.equal(key.dims, mine.dims) and torch.equal(key.targets, mine.targets)


def test_pools_are_read_after_their_prefix(tiny: SimpleNamespace, tmp_path) -> None:
    layer = tiny.make(sentence_bits=8, sentence_context_bits=1).sentences
    write_pools(tmp_path)
    pools = common.read_pools(layer, "heldout", candidates=3, data=tmp_path)
    assert pools and all(len(p.texts) == 3 and p.v.shape == (3, 24) for p in pools)
    first = pools[0]
    last = complete_sentences(first.prefix)[-1]
    assert torch.allclose(first.previous, layer.outputs([last])[0])
    assert torch.allclose(first.v, layer.outputs(first.texts))


def test_the_flip_model_keeps_what_the_rewrite_keeps() -> None:
    v = torch.randn(200, 16, generator=torch.Generator().manual_seed(0))
    assert common.flip_model(v, v).tolist() == [1.0] * 4
    assert common.flip_model(v, -v).tolist() == [0.0] * 4
    rng = torch.Generator().manual_seed(1)
    assert torch.equal(common.rewritten(v, torch.ones(4), rng), v)


def test_shared_targets_keep_group_0_and_share_the_rest() -> None:
    from watermark.sentences.key import SentenceKey

    key = SentenceKey.of("k", 256, 64, context_bits=2, keying="own", test="margin")
    assert common.shared_targets(key, 1.0, 0) is key  # independent groups: the product's key
    same = common.shared_targets(key, 0.0, 0)
    assert torch.equal(same.targets, key.targets[:1].expand_as(key.targets))
    half = common.shared_targets(key, 0.5, 0)
    assert torch.equal(half.targets[0], key.targets[0])
    agree = (half.targets[1:] == key.targets[0]).float().mean()
    assert 0.6 < agree < 0.9  # 1 - 0.5 / 2 = 0.75 expected
    assert torch.equal(half.dims, key.dims) and half.own and half.margin
