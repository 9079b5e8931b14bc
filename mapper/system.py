"""`MapperSystem`: the LightningModule that trains a `SemanticMapper` (losses, steps, logs, optim).

Loss = w_distance * distance preservation (all pairs, rescaled embedding distance)
     + w_sentence * per-sentence sign balance + w_dimension * per-dimension sign balance
     + w_contrastive * distance to augmented counterparts.
Validation also scores the hard signs of the whole held-out split (`mapper.metrics`) for the mapper
and, on the same pairs, for the SimHash baseline (`simhash/...`).
"""

from __future__ import annotations

import math
from typing import Any

import lightning as L
import torch

from mapper import losses
from mapper.metrics import compare_to_simhash
from watermark.models.semantic_mapper import MapperConfig, SemanticMapper


class MapperSystem(L.LightningModule):
    """Trains the Semantic Mapping Model.

    Every argument is keyword-only and is a hyper-parameter shared with `SentenceMapperSystem`,
    which takes them through ``**shared`` (declare a common one here, and only here).

    Args:
        input_dim: embedding width (linked to the data module's embedder by the CLI).
        hidden_dim: hidden width of the mapper.
        output_dim: D, number of output dimensions (green-list bits per context).
        num_blocks: residual blocks in the mapper.
        embedder: embedder name, recorded in the exported config (linked from the data module).
        w_distance: weight of the distance-preservation term.
        w_sentence: weight of the per-sentence sign-balance term.
        w_dimension: weight of the per-dimension sign-balance term.
        w_contrastive: weight of the augmentation (contrastive) term.
        w_decorrelation: weight of the optional decorrelation term (not in the paper; 0 = off).
        sharpness: k of the soft sign tanh(k * v / rms(v)) used by the balance terms.
        new_lower: L' of the distance rescaling.
        new_upper: U' of the distance rescaling.
        distance_upper: U of the rescaling; None measures it on the training embeddings.
        optimizer: "adamw" or "sgd".
        lr: peak learning rate.
        weight_decay: weight decay.
        momentum: SGD momentum.
        warmup_steps: linear warm-up steps before the cosine decay.
        simhash_seed: seed of the SimHash baseline projection.
    """

    def __init__(
        self,
        *,
        input_dim: int = 384,
        hidden_dim: int = 1024,
        output_dim: int = 1024,
        num_blocks: int = 2,
        embedder: str = "minilm",
        w_distance: float = 1.0,
        w_sentence: float = 1.0,
        w_dimension: float = 1.0,
        w_contrastive: float = 1.0,
        w_decorrelation: float = 0.0,
        sharpness: float = 10.0,
        new_lower: float = -2.0,
        new_upper: float = 4.0,
        distance_upper: float | None = None,
        optimizer: str = "adamw",
        lr: float = 1e-3,
        weight_decay: float = 0.0,
        momentum: float = 0.9,
        warmup_steps: int = 100,
        simhash_seed: int = 0,
    ) -> None:
        super().__init__()
        if optimizer not in ("adamw", "sgd"):
            raise ValueError(f"optimizer must be 'adamw' or 'sgd', got '{optimizer}'")
        self.save_hyperparameters()
        config = MapperConfig(input_dim, hidden_dim, output_dim, num_blocks, embedder)
        self.mapper = SemanticMapper(config)
        self.register_buffer("distance_upper", torch.tensor(distance_upper or 0.0))
        self.latest_metrics: dict[str, float] = {}

    def setup(self, stage: str) -> None:
        """Takes embedding centre and U from the data module (a resumed checkpoint overrides)."""
        dm = getattr(self.trainer, "datamodule", None)
        if dm is None or getattr(dm, "emb", None) is None:
            return
        if dm.embedding_dim != self.hparams.input_dim:
            raise ValueError(
                f"mapper input_dim {self.hparams.input_dim} does not match embedder "
                f"'{dm.embedder}' width {dm.embedding_dim}: set --model.input_dim "
                f"{dm.embedding_dim} or use the embedder the mapper was built for"
            )
        self.mapper.center.copy_(dm.center)
        if self.hparams.distance_upper is None:
            self.distance_upper.fill_(dm.distance_upper)

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        """(B, input_dim) embeddings -> (B, output_dim) scores."""
        return self.mapper(u)

    def loss_terms(
        self, batch: dict[str, torch.Tensor]
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """Computes every loss term of one batch; returns (terms, v of all texts)."""
        hp = self.hparams
        u, u_aug, owner = batch["u"], batch["u_aug"], batch["owner"]
        all_u = torch.cat([u, u_aug])
        all_v = self.mapper(all_u)
        v, v_aug = all_v[: len(u)], all_v[len(u) :]
        s = losses.soft_sign(all_v, hp.sharpness)
        upper = float(self.distance_upper) or 2.0
        terms = {
            "distance": losses.distance_loss(all_u, all_v, upper, 0.0, hp.new_lower, hp.new_upper),
            "sentence": losses.sentence_balance_loss(s),
            "dimension": losses.dimension_balance_loss(s),
            "contrastive": losses.contrastive_loss(v, v_aug, owner),
            "decorrelation": losses.decorrelation_loss(s[: len(u)]),
        }
        return terms, all_v

    def weights(self) -> dict[str, float]:
        """The weight of each loss term, by name."""
        hp = self.hparams
        return {
            "distance": hp.w_distance,
            "sentence": hp.w_sentence,
            "dimension": hp.w_dimension,
            "contrastive": hp.w_contrastive,
            "decorrelation": hp.w_decorrelation,
        }

    def _total(self, terms: dict[str, torch.Tensor]) -> torch.Tensor:
        weights = self.weights()
        return sum(weights[k] * t for k, t in terms.items())

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        terms, all_v = self.loss_terms(batch)
        loss = self._total(terms)
        if not torch.isfinite(loss):
            bad = [k for k, t in terms.items() if not torch.isfinite(t)]
            raise FloatingPointError(
                f"loss is {loss.item()} at step {self.global_step} (non-finite terms: {bad}); "
                "lower --model.lr, check the embeddings for NaN (delete the embedding cache), "
                "and resume from the last good checkpoint with --ckpt_path last"
            )
        bs = len(all_v)
        self.log("train/loss", loss, prog_bar=True, batch_size=bs)
        for k, t in terms.items():
            self.log(f"train/{k}", t, batch_size=bs)
        hard = (all_v > 0).float()
        self.log("train/hard_sentence_balance", (hard.mean(1) - 0.5).abs().mean(), batch_size=bs)
        self.log("train/hard_dimension_balance", (hard.mean(0) - 0.5).abs().mean(), batch_size=bs)
        return loss

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        terms, all_v = self.loss_terms(batch)
        bs = len(all_v)
        self.log("val/loss", self._total(terms), prog_bar=True, batch_size=bs, sync_dist=True)
        for k, t in terms.items():
            self.log(f"val/{k}", t, batch_size=bs, sync_dist=True)

    @torch.no_grad()
    def on_validation_epoch_end(self) -> None:
        """Scores hard signs of the whole validation split; identical on every process."""
        dm = getattr(self.trainer, "datamodule", None)
        ev = getattr(dm, "val_eval", None)
        if ev is None:
            return
        both = compare_to_simhash(
            self.mapper, ev.emb, ev.originals, ev.pairs, self.hparams.simhash_seed
        )
        self.latest_metrics = {
            **{f"val/{k}": v for k, v in both["mapper"].items()},
            **{f"simhash/{k}": v for k, v in both["simhash"].items()},
        }
        for k, v in self.latest_metrics.items():
            self.log(k, v, prog_bar=k in ("val/agree_paraphrase", "val/spearman"))

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        checkpoint["mapper_metrics"] = dict(self.latest_metrics)

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        self.latest_metrics = dict(checkpoint.get("mapper_metrics", {}))

    def param_groups(self) -> list[dict[str, Any]]:
        """The optimiser's parameter groups (one, at ``lr``; a subclass may add its own)."""
        return [{"params": [p for p in self.parameters() if p.requires_grad]}]

    def configure_optimizers(self) -> dict[str, Any]:
        hp = self.hparams
        if hp.optimizer == "sgd":
            opt = torch.optim.SGD(
                self.param_groups(), lr=hp.lr, momentum=hp.momentum, weight_decay=hp.weight_decay
            )
        else:
            opt = torch.optim.AdamW(self.param_groups(), lr=hp.lr, weight_decay=hp.weight_decay)
        total = max(1, int(self.trainer.estimated_stepping_batches))
        warm = min(hp.warmup_steps, total // 2)

        def schedule(step: int) -> float:
            if step < warm:
                return (step + 1) / warm
            progress = (step - warm) / max(1, total - warm)
            return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))

        sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}
