"""Every research module runs from the package on tiny inputs, in process: the tiny models of
``conftest.tiny``, pools, rewrites, a corpus and a store of a few sentences
(:mod:`tests.research.tiny_data`). Each checks the module's output, not its figures."""

from __future__ import annotations

import importlib
import json
import pkgutil
from pathlib import Path
from types import SimpleNamespace

import pytest

import research
from research import (
    calibration_texts,
    choice_tilt,
    kept_rewrites,
    loops,
    readme_example,
    refactor_snapshot,
    rotation_tail,
    sentence_spoof,
    sentence_tail,
    surviving_evidence,
    text_evidence,
    thread_invariance,
)
from tests.helpers import sentences
from tests.research.tiny_data import (
    FORCED,
    tiny_loader,
    write_heldout,
    write_pools,
    write_rewrites,
    write_store,
)

LIBRARIES = {"common", "alignment", "keyings", "text_pairs"}  # shared by the scripts, not scripts
MODULES = sorted(m.name for m in pkgutil.iter_modules(research.__path__) if m.name not in LIBRARIES)


@pytest.fixture(scope="module")
def yard(tiny: SimpleNamespace, tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """A sentence-layer watermark and a plain one, their config files, and the tiny data."""
    root = tmp_path_factory.mktemp("research")
    layered = tiny.make(sentence_bits=8, sentence_context_bits=1, sentence_candidates=2)
    plain = tiny.make()
    paths = [layered.config.save(root / "layered.json"), plain.config.save(root / "plain.json")]
    write_pools(root)
    write_rewrites(root)
    human = root / "human.jsonl"
    human.write_text("".join(json.dumps({"text": t + " ."}) + "\n" for t in sentences(3, 4, 40)))
    return SimpleNamespace(
        root=root,
        layered=layered,
        plain=plain,
        paths=paths,
        human=human,
        load=tiny_loader(tiny, plain, paths),
    )


def lines(capsys: pytest.CaptureFixture) -> list[dict]:
    return [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]


@pytest.mark.parametrize("name", MODULES)
def test_every_module_runs_as_a_module_and_answers_help(name: str, capsys) -> None:
    module = importlib.import_module(f"research.{name}")
    with pytest.raises(SystemExit) as done:
        module.main(["--help"])
    assert done.value.code == 0 and "usage:" in capsys.readouterr().out


def test_the_figure_of_merit_and_the_choices_tilt(yard: SimpleNamespace, capsys) -> None:
    data = ["--config", str(yard.paths[0]), "--keys", "2", "--data", str(yard.root)]
    surviving_evidence.main([*data, "--candidates", "2,4"], wm=yard.layered)
    rows = lines(capsys)
    assert [(r["choice"], r["candidates"]) for r in rows] == [
        ("score", 2),
        ("score", 4),
        ("survival", 2),
        ("survival", 4),
    ]
    assert all(r["pools"] == 12 and r["pairs"] > 0 for r in rows)
    choice_tilt.main([*data, "--candidates", "4"], wm=yard.layered)
    rows = lines(capsys)
    assert [r["choice"] for r in rows] == ["uniform", "score", "survival"]
    assert all(0 <= r["tilt"] <= 1 and r["pools"] == 12 for r in rows)
    text_evidence.main([*data, "--candidates", "4", "--draws", "1"], wm=yard.layered)
    (row,) = lines(capsys)
    assert row["documents"] == 4 and row["texts"] == 8 and 0 <= row["p<0.01"] <= 1


def test_kept_rewrites_reads_a_store(yard: SimpleNamespace, tmp_path: Path, capsys) -> None:
    texts = [" ".join(s + " ." for s in sentences(3, seed=n, length=6)) for n in range(4)]
    store = write_store(tmp_path / "cache", "ours-tiny", texts)
    argv = ["--config", str(yard.paths[0]), "--method", "ours-tiny", "--attack", FORCED]
    kept_rewrites.main(
        [*argv, "--run", str(store), "--seed", str(tmp_path / "none")], wm=yard.layered
    )
    (row,) = lines(capsys)
    assert row["texts"] == 4 and row["sentences"] > 0 and len(row["kept_by_bin"]) >= 1


def test_the_spoofer_simulation(yard: SimpleNamespace, capsys) -> None:
    heldout = write_heldout(yard.root / "heldout.jsonl.gz")
    sentence_spoof.main(
        [
            "--texts",
            "8",
            "--bits",
            "4",
            "--context-bits",
            "0,1",
            "--learn",
            "3",
            "--forge-candidates",
            "2",
            "--forged",
            "6",
            "--sentences",
            "3",
            "--candidates",
            "2",
            "--heldout",
            str(heldout),
        ],
        wm=yard.layered,
    )
    rows = lines(capsys)
    assert [r["context_bits"] for r in rows] == [0, 0, 1, 1]
    assert rows[0]["marked_texts"] == 3 and rows[1]["forge_candidates"] == 2


def test_the_tails_of_rotation_and_of_the_sentence_layer(
    yard: SimpleNamespace, tmp_path: Path, capsys
) -> None:
    both = ["--human", str(yard.human), "--config", str(yard.paths[0]), "--fresh-keys", "2"]
    tail = tmp_path / "tail.jsonl"
    rotation_tail.main([*both, "--out", str(tail)], load=yard.load)
    out = json.loads(capsys.readouterr().out)
    assert (out["texts"], out["keys"], out["config_keys"]) == (3, 3, 1)
    assert len(tail.read_text().splitlines()) == 3
    settings = ["--settings", "own:1:4,previous:0:4:margin:2"]
    sentence_tail.main([*both, "--tail", str(tail), *settings], load=yard.load)
    rows = lines(capsys)
    assert [r["setting"]["keying"] for r in rows] == ["own", "previous"]
    assert all(len(r["sentence"]["per_key_count_p<0.01"]) == 3 for r in rows)


def test_the_calibration_inputs_and_the_readme_example(
    yard: SimpleNamespace, tmp_path: Path, capsys
) -> None:
    argv = ["--out", str(tmp_path), "--human", "2", "--watermarked", "2", "--tokens", "6"]
    calibration_texts.main([*argv, "--config", str(yard.paths[1])], load=yard.load)
    assert len((tmp_path / "human.jsonl").read_text().splitlines()) == 2
    assert len((tmp_path / "watermarked.jsonl").read_text().splitlines()) == 2
    readme_example.main(["--tokens", "6"], load=yard.load)
    rows = lines(capsys)
    assert [r["watermarked"] for r in rows] == [True, False] and rows[0]["text"]


def test_the_snapshot_of_a_tree_equals_itself(yard: SimpleNamespace, tmp_path: Path) -> None:
    out = tmp_path / "snap.json"
    assert (
        refactor_snapshot.main(["snap", str(out), "--texts", "2", "--tokens", "4"], load=yard.load)
        == 0
    )
    found = json.loads(out.read_text())
    assert "default" in found and all(len(row["detect"]) == 2 for row in found.values())
    assert refactor_snapshot.main(["compare", str(out), str(out)]) == 0


def test_thread_invariance_and_loops(yard: SimpleNamespace, tmp_path: Path, capsys) -> None:
    thread_invariance.main(
        [
            "--human",
            "1",
            "--watermarked",
            "1",
            "--processes",
            "0",
            "--generate",
            "1",
            "--tokens",
            "4",
        ],
        load=yard.load,
    )
    out = json.loads(capsys.readouterr().out)
    assert set(out["identical"].values()) == {2}
    assert out["generation"]["default"]["same"] == 1
    run = tmp_path / "loops.jsonl"
    argv = ["--config", str(yard.paths[1]), "--count", "2", "--tokens", "8", "--batch", "2"]
    loops.main([*argv, "--out", str(run)], load=yard.load)
    assert lines(capsys)[-1]["texts"] == 2 and len(run.read_text().splitlines()) == 2


def write_pool_rewrites(root: Path) -> None:
    """The replay's seed for the tiny pools: candidates 1-3 rewritten (words reversed), the
    first rejected, as the judge rejects some."""
    from data.build import write_jsonl_gz
    from data.sentence_rewrites import read_jsonl_gz

    rows = []
    for pool in read_jsonl_gz(root / "pools.jsonl.gz"):
        for j, text in enumerate(pool["candidates"][:4]):
            rewrite = None if j == 0 else " ".join(reversed(text[:-1].split())).capitalize() + "."
            rows.append({"id": pool["id"], "candidate": j, "text": text, "rewrite": rewrite})
    write_jsonl_gz(root / "pool_rewrites.jsonl.gz", rows)


def test_the_replay_on_real_rewrites(yard: SimpleNamespace, capsys) -> None:
    """Every lever's line and the weights read on rewrites, from pools whose candidates have
    rewrites."""
    from research import replay

    write_pool_rewrites(yard.root)
    argv = ["--config", str(yard.paths[0]), "--keys", "2", "--seeds", str(yard.root)]
    replay.main([*argv, "--candidates", "4"], wm=yard.layered)
    found = lines(capsys)
    assert [r["lever"] for r in found[:-1]] == [*replay.LEVERS, *replay.KEY_LEVERS]
    assert all(r["pools"] == 12 and len(r["z_rewritten"]) == 3 for r in found[:-1])
    assert found[0]["z_rewritten_minus_base"][0] == 0.0
    assert len(found[-1]["table"]) == 4 and found[-1]["pools"] == 6


def test_stable_context_outputs_against_random_ones(yard: SimpleNamespace, capsys) -> None:
    from research import context_stability

    write_pool_rewrites(yard.root)
    argv = ["--config", str(yard.paths[0]), "--seeds", str(yard.root), "--candidates", "4"]
    context_stability.main(
        [*argv, "--top", "2,1000", "--keys", "2", "--fit-split", "val", "--draws", "50"],
        wm=yard.layered,
    )
    low, everything = lines(capsys)
    assert low["top"] == 2 and low["pools"] == 12 and low["fit_pairs"] > 0
    assert low["heldout_pairs"] == 36  # 3 rewrites a pool
    assert 0 <= low["stable_flip_rate_heldout"] <= 1 and len(low["z_rewritten_difference"]) == 3
    # drawn among all outputs, the context sets are the random ones
    assert everything["groups_kept_difference"] == [0.0, 0.0, 0.0]
    with pytest.raises(SystemExit, match="--top"):
        context_stability.main([*argv, "--top", "0"], wm=yard.layered)


def test_the_context_group_read_four_ways(yard: SimpleNamespace, tiny, capsys) -> None:
    from research import group_reading

    write_pool_rewrites(yard.root)
    own = tiny.make(
        sentence_bits=8,
        sentence_context_bits=1,
        sentence_candidates=2,
        sentence_keying="own",
        sentence_test="margin",
    )
    path = own.config.save(yard.root / "own.json")
    argv = ["--config", str(path), "--seeds", str(yard.root), "--candidates", "4", "--keys", "2"]
    group_reading.main([*argv, "--null-draws", "200", "--lams", "1.0"], wm=own)
    found = {r["reading"]: r for r in lines(capsys)}
    assert list(found) == ["own", "generated", "max", "mixture 1.0"]
    assert found["own"]["minus_own"] == [0.0, 0.0, 0.0]
    # a pool counts where a key keeps a rewritten candidate (the first of each is rejected)
    assert {r["pools"] for r in found.values()} == {found["own"]["pools"]}
    assert 0 < found["own"]["pools"] <= 12 and all(len(r["score"]) == 3 for r in found.values())
    with pytest.raises(SystemExit, match="own outputs"):  # the yard's layer reads the previous
        group_reading.main(["--config", str(yard.paths[0])], wm=yard.layered)


def test_embedding_directions_fitted_on_rewrites(yard: SimpleNamespace, capsys) -> None:
    from research import stable_directions

    write_pool_rewrites(yard.root)
    argv = ["--config", str(yard.paths[0]), "--seeds", str(yard.root), "--candidates", "4"]
    stable_directions.main(
        [*argv, "--fit-split", "val", "--top", "3", "--shrinks", "1"], wm=yard.layered
    )
    found = {r["directions"]: r for r in lines(capsys)}
    assert list(found) == ["random", "pca", "lda 1.0"]
    assert found["random"]["read"] == 256 and found["pca"]["read"] == 3
    assert all(
        r["heldout_pairs"] == 36 and len(r["flip_heldout_each"]) == 3 for r in found.values()
    )
    assert all(0 <= r["flip_heldout"] <= 1 for r in found.values())


def test_the_snapshot_reads_the_configs_of_a_revision(tmp_path: Path) -> None:
    from research.refactor_snapshot import config_name, configs_at
    from watermark.config.shipped import shipped_path

    found = configs_at("HEAD", tmp_path)
    assert list(found)[0] == "default" and {"robust", "paper", "additive"} <= set(found)
    assert found["robust"].read_text() == shipped_path("robust").read_text()
    # 0.10's tree kept three of them in configs/: the same names, so the snapshots compare
    old = configs_at("04ead79", tmp_path / "old")
    assert set(old) == set(found) and old["paper"].name == "watermark-paper.json"
    assert config_name("configs/watermark-robust.json") == "robust"
    assert config_name("watermark/robust_config.json") == "robust"


def test_a_field_added_to_the_results_is_no_change_of_the_snapshot() -> None:
    from research.refactor_snapshot import same_detection

    before = {"p_value": 0.5, "window": [1, 2]}
    assert same_detection(before, {**before, "key_id": "key-0"})
    assert not same_detection(before, {**before, "p_value": 0.25})
    assert not same_detection({**before, "key_id": "key-0"}, before)  # a field dropped is one


def test_position_keys_simulated_on_a_store(
    yard: SimpleNamespace, tiny, tmp_path: Path, capsys
) -> None:
    from research import position_key

    own = tiny.make(
        sentence_bits=8,
        sentence_context_bits=1,
        sentence_candidates=2,
        sentence_keying="own",
        sentence_test="margin",
    )
    path = own.config.save(tmp_path / "own.json")
    texts = [" ".join(s + " ." for s in sentences(4, seed=n, length=6)) for n in range(4)]
    store = write_store(tmp_path / "cache", "ours-tiny", texts)
    heldout = write_heldout(tmp_path / "heldout.jsonl.gz")
    position_key.main(
        [
            "--config",
            str(path),
            "--run",
            str(store),
            "--seed",
            str(tmp_path / "none"),
            "--cell",
            "forced",
            "ours-tiny",
            FORCED,
            "--cell",
            "none",
            "ours-none",
            FORCED,
            "--keys",
            "2",
            "--draws",
            "8",
            "--human",
            "3",
            "--human-draws",
            "16",
            "--heldout",
            str(heldout),
            "--pool-keys",
            "0",
            "--cache",
            str(tmp_path / "s.pt"),
            "--only",
            "position, aligned, penalty 0.5",
        ],
        wm=own,
    )
    rows = lines(capsys)
    assert rows[0]["choice_ratios"] == {"robust": 1.0, "c0": 1.0, "c1": 1.0}
    today, *aligned = [r for r in rows if r.get("attack") == "forced"]
    assert today["texts"] == 4 and today["rewritten_minus_today"] == [0.0, 0.0, 0.0]
    assert [r["keys_per_text"] for r in aligned] == [1, 2, 4, 8, 16, 1, 16, 1]  # 3 keyings
    assert all(0 <= r["accuracy"][0] <= 1 for r in aligned)
    assert {"attack": "none", "texts": 0}.items() <= rows[len(aligned) + 2].items()
    calibration = [r for r in rows if "calibration" in r]
    assert len(calibration) == 8 and all(0 <= r["p<0.01"] <= 1 for r in calibration)


def test_spoofers_of_place_and_per_text_keys(yard: SimpleNamespace, tmp_path: Path, capsys) -> None:
    from research import key_spoof

    heldout = write_heldout(tmp_path / "heldout.jsonl.gz")
    key_spoof.main(
        [
            "--texts",
            "8",
            "--bits",
            "4",
            "--learn",
            "6",
            "--forge-candidates",
            "2",
            "--forged",
            "4",
            "--sentences",
            "3",
            "--candidates",
            "2",
            "--keys",
            "2",
            "--heldout",
            str(heldout),
            "--only",
            "per-text 4 x position",
        ],
        wm=yard.layered,
    )
    rows = lines(capsys)
    assert [r["keying"] for r in rows] == ["per-text 4 x position"] * 3 + [
        "per-text 4 x position, oracle clusters"
    ] * 3
    assert rows[2]["keys"] == 2 and 0 <= rows[2]["mean"]["forged_p<0.01_M2"] <= 1
    assert rows[3]["cluster_purity"] == 1.0
