"""A KV cache for long decode loops over many rows: room to grow, and reorders that copy only
the rows that change.

transformers' ``DynamicCache`` concatenates each step's keys and values onto the whole cache, and
its ``reorder_cache`` gathers every row into new tensors. The sentence layer's decode loop
(:mod:`watermark.generate.loop`) keeps N candidate rows per prompt (512 rows at batch 16 and
N = 32, gigabytes of cache on the CPU), and reorders whenever one prompt keeps a candidate, so
both copies of the whole cache, and the page faults of their fresh allocations, dominated it.

Here each layer's keys and values are views of buffers with spare room along the sequence: a step
writes its slice into the room (the buffer grows by ``ROOM`` positions when full: the cache
of 512 rows is most of the CPU's memory, so it cannot double), and a reorder that keeps the
batch size copies only the rows whose source is another row. The values the attention reads are
the same as ``DynamicCache``'s (``tests/watermark/core/test_growing_cache.py``).
"""

from __future__ import annotations

import torch
from transformers.cache_utils import Cache, DynamicCache, DynamicLayer

ROOM = 32  # positions added when a buffer is full: a copy every 32 steps, little memory unused


class GrowingLayer(DynamicLayer):
    """One layer's keys and values, (B, H, length, D) views of (B, H, capacity, D) buffers."""

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        super().lazy_initialization(key_states, value_states)
        self.length = 0
        self.buffers: tuple[torch.Tensor, torch.Tensor] | None = None

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Writes the new (B, H, n, D) states after the cached ones; returns the views."""
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        end = self.length + key_states.shape[-2]
        if self.buffers is None or end > self.buffers[0].shape[-2]:
            self._resize(end + ROOM, key_states, value_states)
        for buffer, states in zip(self.buffers, (key_states, value_states)):
            buffer[..., self.length : end, :].copy_(states)
        self._view(end)
        return self.keys, self.values

    def _resize(self, capacity: int, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        """New buffers of ``capacity`` positions holding the cached states."""
        fresh = []
        for states, old in zip((key_states, value_states), self.buffers or (None, None)):
            shape = (*states.shape[:-2], capacity, states.shape[-1])
            buffer = states.new_empty(shape)
            if old is not None:
                buffer[..., : self.length, :].copy_(old[..., : self.length, :])
            fresh.append(buffer)
        self.buffers = (fresh[0], fresh[1])

    def _view(self, length: int) -> None:
        self.length = length
        self.keys, self.values = (b[..., :length, :] for b in self.buffers)

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        """Row i becomes row ``beam_idx[i]``: in place where the batch keeps its size (only the
        rows that change are copied), else gathered into new buffers."""
        if self.buffers is None:
            return
        index = beam_idx.to(self.buffers[0].device)
        if len(index) == self.buffers[0].shape[0]:
            moved = (index != torch.arange(len(index), device=index.device)).nonzero().squeeze(1)
            if len(moved):
                for buffer in self.buffers:  # the gather copies the sources before the write
                    buffer[moved, :, : self.length] = buffer[index[moved], :, : self.length]
        else:
            self.buffers = (
                self.buffers[0].index_select(0, index),
                self.buffers[1].index_select(0, index),
            )
        self._view(self.length)

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        if self.buffers is not None:
            self.buffers = (self.buffers[0][indices], self.buffers[1][indices])
            self._view(self.length)

    def batch_repeat_interleave(self, repeats: int) -> None:
        if self.buffers is not None:
            self.buffers = tuple(b.repeat_interleave(repeats, dim=0) for b in self.buffers)
            self._view(self.length)

    def crop(self, tokens_to_remove: int) -> None:
        if tokens_to_remove > 0:
            raise ValueError("crop takes the number of tokens to remove, negative")
        if self.buffers is not None and tokens_to_remove:
            self._view(max(0, self.length + tokens_to_remove))

    def reset(self) -> None:
        self.buffers, self.length = None, 0
        super().reset()


class GrowingCache(DynamicCache):
    """A ``DynamicCache`` whose layers are :class:`GrowingLayer` (one added per layer index)."""

    def __init__(self) -> None:
        Cache.__init__(self, layer_class_to_replicate=GrowingLayer)
