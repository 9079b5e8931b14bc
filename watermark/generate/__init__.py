"""Watermarked generation at the token level, and the one decode loop.

* ``processor``: :class:`~watermark.generate.processor.AdaptiveWatermarkLogitsProcessor`, the
  logits processor for a user's own ``model.generate`` call (the loop's reference);
* ``streams``: the decode machinery (the KV caches, the measurement model's stream, EOS blocking,
  sampling);
* ``loop``: the one decode loop, for the token level and, with its rounds plugged in, the
  sentence layer (:mod:`watermark.sentences.rounds`); the limits and the EOS cut;
* ``generation``: prompts in, continuations out (:func:`~watermark.generate.generation.generate`).
"""
