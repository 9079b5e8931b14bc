"""The argument parser of ``python -m watermark``: subcommands, options and argument types.

The commands themselves live in :mod:`watermark.app.cli`; a parse error prints one ``error:`` line
and exits with status 2.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from watermark.app.calibrate import LENGTHS
from watermark.app.cli_types import count, positive_int, setting, window_list
from watermark.config.sections import COMPUTE_DTYPES

USAGE_ERROR = 2
EXAMPLES = {
    "generate": "python -m watermark generate --prompt 'The storm hit the coast.' > gen.jsonl",
    "detect": "python -m watermark detect --file gen.jsonl",
    "show": "python -m watermark show --file gen.jsonl --out page.html",
    "detect-corpus": "python -m watermark detect-corpus --input docs.jsonl --output scores.jsonl "
    "--devices 2 --accelerator cpu",
    "keygen": "python -m watermark keygen --out my-config.json --key-file my.key",
    "calibrate": "python -m watermark calibrate --human human.jsonl --watermarked gen.jsonl",
    "serve": "python -m watermark serve --host 127.0.0.1 --port 8000   # then open the page at /",
}


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
    p = sub.add_parser(name, help=helptext, description=helptext, formatter_class=HelpFormatter)
    p.epilog = f"example:\n  {EXAMPLES[name]}"
    p.set_defaults(func=func)
    return p


CONFIG_HELP = (
    "watermark config: a shipped one by name (default, robust, paper, additive) or a JSON file; "
    "an existing file of that name wins (default: default)"
)


def _config_options(p: argparse.ArgumentParser, helptext: str) -> None:
    p.add_argument("--config", help=helptext)
    p.add_argument(
        "--set",
        type=setting,
        action="append",
        default=[],
        metavar="SECTION.FIELD=VALUE",
        help="change one setting of the config (repeatable; the value is JSON, else a string: "
        "--set scheme.alpha=2.5 --set detection.window_sizes=[]); a field the section or the "
        "rule does not have is refused",
    )


def _key_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--key-file",
        action="append",
        help="file whose first line is a key "
        "(repeatable: the first is the current key, the rest earlier keys)",
    )


def _device_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", default="auto", help="auto (CUDA when available), cpu, cuda, cuda:N")
    p.add_argument(
        "--dtype",
        choices=COMPUTE_DTYPES,
        help="compute dtype of the models (default: the config's compute_dtype); detect with "
        "the dtype the text was generated with",
    )


def build_parser(commands: dict[str, Callable]) -> argparse.ArgumentParser:
    """The argument parser of ``python -m watermark``; ``commands`` maps each subcommand to
    the function that runs it."""
    parser = Parser(
        prog="python -m watermark",
        description="Command line: watermarked generation, detection and keys.",
        epilog="examples:\n" + "\n".join(f"  {e}" for e in EXAMPLES.values()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    for add in (_generate, _detect_and_show, _detect_corpus, _keygen, _calibrate, _serve):
        add(sub, commands)
    return parser


def _generate(sub: argparse._SubParsersAction, commands: dict[str, Callable]) -> None:
    gen = _subparser(sub, "generate", "watermarked continuations of prompts", commands["generate"])
    gen.add_argument("--prompt", action="append", help="a prompt (repeatable)")
    gen.add_argument("--file", help="JSONL file with a 'prompt' field per line ('-' = stdin)")
    gen.add_argument("--max-new-tokens", type=positive_int, default=200, help="tokens per text")
    gen.add_argument("--seed", type=int, default=0, help="sampling seed (batch b uses seed + b)")
    gen.add_argument("--batch-size", type=positive_int, default=8, help="prompts per batch")
    gen.add_argument("--no-watermark", action="store_true", help="generate without watermark")
    _config_options(gen, CONFIG_HELP)
    _key_option(gen)
    _device_options(gen)


def _detect_and_show(sub: argparse._SubParsersAction, commands: dict[str, Callable]) -> None:
    for name, func, helptext in (
        ("detect", commands["detect"], "detect the watermark in texts"),
        ("show", commands["show"], "write an HTML page highlighting scored and green tokens"),
    ):
        p = _subparser(sub, name, helptext, func)
        p.add_argument("--text", action="append", help="a text (repeatable)")
        p.add_argument("--file", help="JSONL file with a 'text' field per line ('-' = stdin)")
        _config_options(p, CONFIG_HELP)
        _key_option(p)
        _device_options(p)
        if name == "detect":
            p.add_argument("--per-token", action="store_true", help="add per-token flags")
            p.add_argument(
                "--windows",
                type=window_list,
                help="windowed test for partly "
                "watermarked text: span sizes in tokens (default: the config's, "
                "128,256 shipped); off: the whole-text test only",
            )
        else:
            p.add_argument("--out", default="watermark.html", help="HTML file to write")


def _detect_corpus(sub: argparse._SubParsersAction, commands: dict[str, Callable]) -> None:
    bulk = _subparser(
        sub,
        "detect-corpus",
        "detect a whole corpus on several devices or nodes (Lightning), resumable",
        commands["detect-corpus"],
    )
    bulk.add_argument("--input", required=True, help="JSONL or Parquet file")
    bulk.add_argument("--output", required=True, help="JSONL file, one result per input row")
    bulk.add_argument("--field", default="text", help="column holding the texts")
    _config_options(bulk, CONFIG_HELP)
    bulk.add_argument("--accelerator", default="auto", choices=["auto", "cpu", "gpu"])
    bulk.add_argument("--devices", type=positive_int, default=1, help="processes per node")
    bulk.add_argument("--num-nodes", type=positive_int, default=1, help="nodes")
    bulk.add_argument("--shard-size", type=positive_int, default=64, help="rows per shard")
    bulk.add_argument(
        "--dtype", choices=COMPUTE_DTYPES, help="compute dtype (default: the config's)"
    )
    bulk.add_argument("--per-token", action="store_true", help="add per-token flags")
    bulk.add_argument(
        "--workers",
        type=count,
        default=0,
        help="processes per device assembling results from the models' outputs "
        "(0: none; on a GPU the host's work bounds throughput)",
    )
    bulk.add_argument(
        "--processes-per-gpu",
        type=positive_int,
        default=1,
        help="detection processes sharing each GPU, so that their host work overlaps",
    )


def _keygen(sub: argparse._SubParsersAction, commands: dict[str, Callable]) -> None:
    keygen = _subparser(
        sub, "keygen", "write a config with a fresh secret key (mode 0600)", commands["keygen"]
    )
    keygen.add_argument("--out", required=True, help="config JSON to write")
    _config_options(keygen, "config to start from: " + CONFIG_HELP)
    keygen.add_argument(
        "--key-file",
        help="write the key to this file (mode 0600) and name it "
        "in the config instead of the key itself",
    )
    keygen.add_argument(
        "--rotate",
        action="store_true",
        help="keep the starting config's keys "
        "as old_keys, so detection still finds texts made under them",
    )
    keygen.add_argument("--force", action="store_true", help="overwrite existing files")


def _calibrate(sub: argparse._SubParsersAction, commands: dict[str, Callable]) -> None:
    cal = _subparser(
        sub,
        "calibrate",
        "FPR and TPR by length on your own human and watermarked texts",
        commands["calibrate"],
    )
    cal.add_argument("--human", required=True, help="JSONL of unwatermarked texts ('text')")
    cal.add_argument("--watermarked", help="JSONL of watermarked texts ('text')")
    cal.add_argument(
        "--lengths", type=window_list, default=list(LENGTHS), help="length bins in generator tokens"
    )
    cal.add_argument(
        "--expect-key",
        type=int,
        default=0,
        help="index of the key the watermarked texts were made with (0: key; k: old_keys[k-1])",
    )
    cal.add_argument(
        "--human-by-length", action="store_true", help="also cut the human texts to each length bin"
    )
    _config_options(cal, CONFIG_HELP)
    _key_option(cal)
    _device_options(cal)


def _serve(sub: argparse._SubParsersAction, commands: dict[str, Callable]) -> None:
    srv = _subparser(
        sub,
        "serve",
        "detection over HTTP: a JSON API and a page (needs the serve extra)",
        commands["serve"],
    )
    _config_options(srv, CONFIG_HELP)
    _key_option(srv)
    _device_options(srv)
    srv.add_argument(
        "--windows",
        type=window_list,
        help="default windowed-test span sizes "
        "(default: the config's); off: the whole-text test only",
    )
    srv.add_argument("--host", default="127.0.0.1", help="address to listen on")
    srv.add_argument("--port", type=positive_int, default=8000, help="port to listen on")
    srv.add_argument(
        "--max-batch",
        type=positive_int,
        help="texts per detector call (default: 8 on a CPU, 256 on an accelerator)",
    )
    srv.add_argument(
        "--max-queue",
        type=positive_int,
        default=256,
        help="texts waiting for the detector; past it requests get 503",
    )
    srv.add_argument("--max-texts", type=positive_int, default=64, help="texts per request")
    srv.add_argument(
        "--max-chars", type=positive_int, default=20_000, help="characters per text (longer: 413)"
    )
    srv.add_argument(
        "--max-work",
        type=positive_int,
        default=256 * 512 * 3,
        help="queued work (tokens x tests) past which requests get 503",
    )
    srv.add_argument(
        "--tokens-file",
        help="admit only the clients listed here (NAME TOKEN "
        "[texts_per_minute=N] [chars_per_day=N] per line, mode 600; SIGHUP "
        "re-reads it)",
    )
    srv.add_argument(
        "--audit-log",
        help="append the audit log (one JSON line per request, "
        "no texts or tokens) to this file instead of stderr",
    )
    srv.add_argument(
        "--insecure-no-auth",
        action="store_true",
        help="allow a non-loopback "
        "--host without --tokens-file: anyone who reaches it can use the key as an "
        "oracle",
    )
