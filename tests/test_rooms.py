"""The rules that keep winagg's rooms apart (docs/architecture.md).

No import circle between modules, no private name imported from another module, the
library's inner rooms import nothing from the outer ones (benchmarks, Spark, stores, the
command line), no algorithm recognised by its name outside the algorithms' room, and no
measured figure in a code comment (the benchmark pages keep figures with their commands).
"""

import ast
import io
import re
import tokenize
from pathlib import Path

import winagg

SOURCE = Path(winagg.__file__).parent
#: The rooms every path runs through, and the rooms built on them that they must not reach into.
INNER = ("core", "algos", "aggregations", "engine", "windows")
OUTER = ("bench", "spark", "store", "cli", "warmup")


def _modules() -> dict:
    """Dotted module name -> (path, parsed tree) for every module of the package."""
    found = {}
    for path in sorted(SOURCE.rglob("*.py")):
        parts = list(path.relative_to(SOURCE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = (path, ast.parse(path.read_text()))
    return found


MODULES = _modules()


def _imports(name: str, path: Path, tree: ast.AST):
    """``(imported module, imported name)`` for every ``from ... import`` of a winagg module in
    ``tree``, at any depth (imports inside functions count too)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        if target.split(".")[0] != "winagg":
            continue
        for alias in node.names:
            submodule = f"{target}.{alias.name}"
            yield (submodule, None) if submodule in MODULES else (target, alias.name)


def _graph() -> dict:
    return {name: {target for target, _ in _imports(name, *MODULES[name]) if target in MODULES and target != name}
            for name in MODULES}


def _circles(graph: dict) -> list:
    """Strongly connected groups of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in graph:
        if v not in index:
            visit(v)
    return groups


def test_the_circle_finder_finds_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_no_module_imports_one_that_imports_it_back():
    assert _circles(_graph()) == []


def test_no_module_imports_another_modules_private_name():
    private = [f"{name} imports {target}.{what}"
               for name, (path, tree) in MODULES.items()
               for target, what in _imports(name, path, tree)
               if what and what.startswith("_") and not what.startswith("__") and target != name]
    assert private == []


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_the_inner_rooms_import_nothing_from_the_outer_ones():
    reaching = [f"{name} imports {target}" for name, (path, tree) in MODULES.items() if _room(name) in INNER
                for target, _ in _imports(name, path, tree) if _room(target) in OUTER]
    assert reaching == []


def _algorithm_names() -> set:
    return {a.name for a in winagg.algorithms()}


def test_no_algorithm_is_recognised_by_name_outside_the_algorithms_room():
    """A window asks what an algorithm offers (winagg.core.capabilities), never which one it is;
    the registry (its default choices) and the benchmarks, which name what they time, may."""
    names = _algorithm_names()
    found = []
    for name, (path, tree) in MODULES.items():
        if _room(name) in ("algos", "bench"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                for side in [node.left, *node.comparators]:
                    if isinstance(side, ast.Constant) and side.value in names:
                        found.append(f"{path.relative_to(SOURCE)}:{node.lineno} compares with {side.value!r}")
    assert found == []


#: A measured figure: a rate, a duration in (milli, micro, nano)seconds, or a speed ratio.
FIGURE = re.compile(r"\d\s*M?\s*(rows|items|rounds)/s\b|\d\s*(ns|us|µs|ms)\b|\d(\.\d+)?x (faster|slower)"
                    r"|\d+(\.\d+)?% (faster|slower)")


def test_the_figure_pattern_finds_figures():
    assert FIGURE.search("# the loop ran 1.75x faster")
    assert FIGURE.search("# 52M rows/s as calls")
    assert FIGURE.search("# 6-8 ns a round")
    assert not FIGURE.search("# the window holds 4096 items, a power of two")


def test_no_code_comment_carries_a_measured_figure():
    found = []
    for name, (path, _) in MODULES.items():
        if _room(name) == "bench":  # the benchmarks name the units they measure in
            continue
        for token in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
            if token.type == tokenize.COMMENT and FIGURE.search(token.string):
                found.append(f"{path.relative_to(SOURCE)}:{token.start[0]}: {token.string.strip()}")
    assert found == []
