"""Tests for the decoding conventions (watermark.core.text) and the detector's token pieces."""

from __future__ import annotations

import random

import pytest

from tests.helpers import bpe_tokenizer, word_tokenizer
from watermark.core.text import _plain_backend, decode_ids, decode_many, encode_text
from watermark.detect.assembly import token_pieces

TEXT = "Café déjà vu: naïve 東京 emoji 🙂🙃 and plain words, repeated words, words."


def pieces_one_at_a_time(tokenizer: object, ids: list[int], context: int = 16) -> list[str]:
    """The detector's token pieces, decoding each window on its own."""
    pieces = []
    for t in range(1, len(ids) + 1):
        start = max(0, t - 1 - context)
        previous = decode_ids(tokenizer, ids[start : t - 1])
        text = decode_ids(tokenizer, ids[start:t])
        if text.startswith(previous):
            pieces.append(text[len(previous) :])
        else:
            pieces.append(decode_ids(tokenizer, ids[t - 1 : t]))
    return pieces


@pytest.fixture(scope="module")
def smollm2_tokenizer() -> object:
    from transformers import AutoTokenizer

    from watermark.models.loaders import resolve_lm

    return AutoTokenizer.from_pretrained(str(resolve_lm("smollm2-135m")))


def test_decode_many_is_decode_ids_of_each_list(smollm2_tokenizer: object) -> None:
    rng = random.Random(0)
    for tok in (smollm2_tokenizer, word_tokenizer(), bpe_tokenizer()):
        assert _plain_backend(tok) is not None  # the batched path is the one under test
        ids = encode_text(tok, TEXT) + [0, 1]  # special tokens are skipped
        cuts = [sorted((rng.randrange(len(ids)), rng.randrange(len(ids)))) for _ in range(60)]
        lists = [[]] + [ids[a:b] for a, b in cuts]
        assert decode_many(tok, lists) == [decode_ids(tok, x) for x in lists]


def test_decode_many_falls_back_for_a_tokenizer_with_its_own_decoding() -> None:
    tok = word_tokenizer()
    own = type("OwnDecode", (type(tok),), {"decode": lambda self, ids, **kw: f"<{len(ids)}>"})
    tok.__class__ = own
    assert _plain_backend(tok) is None
    assert decode_many(tok, [[4, 5], [6]]) == ["<2>", "<1>"]


def test_token_pieces_match_one_window_at_a_time(smollm2_tokenizer: object) -> None:
    ids = encode_text(smollm2_tokenizer, TEXT * 3)
    pieces = token_pieces(smollm2_tokenizer, ids)
    assert pieces == pieces_one_at_a_time(smollm2_tokenizer, ids)
    assert len(pieces) == len(ids) and "".join(pieces).startswith("Café")
