"""Tests for the CLI on errors: one `error:` line on stderr, exit status 2 for a user mistake and
1 for an internal failure; `-v` shows the traceback."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.helpers import flat_fields, save_tiny_watermark
from watermark.app.cli import INTERNAL_ERROR, USAGE_ERROR, UsageError, main
from watermark.base import UserError
from watermark.config.watermark_config import WatermarkConfig


@pytest.fixture(scope="module")
def folders(tiny: SimpleNamespace, tiny_embedder_dir: Path, tmp_path_factory) -> SimpleNamespace:
    """Tiny generator and mapper folders and a config file that uses them."""
    root = tmp_path_factory.mktemp("cli_errors")
    fields = save_tiny_watermark(tiny, tiny_embedder_dir, root)
    return SimpleNamespace(root=root, fields=fields, config=str(root / "wm.json"))


def write_config(folders: SimpleNamespace, name: str, **changes: object) -> str:
    data = {**flat_fields(WatermarkConfig.of(**folders.fields)), **changes}
    if "scaling" in changes:
        del data["layers"]  # the tournament's strength: another rule's is refused
    path = folders.root / name
    path.write_text(json.dumps(data))
    return str(path)


def fails(capsys, argv: list[str], *expected: str) -> str:
    """Runs the CLI, checks status 2, one stderr line (besides progress bars) starting with
    ``error:`` and holding each of ``expected``, and nothing on stdout."""
    assert main(argv) == USAGE_ERROR
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip() and "it/s]" not in line]
    assert out == "" and len(lines) == 1 and lines[0].startswith("error: "), err
    for part in expected:
        assert part in lines[0], lines[0]
    return lines[0]


def test_missing_binary_and_malformed_files(folders, tmp_path: Path, capsys) -> None:
    cfg = ["--config", folders.config]
    fails(capsys, ["detect", "--file", str(tmp_path / "nope.jsonl"), *cfg], "no such file")
    binary = tmp_path / "bin.dat"
    binary.write_bytes(b"\x00\xff\xfe\x80")
    fails(capsys, ["detect", "--file", str(binary), *cfg], "not UTF-8")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n\n{"text": oops}\n')
    fails(capsys, ["detect", "--file", str(bad), *cfg], f"{bad}:3:", "not valid JSON")
    wrong = tmp_path / "wrong.jsonl"
    wrong.write_text('{"text": "fine"}\n{"prompt": "no text field"}\n')
    fails(capsys, ["detect", "--file", str(wrong), *cfg], f"{wrong}:2:", "'text'")
    fails(capsys, ["generate", "--file", str(wrong), *cfg], f"{wrong}:1:", "'prompt'")


def test_config_mistakes_are_reported_before_models_load(
    folders, tmp_path: Path, capsys, monkeypatch
) -> None:
    import watermark.api as wm_module

    def no_load(*args, **kwargs):
        raise AssertionError("models were loaded before the config was checked")

    monkeypatch.setattr(wm_module.Watermark, "load", no_load)
    text = ["detect", "--text", "some text"]
    fails(capsys, [*text, "--config", str(tmp_path / "none.json")], "none.json not found")
    fails(
        capsys,
        [*text, "--config", write_config(folders, "a.json", alpha="two")],
        "alpha must be float or int, got 'two'",
    )
    paper = write_config(folders, "d.json", scaling="paper", delta=-1)
    fails(capsys, [*text, "--config", paper], "delta must be > 0")
    fails(capsys, [*text, "--config", write_config(folders, "u.json", alhpa=2)], "'alhpa'")
    fails(
        capsys,
        [*text, "--config", write_config(folders, "m.json", mapper="no/such")],
        "mapper folder 'no/such' not found",
    )
    broken = tmp_path / "broken.json"
    broken.write_text('{"alpha": 2.0,\n "delta": }')
    fails(capsys, [*text, "--config", str(broken)], f"{broken}:2:", "not valid JSON")


# ten bad config files: each gives one `error:` line naming what is wrong, and exit 2
BAD_CONFIGS = [
    ('{"alpha": 3.0, "scheme": {"alpha": 2.0}}', "key 'alpha' stands beside the sections"),
    ('{"scheme": {"alpha": 2.0, "alpha": 3.0}}', "key 'alpha' is named twice"),
    ('{"shceme": {"alpha": 2.0}}', "unknown section 'shceme'"),
    ('{"scheme": {"alhpa": 2.0}}', "unknown key 'alhpa' in section 'scheme'"),
    ('{"scheme": {"rule": "tournament", "bias": 3.0}}', "not a setting of rule 'tournament'"),
    ('{"scheme": {"alpha": "two"}}', "scheme.alpha must be float or int, got 'two'"),
    ('{"sentences": {"keying": "next"}}', "sentences.keying must be one of"),
    ('{"detection": {"target_fpr": 2}}', "target_fpr must be in (0, 1)"),
    ('{"scheme": {"alpha": 2.0,}}', "not valid JSON"),
    ("[1, 2]", "must hold a JSON object"),
]


@pytest.mark.parametrize(("text", "message"), BAD_CONFIGS)
def test_ten_bad_config_files_give_one_line_and_exit_2(
    text: str, message: str, tmp_path: Path, capsys, monkeypatch
) -> None:
    import watermark.api as wm_module

    monkeypatch.setattr(wm_module.Watermark, "load", lambda *a, **k: pytest.fail("loaded"))
    config = tmp_path / "bad.json"
    config.write_text(text)
    fails(capsys, ["detect", "--text", "some text", "--config", str(config)], message)


# ten more: a setting the chosen rule or section does not have, and mixed formats, are refused
# (each used to load with the setting dropped, or read through the wrong format)
DROPPED_SETTINGS = [
    ('{"alpha": 3, "delta": 2.5}', [], "scheme.delta is not a setting of rule 'tournament'"),
    ('{"scaling": "tournament", "bias": 2.0}', [], "scheme.bias is not a setting of rule"),
    (
        '{"scheme": {"scaling": "additive"}, "sentences": {"bits": 8}}',
        [],
        "scheme.scaling is 0.5-0.7's format and section 'sentences' is 0.8's",
    ),
    ('{"design": {"neutral": "half"}, "scheme": {"rule": "paper"}}', [], "one format"),
    ('{"scheme": {"alpha": 2.0}, "token_map": "keyed"}', [], "removed the setting 'token_map'"),
    ('{"scheme": {"null_model": "vocab"}}', [], "every config works as null_model='vocab'"),
    ("{}", ["--set", "scheme.delta=2"], "scheme.delta is not a setting of rule 'tournament'"),
    ("{}", ["--set", "scheme.alhpa=2"], "unknown key 'alhpa' in section 'scheme'"),
    ("{}", ["--set", "schema.alpha=2"], "expected SECTION.FIELD with SECTION one of"),
    ("{}", ["--set", "scheme.alpha"], "expected SECTION.FIELD=VALUE"),
    ("{}", ["--set", "scheme.rule=paper", "--set", "scheme.layers=3"], "not a setting of"),
]


@pytest.mark.parametrize(("text", "options", "message"), DROPPED_SETTINGS)
def test_a_setting_that_would_be_dropped_gives_one_line_and_exit_2(
    text: str, options: list[str], message: str, tmp_path: Path, capsys, monkeypatch
) -> None:
    import watermark.api as wm_module

    monkeypatch.setattr(wm_module.Watermark, "load", lambda *a, **k: pytest.fail("loaded"))
    config = tmp_path / "bad.json"
    config.write_text(text)
    fails(capsys, ["detect", "--text", "some text", "--config", str(config), *options], message)
    out = tmp_path / "new.json"  # keygen writes nothing
    fails(capsys, ["keygen", "--out", str(out), "--config", str(config), *options], message)
    assert not out.exists()


def test_set_changes_the_config_that_is_used(folders, tmp_path: Path, capsys) -> None:
    out = tmp_path / "keyed.json"
    argv = ["keygen", "--out", str(out), "--config", folders.config]
    assert main([*argv, "--set", "scheme.alpha=2.5", "--set", "scheme.rule=paper"]) == 0
    cfg = WatermarkConfig.load(out)
    assert (cfg.scheme.rule, cfg.scheme.alpha, cfg.scheme.delta) == ("paper", 2.5, 1.5)
    assert cfg.models.generator == "gen"  # the rest is the base config's


def test_vocab_size_mismatch_refuses_detect_and_generate(folders, capsys) -> None:
    config = write_config(folders, "v.json", vocab_size=999)
    fails(capsys, ["detect", "--text", "river bank", "--config", config], "vocab_size=999")
    fails(capsys, ["generate", "--prompt", "river", "--config", config], "vocab_size=999")


def test_generator_that_is_not_a_causal_lm_is_refused(folders, tiny_embedder_dir, capsys) -> None:
    bert = next(
        p.parent
        for p in Path(tiny_embedder_dir).rglob("config.json")
        if "BertModel" in p.read_text()
    )
    config = write_config(folders, "b.json", generator=str(bert), measurement_model=str(bert))
    fails(capsys, ["detect", "--text", "river bank", "--config", config], "not a causal")
    fails(capsys, ["generate", "--prompt", "river", "--config", config], "not a causal")


def test_bad_generate_arguments(folders, capsys) -> None:
    cfg = ["--config", folders.config]
    fails(capsys, ["generate", "--prompt", "", *cfg], "prompt 1 is empty")
    fails(capsys, ["generate", "--prompt", "river", "--prompt", "  ", *cfg], "prompt 2 is empty")
    for bad in ("0", "-5", "ten"):
        fails(
            capsys,
            ["generate", "--prompt", "river", "--max-new-tokens", bad, *cfg],
            "--max-new-tokens",
        )
    fails(capsys, ["generate", *cfg], "nothing to do")
    fails(capsys, ["detect", "--bogus"], "unrecognized arguments")
    for bad in ("1,128", "128,x", ""):
        fails(capsys, ["detect", "--text", "river", "--windows", bad, *cfg], "--windows")


def test_show_checks_the_output_folder_before_detecting(folders, tmp_path, capsys, monkeypatch):
    import watermark.api as wm_module

    monkeypatch.setattr(wm_module.Watermark, "load", lambda *a, **k: pytest.fail("loaded"))
    out = tmp_path / "no" / "such" / "page.html"
    fails(
        capsys,
        ["show", "--text", "x", "--out", str(out), "--config", folders.config],
        "does not exist",
    )
    fails(
        capsys,
        ["show", "--text", "x", "--out", str(tmp_path), "--config", folders.config],
        "is a folder",
    )


def test_verbose_shows_the_traceback(folders, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file"):
        main(["-v", "detect", "--file", str(tmp_path / "nope.jsonl")])


@pytest.mark.parametrize("bug", [RuntimeError("boom"), ValueError("boom"), KeyError("boom")])
def test_internal_failure_exits_1_with_one_line(folders, capsys, monkeypatch, bug) -> None:
    """An error no check raised (a ValueError from deep inside included) is not the user's."""
    import watermark.api as api

    def broken(*args, **kwargs):
        raise bug

    monkeypatch.setattr(api.Watermark, "load", broken)
    argv = ["detect", "--text", "river bank", "--config", folders.config]
    assert main(argv) == INTERNAL_ERROR
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert out == "" and len(lines) == 1, err
    assert lines[0].startswith(f"error: internal failure ({type(bug).__name__}: ")
    assert "boom" in lines[0] and "-v" in lines[0]
    with pytest.raises(type(bug), match="boom"):
        main(["-v", *argv])


