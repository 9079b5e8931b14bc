"""Watermarked generation, and the one decode loop.

* ``processor``: :class:`~watermark.generate.processor.AdaptiveWatermarkLogitsProcessor`, the
  logits processor for a user's own ``model.generate`` call (the loop's reference);
* ``streams``: the decode machinery (the KV caches, the measurement model's stream, EOS blocking,
  sampling);
* ``loop``: the one decode loop, the plug it calls (``Rounds``) and the token level's plug; the
  limits and the EOS cut;
* ``keep``: which candidate a sentence round keeps (through the sentence layer's choice);
* ``rounds``: the sentence layer's plug, every prompt's candidates in the decode loop;
* ``per_prompt``: the same through ``model.generate``, one call per prompt and sentence (the
  loop's reference);
* ``generation``: prompts in, continuations out
  (:func:`~watermark.generate.generation.generate`, the one place that chooses the path).
"""
