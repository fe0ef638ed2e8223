"""The shape of the source tree, read from the code: modules, their rollchat imports (top level,
function-local and TYPE_CHECKING alike), the import circles, the import floors and the sizes of
modules and functions. tests/test_architecture.py checks the rules on it; `python tests/shape.py`
prints the figures the closing notes quote."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
ROOT_PACKAGE = "rollchat"


@dataclass
class Module:
    name: str
    path: Path
    lines: int
    imports: set[str] = field(default_factory=set)  # rollchat modules it imports, in any way
    externals: set[str] = field(default_factory=set)  # top-level names of other packages
    functions: list[tuple[str, int]] = field(default_factory=list)  # (qualified name, lines)
    docstring: str | None = None  # the module's, as ast.get_docstring reads it


def module_name(path: Path, src: Path = SRC) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


# The fields that hold statements: a function, a class and an import are statements, and no
# expression holds one, so the walk reads these alone (a tenth of the nodes), in field order.
_BODIES = frozenset({"body", "orelse", "finalbody", "handlers", "cases"})


def _scan(nodes: Iterable[ast.AST], prefix: str, mod: Module,
          imports: list[ast.Import | ast.ImportFrom]) -> None:
    """The functions (qualified names, lines) and the import statements under ``nodes``."""
    for node in nodes:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.append(node)
            continue
        inner = prefix
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            mod.functions.append((f"{prefix}{node.name}", (node.end_lineno or node.lineno)
                                  - start + 1))
            inner = f"{prefix}{node.name}."
        elif isinstance(node, ast.ClassDef):
            inner = f"{prefix}{node.name}."
        for name in node._fields:
            if name in _BODIES:
                _scan(getattr(node, name), inner, mod, imports)


def _resolve(target: str, known: set[str]) -> str | None:
    """The longest known module that `target` names or lies inside."""
    while target:
        if target in known:
            return target
        target = target.rpartition(".")[0]
    return None


def load(src: Path = SRC) -> dict[str, Module]:
    modules: dict[str, Module] = {}
    trees: dict[str, ast.Module] = {}
    for path in sorted((src / ROOT_PACKAGE).rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        name = module_name(path, src)
        modules[name] = Module(name, path, text.count("\n") + (not text.endswith("\n")))
        trees[name] = ast.parse(text, filename=str(path))
    known = set(modules)
    for name, tree in trees.items():
        mod = modules[name]
        mod.docstring = ast.get_docstring(tree)
        statements: list[ast.Import | ast.ImportFrom] = []
        _scan(tree.body, "", mod, statements)
        is_package = mod.path.name == "__init__.py"
        for node in statements:
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = name if is_package else name.rpartition(".")[0]
                    for _ in range(node.level - 1):
                        anchor = anchor.rpartition(".")[0]
                    base = f"{anchor}.{base}" if base else anchor
                targets = [f"{base}.{alias.name}" for alias in node.names] or [base]
            for target in targets:
                if target.split(".")[0] != ROOT_PACKAGE:
                    mod.externals.add(target.split(".")[0])
                    continue
                found = _resolve(target, known)
                if found and found != name:
                    mod.imports.add(found)
    return modules


def circles(modules: dict[str, Module]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    result: list[list[str]] = []
    counter = 0
    for root in sorted(modules):
        if root in index:
            continue
        work = [(root, iter(sorted(modules[root].imports)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(modules[child].imports))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
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
                    result.append(sorted(component))
    return result


def floors(modules: dict[str, Module]) -> int:
    """How many import floors: the longest chain of imports, circles counted as one floor."""
    member_of = {m: tuple(c) for c in circles(modules) for m in c}
    depth: dict[object, int] = {}

    def node(m: str) -> object:
        return member_of.get(m, m)

    def height(n: object, seen: frozenset[object] = frozenset()) -> int:
        if n in depth:
            return depth[n]
        members = list(n) if isinstance(n, tuple) else [n]
        below = {node(i) for m in members for i in modules[m].imports} - {n} - seen
        depth[n] = 1 + max((height(b, seen | {n}) for b in below), default=0)
        return depth[n]

    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))
    return max((height(node(m)) for m in modules), default=0)


def report(modules: dict[str, Module]) -> str:
    top = [m for m in modules.values() if m.name.count(".") == 1 and m.path.name != "__init__.py"]
    largest = max(modules.values(), key=lambda m: m.lines)
    fname, flines, fmod = max(
        ((f, n, m.name) for m in modules.values() for f, n in m.functions), key=lambda t: t[1]
    )
    found = circles(modules)
    return "\n".join([
        f"files: {len(modules)} ({len(top)} flat at the top of src/rollchat/)",
        f"import floors: {floors(modules)}",
        f"import circles: {len(found)}" + "".join(f"\n  {' <-> '.join(c)}" for c in found),
        f"largest module: {largest.name} ({largest.lines} lines)",
        f"largest function: {fmod}.{fname} ({flines} lines)",
        f"modules over 400 lines: {sum(m.lines > 400 for m in modules.values())}",
        "functions over 60 lines: "
        f"{sum(n > 60 for m in modules.values() for _, n in m.functions)}",
    ])


if __name__ == "__main__":
    print(report(load()))
