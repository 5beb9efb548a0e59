"""Every code block of README.md and docs/*.md runs as written (issue #34).

The fenced blocks are read from the documents themselves, so a doc that changes is tested as it now
reads. What each block gets:

* **yaml** — a whole contract (``name`` plus ``dataset``/``columns``/``checks``) loads and validates with
  :func:`~airflow_dq_contracts.contract.load_contract`; one whose ``dataset.path`` names data the docs
  create (the demo's orders under ``.work/warehouse``) is also evaluated on that data, with no check
  ending in ``error``.
* **python** — a DAG file (it builds a ``DAG``) is imported by a real ``DagBag`` with no import errors;
  any other snippet runs in a fresh interpreter in the docs' working folder.
* **bash / console / shell** — every command runs (``bash -c``) in the docs' working folder; the exit
  code must be 0, or N where the command's comment says ``exits N``. A console block's commands are its
  ``$ `` lines.

A block that cannot run as written says why *in the doc*, on the line just before it (an HTML comment,
invisible on GitHub): ``<!-- synopsis: REASON -->`` (a usage line with ``[optional]`` parts: every option
it names must be one the subcommand's ``--help`` lists), ``<!-- not-run: REASON -->`` (installs, servers, clusters, placeholders: the block
is only listed), ``<!-- fragment: REASON -->`` (part of a contract or a DAG: YAML must parse, Python must
compile). ``<!-- file: PATH -->`` saves a block at PATH in the working folder before it is checked, for
the commands after it. Blocks without a language (diagrams, folder trees) are prose.

The working folder is one per test session, laid out as a checkout after ``./dev demo``: a copy of
``dags_examples/`` and ``docs/first_hour/``, and the demo's orders as ``./dev demo`` leaves them
(``dags_examples/orders_data.py``): three days ending 2024-05-01 in ``.work/warehouse/raw/orders``, the
newest (with its three bad e-mails) in ``.work/warehouse/silver/orders``.
Each document's blocks run in order, so a command can use what an earlier one wrote.

The README's "First hour" walkthrough runs as its own test (:func:`test_first_hour_walkthrough`), with
the same rules plus what a new user would check by eye in the draft and the report.
"""

from __future__ import annotations

import airflow_fixtures  # noqa: F401  (first: sets AIRFLOW_HOME before anything imports airflow)
from airflow_fixtures import DAGS_FOLDER, airflow_db, use_cached_delta_jars  # noqa: F401  (airflow_db: fixture)

import dataclasses
import datetime as dt
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from airflow_dq_contracts.contract import ContractValidationError, load_contract

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
DEMO_DAY = dt.date(2024, 5, 1)  # the day `./dev demo` processes (its --date default)
WALKTHROUGH = "First hour"  # the README section test_first_hour_walkthrough runs
RUN_LANGUAGES = {"yaml", "python", "bash", "console", "shell", "sh"}
PROSE_LANGUAGES = {"", "text"}
MARKER = re.compile(r"^<!--\s*(not-run|fragment|synopsis|file)\s*:\s*(.*?)\s*-->$")
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
EXITS = re.compile(r"\bexits (\d+)\b")

pytestmark = [pytest.mark.airflow, pytest.mark.spark]


# --------------------------------------------------------------------------------------- reading the docs


@dataclasses.dataclass(frozen=True)
class Block:
    """One fenced code block: where it is, its language, its text (dedented), its marker."""

    doc: str
    line: int
    language: str
    text: str
    section: str
    marker: str | None = None
    reason: str = ""

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"


