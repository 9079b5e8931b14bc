"""The one scoring core shared by generation and detection (:mod:`watermark.core.scoring`): the
gate and its measurement model, the semantic green lists and their token maps, the strength
rules' logits, the repeat policy, the tests and their units, the text rules, and the
fingerprint of what generation and detection share."""
