"""The documented Python snippets (README.md, docs/guide.md, docs/research/design.md) run and
give the reference's tokens.

Each document's first ``python`` block that holds a given call is executed as written; only the
downloads are swapped for tiny stand-ins (``load_lm`` gives the tiny generator,
``Watermark.load()`` the shipped default config with the tiny generator as MM, the tiny embedder
and mapper). The snippet's ``wm.generate`` (fused MM) and its own ``model.generate(**inputs,
**wm.generation_kwargs(...))`` must give the tokens of the per-token reference
(``tests/reference.py``) for the same seed.
"""

from __future__ import annotations

import re
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


def python_block(path: Path, holding: str) -> str:
    """The first fenced ``python`` block of a Markdown file that holds ``holding``."""
    blocks = re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)
    return next(block for block in blocks if holding in block)


def tiny_default(tiny: SimpleNamespace) -> WatermarkConfig:
    """The shipped default config with the tiny models' names (the MM is the generator)."""
    fields = flat_fields(WatermarkConfig.default())
    fields["rule"] = fields.pop("scaling")  # today's keyword; flat files of 0.1-0.4 say scaling
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


SNIPPETS = [  # (document, the call its block holds, new tokens)
    ("README.md", "wm.generate(", 200),
    ("docs/research/design.md", "model.generate(**inputs, **wm.generation_kwargs(", 200),
    ("docs/guide.md", "model.generate(**inputs, **wm.generation_kwargs(", 60),
]


@pytest.mark.parametrize("doc,holding,tokens", SNIPPETS)
def test_documented_snippet_gives_reference_tokens(
    tiny: SimpleNamespace, doc: str, holding: str, tokens: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    code = python_block(ROOT / doc, holding)
    load = Watermark.load

    def tiny_load(config: object = None, **kwargs: object) -> Watermark:
        assert config is None  # the snippet loads the shipped default
        return load(tiny_default(tiny), embedder=tiny.emb, mapper=tiny.mapper, **kwargs)

    monkeypatch.setattr(loaders, "load_lm", lambda name, **kwargs: (tiny.gen, tiny.gtok))
    monkeypatch.setattr(Watermark, "load", staticmethod(tiny_load))
    ns: dict = {}
    threads = torch.get_num_threads()
    try:
        exec(compile(code, doc, "exec"), ns)  # noqa: S102 - our own documentation
    finally:
        torch.set_num_threads(threads)  # the guide's snippet sets one thread

    wm = ns["wm"]
    assert wm.generator is tiny.gen and wm.config.scheme.temperature == 0.8
    prompt = ns["prompt"] if "prompt" in ns else ns["outs"][0].prompt
    torch.manual_seed(0)
    want, steps = reference.generate(wm, tiny.gen, prompt, tokens, greedy=False)
    assert sum(s.gated for s in steps) > 5  # the watermark acted
    assert len(want) > 20
    if "outs" in ns:
        assert ns["outs"][0].token_ids == want
    if "ids" in ns:
        stop = set(eos_ids(tiny.gen, tiny.gtok))
        own = ns["ids"][0, ns["inputs"]["input_ids"].shape[1] :].tolist()
        assert own[: next((i for i, t in enumerate(own) if t in stop), len(own))] == want
    assert "outs" in ns or "ids" in ns
