"""Command line for training the Semantic Mapping Model: `python -m mapper.train fit --config ...`.

Built on `LightningCLI`: every argument of `MapperSystem`, `MapperDataModule` and the Trainer is a
flag or a YAML key (`configs/mapper/default.yaml` holds the defaults). The mapper's input width
follows the data module's embedder. After `fit`, the final weights are exported to `--export_dir`
(`model.safetensors` + `config.json`; `runs/mapper-minilm` in the default config). It never
exports into the watermark package: the shipped mapper is key material, replaced only by
`python -m mapper.ship`. Resume an interrupted run with `--ckpt_path last`.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import torch
from lightning.pytorch.cli import LightningCLI

from mapper.datamodule import MapperDataModule
from mapper.export import build_mapper, data_settings
from mapper.system import MapperSystem
from watermark.core.paths import PACKAGE_DIR

log = logging.getLogger(__name__)


def inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` (resolved) is ``folder`` or lies under it."""
    path, folder = path.expanduser().resolve(), folder.resolve()
    return path == folder or folder in path.parents


class MapperCLI(LightningCLI):
    """LightningCLI with the embedder linked into the model and an export step after `fit`."""

    def add_arguments_to_parser(self, parser) -> None:
        parser.link_arguments("data.embedder", "model.embedder")
        parser.link_arguments("data.embedding_dim", "model.input_dim", apply_on="instantiate")
        parser.add_argument(
            "--threads",
            type=int | None,
            default=None,
            help="torch intra-op threads (the default config pins 2: float sums, and so the "
            "trained mapper, depend on the thread count)",
        )
        parser.add_argument(
            "--export_dir",
            type=str | None,
            default=None,
            help="folder to export the trained mapper to after fit (safetensors + config.json)",
        )

    def before_instantiate_classes(self) -> None:
        threads = self.config[self.subcommand].get("threads") if self.subcommand else None
        if threads:
            torch.set_num_threads(int(threads))

    def before_fit(self) -> None:
        export_dir = self.config[self.subcommand].get("export_dir")
        if export_dir and inside(Path(export_dir), PACKAGE_DIR / "checkpoints"):
            raise ValueError(
                f"--export_dir {export_dir} is inside the watermark package: the shipped mapper "
                "is key material and is replaced only by `python -m mapper.ship RUN_DIR --yes` "
                "(make ship-mapper); export to a run folder such as runs/mapper-minilm"
            )

    def after_fit(self) -> None:
        export_dir = self.config[self.subcommand].get("export_dir")
        if not export_dir or not self.trainer.is_global_zero:
            return
        if self.trainer.interrupted:
            log.warning("training was interrupted: not exporting; resume with --ckpt_path last")
            return
        system = self.model
        extra = {
            "metrics": system.latest_metrics,
            "epoch": self.trainer.current_epoch,
            "global_step": self.trainer.global_step,
            "distance_upper": float(system.distance_upper),
            "corpus": os.path.basename(str(self.datamodule.corpus)),
            "data": data_settings(dict(self.datamodule.hparams)),
        }
        mapper = build_mapper(dict(system.hparams), system.cpu().state_dict(), extra)
        out = mapper.save_pretrained(Path(export_dir))
        summary = {
            "exported": str(out),
            **{k: round(v, 4) for k, v in system.latest_metrics.items()},
        }
        print(json.dumps(summary, indent=1))


def main(args: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    MapperCLI(MapperSystem, MapperDataModule, args=args, save_config_kwargs={"overwrite": True})


if __name__ == "__main__":
    main()
