"""Detection from text alone.

* ``detector``: :class:`~watermark.detect.detector.Detector`, batched over texts and keys, with
  the sentence layer's test where the watermark has one;
* ``assembly``: one text's tests and per-token flags from its reads (in worker processes too);
* ``result``: :class:`~watermark.detect.result.DetectionResult`, what detection reports.
"""
