"""AWTI: the measurement model (MM) and its next-token entropies over the generated text only.

Definition (used by generation, detection and the reference): for generator step t (1-based),
the MM context is

* same tokenizer:  ``[start] + S_{0:t-1}`` (the generated ids themselves);
* cross tokenizer: ``[start] + encode_mm(decode_gen(S_{0:t-1}))`` (the decoded prefix re-encoded
  with the MM's tokenizer, see :mod:`watermark.core.text`),

and the gate entropy H_t is the entropy (nats) of the MM's next-token distribution after that
context. ``start`` is ``mm_start_token`` of the config, else the MM tokenizer's BOS, else its EOS:
the MM never sees the prompt, and at step 1 (empty prefix) it conditions on ``start`` alone.

Long texts (the window W = ``mm_window``): a context body of n tokens (after ``start``) is cut to
its tokens from :func:`window_start` on, a multiple of W/2 chosen so that W/2 <= kept < W once
n >= W. Texts shorter than W are never cut. The rule bounds the MM's memory and cost per step
and is applied identically by generation (the KV cache restarts when the window moves), detection
and the reference.

Fast paths: detection streams the MM over each window segment in ``chunk``-token pieces with a
KV cache, keeping entropies (or green mass), not logits (cross tokenizer: a prefix whose
re-encoding is not a prefix of the segment's gets its own forward); batched detection runs many
texts per forward in fixed shapes (:func:`watermark.core.fixed_shapes.fixed_shape_entropies`).
Generation keeps a KV cache per batch (same tokenizer) or per row (cross tokenizer, cropped to
the common prefix): :mod:`watermark.core.mm_states`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Iterator, Sequence

import torch
from torch import Tensor

from watermark.base import UserError
from watermark.core.text import decode_ids, encode_text


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """Shannon entropy in nats of softmax(logits) along the last axis, computed in float32."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    return -(logp.exp() * logp).nan_to_num(0.0).sum(-1)


