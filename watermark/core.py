"""The one scoring core shared by the logits processor and the detector.

For generated step t (1-based; the token s_t is drawn after the prefix S_{0:t-1}):

* gate: always open for t = 1..M (exactly M steps, M = ``opening_steps``); for t > M open iff the
  measurement model's entropy H(P_MM(. | S_{0:t-1})) >= alpha (see :mod:`watermark.measurement`);
* embedding input: the secret opening sentence for t <= M, else the decoded prefix
  ``decode_ids(S_{0:t-1})`` (see :mod:`watermark.text`);
* v_hat: mapper signs of the embedding, expanded over the full LM-head width V by the keyed token
  map (see :mod:`watermark.semantic`).

The logits processor calls :meth:`WatermarkCore.generation_step` once per decoding step for the
whole batch; the detector calls :meth:`WatermarkCore.text_gate` and
:meth:`WatermarkCore.green_dims_for` per text. Both go through :meth:`gate` and
:meth:`embedding_input`, so they cannot disagree about which steps are watermarked or which text
is embedded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from watermark.config import WatermarkConfig
from watermark.measurement import MeasurementModel, MMGenerationState, entropy_from_logits
from watermark.scaling import apply_awts
from watermark.semantic import SemanticScorer
from watermark.text import decode_ids


@dataclass
class StepDecision:
    """What the core decided for one generation step of a batch.

    Attributes:
        step: The 1-based step t.
        gated: Bool (B,): rows watermarked at this step.
        entropy: Float (B,): MM entropy (NaN where not computed, e.g. t <= M).
        green_dims: Bool (B, D): mapper signs for gated rows (all False elsewhere).
    """

    step: int
    gated: torch.Tensor
    entropy: torch.Tensor
    green_dims: torch.Tensor


@dataclass
class TextGate:
    """Gate of every step of one text (detection path).

    Attributes:
        entropy: Float (T,): MM entropy per step (NaN where not needed).
        gated: Bool (T,): steps in the scored set W.
        mm_logits: Float (T, V_mm) MM logits of every step when requested, else None.
    """

    entropy: torch.Tensor
    gated: torch.Tensor
    mm_logits: torch.Tensor | None


class WatermarkCore:
    """Gate, embedding input and v_hat for generated prefixes.

    Args:
        config: The watermark config (alpha, delta, M, scaling, ...).
        tokenizer: Generator tokenizer.
        measurement: The measurement model.
        semantic: SE + mapper + token map.
    """

    def __init__(
        self,
        config: WatermarkConfig,
        tokenizer: object,
        measurement: MeasurementModel,
        semantic: SemanticScorer,
    ) -> None:
        self.config = config
        self.tokenizer = tokenizer
        self.measurement = measurement
        self.semantic = semantic
        self._opening: torch.Tensor | None = None

    @property
    def vocab_size(self) -> int:
        return self.semantic.vocab_size

    @property
    def opening_steps(self) -> int:
        return int(self.config.opening_steps)

    def gate(self, steps: torch.Tensor, entropies: torch.Tensor) -> torch.Tensor:
        """Bool (N,): step t is watermarked iff t <= M or H_t >= alpha (NaN entropy -> closed)."""
        return (steps <= self.opening_steps) | (entropies >= self.config.alpha)

    def embedding_input(self, step: int, prefix_ids: Sequence[int]) -> str:
        """The text the SE embeds at step t: the opening sentence for t <= M, else S_{0:t-1}."""
        if step <= self.opening_steps:
            return self.config.opening_sentence
        return decode_ids(self.tokenizer, prefix_ids)

    def opening_dims(self) -> torch.Tensor:
        """Mapper signs of the opening sentence, bool (D,), computed once."""
        if self._opening is None:
            self._opening = self.semantic.green_dims([self.config.opening_sentence])[0]
        return self._opening

    def green_dims_for(
        self, steps: Sequence[int], prefixes: Sequence[Sequence[int]], progress: bool = False
    ) -> torch.Tensor:
        """Mapper signs for many (step, prefix) pairs, embedding the prefixes in batches.

        Args:
            steps: 1-based steps t.
            prefixes: The generated prefixes S_{0:t-1} (generator ids), one per step.
            progress: Show an embedding progress bar on stderr.

        Returns:
            Bool tensor (N, D).
        """
        out = torch.zeros(len(steps), self.semantic.num_dims, dtype=torch.bool)
        late = [i for i, t in enumerate(steps) if t > self.opening_steps]
        early = [i for i, t in enumerate(steps) if t <= self.opening_steps]
        if early:
            out[early] = self.opening_dims()
        if late:
            texts = [self.embedding_input(steps[i], prefixes[i]) for i in late]
            out[late] = self.semantic.green_dims(texts, progress=progress)
        return out

    def generation_step(
        self, gen: torch.Tensor, active: torch.Tensor, state: MMGenerationState
    ) -> StepDecision:
        """Decides one decoding step for a batch.

        Args:
            gen: Long tensor (B, t-1): the ids generated so far (prompt excluded).
            active: Bool (B,): rows still generating (finished rows are never gated).
            state: The MM's incremental state for this generation.

        Returns:
            The step decision for step t = gen.shape[1] + 1.
        """
        batch, step = gen.shape[0], gen.shape[1] + 1
        entropy = torch.full((batch,), float("nan"))
        if step > self.opening_steps:
            rows = [int(r) for r in torch.nonzero(active).flatten()]
            entropy = state.entropies(gen, rows)
        steps = torch.full((batch,), step, dtype=torch.long)
        gated = self.gate(steps, entropy) & active.cpu()
        rows = [int(r) for r in torch.nonzero(gated).flatten()]
        dims = torch.zeros(batch, self.semantic.num_dims, dtype=torch.bool)
        if rows:
            gen_cpu = gen.cpu()
            dims[rows] = self.green_dims_for(
                [step] * len(rows), [gen_cpu[r].tolist() for r in rows]
            )
        return StepDecision(step=step, gated=gated, entropy=entropy, green_dims=dims)

    def scale(self, scores: torch.Tensor, decision: StepDecision) -> torch.Tensor:
        """AWTS on a batch of logits (B, V) for a step decision."""
        green = self.semantic.expand(decision.green_dims).to(scores.device)
        return apply_awts(
            scores,
            green,
            decision.gated,
            delta=self.config.delta,
            mode=self.config.scaling,
            top_k=self.config.top_k,
        )

    def text_gate(self, ids: Sequence[int], all_logits: bool = False) -> TextGate:
        """Gate of every step of one text of T generator tokens (one MM forward).

        Args:
            ids: Generator token ids s_1..s_T.
            all_logits: Also return MM logits for every step (for the ``mm`` null model).
        """
        T = len(ids)
        entropy = torch.full((T,), float("nan"))
        steps = list(range(1, T + 1)) if all_logits else list(range(self.opening_steps + 1, T + 1))
        logits = None
        if steps:
            logits = self.measurement.text_logits(ids, steps)
            entropy[torch.tensor(steps) - 1] = entropy_from_logits(logits)
        gated = self.gate(torch.arange(1, T + 1), entropy)
        return TextGate(entropy=entropy, gated=gated, mm_logits=logits if all_logits else None)
