"""Catalog-named results, registry and quarantine tables written over Spark Connect at path speed (issue 37).

A client process of its own (this process opens no Connect session) writes one run to catalog tables
``dq37w.*`` twice — with the client seeing the server's warehouse (``shared_storage``: the names are
written as their locations, by delta-rs) and without (the names stay names, written by Spark) — and
reports, per write, how often each table was probed (the catalog lookup and ``DESCRIBE DETAIL``, counted
by wrappers that call through) and the Spark Connect round trips (a counting wrapper around the client's calls, as
in ``benchmarks/catalog_writes.py``). Then the same run is written again (an Airflow retry with other
rows): its rows are replaced exactly once. Rows are read back independently, with Spark SQL over the
catalog names in yet another client, and compared with counts from plain Python.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from connect_fixtures import connect_server  # noqa: F401  (a fixture)

pytestmark = [pytest.mark.spark, pytest.mark.slow]

WRITER = r"""
import collections, json, sys
from pyspark.sql import SparkSession
from airflow_dq_contracts.results import CheckResult
from airflow_dq_contracts.store import sinks, spark_remote
from airflow_dq_contracts.store.spark_remote import SessionCapabilities

url, database, shared, first_run, run_id = sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[4], sys.argv[5]
spark = SparkSession.builder.remote(url).getOrCreate()
spark.sql(f"CREATE DATABASE IF NOT EXISTS {database}").collect()
probes, rpcs = collections.Counter(), collections.Counter()
describe, lookup = spark_remote.describe_detail, spark_remote.catalog_tables
def counted_describe(session, reference):
    probes[reference] += 1
    return describe(session, reference)
def counted_lookup(session, names):  # a name it cannot answer is asked with DESCRIBE DETAIL: counted twice
    probes.update(names)
    return lookup(session, names)
spark_remote.describe_detail, spark_remote.catalog_tables = counted_describe, counted_lookup
for method in ("_execute_and_fetch_as_iterator", "_analyze", "config"):
    original = getattr(spark.client, method)
    def counted(*args, _original=original, **kwargs):
        rpcs["all"] += 1
        return _original(*args, **kwargs)
    setattr(spark.client, method, counted)

def records(run, n):
    return [CheckResult(run_id=run, contract_name="orders", check_id=f"c{i}", check_name=f"c{i}",
                        check_type="min", status="passed", passed=True, contract_version="1", dataset="orders",
                        column="id", severity="P1", action="quarantine", validator="min 0", metric_value=0.0,
                        failed_rows=0, message="ok", row_count=10) for i in range(n)]

def quarantined(n):
    rows = [(i, [("c0", "c0", "min", "P1", "quarantine")]) for i in range(n)]
    return spark.createDataFrame(rows, "id long, _dq_violations array<struct<check_id: string, check_name: string, "
                                 "check_type: string, severity: string, action: string>>")

def one_run(run, n, caps):
    # As the runner does: the run's catalog names looked up at once, before its first write.
    sinks.probe_run_tables(spark, run, caps, results_table=f"{database}.results", quarantine_table=f"{database}.quarantine")
    sinks.write_quarantine(spark, quarantined(n), f"{database}.quarantine", run_id=run, capabilities=caps)
    sinks.write_registry(spark, {"contract_name": "orders", "contract_version": "1", "last_run_id": run},
                         f"{database}.dq_contracts", capabilities=caps)
    sinks.write_results(spark, records(run, n), f"{database}.results", run_id=run, capabilities=caps)
    return sinks.committed_version(spark, f"{database}.results", caps)

caps = SessionCapabilities.of(spark, shared_storage=shared)
one_run(first_run, 2, caps)  # creates the tables
probes.clear(); rpcs.clear()
version = one_run(run_id, 5, caps)
first = {"probes": dict(probes), "rpcs": rpcs["all"], "version": version}
one_run(run_id, 3, SessionCapabilities.of(spark, shared_storage=shared))  # the retry: a new run of the job
print(json.dumps(first))
spark.stop()
"""

READER = r"""
import json, sys
from pyspark.sql import SparkSession
url, database = sys.argv[1], sys.argv[2]
spark = SparkSession.builder.remote(url).getOrCreate()
out = {}
for table, column in (("results", "run_id"), ("quarantine", "_dq_run_id"), ("dq_contracts", "last_run_id")):
    rows = spark.sql(f"SELECT {column} AS run, count(*) AS n FROM {database}.{table} GROUP BY {column}").collect()
    out[table] = {row["run"]: row["n"] for row in rows}
