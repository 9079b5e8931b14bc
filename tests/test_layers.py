"""The dependency direction of the package, checked on the source (imports parsed with ast).

    runtime core  <-  generation / detection  <-  CLI  <-  evaluation
         ^
         +--------  mapper training

A module may import modules of its own layer or of the layers it points to, never the other way;
imports inside functions count too. The mapper model (``mapper.semantic_mapper``) is part of the
runtime core; mapper training uses the core's model resolution and nothing of ``watermark``
imports it. Every module must be placed in a layer, so a new module is placed on purpose.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE, RUNTIME, CLI, EVALUATION, TRAINING = (
    "runtime core", "generation / detection", "CLI", "evaluation", "mapper training"
)  # fmt: skip
LAYERS = {
    CORE: [
        "watermark.config", "watermark.config_checks", "watermark.core", "watermark.devices",
        "watermark.errors", "watermark.green_lists", "watermark.identity", "watermark.keys",
        "watermark.measurement",
        "watermark.models", "watermark.paths", "watermark.rules", "watermark.rules.logits",
        "watermark.semantic", "watermark.stats", "watermark.text", "watermark.timer",
        "watermark.token_map", "watermark.units", "mapper", "mapper.semantic_mapper",
    ],
    RUNTIME: [
        "watermark", "watermark.api", "watermark.calibrate", "watermark.detection_result",
        "watermark.detector",
        "watermark.fused", "watermark.generation", "watermark.loading", "watermark.page",
        "watermark.processor", "watermark.reference",
    ],
    CLI: ["watermark.__main__", "watermark.cli", "watermark.cli_parser", "watermark.corpus",
          "watermark.batcher", "watermark.service", "watermark.access"],
}  # fmt: skip
# what each layer may import besides itself
ALLOWED = {
    CORE: set(),
    RUNTIME: {CORE},
    CLI: {CORE, RUNTIME},
    EVALUATION: {CORE, RUNTIME, CLI},
    TRAINING: {CORE},
}
PLACED = {module: name for name, group in LAYERS.items() for module in group}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(module: str) -> str | None:
    """The layer of a project module, or None for a module of another project."""
    if module in PLACED:
        return PLACED[module]
    if module.startswith("watermark.evaluate"):
        return EVALUATION
    if module.startswith("mapper."):
        return TRAINING
    return None


def _is_module(name: str) -> bool:
    base = ROOT.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imported(path: Path) -> set[str]:
    """Modules of ``watermark`` and ``mapper`` that ``path`` imports anywhere (``from a import
    b`` gives ``a``, and ``a.b`` if that is a module)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            subs = [f"{node.module}.{alias.name}" for alias in node.names]
            names = [node.module, *filter(_is_module, subs)]
        found.update(n for n in names if n.split(".")[0] in ("watermark", "mapper"))
    return found


def sources() -> list[Path]:
    return sorted((ROOT / "watermark").rglob("*.py")) + sorted((ROOT / "mapper").rglob("*.py"))


def test_every_module_is_placed_in_a_layer() -> None:
    unplaced = [module_name(p) for p in sources() if layer(module_name(p)) is None]
    assert not unplaced, f"place these modules in a layer of tests/test_layers.py: {unplaced}"


def test_nothing_imports_against_the_direction() -> None:
    backwards = []
    for path in sources():
        source = layer(module_name(path))
        for target in imported(path):
            if layer(target) not in {source, *ALLOWED[source]}:
                backwards.append(f"{module_name(path)} ({source}) imports {target} "
                                 f"({layer(target)})")  # fmt: skip
    assert not backwards, "\n".join(backwards)


def test_the_check_sees_imports_inside_functions_and_submodules() -> None:
    cli = imported(ROOT / "watermark" / "cli.py")
    assert {"watermark.api", "watermark.corpus"} <= cli  # both imported inside functions
    assert "watermark.rules.logits" in imported(ROOT / "watermark" / "core.py")
    assert layer("watermark.evaluate.run") == EVALUATION and layer("mapper.train") == TRAINING
    assert CLI not in ALLOWED[RUNTIME] and EVALUATION not in ALLOWED[CLI]


def test_no_import_cycles() -> None:
    """Fails on the tree before issue 21 (watermark.config <-> watermark.config_checks)."""
    graph = {module_name(p): imported(p) - {module_name(p)} for p in sources()}
    cycles = []

    def visit(module: str, path: list[str]) -> None:
        for target in sorted(graph.get(module, ())):
            if target in path:
                cycles.append(" -> ".join(path[path.index(target) :] + [target]))
            elif target not in done:
                visit(target, [*path, target])
        done.add(module)

    done: set[str] = set()
    for module in sorted(graph):
        if module not in done:
            visit(module, [module])
    assert not cycles, "\n".join(cycles)
