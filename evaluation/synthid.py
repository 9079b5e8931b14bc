"""SynthID-Text (transformers' ``SynthIDTextWatermarkLogitsProcessor``) as an evaluation method.

Tournament sampling over hashed n-gram contexts, applied after top-k / top-p as transformers does
with a watermarking config. Its detection score is the mean g-value over the non-repeated
contexts and all layers (``score``); ``z`` and ``p`` treat the g-values as fair coins under H0.
The frontier thresholds ``score`` on human text.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace

import torch
from transformers import LogitsProcessor

from evaluation.detection import MethodDetection
from evaluation.methods import Method, kgw_result
from watermark.core.rules.logits import filter_logits
from watermark.core.text import encode_text
from watermark.detect.stats import z_score


class FilteredProcessor(LogitsProcessor):
    """Top-k and top-p, then another processor (a watermark that acts on the sampled set)."""

    applies_sampling_filters = True

    def __init__(self, inner: LogitsProcessor, top_k: int, top_p: float) -> None:
        self.inner, self.top_k, self.top_p = inner, top_k, top_p

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        return self.inner(input_ids, filter_logits(scores, self.top_k, self.top_p))


class SynthIDMethod(Method):
    """SynthID-Text through transformers, with the mean g-value score.

    Args:
        keys: One integer key per tournament layer.
        ngram_len: Context length + 1 of the hashed n-grams.
        tokenizer: Generator tokenizer.
        top_k, top_p: Sampling filters applied before the tournament.
        device: Where the generator runs (the processor's tensors live there).
    """

    name = "synthid"

    def __init__(
        self,
        keys: Sequence[int],
        ngram_len: int,
        tokenizer: object,
        top_k: int,
        top_p: float,
        device: str = "cpu",
    ) -> None:
        from transformers import SynthIDTextWatermarkingConfig

        self.tokenizer, self.top_k, self.top_p = tokenizer, top_k, top_p
        self.device = device
        self.config = SynthIDTextWatermarkingConfig(keys=list(keys), ngram_len=ngram_len)
        blob = ",".join(map(str, keys)).encode()
        self.key = f"synthid-n{ngram_len}-{hashlib.sha256(blob).hexdigest()[:12]}"

    def processor(self) -> LogitsProcessor:
        inner = self.config.construct_processor(vocab_size=0, device=self.device)
        return FilteredProcessor(inner, self.top_k, self.top_p)

    def detect(self, texts: Sequence[str]) -> list[MethodDetection]:
        proc = self.config.construct_processor(vocab_size=0, device="cpu")
        pad = [0] * (self.config.ngram_len - 1)  # generation starts from an all-zero context
        out = []
        for text in texts:
            ids = encode_text(self.tokenizer, text)
            x = torch.tensor([pad + ids], dtype=torch.long)
            g = proc.compute_g_values(x)[0].double()  # (T, layers)
            keep = proc.compute_context_repetition_mask(x)[0].bool()
            bits = g[keep].flatten()
            n = int(bits.numel())
            z = z_score(float(bits.sum()), 0.5 * n, 0.25 * n)  # fair coins under H0
            res = kgw_result(z, int(bits.sum()), n, len(ids))
            contexts = int(keep.sum())
            out.append(
                replace(
                    res,
                    score=float(bits.mean()) if n else 0.0,
                    num_scored=contexts,
                    awr=contexts / len(ids) if ids else 0.0,
                )
            )
        return out
