"""What a text is read with, before and after a change of the code: fingerprints, detections and
generations under every shipped config and every ``configs/watermark-*.json`` (a script).

Configs are keyed by name wherever a tree keeps them (:func:`config_name`): ``default``,
``robust``, ``paper`` and ``additive`` are the package's ``watermark/<name>_config.json`` (until
0.10 the last three were ``configs/watermark-<name>.json``), the others are
``configs/watermark-<name>.json``; so snapshots of trees of either layout compare, and so do
snapshots keyed by the old paths.

``snap OUT.json`` writes, per config, its fingerprint and the full detection result (per-token
fields included) of 20 held-out passages (the first 170 words of the first 20 held-out records
of at least 150 words); for the default, the paper's, the additive and the robust config also
the tokens and watermarked steps of 4 prompts generated together (seed 0; 200 new tokens for the
default, 100 for the paper's and the additive, 48 for the robust config) and of one prompt alone
(seed 1). ``--texts`` and ``--tokens`` make a smaller snapshot (fewer passages, the same
number of new tokens for every config); ``--configs-at REV`` reads the configs as they were at
a git revision (the shipped configs and every ``configs/watermark-*.json`` of that tree), so
that a change of a shipped config between the two snapshots does not count as a change of the code.
``compare A.json B.json`` prints one line per config and whether all of it is identical
(detections byte for byte as JSON, on the fields of A's). It is the one regression snapshot
(0.10 removed ``config_upgrade.py``, which detected held-out passages under the same configs
without the generations).

    python -m research.refactor_snapshot snap runs/snap/before.json   # on the old tree
    python -m research.refactor_snapshot snap runs/snap/after.json    # on the new one
    python -m research.refactor_snapshot compare runs/snap/before.json runs/snap/after.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from research.common import ROOT, Load
from watermark.api import Watermark
from watermark.models.loaders import load_lm

PROMPTS = [
    "Heavy rain flooded the north. Crews worked overnight.",
    "The council met on Tuesday to discuss the budget.",
    "Scientists have found a new species of frog in the rainforest.",
    "The match ended in a draw after extra time.",
]
GENERATED = {"default": 200, "paper": 100, "additive": 100, "robust": 48}  # config -> new tokens
SHIPPED_FILE = re.compile(r"^watermark/(\w+)_config\.json$")
REPOSITORY_FILE = re.compile(r"^configs/watermark-(.+)\.json$")


def config_name(path: str) -> str | None:
    """A config's name in a snapshot, from its path in either layout (or a snapshot's key):
    ``watermark/robust_config.json`` and ``configs/watermark-robust.json`` are both
    ``robust``; None for a path that holds no watermark config."""
    if path in ("default", *GENERATED):
        return path
    found = SHIPPED_FILE.match(path) or REPOSITORY_FILE.match(path)
    return found.group(1) if found else None


def tree_configs() -> dict[str, Path]:
    """``{name: file}`` of every config of the working tree."""
    files = [*ROOT.glob("watermark/*_config.json"), *ROOT.glob("configs/watermark-*.json")]
    found = {config_name(str(p.relative_to(ROOT))): p for p in sorted(files)}
    return {name: found[name] for name in sorted(found, key=order)}


def order(name: str) -> tuple[bool, str]:
    """The default first, then by name."""
    return (name != "default", name)


def passages(n: int = 20) -> list[str]:
    texts = []
    with gzip.open(ROOT / "data" / "corpus" / "heldout.jsonl.gz", "rt", encoding="utf-8") as f:
        for line in f:
            words = json.loads(line)["text"].split()
            if len(words) >= 150:
                texts.append(" ".join(words[:170]))
            if len(texts) == n:
                break
    return texts


def shared_generator() -> Load:
    """Loads each config's watermark around one SmolLM2-135M, loaded once."""
    model, tokenizer = load_lm("smollm2-135m")
    return lambda config: Watermark.load(config, tokenizer=tokenizer, generator=model)


