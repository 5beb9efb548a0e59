"""A corpus of malformed contracts, each refused with the right located message (DESIGN §4).

Every file in ``tests/malformed/`` starts with one ``# expect: LINE: PATH: FRAGMENT`` line per problem
it contains (``-`` for "no line", ``<document>`` for the document itself). The loader must report
exactly those problems — same line, same path, message containing the fragment — and nothing else,
all at once, as a ``ContractValidationError``, never as a traceback. The whole folder also goes through
the real ``dq-contracts validate`` command once.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_dq_contracts.cli.main import main as cli_main
from airflow_dq_contracts.contract import ContractValidationError, load_contract

CORPUS = Path(__file__).resolve().parent / "malformed"
EXPECT = re.compile(r"^# expect: (?P<line>\d+|-): (?P<path>\S+): (?P<fragment>.+)$")
# What `dq-contracts validate` prints per problem: FILE[:LINE]: PATH: MESSAGE
CLI_LINE = re.compile(r"^(?P<file>[^:]+?)(?::(?P<line>\d+))?: (?P<path>\S+): (?P<message>.+)$")


@dataclasses.dataclass(frozen=True)
class Expected:
    line: int | None
    path: str  # "" for the document itself
    fragment: str


def expectations(path: Path) -> list[Expected]:
    out = []
    for text in path.read_text(encoding="utf-8").splitlines():
        match = EXPECT.match(text)
        if not match:
            break
        line = None if match["line"] == "-" else int(match["line"])
        where = "" if match["path"] == "<document>" else match["path"]
        out.append(Expected(line, where, match["fragment"]))
    return out


CASES = sorted(CORPUS.glob("*.yaml"))


def test_corpus_is_large_and_every_file_declares_its_expectation() -> None:
    assert len(CASES) >= 45
    assert all(expectations(p) for p in CASES), [p.name for p in CASES if not expectations(p)]
    several = [p for p in CASES if len(expectations(p)) >= 3]
    assert len(several) >= 2, "some files must prove that all problems are reported at once"


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_malformed_contract_is_refused_with_located_message(path: Path) -> None:
    expected = expectations(path)
    try:
        load_contract(path)
    except ContractValidationError as err:
        issues = err.issues
        text = str(err)
    else:
        pytest.fail(f"{path.name} was accepted")
    got = [(i.line, i.path, i.message) for i in issues]
    for want in expected:
        assert any(
            line == want.line and where == want.path and want.fragment in message for line, where, message in got
        ), f"{path.name}: expected {want}, got {got}"
    assert len(issues) == len(expected), f"{path.name}: unexpected extra problems: {got}"
    assert all(i.file == str(path) for i in issues)
    assert "Traceback" not in text
    assert len(text.splitlines()) == len(expected)  # one line per problem


def test_cli_validate_reports_every_problem_of_every_file_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli_main(["validate", "-q", *map(str, CASES)])
    out, err = capsys.readouterr()
    assert code == 1
    assert out == ""
    assert len(err.splitlines()) == sum(len(expectations(p)) for p in CASES)


def test_cli_validate_subprocess_on_whole_folder() -> None:
    """The real console script: exit 1, one line per problem, located, no traceback."""
    exe = Path(sys.executable).with_name("dq-contracts")
    proc = subprocess.run([str(exe), "validate", *map(str, CASES)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr + proc.stdout
    assert proc.stdout == ""  # no file is valid, so no "ok" lines
    lines = proc.stderr.splitlines()
    want = {(str(p), e.line, e.path or "<document>", e.fragment) for p in CASES for e in expectations(p)}
    assert len(lines) == len(want)
    seen = set()
    for text in lines:
        match = CLI_LINE.match(text)
        assert match, f"not a located error line: {text!r}"
        line = int(match["line"]) if match["line"] else None
        for item in want:
            if (item[0], item[1], item[2]) == (match["file"], line, match["path"]) and item[3] in match["message"]:
                seen.add(item)
                break
        else:
            pytest.fail(f"unexpected line {text!r}")
    assert seen == want


def test_a_valid_file_next_to_an_invalid_one_is_still_reported_ok(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.yaml"
    good.write_text("name: ok\nchecks:\n  - {name: rows, type: num_rows, min: 1}\n", encoding="utf-8")
    code = cli_main(["validate", str(good), str(CORPUS / "unknown_key_maxx_in_check.yaml")])
    out, err = capsys.readouterr()
    assert code == 1
    assert out.strip() == f"{good}: ok (ok, 1 check (1 written, 0 implied by columns/SLA))"
    assert "unknown key 'maxx'" in err


@pytest.mark.parametrize("target", ["missing.yaml", "a_directory"])
def test_unreadable_paths_are_located_errors_not_tracebacks(tmp_path: Path, target: str) -> None:
    path = tmp_path / target
    if target == "a_directory":
        path.mkdir()
    with pytest.raises(ContractValidationError) as info:
        load_contract(path)
    assert str(info.value).startswith(f"{path}: <document>: ")


def test_binary_file_is_a_located_error(tmp_path: Path) -> None:
    path = tmp_path / "binary.yaml"
    path.write_bytes(b"name: x\n\xff\xfe\x00garbage")
    with pytest.raises(ContractValidationError) as info:
        load_contract(path)
    assert "not UTF-8" in str(info.value)


def test_alias_bomb_is_refused_quickly_not_expanded() -> None:
    levels = "".join(f"x-l{i}: &l{i} [" + ", ".join([f"*l{i - 1}" if i else "x"] * 10) + "]\n" for i in range(9))
    with pytest.raises(ContractValidationError) as info:
        load_contract("name: orders\n" + levels)
    assert "expands to more than" in str(info.value)


def test_deep_nesting_is_a_located_error_not_a_recursion_error() -> None:
    with pytest.raises(ContractValidationError) as info:
        load_contract("name: orders\nmetadata: {a: " + "[" * 3000 + "]" * 3000 + "}\n")
    assert "nested too deeply" in str(info.value)


def test_merge_keys_share_defaults_and_later_keys_override() -> None:
    """`<<: *defaults` is plain YAML; overriding a merged key is not a duplicate key."""
    contract = load_contract(
        "name: orders\n"
        "x-defaults: &d {type: missing, severity: P2}\n"
        "columns:\n"
        "  - name: email\n"
        "    checks:\n"
        "      - {<<: *d, name: few nulls, max: 10}\n"
        "      - {<<: *d, name: no nulls, max: 0, severity: P0}\n"
    )
    assert [(c.name, c.type, c.severity) for c in contract.all_checks()] == [
        ("few nulls", "missing", "P2"),
        ("no nulls", "missing", "P0"),
    ]
