"""The watermarking methods compared by the evaluation, behind one small interface.

Every method gives a logits processor for generation (``None`` for unwatermarked text), detects
texts (one :class:`~evaluation.detection.MethodDetection` per text) and, for the spoofing
experiment, the true green list of a context.

* ``ours``: the adaptive watermark (:class:`watermark.api.Watermark`).
* ``kgw1``: transformers' own ``WatermarkLogitsProcessor`` / ``WatermarkDetector`` (``lefthash``,
  context width 1), with repeated bigrams counted once.
* ``kgw0`` (one fixed keyed green list, "Unigram") and ``kgw2`` (green list seeded by the previous
  two tokens) are written here: transformers' ``lefthash`` seeds with the last token only, whatever
  ``context_width`` is (tested), so it cannot express KGW-2. Both count each distinct
  (context, token) once, like ``kgw1``.
* ``synthid``: SynthID-Text through transformers, in :mod:`evaluation.synthid`.

KGW statistics: z = (G - gamma T) / sqrt(T gamma (1 - gamma)) over the T scored units, one-sided
normal p-value (:func:`watermark.detect.stats.z_score`, :func:`watermark.detect.stats.normal_sf`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import torch
from transformers import LogitsProcessor

from evaluation.detection import MethodDetection
from watermark.core.text import encode_text
from watermark.detect.stats import normal_sf, z_score


class KGWGreenLists:
    """Keyed green lists seeded by the previous ``context`` tokens (0: one fixed list).

    Args:
        vocab_size: LM-head width V.
        gamma: Green fraction; the list holds ``int(gamma * V)`` ids.
        key: Integer key.
        context: Number of previous tokens that seed the list (0 or more).
    """

    def __init__(self, vocab_size: int, gamma: float, key: int, context: int) -> None:
        self.vocab_size, self.gamma, self.key, self.context = vocab_size, gamma, key, context
        self.size = int(gamma * vocab_size)
        self._cache: dict[tuple[int, ...], torch.Tensor] = {}

    def mask(self, context_ids: Sequence[int]) -> torch.Tensor:
        """Bool (V,) green mask for the last ``context`` ids of ``context_ids``."""
        ctx = tuple(int(i) for i in context_ids[len(context_ids) - self.context :])
        if self.context == 0:
            ctx = ()
        if ctx not in self._cache:
            if len(self._cache) > 50_000:
                self._cache.clear()
            blob = f"{self.key}|{self.context}|{','.join(map(str, ctx))}".encode()
            seed = int.from_bytes(hashlib.sha256(blob).digest()[:8], "little")
            gen = torch.Generator().manual_seed(seed)
            perm = torch.randperm(self.vocab_size, generator=gen)
            mask = torch.zeros(self.vocab_size, dtype=torch.bool)
            mask[perm[: self.size]] = True
            self._cache[ctx] = mask
        return self._cache[ctx]


class KGWProcessor(LogitsProcessor):
    """Adds ``delta`` to the green logits of each row (prompt tokens seed the first lists)."""

    def __init__(self, lists: KGWGreenLists, delta: float) -> None:
        self.lists, self.delta = lists, delta

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        out = scores.clone()
        for row in range(scores.shape[0]):
            mask = self.lists.mask(input_ids[row].tolist()).to(scores.device)
            out[row, : mask.shape[0]] += self.delta * mask.to(scores.dtype)
        return out


class Method:
    """Base class: name, cache keys, processor, detection, green lists.

    ``key`` names what generation depends on; ``detect_key`` what detection depends on (the same
    unless a method's detector ignores some of its generation settings).
    """

    name = "unwatermarked"
    key = "unwatermarked"

    @property
    def detect_key(self) -> str:
        return self.key

    def processor(self) -> LogitsProcessor | None:
        return None

    def generate(self, model, tokenizer, prompts: Sequence[str], **settings) -> list:
        """Continuations of ``prompts`` (:func:`watermark.generate.generation.generate` with the
        method's processor and ``settings``)."""
        from watermark.generate.generation import generate

        return generate(model, tokenizer, prompts, self.processor(), **settings)

    def detect(self, texts: Sequence[str]) -> list[MethodDetection]:
        raise NotImplementedError(f"{self.name} has no detector")

    def green_mask(self, context_ids: Sequence[int]) -> torch.Tensor:
        raise NotImplementedError(f"{self.name} has no green list")


class KGWMethod(Method):
    """KGW-0 / KGW-2 with :class:`KGWGreenLists`; detection counts distinct units once."""

    def __init__(
        self,
        name: str,
        tokenizer: object,
        vocab_size: int,
        gamma: float,
        delta: float,
        key: int,
        context: int,
    ) -> None:
        self.name, self.tokenizer, self.delta = name, tokenizer, delta
        self.lists = KGWGreenLists(vocab_size, gamma, key, context)
        self.key = f"{name}-g{gamma}-d{delta}-k{key}"

    def processor(self) -> LogitsProcessor:
        return KGWProcessor(self.lists, self.delta)

    def green_mask(self, context_ids: Sequence[int]) -> torch.Tensor:
        return self.lists.mask(context_ids)

    def detect(self, texts: Sequence[str]) -> list[MethodDetection]:
        c = self.lists.context
        out = []
        for text in texts:
            ids = encode_text(self.tokenizer, text)
            units = {tuple(ids[i - c : i + 1]) for i in range(c, len(ids))}
            green = sum(bool(self.lists.mask(u[:-1])[u[-1]]) for u in units)
            gamma, total = self.lists.gamma, len(units)
            z = z_score(green, gamma * total, total * gamma * (1 - gamma))
            out.append(kgw_result(z, green, len(units), len(ids)))
        return out


class TransformersKGW(Method):
    """KGW-1 through transformers' ``WatermarkLogitsProcessor`` and ``WatermarkDetector``
    (``device``: where the generator runs; detection stays on the CPU)."""

    name = "kgw1"

    def __init__(
        self,
        model_config: object,
        tokenizer: object,
        gamma: float,
        delta: float,
        key: int,
        device: str = "cpu",
    ) -> None:
        from transformers import WatermarkDetector, WatermarkingConfig

        self.tokenizer, self.gamma, self.device = tokenizer, gamma, device  # device: generation
        self.wm_config = WatermarkingConfig(
            greenlist_ratio=gamma, bias=delta, hashing_key=key, context_width=1
        )
        self.detector = WatermarkDetector(
            model_config, "cpu", self.wm_config, ignore_repeated_ngrams=True
        )
        self.key = f"kgw1-g{gamma}-d{delta}-k{key}"

    def processor(self) -> LogitsProcessor:
        from transformers.generation.logits_process import WatermarkLogitsProcessor

        return WatermarkLogitsProcessor(
            vocab_size=self.detector.processor.vocab_size,
            device=self.device,
            **self.wm_config.to_dict(),
        )

    def green_mask(self, context_ids: Sequence[int]) -> torch.Tensor:
        proc = self.detector.processor
        ids = proc._get_greenlist_ids(torch.tensor(list(context_ids)[-1:]))
        mask = torch.zeros(proc.vocab_size, dtype=torch.bool)
        mask[ids] = True
        return mask

    def detect(self, texts: Sequence[str]) -> list[MethodDetection]:
        out = []
        for text in texts:
            ids = encode_text(self.tokenizer, text)
            if len(ids) < 2:
                out.append(kgw_result(0.0, 0, 0, len(ids)))
                continue
            res = self.detector(torch.tensor([ids]), return_dict=True)
            total, green = int(res.num_tokens_scored[0]), int(res.num_green_tokens[0])
            out.append(kgw_result(float(res.z_score[0]), green, total, len(ids)))
        return out


def kgw_result(z: float, green: int, total: int, num_tokens: int) -> MethodDetection:
    """A detection from a z-score and ``green`` hits among ``total`` scored units (every token
    counts as watermarkable: awr 1)."""
    return MethodDetection(
        z_score=z,
        p_value=normal_sf(z) if total else 1.0,
        num_scored=total,
        num_tokens=num_tokens,
        green_fraction=green / total if total else 0.0,
        awr=1.0 if num_tokens else 0.0,
    )


class OursMethod(Method):
    """The adaptive watermark; ``key`` hashes its config so variants cache apart, ``detect_key``
    the fields detection reads (variants that differ only in their rule share detections of
    human text)."""

    name = "ours"

    def __init__(self, wm: object, model: torch.nn.Module, key: str, detect_key: str) -> None:
        self.wm, self.model, self.key, self._detect_key = wm, model, key, detect_key

    @property
    def detect_key(self) -> str:
        return self._detect_key

    def generate(self, model, tokenizer, prompts: Sequence[str], **settings) -> list:
        """``Watermark.generate`` (the sentence layer's candidates where it is on); the
        sampling filters are the config's."""
        for name in ("top_k", "top_p", "temperature"):
            settings.pop(name, None)
        return self.wm.generate(model, prompts, record=False, **settings)

    def processor(self) -> LogitsProcessor:
        from watermark.generate.generation import eos_ids

        return self.wm.logits_processor(eos_token_ids=eos_ids(self.model, self.wm.tokenizer))

    def green_mask(self, context_ids: Sequence[int]) -> torch.Tensor:
        """The first green list of the fixed (opening-sentence) embedding, whatever the context."""
        core = self.wm.core
        return core.semantic.from_signs(core.opening_signs()[None]).mask()[0, 0]

    def detect(self, texts: Sequence[str]) -> list[MethodDetection]:
        return [MethodDetection.from_result(r) for r in self.wm.detect(list(texts))]
