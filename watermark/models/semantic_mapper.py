"""The Semantic Mapping Model (SM): a residual MLP from sentence embeddings to green-list scores.

The paper's appendix describes it as a feed-forward network that starts and ends with linear layers
and holds two residual blocks in the middle. `SemanticMapper` is a plain `nn.Module`; training lives
in `mapper.system`. Exported mappers are a folder with `model.safetensors` and `config.json`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from torch import nn

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"


@dataclass
class MapperConfig:
    """Shape of the mapper and what it was trained with (JSON-able fields only).

    Attributes:
        input_dim: Width of the sentence embedding fed in.
        hidden_dim: Width of the hidden layers.
        output_dim: Number of output dimensions D (expanded to the vocabulary by a token map).
        num_blocks: Number of residual blocks.
        embedder: Name of the sentence embedder (short name, hub id or folder), see `load_embedder`.
        extra: Free-form metadata (training metrics, package versions, ...).
    """

    input_dim: int = 384
    hidden_dim: int = 1024
    output_dim: int = 1024
    num_blocks: int = 2
    embedder: str = "minilm"
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("input_dim", "hidden_dim", "output_dim"):
            if int(getattr(self, name)) <= 0:
                raise ValueError(f"MapperConfig.{name} must be positive, got {getattr(self, name)}")
        if self.num_blocks < 0:
            raise ValueError(f"MapperConfig.num_blocks must be >= 0, got {self.num_blocks}")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MapperConfig:
        """Builds a config from a dict, ignoring unknown keys (they are kept under `extra`)."""
        known = {f.name for f in fields(cls)}
        extra = dict(data.get("extra", {}))
        extra.update({k: v for k, v in data.items() if k not in known})
        return cls(**{k: v for k, v in data.items() if k in known and k != "extra"}, extra=extra)


class ResidualBlock(nn.Module):
    """x + W2 GELU(W1 LayerNorm(x)): a pre-norm residual MLP block of constant width."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, dim)
        self.fc2 = nn.Linear(dim, dim)
        self.act = nn.GELU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Maps (..., dim) to (..., dim)."""
        return x + self.fc2(self.act(self.fc1(self.norm(x))))


class SemanticMapper(nn.Module):
    """Linear(input -> hidden) -> residual blocks -> Linear(hidden -> output).

    The output v is real-valued; the green list is v > 0 (see `signs`).
    """

    def __init__(self, config: MapperConfig) -> None:
        super().__init__()
        self.config = config
        self.inp = nn.Linear(config.input_dim, config.hidden_dim)
        self.blocks = nn.ModuleList(
            ResidualBlock(config.hidden_dim) for _ in range(config.num_blocks)
        )
        # Standardise every hidden feature over the data (batch norm without affine shift) and map
        # without an output bias: v then has no component shared by all sentences, so a sentence
        # whose features are small cannot fall back onto one common sign pattern. This keeps
        # unrelated sentences' signs uncorrelated and every output dimension balanced.
        self.norm = nn.BatchNorm1d(config.hidden_dim, affine=False)
        self.out = nn.Linear(config.hidden_dim, config.output_dim, bias=False)
        # Mean training embedding, subtracted before mapping (set by the training system).
        self.register_buffer("center", torch.zeros(config.input_dim), persistent=True)

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        """Maps embeddings u of shape (B, input_dim) to scores v of shape (B, output_dim)."""
        if u.shape[-1] != self.config.input_dim:
            raise ValueError(
                f"SemanticMapper expects embeddings of width {self.config.input_dim} "
                f"(embedder '{self.config.embedder}'), got width {u.shape[-1]}; use the embedder "
                "the mapper was trained with or retrain the mapper for this embedder"
            )
        h = self.inp(u.to(self.inp.weight.dtype) - self.center)
        for block in self.blocks:
            h = block(h)
        return self.out(self.norm(h))

    @torch.no_grad()
    def signs(self, u: torch.Tensor) -> torch.Tensor:
        """Green-list indicator v_hat = 1{v > 0}, bool tensor of shape (B, output_dim)."""
        return self.forward(u) > 0

    def save_pretrained(self, directory: str | Path) -> Path:
        """Writes `model.safetensors` and `config.json` into `directory` (created if needed)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().cpu().contiguous() for k, v in self.state_dict().items()}
        save_file(state, str(directory / WEIGHTS_NAME), metadata={"format": "pt"})
        (directory / CONFIG_NAME).write_text(json.dumps(asdict(self.config), indent=2) + "\n")
        return directory

    @classmethod
    def from_pretrained(cls, directory: str | Path, map_location: str = "cpu") -> SemanticMapper:
        """Loads a mapper exported by `save_pretrained`; strict about missing or mismatched files.

        Raises:
            FileNotFoundError: If the folder, `config.json` or `model.safetensors` is missing.
            ValueError: If the weights do not match the shapes in `config.json`.
        """
        directory = Path(directory)
        for name in (CONFIG_NAME, WEIGHTS_NAME):
            if not (directory / name).is_file():
                raise FileNotFoundError(
                    f"{directory / name} not found: a mapper folder needs {CONFIG_NAME} and "
                    f"{WEIGHTS_NAME} (export one with `python -m mapper.export CKPT OUT_DIR`)"
                )
        config = MapperConfig.from_dict(json.loads((directory / CONFIG_NAME).read_text()))
        model = cls(config)
        state = load_file(str(directory / WEIGHTS_NAME), device=map_location)
        expected = model.state_dict()
        missing = sorted(set(expected) - set(state))
        unexpected = sorted(set(state) - set(expected))
        wrong = [k for k in expected if k in state and state[k].shape != expected[k].shape]
        if missing or unexpected or wrong:
            raise ValueError(
                f"{directory / WEIGHTS_NAME} does not match {directory / CONFIG_NAME}: "
                f"missing={missing} unexpected={unexpected} wrong_shape={wrong}; "
                "re-export the mapper"
            )
        model.load_state_dict(state, strict=True)
        return model.eval()