out["version"] = spark.sql(f"DESCRIBE HISTORY {database}.results LIMIT 1").collect()[0]["version"]
print(json.dumps(out))
spark.stop()
"""


def _client(script: str, *args: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE")}
    done = subprocess.run([sys.executable, "-c", script, *args], env=env, timeout=600, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("shared", [True, False], ids=["client-sees-location", "server-only"])
def test_catalog_writes_probe_each_table_once_and_a_retry_replaces_once(connect_server, shared):  # noqa: F811
    database = "dq37w" + ("s" if shared else "n")
    written = _client(WRITER, connect_server.url, database, "1" if shared else "0", "run-a", "run-b")
    # One existence/format/schema probe per table for the whole run (quarantine, registry, results).
    assert written["probes"] == {f"{database}.quarantine": 1, f"{database}.dq_contracts": 1, f"{database}.results": 1}
    found = _client(READER, connect_server.url, database)
    # The retry (3 rows) replaced the run's 5 rows once; the first run's 2 rows are untouched.
    assert found["results"] == {"run-a": 2, "run-b": 3}
    assert found["quarantine"] == {"run-a": 2, "run-b": 3}
    assert found["dq_contracts"] == {"run-b": 1}
    if shared:
        # Written by delta-rs at the table's location: no Spark write at all, and the commit's
        # version known from the write itself (the catalog's history agrees: the retry came next).
        # One metastore lookup for the three names (a few round trips), the quarantined rows collected
        # for delta-rs, no more.
        assert written["rpcs"] <= 3 + 5
        assert written["version"] == found["version"] - 1


RECREATED = r"""
import json, sys
from pyspark.sql import SparkSession
from airflow_dq_contracts.store import sinks
from airflow_dq_contracts.store.spark_remote import SessionCapabilities

url, database, shared, first, second = sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[4], sys.argv[5]
spark = SparkSession.builder.remote(url).getOrCreate()
spark.sql(f"CREATE DATABASE IF NOT EXISTS {database}").collect()
caps = SessionCapabilities.of(spark, shared_storage=shared)
name = f"{database}.quarantine"

def quarantined(n):
    rows = [(i, [("c0", "c0", "min", "P1", "quarantine")]) for i in range(n)]
    return spark.createDataFrame(rows, "id long, _dq_violations array<struct<check_id: string, check_name: string, "
                                 "check_type: string, severity: string, action: string>>")

def write(run, n, target):
    sinks.probe_run_tables(spark, run, caps, quarantine_table=target)
    sinks.write_quarantine(spark, quarantined(n), target, run_id=run, capabilities=caps)

# The name is an external table at the first location; a run writes it by name.
write("run-0", 1, first)
spark.sql(f"CREATE TABLE {name} USING DELTA LOCATION '{first}'").collect()
write("run-1", 2, name)
# Between runs the table is dropped (an external table: its files and Delta log stay where they are)
# and created again at the second location.
write("run-2", 3, second)
spark.sql(f"DROP TABLE {name}").collect()
spark.sql(f"CREATE TABLE {name} USING DELTA LOCATION '{second}'").collect()
write("run-3", 4, name)
out = {}
for label, location in (("first", first), ("second", second)):
    rows = spark.sql(f"SELECT _dq_run_id AS run, count(*) AS n FROM delta.`{location}` GROUP BY _dq_run_id").collect()
    out[label] = {row["run"]: row["n"] for row in rows}
print(json.dumps(out))
spark.stop()
"""


@pytest.mark.parametrize("shared", [True, False], ids=["client-sees-location", "server-only"])
def test_a_table_dropped_and_created_elsewhere_between_runs_is_written_at_its_new_location(
    connect_server,  # noqa: F811
    shared,
    tmp_path,
):
    # Nothing about a name is kept across runs: the next run looks the name up again (the old
    # location still holds a Delta log, of the old table), and its rows land at the new location only.
    database = "dq37r" + ("s" if shared else "n")
    first, second = str(tmp_path / "first"), str(tmp_path / "second")
    found = _client(RECREATED, connect_server.url, database, "1" if shared else "0", first, second)
    assert found == {"first": {"run-0": 1, "run-1": 2}, "second": {"run-2": 3, "run-3": 4}}
