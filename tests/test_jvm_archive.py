"""The class-data-sharing archive of short drivers (``airflow_dq_contracts/runtime/jvm_archive.py``).

The real test maps this machine's archive (built by ``./dev setup``; built here into a temporary
file when missing) into a real ``spark-submit`` with ``-Xshare:on`` — Java refuses to start when the
archive does not fit — and reads Java's own class-loading log: Spark's classes must come from it.
"""

from __future__ import annotations

import airflow_fixtures  # noqa: F401  (first: sets AIRFLOW_HOME before anything imports airflow)

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_dq_contracts.runtime import jars, jvm_archive

KEY = jvm_archive.DRIVER_OPTIONS_KEY


def _hook(**kwargs):
    from airflow_dq_contracts.hooks import ContractSubmitHook
    from airflow_dq_contracts.runspec import RunSpec

    kwargs.setdefault("application_args", RunSpec(contract_text="name: x\n", input_path="/d").job_arguments().arguments)
    return ContractSubmitHook(**kwargs)


@pytest.fixture()
def fake_archive(monkeypatch, tmp_path) -> Path:
    archive = tmp_path / "drivers.jsa"
    archive.write_bytes(b"not mapped by these tests: they only build commands")
    monkeypatch.setenv(jvm_archive.ARCHIVE_ENV, str(archive))
    return archive


def test_off_and_missing_give_no_option(monkeypatch, tmp_path):
    monkeypatch.setenv(jvm_archive.ARCHIVE_ENV, "off")
    assert jvm_archive.planned_archive() is None and jvm_archive.java_option() is None
    assert jvm_archive.with_archive({"a": "b"}) == {"a": "b"}
    monkeypatch.setenv(jvm_archive.ARCHIVE_ENV, str(tmp_path / "absent.jsa"))
    assert jvm_archive.java_option() is None  # never built: drivers start as before
    (tmp_path / "absent.jsa").write_bytes(b"")
    assert jvm_archive.java_option() is None  # an empty file is not an archive


def test_the_default_archive_is_keyed_to_java_spark_and_the_delta_jars(monkeypatch, tmp_path):
    monkeypatch.delenv(jvm_archive.ARCHIVE_ENV, raising=False)
    monkeypatch.delenv("DQ_CONTRACTS_DELTA_JARS", raising=False)
    monkeypatch.setenv(jars.JARS_DIR_ENV, str(tmp_path / "jars"))
    planned = jvm_archive.planned_archive()
    assert planned is not None and planned.parent == tmp_path / "jvm-archive"
    assert planned.name.startswith("dq-contracts-") and planned.suffix == ".jsa"
    # Other Delta jars (a Delta upgrade) → another archive, never a stale one.
    assert jvm_archive.archive_key(["/x/delta-spark_4.1_2.13-4.4.0.jar"]) != jvm_archive.archive_key(
        ["/x/delta-spark_4.1_2.13-4.5.0.jar"]
    )
    # Another Spark (SPARK_HOME of an existing install) → another archive.
    spark_home = tmp_path / "spark"
    (spark_home / "jars").mkdir(parents=True)
    (spark_home / "jars" / "spark-core_2.13-4.0.1.jar").write_bytes(b"")
    before = jvm_archive.archive_key([])
    monkeypatch.setenv("SPARK_HOME", str(spark_home))
    assert jvm_archive.archive_key([]) != before


def test_the_same_spark_installed_again_gets_another_archive(monkeypatch, tmp_path):
    """Java refuses an archive whose jars changed size or time; a reinstall (a CI venv) must not map it."""
    spark_home = tmp_path / "spark"
    (spark_home / "jars").mkdir(parents=True)
    jar = spark_home / "jars" / "slf4j-api-2.0.17.jar"
    jar.write_bytes(b"classes")
    delta = tmp_path / "delta-spark_2.13-4.0.0.jar"
    delta.write_bytes(b"delta")
    monkeypatch.setenv("SPARK_HOME", str(spark_home))
    first = jvm_archive.archive_key([str(delta)])
    assert jvm_archive.archive_key([str(delta)]) == first  # nothing changed: the same archive
    os.utime(jar, ns=(jar.stat().st_atime_ns, jar.stat().st_mtime_ns + 1_000_000_000))
    reinstalled = jvm_archive.archive_key([str(delta)])
    assert reinstalled != first  # same name, same content, a new time: Java would refuse the old one
    os.utime(delta, ns=(delta.stat().st_atime_ns, delta.stat().st_mtime_ns + 1_000_000_000))
    assert jvm_archive.archive_key([str(delta)]) not in (first, reinstalled)
    # A Delta jar not downloaded yet still counts by its name.
    assert jvm_archive.archive_key([str(tmp_path / "absent.jar")]) != jvm_archive.archive_key([str(delta)])


