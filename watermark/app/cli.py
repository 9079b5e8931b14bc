"""Command line: ``python -m watermark generate|detect|show|detect-corpus|keygen|calibrate``.

* ``generate``: prompts from ``--prompt`` or ``--file`` (JSONL, ``prompt`` field) -> one
  ``{"prompt", "text", "fingerprint", "token_fingerprint", "key_id"}`` per prompt (the
  continuation, and the record of what made it), which feeds ``detect --file``.
* ``detect``: texts from ``--text`` or ``--file`` (JSONL, ``text`` field) -> one detection result
  per text (``--per-token`` adds the per-token flags, ``--windows`` sets the windowed test's span
  sizes, ``--windows off`` keeps the whole-text test only); a line with a record gets
  ``fingerprint_matches``, ``key_matches`` and, where they differ, ``mismatch`` (what differs and
  what the result means; :mod:`watermark.detect.provenance`), and a warning on stderr.
* ``show``: like ``detect``, and writes an HTML page of the scored and green tokens.
* ``detect-corpus``: a whole corpus over devices and nodes (:mod:`watermark.app.bulk`).
* ``keygen``: a config with a fresh secret key (:mod:`watermark.config.keys`); ``calibrate``:
  FPR and TPR by length on your own texts (:mod:`watermark.app.calibrate`).

``--key-file`` (repeatable) replaces the config's keys: the first is the current key, the others
are earlier keys that detection also tries.

JSON lines go to stdout in input order; progress and logs to stderr. Inputs are checked before a
model loads. A mistake the user can fix (bad input or arguments, an invalid config, a missing
file or package: :data:`USER_ERRORS`) prints one ``error:`` line and exits with status 2; an
internal failure (anything else) prints one ``error: internal failure`` line and exits with
status 1. ``-v`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from watermark.app.cli_inputs import (
    UsageError,
    base_config,
    emit,
    inputs,
    load,
    read_config,
    read_jsonl,
)
from watermark.app.cli_parser import USAGE_ERROR
from watermark.app.cli_parser import build_parser as _build_parser
from watermark.base import UserError

logger = logging.getLogger("watermark.app.cli")


INTERNAL_ERROR = 1
# mistakes the user can fix: our own checks, and files or packages that are missing or unreadable
USER_ERRORS = (
    UserError,
    FileNotFoundError,
    IsADirectoryError,
    NotADirectoryError,
    PermissionError,
    FileExistsError,
    ImportError,
)


def cmd_generate(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    prompts = [row["prompt"] for row in inputs(args.prompt, args.file, "prompt")]
    for n, prompt in enumerate(prompts):
        if not prompt.strip():
            raise UsageError(f"prompt {n + 1} is empty; give some text for the model to continue")
    wm, _ = load(read_config(args), args, with_generator=True)  # wm holds the generator
    batches = range(0, len(prompts), args.batch_size)
    for b, start in enumerate(tqdm(batches, desc="generate", unit="batch", file=sys.stderr)):
        batch = prompts[start : start + args.batch_size]
        seed = None if args.seed is None else args.seed + b
        outs = wm.generate(
            batch,
            max_new_tokens=args.max_new_tokens,
            seed=seed,
            watermark=not args.no_watermark,
            record=False,
        )
        for out in outs:
            emit({"prompt": out.prompt, "text": out.text, **wm.identity.record()})
    return 0


def _compare_records(rows: list[dict], identity) -> list[dict]:
    """Per input row, what its record of what made it (``fingerprint``, ``token_fingerprint``,
    ``key_id``, as ``generate`` writes them) says against this detector
    (:meth:`~watermark.detect.provenance.Identity.compare`); one warning per kind of mismatch,
    naming the lines."""
    found = [identity.compare(row) for row in rows]
    lines: dict[str, list[int]] = {}
    for n, fields in enumerate(found, 1):
        if "mismatch" in fields:
            lines.setdefault(fields["mismatch"], []).append(n)
    for message, where in lines.items():
        more = f" and {len(where) - 1} more" if len(where) > 1 else ""
        logger.warning("%d input text(s) (line %d%s): %s", len(where), where[0], more, message)
    return found


def cmd_detect(args: argparse.Namespace) -> int:
    rows = inputs(args.text, args.file, "text")
    wm, _ = load(read_config(args), args)
    found = _compare_records(rows, wm.identity)
    for result, fields in zip(wm.detect([row["text"] for row in rows], progress=True), found):
        emit({**result.to_dict(per_token=args.per_token), **fields})
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if not out.parent.is_dir():
        raise UsageError(f"--out {out}: folder {out.parent} does not exist; create it first")
    if out.is_dir():
        raise UsageError(f"--out {out} is a folder; give an .html file name")
    rows = inputs(args.text, args.file, "text")
    cfg = read_config(args)
    from watermark.app.page import render

    wm, _ = load(cfg, args)
    results = wm.detect([row["text"] for row in rows], progress=True)
    page = render(
        results, prompts=[row.get("prompt") for row in rows], opening_steps=cfg.scheme.opening_steps
    )
    out.write_text(page, encoding="utf-8")
    for result in results:
        emit(result.to_dict())
    print(f"wrote {out}", file=sys.stderr)
    return 0


def cmd_keygen(args: argparse.Namespace) -> int:
    from watermark.config.keys import fresh_key, fresh_opening_sentence, write_private
    from watermark.core.identity import pinned

    base = base_config(args)
    out = Path(args.out)
    for path in (out, Path(args.key_file) if args.key_file else None):
        if path is not None and path.exists() and not args.force:
            raise UsageError(f"{path} exists; pass --force to overwrite it")
    key, summary = fresh_key(), {"config": str(out)}
    if args.key_file:
        key_path = write_private(args.key_file, key + "\n", overwrite=args.force)
        key = "file:" + str(key_path.resolve())
        summary["key_file"] = str(key_path)
    old = [base.keys.key, *base.keys.old_keys] if args.rotate else []
    cfg = pinned(base).evolve(key=key, old_keys=old, opening_sentence=fresh_opening_sentence())
    write_private(out, json.dumps(cfg.sections(), indent=2) + "\n", overwrite=args.force)
    emit({**summary, "old_keys": len(old), "mode": "0600"})
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from watermark.app.calibrate import calibrate

    human = [row["text"] for row in read_jsonl(args.human, "text")]
    marked = (
        [row["text"] for row in read_jsonl(args.watermarked, "text")] if args.watermarked else []
    )
    if not human:
        raise UsageError(f"--human {args.human} holds no texts")
    wm, _ = load(read_config(args), args)
    rows = calibrate(
        wm, human, marked, args.lengths, args.expect_key, args.human_by_length, progress=True
    )
    for row in rows:
        emit(row)
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    try:
        from watermark.app.access import Clients, audit_to, is_loopback
        from watermark.app.service import Limits, serve
    except ImportError as err:
        raise UsageError(
            f"serve needs the serve extra ({err.name} is missing): "
            "pip install 'adaptive-watermark[serve]'"
        ) from None

    if args.audit_log and not args.tokens_file:
        raise UsageError("--audit-log needs --tokens-file (the log names the client of a request)")
    clients = Clients(args.tokens_file) if args.tokens_file else None  # checked before loading
    if clients is None and not is_loopback(args.host):
        if not args.insecure_no_auth:
            raise UsageError(
                f"--host {args.host} is not a loopback address: give --tokens-file (anyone who "
                "reaches an open service can use the secret key as an oracle), or pass "
                "--insecure-no-auth"
            )
        print(
            f"warning: serving on {args.host} without authentication: anyone who reaches it "
            "can query the secret key as an oracle",
            file=sys.stderr,
        )
    if clients is not None:
        audit_to(args.audit_log)
    wm, _ = load(read_config(args), args)
    max_batch = args.max_batch or wm.detector.default_chunk_size
    limits = Limits(
        max_batch=max_batch,
        max_queue=args.max_queue,
        max_texts=args.max_texts,
        max_chars=args.max_chars,
        max_work=args.max_work,
    )
    auth = f"{len(clients.clients)} clients" if clients else "no authentication"
    print(f"serving on http://{args.host}:{args.port}/ ({auth}; Ctrl-C stops)", file=sys.stderr)
    serve(wm, args.host, args.port, limits, clients)
    return 0


def cmd_detect_corpus(args: argparse.Namespace) -> int:
    cfg = read_config(args)  # checked before any process starts
    try:
        from watermark.app.bulk import detect_corpus
    except ImportError as err:
        raise UsageError(
            f"detect-corpus needs lightning and datasets ({err}); pip install '.[bulk]'"
        ) from err
    summary = detect_corpus(
        args.input,
        args.output,
        field=args.field,
        config=cfg,
        accelerator=args.accelerator,
        devices=args.devices,
        num_nodes=args.num_nodes,
        shard_size=args.shard_size,
        dtype=args.dtype,
        per_token=args.per_token,
        workers=args.workers,
        processes_per_gpu=args.processes_per_gpu,
    )
    if summary:
        emit(summary)
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m watermark``."""
    return _build_parser(
        {
            "generate": cmd_generate,
            "detect": cmd_detect,
            "show": cmd_show,
            "detect-corpus": cmd_detect_corpus,
            "keygen": cmd_keygen,
            "calibrate": cmd_calibrate,
            "serve": cmd_serve,
        }
    )


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (2 for a user mistake, 1 for an internal failure)."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as done:  # --help, or a command-line mistake already reported
        return int(done.code or 0)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    for name in ("watermark.models.loaders", "watermark.app.bulk"):  # first-use work, resumes
        logging.getLogger(name).setLevel(logging.INFO)
    try:
        return int(args.func(args))
    except USER_ERRORS as err:
        if args.verbose:
            raise
        print(f"error: {_first_line(err)}", file=sys.stderr)
        return USAGE_ERROR
    except Exception as err:  # a bug, or the machine (memory, disk): not the user's input
        if args.verbose:
            raise
        print(
            f"error: internal failure ({type(err).__name__}: {_first_line(err)}); run again "
            "with -v for the traceback",
            file=sys.stderr,
        )
        return INTERNAL_ERROR
