"""The evaluation experiment description: a dataclass of JSON-able fields, read from YAML.

A YAML file sets any field of :class:`EvalConfig`; its optional ``quick:`` mapping holds the
overrides that ``--quick`` applies on top (fewer prompts, shorter texts, smaller ablations).
Relative paths follow :func:`watermark.config.paths.resolve_path` (YAML folder, cwd, repo root).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from evaluation.config_checks import METHODS, check_config
from watermark.config.paths import resolve_path


def key_values(items: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` strings as a dict, each value read as YAML (``8``, ``[a, b]``, ``0.5``);
    a string without ``=`` raises ValueError."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--set {item!r}: expected KEY=VALUE")
        out[key.strip()] = yaml.safe_load(value)
    return out


@dataclass
class EvalConfig:
    """One evaluation run.

    Attributes:
        name: Run name (report title).
        out_dir: Where results, caches, the report and plots go.
        watermark_config: Our method's watermark config JSON (``None``: the shipped default).
        generator: Generator for every method (short name, folder or hub id).
        oracle: Perplexity oracle LM; must not be the generator.
        paraphraser: Instruction model of the sentence-level ``paraphrase`` attacks.
        llm_paraphraser: Instruction model of the whole-text ``llm_paraphrase`` attacks (short
            name, folder or hub id; ``qwen2.5-coder-1.5b`` needs the ``paraphraser`` extra). Its
            name is part of those attacks' cache keys.
        llm_paraphrase_batch: Texts per ``generate`` call of ``llm_paraphraser`` (texts of
            similar length share a batch). On the 2-core CPU the paraphrase-claim run decodes
            about 27 s per text at 32 against about 40 s at 8
            (``python -m benchmarks.bench_llm_paraphrase`` times the two parts); greedy outputs
            differ from another batch size only by rounding.
        heldout: Held-out corpus (JSONL.gz with ``doc``, ``source``, ``text``), never trained on.
        sources: Corpus sources to draw documents from (``news``, ``wiki``).
        num_prompts: Documents evaluated: prompt = first two sentences, human = what follows.
        human_tokens: Human text = the next this many generator tokens (at least 0.75 of it).
        new_tokens: Generated tokens per text (at most).
        min_new_tokens: EOS is blocked before this many tokens (same for every method).
        batch_size: Generation batch size (rows share one sampling seed per batch).
        seed: Base seed; batch ``b`` is sampled with ``seed + b``.
        methods: Methods to run, a subset of ``METHODS``.
        kgw_gamma: Green-list fraction of KGW-0/1/2.
        kgw_delta: Logit bias of KGW-0/1/2.
        kgw_key: Integer key of KGW-0/1/2 (SynthID's layer keys are derived from it).
        synthid_layers: Tournament layers (keys) of SynthID-Text.
        synthid_ngram_len: n of SynthID-Text's hashed n-grams (context of n - 1 tokens).
        attacks: ``{"kind", "strength"}`` mappings, ``kind`` in ``ATTACKS``. Strength: share of
            words deleted / of content words replaced / of sentences paraphrased / of the final
            text that is watermarked (copy-paste); 1.0 for the whole-text rewrites
            ``llm_paraphrase``, ``llm_round_trip`` and ``llm_forced`` (the key is there for
            symmetry); the synonym share after the LLM paraphrase for
            ``llm_paraphrase_synonym``. An optional ``passes`` (default 1) repeats the
            paraphrase of the paraphrase attacks; ``paraphrase_after: true`` follows a round
            trip or a forced rewrite with one ``llm_paraphrase``. ``llm_forced`` may set a
            sampling ``temperature`` and ``retries``: a draw that fails the meaning checks
            (MPNet similarity and facts, :func:`evaluation.meaning.meaning_kept`) is drawn again;
            ``list_facts: true`` names the text's names and numbers in its prompt
            (:func:`data.llm_rewrites.listed_facts`).
        paraphrase_limit: Texts per method given to the paraphrase attack (``None``: all).
        green_share_texts: Our watermarked texts whose every token's greenness is computed for
            |G| / |U + W| (an extra embedding pass over all prefixes; 0 skips it).
        spoof_texts: Texts generated per method for the spoofing experiment (0 skips it).
        spoof_tokens: Tokens per spoofing text.
        spoof_common: Size of the common-token set C (most frequent tokens of human text).
        spoof_top: Size of H, the most frequent tokens of C in watermarked text.
        steal_texts: Watermarked texts per method the watermark-stealing attacker collects (and
            as many of its own); 0 skips the attack (see :mod:`evaluation.stealing`).
        steal_methods: Methods the stealing attack targets.
        spoof_prompts: Texts the stealing attacker writes per method and context width.
        spoof_boost: Logit boost per unit of the attacker's estimate.
        ablation_prompts: Prompts per ablation variant (first ones of the main set).
        ablation_tokens: New tokens per ablation text (``None``: ``new_tokens``).
        ablation_attack: An attack (as in ``attacks``) also scored for each ablation variant, as
            the paper scores its ablations under paraphrase (``None``: no attack).
        ablations: ``{field: [values]}`` of our watermark config to vary one at a time; a value
            may be a dict of fields set together.
        frontier_prompts: Prompts of the quality / power frontier (0 skips it); the first
            ``num_prompts`` of them are the main table's.
        frontier_baselines: Methods drawn on the frontier next to ours (any of ``METHODS``).
        frontier: Cells of our method, as mappings of watermark config fields; a list value
            expands into one cell per element (all combinations), e.g.
            ``{scaling: additive, bias: [1.0, 2.0], context_guard: [0, 4]}``.
        curve_prompts: Texts per method of the robustness curves (0 skips them; see
            :mod:`evaluation.curves`); the frontier's units come first.
        curve_attacked: Texts per method and attack on the curves.
        curve_negatives: Human texts the curves detect as negatives (0: the curve prompts' own
            human texts; more come from the units after them). The TPR at 1% FPR is read above
            the k-th highest negative, k = floor(0.01 N): with 64 negatives that is the single
            highest one, so one unusual human text sets it.
        curve_detect: Detect the curve methods' texts (false: their quality rows only, for
            settings judged on quality alone).
        unit_pool: ``"long"`` (default): the documents whose text after the prompt has at least
            0.75 ``human_tokens`` tokens, the units of every stage; ``"short"``: the other
            documents (their human texts are too short to be negatives), prompts no stage of a
            ``"long"`` run uses, for quality checks on further prompts.
        curve_offset: Units skipped before the curve units (0: the frontier's units; 128 gives
            a second set of prompts that played no part in choosing a setting on the first).
        curve_methods: Methods on the curves.
        curve_baseline: The curve method our methods' difference tables compare to (empty: the
            KGW-1 setting within the quality limits on the curve prompts, if any).
        curve_also_against: Further curve methods each of ours is compared to, after
            ``curve_baseline`` (e.g. ``[synthid]``).
        curve_rows_from: ``results.json`` of earlier runs on the same prompts, human texts and
            attacks whose curve rows (per-text z-scores) join this run's for the comparisons,
            so ``curve_baseline`` and ``curve_also_against`` may name their methods
            (:mod:`evaluation.earlier_rows`).
        map_with: ``results.json`` of other runs whose attacked cells the report's map of ROC-AUC
            against words kept (``attack_map.png``) draws beside this run's.
        curve_attacks: The curves' attacks, as in ``attacks`` (``passes`` allowed).
        curve_matched_only: Attack only the curve methods within the matched-quality limits
            (median PPL <= 1.10x, rep-4 <= 1.25x the ``unwatermarked`` curve method's, which
            must come first); the others get their quality row only.
        similarity_embedder: Embedder that measures how much meaning an attack kept.
        variants: Named variants, usable in ``curve_methods``: of our method,
            ``{name: {watermark config field: value}}`` (for example the SimHash mapper in the
            learned one's place), or of a KGW baseline, ``{name: {base: kgw1, kgw_gamma: 0.25,
            kgw_delta: 1.0}}`` (the strength sweeps of the matched-quality comparison).
        threads: torch threads (0: torch's default).
        device: Where the generator and our watermark's models run: ``cpu`` (default),
            ``cuda``, ``cuda:N`` or ``auto`` (CUDA when available). Each generation's record
            names the device that made it (CUDA samples other tokens than the CPU), and a
            cached generation is read whichever device made it: ``--generate-only`` on a GPU
            machine, then the rest of the run on the CPU, reading that cache.
        cache_seeds: Committed folders of cached tables (``<table>.jsonl.gz``) read before
            ``<out_dir>/cache``, so a fresh checkout reuses generations and rewrites that took
            hours; ``--save-cache-seed DIR`` writes one (:mod:`evaluation.store`).
        quick: Overrides applied by ``--quick``.
    """

    name: str = "default"
    out_dir: str = "runs/eval/default"
    watermark_config: str | None = None
    generator: str = "smollm2-135m"
    oracle: str = "gemma3-270m"
    paraphraser: str = "smollm2-135m"
    llm_paraphraser: str = "qwen2.5-coder-1.5b"
    llm_paraphrase_batch: int = 32
    heldout: str = "data/corpus/heldout.jsonl.gz"
    sources: list[str] = field(default_factory=lambda: ["news", "wiki"])
    num_prompts: int = 48
    human_tokens: int = 200
    new_tokens: int = 200
    min_new_tokens: int = 170
    batch_size: int = 8
    seed: int = 0
    methods: list[str] = field(default_factory=lambda: list(METHODS[:5]))
    kgw_gamma: float = 0.5
    kgw_delta: float = 2.0
    kgw_key: int = 15485863
    synthid_layers: int = 30
    synthid_ngram_len: int = 5
    attacks: list[dict[str, Any]] = field(default_factory=list)
    paraphrase_limit: int | None = None
    green_share_texts: int = 0
    spoof_texts: int = 0
    spoof_tokens: int = 100
    spoof_common: int = 181
    spoof_top: int = 50
    steal_texts: int = 0
    steal_methods: list[str] = field(default_factory=lambda: ["kgw0", "kgw1", "ours"])
    spoof_prompts: int = 64
    spoof_boost: float = 2.0
    ablation_prompts: int = 0
    ablation_tokens: int | None = None
    ablation_attack: dict[str, Any] | None = None
    ablations: dict[str, list[Any]] = field(default_factory=dict)
    frontier_prompts: int = 0
    frontier_baselines: list[str] = field(default_factory=list)
    frontier: list[dict[str, Any]] = field(default_factory=list)
    curve_prompts: int = 0
    curve_attacked: int = 64
    curve_negatives: int = 0
    curve_baseline: str = ""
    curve_also_against: list[str] = field(default_factory=list)
    map_with: list[str] = field(default_factory=list)
    curve_rows_from: list[str] = field(default_factory=list)
    curve_offset: int = 0
    curve_detect: bool = True
    unit_pool: str = "long"
    curve_methods: list[str] = field(default_factory=lambda: ["ours", "kgw0", "kgw1", "kgw2"])
    curve_attacks: list[dict[str, Any]] = field(default_factory=list)
    curve_matched_only: bool = False
    similarity_embedder: str = "mpnet"
    variants: dict[str, dict[str, Any]] = field(default_factory=dict)
    threads: int = 0
    device: str = "cpu"
    cache_seeds: list[str] = field(default_factory=list)
    quick: dict[str, Any] = field(default_factory=dict)
    source_dir: str | None = None

    def __post_init__(self) -> None:
        check_config(self)

    def base_method(self, name: str) -> str:
        """The method a curve method runs: a variant's ``base`` (ours unless named), else
        ``name`` itself."""
        spec = self.variants.get(name)
        return name if spec is None else spec.get("base", "ours")

    @classmethod
    def load(
        cls, path: str | Path, quick: bool = False, overrides: list[str] | None = None
    ) -> EvalConfig:
        """Read a YAML file (unknown keys fail); apply its ``quick`` overrides if asked, then
        each ``KEY=VALUE`` of ``overrides`` (the value read as YAML, e.g. ``num_prompts=8`` or
        ``curve_methods=[ours, kgw1]``)."""
        path = Path(path)
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"{path}: unknown keys {unknown}; known: {sorted(known)}")
        if quick:
            overrides_quick = data.get("quick") or {}
            bad = sorted(set(overrides_quick) - known)
            if bad:
                raise ValueError(f"{path}: unknown quick keys {bad}")
            data = {**data, **overrides_quick}
        for key, value in key_values(overrides or []).items():
            if key not in known - {"quick", "source_dir"}:
                raise ValueError(f"--set {key!r}: expected KEY=VALUE with KEY one of the YAML keys")
            data[key] = value
        data["source_dir"] = str(path.resolve().parent)
        return cls(**data)

    def resolve(self, value: str) -> str:
        """A path resolved by :func:`watermark.config.paths.resolve_path` (YAML folder, cwd, repo
        root)."""
        return resolve_path(value, self.source_dir)

    def output_path(self) -> Path:
        """The output folder (relative paths against the working directory)."""
        return Path(self.out_dir)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able fields (without ``quick`` and ``source_dir``)."""
        data = asdict(self)
        data.pop("quick")
        data.pop("source_dir")
        return data
