"""The strength rules: their names and the config field that sets each rule's strength.

``paper`` and ``floor`` scale green logits by ``delta``, ``additive`` adds ``bias`` to them and
``tournament`` samples over ``layers`` green lists. How each rule turns logits into the logits that
are sampled from is in :mod:`watermark.core.rules.logits`; this registry imports nothing, so that a
config can be checked (and the command line can report a mistake) without loading torch.
"""

from __future__ import annotations

STRENGTH_FIELD = {"paper": "delta", "floor": "delta", "additive": "bias", "tournament": "layers"}
RULES = tuple(STRENGTH_FIELD)
