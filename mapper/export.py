"""Export a trained mapper as `model.safetensors` + `config.json` (what the watermark side loads).

Usage: `python -m mapper.export CHECKPOINT.ckpt OUT_DIR` for any Lightning checkpoint of
`MapperSystem`; `python -m mapper.train` calls `export_system` itself at the end of training.
The checkpoint is read with `weights_only=True` (its hyper-parameters are plain values).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import sys
from pathlib import Path
from typing import Any

import torch

from watermark.models.semantic_mapper import MapperConfig, SemanticMapper

HPARAM_KEYS_FOR_EXPORT = (
    "w_stability",
    "w_spread",
    "w_distance",
    "w_sentence",
    "w_dimension",
    "w_contrastive",
    "w_decorrelation",
    "sharpness",
    "new_lower",
    "new_upper",
    "optimizer",
    "lr",
)
DATA_KEYS = (
    "corpus",
    "embedder",
    "aug_kinds",
    "max_train_sentences",
    "val_pairs",
    "pair_seed",
    "rewrites",
    "pools",
    "min_similarity",
    "min_facts",
    "corpus_pairs",
    "max_corpus_sentences",
)
VERSIONED = ("torch", "lightning", "transformers", "sentence-transformers")


def package_versions() -> dict[str, str]:
    """Versions of the packages that produced the mapper."""
    out = {}
    for name in VERSIONED:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def data_settings(hparams: dict[str, Any]) -> dict[str, Any]:
    """The data-module settings that decide which sentences were trained and validated on."""
    return {k: hparams[k] for k in DATA_KEYS if k in hparams}


def build_mapper(
    hparams: dict[str, Any], state_dict: dict[str, torch.Tensor], extra: dict[str, Any]
) -> SemanticMapper:
    """Builds a standalone `SemanticMapper` from `MapperSystem` hyper-parameters and weights."""
    config = MapperConfig(
        input_dim=int(hparams["input_dim"]),
        hidden_dim=int(hparams["hidden_dim"]),
        output_dim=int(hparams["output_dim"]),
        num_blocks=int(hparams["num_blocks"]),
        embedder=str(hparams["embedder"]),
        extra={
            "embedder_dim": int(hparams["input_dim"]),
            "training": {k: hparams[k] for k in HPARAM_KEYS_FOR_EXPORT if k in hparams},
            "versions": package_versions(),
            **extra,
        },
    )
    mapper = SemanticMapper(config)
    prefix = "mapper."
    own = {k[len(prefix) :]: v for k, v in state_dict.items() if k.startswith(prefix)}
    mapper.load_state_dict(own, strict=True)
    return mapper.eval()


def export_checkpoint(ckpt_path: str | Path, out_dir: str | Path) -> Path:
    """Exports a `MapperSystem` Lightning checkpoint to `out_dir`; returns `out_dir`."""
    ckpt_path = Path(ckpt_path)
    if not ckpt_path.is_file():
        raise FileNotFoundError(f"checkpoint {ckpt_path} not found")
    ckpt = torch.load(ckpt_path, map_location="cpu", weights_only=True)
    if "hyper_parameters" not in ckpt or "state_dict" not in ckpt:
        raise ValueError(f"{ckpt_path} is not a Lightning checkpoint of MapperSystem")
    extra = {
        "metrics": ckpt.get("mapper_metrics", {}),
        "epoch": ckpt.get("epoch"),
        "global_step": ckpt.get("global_step"),
        "source_checkpoint": ckpt_path.name,
        "data": data_settings(dict(ckpt.get("datamodule_hyper_parameters", {}))),
    }
    mapper = build_mapper(dict(ckpt["hyper_parameters"]), ckpt["state_dict"], extra)
    return mapper.save_pretrained(out_dir)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", help="Lightning .ckpt of MapperSystem")
    parser.add_argument("out_dir", help="folder to write model.safetensors and config.json into")
    args = parser.parse_args(argv)
    out = export_checkpoint(args.checkpoint, args.out_dir)
    print(json.dumps({"exported": str(out)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
