"""Bulk detection over a corpus with Lightning: ``python -m watermark detect-corpus``.

The input (JSONL or Parquet, read with ``datasets``) is cut into shards of ``shard_size`` rows
in input order. ``Trainer.predict`` hands shards to the processes (DDP over devices and nodes
comes from Lightning); each finished shard is written atomically to
``OUTPUT.parts/shard-NNNNNN.jsonl`` by a prediction writer, so a run that is killed resumes
without redoing finished shards. When every shard is done, rank 0 joins them into ``OUTPUT``
(one JSON object per input row, in input order, the same fields and values as ``detect``) and
removes the parts folder.

On a GPU one process is bound by the host's work (decoding, tokenizing, assembling results),
not by the GPU: ``processes_per_gpu`` K > 1 runs K processes per GPU (Lightning's CPU processes,
each with its models on its share of the node's GPUs), so the host work of K shards overlaps.

Multi-node: start the same command on every node with ``--num-nodes N --devices D`` and the
usual torch.distributed variables (``MASTER_ADDR``, ``MASTER_PORT``, ``NODE_RANK``), e.g. under
SLURM or ``torchrun``; the parts folder must be on a file system all nodes share.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import lightning as L
import torch
from lightning.pytorch.callbacks import BasePredictionWriter
from torch.utils.data import DataLoader, Dataset

from watermark.base import UserError
from watermark.config.watermark_config import WatermarkConfig

logger = logging.getLogger(__name__)


def read_corpus(path: str, field: str) -> object:
    """The input as a ``datasets.Dataset``, checked to have a string ``field``."""
    from datasets import load_dataset

    if not Path(path).is_file():
        raise FileNotFoundError(f"--input {path}: no such file")
    kind = "parquet" if path.endswith(".parquet") else "json"
    try:
        data = load_dataset(kind, data_files=path, split="train")
    except Exception as err:  # datasets raises many types for unreadable files
        raise UserError(f"--input {path}: cannot read it as {kind.upper()} ({err})") from err
    if field not in data.column_names:
        raise UserError(f"--input {path}: no {field!r} column (has {data.column_names})")
    return data


class Shards(Dataset):
    """Shards (``{"shard": i, "texts": [...]}``) of a dataset column, only the pending ones."""

    def __init__(self, data: object, field: str, shard_size: int, pending: list[int]) -> None:
        self.data, self.field, self.size, self.pending = data, field, shard_size, pending

    def __len__(self) -> int:
        return len(self.pending)

    def __getitem__(self, i: int) -> dict:
        shard = self.pending[i]
        rows = self.data[shard * self.size : (shard + 1) * self.size][self.field]
        return {"shard": shard, "texts": ["" if t is None else str(t) for t in rows]}


class CorpusDataModule(L.LightningDataModule):
    """The input corpus as shards; finished shards (their part files) are left out."""

    def __init__(self, path: str, field: str, parts: Path, shard_size: int) -> None:
        super().__init__()
        self.path, self.field, self.parts, self.shard_size = path, field, parts, shard_size
        self.data = read_corpus(path, field)
        self.num_shards = -(-len(self.data) // shard_size)
        self.pending: list[int] = []

    def setup(self, stage: str) -> None:
        done = {i for i in range(self.num_shards) if part_file(self.parts, i).is_file()}
        self.pending = [i for i in range(self.num_shards) if i not in done]
        if done:
            logger.info("resuming: %d of %d shards already done", len(done), self.num_shards)
        if self.trainer is not None:
            world = self.trainer.world_size
            if 0 < len(self.pending) < world:  # every rank needs a shard; repeats write the same
                self.pending += self.pending[-1:] * (world - len(self.pending))
            self.trainer.strategy.barrier()  # every rank has listed the parts before any writes

    def predict_dataloader(self) -> DataLoader:
        shards = Shards(self.data, self.field, self.shard_size, self.pending)
        return DataLoader(shards, batch_size=1, collate_fn=lambda items: items[0])


def placement(
    accelerator: str, devices: int, processes_per_gpu: int, cuda: bool
) -> tuple[str, int, int]:
    """``(Lightning accelerator, processes per node, GPUs shared)``: with ``processes_per_gpu``
    K > 1 the node's ``devices`` GPUs are shared by K * ``devices`` CPU processes (0 shared GPUs
    otherwise)."""
    if processes_per_gpu == 1:
        return accelerator, devices, 0
    if accelerator == "cpu" or not cuda:
        raise UserError("--processes-per-gpu needs a GPU (--accelerator gpu or auto, with CUDA)")
    return "cpu", devices * processes_per_gpu, devices


class DetectionModule(L.LightningModule):
    """Detects a shard's texts with a watermark loaded on this process's device (with
    ``shared_gpus`` > 0: GPU ``local rank % shared_gpus``, shared with other processes)."""

    def __init__(
        self,
        config: WatermarkConfig | str | None,
        dtype: str | None,
        per_token: bool,
        workers: int = 0,
        shared_gpus: int = 0,
    ) -> None:
        super().__init__()
        self.wm_config, self.compute_dtype, self.per_token = config, dtype, per_token
        self.workers, self.shared_gpus = workers, shared_gpus
        self.wm = None

    def setup(self, stage: str) -> None:
        from watermark.api import Watermark

        device = self.trainer.strategy.root_device
        if self.shared_gpus:
            device = torch.device("cuda", self.trainer.local_rank % self.shared_gpus)
        self.wm = Watermark.load(self.wm_config, device=device, dtype=self.compute_dtype)

    def predict_step(self, batch: dict, batch_idx: int) -> dict:
        results = self.wm.detect(batch["texts"], workers=self.workers)
        rows = [r.to_dict(per_token=self.per_token) for r in results]
        return {"shard": batch["shard"], "rows": rows}


class ShardWriter(BasePredictionWriter):
    """Writes each finished shard to its part file (atomically)."""

    def __init__(self, parts: Path) -> None:
        super().__init__(write_interval="batch")
        self.parts = parts

    def write_on_batch_end(
        self, trainer, pl_module, prediction, batch_indices, batch, batch_idx, dataloader_idx=0
    ) -> None:
        path = part_file(self.parts, prediction["shard"])
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with tmp.open("w", encoding="utf-8") as f:
            for row in prediction["rows"]:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        os.replace(tmp, path)


def part_file(parts: Path, shard: int) -> Path:
    """The part file of one shard."""
    return parts / f"shard-{shard:06d}.jsonl"


def join_parts(parts: Path, num_shards: int, output: Path) -> None:
    """Concatenates every shard's part file into ``output`` (atomically) and removes them."""
    missing = [i for i in range(num_shards) if not part_file(parts, i).is_file()]
    if missing:
        raise RuntimeError(f"shards {missing[:5]} were not written; run the command again")
    tmp = output.with_name(f".{output.name}.tmp")
    with tmp.open("w", encoding="utf-8") as out:
        for i in range(num_shards):
            out.write(part_file(parts, i).read_text(encoding="utf-8"))
    os.replace(tmp, output)
    for leftover in parts.iterdir():  # the parts, and any half-written file of a killed run
        leftover.unlink()
    parts.rmdir()


