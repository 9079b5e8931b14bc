"""Tests for the growing KV cache (watermark.models.growing_cache) against transformers'."""

from __future__ import annotations

import torch
from transformers.cache_utils import DynamicCache

from tests.conftest import TEST_DEVICE
from tests.helpers import tiny_llama
from watermark.core.measurement import cached_forward
from watermark.models.growing_cache import GrowingCache


def test_same_logits_as_dynamic_cache_through_steps_and_reorders() -> None:
    torch.manual_seed(0)
    model = tiny_llama(50, seed=0).to(TEST_DEVICE).eval()
    rows = 6
    ids = torch.randint(1, 50, (rows, 5), device=TEST_DEVICE)
    mask = torch.ones_like(ids)
    mask[1, :2] = 0  # left padding
    caches = [DynamicCache(), GrowingCache()]
    feeds = [ids, ids]
    masks = [mask, mask]
    reorders = {
        3: [0, 0, 2, 3, 3, 3],  # the batch keeps its size: rows take others' caches
        5: [1, 2, 4, 5],  # rows leave
        30: [3, 1, 1, 0],  # past the first buffer's room
    }
    with torch.inference_mode():
        for step in range(40):
            outs = []
            for k in range(2):
                pos = (masks[k].cumsum(-1) - 1).clamp(min=0)[:, -feeds[k].shape[1] :]
                out, _ = cached_forward(
                    model, caches[k], input_ids=feeds[k], attention_mask=masks[k], position_ids=pos
                )
                outs.append(out.logits[:, -1])
            torch.testing.assert_close(outs[1], outs[0], rtol=0, atol=0)
            nxt = outs[0].argmax(-1, keepdim=True)
            real = torch.ones_like(nxt)
            real[0] = int(step % 4 != 1)  # a row fed a pad now and then
            for k in range(2):
                feeds[k], masks[k] = nxt, torch.cat([masks[k], real], dim=1)
            if step in reorders:
                index = torch.tensor(reorders[step], device=TEST_DEVICE)
                for k in range(2):
                    caches[k].reorder_cache(index)
                    feeds[k], masks[k] = feeds[k][index], masks[k][index]
    layer = caches[1].layers[0]
    assert layer.keys.shape == caches[0].layers[0].keys.shape
    assert layer.buffers[0].shape[-2] > layer.length  # room left: no copy per step
    assert caches[1].get_seq_length() == caches[0].get_seq_length() == 5 + 39