def test_missing_package_and_unfit_mapper_are_user_errors(folders, capsys, monkeypatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_lightning(name, *args, **kwargs):
        if name == "watermark.app.bulk":
            raise ModuleNotFoundError("No module named 'lightning'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_lightning)
    fails(
        capsys,
        ["detect-corpus", "--input", "x.jsonl", "--output", "y.jsonl", "--config", folders.config],
        "pip install",
    )
    monkeypatch.setattr(builtins, "__import__", real_import)
    from watermark.models.semantic_mapper import SemanticMapper

    def unfit(*args, **kwargs):
        raise ValueError("weights do not match the config")  # the mapper's own check

    monkeypatch.setattr(SemanticMapper, "from_pretrained", unfit)
    fails(capsys, ["detect", "--text", "river", "--config", folders.config], "cannot be loaded")


def test_first_use_conversion_is_logged_by_default(folders, capsys, caplog, monkeypatch) -> None:
    """Without -v, the one-time model conversion still reports itself (at INFO)."""
    import watermark.models.loaders as models

    def convert(name: str) -> Path:
        models.logger.info("Converted %s in 1.0 s", name)
        raise UserError("stopped after the conversion message")

    monkeypatch.setattr(models, "_packaged_lm", convert)
    cfg = write_config(folders, "packaged.json", generator="smollm2-135m", vocab_size=None)
    monkeypatch.setattr(models.logger, "level", logging.NOTSET)  # as before the CLI sets it
    fails(capsys, ["detect", "--text", "river", "--config", cfg], "stopped after")
    found = [r for r in caplog.records if r.name == "watermark.models.loaders"]
    assert [r.getMessage() for r in found] == ["Converted smollm2-135m in 1.0 s"]


def test_help_shows_defaults_and_an_example(capsys) -> None:
    for command in ("generate", "detect", "show"):
        assert main([command, "--help"]) == 0
        out = capsys.readouterr().out
        assert f"example:\n  python -m watermark {command}" in out
    main_help = build_help()
    assert "(default: 200)" in main_help


def build_help() -> str:
    from watermark.app.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return sub.choices["generate"].format_help()


def test_library_prompt_checks(tiny: SimpleNamespace) -> None:
    wm = tiny.make()
    outs = wm.generate(tiny.gen, "river bank city", max_new_tokens=3, seed=0)
    assert len(outs) == 1 and outs[0].prompt == "river bank city"  # a string is one prompt
    with pytest.raises(ValueError, match="prompt 1 is empty"):
        wm.generate(tiny.gen, ["river", ""], max_new_tokens=3)
    for bad in (0, -5, 2.5):
        with pytest.raises(ValueError, match="max_new_tokens"):
            wm.generate(tiny.gen, ["river"], max_new_tokens=bad)
    with pytest.raises(ValueError, match="text 1 is a NoneType"):
        wm.detect(["river", None])


def test_unreadable_keys_are_usage_errors(folders, capsys, tmp_path, monkeypatch) -> None:
    missing = str(tmp_path / "none.key")
    fails(
        capsys,
        ["detect", "--text", "river city", "--config", folders.config, "--key-file", missing],
        "cannot be read",
        "none.key",
    )
    monkeypatch.delenv("WM_NOPE", raising=False)
    cfg = write_config(folders, "envkey.json", key="env:WM_NOPE")
    fails(capsys, ["detect", "--text", "river city", "--config", cfg], "WM_NOPE")
    fails(capsys, ["calibrate", "--human", missing, "--config", folders.config], "none.key")


def test_serve_without_its_extra_says_what_to_install(folders, capsys, monkeypatch) -> None:
    import sys

    monkeypatch.delitem(sys.modules, "watermark.app.service", raising=False)
    monkeypatch.setitem(sys.modules, "fastapi", None)  # as if the serve extra were missing
    fails(capsys, ["serve", "--config", folders.config], "serve extra", "fastapi")
    fails(capsys, ["serve", "--port", "0"], "--port", ">= 1")
