"""Detection from text alone.

* ``detector``: :class:`~watermark.detect.detector.Detector`, batched over texts and keys, with
  the sentence layer's test where the watermark has one;
* ``assembly``: one text's tests and per-token flags from its reads (in worker processes too);
* ``verdict``: one verdict per text over its keys, and its sentence tests where the layer is on;
* ``result``: :class:`~watermark.detect.result.DetectionResult`, what detection reports.
"""
