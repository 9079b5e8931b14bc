"""The mapper and the embedder as key material: digests, pins, refusals and fingerprints."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.helpers import save_tiny_watermark, tiny_mapper
from watermark.base import UserError
from watermark.config.paths import PACKAGE_DIR
from watermark.config.watermark_config import WatermarkConfig
from watermark.core.identity import expected_digest, shipped_pins, tensor_digest

OTHER = "sha256:" + "0" * 64


def test_tensor_digest_follows_the_values_not_the_object_or_dtype_round_trip() -> None:
    a, b = tiny_mapper(16, 24, seed=0), tiny_mapper(16, 24, seed=0)
    assert tensor_digest(a) == tensor_digest(b)
    assert tensor_digest(a) != tensor_digest(tiny_mapper(16, 24, seed=1))
    assert tensor_digest(a.double()) == tensor_digest(b)  # exact float32 values, any dtype
    assert tensor_digest(a).startswith("sha256:") and len(tensor_digest(a)) == 71


def test_the_shipped_config_pins_the_packaged_mapper_and_embedder() -> None:
    from watermark.models.semantic_mapper import SemanticMapper

    shipped = WatermarkConfig.default()
    packaged = SemanticMapper.from_pretrained(PACKAGE_DIR / "checkpoints" / "mapper-minilm")
    assert shipped.models.mapper_digest == tensor_digest(packaged)
    assert shipped_pins()["embedder"] == ("minilm", shipped.models.embedder_digest)
    # a config without pins that names the shipped parts is held to the shipped digests
    plain = WatermarkConfig.of(opening_sentence="x")
    assert expected_digest(plain, "mapper", by_name=True) == shipped.models.mapper_digest
    assert expected_digest(plain.evolve(mapper="elsewhere"), "mapper", by_name=True) is None
    assert expected_digest(plain, "mapper", by_name=False) is None  # an object passed in
    with pytest.raises(ValueError, match="mapper_digest must be 'sha256:'"):
        WatermarkConfig.of(mapper_digest="dd48ff")


def test_a_wrong_pin_is_refused_and_the_right_one_loads(tiny: SimpleNamespace) -> None:
    found = tensor_digest(tiny.mapper)
    with pytest.raises(UserError, match=r"expected sha256:000000000000, found " + found[:19]):
        tiny.make(mapper_digest=OTHER)
    with pytest.raises(UserError, match="embedder 'minilm' is not the one"):
        tiny.make(embedder_digest=OTHER)
    wm = tiny.make(mapper_digest=found, embedder_digest=tensor_digest(tiny.emb))
    assert wm.fingerprint.startswith("wm-") and len(wm.fingerprint) == 15


def test_fingerprint_covers_shared_fields_and_parts_never_the_key(tiny: SimpleNamespace) -> None:
    base = tiny.make(key="one").fingerprint
    assert tiny.make(key="two", top_k=5, delta=0.5).fingerprint == base  # key, sampling, strength
    assert tiny.make(key="one", alpha=0.5).fingerprint != base  # the gate
    assert tiny.make(key="one", window_sizes=[]).fingerprint == base  # detection policy
    assert tiny.make(key="one", rule="tournament", layers=3).fingerprint != base


def test_cli_refuses_a_config_whose_mapper_is_another(
    tiny: SimpleNamespace, tiny_embedder_dir: Path, tmp_path: Path, capsys
) -> None:
    from watermark.app.cli import main

    save_tiny_watermark(tiny, tiny_embedder_dir, tmp_path, mapper_digest=OTHER)
    capsys.readouterr()
    code = main(["detect", "--config", str(tmp_path / "wm.json"), "--text", "river city"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert "expected sha256:000000000000, found sha256:" in err[0] and 'point "mapper"' in err[0]


def test_keygen_pins_and_detect_flags_another_fingerprint(
    tiny: SimpleNamespace, tiny_embedder_dir: Path, tmp_path: Path, capsys, caplog
) -> None:
    from watermark.app.cli import main

    save_tiny_watermark(tiny, tiny_embedder_dir, tmp_path)
    base, mine = str(tmp_path / "wm.json"), tmp_path / "mine.json"
    assert main(["keygen", "--config", base, "--out", str(mine)]) == 0
    pinned = json.loads(mine.read_text())
    assert pinned["models"]["mapper_digest"] == tensor_digest(tiny.mapper)
    assert pinned["models"]["embedder_digest"].startswith("sha256:")
    capsys.readouterr()
    assert (
        main(
            [
                "generate",
                "--config",
                str(mine),
                "--prompt",
                "river city",
                "--max-new-tokens",
                "12",
                "--seed",
                "0",
            ]
        )
        == 0
    )
    made = json.loads(capsys.readouterr().out)
    assert made["fingerprint"].startswith("wm-")
    other = dict(made, fingerprint="wm-000000000000")
    lines = tmp_path / "gen.jsonl"
    lines.write_text(json.dumps(made) + "\n" + json.dumps(other) + "\n" + '{"text": "bank"}\n')
    with caplog.at_level("WARNING", logger="watermark.app.cli"):
        assert main(["detect", "--config", str(mine), "--file", str(lines)]) == 0
    out = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [o["fingerprint"] for o in out] == [made["fingerprint"]] * 3
    assert [o.get("fingerprint_matches") for o in out] == [True, False, None]
    assert "1 input text(s) (line 2)" in caplog.text
    # the same text under a config with another mapper: refused before any detection
    bad = {**pinned, "models": {**pinned["models"], "mapper_digest": OTHER}}
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    assert main(["detect", "--config", str(tmp_path / "bad.json"), "--file", str(lines)]) == 2


def test_an_unpinned_mapper_loaded_by_name_warns(
    tiny: SimpleNamespace, tiny_embedder_dir: Path, tmp_path: Path, caplog
) -> None:
    from watermark.api import Watermark

    save_tiny_watermark(tiny, tiny_embedder_dir, tmp_path)
    with caplog.at_level("WARNING", logger="watermark.core.identity"):
        Watermark.load(tmp_path / "wm.json")
    assert "does not pin its mapper" in caplog.text and "mapper_digest" in caplog.text


# the fingerprints of the shipped configs (by name) and the repository's (files of configs/) with
# the shipped parts and SmolLM2's V (49,152), as 0.7 printed them: a config change that moves
# one fails here
SHIPPED_FINGERPRINTS = {
    "default": "wm-dac3939ad386",
    "watermark-0.4.json": "wm-dac3939ad386",
    "watermark-0.6-whole-text.json": "wm-dac3939ad386",
    "watermark-whole-text.json": "wm-dac3939ad386",
    "additive": "wm-7aacf9987e37",
    "paper": "wm-311dce91a866",
    "robust": "wm-848ee6dcaa60",
}


@pytest.mark.parametrize("name", sorted(SHIPPED_FINGERPRINTS))
def test_the_fingerprints_of_the_shipped_configs_do_not_move(name: str) -> None:
    from watermark.core.identity import fingerprint

    root = Path(__file__).resolve().parents[3]
    cfg = WatermarkConfig.load(name if "." not in name else root / "configs" / name)
    pins = WatermarkConfig.default().models
    found = fingerprint(cfg, 49152, pins.mapper_digest, pins.embedder_digest)
    assert found == SHIPPED_FINGERPRINTS[name]