def detect_corpus(
    input_path: str,
    output: str,
    field: str = "text",
    config: WatermarkConfig | str | None = None,
    accelerator: str = "auto",
    devices: int = 1,
    num_nodes: int = 1,
    shard_size: int = 64,
    dtype: str | None = None,
    per_token: bool = False,
    workers: int = 0,
    processes_per_gpu: int = 1,
) -> dict:
    """Runs bulk detection; returns a summary (rows, shards, output path) on rank 0.
    ``workers``: assembly processes per device (:meth:`watermark.api.Watermark.detect`);
    ``processes_per_gpu``: detection processes sharing each GPU (:func:`placement`)."""
    accelerator, processes, shared = placement(
        accelerator, devices, processes_per_gpu, torch.cuda.is_available()
    )
    out = Path(output)
    if not out.parent.is_dir():
        raise UserError(f"--output {out}: folder {out.parent} does not exist; create it first")
    parts = out.with_name(out.name + ".parts")
    parts.mkdir(exist_ok=True)
    dm = CorpusDataModule(input_path, field, parts, shard_size)
    world = processes * num_nodes
    trainer = L.Trainer(
        accelerator=accelerator,
        devices=processes,
        num_nodes=num_nodes,
        strategy="ddp" if world > 1 else "auto",
        logger=False,
        enable_checkpointing=False,
        enable_model_summary=False,
        callbacks=[ShardWriter(parts)],
    )
    torch.set_grad_enabled(False)
    module = DetectionModule(config, dtype, per_token, workers, shared)
    try:
        trainer.predict(module, datamodule=dm, return_predictions=False)
    finally:
        if module.wm is not None:
            module.wm.detector.close()
    trainer.strategy.barrier()
    if not trainer.is_global_zero:
        return {}
    join_parts(parts, dm.num_shards, out)
    return {"rows": len(dm.data), "shards": dm.num_shards, "output": str(out)}
