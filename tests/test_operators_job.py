"""The packaged spark-submit job: its bundle and its command line, without starting Spark.

The real spark-submit runs of the job are in ``test_dags_examples.py`` (through the operator).
"""

from __future__ import annotations

import base64
import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from airflow_dq_contracts.jobs import bundle as job_bundle
from airflow_dq_contracts.jobs import markers
from airflow_dq_contracts.jobs import run_contract as job
from airflow_dq_contracts.runspec import ReferenceOverride, RunSpec

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "airflow_dq_contracts"
CONTRACT = "name: t\ncolumns:\n  - name: a\n    type: long\n    checks:\n      - {name: n, type: missing, max: 0}\n"


def test_zip_holds_the_job_world_and_nothing_of_airflow():
    names = set(zipfile.ZipFile(io.BytesIO(job_bundle.build_zip_bytes())).namelist())
    # Expected from the source tree itself, independently of the bundle code's filter.
    expected = set()
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        if "__pycache__" in rel.parts:
            continue
        if (
            rel.parts[0] in ("operators", "sensors", "triggers", "hooks", "notifications")
            or rel.name == "version_compat.py"
        ):
            continue
        expected.add("airflow_dq_contracts/" + rel.as_posix())
    assert names == expected
    assert "airflow_dq_contracts/jobs/run_contract.py" in names
    assert "airflow_dq_contracts/contract/loader.py" in names


def test_zip_is_reproducible_and_named_by_content(tmp_path):
    first = job_bundle.build_job_bundle(tmp_path / "a")
    second = job_bundle.build_job_bundle(tmp_path / "b")
    assert first.zip_path.read_bytes() == second.zip_path.read_bytes()
    assert first.zip_path.name == second.zip_path.name
    again = job_bundle.build_job_bundle(tmp_path / "a")  # reuse, not rewrite
    assert again.zip_path == first.zip_path
    assert first.launcher_path.parent == first.zip_path.parent


def test_job_imports_from_the_zip_alone_without_airflow(tmp_path):
    """What a cluster driver sees: the package comes from the zip, the job module imports neither
    Airflow nor pyspark before it runs, and the Airflow-side modules are simply not there.

    ``-S``: no site-packages, so this machine's editable install cannot stand in for the zip."""
    bundle = job_bundle.build_job_bundle(tmp_path)
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "import airflow_dq_contracts.jobs.run_contract as m;"
        "assert m.__file__.startswith(sys.argv[1]), m.__file__;"
        "assert not any(x == 'airflow' or x.startswith('airflow.') for x in sys.modules);"
        "assert 'pyspark' not in sys.modules;"
        "import importlib.util as u;"
        "print(u.find_spec('airflow_dq_contracts.operators') is None)"
    )
    out = subprocess.run(
        [sys.executable, "-S", "-c", code, str(bundle.zip_path)], capture_output=True, text=True, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"


def _spec(**fields) -> RunSpec:
    return RunSpec(**{"contract_text": CONTRACT, "contract_origin": "c.yaml", "input_path": "/x", **fields})


def _spec_argument(spec: RunSpec) -> str:
    arguments, files = spec.job_arguments()
    assert len(arguments) == 1 and files == []
    return arguments[0]


def test_arguments_round_trip_through_the_job_parser():
    weird_filter = "-1 < amount AND note = '--x=y'"
    spec = _spec(
        input_path="/data/orders",
        input_format="delta",
        filter=weird_filter,
        reference_time="2024-05-02T00:00:00Z",
        run_id="dq-1",
        results_table="/wh/r",
        quarantine_table="/wh/q",
        dag_id="d",
        task_id="t",
        airflow_run_id="manual__x",
        policy={"P1": "gate"},
        references={"customers": ReferenceOverride("s3://b/dim", "delta")},
    )
    arguments, files = spec.job_arguments()
    assert len(arguments) == 1 and files == []  # one argument, whatever the settings
    parsed = job.build_parser().parse_args(arguments)
    read = job.read_spec(parsed)
    assert read == spec
    assert read.contract_text == CONTRACT
    assert read.filter == weird_filter
    assert read.input_path == "/data/orders" and read.table is None
    assert json.loads(read.to_json())["policy"] == {"P1": "gate"}
    assert (read.run_id, read.dag_id, read.task_id, read.airflow_run_id) == ("dq-1", "d", "t", "manual__x")
    assert read.valid_table is None
    assert read.references == {"customers": ReferenceOverride("s3://b/dim", "delta")}


def test_a_large_spec_travels_as_a_shipped_file(tmp_path):
    spec = _spec(filter="x" * 100)
    arguments, files = spec.job_arguments(folder=tmp_path, max_inline_bytes=16)
    assert arguments == [f"--spec-file={files[0]}"] and files[0].startswith(str(tmp_path))
    assert job.read_spec(job.build_parser().parse_args(arguments)) == spec
    assert spec.job_arguments(folder=tmp_path, max_inline_bytes=16) == (arguments, files)  # named by content


def _run_job(*args: str) -> subprocess.CompletedProcess:
    code = (
        "import sys; from airflow_dq_contracts.jobs.run_contract import main; rc = main(sys.argv[1:]);"
        "assert 'pyspark' not in sys.modules, 'pyspark imported before the contract was valid';"
        "sys.exit(rc)"
    )
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)


