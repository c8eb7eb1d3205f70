"""The layers of core read top to bottom: the search engine (``autotune``) imports neither the
operators, nor the graph, nor the compiler, not even inside a function; the tunable templates
live beside the operators they schedule and a model's tasks in the compiler; no import cycle
runs through ``autotune`` or ``ops`` (issue 15: ``autotune/graph_tasks.py`` <->
``compiler/compile.py`` and ``ops/schedules_cpu.py`` <-> ``autotune/templates_cpu.py`` were
such cycles). Imports are read from the source with ``ast``, so a lazy import counts."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import tensorforge

SRC = Path(tensorforge.__file__).parent
FORBIDDEN = ("tensorforge.compiler", "tensorforge.ops", "tensorforge.graph")


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _resolve(package: str, level: int, module: str | None) -> str:
    base = package.split(".")[:len(package.split(".")) - level + 1] if level else []
    return ".".join([*base, *([module] if module else [])])


def imports_of(source: str, module: str, package: str) -> Iterator[tuple[int, str]]:
    """(line, absolute module) of every import in ``source``, at any depth: ``import``,
    ``from ... import`` (each imported name too, as it may be a submodule) and
    ``importlib.import_module`` / ``__import__`` of a string constant."""
    for node in ast.walk(ast.parse(source, module)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(package, node.level, node.module)
            yield node.lineno, base
            for alias in node.names:
                yield node.lineno, f"{base}.{alias.name}"
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            fname = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            arg = node.args[0]
            if fname in ("import_module", "__import__") and isinstance(arg, ast.Constant) \
                    and isinstance(arg.value, str):
                name = arg.value
                if name.startswith("."):
                    dots = len(name) - len(name.lstrip("."))
                    name = _resolve(package, dots, name[dots:] or None)
                yield node.lineno, name


def _forbidden(name: str) -> bool:
    return any(name == f or name.startswith(f + ".") for f in FORBIDDEN)


def layer_violations(source: str, module: str, package: str) -> list[str]:
    return [f"{module}:{line} imports {name}" for line, name in imports_of(source, module, package)
            if _forbidden(name)]


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in SRC.rglob("*.py")}


def test_autotune_imports_no_operator_graph_or_compiler_module() -> None:
    files = sorted((SRC / "autotune").rglob("*.py"))
    assert len(files) > 10  # the walk sees the package
    found = []
    for path in files:
        module = _module_name(path)
        found += layer_violations(path.read_text(), module, _package(module, path))
    assert not found, "the search engine must not import the layers above it:\n" + \
        "\n".join(found)


@pytest.mark.parametrize("source", [
    "from ..compiler.compile import plan",
    "def f():\n    from ..graph.ir import Node\n",
    "from .. import ops",
    "import tensorforge.graph.groups",
    "from tensorforge import compiler",
    "from tensorforge.ops.schedules_cpu import cpu_tiles",
    "import importlib\nimportlib.import_module('tensorforge.ops.templates_cpu')",
    "def f():\n    __import__('tensorforge.compiler.compile')\n",
])
def test_the_layer_check_sees_every_form_of_import(source: str) -> None:
    assert layer_violations(source, "tensorforge.autotune.x", "tensorforge.autotune")


def test_the_layer_check_allows_the_layers_below() -> None:
    ok = ("from ..expr import dtype\nfrom .space import ConfigSpace\n"
          "def f():\n    from ..runtime.module import load_module\n    from .. import te\n")
    assert layer_violations(ok, "tensorforge.autotune.x", "tensorforge.autotune") == []


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the core modules it imports (anywhere in its source)."""
    mods = _modules()
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for module, path in mods.items():
        for _, name in imports_of(path.read_text(), module, _package(module, path)):
            if name in mods and name != module:
                edges[module].add(name)
    return edges


