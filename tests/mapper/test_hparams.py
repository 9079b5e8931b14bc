"""The two Lightning systems share one list of hyper-parameters: `MapperSystem` declares each
shared one once, `SentenceMapperSystem` takes them by keyword (``**shared``) with the same
defaults, as the command line (LightningCLI's parser) and the saved ``hparams`` both see."""

from __future__ import annotations

import inspect

import pytest
from jsonargparse import ArgumentParser

from mapper.sentence_system import SentenceMapperSystem
from mapper.system import MapperSystem

SENTENCE_ONLY = {"w_stability", "w_spread", "metric_keys", "init_from"}
SIZES = {"input_dim": 4, "hidden_dim": 8, "output_dim": 6}


def cli_defaults(cls: type) -> dict:
    """The model arguments and defaults LightningCLI builds from the class's signature."""
    parser = ArgumentParser(exit_on_error=False)
    parser.add_class_arguments(cls, "model")
    return dict(parser.get_defaults()["model"])


def test_each_shared_hyper_parameter_is_declared_once() -> None:
    own = set(inspect.signature(SentenceMapperSystem.__init__).parameters) - {"self", "shared"}
    shared = set(inspect.signature(MapperSystem.__init__).parameters) - {"self"}
    assert own == SENTENCE_ONLY and not own & shared


def test_the_cli_gives_both_systems_the_same_shared_arguments_and_defaults() -> None:
    token, sentence = cli_defaults(MapperSystem), cli_defaults(SentenceMapperSystem)
    assert set(sentence) == set(token) | SENTENCE_ONLY
    drifted = {k: (v, sentence[k]) for k, v in token.items() if sentence[k] != v}
    assert not drifted, f"shared defaults differ (token, sentence): {drifted}"


def test_saved_hparams_hold_every_shared_one_and_take_keywords_only() -> None:
    token = MapperSystem(**SIZES, sharpness=5.0)
    sentence = SentenceMapperSystem(**SIZES, sharpness=5.0, w_spread=0.5)
    assert dict(sentence.hparams) == {
        **token.hparams,
        "w_stability": 1.0,
        "w_spread": 0.5,
        "metric_keys": 8,
        "init_from": None,
    }
    with pytest.raises(TypeError):
        SentenceMapperSystem(4, 8, 6)  # type: ignore[misc]
    with pytest.raises(TypeError):
        MapperSystem(4, 8, 6)  # type: ignore[misc]
