"""The docs cite only what exists: every repository path, module and identifier they name in
backticks (README.md, docs/*.md, data/corpus/BUILD.md) is in the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ["README.md", "data/corpus/BUILD.md"] + sorted(
    str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md")
)
TOP = (
    "watermark/",
    "mapper/",
    "data/",
    "docs/",
    "configs/",
    "benchmarks/",
    "research/",
    "evaluation/",
    "tests/",
    "checkpoints/",
    ".ci/",
)
GENERATED = ("runs/mapper-minilm-ckpt/",)  # training output, ignored by git
MODULE = re.compile(
    r"^(watermark|mapper|data|evaluation|benchmarks|research|tests)(\.[A-Za-z_]\w*)+$"
)
IDENTIFIER = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)+(\(\))?$")  # snake_case names
FOLDERS = (
    "watermark",
    "mapper",
    "data",
    "benchmarks",
    "research",
    "evaluation",
    "tests",
    "configs",
)
SOURCES = [
    p
    for d in FOLDERS
    for p in (ROOT / d).rglob("*")
    if p.suffix in {".py", ".json", ".yaml", ".html"} and p != Path(__file__).resolve()
]


def cited(doc: str) -> list[str]:
    """The words of the doc's inline code spans, stripped of punctuation and anchors."""
    text = (ROOT / doc).read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # code blocks are run by other tests
    words = []
    for span in re.findall(r"`([^`\n]+)`", text):
        for word in span.split():
            word = word.strip("()[],;:'\"").split("#")[0].split("::")[0]
            if word and not any(c in word for c in "*{}<>$=") and "..." not in word:
                words.append(word)
    return words


def module_exists(name: str) -> bool:
    """``a.b.c`` is a module (folder or file) or a name defined in the longest such prefix."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:n])
        path = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
        if path.is_file():
            return n == len(parts) or re.search(rf"\b{parts[n]}\b", path.read_text()) is not None
    return False


@pytest.fixture(scope="module")
def source_text() -> str:
    return "\n".join(p.read_text(encoding="utf-8", errors="ignore") for p in SOURCES)


@pytest.mark.parametrize("doc", DOCS)
def test_cited_paths_modules_and_names_exist(doc: str, source_text: str) -> None:
    missing = []
    for word in cited(doc):
        if word.startswith(TOP) and not word.startswith(GENERATED):
            # config values name the mapper relative to the package
            if not any((base / word.rstrip("/")).exists() for base in (ROOT, ROOT / "watermark")):
                missing.append(word)
        elif MODULE.match(word):
            if not module_exists(word):
                missing.append(word)
        elif IDENTIFIER.match(word) and word.removesuffix("()") not in source_text:
            missing.append(word)
    assert not missing, f"{doc} cites what does not exist: {sorted(set(missing))}"


def test_the_check_finds_a_stale_name(source_text: str) -> None:
    assert IDENTIFIER.match("green_dims_for") and "green_dims_for" not in source_text
    assert "green_test" in source_text
    assert not module_exists("watermark.core.scoring.no_such_function")
    assert module_exists("watermark.detect.stats.green_test") and module_exists("evaluation")


def test_the_guide_names_every_field_a_user_sets() -> None:
    from dataclasses import fields

    from watermark.config.schemes import SCHEMES
    from watermark.config.watermark_config import WatermarkConfig

    expected = [("scheme", "rule")] + [
        (part.name, f.name)
        for part in WatermarkConfig().parts()
        for f in fields(part)
        if part.name != "scheme" or f.name != part.strength_field
    ]
    at = expected.index(("scheme", "rule")) + 1
    expected[at:at] = [("scheme", cls.strength_field) for cls in SCHEMES.values()]
    guide = (ROOT / "docs" / "guide.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\w+) \| `(\w+)` \|", guide, flags=re.M)
    assert sorted(rows) == sorted(expected) and len(rows) == len(expected)


def test_the_guides_python_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The guide's Python blocks that load no language model run here; the ones that generate
    with the real model (``load_lm``) are run from a fresh venv by ``benchmarks.first_hour``,
    and their ``model.generate`` block with tiny models by ``tests/watermark/test_docs_snippet``
    (a 150-token robust generation here cost CI about a minute and a half)."""
    text = (ROOT / "docs" / "guide.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    offline = [block for block in blocks if "load_lm(" not in block]
    assert offline and len(offline) < len(blocks)
    monkeypatch.chdir(tmp_path)
    for block in offline:
        exec(compile(block, "docs/guide.md", "exec"), {})
    assert (tmp_path / "whole-text.json").is_file()


def test_each_research_file_says_what_it_shows_and_how_to_reproduce_it() -> None:
    for path in sorted((ROOT / "docs" / "research").glob("*.md")):
        head = path.read_text(encoding="utf-8")[:1500]
        assert "**Shows:**" in head and "**Reproduce:**" in head, path.name


def test_the_docs_run_the_repository_tools_as_modules() -> None:
    """Research and benchmark commands are ``python -m research.NAME`` / ``python -m
    benchmarks.NAME`` of a module that exists, code blocks included; no doc runs one by path."""
    by_path, missing = [], []
    old = re.compile(r"python\s+(?:research|benchmarks)/\w+")
    for doc in DOCS:
        text = (ROOT / doc).read_text(encoding="utf-8")
        by_path += [f"{doc}: {m}" for m in old.findall(text)]
        for package, name in re.findall(r"python\s+-m\s+(research|benchmarks)\.(\w+)", text):
            if not (ROOT / package / f"{name}.py").is_file():
                missing.append(f"{doc}: {package}.{name}")
    assert not by_path and not missing, by_path + missing
