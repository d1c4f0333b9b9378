"""The package's import graph has no cycle, counting imports inside functions too.

Every `.py` file under decoder/ is parsed with `ast`; every `import` and `from ... import`
statement anywhere in it (module level, inside functions, classes, `try` blocks and
`if TYPE_CHECKING:` blocks alike) gives an edge from its module to each decoder.* module it
names, relative imports resolved. `from package import name` counts as an import of
package.name when that is a module, else of the package. A cycle in this graph means two
modules that each need the other: the layering has to go one way.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "decoder"


def module_files(root: Path = ROOT, package: str = PACKAGE) -> dict[str, Path]:
    """Module name -> file, for every .py file under the package (symlinked directories such as
    decoder/_ext hold compiled modules and are skipped: they import nothing of decoder)."""
    modules = {}
    base = root / package
    for path in sorted(base.rglob("*.py")):
        relative = path.relative_to(root)
        if any(part.startswith(".") or part == "__pycache__" for part in relative.parts):
            continue
        if any((root / Path(*relative.parts[:i])).is_symlink() for i in range(1, len(relative.parts))):
            continue
        parts = list(relative.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _resolve_relative(module: str, is_package: bool, level: int, name: str | None) -> str:
    """The absolute name of `from {'.' * level}{name} import ...` written in `module`."""
    parts = module.split(".")
    if not is_package:
        parts = parts[:-1]  # a plain module's imports are relative to its package
    if level > 1:
        parts = parts[:len(parts) - (level - 1)]
    return ".".join(parts + ([name] if name else []))


def imports_of(module: str, path: Path, modules: dict) -> set[str]:
    """The decoder.* modules that `module` imports anywhere in its file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    found = set()

    def add(name: str) -> None:
        # `import a.b.c` imports a, a.b and a.b.c; keep the deepest one that is a module of ours
        while name and name not in modules:
            name = name.rpartition(".")[0]
        if name and name != module:
            found.add(name)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == PACKAGE or alias.name.startswith(PACKAGE + "."):
                    add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = (_resolve_relative(module, is_package, node.level, node.module) if node.level
                    else node.module or "")
            if not (base == PACKAGE or base.startswith(PACKAGE + ".")):
                continue
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                add(submodule if submodule in modules else base)
    return found


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    modules = module_files(root)
    return {module: imports_of(module, path, modules) for module, path in modules.items()}


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative):
    each is a set of modules that all reach each other through imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
    return components


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One shortest cycle (as a path a -> ... -> a) in each strongly connected component."""
    return [_cycle_in(graph, set(component)) for component in strongly_connected(graph)]


def _cycle_in(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A shortest cycle through the component's first module, by breadth-first search."""
    start = min(component)
    previous = {start: None}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for child in sorted(graph[node] & component):
            if child == start:
                path = [node]
                while previous[path[-1]] is not None:
                    path.append(previous[path[-1]])
                return [start] + path[::-1][1:] + [start] if path[-1] == start else path[::-1] + [start]
            if child not in previous:
                previous[child] = node
                queue.append(child)
    return sorted(component)


def test_the_graph_sees_every_kind_of_import():
    """The parser itself: module-level, function-level, relative (one and two dots) and
    `from package import module` imports are all edges."""
    modules = module_files()
    graph = import_graph()
    assert len(modules) > 50 and "decoder.decoder" in graph and "decoder.sdig.decoder" in graph
    assert "decoder.translation" in graph["decoder.decoder"]  # from .translation import Translation
    assert "decoder.batch" in graph["decoder.decoder"]  # inside Decoder.translate_batch
    assert "decoder.errors" in graph["decoder.sdig.decoder"]  # from ..errors import ...
    assert "decoder.sdig.parser" in graph["decoder.sdig.decoder"]  # from .parser import ... in a method


def test_find_cycles_finds_a_cycle_through_function_level_imports(tmp_path):
    package = tmp_path / PACKAGE
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from .b import x\n")
    (package / "b.py").write_text("def f():\n    from .sub import c\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "c.py").write_text("import os\n\ndef g():\n    from .. import a\n")
    (package / "d.py").write_text("from . import a\n")
    graph = {module: imports_of(module, path, module_files(tmp_path))
             for module, path in module_files(tmp_path).items()}
    assert graph["decoder.b"] == {"decoder.sub.c"} and graph["decoder.sub.c"] == {"decoder.a"}
    assert find_cycles(graph) == [["decoder.a", "decoder.b", "decoder.sub.c", "decoder.a"]]
    (package / "sub" / "c.py").write_text("import os\n")
    graph = {module: imports_of(module, path, module_files(tmp_path))
             for module, path in module_files(tmp_path).items()}
    assert find_cycles(graph) == []


def describe_cycles(graph: dict[str, set[str]]) -> list[str]:
    """For each group of modules that import each other: one cycle, and every module of the group."""
    return [f"{' -> '.join(_cycle_in(graph, set(component)))}   (all of: {', '.join(component)})"
            for component in strongly_connected(graph)]


def test_no_import_cycle_in_the_package():
    cycles = describe_cycles(import_graph())
    assert not cycles, "import cycles (module -> module it imports):\n" + "\n".join("  " + c for c in cycles)


if __name__ == "__main__":  # print the cycles
    print("\n".join(describe_cycles(import_graph(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT))))
