"""A scheme's strength rule run on a batch of logits (:mod:`watermark.core.rules.logits`).

The rules themselves, one class each, are in :mod:`watermark.config.schemes`.
"""