def test_a_build_keeps_the_newest_archives_and_removes_older_ones(tmp_path):
    folder = tmp_path / "jvm-archive"
    folder.mkdir()
    names = [f"dq-contracts-{i:016x}.jsa" for i in range(5)]
    for age, name in enumerate(names):  # names[0] the newest
        (folder / name).write_bytes(b"archive")
        (folder / f".{name}.lock").write_bytes(b"")
        stamp = 1_700_000_000 - age * 3600
        os.utime(folder / name, (stamp, stamp))
    (folder / "unrelated.txt").write_text("kept")
    removed = jvm_archive.prune(folder, keep=3)
    assert sorted(p.name for p in removed) == sorted(names[3:])
    left = sorted(p.name for p in folder.iterdir())
    assert left == sorted([*names[:3], *(f".{n}.lock" for n in names[:3]), "unrelated.txt"])
    assert jvm_archive.prune(folder, keep=3) == []


def test_the_hook_maps_the_archive_for_a_driver_on_this_machine(monkeypatch, fake_archive):
    joined = " ".join(_hook()._build_spark_submit_command("app.py"))
    assert f"{KEY}=-XX:SharedArchiveFile={fake_archive}" in joined
    # The user's own driver options are kept, after ours.
    joined = " ".join(_hook(conf={KEY: "-Dmine=1"})._build_spark_submit_command("app.py"))
    assert f"{KEY}=-XX:SharedArchiveFile={fake_archive} -Dmine=1" in joined
    # A user who chose a sharing setting of their own is left alone.
    joined = " ".join(_hook(conf={KEY: "-Xshare:off"})._build_spark_submit_command("app.py"))
    assert f"{KEY}=-Xshare:off" in joined and "SharedArchiveFile" not in joined


def test_the_hook_leaves_a_driver_on_the_cluster_alone(monkeypatch, fake_archive):
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_YARN",
        json.dumps({"conn_type": "spark", "host": "yarn", "extra": {"deploy-mode": "cluster"}}),
    )
    joined = " ".join(_hook(conn_id="spark_yarn")._build_spark_submit_command("app.py"))
    assert "SharedArchiveFile" not in joined  # the driver's JVM starts on a cluster node


@pytest.mark.spark
def test_a_driver_maps_spark_classes_from_the_machine_archive(tmp_path):
    """Real spark-submit, ``-Xshare:on`` (fails when the archive does not fit), Java's class-load log."""
    archive = jvm_archive.planned_archive()
    if archive is None or jvm_archive.java_option() is None:
        # Not built by ./dev setup on this machine: build one here (about a minute).
        os.environ[jvm_archive.ARCHIVE_ENV] = str(tmp_path / "built.jsa")
        try:
            archive = jvm_archive.build(log=lambda _: None)
        finally:
            del os.environ[jvm_archive.ARCHIVE_ENV]
    script = tmp_path / "job.py"
    script.write_text(
        "from pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        "print('COUNT', spark.range(5).count(), flush=True)\n"
    )
    loaded = tmp_path / "classes.log"
    options = f"-XX:SharedArchiveFile={archive} -Xshare:on -Xlog:class+load=info:file={loaded}"
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    proc = subprocess.run(
        [
            "spark-submit",
            "--master",
            "local[1]",
            "--conf",
            f"{KEY}={options}",
            "--conf",
            "spark.ui.enabled=false",
            str(script),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0 and "COUNT 5" in proc.stdout, proc.stderr[-3000:]
    lines = loaded.read_text().splitlines()
    # Spark's named classes (lambda forms are made at run time and mostly not archived).
    spark_lines = [line for line in lines if " org.apache.spark." in line and "Lambda" not in line]
    shared = [line for line in spark_lines if "shared objects file" in line]
    assert any(" org.apache.spark.SparkContext " in line for line in shared), spark_lines[:5]
    # Nearly all of them come from the archive, not from the jars (measured: 4,207 of 4,232).
    assert len(shared) > 0.9 * len(spark_lines), (len(shared), len(spark_lines))
