"""Watermarked generation at the token level.

* ``processor``: :class:`~watermark.generate.processor.AdaptiveWatermarkLogitsProcessor`, the
  logits processor for a user's own ``model.generate`` call (the reference of the loops below);
* ``decoding``: the one token-level decode path outside ``model.generate`` (the KV caches, the
  measurement model's stream, EOS blocking, sampling) and the fused generation built on it;
* ``generation``: prompts in, continuations out (:func:`~watermark.generate.generation.generate`).
"""
