"""Benchmark: how long one sensor poke takes on Delta tables of 500 and 5,000 files.

Not part of the test suite. Run from the repository root::

    .venv/bin/python benchmarks/sensor_poke.py            # 500 and 5,000 files
    .venv/bin/python benchmarks/sensor_poke.py --sizes 500 5000 20000 --repeat 9

For each size it builds (once, under ``--workdir``) three real Delta tables with that many data
files — written as small Parquet files and converted in one commit, like a table fed by many
small appends — and times ``poke()`` of real sensors (median of ``--repeat`` warm pokes, plus the
first, cold poke in a fresh process):

* freshness, exact: statistics + reading the one file that holds the newest value;
* freshness, statistics only (``exact=False``);
* freshness, commit mode (age of the last commit);
* freshness on a table without statistics (the fallback: one column of every file is read);
* completeness on a table with that many hourly partitions.

Target: under 1 s per poke at 5,000 files, and flat in table size for freshness via statistics.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

UTC = dt.timezone.utc
BASE = dt.datetime(2024, 1, 1, tzinfo=UTC)


def _airflow_env(workdir: Path) -> None:
    """Airflow wants a home even to build an operator; keep it out of ~/airflow."""
    os.environ.setdefault("AIRFLOW_HOME", str(workdir / "airflow_home"))
    os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
    os.environ.setdefault("AIRFLOW__LOGGING__LOGGING_LEVEL", "WARNING")


def build_tables(workdir: Path, files: int) -> dict[str, Path]:
    """Three tables of ``files`` files each (kept between runs)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from deltalake import convert_to_deltalake, write_deltalake

    tables = {
        "stats": workdir / f"events_{files}",
        "nostats": workdir / f"events_nostats_{files}",
        "hourly": workdir / f"hourly_{files}",
    }
    kind = pa.timestamp("us", tz="UTC")
    for name, collect in (("stats", True), ("nostats", False)):
        path = tables[name]
        if (path / "_delta_log").exists():
            continue
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        for index in range(files):
            stamps = [BASE + dt.timedelta(minutes=index, microseconds=row * 1009 + 7) for row in range(3)]
            table = pa.table(
                {"id": pa.array([index * 3 + r for r in range(3)], pa.int64()), "created_at": pa.array(stamps, kind)}
            )
            pq.write_table(table, path / f"part-{index:06d}.parquet")
        convert_to_deltalake(str(path), collect_stats=collect)
    hourly = tables["hourly"]
    if not (hourly / "_delta_log").exists():
        shutil.rmtree(hourly, ignore_errors=True)
        hours = [(BASE + dt.timedelta(hours=h)).strftime("%Y-%m-%d %H:00:00") for h in range(files)]
        write_deltalake(
            str(hourly), pa.table({"v": list(range(files)), "event_hour": hours}), partition_by=["event_hour"]
        )
    return tables


def sensors_for(tables: dict[str, Path], files: int) -> dict[str, object]:
    from airflow_dq_contracts.sensors import CompletenessSensor, FreshnessSensor

    # The newest row is BASE + (files − 1) min + 2.025 ms; reference it so every poke passes.
    reference = (BASE + dt.timedelta(minutes=files, hours=1)).isoformat()
    hourly_reference = (BASE + dt.timedelta(hours=files - 1, minutes=30)).isoformat()
    common = {"timestamp_column": "created_at", "max_age_hours": 2, "reference_time": reference}
    return {
        "freshness exact (stats + 1 file)": FreshnessSensor(task_id="exact", path=str(tables["stats"]), **common),
        "freshness stats only": FreshnessSensor(task_id="rough", path=str(tables["stats"]), exact=False, **common),
        "freshness commit mode": FreshnessSensor(
            task_id="commit", path=str(tables["stats"]), measure="commit", max_age_hours=24 * 365
        ),
        "freshness no stats (scan)": FreshnessSensor(task_id="scan", path=str(tables["nostats"]), **common),
        "completeness hourly": CompletenessSensor(
            task_id="complete",
            path=str(tables["hourly"]),
            partition_column="event_hour",
            granularity="hourly",
            lookback_days=(files - 1) / 24,
            reference_time=hourly_reference,
        ),
    }


def time_pokes(tables: dict[str, Path], files: int, repeat: int) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for label, sensor in sensors_for(tables, files).items():
        sensor.poke({})  # warm-up: first delta-rs / DataFusion use in this process
        samples = []
        for _ in range(repeat):
            started = time.perf_counter()
            result = sensor.poke({})
            samples.append(time.perf_counter() - started)
        if not result.is_done:
            raise SystemExit(f"{label}: poke did not pass: {result.xcom_value}")
        measurement = result.xcom_value.get("measurement", {})
        out[label] = {
            "median_s": statistics.median(samples),
            "min_s": min(samples),
            "files_read": measurement.get("files_read"),
        }
    return out


def cold_poke(table: Path, files: int) -> float:
    """The first poke of a fresh process (imports excluded), as in a reschedule-mode worker."""
    code = f"""
import sys, time
sys.path.insert(0, {str(ROOT)!r})
from airflow_dq_contracts.sensors import FreshnessSensor
sensor = FreshnessSensor(task_id="cold", path={str(table)!r}, timestamp_column="created_at",
                         max_age_hours=2, reference_time={(BASE + dt.timedelta(minutes=files, hours=1)).isoformat()!r})
started = time.perf_counter()
assert sensor.poke({{}}).is_done
print("COLD", time.perf_counter() - started)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ.copy())
    for line in done.stdout.splitlines():
        if line.startswith("COLD "):
            return float(line.split()[1])
    raise SystemExit(f"cold poke failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 5000])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "dq-sensor-bench")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    _airflow_env(args.workdir)

    figures: dict[int, dict] = {}
    for files in args.sizes:
        started = time.perf_counter()
        tables = build_tables(args.workdir, files)
        print(f"[bench] {files} files: tables ready in {time.perf_counter() - started:.1f} s", flush=True)
        figures[files] = time_pokes(tables, files, args.repeat)
        figures[files]["cold first poke (exact)"] = {"median_s": cold_poke(tables["stats"], files)}

    labels = list(figures[args.sizes[0]])
    header = f"{'poke':36s}" + "".join(f"{n:>12,d} files" for n in args.sizes)
    if len(args.sizes) > 1:
        header += f"   ratio {args.sizes[-1]}/{args.sizes[0]}"
    print()
    print(header)
    for label in labels:
        values = [figures[n][label]["median_s"] for n in args.sizes]
        line = f"{label:36s}" + "".join(f"{v * 1000:13.1f} ms  " for v in values)
        if len(values) > 1 and values[0] > 0:
            line += f"   ×{values[-1] / values[0]:.2f}"
        print(line)
    print("\nmedian of", args.repeat, "warm pokes (cold: one poke in a fresh process, imports excluded)")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
