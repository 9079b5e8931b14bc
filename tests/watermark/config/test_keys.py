"""Tests for secret keys: key sources, keygen, the demo-key warning, no leaks, rotation."""

from __future__ import annotations

import json
import logging
import os
import stat
from types import SimpleNamespace

import pytest

from tests.helpers import PROMPTS, sentences
from watermark.app.cli import main
from watermark.config import keys
from watermark.config.keys import DEMO_KEY, resolve_key
from watermark.config.watermark_config import WatermarkConfig

SECRET = "s3cret-key-0f-the-provider-7d1e"


def test_key_sources(tmp_path, monkeypatch) -> None:
    assert resolve_key(SECRET) == SECRET
    monkeypatch.setenv("WM_TEST_KEY", SECRET)
    assert resolve_key("env:WM_TEST_KEY") == SECRET
    (tmp_path / "k.key").write_text(SECRET + "\n")
    assert resolve_key("file:k.key", lambda p: str(tmp_path / p)) == SECRET
    monkeypatch.setenv("WM_EMPTY", "")
    for ref, match in (
        ("env:WM_UNSET_X", "WM_UNSET_X"),
        ("env:WM_EMPTY", "WM_EMPTY"),
        (f"file:{tmp_path}/none", "cannot be read"),
    ):
        with pytest.raises(ValueError, match=match):
            resolve_key(ref)
    (tmp_path / "empty.key").write_text("\n")
    with pytest.raises(ValueError, match="empty"):
        resolve_key(f"file:{tmp_path}/empty.key")


def test_config_keys_resolve_relative_to_the_config(tmp_path) -> None:
    (tmp_path / "k.key").write_text(SECRET)
    cfg = WatermarkConfig.from_dict(
        {"key": "file:k.key", "old_keys": ["older-key"]}, source=str(tmp_path / "c.json")
    )
    assert cfg.secret_keys() == [SECRET, "older-key"]
    assert SECRET not in repr(cfg) and "older-key" not in repr(cfg)
    with pytest.raises(ValueError, match="old_keys") as err:
        WatermarkConfig.of(old_keys=[""])
    with pytest.raises(ValueError, match="key must be str, got int") as err:
        WatermarkConfig.of(key=12345)
    assert "12345" not in str(err.value)


def test_keygen_writes_private_files_and_never_prints_the_key(tmp_path, capsys) -> None:
    out, key_file = tmp_path / "my.json", tmp_path / "my.key"
    assert main(["keygen", "--out", str(out)]) == 0
    cfg = json.loads(out.read_text())["keys"]  # the sections, as a config is saved
    assert len(cfg["key"]) == 64 and cfg["key"] != DEMO_KEY and cfg["old_keys"] == []
    assert cfg["opening_sentence"] != WatermarkConfig().keys.opening_sentence
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    printed = capsys.readouterr()
    assert cfg["key"] not in printed.out + printed.err
    assert main(["keygen", "--out", str(out)]) == 2  # no silent overwrite
    assert "exists" in capsys.readouterr().err
    rotated = tmp_path / "rotated.json"
    args = ["keygen", "--config", str(out), "--out", str(rotated), "--key-file", str(key_file)]
    assert main([*args, "--rotate"]) == 0
    new = json.loads(rotated.read_text())["keys"]
    assert new["key"] == f"file:{key_file}" and new["old_keys"] == [cfg["key"]]
    assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600
    fresh = key_file.read_text().strip()
    assert len(fresh) == 64 and fresh not in capsys.readouterr().out
    assert WatermarkConfig.load(rotated).secret_keys() == [fresh, cfg["key"]]
    hidden = tmp_path / "new" / "secrets" / "k.key"  # a missing folder is made, owner only
    assert main(["keygen", "--out", str(tmp_path / "k.json"), "--key-file", str(hidden)]) == 0
    assert stat.S_IMODE(os.stat(hidden.parent).st_mode) == 0o700 and hidden.is_file()