def configs_at(revision: str, folder: Path) -> dict[str, Path]:
    """Every config of the tree at git ``revision`` (the package's and ``configs/``'s), written
    under ``folder``: ``{name: file}`` (:func:`config_name`)."""
    listed = subprocess.run(
        ["git", "ls-tree", "--name-only", revision, "configs/", "watermark/"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    names = {config_name(p): p for p in sorted(listed) if config_name(p)}
    found = {}
    for name in sorted(names, key=order):
        path = names[name]
        text = subprocess.run(
            ["git", "show", f"{revision}:{path}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        found[name] = folder / path
        found[name].parent.mkdir(parents=True, exist_ok=True)
        found[name].write_text(text, encoding="utf-8")
    return found


def snap(
    out: Path, load: Load | None = None, texts: int = 20, tokens: int = 0, at: str | None = None
) -> None:
    """Writes the snapshot of every config to ``out`` (``load``: how a config's watermark is
    loaded; ``tokens`` > 0: new tokens for every config, instead of :data:`GENERATED`; ``at``:
    the configs of that git revision, :func:`configs_at`)."""
    load = load or shared_generator()
    passages_, found = passages(texts), {}
    files = tree_configs()
    with tempfile.TemporaryDirectory() as folder:
        if at:
            files = configs_at(at, Path(folder))
        for name, path in files.items():
            found[name] = snap_config(load(path), name, passages_, tokens)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(found))


def snap_config(wm: Watermark, name: str, passages_: list[str], tokens: int) -> dict:
    """One config's row of the snapshot."""
    row = {"fingerprint": wm.fingerprint}
    row["detect"] = [r.to_dict(per_token=True) for r in wm.detect(passages_)]
    if name in GENERATED:
        new = tokens or GENERATED[name]
        together = wm.generate(PROMPTS, seed=0, max_new_tokens=new)
        alone = wm.generate(PROMPTS[:1], seed=1, max_new_tokens=new)
        row["generate"] = [[g.token_ids, g.watermarked_steps] for g in together]
        row["generate1"] = [[g.token_ids, g.watermarked_steps] for g in alone]
    print(json.dumps({"config": name, "fingerprint": wm.fingerprint}), flush=True)
    return row


def by_name(path: Path) -> dict:
    """A snapshot's rows keyed by :func:`config_name` (snapshots of 0.10 keyed them by path)."""
    return {config_name(key) or key: row for key, row in json.loads(path.read_text()).items()}


def same_detection(before: dict, after: dict) -> bool:
    """Whether a detection is byte for byte the same as JSON on every field the first one has:
    a field a later version adds to the result (``key_id``) is no change of the others."""
    kept = {k: after.get(k) for k in before}
    return json.dumps(before, sort_keys=True) == json.dumps(kept, sort_keys=True)


def compare(a: Path, b: Path) -> int:
    before, after, differ = by_name(a), by_name(b), 0
    for name, x in before.items():
        y = after.get(name, {})
        det = [same_detection(p, q) for p, q in zip(x["detect"], y.get("detect", []))]
        gen = [x.get(k) == y.get(k) for k in ("generate", "generate1")]
        same = (
            x["fingerprint"] == y.get("fingerprint") and all(gen) and len(det) == len(x["detect"])
        )
        same = same and all(det)
        differ += not same
        row = {"config": name, "fingerprint": y.get("fingerprint"), "identical": same}
        row.update(detections_identical=f"{sum(det)}/{len(x['detect'])}", generations=gen)
        print(json.dumps(row))
    print(json.dumps({"configs": len(before), "differ": differ}))
    return 1 if differ else 0


def main(argv: list[str] | None = None, load: Load | None = None) -> int:
    """``snap`` or ``compare``; returns the exit status (``load``: how ``snap`` loads a
    config's watermark)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    one = sub.add_parser("snap")
    one.add_argument("out", type=Path)
    one.add_argument("--texts", type=int, default=20, help="held-out passages detected")
    one.add_argument("--tokens", type=int, default=0, help="new tokens (0: each config's own)")
    one.add_argument("--configs-at", help="a git revision whose configs to read (default: now)")
    both = sub.add_parser("compare")
    both.add_argument("before", type=Path)
    both.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    if args.command == "snap":
        snap(args.out, load, args.texts, args.tokens, args.configs_at)
        return 0
    return compare(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
