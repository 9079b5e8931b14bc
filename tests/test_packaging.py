"""Checks of pyproject.toml against the code: each extra installs what its modules import.

Static: the imports of every module an extra's users run are followed through the project's own
modules, and each third-party import must come from a distribution that the core dependencies or
that extra declare. The installed library (core, ``bulk``, ``train``) never reaches the
repository tool ``data``, which the wheel does not ship.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ("watermark", "mapper", "data", "evaluation", "tests")
# extra -> the modules its users run ("" is the core install); each walk stops at modules that
# belong to another extra (the CLI's `detect-corpus` imports watermark.app.bulk lazily)
EXTRAS = {
    "": ["watermark", "watermark.__main__", "watermark.api", "mapper"],
    "bulk": ["watermark.app.bulk"],
    "serve": ["watermark.app.service"],
    "train": ["mapper.train", "mapper.compare", "mapper.export", "mapper.simhash"],
    "eval": [f"evaluation.{p.stem}" for p in (ROOT / "evaluation").glob("*.py")],
}
# module prefix -> its extra
OWNED = {"watermark.app.bulk": "bulk", "evaluation": "eval", "watermark.app.service": "serve"}


def _file(module: str) -> Path | None:
    base = ROOT.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _imports(path: Path) -> set[str]:
    """Absolute names a module imports anywhere (``from a import b`` gives ``a`` and ``a.b``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            assert node.level == 0, f"{path}: relative import"
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _walk(extra: str) -> tuple[set[str], set[str]]:
    """(project modules reached, top-level third-party names imported) from the extra's modules."""
    seen, third_party, todo = set(), set(), list(EXTRAS[extra])
    while todo:
        module = todo.pop()
        owner = next((e for p, e in OWNED.items() if module.startswith(p)), extra)
        if module in seen or owner != extra or _file(module) is None:
            continue
        seen.add(module)
        for name in _imports(_file(module)):
            top = name.split(".")[0]
            parents = [".".join(name.split(".")[: i + 1]) for i in range(name.count(".") + 1)]
            if top in PROJECT:
                todo.extend(parents)  # a package's __init__ runs before its modules
            elif top not in sys.stdlib_module_names and top != "__future__":
                third_party.add(top)
    return seen, third_party


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared(extra: str) -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = project["dependencies"] + (project["optional-dependencies"][extra] if extra else [])
    return {_normal(re.match(r"[A-Za-z0-9._-]+", req).group()) for req in wanted}


@pytest.mark.parametrize("extra", list(EXTRAS))
def test_each_extra_declares_what_its_modules_import(extra: str) -> None:
    modules, names = _walk(extra)
    assert set(EXTRAS[extra]) <= modules  # every entry module exists
    providers = importlib.metadata.packages_distributions()
    declared = _declared(extra)
    for name in sorted(names):
        dists = {_normal(d) for d in providers.get(name, [])}
        assert dists, f"nothing installed provides the import {name!r} ({extra or 'core'})"
        assert dists & declared, f"{name!r} ({sorted(dists)}) is not declared for {extra or 'core'}"


@pytest.mark.parametrize("extra", ["", "bulk", "train"])
def test_the_installed_library_never_imports_the_repository_tool_data(extra: str) -> None:
    modules, _ = _walk(extra)
    assert "watermark.models.loaders" in modules or extra == "bulk"
    assert not [m for m in modules if m.split(".")[0] == "data"]


def test_evaluation_reads_the_repository_tools_and_says_so() -> None:
    modules, _ = _walk("eval")
    assert "data.sources" in modules  # run from a clone: the extra's comment must say so
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r"#[^\n]*from a clone[^\n]*\n(#[^\n]*\n)*eval = ", text)


def test_the_wheel_installs_no_data_package_and_ships_the_mapper() -> None:
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]
    include = setuptools["setuptools"]["packages"]["find"]["include"]
    tools = ("data", "evaluation", "research", "benchmarks")  # repository tools, run from a clone
    assert include and not [p for p in include if p.startswith(tools)]
    data_globs = setuptools["setuptools"]["package-data"]["watermark"]
    shipped = ROOT / "watermark" / "checkpoints" / "mapper-minilm"
    for name in ("config.json", "model.safetensors"):
        assert any((shipped / name).match(f"watermark/{glob}") for glob in data_globs), name