def test_invalid_contract_is_reported_with_its_location_and_no_spark():
    bad = CONTRACT.replace("max: 0", "maxx: 0")
    out = _run_job(_spec_argument(_spec(contract_text=bad, contract_origin="contracts/t.yaml", input_path="/nowhere")))
    assert out.returncode == job.EXIT_INVALID
    marker = [markers.parse_marker(line) for line in out.stdout.splitlines()]
    marker = [m for m in marker if m]
    assert len(marker) == 1 and marker[0][0] == markers.ERROR_MARKER
    payload = marker[0][1]
    assert payload["kind"] == "invalid_contract"
    assert payload["message"].startswith("contracts/t.yaml:6: columns[0].checks[0].maxx: unknown key 'maxx'")
    assert "Traceback" not in out.stderr


def test_garbage_spec_argument_is_a_clear_error():
    out = _run_job("--spec=###")
    assert out.returncode == job.EXIT_INVALID
    kinds = [m[1]["kind"] for m in map(markers.parse_marker, out.stdout.splitlines()) if m]
    assert kinds == ["invalid_arguments"]
    assert "not base64" in out.stdout
    assert "Traceback" not in out.stderr


def test_missing_spec_file_is_a_clear_error(tmp_path):
    out = _run_job(f"--spec-file={tmp_path / 'absent.json'}")
    assert out.returncode == job.EXIT_INVALID
    assert "neither readable on the driver nor shipped with --files" in out.stdout


@pytest.mark.parametrize(
    "document,fragment",
    [
        ('{"version": 2}', "spec: version 2, this reader reads version 1"),
        ('{"version": 1, "contract_text": "name: t\\n", "input_path": "/x", "maxx": 1}', "unknown key(s) maxx"),
        ('["a list"]', "expected a JSON object"),
    ],
)
def test_a_spec_the_job_cannot_read_is_refused_before_spark(tmp_path, document, fragment):
    path = tmp_path / "spec.json"
    path.write_text(document)
    out = _run_job(f"--spec-file={path}")
    assert out.returncode == job.EXIT_INVALID
    assert [m[1]["kind"] for m in map(markers.parse_marker, out.stdout.splitlines()) if m] == ["invalid_arguments"]
    assert fragment in out.stdout and "Traceback" not in out.stderr


def test_a_spec_that_does_not_fit_its_contract_is_invalid_arguments():
    out = _run_job(_spec_argument(_spec(references={"nope": ReferenceOverride("/x")})))
    assert out.returncode == job.EXIT_INVALID
    payload = [m[1] for m in map(markers.parse_marker, out.stdout.splitlines()) if m]
    assert payload == [
        {
            "kind": "invalid_arguments",
            "message": "references: nope, which the contract does not declare (declared: none)",
        }
    ]


def test_usage_error_exits_2():
    out = _run_job("--markers-out=/tmp/x")  # no spec at all
    assert out.returncode == job.EXIT_INVALID
    assert "one of the arguments --spec --spec-file is required" in out.stderr


@pytest.mark.parametrize(
    "line,expected",
    [
        ('DQ_CONTRACTS_DONE {"decision":"gate","checks":3}', ("DQ_CONTRACTS_DONE", {"decision": "gate", "checks": 3})),
        (
            '  DQ_CONTRACTS_ERROR {"kind":"run_failed","message":"x"}\n',
            ("DQ_CONTRACTS_ERROR", {"kind": "run_failed", "message": "x"}),
        ),
        ("DQ_CONTRACTS_DONE not json", None),
        ('DQ_CONTRACTS_DONE ["a list"]', None),
        ("26/11/23 09:17:08 INFO SparkContext: Running Spark version 4.1.1", None),
    ],
)
def test_marker_parsing(line, expected):
    assert markers.parse_marker(line) == expected


def test_error_text_drops_jvm_frames_and_is_capped():
    exc = RuntimeError(
        "[PATH_NOT_FOUND] Path does not exist: file:/x.\n\tat org.apache.Foo(Foo.scala:1)\n"
        "\tat org.apache.Bar(Bar.scala:2)\nCaused by: boom"
    )
    assert job.error_text(exc) == "RuntimeError: [PATH_NOT_FOUND] Path does not exist: file:/x.\nCaused by: boom"
    long = job.error_text(ValueError("x" * 10_000))
    assert len(long) < job.MAX_ERROR_CHARS + 100 and long.endswith("…(truncated)")


def test_encoded_spec_is_plain_base64_of_its_json():
    spec = _spec(contract_text="name: é\n")
    encoded = _spec_argument(spec).partition("=")[2]
    assert json.loads(base64.b64decode(encoded).decode())["contract_text"] == "name: é\n"
