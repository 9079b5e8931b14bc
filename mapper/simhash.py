"""SimHash as a mapper checkpoint: a fixed random projection in the learned mapper's place.

``simhash_mapper(like)`` builds a :class:`~watermark.models.semantic_mapper.SemanticMapper` whose
signs are exactly :func:`mapper.metrics.simhash_codes` (the baseline of ``mapper.compare``): no
residual blocks, an identity input layer, the same centre as ``like``, and a seeded Gaussian output
layer. Exported like any mapper, it lets the watermark and the evaluation run with SimHash signs by
pointing the config's ``mapper`` at its folder.

Usage: ``python -m mapper.simhash --like checkpoints/mapper-minilm --out runs/simhash-minilm``.
"""

from __future__ import annotations

import argparse
import json
import sys

import torch

from watermark.models.semantic_mapper import MapperConfig, SemanticMapper


def simhash_mapper(like: SemanticMapper, seed: int = 0) -> SemanticMapper:
    """A SimHash mapper with ``like``'s input width, output width D, centre and embedder."""
    e, d = like.config.input_dim, like.config.output_dim
    config = MapperConfig(
        input_dim=e,
        hidden_dim=e,
        output_dim=d,
        num_blocks=0,
        embedder=like.config.embedder,
        extra={"kind": "simhash", "seed": seed},
    )
    model = SemanticMapper(config)
    gen = torch.Generator().manual_seed(seed)
    proj = torch.randn(e, d, generator=gen)  # drawn as in mapper.metrics.simhash_codes
    with torch.no_grad():
        model.inp.weight.copy_(torch.eye(e))
        model.inp.bias.zero_()
        model.center.copy_(like.center)
        model.norm.running_mean.zero_()
        model.norm.running_var.fill_(1.0)  # eval-mode norm: a positive scale, signs unchanged
        model.out.weight.copy_(proj.T)
    return model.eval()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mapper.simhash", description=__doc__)
    parser.add_argument("--like", required=True, help="exported mapper whose shape to copy")
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--seed", type=int, default=0, help="seed of the projection")
    args = parser.parse_args(argv)
    try:
        like = SemanticMapper.from_pretrained(args.like)
    except (OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    out = simhash_mapper(like, args.seed).save_pretrained(args.out)
    print(json.dumps({"out": str(out), "seed": args.seed}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
