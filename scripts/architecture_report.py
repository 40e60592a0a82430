#!/usr/bin/env python3
"""How Rumi's shape measures against its own rules (docs/architecture.md), from the source alone.

An AST scan of `rumi/` (and a listing of `tests/`) that anyone can re-run after a change, so the
numbers in docs/architecture.md are never hand-counted. Prints JSON, then a markdown table:

- import cycles between modules and between packages (`rumi.context`, `rumi.core`, …), counted
  as strongly connected groups; imports under `TYPE_CHECKING` count (they are still a cycle);
- private names (`_name`) one module uses from another (imported, or read off an object, when
  the name is defined in another module of `rumi/` and not in the one using it);
- modules over 400 lines, functions over 50 and over 60 lines;
- test files lying loose at the top of `tests/`;
- `AsyncGroq(` call sites (Rumi means to have one Groq client);
- files holding SQL outside the stores (`store.py` modules and `store/` packages);
- `duplicates` pairs, when that command is installed ("n/a" otherwise).

    python scripts/architecture_report.py [--root CHECKOUT] [--json | --markdown]
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

MODULE_LINES = 400
FUNCTION_LINES = (50, 60)
SQL = re.compile(r"\b(SELECT\s.+\sFROM|INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM"
                 r"|CREATE\s+(VIRTUAL\s+)?(TABLE|INDEX|TRIGGER)|ALTER\s+TABLE|DROP\s+(TABLE|INDEX)"
                 r"|PRAGMA\s+\w+)\b", re.DOTALL)


@dataclass
class Module:
    name: str
    path: Path
    tree: ast.Module
    lines: int
    imports: set[str] = field(default_factory=set)


def load_modules(root: Path) -> dict[str, Module]:
    modules: dict[str, Module] = {}
    for path in sorted((root / "rumi").rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        text = path.read_text(encoding="utf-8")
        modules[".".join(parts)] = Module(".".join(parts), path, ast.parse(text),
                                          len(text.splitlines()))
    for module in modules.values():
        module.imports = set(_imports_of(module, modules))
    return modules


def _imports_of(module: Module, modules: dict[str, Module]) -> Iterator[str]:
    is_package = module.path.name == "__init__.py"
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield from _known(alias.name, modules)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module.name, is_package, node.module, node.level)
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                yield from _known(candidate if candidate in modules else base, modules)


def _absolute(name: str, is_package: bool, target: str | None, level: int) -> str:
    if level == 0:
        return target or ""
    package = name.split(".") if is_package else name.split(".")[:-1]
    package = package[:len(package) - (level - 1)]
    return ".".join(package + ([target] if target else []))


def _known(name: str, modules: dict[str, Module]) -> Iterator[str]:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    if name:
        yield name


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = _pop_group(stack, on_stack, node)
                    if len(group) > 1:
                        found.append(sorted(group))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return sorted(found)


def _pop_group(stack: list[str], on_stack: set[str], root: str) -> list[str]:
    group = []
    while True:
        member = stack.pop()
        on_stack.discard(member)
        group.append(member)
        if member == root:
            return group


def package_of(name: str) -> str:
    return ".".join(name.split(".")[:2])


def package_graph(modules: dict[str, Module]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module in modules.values():
        mine = package_of(module.name)
        graph.setdefault(mine, set()).update(
            package_of(i) for i in module.imports if package_of(i) != mine)
    return graph


def private_uses(modules: dict[str, Module]) -> list[str]:
    defined = {name: _private_definitions(m.tree) for name, m in modules.items()}
    everywhere = set().union(*defined.values())
    uses = []
    for name, module in modules.items():
        for node in ast.walk(module.tree):
            used = _private_name_used(node, name, module, modules)
            if used and used in everywhere and used not in defined[name]:
                uses.append(f"{name}:{node.lineno} {used}")
    return uses


def _private_name_used(node: ast.AST, name: str, module: Module,
                       modules: dict[str, Module]) -> str | None:
    if isinstance(node, ast.Attribute) and _private(node.attr):
        owner = node.value
        if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
            return None
        return node.attr
    if isinstance(node, ast.ImportFrom):
        for alias in node.names:
            if _private(alias.name):
                return alias.name
    return None


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _private_definitions(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if _private(n)}


def long_functions(modules: dict[str, Module], limit: int) -> list[str]:
    found = []
    for module in modules.values():
        for node in ast.walk(module.tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > limit:
                    found.append(f"{module.name}.{node.name} {length}")
    return sorted(found)


def async_groq_sites(modules: dict[str, Module]) -> list[str]:
    sites = []
    for module in modules.values():
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if called == "AsyncGroq":
                    sites.append(f"{module.name}:{node.lineno}")
    return sites


def sql_files_outside_stores(modules: dict[str, Module]) -> list[str]:
    found = []
    for module in modules.values():
        parts = module.name.split(".")
        if "store" in parts or parts[-1].endswith("store"):
            continue
        if any(SQL.search(text) for text in _code_strings(module.tree)):
            found.append(module.name)
    return sorted(found)


def _code_strings(tree: ast.Module) -> Iterator[str]:
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef
                                | ast.AsyncFunctionDef)
                  and node.body and isinstance(node.body[0], ast.Expr)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in docstrings:
            yield node.value


def loose_test_files(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "tests").glob("test_*.py"))


def duplicate_pairs(root: Path) -> str | int:
    command = shutil.which("duplicates")
    if command is None:
        return "n/a"
    out = subprocess.run([command, "--repo", str(root / "rumi"), "--seconds", "120"],
                         capture_output=True, text=True, timeout=300, check=False).stdout
    first = out.splitlines()[0] if out else ""
    if first.startswith("no duplicates"):
        return 0
    match = re.match(r"(\d+) pairs", first)
    return int(match.group(1)) if match else "n/a"


def measure(root: Path) -> dict[str, object]:
    modules = load_modules(root)
    module_cycles = cycles({m.name: m.imports - {m.name} for m in modules.values()})
    package_cycles = cycles(package_graph(modules))
    big = sorted((f"{m.name} {m.lines}" for m in modules.values() if m.lines > MODULE_LINES),
                 key=lambda row: -int(row.rsplit(" ", 1)[1]))
    private = private_uses(modules)
    return {
        "modules": len(modules),
        "lines": sum(m.lines for m in modules.values()),
        "module_cycles": {"count": len(module_cycles), "groups": module_cycles},
        "package_cycles": {"count": len(package_cycles), "groups": package_cycles},
        "private_cross_module": {"count": len(private), "uses": private},
        f"modules_over_{MODULE_LINES}": {"count": len(big), "modules": big},
        **{f"functions_over_{n}": {"count": len(rows), "functions": rows}
           for n in FUNCTION_LINES for rows in [long_functions(modules, n)]},
        "loose_test_files": {"count": len(loose := loose_test_files(root)), "files": loose},
        "asyncgroq_call_sites": {"count": len(groq := async_groq_sites(modules)), "sites": groq},
        "sql_files_outside_stores": {"count": len(sql := sql_files_outside_stores(modules)),
                                     "modules": sql},
        "duplicates_pairs": duplicate_pairs(root),
    }


def markdown(report: dict[str, object]) -> str:
    rows = ["| measure | count |", "| --- | --- |"]
    for key, value in report.items():
        count = value["count"] if isinstance(value, dict) else value
        rows.append(f"| {key.replace('_', ' ')} | {count} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="the checkout to measure (default: this one)")
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--json", action="store_true", help="only the JSON")
    shown.add_argument("--markdown", action="store_true", help="only the markdown table")
    args = parser.parse_args(argv)
    report = measure(args.root)
    if not args.markdown:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    if not args.json:
        print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
