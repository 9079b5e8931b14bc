"""What ``generate`` writes with each text (its fingerprint, the token level's, the key's public
id) and what ``detect`` makes of it under another key or another sentence-layer setting."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from tests.helpers import save_tiny_watermark
from watermark.config.keys import DEMO_KEY, key_id

LAYER = {"bits": 8, "candidates": 2, "context_bits": 0, "keying": "own", "test": "margin"}


def _run(argv: list[str], capsys) -> list[dict]:
    from watermark.app.cli import main

    capsys.readouterr()
    assert main(argv) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def _generate(config: Path, capsys) -> Path:
    argv = ["generate", "--config", str(config), "--prompt", "river city council"]
    (row,) = _run([*argv, "--max-new-tokens", "16", "--seed", "0"], capsys)
    out = config.with_suffix(".jsonl")
    out.write_text(json.dumps(row) + "\n")
    return out


def test_demo_key_text_under_a_keygen_config_says_the_key_differs(
    tiny: SimpleNamespace, tiny_embedder_dir: Path, tmp_path: Path, capsys, caplog
) -> None:
    save_tiny_watermark(tiny, tiny_embedder_dir, tmp_path, key=DEMO_KEY)
    base, mine = tmp_path / "wm.json", tmp_path / "mine.json"
    _run(["keygen", "--config", str(base), "--out", str(mine)], capsys)
    made = _generate(base, capsys)
    row = json.loads(made.read_text())
    assert row["key_id"] == key_id(DEMO_KEY) and DEMO_KEY not in made.read_text()
    assert row["token_fingerprint"] == row["fingerprint"]  # no sentence layer
    (same,) = _run(["detect", "--config", str(base), "--file", str(made)], capsys)
    assert (same["fingerprint_matches"], same["key_matches"]) == (True, True)
    assert "mismatch" not in same and same["key_id"] == row["key_id"]
    with caplog.at_level("WARNING", logger="watermark.app.cli"):
        (other,) = _run(["detect", "--config", str(mine), "--file", str(made)], capsys)
    assert (other["fingerprint_matches"], other["key_matches"]) == (True, False)
    assert other["key_id"] != row["key_id"]  # the key it was tested under: keygen's
    assert other["mismatch"].startswith("made under another key (key-")
    assert "the public demo key" in other["mismatch"] and "1 input text(s) (line 1)" in caplog.text
    # rotated: the demo key is an old key of the next config, so the text matches again
    rotated = tmp_path / "next.json"
    _run(["keygen", "--config", str(base), "--out", str(rotated), "--rotate"], capsys)
    (again,) = _run(["detect", "--config", str(rotated), "--file", str(made)], capsys)
    assert again["key_matches"] and "mismatch" not in again


def test_robust_text_under_the_default_says_which_part_matches(
    tiny: SimpleNamespace, tiny_embedder_dir: Path, tmp_path: Path, capsys
) -> None:
    save_tiny_watermark(tiny, tiny_embedder_dir, tmp_path)
    plain = tmp_path / "wm.json"
    data = json.loads(plain.read_text())
    robust = tmp_path / "robust.json"
    robust.write_text(json.dumps({**data, "sentences": {**data["sentences"], **LAYER}}))
    made_robust, made_plain = _generate(robust, capsys), _generate(plain, capsys)
    row = json.loads(made_robust.read_text())
    assert row["token_fingerprint"] == json.loads(made_plain.read_text())["fingerprint"]
    assert row["fingerprint"] != row["token_fingerprint"]
    (found,) = _run(["detect", "--config", str(plain), "--file", str(made_robust)], capsys)
    assert (found["fingerprint_matches"], found["key_matches"]) == (False, True)
    assert "same token level and the sentence layer on" in found["mismatch"]
    assert "only the token-level test ran, and it holds" in found["mismatch"]
    assert "does not test as watermarked" not in found["mismatch"]
    (back,) = _run(["detect", "--config", str(robust), "--file", str(made_plain)], capsys)
    assert "without the sentence layer this config tests" in back["mismatch"]
    assert "sentence_p_value" in back and "combined_p_value" in back
