"""The documented Python snippets (README.md, docs/research/design.md) run and give the reference's
tokens.

Each document's first ``python`` block is executed as written; only the downloads are swapped for
tiny stand-ins (``load_lm`` gives the tiny generator, ``Watermark.load()`` the shipped default
config with the tiny generator as MM, the tiny embedder and mapper). The snippet's
``wm.generate`` (fused MM) and its own ``model.generate(**inputs, **wm.generation_kwargs())``
must give the tokens of the per-token reference (``tests/reference.py``) for the same seed.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from tests import reference
from tests.helpers import flat_fields
from watermark.api import Watermark
from watermark.config.watermark_config import WatermarkConfig
from watermark.generate.generation import eos_ids
from watermark.models import loaders

ROOT = Path(__file__).resolve().parents[2]


def python_block(path: Path) -> str:
    """The first fenced ``python`` block of a Markdown file."""
    text = path.read_text(encoding="utf-8")
    start = text.index("```python\n") + len("```python\n")
    return text[start : text.index("```", start)]


def tiny_default(tiny: SimpleNamespace) -> WatermarkConfig:
    """The shipped default config with the tiny models' names (the MM is the generator)."""
    fields = flat_fields(WatermarkConfig.default())
    # the tiny mapper and embedder stand in for the shipped ones, so they are not pinned
    fields.update(
        mapper="unused",
        generator="tiny-gen",
        measurement_model="tiny-gen",
        key="docs-test-key",
        opening_steps=2,
        temperature=0.8,
        mapper_digest=None,
        embedder_digest=None,
    )
    return WatermarkConfig.of(**fields)


@pytest.mark.parametrize("doc", ["README.md", "docs/research/design.md"])
def test_documented_snippet_gives_reference_tokens(
    tiny: SimpleNamespace, doc: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    code = python_block(ROOT / doc)
    assert "model.generate(**inputs, **wm.generation_kwargs()" in code
    load = Watermark.load

    def tiny_load(config: object = None, **kwargs: object) -> Watermark:
        assert config is None  # the snippet loads the shipped default
        return load(tiny_default(tiny), embedder=tiny.emb, mapper=tiny.mapper, **kwargs)

    monkeypatch.setattr(loaders, "load_lm", lambda name, **kwargs: (tiny.gen, tiny.gtok))
    monkeypatch.setattr(Watermark, "load", staticmethod(tiny_load))
    ns: dict = {}
    exec(compile(code, doc, "exec"), ns)  # noqa: S102 - our own documentation

    wm, prompt, outs, ids = ns["wm"], ns["prompt"], ns["outs"], ns["ids"]
    assert wm.generator is tiny.gen and wm.config.scheme.temperature == 0.8
    stop = set(eos_ids(tiny.gen, tiny.gtok))
    own = ids[0, ns["inputs"]["input_ids"].shape[1] :].tolist()
    own = own[: next((i for i, t in enumerate(own) if t in stop), len(own))]
    torch.manual_seed(0)
    want, steps = reference.generate(wm, tiny.gen, prompt, 200, greedy=False)
    assert sum(s.gated for s in steps) > 5  # the watermark acted
    assert len(want) > 20
    assert outs[0].token_ids == want
    assert own == want