def read_blocks(path: Path) -> list[Block]:
    """The fenced blocks of one Markdown file, each with the marker on the line before it (if any).

    >>> import tempfile
    >>> md = Path(tempfile.mkdtemp()) / "x.md"
    >>> _ = md.write_text("## S\\n<!-- fragment: part of a contract -->\\n```yaml\\na: 1\\n```\\n")
    >>> [(b.line, b.language, b.text, b.section, b.marker, b.reason) for b in read_blocks(md)]
    [(3, 'yaml', 'a: 1\\n', 'S', 'fragment', 'part of a contract')]
    """
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    section = ""
    index = 0
    while index < len(lines):
        heading = re.match(r"^##\s+(.*)$", lines[index])
        if heading:
            section = heading.group(1).strip()
        fence = FENCE.match(lines[index])
        if not fence:
            index += 1
            continue
        indent, language = fence.group(1), fence.group(2).lower()
        end = index + 1
        while not re.match(rf"^{indent}```\s*$", lines[end]):
            end += 1
        body = "\n".join(line[len(indent) :] if line.startswith(indent) else line for line in lines[index + 1 : end])
        before = next((lines[k].strip() for k in range(index - 1, -1, -1) if lines[k].strip()), "")
        found = MARKER.match(before)
        blocks.append(
            Block(
                doc=str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name,
                line=index + 1,
                language=language,
                text=textwrap.dedent(body) + "\n",
                section=section,
                marker=found.group(1) if found else None,
                reason=found.group(2) if found else "",
            )
        )
        index = end + 1
    return blocks


def commands(block: Block) -> list[tuple[str, int]]:
    """(command, expected exit code) of a shell block: continuation lines joined, comments dropped.

    >>> b = Block("d", 1, "bash", "# one\\ndq-contracts diff a.yaml \\\\\\n  b.yaml   # exits 1 if breaking\\n", "")
    >>> commands(b)
    [('dq-contracts diff a.yaml    b.yaml   # exits 1 if breaking', 1)]
    >>> commands(Block("d", 1, "console", "$ dq-contracts validate x.yaml\\nx.yaml:7: error\\n", ""))
    [('dq-contracts validate x.yaml', 0)]
    """
    raw = block.text.splitlines()
    if block.language == "console":
        raw = [line[2:] for line in raw if line.startswith("$ ")]
    out: list[tuple[str, int]] = []
    pending = ""
    for line in raw:
        pending += line.rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        try:
            words = shlex.split(pending, comments=True)
        except ValueError:  # a quoted value spans lines (a JSON connection)
            pending += "\n"
            continue
        text, pending = pending, ""
        if not words:
            continue
        comment = text[len(text.split("#", 1)[0]) :] if "#" in text else ""
        expected = EXITS.search(comment)
        # bash gets the line as written (its globs, variables and comments are bash's to read).
        out.append((text.strip(), int(expected.group(1)) if expected else 0))
    return out


def synopsis_problems(block: Block) -> list[str]:
    """Every ``--option`` a synopsis line names is one its ``dq-contracts`` subcommand accepts."""
    problems = []
    for line, _ in commands(block):
        words = shlex.split(line, comments=True)
        if words[0] != "dq-contracts":
            problems.append(f"{block.where}: a synopsis line that is not dq-contracts: {line}")
            continue
        helps = [
            subprocess.run(["dq-contracts", *words[1:depth], "--help"], capture_output=True, text=True)
            for depth in (3, 2)
        ]
        usage = next((h.stdout for h in helps if h.returncode == 0), "")
        named = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*|-[a-zA-Z])\b", line))
        unknown = sorted(option for option in named if not re.search(rf"(?<![\w-]){re.escape(option)}\b", usage))
        if unknown:
            problems.append(f"{block.where}: `dq-contracts {' '.join(words[1:3])}` has no {unknown}")
    return problems


def is_contract(document: Any) -> bool:
    """A whole contract: ours (``name`` and a body) or an ODCS v3 document, which ``load_contract`` reads too."""
    if not isinstance(document, dict):
        return False
    return document.get("kind") == "DataContract" or (
        "name" in document and bool({"dataset", "columns", "checks"} & set(document))
    )


ALL_BLOCKS = [block for document in DOCUMENTS for block in read_blocks(document)]


# --------------------------------------------------------------------------------------- the working folder


