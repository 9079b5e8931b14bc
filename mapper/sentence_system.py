"""`SentenceMapperSystem`: the LightningModule that trains a mapper for the sentence layer's key.

The same residual `SemanticMapper` and the same optimiser as `MapperSystem`; its loss is made
for a key read from whole sentences (soft signs s = tanh(k v / rms(v)) throughout):

    w_stability * stability (a rewrite keeps its signs, with a margin: 1 - mean s_a s_b)
  + w_spread * spread (a prefix's candidates split their signs: mean over pools and outputs of
    the squared mean soft sign)
  + w_sentence * per-sentence balance + w_dimension * per-output balance (the paper's)
  + w_distance * distance preservation (the paper's) + w_contrastive * the distance of a
    rewrite to its sentence (the paper's augmentation term, on RMS-normalised outputs)
  + w_decorrelation * decorrelation of the outputs over human sentences.

Every term is logged on the validation split, and at each epoch's end the key-space metrics of
`mapper.sentence_metrics` on the whole val split: sign agreement under each kind of rewrite (all
outputs, keyed outputs, by margin bin), the kept candidate's hit rate and score among a pool's
candidates, the pools' lean, and the agreement of unrelated sentences.
"""

from __future__ import annotations

from typing import Any

import torch

from mapper import losses
from mapper.sentence_metrics import (
    keys,
    pool_spread,
    rewrite_agreement,
    text_lean,
    unrelated_agreement,
)
from mapper.system import MapperSystem
from watermark.config.paths import resolve_path
from watermark.models.semantic_mapper import SemanticMapper


class SentenceMapperSystem(MapperSystem):
    """Trains the sentence layer's mapper (module docstring) with `MapperSystem`'s arguments.

    Its own arguments are below. Every other one is a hyper-parameter of `MapperSystem`, passed on
    by keyword through ``**shared`` with its default there: declared once, the same CLI and YAML
    keys in both systems.

    Args:
        w_stability: weight of the stability term.
        w_spread: weight of the pool-spread term.
        metric_keys: random keys the epoch-end metrics average over.
        init_from: an exported mapper folder to start from (e.g. the token level's shipped
            ``checkpoints/mapper-minilm``); its sizes must be these.
        **shared: `MapperSystem`'s keyword arguments (sizes, the shared loss weights, optimiser).
    """

    def __init__(
        self,
        *,
        w_stability: float = 1.0,
        w_spread: float = 1.0,
        metric_keys: int = 8,
        init_from: str | None = None,
        **shared: Any,
    ) -> None:
        super().__init__(**shared)  # saves every hyper-parameter, these four included
        self._eval: dict | None = None
        if init_from:  # start from an exported mapper of the same sizes (its weights, not a key)
            start = SemanticMapper.from_pretrained(resolve_path(init_from))
            self.mapper.load_state_dict(start.state_dict())

    def weights(self) -> dict[str, float]:
        hp = self.hparams
        return {**super().weights(), "stability": hp.w_stability, "spread": hp.w_spread}

    def loss_terms(
        self, batch: dict[str, torch.Tensor]
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """Every loss term of one step (pools, rewrite pairs, human sentences); returns (terms,
        v of all rows)."""
        hp = self.hparams
        parts = [batch["u_pool"], batch["u_a"], batch["u_b"], batch["u"]]
        all_v = self.mapper(torch.cat(parts))
        v_pool, v_a, v_b, v = all_v.split([len(p) for p in parts])
        s_pool, s_a, s_b, s = (losses.soft_sign(x, hp.sharpness) for x in (v_pool, v_a, v_b, v))
        seen = torch.cat([s_pool, s_a, s])  # the sentences the layer reads, once each
        rms = lambda x: x / x.pow(2).mean(-1, keepdim=True).clamp_min(1e-12).sqrt()  # noqa: E731
        upper = float(self.distance_upper) or 2.0
        terms = {
            "stability": losses.stability_loss(s_a, s_b),
            "spread": losses.pool_spread_loss(s_pool, batch["pool"]),
            "sentence": losses.sentence_balance_loss(seen),
            "dimension": losses.dimension_balance_loss(seen),
            "distance": losses.distance_loss(batch["u"], v, upper, 0.0, hp.new_lower, hp.new_upper),
            "contrastive": losses.contrastive_loss(rms(v_a), rms(v_b), torch.arange(len(v_a))),
            "decorrelation": losses.decorrelation_loss(s),
        }
        return terms, all_v

    @torch.no_grad()
    def on_validation_epoch_end(self) -> None:
        """The key-space metrics of the whole val split (module docstring)."""
        dm = getattr(self.trainer, "datamodule", None)
        if dm is None or getattr(dm, "emb", None) is None:
            return
        if self._eval is None:
            self._eval = dm.eval_set("val")
        self.latest_metrics = key_space_metrics(self.mapper, self._eval, self.hparams.metric_keys)
        for k, v in self.latest_metrics.items():
            self.log(k, v, prog_bar=k in ("val/agree_forced_keyed", "val/spread_hit_rate"))


@torch.no_grad()
def key_space_metrics(mapper: torch.nn.Module, found: dict, count: int = 8) -> dict[str, float]:
    """``val/...`` metrics of a mapper on an eval set (`SentenceDataModule.eval_set`)."""
    was = mapper.training
    mapper.eval()
    device = next(mapper.parameters()).device
    out_dim = int(mapper.config.output_dim)
    run = lambda u: mapper(u.to(device)).float().cpu()  # noqa: E731
    tested, out = keys(out_dim, count), {}
    for kind, (a, b) in found["pairs"].items():
        for name, value in rewrite_agreement(run(a), run(b), tested).items():
            out[f"val/agree_{kind}_{name}"] = value
    if found["pools"]:
        spread = pool_spread([run(p) for p in found["pools"]], run(found["sentences"]), tested)
        out.update({f"val/spread_{k}": v for k, v in spread.items()})
    for k, v in unrelated_agreement(*(run(u) for u in found["unrelated"])).items():
        out[f"val/{k}"] = v
    if found.get("texts"):
        for k, v in text_lean([run(u) for u in found["texts"]], tested).items():
            out[f"val/text_{k}"] = v
    mapper.train(was)
    return {k: float(v) for k, v in out.items()}