def test_the_cycle_finder_finds_the_old_cycles() -> None:
    old = {"tensorforge.ops.schedules_cpu": {"tensorforge.autotune.templates_cpu"},
           "tensorforge.autotune.templates_cpu": {"tensorforge.ops.schedules_cpu",
                                                  "tensorforge.ops.nn_nchwc"},
           "tensorforge.ops.nn_nchwc": set(),
           "tensorforge.compiler.compile": {"tensorforge.autotune.graph_tasks"},
           "tensorforge.autotune.graph_tasks": {"tensorforge.compiler.kernels"},
           "tensorforge.compiler.kernels": {"tensorforge.compiler.compile"}}
    assert sorted(_cycles(old)) == [
        ["tensorforge.autotune.graph_tasks", "tensorforge.compiler.compile",
         "tensorforge.compiler.kernels"],
        ["tensorforge.autotune.templates_cpu", "tensorforge.ops.schedules_cpu"]]


def test_no_import_cycle_runs_through_autotune_or_ops() -> None:
    bad = [c for c in _cycles(import_graph())
           if any(m.startswith(("tensorforge.autotune", "tensorforge.ops")) for m in c)]
    assert not bad, f"import cycles through the search engine or the operators: {bad}"


def test_the_templates_live_beside_what_they_schedule() -> None:
    assert not list((SRC / "autotune").glob("templates_*.py"))
    from tensorforge.autotune import get_template

    where = {name: get_template(name).module for name in
             ("matmul_packed.llvm", "conv2d_nchwc.llvm", "dense.gpu", "conv2d.gpu", "graph_group")}
    assert where == {"matmul_packed.llvm": "tensorforge.ops.templates_cpu",
                     "conv2d_nchwc.llvm": "tensorforge.ops.templates_cpu",
                     "dense.gpu": "tensorforge.ops.templates_gpu",
                     "conv2d.gpu": "tensorforge.ops.templates_gpu",
                     "graph_group": "tensorforge.compiler.group_tasks"}


def test_importing_the_search_engine_loads_no_upper_layer() -> None:
    """Every autotune module imported in a fresh interpreter: no compiler, graph or operator
    module comes with them (catches an import the source walk cannot see)."""
    code = ("import importlib, pkgutil, sys, tensorforge.autotune as a\n"
            "for m in pkgutil.iter_modules(a.__path__):\n"
            "    importlib.import_module('tensorforge.autotune.' + m.name)\n"
            f"print(sorted(m for m in sys.modules if m.startswith({FORBIDDEN!r})))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=os.environ.copy(), timeout=120, check=True).stdout
    assert out.strip() == "[]"


def test_records_of_templates_that_moved_still_resolve(llvm_target) -> None:
    """Tuning databases store each task's template module; those written before the templates
    moved name ``tensorforge.autotune.templates_cpu`` / ``graph_tasks``."""
    from tensorforge.autotune import Task

    old = Task("matmul_packed.llvm", (64, 64, 64), str(llvm_target),
               module="tensorforge.autotune.templates_cpu")
    new = Task("matmul_packed.llvm", (64, 64, 64), str(llvm_target))
    assert old.key == new.key and old.template.module == "tensorforge.ops.templates_cpu"
    assert len(old.config_space) == len(new.config_space) > 1
    stale = Task("graph_group", (), "llvm", module="tensorforge.autotune.graph_tasks")
    assert stale.template.module == "tensorforge.compiler.group_tasks"


def test_a_template_module_that_fails_to_import_says_why(tmp_path, monkeypatch) -> None:
    (tmp_path / "broken_templates_mod.py").write_text("import no_such_dependency_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from tensorforge.autotune import get_template

    with pytest.raises(ModuleNotFoundError, match="no_such_dependency_xyz"):
        get_template("not_registered_anywhere", "broken_templates_mod")


def test_model_tuning_names() -> None:
    from tensorforge.autotune import tune_model
    from tensorforge.compiler import model_tuning

    assert tune_model is tensorforge.tune_model is model_tuning.tune_model
    with pytest.raises(ImportError, match="tensorforge.compiler.model_tuning import extract"):
        from tensorforge.autotune import extract_tasks  # noqa: F401
    with pytest.raises(ImportError, match="compiler.group_tasks import GroupTask"):
        from tensorforge.autotune import GroupTask  # noqa: F401
