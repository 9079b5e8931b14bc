"""Which candidate a round keeps (watermark.generate.keep.kept_rows): a candidate that only
ends the text is never ranked against sentences, so the layer does not end texts early."""

from __future__ import annotations

import torch

from watermark.generate.keep import kept_rows

EOS = 0
WORDS = {1: " The", 2: " storm", 3: " hit.", 4: " A", 5: " bridge", 6: " fell.", 7: "\n", 8: '"'}


class Tokenizer:
    """Decodes ids to words; EOS is special and skipped, as decode_ids asks."""

    def decode(self, ids, skip_special_tokens=True, clean_up_tokenization_spaces=False) -> str:
        return "".join(WORDS[i] for i in ids if i != EOS)


class Layer:
    """Ranks by a fixed score per text; records what it was asked to rank."""

    def __init__(self, scores: dict[str, float]) -> None:
        self.scores, self.seen = scores, []

    def rank(self, continuations):
        self.seen.append(continuations)
        return [
            sorted(range(len(c)), key=lambda i: -self.scores.get(c[i], 0.0)) for c in continuations
        ]


def test_a_bare_end_is_never_ranked_and_ends_the_text_only_in_row_0() -> None:
    head = [1, 2, 3]  # " The storm hit." kept already
    bare, newline_bare = [EOS], [7, 8, EOS]
    sentence_a, sentence_b = [4, 5, 6], [4, 6]
    # the bare candidate would read as the kept sentence: a high score it must not collect
    layer = Layer(
        {
            " The storm hit.": 9.0,
            " The storm hit. A bridge fell.": 1.0,
            " The storm hit. A fell.": 2.0,
            " A fell.": 3.0,
        }
    )
    tok = Tokenizer()
    rows = kept_rows(layer, tok, [head], [[sentence_a, bare, sentence_b, newline_bare]], [EOS])
    assert rows == [2]  # the best of the two sentences; neither bare row was ranked
    assert layer.seen[-1] == [[" The storm hit. A bridge fell.", " The storm hit. A fell."]]
    # row 0 bare: the text ends there, whatever the others score, and nothing is ranked
    layer.seen.clear()
    assert kept_rows(layer, tok, [head], [[newline_bare, sentence_a, sentence_b]], [EOS]) == [0]
    assert layer.seen in ([], [[]])
    # several prompts at once: each keeps its own, the ended one row 0
    two = kept_rows(layer, tok, [head, []], [[bare, sentence_a], [sentence_a, sentence_b]], [EOS])
    assert two == [0, 1]
    # an end after words is a sentence like any other
    ended = [4, 5, 6, EOS]
    assert kept_rows(layer, tok, [head], [[sentence_b, ended]], [EOS]) == [0]


def test_row_0_ends_the_text_as_often_as_a_plain_draw() -> None:
    """Rows drawn independently with an end chance q: a text ends at the rate q, where ranking
    the bare rows (they read as the last kept sentence, the best of the round before) made it
    about half the rounds with any bare row."""
    tok, q, n, rounds = Tokenizer(), 0.1, 8, 4000
    layer = Layer({" The storm hit.": 9.0})
    gen = torch.Generator().manual_seed(0)
    ends = 0
    for _ in range(rounds):
        draws = torch.rand(n, generator=gen) < q
        candidates = [[EOS] if d else [4, 5, 6] for d in draws.tolist()]
        (row,) = kept_rows(layer, tok, [[1, 2, 3]], [candidates], [EOS])
        ends += candidates[row] == [EOS]
    assert abs(ends / rounds - q) < 0.02
    assert 1 - (1 - q) ** n > 0.5  # what ranking bare rows with the kept sentence's score gave
