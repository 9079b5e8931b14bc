"""Model loading keeps transformers' progress bars ("Loading weights") off, and only there."""

from __future__ import annotations

from transformers.utils import logging as hf_logging

from watermark.models.loaders import quiet_progress


def test_the_bars_are_off_while_loading_and_as_they_were_after() -> None:
    assert hf_logging.is_progress_bar_enabled()
    with quiet_progress():
        assert not hf_logging.is_progress_bar_enabled()
    assert hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # a user's own choice is kept
    try:
        with quiet_progress():
            pass
        assert not hf_logging.is_progress_bar_enabled()
    finally:
        hf_logging.enable_progress_bar()
