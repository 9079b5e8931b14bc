"""Command line: ``python -m watermark generate|detect|show``.

* ``generate``: prompts from ``--prompt`` (repeatable) or ``--file`` (JSONL objects with a
  ``prompt`` field); prints one JSON object ``{"prompt", "text"}`` per prompt (``text`` is the
  continuation only), so the output feeds ``detect --file`` directly.
* ``detect``: texts from ``--text`` (repeatable) or ``--file`` (JSONL objects with a ``text``
  field); prints one JSON object per text with ``score``, ``green_fraction``, ``num_scored``,
  ``awr``, ``z_score``, ``p_value``, ``is_watermarked`` (and more; ``--per-token`` adds the
  per-token flags).
* ``show``: like ``detect`` but writes an HTML page highlighting scored and green tokens.

All print JSON lines on stdout in input order; progress bars and logs go to stderr. Without
``--config`` the shipped default configuration is used.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

logger = logging.getLogger("watermark.cli")


def _read_jsonl(path: str, field: str) -> Iterator[str]:
    handle = sys.stdin if path == "-" else open(path, encoding="utf-8")  # noqa: SIM115
    with handle:
        for n, line in enumerate(handle, 1):
            if not line.strip():
                continue
            obj = json.loads(line)
            if not isinstance(obj, dict) or field not in obj:
                raise SystemExit(f"{path}:{n}: expected a JSON object with a {field!r} field")
            yield str(obj[field])


def _inputs(values: Sequence[str] | None, path: str | None, field: str) -> list[str]:
    items = list(values or [])
    if path:
        items.extend(_read_jsonl(path, field))
    if not items:
        raise SystemExit(f"nothing to do: give --{field} (repeatable) or --file")
    return items


def _emit(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def _load(args: argparse.Namespace, with_generator: bool = False):
    from watermark.config import as_config
    from watermark.watermark import Watermark

    cfg = as_config(args.config)
    if not with_generator:
        return Watermark.load(cfg), None
    from data.packaged_models import load_lm

    model, tokenizer = load_lm(cfg.resolve_path(cfg.generator))
    return Watermark.load(cfg, tokenizer=tokenizer, generator=model), model


def cmd_generate(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    prompts = _inputs(args.prompt, args.file, "prompt")
    wm, model = _load(args, with_generator=True)
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
    texts = _inputs(args.text, args.file, "text")
    wm, _ = _load(args)
    for result in wm.detect(texts, progress=True):
        _emit(result.to_dict(per_token=args.per_token))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from watermark.page import render

    texts = _inputs(args.text, args.file, "text")
    wm, _ = _load(args)
    results = wm.detect(texts, progress=True)
    out = Path(args.out)
    out.write_text(render(results), encoding="utf-8")
    for result in results:
        _emit(result.to_dict())
    print(f"wrote {out}", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m watermark``."""
    parser = argparse.ArgumentParser(prog="python -m watermark", description=__doc__.split("\n")[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    sub = parser.add_subparsers(dest="command", required=True)

    gen = sub.add_parser("generate", help="watermarked continuations of prompts")
    gen.add_argument("--prompt", action="append", help="a prompt (repeatable)")
    gen.add_argument("--file", help="JSONL file with a 'prompt' field per line ('-' = stdin)")
    gen.add_argument("--max-new-tokens", type=int, default=200)
    gen.add_argument("--seed", type=int, default=0, help="sampling seed (batch b uses seed + b)")
    gen.add_argument("--batch-size", type=int, default=8)
    gen.add_argument("--no-watermark", action="store_true", help="generate without watermark")
    gen.add_argument("--config", help="watermark config JSON (default: the shipped one)")
    gen.set_defaults(func=cmd_generate)

    for name, func, helptext in (
        ("detect", cmd_detect, "detect the watermark in texts"),
        ("show", cmd_show, "write an HTML page highlighting scored and green tokens"),
    ):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("--text", action="append", help="a text (repeatable)")
        p.add_argument("--file", help="JSONL file with a 'text' field per line ('-' = stdin)")
        p.add_argument("--config", help="watermark config JSON (default: the shipped one)")
        if name == "detect":
            p.add_argument("--per-token", action="store_true", help="add per-token flags")
        else:
            p.add_argument("--out", default="watermark.html", help="HTML file to write")
        p.set_defaults(func=func)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    return int(args.func(args))
