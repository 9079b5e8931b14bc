"""Repository tools for the offline corpus: sources, splits, augmentations, paraphrases and
synonyms used by mapper training and the evaluation (not part of the installed library)."""
