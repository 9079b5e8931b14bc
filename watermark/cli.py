"""Command line: ``python -m watermark generate|detect|show|detect-corpus``.

* ``generate``: prompts from ``--prompt`` or ``--file`` (JSONL, ``prompt`` field) -> one
  ``{"prompt", "text"}`` per prompt (the continuation only), which feeds ``detect --file``.
* ``detect``: texts from ``--text`` or ``--file`` (JSONL, ``text`` field) -> one detection result
  per text (``--per-token`` adds the per-token flags, ``--windows 128,256`` the windowed test).
* ``show``: like ``detect``, and writes an HTML page of the scored and green tokens.
* ``detect-corpus``: a whole corpus over devices and nodes (:mod:`watermark.corpus`).

JSON lines go to stdout in input order; progress and logs to stderr. Inputs are checked before a
model loads; a mistake prints one ``error:`` line and exits with status 2 (``-v``: traceback).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

logger = logging.getLogger("watermark.cli")
USAGE_ERROR = 2
EXAMPLES = {
    "generate": "python -m watermark generate --prompt 'The storm hit the coast.' > gen.jsonl",
    "detect": "python -m watermark detect --file gen.jsonl",
    "show": "python -m watermark show --file gen.jsonl --out page.html",
    "detect-corpus": "python -m watermark detect-corpus --input docs.jsonl --output scores.jsonl "
    "--devices 2 --accelerator cpu",
}


class UsageError(ValueError):
    """A mistake in the command line or its inputs."""


def _read_jsonl(path: str, field: str) -> list[dict]:
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


def _inputs(values: Sequence[str] | None, path: str | None, field: str) -> list[dict]:
    """Command-line values and file rows, as ``{field: ..., ...}`` objects in input order."""
    rows = [{field: v} for v in values or []]
    if path:
        rows.extend(_read_jsonl(path, field))
    if not rows:
        raise UsageError(f"nothing to do: give --{field} (repeatable) or --file")
    return rows


def _emit(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def _config(args: argparse.Namespace):
    """The config, checked (fields and mapper folder) before anything heavy is imported."""
    from watermark.config import as_config

    cfg = as_config(args.config)
    if getattr(args, "windows", None):
        cfg = replace(cfg, window_sizes=args.windows)  # checked again
    cfg.mapper_dir()
    return cfg


def _load(cfg, args: argparse.Namespace, with_generator: bool = False):
    from watermark.parts import DTYPES, resolve_device
    from watermark.watermark import Watermark

    device = resolve_device(args.device)
    if not with_generator:
        return Watermark.load(cfg, device=device, dtype=args.dtype), None
    from data.packaged_models import load_lm

    dtype = DTYPES[args.dtype or cfg.compute_dtype]
    model, tokenizer = load_lm(cfg.resolve_path(cfg.generator), dtype=dtype)
    model = model.to(device)
    wm = Watermark.load(cfg, tokenizer=tokenizer, generator=model, device=device, dtype=args.dtype)
    return wm, model


def cmd_generate(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    prompts = [row["prompt"] for row in _inputs(args.prompt, args.file, "prompt")]
    for n, prompt in enumerate(prompts):
        if not prompt.strip():
            raise UsageError(f"prompt {n + 1} is empty; give some text for the model to continue")
    wm, model = _load(_config(args), args, with_generator=True)
    batches = range(0, len(prompts), args.batch_size)
    for b, start in enumerate(tqdm(batches, desc="generate", unit="batch", file=sys.stderr)):
        batch = prompts[start : start + args.batch_size]
        seed = None if args.seed is None else args.seed + b
        outs = wm.generate(
            model,
            batch,
            max_new_tokens=args.max_new_tokens,
            seed=seed,
            watermark=not args.no_watermark,
            record=False,
        )
        for out in outs:
            _emit({"prompt": out.prompt, "text": out.text})
    return 0


def cmd_detect(args: argparse.Namespace) -> int:
    texts = [row["text"] for row in _inputs(args.text, args.file, "text")]
    wm, _ = _load(_config(args), args)
    for result in wm.detect(texts, progress=True):
        _emit(result.to_dict(per_token=args.per_token))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if not out.parent.is_dir():
        raise UsageError(f"--out {out}: folder {out.parent} does not exist; create it first")
    if out.is_dir():
        raise UsageError(f"--out {out} is a folder; give an .html file name")
    rows = _inputs(args.text, args.file, "text")
    cfg = _config(args)
    from watermark.page import render

    wm, _ = _load(cfg, args)
    results = wm.detect([row["text"] for row in rows], progress=True)
    page = render(
        results, prompts=[row.get("prompt") for row in rows], opening_steps=cfg.opening_steps
    )
    out.write_text(page, encoding="utf-8")
    for result in results:
        _emit(result.to_dict())
    print(f"wrote {out}", file=sys.stderr)
    return 0


def cmd_detect_corpus(args: argparse.Namespace) -> int:
    _config(args)  # checked before any process starts
    try:
        from watermark.corpus import detect_corpus
    except ImportError as err:
        raise ImportError(
            f"detect-corpus needs lightning and datasets ({err}); pip install '.[bulk]'"
        ) from err
    summary = detect_corpus(args.input, args.output, field=args.field, config=args.config,
                            accelerator=args.accelerator, devices=args.devices,
                            num_nodes=args.num_nodes, shard_size=args.shard_size,
                            dtype=args.dtype, per_token=args.per_token)  # fmt: skip
    if summary:
        _emit(summary)
    return 0


def window_list(text: str) -> list[int]:
    """argparse type: comma-separated span sizes >= 2, e.g. ``128,256``."""
    try:
        sizes = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected sizes like 128,256, got {text!r}") from None
    if not sizes or min(sizes) < 2:
        raise argparse.ArgumentTypeError(f"sizes must be >= 2, got {text!r}")
    return sizes


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one ``error:`` line and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(USAGE_ERROR, f"error: {message} (see {self.prog} --help)\n")


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Shows each option's default where it has one (not for None or False flags)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.default not in (None, False, argparse.SUPPRESS) and "%(default)" not in text:
            text += " (default: %(default)s)"
        return text


def _subparser(sub, name: str, helptext: str, func) -> argparse.ArgumentParser:
    p = sub.add_parser(
        name,
        help=helptext,
        description=helptext,
        formatter_class=HelpFormatter,
    )
    p.epilog = f"example:\n  {EXAMPLES[name]}"
    p.set_defaults(func=func)
    return p


def _device_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", default="auto", help="auto (CUDA when available), cpu, cuda, cuda:N")
    p.add_argument(
        "--dtype",
        choices=["float32", "bfloat16", "float16"],
        help="compute dtype of the models (default: the config's compute_dtype); detect with "
        "the dtype the text was generated with",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m watermark``."""
    parser = Parser(
        prog="python -m watermark",
        description=__doc__.split("\n")[0],
        epilog="examples:\n" + "\n".join(f"  {e}" for e in EXAMPLES.values()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    gen = _subparser(sub, "generate", "watermarked continuations of prompts", cmd_generate)
    gen.add_argument("--prompt", action="append", help="a prompt (repeatable)")
    gen.add_argument("--file", help="JSONL file with a 'prompt' field per line ('-' = stdin)")
    gen.add_argument("--max-new-tokens", type=positive_int, default=200, help="tokens per text")
    gen.add_argument("--seed", type=int, default=0, help="sampling seed (batch b uses seed + b)")
    gen.add_argument("--batch-size", type=positive_int, default=8, help="prompts per batch")
    gen.add_argument("--no-watermark", action="store_true", help="generate without watermark")
    gen.add_argument("--config", help="watermark config JSON (default: the shipped one)")
    _device_options(gen)

    for name, func, helptext in (
        ("detect", cmd_detect, "detect the watermark in texts"),
        ("show", cmd_show, "write an HTML page highlighting scored and green tokens"),
    ):
        p = _subparser(sub, name, helptext, func)
        p.add_argument("--text", action="append", help="a text (repeatable)")
        p.add_argument("--file", help="JSONL file with a 'text' field per line ('-' = stdin)")
        p.add_argument("--config", help="watermark config JSON (default: the shipped one)")
        _device_options(p)
        if name == "detect":
            p.add_argument("--per-token", action="store_true", help="add per-token flags")
            p.add_argument("--windows", type=window_list, help="windowed test for partly "
                           "watermarked text: span sizes in tokens, e.g. 128,256")  # fmt: skip
        else:
            p.add_argument("--out", default="watermark.html", help="HTML file to write")
    bulk = _subparser(sub, "detect-corpus", "detect a whole corpus on several devices or nodes "
                      "(Lightning), resumable", cmd_detect_corpus)  # fmt: skip
    bulk.add_argument("--input", required=True, help="JSONL or Parquet file")
    bulk.add_argument("--output", required=True, help="JSONL file, one result per input row")
    bulk.add_argument("--field", default="text", help="column holding the texts")
    bulk.add_argument("--config", help="watermark config JSON (default: the shipped one)")
    bulk.add_argument("--accelerator", default="auto", choices=["auto", "cpu", "gpu"])
    bulk.add_argument("--devices", type=positive_int, default=1, help="processes per node")
    bulk.add_argument("--num-nodes", type=positive_int, default=1, help="nodes")
    bulk.add_argument("--shard-size", type=positive_int, default=64, help="rows per shard")
    bulk.add_argument("--dtype", choices=["float32", "bfloat16", "float16"],
                      help="compute dtype (default: the config's)")  # fmt: skip
    bulk.add_argument("--per-token", action="store_true", help="add per-token flags")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (2 for a user mistake)."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as done:  # --help, or a command-line mistake already reported
        return int(done.code or 0)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    for name in ("data.packaged_models", "watermark.corpus"):  # first-use work, resumes
        logging.getLogger(name).setLevel(logging.INFO)
    try:
        return int(args.func(args))
    except (ValueError, OSError, ImportError) as err:
        if args.verbose:
            raise
        message = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        print(f"error: {message}", file=sys.stderr)
        return USAGE_ERROR
