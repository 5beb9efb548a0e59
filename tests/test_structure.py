"""The shape of the package (issue #22): no import cycles, small files, no private names across modules,
one place that opens a Delta table with delta-rs, broad excepts only with a reason, and the static checks wired
into ``./dev test``.

The import graph here is built from the source with ``ast`` — every ``import`` and ``from … import``
statement anywhere in a file, function bodies included — so a lazy import cannot hide a cycle. The
layering itself is checked by ``lint-imports`` (pyproject's ``[tool.importlinter]``), which ``./dev test``
runs before pytest; this module also runs it, so a plain ``pytest`` sees a broken layer too.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "airflow_dq_contracts"
MAX_LINES = 800


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(module: str, path: Path) -> list[tuple[str, list[str], int]]:
    """(imported module, names taken from it, line) for every import statement of the file, at any depth."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out.extend((alias.name, [], node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.append((target, [alias.name for alias in node.names], node.lineno))
    return out


def _graph() -> dict[str, set[str]]:
    """Edges between the package's modules; ``from pkg import mod`` is an edge to ``pkg.mod`` when it is a module."""
    edges: dict[str, set[str]] = {name: set() for name in MODULES}
    for module, path in MODULES.items():
        for target, names, _ in _imports(module, path):
            if not target.startswith(PACKAGE):
                continue
            submodules = [f"{target}.{name}" for name in names if f"{target}.{name}" in MODULES]
            if submodules:
                edges[module].update(submodules)
            if (len(submodules) < len(names) or not names) and target in MODULES:
                edges[module].add(target)
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module, or a module importing itself (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1 or node in edges.get(node, ()):
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_the_graph_sees_function_level_imports(tmp_path):
    # The checker itself: an import inside a function body is an edge.
    source = "def f():\n    from airflow_dq_contracts.contract import model\n    return model\n"
    path = tmp_path / "probe.py"
    path.write_text(source)
    assert ("airflow_dq_contracts.contract", ["model"], 2) in _imports(f"{PACKAGE}.probe", path)
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles():
    cycles = _cycles(_graph())
    assert not cycles, "import cycles (function-level imports included):\n" + "\n".join(
        " ↔ ".join(component) for component in cycles
    )


def test_no_file_over_800_lines():
    long = {
        str(path.relative_to(ROOT)): n
        for path in MODULES.values()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, f"files over {MAX_LINES} lines: {long}"


def test_no_private_names_imported_across_modules():
    offenders = []
    for module, path in MODULES.items():
        for target, names, line in _imports(module, path):
            if target.startswith(PACKAGE) and target != module:
                offenders += [
                    f"{path.relative_to(ROOT)}:{line}: {name} from {target}"
                    for name in names
                    if name.startswith("_") and not name.startswith("__")
                ]
    assert not offenders, "private names imported from another module:\n" + "\n".join(offenders)


def test_delta_tables_are_opened_in_one_module():
    openers = sorted(
        str(path.relative_to(ROOT)) for path in MODULES.values() if "DeltaTable(" in path.read_text(encoding="utf-8")
    )
    assert openers == [f"{PACKAGE}/store/delta.py"], openers


def test_broad_excepts_give_a_reason():
    bare = []
    pattern = re.compile(r"except\s+\(?(Exception|BaseException)\b[^:#]*:(?P<rest>.*)$")
    for path in MODULES.values():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            match = pattern.search(line)
            if match is None:
                continue
            rest = match.group("rest")
            reason = re.sub(r"#\s*(noqa:\s*BLE001)?\s*(-|—|:)?\s*", "", rest, count=1).strip()
            if "#" not in rest or len(reason) < 8:
                bare.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not bare, "broad excepts without a reason comment:\n" + "\n".join(bare)


def test_the_package_is_typed_and_checked():
    assert (ROOT / PACKAGE / "py.typed").is_file()
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    for section in ("[tool.ruff]", "[tool.ruff.lint]", "[tool.mypy]", "[tool.importlinter]"):
        assert section in pyproject, section
    dev = (ROOT / "dev").read_text(encoding="utf-8")
    for command in ('ruff" check', 'ruff" format --check', 'mypy"', 'lint-imports"'):
        assert command in dev, command


def test_import_layers_hold():
    # import-linter comes with the lint extra that ./dev setup installs (the matrix leaves this module out).
    tool = str(Path(sys.executable).parent / "lint-imports")
    run = subprocess.run([tool, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
