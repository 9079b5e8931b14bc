"""Context centring as ``research/surviving_evidence.py`` reads it, on a hand-made layer: no
centring is the layer's own outputs; centring moves each embedding by its context's offset from
the mapper's centre; a sentence without context is read as it is."""

from __future__ import annotations

from types import SimpleNamespace

import torch

from tests.helpers import experiment_script

script = experiment_script("surviving_evidence")
TABLE = {"a": [1.0, 0.0], "b": [0.0, 1.0], "c": [3.0, 3.0]}


def fake_layer() -> SimpleNamespace:
    """Embeddings from TABLE, a mapper that is the identity less its centre (1, 1)."""
    embed = lambda xs: torch.tensor([TABLE[x] for x in xs])  # noqa: E731
    mapper = SimpleNamespace(center=torch.tensor([1.0, 1.0]))
    semantic = SimpleNamespace(embed=embed, mapper=mapper, outputs=lambda u: u - mapper.center)
    return SimpleNamespace(semantic=semantic, outputs=lambda xs: semantic.outputs(embed(xs)))


def test_centring_moves_each_sentence_by_its_context() -> None:
    layer = fake_layer()
    plain = script.read_outputs(layer, ["a", "b"], [["c"], []], 0.0)
    assert torch.equal(plain, torch.tensor([[0.0, -1.0], [-1.0, 0.0]]))
    # "a" after "c": (1, 0) - 0.5 * ((3, 3) - (1, 1)) = (0, -1), less the centre; "b" alone
    centred = script.read_outputs(layer, ["a", "b"], [["c"], []], 0.5)
    assert torch.equal(centred, torch.tensor([[-1.0, -2.0], [-1.0, 0.0]]))
    # two sentences of context: their mean (2, 1.5) is 1, 0.5 from the centre
    both = script.read_outputs(layer, ["b"], [["a", "c"]], 1.0)
    assert torch.equal(both, torch.tensor([[-2.0, -0.5]]))
    assert script.before(["x", "y", "z"], 2, 1) == ["y"] and script.before(["x"], 0, 2) == []
