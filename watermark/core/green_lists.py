"""`GreenLists`: the public value of a batch of steps' green lists, as the scoring core returns it.

A step's green lists are its mapper signs v > 0 over the D mapper outputs, read through the L
keyed token maps (one per list: L = 1 except for the tournament's layers): token i is green in
list l iff ``signs[token_maps[l, i]]``. The detector, the evaluation and the benchmarks use these
operations only; how the signs were computed (sentence embedder, mapper) stays inside the core.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class TokenReads:
    """What N steps' green lists say of the token drawn at each step, on the CPU
    (:meth:`GreenLists.read`: one transfer per field for a whole batch of texts).

    Attributes:
        green: Bool (N, L): the token is green at its step, per list.
        vocab: Float64 (N, L): the share of the vocabulary green there (the ``vocab`` null).
        dims: Long (N, L): the mapper output the token reads.
        repeat_green, repeat_null, repeat_dims: The same read as a repeat after the previous
            token (:meth:`GreenLists.contains_repeat`, :meth:`GreenLists.repeat_fraction`,
            :meth:`GreenLists.repeat_dims`); None without repeat shifts.
    """

    green: torch.Tensor
    vocab: torch.Tensor
    dims: torch.Tensor
    repeat_green: torch.Tensor | None = None
    repeat_null: torch.Tensor | None = None
    repeat_dims: torch.Tensor | None = None

    def map(self, fn: Callable[[object], object]) -> TokenReads:
        """These reads with ``fn`` applied to every field that is set."""
        return TokenReads(*(None if f is None else fn(f) for f in vars(self).values()))

    def select(self, rows: slice) -> TokenReads:
        """The reads of the steps ``rows``."""
        return self.map(lambda field: field[rows])


@dataclass(frozen=True)
class GreenLists:
    """Green lists of N steps.

    Attributes:
        signs: Bool (N, D): mapper signs of each step.
        token_maps: Long (L, V): mapper output each token reads, per list.
        dim_counts: Long (L, D): how many tokens read each output, per list.
        repeat_shifts: Long (L, V) or None: per list and previous token, the shift of a repeated
            token's dimension (``repeats="bigram"``; see :mod:`watermark.core.token_map`).
    """

    signs: torch.Tensor
    token_maps: torch.Tensor
    dim_counts: torch.Tensor
    repeat_shifts: torch.Tensor | None = None

    def __len__(self) -> int:
        return int(self.signs.shape[0])

    @property
    def num_lists(self) -> int:
        """L, the green lists per step."""
        return int(self.token_maps.shape[0])

    @property
    def vocab_size(self) -> int:
        """V, the LM-head width the lists cover."""
        return int(self.token_maps.shape[1])

    def select(self, rows: Sequence[int] | torch.Tensor | slice) -> GreenLists:
        """The green lists of the steps ``rows``."""
        return GreenLists(self.signs[rows], self.token_maps, self.dim_counts, self.repeat_shifts)

    def dims(self, token_ids: torch.Tensor) -> torch.Tensor:
        """The mapper output token ``token_ids[n]`` reads, per list: (N,) -> long (N, L)."""
        return self.token_maps[:, token_ids.to(self.token_maps.device)].T

    def contains(self, token_ids: torch.Tensor) -> torch.Tensor:
        """Whether token ``token_ids[n]`` is green at step n, per list: (N,) -> bool (N, L)."""
        return self.signs.gather(1, self.dims(token_ids).to(self.signs.device))

    def repeat_dims(self, token_ids: torch.Tensor, previous: torch.Tensor) -> torch.Tensor:
        """The output repeated token ``token_ids[n]`` after ``previous[n]`` reads, per list:
        ``(token_map + shift[previous]) % D``, (N,), (N,) -> long (N, L) (needs
        ``repeat_shifts``)."""
        if self.repeat_shifts is None:
            raise ValueError("these green lists have no repeat shifts (repeats='neutral')")
        maps = self.token_maps[:, token_ids.to(self.token_maps.device)]
        shifts = self.repeat_shifts[:, previous.to(self.repeat_shifts.device)]
        return ((maps + shifts) % self.signs.shape[1]).T

    def contains_repeat(self, token_ids: torch.Tensor, previous: torch.Tensor) -> torch.Tensor:
        """Whether repeated token ``token_ids[n]`` after ``previous[n]`` is green at step n, per
        list, at its :meth:`repeat_dims`: (N,), (N,) -> bool (N, L)."""
        return self.signs.gather(1, self.repeat_dims(token_ids, previous).to(self.signs.device))

    def repeat_fraction(self) -> torch.Tensor:
        """Null probability that a repeated token is green, per step and list: the share of the
        D outputs that are positive (its shifted dimension is uniform over them under a random
        key), float64 (N, L)."""
        share = self.signs.to(torch.float64).mean(-1, keepdim=True)
        return share.expand(-1, self.num_lists)

    def read(self, token_ids: torch.Tensor, previous: torch.Tensor | None = None) -> TokenReads:
        """Everything detection reads of token ``token_ids[n]`` at step n, moved to the CPU once;
        with ``previous`` (the token before each, (N,)) and repeat shifts, its repeat reads too."""
        fields = [self.contains(token_ids), self.vocab_fraction(), self.dims(token_ids)]
        if previous is not None and self.repeat_shifts is not None:
            fields += [
                self.contains_repeat(token_ids, previous),
                self.repeat_fraction(),
                self.repeat_dims(token_ids, previous),
            ]
        return TokenReads(*fields).map(torch.Tensor.cpu)

    def mask(self) -> torch.Tensor:
        """The full green indicator v_hat: bool (N, L, V)."""
        return self.signs[:, self.token_maps.to(self.signs.device)]

    def vocab_fraction(self) -> torch.Tensor:
        """Share of the V tokens that are green, per step and list: float64 (N, L)."""
        counts = self.dim_counts.to(self.signs.device, torch.float64)
        return (self.signs.to(torch.float64) @ counts.T) / self.vocab_size
