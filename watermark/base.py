"""The bottom of the package: what every layer shares and that imports nothing of it.

* :class:`UserError`, the exception that marks a mistake the user can fix, as opposed to an
  internal failure. The library raises it for an invalid config, a model, tokenizer or key that
  does not fit it, and arguments or inputs it cannot use. It is a ``ValueError``, so code that
  catches ``ValueError`` keeps working. The command line (:mod:`watermark.app.cli`) exits with
  status 2 on it, as on a missing file or package, and with status 1 on anything else.
* The sentence layer's vocabularies, which the config checks (:mod:`watermark.config.sections`)
  and the layer reads (:mod:`watermark.sentences.key`): written once, here.
"""

from __future__ import annotations

KEYINGS = ("previous", "own")  # where a sentence's group signs are read
SENTENCE_TESTS = ("hits", "margin")  # how a sentence's hits are counted
SENTENCE_CHOICES = ("score", "survival")  # how generation ranks candidate sentences
WEIGHT_POWERS = (1, 2, 3, 4)  # the margin weights' powers


class UserError(ValueError):
    """A mistake the caller can fix; the message says what to change."""
