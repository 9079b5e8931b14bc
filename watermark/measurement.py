"""AWTI: the measurement model (MM) and its next-token entropies over the generated text only.

Definition (used by generation, detection and the reference): for generator step t (1-based),
the MM context is

* same tokenizer:  ``[start] + S_{0:t-1}`` (the generated ids themselves);
* cross tokenizer: ``[start] + encode_mm(decode_gen(S_{0:t-1}))`` (the decoded prefix re-encoded
  with the MM's tokenizer, see :mod:`watermark.text`),

and the gate entropy H_t is the entropy (nats) of the MM's next-token distribution after that
context. ``start`` is ``mm_start_token`` of the config, else the MM tokenizer's BOS, else its EOS:
the MM never sees the prompt, and at step 1 (empty prefix) it conditions on ``start`` alone.

Fast paths: detection runs the MM once over the longest context and reads every prefix's logits
from it (cross tokenizer: a prefix whose re-encoding is not a prefix of the full encoding, which
happens at some token boundaries, gets its own forward). Generation keeps a KV cache per batch
(same tokenizer) or per row (cross tokenizer, cropped back to the common prefix when re-encoding
changes earlier MM tokens).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from watermark.text import decode_ids, encode_text
from watermark.timer import StageTimer


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """Shannon entropy in nats of softmax(logits) along the last axis, computed in float32."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    return -(logp.exp() * logp).nan_to_num(0.0).sum(-1)


def resolve_start_id(tokenizer: object, token: str | None) -> int:
    """Token id the MM conditions on at the empty prefix (see module docstring)."""
    if token is not None:
        tid = tokenizer.convert_tokens_to_ids(token)
        if tid is None or tid == getattr(tokenizer, "unk_token_id", None):
            raise ValueError(
                f"mm_start_token {token!r} is not in the measurement model's vocabulary"
            )
        return int(tid)
    for tid in (tokenizer.bos_token_id, tokenizer.eos_token_id):
        if tid is not None:
            return int(tid)
    raise ValueError("the measurement model's tokenizer has no BOS or EOS; set mm_start_token")


class MeasurementModel:
    """The MM with the context convention above.

    Args:
        model: A causal LM (eval mode).
        tokenizer: Its tokenizer.
        gen_tokenizer: The generator's tokenizer (to decode prefixes in cross-tokenizer mode).
        same_tokenizer: Whether generator ids can be fed to the MM directly.
        start_id: Token id of the empty-prefix context.
    """

    def __init__(
        self,
        model: torch.nn.Module,
        tokenizer: object,
        gen_tokenizer: object,
        same_tokenizer: bool,
        start_id: int,
        timer: StageTimer | None = None,
    ) -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.gen_tokenizer = gen_tokenizer
        self.same_tokenizer = same_tokenizer
        self.start_id = int(start_id)
        self.timer = timer or StageTimer()
        self.extra_forwards = 0

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def context_ids(self, prefix_ids: Sequence[int]) -> list[int]:
        """MM context for a generated prefix S_{0:t-1} (generator ids)."""
        if self.same_tokenizer:
            return [self.start_id, *map(int, prefix_ids)]
        return [
            self.start_id,
            *encode_text(self.tokenizer, decode_ids(self.gen_tokenizer, prefix_ids)),
        ]

    @torch.inference_mode()
    def _logits(self, ids: Sequence[int]) -> torch.Tensor:
        """Float32 logits (L, V_mm) of one full forward over ``ids``."""
        with self.timer.stage("mm"):
            x = torch.tensor([list(ids)], dtype=torch.long, device=self.device)
            return self.model(input_ids=x, use_cache=False).logits[0].float().cpu()

    def text_logits(self, gen_ids: Sequence[int], steps: Sequence[int]) -> torch.Tensor:
        """MM next-token logits for the given steps of one generated text (detection path).

        Args:
            gen_ids: Generator token ids s_1..s_T of the text.
            steps: 1-based steps t (each <= T); step t uses the context of S_{0:t-1}.

        Returns:
            Float32 tensor (len(steps), V_mm).
        """
        steps = [int(t) for t in steps]
        if not steps:
            return torch.zeros(0, 0)
        last = max(steps)
        if self.same_tokenizer:
            logits = self._logits(self.context_ids(gen_ids[: last - 1]))
            return logits[torch.tensor(steps) - 1]
        full = self.context_ids(gen_ids[: last - 1])
        logits = self._logits(full)
        rows = []
        for t in steps:
            ctx = full if t == last else self.context_ids(gen_ids[: t - 1])
            if full[: len(ctx)] == ctx:
                rows.append(logits[len(ctx) - 1])
            else:  # re-encoding changed earlier MM tokens at this boundary
                self.extra_forwards += 1
                rows.append(self._logits(ctx)[-1])
        return torch.stack(rows)

    def start(self, batch_size: int) -> MMGenerationState:
        """A fresh incremental state for one ``generate`` call."""
        if self.same_tokenizer:
            return SameTokenizerState(self, batch_size)
        return CrossTokenizerState(self, batch_size)


