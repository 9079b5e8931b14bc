"""Detection from text alone.

* ``detector``: :class:`~watermark.detect.detector.Detector`, batched over texts and keys, with
  the sentence layer's test where the watermark has one;
* ``reading``: what a chunk of texts is read as with the models (gates, scored steps, reads);
* ``assembly``: one text's tests and per-token flags from its reads (in worker processes too);
* ``units``: which scored steps of a text or span enter the tests;
* ``stats``: the green-count tests (exact p-value, z-score, the windowed test);
* ``verdict``: one verdict per text over its keys, and its sentence tests where the layer is on;
* ``result``: :class:`~watermark.detect.result.DetectionResult`, what detection reports.
"""
