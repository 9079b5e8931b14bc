"""How much of the sentence layer's mark a meaning-keeping rewrite would leave (issue 54; a
script printing JSON lines, a simulation on real rewrites).

The pool is the sentences of watermarked texts that a rewrite of the evaluation cache changed
(default: the forced rewrite with the facts listed, ``configs/evaluation/rewrites.yaml``). Each
complete sentence of an original is paired with the sentence of its rewrite nearest to it (the
watermark's SE, cosine), and both are mapped by the SM. First line: how the pairs move (sign
agreement of the mapper outputs by margin, sentences merged, predecessors kept).

Then, per setting (candidates N, bits, context bits c): texts of ``--sentences`` sentences are
chosen from the pool, each the best of N rows under the real key in its group, as generation
chooses. The *rewritten* text is the chosen rows' rewrites in the same order. Each sentence's
predecessor in it is the rewrite of its own predecessor with the measured probability of a
kept predecessor, else another chosen sentence's rewrite (a reordering). The detector's exact
sentence test reads both. Baseline: texts of unchosen rows. Printed: the share at p < 0.01,
and the ROC-AUC against the baseline, of the sentence part alone and combined by Fisher's rule
with the token-level p-value of a real rewritten text of the same cache (the baseline's token
p-value uniform, as the exact token test gives human text).

What it leaves out: candidates in real generation share their prompt and topic, so their
margins are smaller than those of a pool of many topics; a rewrite that merges two sentences
gives one sentence where this counts two (the merge rate is printed).

    python experiments/sentence_rewrite_sim.py --candidates 4,8,16 --context-bits 0,2,4
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evaluation.cache_keys import text_hash  # noqa: E402
from evaluation.metrics import detection_metrics  # noqa: E402
from evaluation.store import Store  # noqa: E402
from watermark.api import Watermark  # noqa: E402
from watermark.core.config import WatermarkConfig  # noqa: E402
from watermark.core.sentences import SentenceKey, fisher, sentence_spans, sentence_test  # noqa: E402

FORCED = "llm_forced[qwen2.5-coder-1.5b]@t1r4+facts|1.0|0"
ints = lambda x: [int(n) for n in x.split(",")]  # noqa: E731


def complete(text: str) -> list[str]:
    return [text[a:b] for a, b, done in sentence_spans(text) if done]


def pairs_of(store: Store, attack: str) -> list[tuple[str, str, float]]:
    """(original, rewrite, ours' token-level p of the rewrite or nan) of every changed text."""
    attacked = store.table("attacks")
    found = store.table("detections").items()
    p_of = {k.split("|")[1]: r["p"] for k, r in found if k.startswith("ours-det")}
    out = []
    for row in store.table("generations").values():
        done = attacked.get(f"{attack}|{text_hash(row['text'])}")
        if done and done["text"].strip() != row["text"].strip():
            out.append((row["text"], done["text"], p_of.get(text_hash(done["text"]), float("nan"))))
    return out


def align(semantic, pairs):
    """Pool rows: outputs of each original sentence and of its nearest rewritten sentence, with
    the figures of how they moved."""
    orig, rew, moved = [], [], {"sentences": 0, "merged": 0, "kept_predecessor": 0, "chains": 0}
    for original, rewrite, _ in pairs:
        a, b = complete(original), complete(rewrite)
        if not a or not b:
            continue
        ua, ub = semantic.embed(a), semantic.embed(b)
        near = (
            torch.nn.functional.normalize(ua, dim=1) @ torch.nn.functional.normalize(ub, dim=1).T
        ).argmax(1)
        va, vb = semantic.outputs(ua).float().cpu(), semantic.outputs(ub).float().cpu()
        orig.append(va)
        rew.append(vb[near])
        moved["sentences"] += len(a)
        moved["merged"] += len(a) - len(set(near.tolist()))
        moved["chains"] += len(a) - 1
        moved["kept_predecessor"] += int((near[1:] == near[:-1] + 1).sum())
    return torch.cat(orig), torch.cat(rew), moved


def sign_figures(vo: torch.Tensor, vr: torch.Tensor, moved: dict) -> dict:
    scale = vo.abs().mean(0, keepdim=True)
    margin, same = vo.abs() / scale, (vo > 0) == (vr > 0)
    bins = {}
    for lo, hi in ((0, 0.5), (0.5, 1), (1, 2), (2, 99)):
        m = (margin >= lo) & (margin < hi)
        bins[f"|v|/mean {lo}-{hi}"] = round(float(same[m].float().mean()), 4)
    return {
        "pool_sentences": vo.shape[0],
        "signs_kept": round(float(same.float().mean()), 4),
        "signs_kept_by_margin": bins,
        "merged_share": round(moved["merged"] / moved["sentences"], 4),
        "predecessor_kept": round(moved["kept_predecessor"] / max(1, moved["chains"]), 4),
    }


def chosen(vo, key, length, pick, rng):
    """Rows of one text, each the best of ``pick`` unused rows in its group."""
    rows: list[int] = []
    for _ in range(length):
        cand = torch.tensor(rng.sample([i for i in range(vo.shape[0]) if i not in rows], pick))
        previous = vo[rows[-1]].expand(pick, -1) if rows else None
        rows.append(
            int(cand[int(torch.argmax(key.scores(vo[cand], key.groups(vo[cand], previous))))])
        )
    return rows


def p_value(x: torch.Tensor, previous: torch.Tensor | None, key: SentenceKey) -> float:
    """The exact sentence test of a text of sentence outputs x (predecessors: ``previous``,
    ``None``: x's own order)."""
    groups = key.text_groups(x, previous)
    return sentence_test(key.hits(x, groups), groups, x[:, key.dims] > 0)


def rewritten_previous(vr, rows, kept, rng):
    """Each rewritten sentence's predecessor: its own predecessor's rewrite with probability
    ``kept``, else another chosen sentence's rewrite."""
    prev = [rows[0]]
    for j in range(1, len(rows)):
        prev.append(
            rows[j - 1]
            if rng.random() < kept
            else rng.choice(rows[: j - 1] + rows[j + 1 :] or rows)
        )
    return vr[prev]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(ROOT / "runs/eval/paraphrase-claim"))
    parser.add_argument("--attack", default=FORCED, help="cached attack key prefix")
    parser.add_argument("--candidates", type=ints, default=[4, 8, 16])
    parser.add_argument("--bits", type=ints, default=[16])
    parser.add_argument("--context-bits", type=ints, default=[0, 2, 4])
    parser.add_argument(
        "--keying", default="previous", help="previous,own: where a sentence's group comes from"
    )
    parser.add_argument("--sentences", type=int, default=0, help="0: the originals' median")
    parser.add_argument("--texts", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    pairs = pairs_of(Store(Path(args.out) / "cache"), args.attack)
    if not pairs:
        raise SystemExit(f"error: no cached texts changed by {args.attack!r} in {args.out}")
    wm = Watermark.load(WatermarkConfig.default())
    vo, vr, moved = align(wm.core.semantic, pairs)
    length = args.sentences or int(statistics.median(len(complete(o)) for o, _, _ in pairs))
    token_p = [p for _, _, p in pairs if p == p]
    figures = sign_figures(vo, vr, moved)
    print(json.dumps({"texts": len(pairs), "sentences_per_text": length, **figures}), flush=True)
    secret = wm.config.secret_keys()[0]
    for bits in args.bits:
        for context in args.context_bits:
            for keying in args.keying.split(",") if context else ["global"]:
                simulate(args, vo, vr, figures, token_p, length, bits, context, keying, secret)


def simulate(args, vo, vr, figures, token_p, length, bits, context, keying, secret) -> None:
    """One setting's line: N = each of ``args.candidates``."""
    key = SentenceKey.of(secret, vo.shape[1], bits, context, "previous" if context == 0 else keying)
    for pick in args.candidates:
        rng = random.Random(args.seed)
        marked, after, human = [], [], []
        for _ in range(args.texts):
            rows = chosen(vo, key, length, pick, rng)
            marked.append(p_value(vo[rows], None, key))
            prev = rewritten_previous(vr, rows, figures["predecessor_kept"], rng)
            after.append(p_value(vr[rows], prev, key))
            base = rng.sample(range(vo.shape[0]), length)
            human.append(p_value(vo[base], None, key))
        combined = [fisher([p, rng.choice(token_p)]) for p in after]
        human_combined = [fisher([p, rng.random()]) for p in human]
        row = {"bits": bits, "context_bits": context, "keying": keying, "candidates": pick}
        for name, pos, neg in (
            ("unattacked", marked, human),
            ("rewritten", after, human),
            ("rewritten_combined", combined, human_combined),
        ):
            auc = detection_metrics([-p for p in pos], [-p for p in neg])["roc_auc"]
            row[name] = {
                "p<0.01": sum(p < 0.01 for p in pos) / len(pos),
                "roc_auc": round(auc, 4),
            }
        row["baseline_p<0.01"] = sum(p < 0.01 for p in human) / len(human)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
