"""The strength rules' tensor formulas (:mod:`watermark.core.rules.logits`).

The schemes that use them, one class per rule, are in :mod:`watermark.config.schemes`.
"""
