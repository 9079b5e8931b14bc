"""The library's entry point, :class:`Watermark`: loading, watermarked generation, detection.

``from watermark import Watermark`` gives this class. :meth:`Watermark.load` assembles the
scoring core that generation and detection share (:mod:`watermark.loading` loads its parts and
checks that they fit together). Components can be passed in already loaded (tests use tiny random
models; the CLI reuses the generator as the MM when both names are equal).

It holds its generator (the one given to :meth:`Watermark.load`, else the MM when the config
names the same model), so ``wm.generate(prompts)`` needs no model, and it gives the one way to
watermark a user's own ``model.generate`` call: ``**wm.generation_kwargs()``. Keep
``wm.identity.record()`` with each text it makes (:mod:`watermark.detect.provenance`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import torch
from transformers import LogitsProcessorList

from watermark.base import UserError
from watermark.config.keys import DEMO_KEY, warn_demo_key
from watermark.config.watermark_config import WatermarkConfig, as_config
from watermark.core.scoring import WatermarkCore
from watermark.core.semantic import MappedEmbedder
from watermark.core.threads import one_thread
from watermark.detect.detector import Detector
from watermark.detect.provenance import Identity
from watermark.detect.result import DetectionResult
from watermark.generate.generation import (
    Generation,
    check_generate_args,
    check_prompts,
    eos_ids,
    generate,
)
from watermark.generate.own_call import own_generation_config
from watermark.generate.processor import AdaptiveWatermarkLogitsProcessor
from watermark.loading import generator_to_use, load_core
from watermark.models.devices import dtype_name, resolve_device
from watermark.models.semantic_mapper import SemanticMapper
from watermark.sentences.layer import SentenceLayer
from watermark.sentences.parts import load_sentence_parts, own_digests


class Watermark:
    """A loaded watermark: the shared core, a logits processor factory and the detector.

    Use :meth:`load`; the constructor takes ready components.
    """

    def __init__(
        self,
        config: WatermarkConfig,
        core: WatermarkCore,
        generator: torch.nn.Module | None = None,
        sentence_parts: MappedEmbedder | None = None,
    ) -> None:
        """``sentence_parts``: what the sentence layer reads with where it has a mapper or an
        SE of its own (``None``: the layer, where the config has it, reads with the token
        level's)."""
        self.config = config
        self.core = core
        self.generator = generator  # what generate() uses when no model is given
        self.tokenizer = core.tokenizer
        self.sentence_parts = sentence_parts
        self._fingerprint = core.fingerprint(**own_digests(sentence_parts, core.semantic))
        self.sentences = SentenceLayer.of(config, sentence_parts or core.semantic)  # or None
        tests = self.sentences.tests if self.sentences is not None else None
        self.detector = Detector(core, sentence_tests=tests, fingerprint=self._fingerprint)
        self.identity = Identity.of(core, self._fingerprint)  # what to keep with each text
        self.uses_demo_key = False  # set by load: generation then warns once per process

    def __repr__(self) -> str:
        return f"Watermark({self.config!r})"

    @property
    def fingerprint(self) -> str:
        """``"wm-..."``: digest of what generation and detection must share (the mapper and the
        embedder included, never the key); ``generate`` and ``detect`` write it."""
        return self._fingerprint

    @property
    def embedder(self) -> object:
        """The sentence embedder (SE)."""
        return self.core.semantic.embedder

    @property
    def mapper(self) -> SemanticMapper:
        """The semantic mapper (SM)."""
        return self.core.semantic.mapper

    @property
    def token_maps(self) -> torch.Tensor:
        """Long (L, V): the keyed token maps, token id -> mapper output, one per green list."""
        return self.core.semantic.token_maps

    @property
    def repeat_shifts(self) -> torch.Tensor | None:
        """Long (L, V): keyed shifts of repeated tokens' outputs (``repeats="bigram"``), or None."""
        shifts = self.core.semantic.repeat_shifts
        return shifts[0] if shifts else None

    def sentence_outputs(self, sentences: Sequence[str] | str) -> torch.Tensor:
        """Float (n, D) on the CPU: the mapper outputs the sentence layer keys, a row per
        sentence (a string is one), each embedded alone by the layer's SE and mapped by its
        mapper (``sentences.embedder`` and ``sentences.mapper`` where the config names them;
        D: that mapper's output width); the layer's key reads their signs.

        Raises:
            UserError: (a ValueError) If the config's sentence layer is off (``sentences.bits``
                is 0).
        """
        if self.sentences is None:
            raise UserError(
                "this config has the sentence layer off (sentences.bits is 0), so it keys no "
                "sentence outputs: load a config with sentences.bits > 0"
            )
        return self.sentences.outputs([sentences] if isinstance(sentences, str) else sentences)

    @classmethod
    def load(
        cls,
        config: WatermarkConfig | str | os.PathLike[str] | None = None,
        *,
        tokenizer: object | None = None,
        generator: torch.nn.Module | None = None,
        measurement_model: torch.nn.Module | None = None,
        mm_tokenizer: object | None = None,
        embedder: object | None = None,
        mapper: SemanticMapper | None = None,
        sentence_mapper: SemanticMapper | None = None,
        sentence_embedder: object | None = None,
        device: str | torch.device | None = None,
        dtype: str | torch.dtype | None = None,
    ) -> Watermark:
        """Loads every component named in the config (or uses the ones passed) and checks them.

        Args:
            config: A config, a JSON path, or ``None`` for the shipped default.
            tokenizer: Generator tokenizer (default: loaded from ``config.models.generator``).
            generator: The generator model, if loaded; used to check the LM-head width, reused
                as the MM when the config names it as the measurement model too, and held by the
                Watermark for :meth:`generate` and :meth:`generation_kwargs`. Without it the MM
                is held when the config names the same model for both.
            measurement_model: MM model (default: loaded from ``config.models.measurement_model``).
            mm_tokenizer: MM tokenizer (default: the generator's when the names are equal).
            embedder: Sentence-transformers model (default: ``config.models.embedder``).
            mapper: Semantic mapper (default: loaded from ``config.models.mapper``).
            sentence_mapper: The sentence layer's own mapper (default: ``sentences.mapper``).
            sentence_embedder: The sentence layer's own SE (default: ``sentences.embedder``).
            device: Where the MM, the SE, the mapper and the token maps run: ``None`` (the
                generator's device, else the CPU), ``"auto"`` (CUDA when available), ``"cpu"``,
                ``"cuda"`` or ``"cuda:N"``. Results do not depend on it beyond float noise.
            dtype: Overrides the config's ``compute_dtype`` (MM and SE), e.g. ``"bfloat16"``.
                Texts must be detected with the dtype they were generated with.

        Raises:
            UserError: (a ValueError) If the parts do not fit together.
        """
        cfg = as_config(config)
        if dtype is not None:
            cfg = cfg.evolve(compute_dtype=dtype_name(dtype))  # checked by the config
        device = resolve_device(device, generator)
        parts = {"tokenizer": tokenizer, "measurement_model": measurement_model}
        parts.update(mm_tokenizer=mm_tokenizer, embedder=embedder, mapper=mapper)
        core, generator = load_core(cfg, generator, device, **parts)
        own = load_sentence_parts(cfg, core.semantic, device, sentence_mapper, sentence_embedder)
        wm = cls(cfg, core, generator, own)
        wm.uses_demo_key = cfg.secret_keys()[0] == DEMO_KEY
        return wm

    def logits_processor(
        self, record: bool = False, eos_token_ids: Sequence[int] | None = None
    ) -> AdaptiveWatermarkLogitsProcessor:
        """A new logits processor (one per concurrent generation).

        It applies the config's temperature, top-k and top-p itself, and refuses to run next to
        transformers' own; :meth:`generation_kwargs` passes it with those switched off. It marks
        the token level only, so a config with the sentence layer on is refused: its candidates
        are chosen by :meth:`generate`.
        """
        if self.sentences is not None:
            raise UserError(
                "this config has the sentence layer on (sentences.bits > 0), which a logits "
                "processor cannot apply: generate with Watermark.generate(prompts)"
            )
        return self._processor(record, eos_token_ids)

    def _processor(
        self, record: bool, eos_token_ids: Sequence[int] | None
    ) -> AdaptiveWatermarkLogitsProcessor:
        if self.uses_demo_key:
            warn_demo_key()
        return AdaptiveWatermarkLogitsProcessor(
            self.core, eos_token_ids=eos_token_ids, record=record
        )

    def generation_kwargs(self, record: bool = False, **settings: object) -> dict[str, object]:
        """Arguments that watermark a ``model.generate`` (or ``pipeline``) call of the held
        generator (:mod:`watermark.generate.own_call`)::

            torch.set_num_threads(1)  # on a CPU shared with other work: many times faster
            model.generate(**inputs, **wm.generation_kwargs(max_new_tokens=200))

        ``logits_processor`` (a fresh processor) and ``generation_config``: the generator's,
        with ``settings`` (``max_new_tokens``, ...), sampling on and transformers' warpers off,
        since the processor applies the config's temperature, top-k and top-p. A sampling
        setting of your own (``temperature=0.7``, here or in the call) is refused in one line
        naming the config field to set instead (``scheme.temperature``).
        """
        eos = eos_ids(self.generator, self.tokenizer)
        config = own_generation_config(self.generator, settings)
        processor = self.logits_processor(record=record, eos_token_ids=eos)
        return {"logits_processor": LogitsProcessorList([processor]), "generation_config": config}

    def generate(
        self,
        model_or_prompts: torch.nn.Module | Sequence[str] | str,
        prompts: Sequence[str] | str | None = None,
        /,
        max_new_tokens: int = 200,
        seed: int | None = None,
        watermark: bool = True,
        record: bool = True,
        **kwargs: object,
    ) -> list[Generation]:
        """Continuations of ``prompts`` from the held generator: ``wm.generate(prompts, ...)``.

        Temperature, top-k and top-p come from the config, with or without the watermark
        (``watermark=False`` samples the same way, unwatermarked). ``wm.generate(model,
        prompts, ...)`` is accepted when ``model`` is the held generator, or when the Watermark
        holds none (its MM is another model and no generator was given to :meth:`load`).

        With the sentence layer (``sentences.bits`` > 0) a watermarked generation samples
        ``sentences.candidates`` candidates per sentence and keeps the best
        (:mod:`watermark.generate.rounds`); without it, generation does not pass there.

        Raises ``ValueError`` for an empty or blank prompt, ``max_new_tokens < 1``, a model
        other than the held one, or sampling arguments the config sets, before any work.
        """
        if prompts is None:
            model, prompts = None, model_or_prompts
        elif isinstance(model_or_prompts, torch.nn.Module):
            model = model_or_prompts
        else:
            raise UserError(
                "give the prompts first and the rest by name: wm.generate(prompts, "
                "max_new_tokens=...), or wm.generate(model, prompts, ...)"
            )
        model = generator_to_use(self.generator, model, self.core.vocab_size)
        prompts = [prompts] if isinstance(prompts, str) else list(prompts)
        check_prompts(prompts)
        check_generate_args(self.config, max_new_tokens, kwargs)
        processor = layer = None
        if watermark:
            processor = self._processor(record, eos_ids(model, self.tokenizer))
            layer = self.sentences  # None where the config has the layer off
        with one_thread(self.core.device.type == "cpu"):  # same draws at every thread count
            scheme = self.config.scheme  # the sampling settings, with or without the watermark
            return generate(
                model,
                self.tokenizer,
                prompts,
                processor,
                max_new_tokens=max_new_tokens,
                top_k=scheme.top_k,
                top_p=scheme.top_p,
                temperature=scheme.temperature,
                seed=seed,
                layer=layer,
                **kwargs,
            )

    def detect(
        self,
        texts: Sequence[str] | str,
        progress: bool = False,
        batch_size: int | None = None,
        workers: int = 0,
    ) -> list[DetectionResult]:
        """Detects the watermark in each text; see :class:`watermark.detect.detector.Detector`.

        ``batch_size`` texts are scored together (default: 8 on a CPU, 256 on an accelerator,
        where they share the models' forwards in fixed shapes: ``detector.batched``).
        ``workers`` > 0 assembles the results in that many processes (same results; for bulk
        detection on an accelerator, where the per-text work on the host bounds throughput).
        A text's result never depends on the texts detected with it. A string carries no record
        of what made it: ``wm.identity.compare(record)`` reads the one kept with it.
        """
        texts = [texts] if isinstance(texts, str) else list(texts)
        for n, text in enumerate(texts):
            if not isinstance(text, str):
                raise UserError(f"text {n} is a {type(text).__name__}, not a string")
        if batch_size is not None and (isinstance(batch_size, bool) or batch_size < 1):
            raise UserError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
            raise UserError(f"workers must be an integer >= 0, got {workers!r}")
        results = self.detector.detect(texts, progress, batch_size, workers)
        return results
