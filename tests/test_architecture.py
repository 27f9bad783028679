"""The house has one direction: contract -> tasks -> runners -> evals -> reports,
with the CLI (the `evalrun` package itself) on top. Read from the source with
`ast`, every import counts (top level, inside functions, under TYPE_CHECKING):
an import against the direction, or any cycle between modules, fails here.
No exceptions are listed."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

# the package's folder: src/evalrun/<stage>/, the folders are the import names
SRC = ROOT / "src"
PACKAGE = SRC / "evalrun"
# what each layer may import, besides itself
ALLOWED = {
    "contract": set(),
    "values": {"contract"},
    "tasks": {"contract", "values"},
    "runners": {"contract", "tasks"},
    "evals": {"contract", "values", "tasks", "runners"},
    "reports": {"contract", "evals"},
    "evalrun": {"contract", "tasks", "runners", "evals", "reports"},
}


STAGES = tuple(layer for layer in ALLOWED if layer != "evalrun")


def _modules() -> dict[str, Path]:
    """Every module of the package by its import name, read from the folders under src/."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = [p for p in path.relative_to(SRC).with_suffix("").parts if p != "__init__"]
        out[".".join(parts)] = path
    return out


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in ALLOWED and parts[1] != "evalrun" else "evalrun"


def _imports(path: Path, module: str, known: set[str]) -> set[str]:
    """Our modules that `module` imports (a package import counts as its __init__)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_pkg = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".") if is_pkg else module.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        for name in names:
            # the deepest known module the name points at
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != module:
                out.add(name)
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {m: _imports(p, m, known) for m, p in modules.items()}


def test_no_generic_names_are_imported() -> None:
    """Our code imports itself only as `evalrun.*`: a bare `tasks` or `evals` would be another distribution."""
    bad = []
    for module, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
            bad += [f"{module}: import {n}" for n in names if n.split(".")[0] in STAGES]
    assert bad == []


def test_imports_follow_the_direction() -> None:
    wrong = []
    for module, deps in sorted(_graph().items()):
        layer = _layer(module)
        for dep in sorted(deps):
            target = _layer(dep)
            if target != layer and target not in ALLOWED[layer]:
                wrong.append(f"{module} -> {dep}")
            if layer != "evalrun" and dep == "evalrun":
                wrong.append(f"{module} -> evalrun (the public API is the top, not a helper)")
    assert wrong == [], "imports against contract -> tasks -> runners -> evals -> reports -> cli:\n" + "\n".join(wrong)


def test_no_import_cycles() -> None:
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert cycles == [], "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_the_layering_check_sees_a_wrong_import(tmp_path: Path) -> None:
    """The checker itself: a reports module importing a runner is caught."""
    path = tmp_path / "x.py"
    path.write_text("def f():\n    from evalrun.runners.hf import HFRunner\n")
    deps = _imports(path, "evalrun.reports.x", set(_modules()))
    assert "evalrun.runners.hf" in deps and _layer("evalrun.runners.hf") not in ALLOWED["reports"]


def test_every_stage_has_a_package_and_tests_mirror_them() -> None:
    assert (PACKAGE / "__init__.py").is_file()
    for folder in STAGES:
        assert (PACKAGE / folder / "__init__.py").is_file(), folder
    # every folder of the package is a stage: a new top-level folder is a new layer, declared in ALLOWED
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == set(STAGES), sorted(folders ^ set(STAGES))
    for folder in ("contract", "values", "tasks", "runners", "evals", "reports", "cli"):
        assert (ROOT / "tests" / folder / "__init__.py").is_file(), folder
    whole_project = {"test_architecture.py", "test_packaging.py",  # about the project as a whole
                     "test_dependencies.py", "test_types_checked.py"}
    stray = [p.name for p in (ROOT / "tests").glob("test_*.py") if p.name not in whole_project]
    assert stray == [], "tests live in the folder of the package they test"


# a reader finds a concept from file names and reads one screen of it at a time
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 80


def test_modules_and_functions_stay_small() -> None:
    """No module over 400 lines and no function over 80, in every stage (no exceptions listed)."""
    long = []
    for module, path in _modules().items():
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > MAX_MODULE_LINES:
            long.append(f"{module}: {len(text.splitlines())} lines")
        long += [f"{module}.{n.name}: {n.end_lineno - n.lineno + 1} lines" for n in ast.walk(ast.parse(text))
                 if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and n.end_lineno - n.lineno + 1 > MAX_FUNCTION_LINES]
    assert long == [], "\n".join(long)


# the statistics a renderer must read from the comparison, never compute (issue: work done once)
STATISTICS = {"numpy", "scipy", "evalrun.evals.stats"}


def test_reports_import_no_statistics() -> None:
    """Intervals, tests and resamples live in the comparison stage; src/evalrun/reports/ only lays them out."""
    found = []
    for path in sorted((PACKAGE / "reports").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
                if isinstance(node, ast.ImportFrom) and node.module else [])
            found += [f"{path.relative_to(ROOT)}: {n}" for n in names
                      if any(n == s or n.startswith(s + ".") for s in STATISTICS)]
    assert found == []


# Inside a stage, its sub-packages (and the modules left at its top, its public face) in one
# order, bottom first: each imports only those before it. The stage's own __init__ is below
# them all (it imports nothing of its stage). No exceptions are listed.
ORDER = {
    "evals": ["files", "store", "stats", "scoring", "compare", "timing", "gate", "config", "results", "speed",
              "drift", "imports", "run", "calibrate", "api", "frames"],
    "runners": ["config_rules", "logprobs", "batch_plan", "models", "accel", "base", "fault", "hf", "openai", "ray",
                "runner_settings"],
    "reports": ["text", "charts", "view", "formats", "sweep"],
}


def _group(module: str) -> tuple[str, str] | None:
    """(stage, its sub-package or top module) for a module of an ordered stage; ("evals", "") for its __init__."""
    parts = module.split(".")
    if len(parts) < 2 or parts[0] != "evalrun" or parts[1] not in ORDER:
        return None
    return parts[1], (parts[2] if len(parts) > 2 else "")


def _rank(stage: str, group: str) -> int:
    return -1 if group == "" else ORDER[stage].index(group)


def _upward(graph: dict[str, set[str]]) -> list[str]:
    wrong = []
    for module, deps in sorted(graph.items()):
        here = _group(module)
        if here is None:
            continue
        for dep in sorted(deps):
            there = _group(dep)
            if there is None or there[0] != here[0] or there[1] == here[1]:
                continue
            if _rank(*there) >= _rank(*here):
                wrong.append(f"{module} -> {dep}")
    return wrong


def test_every_module_of_an_ordered_stage_has_its_place() -> None:
    for stage, order in ORDER.items():
        assert len(set(order)) == len(order), stage
        folder = PACKAGE / stage
        present = {p.name for p in folder.iterdir() if (p / "__init__.py").is_file()}
        present |= {p.stem for p in folder.glob("*.py") if p.name != "__init__.py"}
        assert present == set(order), f"{stage}: unplaced {sorted(present - set(order))}, gone {sorted(set(order) - present)}"


def test_sub_packages_import_only_those_below_them() -> None:
    wrong = _upward(_graph())
    assert wrong == [], "imports against the sub-package order (tests/test_architecture.py ORDER):\n" + "\n".join(wrong)


def test_the_order_check_sees_an_upward_import(tmp_path: Path) -> None:
    """The checker itself: the run store importing the gate is caught, the gate importing the store is not."""
    path = tmp_path / "x.py"
    path.write_text("from evalrun.evals.gate import GateConfig\nfrom evalrun.evals.files import ConfigError\n")
    known = set(_modules())
    assert _upward({"evalrun.evals.store._store.x": _imports(path, "evalrun.evals.store._store.x", known)}) == [
        "evalrun.evals.store._store.x -> evalrun.evals.gate"]
    path.write_text("from evalrun.evals.store import RunStore\n")
    assert _upward({"evalrun.evals.gate._gate.x": _imports(path, "evalrun.evals.gate._gate.x", known)}) == []


def _private_reach(importer: str, dep: str) -> bool:
    """Whether `importer` reaches into a private module of an ordered stage's package it is not part of
    (src/evalrun/values/types keeps its `_base`, the one module every field type file builds on)."""
    parts = dep.split(".")
    if _group(dep) is None:
        return False
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            package = ".".join(parts[:i])
            return not (importer == package or importer.startswith(package + "."))
    return False


# scripts that use the package as callers do; tests/ may reach a private module to test its own behaviour
CALLERS = ("benchmarks", "scripts", "examples", "docs")


def test_private_modules_are_imported_only_inside_their_package() -> None:
    """A sub-package's `_module` is its own business: callers import from the sub-package (its __all__)."""
    known = set(_modules())
    found = [f"{m} -> {d}" for m, deps in sorted(_graph().items()) for d in sorted(deps) if _private_reach(m, d)]
    for folder in CALLERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            found += [f"{rel} -> {d}" for d in sorted(_imports(path, "scripts." + path.stem, known))
                      if _private_reach("scripts." + path.stem, d)]
    assert found == [], "private modules imported from outside their package:\n" + "\n".join(found)


def test_the_private_check_sees_a_reach_in() -> None:
    assert _private_reach("evalrun.evals.api", "evalrun.evals.store._store")
    assert not _private_reach("evalrun.evals.store._lock", "evalrun.evals.store._store")
    assert not _private_reach("evalrun.evals.api", "evalrun.evals.store")


def test_each_sub_package_says_what_it_exports() -> None:
    """Every sub-package of an ordered stage lists its public names in __all__, and each of them exists."""
    missing = []
    for stage, order in ORDER.items():
        for group in order:
            init = PACKAGE / stage / group / "__init__.py"
            if not init.is_file():
                continue
            tree = ast.parse(init.read_text(encoding="utf-8"))
            names = [ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                     and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)]
            if not names:
                missing.append(f"{stage}/{group}: no __all__")
                continue
            bound = {a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names}
            bound |= {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
            bound |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
            missing += [f"{stage}/{group}: {n} in __all__ is not imported" for n in names[0] if n not in bound]
    assert missing == []