class MMGenerationState:
    """Incremental MM state during generation (one per ``generate`` call)."""

    def __init__(self, mm: MeasurementModel, batch_size: int) -> None:
        self.mm = mm
        self.batch_size = batch_size

    def entropies(self, gen: torch.Tensor, rows: Sequence[int]) -> torch.Tensor:
        """Gate entropies H_t for the next step, given the generated ids so far.

        Args:
            gen: Long tensor (B, t-1): generated ids of every row (no prompt).
            rows: Rows whose entropy is needed.

        Returns:
            Float32 tensor (B,); NaN for rows that were not computed.
        """
        raise NotImplementedError


class SameTokenizerState(MMGenerationState):
    """One batched KV cache; rows all have the same length (the generated part is never padded)."""

    def __init__(self, mm: MeasurementModel, batch_size: int) -> None:
        super().__init__(mm, batch_size)
        self.cache = None
        self.fed = 0

    @torch.inference_mode()
    def entropies(self, gen: torch.Tensor, rows: Sequence[int]) -> torch.Tensor:
        out = torch.full((gen.shape[0],), float("nan"))
        if len(rows) == 0:
            return out
        with self.mm.timer.stage("mm"):
            starts = torch.full((gen.shape[0], 1), self.mm.start_id, dtype=torch.long)
            ctx = torch.cat([starts, gen.cpu().long()], dim=1)  # (B, t)
            new = ctx[:, self.fed :].to(self.mm.device)
            result = self.mm.model(input_ids=new, past_key_values=self.cache, use_cache=True)
            self.cache = result.past_key_values
            self.fed = ctx.shape[1]
            return entropy_from_logits(result.logits[:, -1]).cpu()


class CrossTokenizerState(MMGenerationState):
    """One KV cache per row over the MM re-encoding of that row's decoded prefix."""

    def __init__(self, mm: MeasurementModel, batch_size: int) -> None:
        super().__init__(mm, batch_size)
        self.ids: list[list[int]] = [[] for _ in range(batch_size)]
        self.caches: list[object] = [None] * batch_size
        self.last: list[float] = [float("nan")] * batch_size

    @torch.inference_mode()
    def _row(self, row: int, ctx: list[int]) -> float:
        cached = self.ids[row]
        common = 0
        for a, b in zip(cached, ctx):
            if a != b:
                break
            common += 1
        if common == len(ctx) == len(cached):
            return self.last[row]
        keep = min(common, len(ctx) - 1)  # feed at least one token to get the next-token logits
        if self.caches[row] is None or keep == 0:
            self.caches[row] = None
            keep = 0
        elif len(cached) > keep:
            self.caches[row].crop(-(len(cached) - keep))
        x = torch.tensor([ctx[keep:]], dtype=torch.long, device=self.mm.device)
        result = self.mm.model(input_ids=x, past_key_values=self.caches[row], use_cache=True)
        self.caches[row] = result.past_key_values
        self.ids[row] = list(ctx)
        self.last[row] = float(entropy_from_logits(result.logits[0, -1]))
        return self.last[row]

    def entropies(self, gen: torch.Tensor, rows: Sequence[int]) -> torch.Tensor:
        out = torch.full((gen.shape[0],), float("nan"))
        with self.mm.timer.stage("mm"):
            for row in rows:
                out[row] = self._row(row, self.mm.context_ids(gen[row].tolist()))
        return out
