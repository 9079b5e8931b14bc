"""The evaluation pipeline: generate, attack, detect and measure, every result cached on disk.

:class:`Evaluation` loads the generator, the methods and the oracle once, and computes each stage
through :class:`evaluation.store.Store`, so a re-run (after an interruption, or with a new
attack or metric) only computes what is missing. Cache keys hold everything a result depends on
(method settings, generator, seed, lengths, the text itself), except the device that made a
generation: its record names it, and a run reads it on any device (``device``, ``--generate-only``).

Generation: units are cut into fixed batches in order; batch ``b`` samples with seed
``seed + b`` for every method, with top-k / top-p after the watermark and EOS blocked before
``min_new_tokens`` (:func:`watermark.generate.generation.generate`, the same for every method).
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace

import torch
from tqdm.auto import tqdm

from evaluation.attack_stage import AttackStage
from evaluation.cache_keys import text_hash
from evaluation.config import EvalConfig
from evaluation.detection import MethodDetection, share_flagged
from evaluation.heldout import units as load_units
from evaluation.meaning import words_kept_share
from evaluation.method_factory import build_method
from evaluation.methods import Method, OursMethod
from evaluation.metrics import (
    OraclePerplexity,
    detection_metrics,
    longest_repeat,
    ngram_repetition,
    tail_figures,
)
from evaluation.store import Store
from watermark.core.text import encode_text
from watermark.models.devices import resolve_device
from watermark.models.loaders import load_lm

logger = logging.getLogger(__name__)


def interleave(items: list[dict], key: str) -> list[dict]:
    """Round-robin over the values of ``items[i][key]`` (keeps each group's order)."""
    groups: dict[str, list[dict]] = {}
    for item in items:
        groups.setdefault(item[key], []).append(item)
    out, queues = [], [list(g) for g in groups.values()]
    while any(queues):
        for q in queues:
            if q:
                out.append(q.pop(0))
    return out


def score_detections(pos: list[MethodDetection], neg: list[MethodDetection]) -> dict:
    """Detection metrics of positives vs negatives, their z-scores, mean AWR and green share, and
    the shares each method's own test flags at p < 0.01 (``tpr@p<0.01``, ``fpr@p<0.01``)."""
    pos_z = [d.z_score for d in pos]
    res = detection_metrics(pos_z, [d.z_score for d in neg])
    res["tpr@p<0.01"], res["fpr@p<0.01"] = share_flagged(pos), share_flagged(neg)
    res["z"] = pos_z
    res["awr"] = sum(d.awr for d in pos) / len(pos)
    res["green_fraction"] = sum(d.green_fraction for d in pos) / len(pos)
    return res


def words_kept(originals: list[str], attacked: list[str]) -> float:
    """Mean share of each original's distinct words that are still in its attacked text."""
    shares = [words_kept_share(a, b) for a, b in zip(originals, attacked)]
    return sum(shares) / max(1, len(shares))


class Evaluation:
    """Models, methods and cached stages of one :class:`EvalConfig`; its attacks are run by
    ``attacker`` (:class:`evaluation.attack_stage.AttackStage`)."""

    def __init__(self, cfg: EvalConfig, progress: bool = True) -> None:
        self.cfg, self.progress = cfg, progress
        self.out = cfg.output_path()
        self.store = Store(self.out / "cache", [cfg.resolve(s) for s in cfg.cache_seeds])
        self.model, self.tokenizer = load_lm(cfg.resolve(cfg.models.generator))
        self.device = resolve_device(cfg.models.device)  # a UserError if CUDA is asked and absent
        self.model.eval().to(self.device)
        self.wm_config = cfg.watermark_base()
        self.attacker = AttackStage(
            self.store,
            self.tokenizer,
            seed=cfg.texts.seed,
            paraphraser=cfg.resolve(cfg.models.paraphraser),
            paraphrase_cache=self.out / "cache" / "paraphrases.jsonl",
            llm_name=cfg.models.llm_paraphraser,
            llm_path=cfg.resolve(cfg.models.llm_paraphraser),
            llm_batch=cfg.models.llm_paraphrase_batch,
            similarity_embedder=cfg.models.similarity_embedder,
            progress=progress,
        )
        self.vocab_size = int(self.model.get_output_embeddings().weight.shape[0])
        self.methods = {name: self._method(name) for name in cfg.table.methods}
        self._extra: dict[str, Method] = {}  # methods built for the other stages
        self.all_units = interleave(self._pool(), "source")
        self.units = self.all_units[: cfg.texts.prompts]
        for wanted in (cfg.texts.prompts, cfg.frontier.prompts):
            if len(self.all_units) < wanted:
                logger.warning("only %d of %d units available", len(self.all_units), wanted)
        self._oracle: OraclePerplexity | None = None

    def _pool(self) -> list[dict]:
        """The units of ``texts.unit_pool``: ``long`` the documents whose human text has at least
        0.75 ``human_tokens`` tokens, ``short`` the others."""
        texts, path = self.cfg.texts, self.cfg.resolve(self.cfg.texts.heldout)
        n_min, n = int(0.75 * texts.human_tokens), texts.human_tokens
        found = load_units(path, self.tokenizer, texts.sources, n_min, n)
        if texts.unit_pool == "short":
            long_ids = {u["id"] for u in found}
            found = load_units(path, self.tokenizer, texts.sources, 1, n)
            found = [u for u in found if u["id"] not in long_ids]
        return found

    def method(self, name: str) -> Method:
        """A method of the run by name (built on first use); a variant is its ``base`` method
        (ours unless named) with the variant's settings."""
        if name in self.methods:
            return self.methods[name]
        if name not in self._extra:
            overrides = dict(self.cfg.methods.variants.get(name) or {})
            overrides.pop("base", None)
            self._extra[name] = self._method(self.cfg.methods.base_method(name), **overrides)
        return self._extra[name]

    def _method(self, name: str, **overrides: object) -> Method:
        """Method ``name`` (:func:`evaluation.method_factory.build_method`)."""
        methods = self.cfg.methods
        return build_method(name, methods, self.wm_config, self.model, self.tokenizer, **overrides)

    def ours_variant(self, **overrides: object) -> OursMethod:
        """Our method with watermark-config fields overridden (ablations)."""
        return self._method("ours", **overrides)

    # ---- generation -------------------------------------------------------------------------

    def generations(
        self, method: Method, units: list[dict], new_tokens: int | None = None, tag: str = ""
    ) -> list[dict]:
        """``{"text", "ids", "seconds", "device"}`` per unit (``seconds``: batch time / batch
        size; ``device``: the type of the device that made it, absent in records older than the
        field, which the CPU made). A cached generation is read whichever device made it."""
        texts, size = self.cfg.texts, self.cfg.texts.batch_size
        new = new_tokens or texts.new_tokens
        low = min(texts.min_new_tokens, new)
        prefix = f"{tag}{method.key}|{self.cfg.models.generator}|{texts.seed}|{new}|{low}|{size}"
        table = self.store.table("generations")
        keys = [f"{prefix}|{u['id']}" for u in units]
        batches = range(0, len(units), size)
        todo = [b for b in batches if any(k not in table for k in keys[b : b + size])]
        bar = tqdm(
            total=len(todo) * size,
            desc=f"generate {tag}{method.name}",
            unit="text",
            disable=not self.progress or not todo,
        )
        for b in todo:
            batch = units[b : b + size]
            start = time.perf_counter()
            settings = dict(max_new_tokens=new, seed=texts.seed + b // size)
            prompts = [u["prompt"] for u in batch]
            outs = method.generate(
                self.model,
                self.tokenizer,
                prompts,
                top_k=self.wm_config.scheme.top_k,
                top_p=self.wm_config.scheme.top_p,
                min_new_tokens=low,
                **settings,
            )
            seconds = (time.perf_counter() - start) / len(batch)
            self.store.put(
                "generations",
                [
                    {
                        "key": keys[b + i],
                        "text": o.text,
                        "ids": o.token_ids,
                        "seconds": seconds,
                        "device": self.device.type,
                    }
                    for i, o in enumerate(outs)
                ],
            )
            bar.update(len(batch))
        bar.close()
        return [table[k] for k in keys]

    # ---- detection --------------------------------------------------------------------------

    def detections(self, method: Method, texts: list[str], chunk: int = 8) -> list[MethodDetection]:
        """The detection of each text (with ``seconds`` per text), cached."""
        table = self.store.table("detections")
        keys = [f"{method.detect_key}|{text_hash(t)}" for t in texts]
        todo = sorted({k: t for k, t in zip(keys, texts) if k not in table}.items())
        bar = tqdm(
            total=len(todo),
            desc=f"detect {method.name}",
            unit="text",
            disable=not self.progress or not todo,
        )
        for i in range(0, len(todo), chunk):
            part = todo[i : i + chunk]
            start = time.perf_counter()
            results = method.detect([t for _, t in part])
            seconds = (time.perf_counter() - start) / len(part)
            self.store.put(
                "detections",
                [
                    {"key": k, **replace(r, seconds=seconds).to_record()}
                    for (k, _), r in zip(part, results)
                ],
            )
            bar.update(len(part))
        bar.close()
        return [MethodDetection.from_record(table[k]) for k in keys]

    # ---- quality ----------------------------------------------------------------------------

    def perplexities(self, prompts: list[str], texts: list[str]) -> list[float]:
        """Oracle perplexity of each continuation given its prompt (cached)."""
        table = self.store.table("perplexity")
        oracle = self.cfg.models.oracle
        keys = [f"{oracle}|{text_hash(p + chr(0) + t)}" for p, t in zip(prompts, texts)]
        todo = [i for i, k in enumerate(keys) if k not in table]
        if todo and self._oracle is None:
            self._oracle = OraclePerplexity(*load_lm(self.cfg.resolve(oracle)))
        for i in tqdm(todo, desc="oracle ppl", unit="text", disable=not self.progress):
            ppl = self._oracle(prompts[i], texts[i])
            self.store.put("perplexity", [{"key": keys[i], "ppl": ppl}])
        return [table[k]["ppl"] for k in keys]

    def quality(self, units: list[dict], gens: list[dict]) -> dict:
        """Perplexity list, mean 1-4-gram repetition, each text's 4-gram repetition and the
        tail (:func:`evaluation.metrics.tail_figures`)."""
        ppl = self.perplexities([u["prompt"] for u in units], [g["text"] for g in gens])
        per_text = {n: [ngram_repetition(g["ids"], n) for g in gens] for n in (1, 2, 3, 4)}
        rep = {f"rep{n}": sum(v) / max(1, len(gens)) for n, v in per_text.items()}
        tail = tail_figures(per_text[4], [longest_repeat(g["ids"]) for g in gens])
        return {
            "ppl": ppl,
            **rep,
            "rep4_texts": per_text[4],
            **tail,
            "tokens_mean": sum(len(g["ids"]) for g in gens) / len(gens),
        }

    # ---- one method -------------------------------------------------------------------------

    def evaluate_method(self, method: Method) -> dict:
        """Quality, detection (no attack and each attack) and timing of one method."""
        units = self.units
        gens = self.generations(method, units)
        out = {"quality": self.quality(units, gens)}
        out["seconds_per_text"] = sum(g["seconds"] for g in gens) / len(gens)
        if method.name == "unwatermarked":
            return out
        humans = [u["human"] for u in units]
        neg = self.detections(method, humans)
        pos = self.detections(method, [g["text"] for g in gens])
        out["human_z"] = [d.z_score for d in neg]
        out["seconds_per_detection"] = sum(d.seconds for d in neg + pos) / len(neg + pos)
        out["fpr@p<0.01"] = sum(d.p_value < 0.01 for d in neg) / len(neg)
        out["tpr@p<0.01"] = sum(d.p_value < 0.01 for d in pos) / len(pos)
        out["attacks"] = {"none": score_detections(pos, neg)}
        limit = self.cfg.table.paraphrase_limit
        for attack in self.cfg.table.attacks:
            name = f"{attack['kind']}@{attack['strength']}"
            n = len(gens)
            if attack["kind"] == "paraphrase" and limit:
                n = min(n, limit)
            originals = [g["text"] for g in gens[:n]]
            texts = self.attacker.attacked(attack, originals, humans[:n])
            out["attacks"][name] = score_detections(self.detections(method, texts), neg)
            out["attacks"][name]["words_kept"] = words_kept(originals, texts)
        return out

    def green_share_all(self, method: OursMethod, texts: list[str]) -> float:
        """|G| / |U + W| for our method: green share of every token, scored or not (cached)."""
        table = self.store.table("green_all")
        core = method.wm.core
        shares = []
        for text in texts:
            key = f"{method.key}|{text_hash(text)}"
            if key not in table:
                ids = encode_text(core.tokenizer, text)
                steps = list(range(1, len(ids) + 1))
                lists = core.green_lists(steps, [ids] * len(steps))
                green = lists.contains(torch.tensor(ids, dtype=torch.long))[:, 0]
                self.store.put("green_all", [{"key": key, "share": float(green.float().mean())}])
            shares.append(table[key]["share"])
        return sum(shares) / max(1, len(shares))
