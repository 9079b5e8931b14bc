"""Command line for training the Semantic Mapping Model: `python -m mapper.train fit --config ...`.

Built on `LightningCLI`: every argument of the LightningModule, the data module and the Trainer
is a flag or a YAML key. `configs/mapper/default.yaml` trains the token-level mapper
(`MapperSystem` on `MapperDataModule`, the defaults); `configs/mapper/sentence.yaml` names
`SentenceMapperSystem` and `SentenceDataModule` by ``class_path`` and trains the sentence layer's
mapper. `fit` may be left out: `python -m mapper.train --config configs/mapper/sentence.yaml`.
The mapper's input width follows the data module's embedder. After `fit`, the final weights are
exported to `--export_dir` (`model.safetensors` + `config.json`; `runs/mapper-minilm` in the
default config). It never exports into the watermark package: the shipped mappers are key
material, replaced only by `python -m mapper.ship`. Resume an interrupted run with
`--ckpt_path last`.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import warnings
from pathlib import Path

import torch
from lightning.pytorch.cli import LightningCLI

from mapper.export import build_mapper, data_settings
from watermark.config.paths import PACKAGE_DIR

log = logging.getLogger(__name__)


def inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` (resolved) is ``folder`` or lies under it."""
    path, folder = path.expanduser().resolve(), folder.resolve()
    return path == folder or folder in path.parents


class MapperCLI(LightningCLI):
    """LightningCLI with the embedder linked into the model and an export step after `fit`."""

    def add_arguments_to_parser(self, parser) -> None:
        parser.set_defaults(  # the token-level mapper unless a config names other classes
            {
                "model": {"class_path": "mapper.system.MapperSystem"},
                "data": {"class_path": "mapper.datamodule.MapperDataModule"},
            }
        )
        parser.link_arguments("data.init_args.embedder", "model.init_args.embedder")
        parser.link_arguments(
            "data.embedding_dim", "model.init_args.input_dim", apply_on="instantiate"
        )
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
        if hasattr(system, "export"):  # a system with more to export (the encoder)
            system.export(Path(export_dir))
        summary = {
            "exported": str(out),
            **{k: round(v, 4) for k, v in system.latest_metrics.items()},
        }
        print(json.dumps(summary, indent=1))


def main(args: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    args = list(sys.argv[1:] if args is None else args)
    if args and args[0].startswith("-") and args[0] not in ("-h", "--help"):
        args = ["fit", *args]  # `python -m mapper.train --config ...` fits
    # the command line, read here and given as args: LightningCLI would warn that it sees both
    warnings.filterwarnings("ignore", message="LightningCLI's args parameter is intended")
    MapperCLI(  # any LightningModule and data module, the token-level ones by default
        None,
        None,
        subclass_mode_model=True,
        subclass_mode_data=True,
        args=args,
        save_config_kwargs={"overwrite": True},
    )


if __name__ == "__main__":
    main()
