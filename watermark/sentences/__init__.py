"""The sentence layer's rules: a mark in the meaning of each sentence, chosen among candidates.

To change how a candidate is chosen, read :meth:`~watermark.sentences.layer.SentenceLayer.rank`:
it is the one choice, used by the round's pick, by resampling and by the reference path
(:mod:`watermark.generate`).

* ``spans``: where a sentence ends, in text (detection) and in tokens (generation);
* ``key``: :class:`~watermark.sentences.key.SentenceKey`, the keyed outputs and signs, the
  candidates' scores and the margin weights;
* ``significance``: one text's sentence test under one key, exact over keys;
* ``layer``: :class:`~watermark.sentences.layer.SentenceLayer`, one per watermark: the ranking
  of candidates and the sentence tests of a text under every key (detection's verdict over them
  is :mod:`watermark.detect.verdict`);
* ``parts``: the layer's own mapper and sentence embedder, where the config names them
  (``sentences.mapper``, ``sentences.embedder``), loaded and checked against their pins.

Generation with the layer (its candidates in the decode loop, and the reference path) is
:mod:`watermark.generate`'s; this package imports nothing from it.
"""