def test_demo_key_warns_once_on_generation_not_on_detection(tiny, caplog, monkeypatch) -> None:
    from watermark.generate.generation import generate

    monkeypatch.setattr(keys, "_warned", False)
    demo = tiny.make(key=DEMO_KEY)
    with caplog.at_level(logging.WARNING, logger="watermark.config.keys"):
        demo.detect(sentences(2, seed=1))
        assert not caplog.records
        for _ in range(2):
            generate(tiny.gen, tiny.gtok, PROMPTS[:1], demo.logits_processor(), max_new_tokens=4)
    warnings = [r for r in caplog.records if "public demo key" in r.getMessage()]
    assert len(warnings) == 1
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="watermark.config.keys"):
        tiny.make(key=SECRET).logits_processor()
    assert not caplog.records


def test_no_secret_in_logs_reprs_results_or_errors(tiny, caplog, monkeypatch) -> None:
    from watermark.generate.generation import generate

    with caplog.at_level(logging.DEBUG):
        wm = tiny.make(key=SECRET, old_keys=["an-older-secret"])
        outs = generate(tiny.gen, tiny.gtok, PROMPTS, wm.logits_processor(), max_new_tokens=8)
        results = wm.detect([o.text for o in outs] + sentences(2))
    seen = [r.getMessage() for r in caplog.records] + [repr(wm), repr(wm.config)]
    seen += [json.dumps(r.to_dict(per_token=True)) for r in results]
    monkeypatch.delenv("WM_MISSING", raising=False)
    try:
        tiny.make(key="env:WM_MISSING")
    except ValueError as err:
        seen.append(str(err))
    text = "\n".join(seen)
    assert "WM_MISSING" in text  # the error names the variable ...
    assert SECRET not in text and "an-older-secret" not in text  # ... never a key


@pytest.fixture(scope="module")
def rotation(tiny: SimpleNamespace) -> SimpleNamespace:
    from watermark.generate.generation import generate

    made = tiny.make(key="key-A")
    outs = generate(
        tiny.gen, tiny.gtok, PROMPTS, made.logits_processor(), max_new_tokens=40, do_sample=False
    )
    return SimpleNamespace(
        made=made,
        texts=[o.text for o in outs],
        three=tiny.make(key="key-B", old_keys=["key-A", "key-C"]),
    )


def test_rotation_finds_the_key_a_text_was_made_with(rotation) -> None:
    alone = rotation.made.detect(rotation.texts)
    found = rotation.three.detect(rotation.texts)
    for a, b in zip(alone, found):
        assert b.key_index == 1 and b.key_p_values[1] == a.p_value
        assert b.p_value == min(1.0, 3 * a.p_value)  # corrected for the three keys
        assert a.p_value < min(b.key_p_values[0], b.key_p_values[2])
        assert b.scored == a.scored and b.green == a.green


def test_rotation_stays_calibrated_on_unwatermarked_text(rotation) -> None:
    """Random texts under three keys: at p < 0.1, at most 12 of 60 (10% plus sampling error)."""
    found = rotation.three.detect(sentences(60, seed=3, length=30))
    uncorrected = sum(min(r.key_p_values) < 0.1 for r in found)
    corrected = sum(r.p_value < 0.1 for r in found)
    assert corrected <= 12 and corrected <= uncorrected


def test_env_and_file_keys_give_the_same_watermark_as_the_key_itself(
    tiny, tmp_path, monkeypatch
) -> None:
    import torch

    monkeypatch.setenv("WM_TEST_KEY", SECRET)
    (tmp_path / "k.key").write_text(SECRET + "\n")
    direct = tiny.make(key=SECRET).token_maps
    assert torch.equal(tiny.make(key="env:WM_TEST_KEY").token_maps, direct)
    assert torch.equal(tiny.make(key=f"file:{tmp_path}/k.key").token_maps, direct)
    assert not torch.equal(tiny.make(key="another").token_maps, direct)
