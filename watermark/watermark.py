"""Loading a watermark: config -> tokenizer, measurement model, embedder, mapper, token map.

:class:`Watermark` bundles everything generation and detection share and checks that the parts
fit together at load time (embedder width vs mapper input, mapper output vs token map, tokenizer
vs LM-head width, null model vs MM), failing with a message that names the mismatch. Components
can be passed in already loaded (tests use tiny random models; the CLI reuses the generator as
the MM when both names are equal).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import replace

import torch

from mapper.semantic_mapper import SemanticMapper
from watermark.config import WatermarkConfig, as_config
from watermark.core import WatermarkCore
from watermark.detector import DetectionResult, Detector
from watermark.generation import Generation, eos_ids, generate
from watermark.keys import DEMO_KEY, warn_demo_key
from watermark.models import embedder_dim, load_embedder
from watermark.parts import (
    DTYPES,
    check_prompts,
    head_width,
    load_measurement,
    load_tokenizer,
    resolve_device,
    vocab_size,
)
from watermark.processor import AdaptiveWatermarkLogitsProcessor
from watermark.semantic import SemanticScorer
from watermark.token_map import build_token_maps

logger = logging.getLogger(__name__)


class Watermark:
    """A loaded watermark: the shared core, a logits processor factory and the detector.

    Use :meth:`load`; the constructor takes ready components.
    """

    def __init__(self, config: WatermarkConfig, core: WatermarkCore) -> None:
        self.config = config
        self.core = core
        self.tokenizer = core.tokenizer
        self.detector = Detector(core)
        self.uses_demo_key = False  # set by load: generation then warns once per process

    def __repr__(self) -> str:
        return f"Watermark({self.config!r})"

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
        device: str | torch.device | None = None,
        dtype: str | torch.dtype | None = None,
    ) -> Watermark:
        """Loads every component named in the config (or uses the ones passed) and checks them.

        Args:
            config: A config, a JSON path, or ``None`` for the shipped default.
            tokenizer: Generator tokenizer (default: loaded from ``config.generator``).
            generator: The generator model, if loaded; used to check the LM-head width and reused
                as the MM when ``config.measurement_model == config.generator``.
            measurement_model: MM model (default: loaded from ``config.measurement_model``).
            mm_tokenizer: MM tokenizer (default: the generator's when the names are equal).
            embedder: Sentence-transformers model (default: ``load_embedder(config.embedder)``).
            mapper: Semantic mapper (default: loaded from ``config.mapper``).
            device: Where the MM, the SE, the mapper and the token maps run: ``None`` (the
                generator's device, else the CPU), ``"auto"`` (CUDA when available), ``"cpu"``,
                ``"cuda"`` or ``"cuda:N"``. Results do not depend on it beyond float noise.
            dtype: Overrides the config's ``compute_dtype`` (MM and SE), e.g. ``"bfloat16"``.
                Texts must be detected with the dtype they were generated with.

        Raises:
            ValueError: If the parts do not fit together.
        """
        cfg = as_config(config)
        if dtype is not None:
            name = str(dtype).removeprefix("torch.")
            cfg = replace(cfg, compute_dtype=name)  # checked by the config
        device = resolve_device(device, generator)
        vocab = vocab_size(cfg, generator, tokenizer is not None)  # cheap checks first
        if tokenizer is None:
            tokenizer = load_tokenizer(cfg.resolve_path(cfg.generator))
        if len(tokenizer) > vocab:
            raise ValueError(
                f"the generator tokenizer has {len(tokenizer)} tokens but vocab_size (LM-head "
                f"width) is {vocab}; the token map would not cover every token id"
            )
        mapper = mapper if mapper is not None else SemanticMapper.from_pretrained(cfg.mapper_dir())
        mapper = mapper.to(device=device, dtype=torch.float32)
        if embedder is None:
            embedder = load_embedder(cfg.resolve_path(cfg.embedder), device=str(device))
        embedder = embedder.to(device=device, dtype=DTYPES[cfg.compute_dtype])
        e_dim, m_in = embedder_dim(embedder), int(mapper.config.input_dim)
        if e_dim != m_in:
            raise ValueError(
                f"embedder {cfg.embedder!r} outputs {e_dim}-d embeddings but the mapper "
                f"{cfg.mapper!r} expects input_dim={m_in} (trained with "
                f"{mapper.config.embedder!r}); use the embedder the mapper was trained with"
            )
        D = int(mapper.config.output_dim)
        keys = cfg.secret_keys()
        try:
            token_maps = [build_token_maps(k, vocab, D, cfg.layers, cfg.token_map) for k in keys]
        except ValueError as err:
            raise ValueError(f"mapper {cfg.mapper!r} does not fit the token map: {err}") from err
        mm = load_measurement(
            cfg, tokenizer, generator, measurement_model, mm_tokenizer, vocab, device
        )
        semantic = SemanticScorer(embedder, mapper, token_maps[0], batch_size=cfg.embed_batch_size,
                                  timer=mm.timer, old_token_maps=token_maps[1:])  # fmt: skip
        logger.info(
            "watermark loaded: generator=%s V=%d D=%d MM=%s (%s tokenizer) SE=%s on %s, %s",
            cfg.generator,
            vocab,
            D,
            cfg.measurement_model,
            "same" if mm.same_tokenizer else "cross",
            cfg.embedder,
            device,
            cfg.compute_dtype,
        )
        wm = cls(cfg, WatermarkCore(cfg, tokenizer, mm, semantic))
        wm.uses_demo_key = keys[0] == DEMO_KEY
        return wm

    def logits_processor(
        self, record: bool = False, eos_token_ids: Sequence[int] | None = None
    ) -> AdaptiveWatermarkLogitsProcessor:
        """A new logits processor for ``model.generate`` (one per concurrent generation)."""
        if self.uses_demo_key:
            warn_demo_key()
        return AdaptiveWatermarkLogitsProcessor(
            self.core, eos_token_ids=eos_token_ids, record=record
        )

    def generate(
        self,
        model: torch.nn.Module,
        prompts: Sequence[str] | str,
        max_new_tokens: int = 200,
        seed: int | None = None,
        watermark: bool = True,
        record: bool = True,
        **kwargs: object,
    ) -> list[Generation]:
        """Watermarked continuations of ``prompts`` (rule and top-k / top-p from the config).

        A single string is one prompt. Raises ``ValueError`` for an empty or blank prompt, or
        ``max_new_tokens < 1``, before any generation work.
        """
        prompts = [prompts] if isinstance(prompts, str) else list(prompts)
        check_prompts(prompts)
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int):
            raise ValueError(f"max_new_tokens must be an integer >= 1, got {max_new_tokens!r}")
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        width = head_width(model)
        if width != self.core.vocab_size:
            raise ValueError(
                f"model LM head has width {width} but the watermark was built for "
                f"V={self.core.vocab_size}"
            )
        processor = None
        if watermark:
            processor = self.logits_processor(
                record=record, eos_token_ids=eos_ids(model, self.tokenizer)
            )
        return generate(
            model,
            self.tokenizer,
            prompts,
            processor,
            max_new_tokens=max_new_tokens,
            top_k=self.config.top_k,
            top_p=self.config.top_p,
            seed=seed,
            **kwargs,
        )

    def detect(
        self, texts: Sequence[str] | str, progress: bool = False, batch_size: int | None = None
    ) -> list[DetectionResult]:
        """Detects the watermark in each text; see :class:`watermark.detector.Detector`.

        ``batch_size`` texts are scored together (default: 8 on a CPU, 64 on an accelerator).
        """
        texts = [texts] if isinstance(texts, str) else list(texts)
        for n, text in enumerate(texts):
            if not isinstance(text, str):
                raise ValueError(f"text {n} is a {type(text).__name__}, not a string")
        if batch_size is not None and (isinstance(batch_size, bool) or batch_size < 1):
            raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        return self.detector.detect(texts, progress=progress, chunk_size=batch_size)
