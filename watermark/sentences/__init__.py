"""The sentence layer: a mark in the meaning of each sentence, chosen among candidates.

* ``layer``: :class:`~watermark.sentences.layer.SentenceLayer`, one per watermark: which
  candidate generation keeps, and the sentence test that joins detection's verdict, under every
  key (the rules are in :mod:`watermark.core.sentences`);
* ``generation``: sentence-by-sentence generation (the reference path through
  ``model.generate``);
* ``decoding``: every prompt's candidates in one decode loop, on the token-level decode path of
  :mod:`watermark.generate.decoding`.
"""
