"""docs/architecture.md is true: its layer table is import-linter's layers contract (same packages, same
order), and every file, folder and ``file.py:name`` it names exists in the repository."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pytest brings tomli on Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "airflow_dq_contracts"
DOC = ROOT / "docs" / "architecture.md"
PREFIX = "airflow_dq_contracts."
# A backticked path: a .py file (optionally `:name`), or a folder ending in "/".
PATH_TOKEN = re.compile(r"`((?:[\w.-]+/)*[\w.-]+\.py(?::\w+)?|(?:[\w.-]+/)+)`")
ROOT_FOLDERS = ("tests/", "docs/", "benchmarks/", "scripts/", "dags_examples/", "airflow_dq_contracts/")


def _section(text: str, heading: str) -> str:
    start = text.index(f"\n## {heading}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def doc_layers() -> list[tuple[int, list[str]]]:
    """(number, packages) of each row of the doc's layer table, in order."""
    rows = []
    for line in _section(DOC.read_text(encoding="utf-8"), "The layers").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0].isdigit():
            rows.append((int(cells[0]), re.findall(r"`([\w.]+)`", cells[1])))
    return rows


def linter_layers() -> list[list[str]]:
    """import-linter's layers contract, top to bottom, each layer's packages without the package prefix."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    layers = []
    for layer in contract["layers"]:
        names = [name.strip() for name in layer.split("|")]
        assert all(name.startswith(PREFIX) for name in names), layer
        layers.append([name[len(PREFIX) :] for name in names])
    return layers


def test_the_layer_table_is_the_import_linter_layers_contract():
    rows = doc_layers()
    assert [number for number, _ in rows] == list(range(1, len(rows) + 1)), "layers numbered 1, 2, 3… in order"
    assert [packages for _, packages in rows] == linter_layers()


def test_every_layer_package_exists():
    for layer in linter_layers():
        for name in layer:
            path = PACKAGE.joinpath(*name.split("."))
            assert path.is_dir() or path.with_suffix(".py").is_file(), name


def _resolve(token: str) -> Path:
    path = token.split(":", 1)[0]
    return ROOT / path if path.startswith(ROOT_FOLDERS) else PACKAGE / path


def _defines(path: Path, name: str) -> bool:
    """Whether module ``path`` defines ``name`` at its top level (a function, class or assignment)."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return True
    return False


def test_every_path_the_doc_names_exists():
    tokens = sorted(set(PATH_TOKEN.findall(DOC.read_text(encoding="utf-8"))))
    assert len(tokens) > 60, "the module map names the package's files"
    missing = [t for t in tokens if not _resolve(t).exists()]
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"
    undefined = [t for t in tokens if ":" in t and not _defines(_resolve(t), t.split(":", 1)[1])]
    assert not undefined, f"docs/architecture.md names what these files do not define: {undefined}"


def test_the_module_map_names_every_package():
    named = set(PATH_TOKEN.findall(_section(DOC.read_text(encoding="utf-8"), "Module map")))
    folders = {t.split(":", 1)[0].rsplit("/", 1)[0] + "/" for t in named if "/" in t.rstrip("/")} | {
        t for t in named if t.endswith("/")
    }
    packages = sorted(
        str(p.parent.relative_to(PACKAGE)) + "/" for p in PACKAGE.rglob("__init__.py") if p.parent != PACKAGE
    )
    assert [p for p in packages if p not in folders] == []


def test_the_seams_the_doc_names_have_their_toys():
    where = _section(DOC.read_text(encoding="utf-8"), "Where to add")
    for test_file, test_name in (
        ("tests/test_seams.py", "test_a_toy_check_type_runs_through_evaluate"),
        ("tests/test_seams.py", "test_a_run_is_written_and_read_back_through_an_in_memory_backend"),
        ("tests/test_transport.py", "test_a_toy_transport_runs_a_task_end_to_end"),
        ("tests/test_seams.py", "test_a_toy_import_formats_contract_runs"),
    ):
        assert test_file in where and test_name in where
        assert _defines(ROOT / test_file, test_name), (test_file, test_name)
