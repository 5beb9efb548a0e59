"""Benchmark: the UI plugin's contracts page and its JSON with 1,000 contracts × 100 runs (target: ≤ 1 s server time).

Not part of the test suite (nothing is asserted: the numbers are printed). Run from the repository root::

    .venv/bin/python benchmarks/ui_pages.py                          # 1,000 contracts × 100 runs × 5 checks
    .venv/bin/python benchmarks/ui_pages.py --contracts 200 --runs 50 --repeat 3

Writes the results table once with delta-rs (``scripts/ui_demo.py``: one write, 500,000 rows), installs the
provider from this checkout into a folder, starts ``airflow api-server`` on 127.0.0.1 with it and times
``GET /dq-contracts/`` and ``GET /dq-contracts/api/v1/contracts`` as an admin: the first request, sent as soon as
the server answers (the plugin starts summarising the table when the server starts: the request finds the summary
ready, or waits for it), and the next ones (the summary is kept until the table gets a commit). It prints when the
summary was ready (the plugin's log line), and what building it costs in a fresh process without a server. "server" is the
app's own ``Server-Timing``; "client" adds HTTP on the loopback. Then the API server's resident memory (its
process tree) after these requests, against a server whose provider copy declares no ``airflow.plugins``
entry point.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import ui_demo  # noqa: E402

#: How long the server idles before its memory is read a second time.
IDLE_SECONDS = 20


def _timed(server: ui_demo.Server, path: str, token: str) -> tuple[float, float, int, float]:
    """(server ms from Server-Timing, client ms, bytes, the server process's CPU ms — nan if not told) of one GET."""
    request = urllib.request.Request(server.url + path, headers={"Authorization": f"Bearer {token}"})
    began = time.perf_counter()
    with urllib.request.urlopen(request, timeout=600) as response:
        body = response.read()
        timing = response.headers.get("Server-Timing", "app;dur=nan")
    client = (time.perf_counter() - began) * 1000
    parts = dict(part.strip().split(";dur=") for part in timing.split(",") if ";dur=" in part)
    return float(parts.get("app", "nan")), client, len(body), float(parts.get("cpu", "nan"))


def _plugins(server: ui_demo.Server, token: str) -> list[str]:
    import json

    request = urllib.request.Request(f"{server.url}/api/v2/plugins", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return [plugin["name"] for plugin in json.loads(response.read())["plugins"]]


def _ready(server: ui_demo.Server) -> str | None:
    """The seconds after the API server's start at which its summary was ready (its log line), if logged yet."""
    import re

    found = re.search(r"summary of .* is ready, ([0-9.]+) s after", server.log.read_text(errors="replace"))
    return found.group(1) if found else None


def _cold_summary(results: str) -> tuple[float, float]:
    """(wall, CPU seconds) of the first contracts overview of a new :class:`ResultsView` in this process."""
    import resource

    from airflow_dq_contracts.storage.locations import TableLocation
    from airflow_dq_contracts.store.results import open_results_store
    from airflow_dq_contracts.ui.views import Access, ResultsView

    def cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    view = ResultsView(open_results_store(TableLocation.resolve(results)))
    began, began_cpu = time.perf_counter(), cpu()
    view.contracts(Access.everything())
    return time.perf_counter() - began, cpu() - began_cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--contracts", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--checks", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="dq-ui-bench-") as folder:
        work = Path(folder)
        began = time.perf_counter()
        results = ui_demo.write_bench_tables(
            work / "tables", contracts=args.contracts, runs=args.runs, checks=args.checks
        )
        rows = args.contracts * args.runs * args.checks
        print(
            f"results table: {rows:,} rows ({args.contracts:,} contracts × {args.runs} runs × {args.checks} checks) "
            f"written in {time.perf_counter() - began:.1f} s"
        )
        with_plugin = ui_demo.install_provider(work / "site")
        without_plugin = ui_demo.install_provider(work / "site-without", without_plugin=True)
        settings = {"AIRFLOW__DQ_CONTRACTS__RESULTS_TABLE": results}
        cold = _cold_summary(results)
        print(
            f"the summary built cold in a fresh process (what the API server does at its start): "
            f"{cold[0] * 1000:.0f} ms wall, {cold[1] * 1000:.0f} ms CPU (imports not included)"
        )

        memory: dict[str, int] = {}
        # INFO: the plugin logs when the summary it builds at the server's start is ready.
        logged = {**settings, "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO"}
        with ui_demo.api_server(work / "home", pythonpath=[str(with_plugin)], settings=logged) as server:
            token = server.token("admin")
            ready_at_first = _ready(server)
            first_contracts = _timed(server, "/dq-contracts/", token)
            print(f"API server with the plugin: {server.url} (plugins: {', '.join(_plugins(server, token))})")
            print(
                "first contracts page, sent as soon as the server answered "
                + ("(the summary was ready): " if ready_at_first else "(the summary was not ready: it waited): ")
                + f"server {first_contracts[0]:7.1f} ms (CPU {first_contracts[3]:6.1f} ms), "
                f"client {first_contracts[1]:7.1f} ms"
            )
            deadline = time.monotonic() + 600
            while _ready(server) is None and time.monotonic() < deadline:
                time.sleep(0.5)
            ready = _ready(server)
            print(
                "summary built at the server's start: "
                + (f"ready {ready} s after the start" if ready else "not logged (see the server log)")
            )
            for label, path in (
                ("contracts page", "/dq-contracts/"),
                ("contracts JSON", "/dq-contracts/api/v1/contracts"),
            ):
                first = _timed(server, path, token)
                warm = [_timed(server, path, token) for _ in range(args.repeat)]
                print(
                    f"{label:15s} route's first: server {first[0]:7.1f} ms (CPU {first[3]:6.1f} ms), client "
                    f"{first[1]:7.1f} ms ({first[2]:,} bytes); next {args.repeat}: server median "
                    f"{statistics.median(w[0] for w in warm):6.1f} ms (CPU {statistics.median(w[3] for w in warm):6.1f}"
                    f" ms), client median {statistics.median(w[1] for w in warm):6.1f} ms"
                )
            sorted_path = "/dq-contracts/?sort=last_score&order=desc&q=team3"
            print(f"{'filtered+sorted':15s} server {_timed(server, sorted_path, token)[0]:7.1f} ms")
            memory["with"] = server.rss_kib()
            time.sleep(IDLE_SECONDS)  # delta-rs's allocator gives freed memory back after a few seconds
            memory["idle"] = server.rss_kib()
        # A restart of the same server (same AIRFLOW_HOME, the table unchanged): it answers from the summary the
        # first one saved, then checks the table's version (a table with commits since is rebuilt while it answers).
        with ui_demo.api_server(work / "home", pythonpath=[str(with_plugin)], settings=logged) as server:
            token = server.token("admin")
            ready_at_first = _ready(server)
            for label, path in (
                ("contracts page", "/dq-contracts/"),
                ("contracts JSON", "/dq-contracts/api/v1/contracts"),
            ):
                first = _timed(server, path, token)
                print(
                    f"after a restart, first {label}, sent as soon as the server answered "
                    + ("(the saved summary was ready): " if ready_at_first else "(it was not ready yet): ")
                    + f"server {first[0]:7.1f} ms (CPU {first[3]:6.1f} ms), client {first[1]:7.1f} ms"
                )
                ready_at_first = _ready(server)
            print(
                "saved summary at the restart: "
                + (f"ready {_ready(server)} s after the start" if _ready(server) else "not logged (see the server log)")
            )
        with ui_demo.api_server(work / "home-without", pythonpath=[str(without_plugin)], settings=settings) as server:
            token = server.token("admin")
            names = _plugins(server, token)
            _timed_status = urllib.request.urlopen(f"{server.url}/api/v2/monitor/health", timeout=60).status
            memory["without"] = server.rss_kib()
            note = (
                ""
                if "dq_contracts" not in names
                else "  (!) the plugin was loaded anyway (another install declares it)"
            )
            print(f"API server without the plugin: plugins: {', '.join(names) or 'none'}{note}")
        print(
            f"API server memory (RSS of its processes): with the plugin, after the requests above "
            f"{memory['with'] / 1024:.0f} MiB; without it {memory['without'] / 1024:.0f} MiB; "
            f"difference {(memory['with'] - memory['without']) / 1024:+.0f} MiB; with the plugin after {IDLE_SECONDS} s "
            f"idle {memory['idle'] / 1024:.0f} MiB, {(memory['idle'] - memory['without']) / 1024:+.0f} MiB"
        )
        print(
            "before the streamed summary (a whole-table read, per-run values as Python lists), measured the same "
            "way at 1,000 contracts × 100 runs: first contracts page 4.3–5.6 s server, memory +450 MiB; with the "
            "streamed Arrow summary built at the first request: 4.3–9.5 s, +248 MiB"
        )
        print(f"load: {Path('/proc/loadavg').read_text().split()[:3]} (1, 5, 15 min) on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
