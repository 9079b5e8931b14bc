"""Tests for the watermark CLI: generate, detect and show round trip on tiny models."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from tests.helpers import save_tiny_watermark


def test_cli_generate_detect_show(
    tiny: SimpleNamespace, tiny_embedder_dir: Path, tmp_path: Path, capsys
) -> None:
    from watermark.app.cli import main

    save_tiny_watermark(tiny, tiny_embedder_dir, tmp_path, key="cli-key")  # relative paths
    cfg = tmp_path / "wm.json"
    assert (
        main(
            [
                "generate",
                "--config",
                str(cfg),
                "--prompt",
                "river city",
                "--prompt",
                "bank",
                "--max-new-tokens",
                "10",
                "--seed",
                "1",
            ]
        )
        == 0
    )
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [x["prompt"] for x in lines] == ["river city", "bank"] and all(
        "text" in x for x in lines
    )
    gen_file = tmp_path / "gen.jsonl"
    gen_file.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    assert main(["detect", "--config", str(cfg), "--file", str(gen_file), "--text", ""]) == 0
    detected = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert len(detected) == 3 and detected[0]["reason"] == "empty text"  # --text first, then --file
    for key in (
        "score",
        "green_fraction",
        "num_scored",
        "awr",
        "z_score",
        "p_value",
        "is_watermarked",
    ):
        assert key in detected[1]
    assert main(["detect", "--config", str(cfg), "--file", str(gen_file), "--windows", "4,8"]) == 0
    windowed = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert all(0 <= w["window_p_value"] <= 1 for w in windowed)
    assert all(d["window_p_value"] is not None for d in detected[1:])  # windowed by default
    assert main(["detect", "--config", str(cfg), "--file", str(gen_file), "--windows", "off"]) == 0
    whole = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert all(w["window_p_value"] is None for w in whole)
    assert [w["p_value"] for w in whole] == [d["p_value"] for d in detected[1:]]
    page = tmp_path / "page.html"
    assert main(["show", "--config", str(cfg), "--file", str(gen_file), "--out", str(page)]) == 0
    html = page.read_text()
    assert html.count('class="g"') + html.count('class="r"') == sum(
        d["num_scored"] for d in detected[1:]
    )


def test_cli_key_files_and_rotation(
    tiny: SimpleNamespace, tiny_embedder_dir: Path, tmp_path: Path, capsys
) -> None:
    """generate under one key file, detect with three: the text's key is found and reported."""
    from watermark.app.cli import main

    save_tiny_watermark(tiny, tiny_embedder_dir, tmp_path, key="unused-config-key")
    cfg = str(tmp_path / "wm.json")
    files = []
    for name in ("b", "a", "c"):
        (tmp_path / f"{name}.key").write_text(f"secret-{name}\n")
        files += ["--key-file", str(tmp_path / f"{name}.key")]
    assert (
        main(
            [
                "generate",
                "--config",
                cfg,
                "--prompt",
                "river city",
                "--max-new-tokens",
                "30",
                "--key-file",
                str(tmp_path / "a.key"),
            ]
        )
        == 0
    )
    out = capsys.readouterr()
    assert "secret-" not in out.out + out.err
    gen_file = tmp_path / "gen.jsonl"
    gen_file.write_text(out.out)
    assert main(["detect", "--config", cfg, "--file", str(gen_file), *files]) == 0
    rotated = json.loads(capsys.readouterr().out)
    assert (
        main(
            [
                "detect",
                "--config",
                cfg,
                "--file",
                str(gen_file),
                "--key-file",
                str(tmp_path / "a.key"),
            ]
        )
        == 0
    )
    alone = json.loads(capsys.readouterr().out)
    assert rotated["key_index"] == 1 and alone["key_index"] == 0
    assert rotated["p_value"] == min(1.0, 3 * alone["p_value"])
