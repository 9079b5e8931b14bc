"""Model forwards over many texts in fixed shapes, so that a text's result depends on it alone.

Batching texts is what an accelerator needs, but a padded batch's shape depends on the texts in
it, and a product's last bits depend on its shape (the kernels and their reduction order are
chosen by it), which moves an entropy near ``alpha`` or an output near zero across the line.
Here every forward has a shape chosen by each text alone:

* its **length** is the text's own length rounded up to a power of two
  (:func:`padded_length`), never the longest text's;
* its **rows** are a constant of the length (:data:`MM_TOKENS` // length rows for the
  measurement model, :data:`SE_ROWS` for the sentence embedder), the last forward filled with
  padding rows.

Right padding and the attention mask give every real position exactly its own context, and a
row of a fixed-shape product is computed the same way at any position and beside any rows
(as :data:`watermark.core.semantic.MAP_ROWS` does for the mapper). So a text's entropies and
embeddings are the same alone or among any texts, on any device (the batch-mates test runs
this path on CUDA and on the CPU); they may differ from the per-text path's in their last bits,
as CUDA's differ from the CPU's.

* :func:`fixed_shape_entropies`: the measurement model's gate entropies of same-tokenizer texts
  shorter than its window, the logits kept for the scored positions only and reduced to
  entropies a row at a time on the device.
* :class:`FixedShapeEmbedder`: sentence embeddings fed pre-tokenised (one call of the
  tokenizer's Rust backend for all texts, checked against sentence-transformers' own
  tokenization when built).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

MM_TOKENS = 4096  # tokens per measurement-model forward (rows = MM_TOKENS // padded length)
SE_ROWS = 64  # rows of every sentence-embedder forward
MIN_LENGTH = 16  # the shortest padded length


def padded_length(n: int, floor: int = MIN_LENGTH) -> int:
    """The padded length of a sequence of ``n`` tokens: the least power of two >= n, >= floor."""
    return max(floor, 1 << max(0, int(n) - 1).bit_length())


def fixed_shape_entropies(
    mm: object,
    texts: Sequence[Sequence[int]],
    steps: Sequence[Sequence[int]],
    first_step: int = 1,
) -> list[torch.Tensor]:
    """Gate entropies of the given steps of each text, float32 (len(steps[i]),) on the CPU.

    Args:
        mm: A same-tokenizer :class:`~watermark.core.measurement.MeasurementModel`; each text
            must be shorter than its window (the context is never cut).
        texts: Generator ids of each text.
        steps: Per text, its 1-based steps t (the context of step t is ``[start] + S_{0:t-1}``,
            so the entropy is read at position t - 1), each >= ``first_step``.
        first_step: The least step any text may ask for (the logits before it are not kept;
            one value for every text, so what is kept depends on the padded length alone).
    """
    from watermark.core.measurement import entropy_from_logits

    out: list[torch.Tensor] = [torch.zeros(0)] * len(texts)
    by_length: dict[int, list[int]] = {}
    for n, want in enumerate(steps):
        if len(want):
            by_length.setdefault(padded_length(max(want)), []).append(n)
    device, model = mm.device, mm.model
    for length, members in sorted(by_length.items()):
        rows = max(1, MM_TOKENS // length)
        keep = torch.arange(min(first_step - 1, length - 1), length, device=device)
        for at in range(0, len(members), rows):
            group = members[at : at + rows]
            x = torch.full((rows, length), mm.start_id, dtype=torch.long)
            mask = torch.zeros_like(x)
            mask[:, 0] = 1  # padding rows read [start] alone
            for row, n in enumerate(group):
                body = [int(i) for i in texts[n][: max(steps[n]) - 1]]
                x[row, 1 : 1 + len(body)] = torch.tensor(body, dtype=torch.long)
                mask[row, : 1 + len(body)] = 1
            with torch.inference_mode():
                logits = model(
                    input_ids=x.to(device),
                    attention_mask=mask.to(device),
                    use_cache=False,
                    logits_to_keep=keep,
                ).logits  # (rows, len(keep), V)
                offset = int(keep[0])
                found = []
                for row, n in enumerate(group):  # a row at a time: bounded memory
                    lo, hi = min(steps[n]) - 1 - offset, max(steps[n]) - offset
                    h = entropy_from_logits(logits[row, lo:hi])  # a view: no copy of logits
                    at = torch.tensor([t - 1 - offset - lo for t in steps[n]], device=device)
                    found.append(h[at])
                sizes = [len(steps[n]) for n in group]
                for n, h in zip(group, torch.cat(found).float().cpu().split(sizes)):
                    out[n] = h
    return out


class FixedShapeEmbedder:
    """Sentence embeddings of many texts in forwards of :data:`SE_ROWS` rows and a padded length
    per text, fed pre-tokenised.

    Texts are tokenized in one call of the tokenizer's Rust backend (truncated to the model's
    ``max_seq_length``, as sentence-transformers does); if that does not give what
    sentence-transformers' own ``preprocess`` gives on a few probe texts, every forward's
    inputs come from ``preprocess`` instead (slower on the host, the same inputs).

    Args:
        model: A sentence-transformers model whose first module is its transformer.
        rows: Rows per forward.
    """

    PROBES = (
        "A plain sentence.",
        "  Leading and trailing spaces, Ünïcödé and CAPITALS  ",
        "numbers 3.14159 and punctuation!? (x) [y] {z} --- 'quoted' \"twice\"",
        "long " * 600,
    )

    def __init__(self, model: object, rows: int = SE_ROWS) -> None:
        self.model = model
        self.rows = int(rows)
        self.device = next(model.parameters()).device
        self.feature_names = [k for k in model.preprocess(["a"]) if k != "modality"]
        self.backend = self._backend()

    def _backend(self) -> object | None:
        """A copy of the tokenizer's backend set to truncate as sentence-transformers does, or
        ``None`` where it does not reproduce ``preprocess`` on the probes."""
        module = self.model[0]
        tokenizer = getattr(module, "tokenizer", None)
        inner = getattr(tokenizer, "_tokenizer", None)
        if inner is None or getattr(module, "do_lower_case", False):
            return None
        if not set(self.feature_names) <= {"input_ids", "attention_mask", "token_type_ids"}:
            return None
        from tokenizers import Tokenizer

        backend = Tokenizer.from_str(inner.to_str())
        backend.no_padding()
        backend.enable_truncation(int(module.max_seq_length))
        ours = [e.ids for e in backend.encode_batch(list(self.PROBES))]
        theirs = self.model.preprocess(list(self.PROBES))
        lengths = theirs["attention_mask"].sum(1).tolist()
        same = all(
            theirs["input_ids"][i, :m].tolist() == ids
            for i, (m, ids) in enumerate(zip(lengths, ours))
        )
        return backend if same else None

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """The model's input ids of each text, special tokens included, truncated."""
        if self.backend is not None:
            return [e.ids for e in self.backend.encode_batch(list(texts))]
        found = self.model.preprocess(list(texts))
        lengths = found["attention_mask"].sum(1).tolist()
        return [found["input_ids"][i, :m].tolist() for i, m in enumerate(lengths)]

    @torch.inference_mode()
    def embed(self, texts: Sequence[str]) -> torch.Tensor:
        """Embeddings, float32 (N, E) on the model's device."""
        ids = self.token_ids(texts)
        by_length: dict[int, list[int]] = {}
        for n, row in enumerate(ids):
            by_length.setdefault(padded_length(len(row)), []).append(n)
        out: torch.Tensor | None = None
        pad = self.model[0].tokenizer.pad_token_id or 0
        for length, members in sorted(by_length.items()):
            for at in range(0, len(members), self.rows):
                group = members[at : at + self.rows]
                x = np.full((self.rows, length), pad, dtype=np.int64)
                mask = np.zeros((self.rows, length), dtype=np.int64)
                mask[:, 0] = 1  # padding rows read their first token alone
                for row, n in enumerate(group):
                    x[row, : len(ids[n])] = ids[n]
                    mask[row, : len(ids[n])] = 1
                features = {
                    "input_ids": torch.from_numpy(x).to(self.device),
                    "attention_mask": torch.from_numpy(mask).to(self.device),
                    "modality": "text",
                }
                if "token_type_ids" in self.feature_names:
                    features["token_type_ids"] = torch.zeros_like(features["input_ids"])
                found = self.model(features)["sentence_embedding"][: len(group)].float()
                if out is None:
                    out = found.new_zeros(len(texts), found.shape[1])
                out[torch.tensor(group, device=found.device)] = found
        return out if out is not None else torch.zeros(0, 0, device=self.device)
