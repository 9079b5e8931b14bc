"""`EncoderSystem`: the LightningModule that fine-tunes the sentence layer's encoder (issue 79).

The key reads the signs of SM(SE(sentence)). `SentenceMapperSystem` trains the SM on a frozen
SE; this system also trains the SE (a ``SentenceTransformer``, from the packaged MiniLM), so the
key space is learnt where the meaning is read. Each step embeds its texts with the encoder being
trained and takes `SentenceMapperSystem`'s loss on them: rewrite pairs keep their soft signs
with a margin (stability), the candidates of one prefix split theirs (spread: the hard
negatives), plus the balance, distance, pull and decorrelation terms.

At each validation epoch's end the whole val split is embedded by the current encoder and
scored: `SentenceMapperSystem`'s key-space metrics, and the figure of merit
(:func:`mapper.sentence_metrics.surviving_evidence`): the kept candidate's z among the first
8 of each val pool, as generated (``val/fom_z``) and expected after the val forced rewrite's
flips (``val/fom_z_after``). After `fit` the CLI exports the SM as usual and the encoder as a
sentence-transformers folder beside it (:meth:`EncoderSystem.export`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from mapper.sentence_metrics import kept_by_bin, keys, rewrite_agreement, surviving_evidence
from mapper.sentence_system import SentenceMapperSystem, key_space_metrics
from watermark.models.loaders import load_embedder

ENCODER_FOLDER = "encoder"  # the encoder's folder inside the export folder


class EncoderSystem(SentenceMapperSystem):
    """Fine-tunes the SE jointly with the SM (module docstring).

    Args:
        encoder: the SE to start from: ``minilm``, a local sentence-transformers folder or a hub
            id (its width must be the mapper's ``input_dim``).
        encoder_lr: peak learning rate of the encoder (the mapper's is ``lr``).
        train_mapper: also train the SM (``False``: only the encoder moves).
        train_layers: the encoder's top transformer layers trained (``None``: all, embeddings
            included); the layers below run without gradients, which is what makes a run fit
            this CPU's half hour.
        max_length: tokens of a sentence the encoder reads.
        fom_candidates: N of the figure of merit logged at each epoch's end.
        **shared: `SentenceMapperSystem`'s keyword arguments.
    """

    def __init__(
        self,
        *,
        encoder: str = "minilm",
        encoder_lr: float = 2e-5,
        train_mapper: bool = True,
        train_layers: int | None = 2,
        max_length: int = 64,
        fom_candidates: int = 8,
        **shared: Any,
    ) -> None:
        super().__init__(**shared)
        self.encoder = load_embedder(encoder).train()
        self.encoder.max_seq_length = max_length
        self.mapper.requires_grad_(train_mapper)
        if train_layers is not None:
            layers = self.encoder[0].auto_model.encoder.layer
            self.encoder.requires_grad_(False)
            for layer in layers[len(layers) - train_layers :]:
                layer.requires_grad_(True)

    def embed(self, texts: list[str]) -> torch.Tensor:
        """(B, E) embeddings of ``texts`` by the encoder, with gradients in training."""
        features = self.encoder.tokenize(texts)
        features = {k: v.to(self.device) if torch.is_tensor(v) else v for k, v in features.items()}
        return self.encoder(features)["sentence_embedding"]

    def _embedded(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The batch's rows as the embedding batch of `SentenceMapperSystem.loss_terms`: every
        distinct text embedded once."""
        texts = self.trainer.datamodule.texts
        names = ("rows_pool", "rows_a", "rows_b", "rows")
        distinct, where = torch.cat([batch[n] for n in names]).unique(return_inverse=True)
        emb = self.embed([texts[i] for i in distinct.tolist()])[where]
        parts = emb.split([len(batch[n]) for n in names])
        return {
            "u_pool": parts[0],
            "u_a": parts[1],
            "u_b": parts[2],
            "u": parts[3],
            "pool": batch["pool"],
        }

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        return super().training_step(self._embedded(batch), batch_idx)

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        super().validation_step(self._embedded(batch), batch_idx)

    @torch.no_grad()
    def embed_rows(self, rows: list[int], batch_size: int = 128) -> torch.Tensor:
        """(len(texts), E) table holding the current encoder's embeddings of ``rows`` (the
        other rows zero), in eval mode."""
        dm = self.trainer.datamodule
        was = self.encoder.training
        self.encoder.eval()
        table = torch.zeros(len(dm.texts), int(self.hparams.input_dim))
        for start in range(0, len(rows), batch_size):
            chunk = rows[start : start + batch_size]
            table[chunk] = self.embed([dm.texts[i] for i in chunk]).float().cpu()
        self.encoder.train(was)
        return table

    @torch.no_grad()
    def on_validation_epoch_end(self) -> None:
        """Key-space metrics and the figure of merit of the whole val split (module docstring)."""
        dm = getattr(self.trainer, "datamodule", None)
        if dm is None or not getattr(dm, "texts", None) or self.trainer.sanity_checking:
            return
        found = dm.eval_set_with(self.embed_rows(dm.val_rows("val")), "val")
        metrics = key_space_metrics(self.mapper, found, self.hparams.metric_keys)
        metrics.update(figure_of_merit(self.mapper, found, self.hparams.fom_candidates))
        self.latest_metrics = metrics
        for k, v in metrics.items():
            self.log(k, v, prog_bar=k in ("val/fom_z_after", "val/agree_forced_keyed"))

    def param_groups(self) -> list[dict[str, Any]]:
        """The encoder at ``encoder_lr``, the mapper (when trained) at ``lr``."""
        encoder = [p for p in self.encoder.parameters() if p.requires_grad]
        groups = [{"params": encoder, "lr": self.hparams.encoder_lr}]
        mapper = [p for p in self.mapper.parameters() if p.requires_grad]
        return groups + ([{"params": mapper}] if mapper else [])

    def export(self, folder: Path) -> Path:
        """Saves the encoder as a sentence-transformers folder ``folder/encoder``."""
        out = Path(folder) / ENCODER_FOLDER
        self.encoder.eval().save(str(out))
        return out


@torch.no_grad()
def figure_of_merit(mapper: torch.nn.Module, found: dict, candidates: int = 8) -> dict:
    """``val/fom_*``: the kept candidate's z among the first ``candidates`` of each pool of an
    eval set, as generated and expected after the flips of its forced-rewrite pairs."""
    if "forced" not in found["pairs"] or not found["pools"]:
        return {}
    was = mapper.training
    mapper.eval()
    run = lambda u: mapper(u).float().cpu()  # noqa: E731
    tested = keys(int(mapper.config.output_dim), 32)
    a, b = found["pairs"]["forced"]
    kept = kept_by_bin(rewrite_agreement(run(a), run(b), tested))
    kept = [0.5 if k != k else k for k in kept]  # an empty bin: a coin
    found_z = surviving_evidence([run(p) for p in found["pools"]], tested, kept, candidates)
    mapper.train(was)
    return {"val/fom_z": found_z["z"], "val/fom_z_after": found_z["z_after"]}
