"""The one scoring core shared by the logits processor and the detector.

For generated step t (1-based; the token s_t is drawn after the prefix S_{0:t-1}):

* gate: always open for t = 1..M (exactly M steps, M = ``opening_steps``); for t > M open iff the
  measurement model's entropy H(P_MM(. | S_{0:t-1})) >= alpha (see
  :mod:`watermark.core.measurement`); with the context guard h > 0, closed at any step whose last h
  generated tokens (the end of S_{0:t-1}) already occurred as a contiguous run earlier in S_{0:t-1};
* embedding input: the secret opening sentence for t <= M, else the decoded prefix
  ``decode_ids(S_{0:t-1})`` cut to its first P tokens, or with a local context W > 0 its last W
  tokens (:meth:`WatermarkCore.prefix_span`; see :mod:`watermark.core.text`);
* v_hat: mapper signs of the embedding, expanded over the full LM-head width V by the keyed token
  maps, one per layer (see :mod:`watermark.core.semantic`);
* sampling logits: the loop penalty, the scheme's rule and filters (:mod:`watermark.core.rules`).

The processor calls :meth:`WatermarkCore.generation_step` once per decoding step for the whole
batch; the detector :meth:`WatermarkCore.text_gates` and :meth:`WatermarkCore.green_lists`. Both
go through :meth:`gate` and :meth:`embedding_inputs`, so they cannot disagree.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from watermark.config.watermark_config import WatermarkConfig
from watermark.core.decisions import StepDecision, TextGate
from watermark.core.fixed_shapes import fixed_shape_entropies
from watermark.core.green_lists import GreenLists, TokenReads
from watermark.core.identity import fingerprint
from watermark.core.measurement import MeasurementModel
from watermark.core.mm_states import MMGenerationState
from watermark.core.repeats import earlier_runs, followers, loop_penalties, repeated_steps
from watermark.core.rules.logits import apply_rule
from watermark.core.semantic import SemanticScorer
from watermark.core.text import decode_many


class WatermarkCore:
    """Gate, embedding input and v_hat for generated prefixes.

    Args:
        config: The watermark config (its scheme: the gate's alpha and M, the rule, repeats).
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
        self.force_fixed_shapes: bool | None = None  # None: on an accelerator (fixed_shapes)

    @property
    def vocab_size(self) -> int:  # V, the LM-head width the token maps cover
        return self.semantic.vocab_size

    def fingerprint(
        self, sentence_mapper: str | None = None, sentence_embedder: str | None = None
    ) -> str:
        """``"wm-..."``: what generation and detection share, the mapper and the embedder
        included, and the digests of the sentence layer's own mapper and own SE where it has
        them (:func:`watermark.core.identity.fingerprint`); never the key."""
        found = self.semantic.digests
        own = (sentence_mapper, sentence_embedder)
        return fingerprint(self.config, self.vocab_size, found["mapper"], found["embedder"], *own)

    @property
    def opening_steps(self) -> int:  # M
        return int(self.config.scheme.opening_steps)

    @property
    def device(self) -> torch.device:  # where the measurement model runs
        return self.measurement.device

    @property
    def fixed_shapes(self) -> bool:
        """Whether generation and batched detection embed in fixed shapes (a window's signs
        the same bits in both, :mod:`watermark.core.fixed_shapes`): on an accelerator, unless
        ``force_fixed_shapes`` says otherwise; on a CPU nothing changes."""
        if self.force_fixed_shapes is not None:
            return self.force_fixed_shapes
        return self.semantic.device.type != "cpu"

    def prefetch(self, steps: Sequence[int], texts: Sequence[Sequence[int]]) -> None:
        """Embeds the windows of ``steps`` of ``texts`` (as :meth:`green_lists` takes them) in
        one fixed-shape call, their signs kept until the next prefetch: several groups' processors
        then read them with no embedder call each (in fixed shapes, the same bits)."""
        late = [i for i, t in enumerate(steps) if t > self.opening_steps]
        inputs = self.embedding_inputs([steps[i] for i in late], [texts[i] for i in late])
        self.semantic.keep(sorted(set(inputs)))

    @property
    def num_keys(self) -> int:
        """Keys tried: the config's ``key``, then its ``old_keys``."""
        return self.semantic.num_keys

    def under_keys(self, lists: GreenLists) -> list[GreenLists]:
        """The green lists of the same signs under each key."""
        return [self.semantic.from_signs(lists.signs, key) for key in range(self.num_keys)]

    def reads(
        self, lists: GreenLists, tokens: torch.Tensor, previous: torch.Tensor
    ) -> list[TokenReads]:
        """Per key, the reads of the drawn ``tokens`` (N,) after ``previous`` (N,) in ``lists``
        of N steps (the previous token matters under the bigram repeat policy only)."""
        before = previous if self.config.repeat_policy.bigram else None
        return [under.read(tokens, before) for under in self.under_keys(lists)]

    def gate(
        self, steps: torch.Tensor, entropies: torch.Tensor, repeated: torch.Tensor
    ) -> torch.Tensor:
        """Bool (N,): step t is watermarked iff (t <= M or H_t >= alpha) and its context is new
        (``repeated``: the context guard of each step); NaN entropy closes the gate past M."""
        return ((steps <= self.opening_steps) | (entropies >= self.config.scheme.alpha)) & ~repeated

    def prefix_span(self, step: int) -> tuple[int, int]:
        """Token span [a, b) of the prefix S_{0:t-1} that the SE embeds at a step t > M: the
        last W = ``embed_window`` tokens when W > 0, else the first P = ``embed_prefix_tokens``."""
        n, window = step - 1, self.config.models.embed_window
        if window > 0:
            return max(0, n - window), n
        return 0, min(n, self.config.models.embed_prefix_tokens)

    def embedding_inputs(
        self, steps: Sequence[int], prefixes: Sequence[Sequence[int]]
    ) -> list[str]:
        """The text the SE embeds at each step t: the opening sentence for t <= M, else the
        decoded span :meth:`prefix_span` of the prefix S_{0:t-1}; the spans decoded in one call
        (``prefixes[i]``: ids that start with the prefix of step ``steps[i]``)."""
        spans = [self.prefix_span(t) for t in steps]
        late = [i for i, t in enumerate(steps) if t > self.opening_steps]
        found = [self.config.keys.opening_sentence] * len(steps)
        decoded = decode_many(self.tokenizer, [prefixes[i][slice(*spans[i])] for i in late])
        for i, text in zip(late, decoded):
            found[i] = text
        return found

    def opening_signs(self) -> torch.Tensor:
        """Mapper signs of the opening sentence, bool (D,), computed once."""
        if self._opening is None:
            self._opening = self.semantic.green_lists([self.config.keys.opening_sentence]).signs[0]
        return self._opening

    def green_lists(
        self,
        steps: Sequence[int],
        texts: Sequence[Sequence[int]],
        progress: bool = False,
        fixed: bool = False,
    ) -> GreenLists:
        """The green lists of many steps, embedding each distinct SE input once, in batches.

        Args:
            steps: 1-based steps t.
            texts: Per step, the generated ids of its text (at least t - 1 of them; the prefix
                S_{0:t-1} is their start). Steps of one text may share one list object.
            progress: Show an embedding progress bar on stderr.
            fixed: Embed in fixed shapes (:mod:`watermark.core.fixed_shapes`): each input's
                embedding is then the same whatever is embedded with it.

        Returns:
            Green lists of N = len(steps) steps.
        """
        signs = self.semantic.no_signs(len(steps))
        late = [i for i, t in enumerate(steps) if t > self.opening_steps]
        early = [i for i, t in enumerate(steps) if t <= self.opening_steps]
        if early:
            signs[early] = self.opening_signs()
        if late:
            keys = [(id(texts[i]), *self.prefix_span(steps[i])) for i in late]  # (text, span)
            first: dict[tuple[int, int, int], int] = {}  # key -> its first step
            for i, key in zip(late, keys):
                first.setdefault(key, i)
            todo = list(first.values())
            decoded = self.embedding_inputs([steps[i] for i in todo], [texts[i] for i in todo])
            inputs = dict(zip(first, decoded))
            unique = sorted(set(inputs.values()))
            row = {text: n for n, text in enumerate(unique)}
            found = self.semantic.green_lists(unique, progress=progress, fixed=fixed).signs
            signs[late] = found[[row[inputs[k]] for k in keys]]
        return self.semantic.from_signs(signs)

    def generation_step(
        self,
        gen: torch.Tensor,
        active: torch.Tensor,
        state: MMGenerationState,
        eos_ids: Sequence[int] = (),
    ) -> StepDecision:
        """Decides one decoding step for a batch.

        Args:
            gen: Long tensor (B, t-1): the ids generated so far (prompt excluded).
            active: Bool (B,): rows still generating (finished rows are never gated).
            state: The MM's incremental state for this generation.
            eos_ids: Ids that end a text (never tested, so neutral with ``fresh_only``).

        Returns:
            The step decision for step t = gen.shape[1] + 1.
        """
        batch, step = gen.shape[0], gen.shape[1] + 1
        entropy = torch.full((batch,), float("nan"))
        if step > self.opening_steps:
            rows = [int(r) for r in torch.nonzero(active).flatten()]
            entropy = state.entropies(gen, rows)
        steps = torch.full((batch,), step, dtype=torch.long)
        policy = self.config.repeat_policy
        runs = earlier_runs(gen, policy.guard)  # shared by the guard and the loop penalty
        repeated = runs.any(-1).cpu()
        gated = self.gate(steps, entropy, repeated) & active.cpu()
        rows = [int(r) for r in torch.nonzero(gated).flatten()]
        signs = self.semantic.no_signs(batch)
        if rows:
            texts = [row.tolist() for row in gen[rows].cpu()]  # one transfer
            lists = self.green_lists([step] * len(rows), texts, fixed=self.fixed_shapes)
            signs[rows] = lists.signs
        neutral, repeated, shift = None, None, None
        lists = self.semantic.from_signs(signs)
        if policy.fresh_only:
            seen = torch.zeros(batch, self.vocab_size, dtype=torch.bool, device=gen.device)
            seen.scatter_(1, gen.long(), True)
            if policy.bigram and gen.shape[1] > 0:
                repeated = seen
                shift = lists.repeat_shifts[:, gen[:, -1].long().to(lists.repeat_shifts.device)]
                neutral = followers(gen, self.vocab_size)  # pairs already in the text
            else:
                neutral = seen
            neutral[:, list(eos_ids)] = True
        loops = loop_penalties(
            gen, runs, policy.guard, self.vocab_size, self.config.scheme.loop_penalty
        )
        return StepDecision(step, gated, entropy, lists, neutral, repeated, shift, loops)

    def sampling_logits(self, scores: torch.Tensor, decision: StepDecision) -> torch.Tensor:
        """The logits to sample from, (B, V): the loop penalty, the strength rule on gated rows,
        then filters."""
        if decision.loop_penalty is not None:
            scores = scores - decision.loop_penalty.to(scores.device, scores.dtype)
        device = scores.device
        return apply_rule(
            scores,
            self.config.scheme,
            decision.green.signs.to(device),
            decision.green.token_maps.to(device),
            decision.gated,
            neutral=None if decision.neutral is None else decision.neutral.to(device),
            repeated=None if decision.repeated is None else decision.repeated.to(device),
            repeat_shift=None
            if decision.repeat_shift is None
            else decision.repeat_shift.to(device),
        )

    def text_gate(self, ids: Sequence[int], progress: bool = False) -> TextGate:
        """Gate of every step of one text of T generator tokens (one streamed MM pass).

        Args:
            ids: Generator token ids s_1..s_T.
            progress: Show a progress bar over the text's steps.
        """
        steps = list(range(self.opening_steps + 1, len(ids) + 1))
        found = self.measurement.text_entropies(ids, steps, progress) if steps else None
        return self._text_gate(ids, found)

    def text_gates(self, texts: Sequence[Sequence[int]], fixed: bool = False) -> list[TextGate]:
        """:meth:`text_gate` of many texts; with ``fixed``, the texts a same-tokenizer MM reads
        whole (shorter than its window) share its forwards in fixed shapes
        (:func:`~watermark.core.fixed_shapes.fixed_shape_entropies`), the others stream alone."""
        mm, first = self.measurement, self.opening_steps + 1
        steps = [list(range(first, len(ids) + 1)) for ids in texts]
        todo = [n for n, ids in enumerate(texts) if steps[n]]
        found: dict[int, torch.Tensor] = {}
        if fixed and mm.same_tokenizer:  # read whole: body of step T is T - 1 < window tokens
            shared = [n for n in todo if mm.window <= 0 or len(texts[n]) <= mm.window]
            rows = [texts[n] for n in shared], [steps[n] for n in shared]
            found.update(zip(shared, fixed_shape_entropies(mm, *rows, first)))
        for n in todo:
            if n not in found:
                found[n] = mm.text_entropies(texts[n], steps[n])
        return [self._text_gate(ids, found.get(n)) for n, ids in enumerate(texts)]

    def _text_gate(self, ids: Sequence[int], found: torch.Tensor | None) -> TextGate:
        """The gate of one text of T ids, given the entropies of its steps M+1..T (if any)."""
        T = len(ids)
        entropy = torch.full((T,), float("nan"))
        if found is not None:
            entropy[self.opening_steps :] = found
        repeated = repeated_steps(ids, self.config.repeat_policy.guard)
        gated = self.gate(torch.arange(1, T + 1), entropy, repeated)
        return TextGate(entropy=entropy, gated=gated)