@pytest.fixture(scope="module")
def workdir(airflow_db, tmp_path_factory):  # noqa: F811 - airflow_db is the imported fixture
    """A folder laid out as a checkout after ``./dev demo`` (see the module docs), and the environment."""
    sys.path.insert(0, str(ROOT / "dags_examples"))
    from orders_data import generate_orders, spec_for, write_orders

    root = tmp_path_factory.mktemp("docs-run")
    shutil.copytree(ROOT / "dags_examples", root / "dags_examples", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "docs" / "first_hour", root / "docs" / "first_hour")
    # As the demo's DAG leaves them: the producer's three days in raw (its default outcome, quarantine:
    # three bad e-mails on the newest day), that day loaded into silver.
    rows = generate_orders(spec_for("quarantine", DEMO_DAY))
    write_orders(root / ".work" / "warehouse" / "raw" / "orders", rows)
    write_orders(root / ".work" / "warehouse" / "silver" / "orders", [r for r in rows if r["order_date"] == DEMO_DAY])
    patch = pytest.MonkeyPatch()
    use_cached_delta_jars(patch, root)
    patch.setenv("DQ_CONTRACTS_JOB_CACHE", str(root / ".work" / "job-cache"))
    patch.delenv("DQ_CONTRACTS_WAREHOUSE", raising=False)  # the default: $AIRFLOW_HOME/dq_warehouse
    patch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    yield root
    patch.undo()
    sys.path.remove(str(ROOT / "dags_examples"))


# --------------------------------------------------------------------------------------- running one block


def run_shell(block: Block, cwd: Path) -> list[str]:
    problems = []
    for command, expected in commands(block):
        done = subprocess.run(
            ["bash", "-c", command], cwd=cwd, capture_output=True, text=True, env=os.environ.copy(), timeout=900
        )
        if done.returncode != expected:
            tail = (done.stderr or done.stdout).strip().splitlines()[-8:]
            problems.append(
                f"{block.where}: `{command}` exited {done.returncode}, the doc says {expected}:\n    "
                + "\n    ".join(tail)
            )
    return problems


def run_python(block: Block, cwd: Path) -> list[str]:
    if re.search(r"\bDAG\(", block.text):
        from airflow.models.dagbag import DagBag

        name = re.sub(r"\W", "_", f"docs_{block.doc}_{block.line}").lower()
        path = DAGS_FOLDER / f"{name}.py"
        path.write_text(block.text)
        bag = DagBag(dag_folder=str(path), include_examples=False)
        if bag.import_errors or not bag.dags:
            return [f"{block.where}: the DAG does not import: {bag.import_errors or 'no DAG defined'}"]
        return []
    done = subprocess.run(
        [sys.executable, "-c", block.text], cwd=cwd, capture_output=True, text=True, env=os.environ.copy(), timeout=900
    )
    if done.returncode != 0:
        return [f"{block.where}: the snippet failed:\n    " + "\n    ".join(done.stderr.strip().splitlines()[-8:])]
    return []


def check_yaml(block: Block, cwd: Path, request: pytest.FixtureRequest) -> list[str]:
    try:
        document = yaml.safe_load(block.text)
    except yaml.YAMLError as exc:
        return [f"{block.where}: not YAML: {exc}"]
    if block.marker == "fragment":
        if is_contract(document):
            return [f"{block.where}: a whole contract is marked as a fragment; let it be validated"]
        return []
    if not is_contract(document):
        return [f"{block.where}: not a whole contract (name + dataset/columns/checks); mark it <!-- fragment: why -->"]
    try:
        contract = load_contract(block.text)
    except ContractValidationError as err:
        return [f"{block.where}: the contract does not validate:\n    {err}"]
    path = (document.get("dataset") or {}).get("path")
    if not path or not (cwd / path).exists():
        return []
    # It names data the docs create: it runs on it, and no check ends in error.
    from airflow_dq_contracts.engine import evaluate
    from airflow_dq_contracts.engine.runner import read_dataset

    # Read as a run reads it (the contract's format, options and declared schema), from the working folder.
    frame = read_dataset(request.getfixturevalue("spark"), contract, str(cwd / path))
    result = evaluate(contract, frame, reference_time=f"{DEMO_DAY + dt.timedelta(days=1)}T00:00:00Z")
    errors = [f"{c['check_id']}: {c['message']}" for c in result.summary()["checks"] if c["status"] == "error"]
    return [f"{block.where}: on the demo data, checks end in error: {errors}"] if errors else []


