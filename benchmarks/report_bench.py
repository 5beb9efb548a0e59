"""Benchmark: build the HTML report from a results table of 1M rows (target: under 10 s).

Not part of the test suite. Run from the repository root::

    .venv/bin/python benchmarks/report_bench.py                     # 1,000,000 rows, 25 checks
    .venv/bin/python benchmarks/report_bench.py --rows 200000 --checks 10 --repeat 3

The results table (one contract; ``--checks`` checks per run, runs one minute apart so that the
last 30 days hold most of the history) is written once with delta-rs by
``scripts/report_demo.py``, then ``build_report`` (read with delta-rs → Arrow filtering → one
matplotlib SVG chart per check → HTML) is timed in fresh processes (cold: imports included) and in
this process (warm), with the phases of the warm run shown apart.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import report_demo  # noqa: E402

COLD = """
import sys, time
began, cpu = time.perf_counter(), time.process_time()
from airflow_dq_contracts.report import build_report
page = build_report(sys.argv[1], "orders", days=30)
print(f"{time.perf_counter() - began:.3f} {time.process_time() - cpu:.3f} {len(page)}")
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--checks", type=int, default=25)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()

    folder = Path(args.workdir or tempfile.mkdtemp(prefix="dq-report-bench-"))
    runs = args.rows // args.checks
    results = folder / "dq_results"
    if (results / "_delta_log").is_dir():
        print(f"reusing the results table in {results}")
    else:
        began = time.perf_counter()
        report_demo.write_demo_tables(folder, runs=runs, checks=args.checks, step_minutes=1, keep_rows=False)
        print(
            f"wrote {runs * args.checks:,} results rows ({runs:,} runs × {args.checks} checks) "
            f"in {time.perf_counter() - began:.1f} s to {results}"
        )

    from airflow_dq_contracts.report import load_report_data, render_report

    cold, cold_cpu = [], []
    for _ in range(args.repeat):
        out = subprocess.run(
            [sys.executable, "-c", COLD, str(results)], capture_output=True, text=True, check=True, cwd=ROOT
        )
        seconds, cpu_seconds, _size = out.stdout.split()
        cold.append(float(seconds))
        cold_cpu.append(float(cpu_seconds))
    warm_load, warm_render = [], []
    for _ in range(args.repeat):
        began = time.perf_counter()
        data = load_report_data(str(results), "orders", days=30)
        loaded = time.perf_counter()
        page = render_report(data)
        warm_load.append(loaded - began)
        warm_render.append(time.perf_counter() - loaded)
    points = sum(len(h.at) for h in data.history.values())
    print(f"report: {len(page) / 1024:.0f} KiB, {len(data.history)} charts, {points:,} points drawn")
    # CPU time is what the report costs; wall time also counts waiting for a core on a shared machine.
    print(
        f"cold (new process, imports included): wall median {statistics.median(cold):.2f} s {cold}; "
        f"CPU median {statistics.median(cold_cpu):.2f} s {cold_cpu}"
    )
    print(f"load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(
        f"warm: read {statistics.median(warm_load):.2f} s + render {statistics.median(warm_render):.2f} s "
        f"= {statistics.median(warm_load) + statistics.median(warm_render):.2f} s"
    )
    verdict = statistics.median(cold) < 10
    print("target < 10 s:", "met" if verdict else "MISSED")
    return 0 if verdict else 1


if __name__ == "__main__":
    sys.exit(main())
