"""Replace the shipped default mapper with a trained one: ``python -m mapper.ship RUN_DIR --yes``.

The mapper is key material: a retrained mapper gives other green lists, so texts made with the
shipped one stop testing as watermarked under a config that names the new one. Training therefore
exports to a run folder (``runs/mapper-minilm``), and only this command touches the package:

1. it scores the shipped and the new mapper on the validation split (:mod:`mapper.compare`) and
   prints how often their signs agree on the validation sentences (0.5: unrelated keys);
2. without ``--yes`` it stops there;
3. with ``--yes`` it copies the shipped mapper to ``runs/retired-mapper-<digest>/`` first (texts
   made with it are detected with a config whose ``"mapper"`` names that folder), then copies the
   new one into ``watermark/checkpoints/mapper-minilm/`` and writes its digest into the shipped
   config (``watermark/default_config.json``).

With ``--sentence`` it ships a sentence mapper (``configs/mapper/sentence.yaml``) instead: the
new mapper goes to ``watermark/checkpoints/sentence-minilm/`` and the config given by
``--config`` (default ``watermark/robust_config.json``) names it and its digest in section
``sentences``. It keeps no copy of the replaced mapper or config: keep them yourself (git) where
texts were made under them.

Prints JSON lines; commit ``watermark/`` afterwards and build the wheel again.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import sys
from pathlib import Path

from mapper.compare import evaluate, sign_agreement, validation_set
from watermark.config.files import read_config_file
from watermark.config.paths import DEFAULT_MAPPER, PACKAGE_DIR
from watermark.config.shipped import shipped_path
from watermark.config.watermark_config import DEFAULT_CONFIG_PATH
from watermark.core.identity import short, tensor_digest
from watermark.models.semantic_mapper import CONFIG_NAME, WEIGHTS_NAME, SemanticMapper

SENTENCE_MAPPER = "checkpoints/sentence-minilm"  # the sentence layer's, relative to PACKAGE_DIR
SHOWN = ("agree_paraphrase", "agree_unrelated_p95", "dim_within_tol", "sent_balance_p95")


def ship(new_dir: Path, yes: bool, retired_root: Path, package_dir: Path = PACKAGE_DIR) -> dict:
    """Compares ``new_dir`` with the packaged mapper and, with ``yes``, replaces it."""
    shipped_dir = package_dir / DEFAULT_MAPPER
    config_path = package_dir / DEFAULT_CONFIG_PATH.name
    old, new = SemanticMapper.from_pretrained(shipped_dir), SemanticMapper.from_pretrained(new_dir)
    if old.config.embedder != new.config.embedder:
        raise ValueError(
            f"the new mapper reads {new.config.embedder!r} embeddings, the shipped one "
            f"{old.config.embedder!r}: ship it with a config of its own"
        )
    digests = {"shipped": tensor_digest(old), "new": tensor_digest(new)}
    metrics = {name: evaluate(str(d)) for name, d in (("shipped", shipped_dir), ("new", new_dir))}
    emb = validation_set(old, None).emb
    report = {
        **{
            name: {"digest": digests[name], **{k: metrics[name]["mapper"][k] for k in SHOWN}}
            for name in ("shipped", "new")
        },
        "sign_agreement": round(sign_agreement(old, new, emb), 4),
        "validation_sentences": int(emb.shape[0]),
    }
    if digests["shipped"] == digests["new"]:
        return {**report, "replaced": False, "note": "the new mapper is the shipped one"}
    if not yes:
        return {**report, "replaced": False, "note": "dry run: pass --yes to replace it"}
    retired = retired_root / f"retired-mapper-{digests['shipped'][7:19]}"
    shutil.copytree(shipped_dir, retired, dirs_exist_ok=True)
    for name in (WEIGHTS_NAME, CONFIG_NAME):
        shutil.copy2(new_dir / name, shipped_dir / name)
    data = json.loads(config_path.read_text(encoding="utf-8"))
    data.get("models", data)["mapper_digest"] = digests["new"]  # sections, or a flat file
    config_path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return {**report, "replaced": True, "retired_to": str(retired)}


def ship_sentence(new_dir: Path, config: Path, yes: bool, package_dir: Path = PACKAGE_DIR) -> dict:
    """Ships ``new_dir`` as the sentence layer's mapper of ``config`` (module docstring)."""
    mapper, data = SemanticMapper.from_pretrained(new_dir), read_config_file(config)
    if "sentences" not in data:
        raise ValueError(f"{config} has no section 'sentences': write the layer's settings first")
    digest = tensor_digest(mapper)
    report = {"new": digest, "config": str(config), "was": data["sentences"].get("mapper_digest")}
    if report["was"] == digest or not yes:
        note = "already shipped" if report["was"] == digest else "dry run: pass --yes to ship it"
        return {**report, "replaced": False, "note": note}
    target = package_dir / SENTENCE_MAPPER
    target.mkdir(parents=True, exist_ok=True)
    for name in (WEIGHTS_NAME, CONFIG_NAME):
        shutil.copy2(new_dir / name, target / name)
    data["sentences"].update(mapper=SENTENCE_MAPPER, mapper_digest=digest)
    config.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return {**report, "replaced": True, "shipped_to": str(target)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("new_dir", help="an exported mapper folder (e.g. runs/mapper-minilm)")
    parser.add_argument("--yes", action="store_true", help="replace the shipped mapper")
    parser.add_argument(
        "--retired-root", default="runs", help="where the replaced mapper is kept (default: runs/)"
    )
    parser.add_argument("--sentence", action="store_true", help="ship a sentence mapper")
    parser.add_argument("--config", default=str(shipped_path("robust")), help="with --sentence")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    try:
        if args.sentence:
            result = ship_sentence(Path(args.new_dir), Path(args.config), args.yes)
        else:
            result = ship(Path(args.new_dir), args.yes, Path(args.retired_root))
    except (FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(json.dumps(result))
    if result["replaced"] and not args.sentence:
        old = result["shipped"]["digest"]
        print(
            f"warning: texts made with the previous mapper ({short(old)}) test as watermarked "
            f'only with a config whose "mapper" is {result["retired_to"]} and whose '
            f'"mapper_digest" is {old}',
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
