"""The command line's inputs: prompts and texts from arguments or JSONL files, the config (with
``--key-file`` and ``--windows``), the models, and the JSON lines it prints.

Inputs are checked before a model loads; a mistake raises :class:`UsageError` with one line
that says what to fix.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from watermark.base import UserError


class UsageError(UserError):
    """A mistake in the command line or its inputs."""


def read_jsonl(path: str, field: str) -> list[dict]:
    """The objects of a JSONL file (``-``: stdin) that must each have ``field``."""
    name = "<stdin>" if path == "-" else path
    try:
        raw = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except FileNotFoundError:
        raise UsageError(f"--file {path}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"--file {path} is a folder; give a JSONL file") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(
            f"--file {path} is not UTF-8 text (a binary file?); give a JSONL file with one "
            f"{{{field!r}: ...}} object per line"
        ) from None
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as err:
            raise UsageError(
                f"{name}:{n}: not valid JSON ({err.msg}); each line must be an object with a "
                f"{field!r} field"
            ) from None
        if not isinstance(obj, dict) or not isinstance(obj.get(field), str):
            raise UsageError(f"{name}:{n}: expected a JSON object with a string {field!r} field")
        rows.append(obj)
    return rows


def inputs(values: Sequence[str] | None, path: str | None, field: str) -> list[dict]:
    """Command-line values and file rows, as ``{field: ..., ...}`` objects in input order."""
    rows = [{field: v} for v in values or []]
    if path:
        rows.extend(read_jsonl(path, field))
    if not rows:
        raise UsageError(f"nothing to do: give --{field} (repeatable) or --file")
    return rows


def emit(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def base_config(args: argparse.Namespace):
    """The config of ``--config`` with the ``--set`` changes, checked again."""
    from watermark.config.watermark_config import as_config

    cfg = as_config(args.config)
    return cfg.with_settings(dict(args.set)) if getattr(args, "set", None) else cfg


def read_config(args: argparse.Namespace):
    """The config, checked (fields and mapper folder) before anything heavy is imported."""
    cfg = base_config(args)
    if getattr(args, "key_file", None):
        refs = ["file:" + str(Path(f).expanduser().resolve()) for f in args.key_file]
        cfg = cfg.evolve(key=refs[0], old_keys=refs[1:])
    cfg.secret_keys()  # an unreadable key file or unset variable is reported now
    if getattr(args, "windows", None) is not None:
        cfg = cfg.evolve(window_sizes=args.windows)  # checked again
    cfg.mapper_dir()
    return cfg


def load(cfg, args: argparse.Namespace, with_generator: bool = False):
    from watermark.api import Watermark
    from watermark.models.devices import resolve_device, torch_dtype

    device = resolve_device(args.device)
    if not with_generator:
        return Watermark.load(cfg, device=device, dtype=args.dtype), None
    from watermark.models.loaders import load_lm

    dtype = torch_dtype(args.dtype or cfg.runtime.compute_dtype)
    model, tokenizer = load_lm(cfg.resolve_path(cfg.models.generator), dtype=dtype)
    model = model.to(device)
    wm = Watermark.load(cfg, tokenizer=tokenizer, generator=model, device=device, dtype=args.dtype)
    return wm, model