def check_block(block: Block, cwd: Path, request: pytest.FixtureRequest) -> list[str]:
    """What is wrong with one block (nothing: an empty list)."""
    if block.marker == "file":
        target = cwd / block.reason
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block.text)
    if block.language in PROSE_LANGUAGES:
        return []
    if block.marker == "not-run":
        return [] if block.reason else [f"{block.where}: not-run must say why"]
    if block.marker == "synopsis":
        return synopsis_problems(block) if block.reason else [f"{block.where}: synopsis must say why"]
    if block.marker == "fragment":
        if not block.reason:
            return [f"{block.where}: fragment must say why"]
        if block.language == "python":
            try:
                compile(block.text, block.where, "exec")
            except SyntaxError as exc:
                return [f"{block.where}: does not compile: {exc}"]
            return []
    if block.language not in RUN_LANGUAGES:
        return [f"{block.where}: a {block.language!r} block is not run; mark it <!-- not-run: why -->"]
    if block.language == "yaml":
        return check_yaml(block, cwd, request)
    if block.language == "python":
        return run_python(block, cwd)
    return run_shell(block, cwd)


def run_blocks(blocks: list[Block], cwd: Path, request: pytest.FixtureRequest) -> None:
    problems = [problem for block in blocks for problem in check_block(block, cwd, request)]
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------------------- the tests


def test_every_block_is_found_and_every_marker_says_why():
    """The reader sees the blocks the docs have (a fence it missed would silently go untested)."""
    for document in DOCUMENTS:
        fences = sum(1 for line in document.read_text(encoding="utf-8").splitlines() if FENCE.match(line))
        assert fences == 2 * len(read_blocks(document)), document
    unexplained = [b.where for b in ALL_BLOCKS if b.marker and not b.reason]
    assert not unexplained
    assert any(b.section == WALKTHROUGH for b in ALL_BLOCKS), f"README has no '## {WALKTHROUGH}' section"


@pytest.mark.parametrize("document", [d.name for d in DOCUMENTS])
def test_the_docs_run_as_written(document, workdir, request):
    blocks = [b for b in ALL_BLOCKS if Path(b.doc).name == document and b.section != WALKTHROUGH]
    run_blocks(blocks, workdir, request)


def test_first_hour_walkthrough(workdir, request):
    """The README's "First hour", step by step, as a new user runs it.

    Depends on features of issue #34 that other branches add: ``suggest --input-option KEY=VALUE`` and its
    null-token detection (``dataset.null_values: [NA]`` in the draft), CSV read with the declared schema
    and ``dataset.null_values``, the id-named key suggestion, and a report for a clean pass. Until those
    are merged this test fails; it is kept strict on purpose.
    """
    blocks = [b for b in ALL_BLOCKS if b.doc == "README.md" and b.section == WALKTHROUGH]
    assert blocks, f"README has no '## {WALKTHROUGH}' section"
    run_blocks(blocks, workdir, request)
    # What the user reads in the draft: the null token found, the numbers typed, the key proposed.
    draft = yaml.safe_load((workdir / ".work" / "first_hour" / "readings.draft.yaml").read_text())
    assert draft["dataset"]["null_values"] == ["NA"]
    columns = {c["name"]: c for c in draft["columns"]}
    assert columns["temperature_c"]["type"] == "double"
    assert columns["humidity_pct"]["type"] in ("int", "long")
    assert "NA" not in (columns["station"].get("allowed_values") or [])
    assert columns["reading_id"].get("primary_key") or columns["reading_id"].get("unique")
    # The report of the DAG's clean pass: the decision and the contract's checks.
    report = (workdir / ".work" / "first_hour" / "report.html").read_text()
    assert "readings" in report and "pass" in report.lower()