def window_start(n: int, window: int) -> int:
    """First kept index of a context body of ``n`` tokens under window W (0: nothing cut)."""
    if window <= 0 or n < window:
        return 0
    half = window // 2
    return ((n - window) // half + 1) * half


def resolve_start_id(tokenizer: object, token: str | None) -> int:
    """Token id the MM conditions on at the empty prefix (see module docstring)."""
    if token is not None:
        tid = tokenizer.convert_tokens_to_ids(token)
        if tid is None or tid == getattr(tokenizer, "unk_token_id", None):
            raise UserError(
                f"mm_start_token {token!r} is not in the measurement model's vocabulary"
            )
        return int(tid)
    for tid in (tokenizer.bos_token_id, tokenizer.eos_token_id):
        if tid is not None:
            return int(tid)
    raise UserError("the measurement model's tokenizer has no BOS or EOS; set mm_start_token")


@functools.cache
def _cache_argument(model_type: type) -> str:
    """The name of a causal LM's KV-cache argument: ``cache`` (transformers 5.x), else the
    earlier ``past_key_values`` (deprecated in 5.x with a warning on every call)."""
    params = inspect.signature(model_type.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def cached_forward(
    model: torch.nn.Module, cache: object, **kwargs: object
) -> tuple[object, object]:
    """``model(**kwargs)`` continuing ``cache`` (None: a new one); returns (output, its cache)."""
    name = _cache_argument(type(model))
    out = model(**kwargs, **{name: cache}, use_cache=True)
    return out, getattr(out, name)


class MeasurementModel:
    """The MM with the context convention above.

    Args:
        model: A causal LM (eval mode).
        tokenizer: Its tokenizer.
        gen_tokenizer: The generator's tokenizer (to decode prefixes in cross-tokenizer mode).
        same_tokenizer: Whether generator ids can be fed to the MM directly.
        start_id: Token id of the empty-prefix context.
        window: W of the long-text rule (0: never cut).
        chunk: Tokens per forward when detection streams a segment.
    """

    def __init__(
        self,
        model: torch.nn.Module,
        tokenizer: object,
        gen_tokenizer: object,
        same_tokenizer: bool,
        start_id: int,
        window: int = 0,
        chunk: int = 256,
    ) -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.gen_tokenizer = gen_tokenizer
        self.same_tokenizer = same_tokenizer
        self.start_id = int(start_id)
        self.window = int(window)
        self.chunk = int(chunk)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def body_ids(self, prefix_ids: Sequence[int]) -> list[int]:
        """MM tokens of a generated prefix S_{0:t-1} (generator ids), before the window."""
        if self.same_tokenizer:
            return [int(i) for i in prefix_ids]
        return encode_text(self.tokenizer, decode_ids(self.gen_tokenizer, prefix_ids))

    def context_ids(self, prefix_ids: Sequence[int]) -> list[int]:
        """MM context for a generated prefix S_{0:t-1}: ``[start]`` + the windowed body."""
        body = self.body_ids(prefix_ids)
        return [self.start_id, *body[window_start(len(body), self.window) :]]

    @torch.inference_mode()
    def _logits(self, ids: Sequence[int]) -> torch.Tensor:
        """Float32 logits (L, V_mm) of one full forward over ``ids``, on the MM's device."""
        x = torch.tensor([list(ids)], dtype=torch.long, device=self.device)
        return self.model(input_ids=x, use_cache=False).logits[0].float()

    @torch.inference_mode()
    def _stream(self, ids: list[int], positions: list[int]) -> Iterator[tuple[list[int], Tensor]]:
        """Logits at ``positions`` (sorted) of one forward over ``ids``, ``chunk`` tokens at a time.

        Yields ``(indices into positions, float32 logits (k, V_mm) on the MM's device)`` per
        chunk.
        """
        cache, done, pos = None, 0, 0
        while pos < len(positions):
            end = min(len(ids), done + self.chunk)
            take = []
            while pos < len(positions) and positions[pos] < end:
                take.append(pos)
                pos += 1
            keep = torch.tensor([positions[i] - done for i in take], dtype=torch.long)
            x = torch.tensor([ids[done:end]], dtype=torch.long, device=self.device)
            kept = keep.to(self.device) if take else 1
            out, cache = cached_forward(self.model, cache, input_ids=x, logits_to_keep=kept)
            done = end
            if take:
                yield take, out.logits[0].float()

    def step_logits(
        self, gen_ids: Sequence[int], steps: Sequence[int], progress: bool = False
    ) -> Iterator[tuple[list[int], Tensor]]:
        """MM next-token logits of the given steps of one generated text, in bounded chunks.

        Args:
            gen_ids: Generator token ids s_1..s_T of the text.
            steps: 1-based steps t (each <= T); step t uses the context of S_{0:t-1}.
            progress: Show a progress bar over the steps.

        Yields:
            ``(indices into steps, float32 logits (k, V_mm) on the MM's device)``, every step
            exactly once.
        """
        from tqdm.auto import tqdm

        bodies = {}  # step -> MM body of its prefix (cross tokenizer only)
        groups: dict[int, list[int]] = {}
        for i, t in enumerate(steps):
            if self.same_tokenizer:
                n = t - 1
            else:
                bodies[i] = self.body_ids(gen_ids[: t - 1])
                n = len(bodies[i])
            groups.setdefault(window_start(n, self.window), []).append(i)
        bar = tqdm(total=len(steps), desc="MM", unit="tok", disable=not progress, leave=False)
        for s, members in sorted(groups.items()):
            if self.same_tokenizer:
                last = max(steps[i] - 1 for i in members)
                segment = [self.start_id, *map(int, gen_ids[s:last])]
                length = {i: steps[i] - 1 - s for i in members}
            else:
                ref = max((bodies[i] for i in members), key=len)
                segment = [self.start_id, *ref[s:]]
                length = {}
                for i in members:
                    if ref[: len(bodies[i])] == bodies[i]:
                        length[i] = len(bodies[i]) - s
                    else:  # re-encoding changed earlier MM tokens at this boundary
                        yield [i], self._logits([self.start_id, *bodies[i][s:]])[-1:]
                        bar.update(1)
            order = sorted(length, key=length.get)
            for take, logits in self._stream(segment, [length[i] for i in order]):
                yield [order[k] for k in take], logits
                bar.update(len(take))
        bar.close()

    def text_entropies(
        self, gen_ids: Sequence[int], steps: Sequence[int], progress: bool = False
    ) -> torch.Tensor:
        """Gate entropies H_t of the given steps of one text: float32 (len(steps),)."""
        out = torch.full((len(steps),), float("nan"))
        for idx, logits in self.step_logits(gen_ids, steps, progress):
            out[idx] = entropy_from_logits(logits).cpu()  # reduced where the logits are
        return out
