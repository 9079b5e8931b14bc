"""The dependency direction of the code, checked on the source (imports parsed with ast).

Each layer is a folder:

    watermark/core/   runtime core: config, rules, scoring, models, keys, the mapper model
    watermark/        generation and detection: api and loading, and the folders generate/
                      (the processor, the one decode path, generation), sentences/ (the
                      sentence layer) and detect/ (the detector, assembly, results)
    watermark/app/    applications: CLI, HTTP service, calibration, bulk detection
    mapper/           mapper training (imports the core only)
    data/             the corpus and the attack models' caches, a repository tool (imports the
                      core and mapper training)
    evaluation/       the evaluation harness, a repository tool (not in the wheel)
    benchmarks/,      scripts on top of everything else
    experiments/

A module may import modules of its own layer or of the layers below it, never the other way;
imports inside functions count too. A new module at the top of ``watermark/`` must be named in
``RUNTIME`` below, so that it is placed on purpose.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("watermark", "mapper", "data", "evaluation", "benchmarks", "experiments")
CORE, RUNTIME_LAYER, APP, EVALUATION, TRAINING, DATA = (
    "watermark/core",
    "watermark",
    "watermark/app",
    "evaluation",
    "mapper",
    "data",
)
SCRIPTS = ("benchmarks", "experiments")
RUNTIME = {"watermark", "watermark.api", "watermark.loading"}
RUNTIME_FOLDERS = ("watermark.generate", "watermark.sentences", "watermark.detect")
# what each layer may import besides itself
ALLOWED = {
    CORE: set(),
    RUNTIME_LAYER: {CORE},
    APP: {CORE, RUNTIME_LAYER},
    TRAINING: {CORE},
    DATA: {CORE, TRAINING},
    EVALUATION: {CORE, RUNTIME_LAYER, APP, TRAINING, DATA},
    "benchmarks": {CORE, RUNTIME_LAYER, APP, TRAINING, DATA, EVALUATION},
    "experiments": {CORE, RUNTIME_LAYER, APP, TRAINING, DATA, EVALUATION, "benchmarks"},
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(module: str) -> str | None:
    """The layer (folder) of a project module; None for a module placed nowhere."""
    top = module.split(".")[0]
    if module == "watermark.core" or module.startswith("watermark.core."):
        return CORE
    if module in ("watermark.app", "watermark.__main__") or module.startswith("watermark.app."):
        return APP
    if module in RUNTIME or module.startswith(RUNTIME_FOLDERS):
        return RUNTIME_LAYER
    return {"mapper": TRAINING, "evaluation": EVALUATION, "data": DATA}.get(top) or (
        top if top in SCRIPTS else None
    )


def _is_module(name: str) -> bool:
    base = ROOT.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imported(path: Path) -> set[str]:
    """Project modules that ``path`` imports anywhere (``from a import b`` gives ``a``, and
    ``a.b`` if that is a module), except under ``if TYPE_CHECKING:`` (names for annotations)."""
    found = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            node.body = []  # walked after this node: its imports are dropped
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            subs = [f"{node.module}.{alias.name}" for alias in node.names]
            names = [node.module, *filter(_is_module, subs)]
        found.update(n for n in names if n.split(".")[0] in PACKAGES)
    return found


def sources() -> list[Path]:
    return [p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))]


def test_every_module_is_in_a_layer_folder() -> None:
    unplaced = [module_name(p) for p in sources() if layer(module_name(p)) is None]
    assert not unplaced, f"move these into a layer folder, or name them in RUNTIME: {unplaced}"
    folders = sorted({p.parent.name for p in (ROOT / "watermark").glob("*/__init__.py")})
    assert folders == ["app", "core", "detect", "generate", "sentences"]


def test_nothing_imports_against_the_direction() -> None:
    backwards = []
    for path in sources():
        source = layer(module_name(path))
        for target in imported(path):
            if layer(target) not in {source, *ALLOWED[source]}:
                backwards.append(
                    f"{module_name(path)} ({source}) imports {target} ({layer(target)})"
                )
    assert not backwards, "\n".join(backwards)


def test_the_check_sees_imports_inside_functions_and_submodules() -> None:
    cli = imported(ROOT / "watermark" / "app" / "cli.py")
    assert "watermark.app.bulk" in cli  # imported inside a function
    assert "watermark.api" in imported(ROOT / "watermark" / "app" / "cli_inputs.py")  # likewise
    assert "mapper.corpus" in imported(ROOT / "data" / "loaders.py")
    assert layer("benchmarks.bench_gpu") == "benchmarks" and layer("data.build") == DATA
    assert "watermark.core.rules.logits" in imported(ROOT / "watermark" / "core" / "scoring.py")
    assert layer("evaluation.run") == EVALUATION and layer("mapper.train") == TRAINING
    assert layer("watermark.core.semantic_mapper") == CORE  # the runtime owns the model
    assert APP not in ALLOWED[RUNTIME_LAYER] and EVALUATION not in ALLOWED[APP]
    assert layer("watermark.reference") is None  # the oracle is a test tool (tests/reference.py)


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


def test_functions_and_modules_of_the_library_stay_small() -> None:
    """No function in ``watermark/`` or ``mapper/`` over 60 lines, no module over 300."""
    too_long = []
    for package in ("watermark", "mapper"):
        for path in sorted((ROOT / package).rglob("*.py")):
            source = path.read_text(encoding="utf-8")
            if len(source.splitlines()) > 300:
                too_long.append(f"{module_name(path)}: {len(source.splitlines())} lines")
            for node in ast.walk(ast.parse(source)):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    size = node.end_lineno - node.lineno + 1
                    if size > 60:
                        too_long.append(f"{module_name(path)}.{node.name}: {size} lines")
    assert not too_long, "\n".join(too_long)
