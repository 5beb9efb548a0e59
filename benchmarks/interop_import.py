"""Benchmark: importing a large Dataplex rule file (issue #26), measured side by side in one run.

Not part of the test suite. Generates a JSON spec of N plain rules (no aliases; 36,620 rules are about
7 MB), then times, on the same text:

* **located JSON** — ``Source.parse``'s fast path (the C ``json`` parser + one token scan for lines);
* **located YAML** — the contract loader's line-tracking YAML reader on the same text (the path every
  JSON file took before);
* **plain json** — ``json.loads`` alone (the floor: no locations at all);
* **whole import** — ``import_dataplex_result`` (read, map every rule, emit YAML, validate the contract).

It prints seconds and the ratios located-YAML / located-JSON and located-JSON / plain json.

Usage::

    PYTHONPATH=. .venv/bin/python benchmarks/interop_import.py --rules 36620
"""

from __future__ import annotations

import argparse
import json
import time

from airflow_dq_contracts.contract.yamlsrc import load_yaml
from airflow_dq_contracts.interop.common import Source
from airflow_dq_contracts.interop.dataplex import import_dataplex_result


def _rules(count: int) -> str:
    rules = [
        {
            "column": f"c{i % 50}",
            "name": f"r{i}",
            "rangeExpectation": {"minValue": str(i % 7), "maxValue": "100"},
            "threshold": 0.95,
            "ignoreNull": True,
            "dimension": "VALIDITY",
        }
        for i in range(count)
    ]
    return json.dumps({"rules": rules}, indent=1)


def _timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", type=int, default=36620)
    args = parser.parse_args()
    text = _rules(args.rules)
    print(f"{args.rules} rules, {len(text) / 1e6:.1f} MB")
    fast = _timed(lambda: Source.parse(text, "big.json"))
    slow = _timed(lambda: load_yaml(text, "big.json"))
    floor = _timed(lambda: json.loads(text))
    whole = _timed(lambda: import_dataplex_result([Source.parse(text, "big.json")], table="t"))
    print(f"located JSON {fast:.2f}s  located YAML {slow:.2f}s  plain json {floor:.2f}s  whole import {whole:.2f}s")
    print(f"located YAML / located JSON = {slow / fast:.1f}x   located JSON / plain json = {fast / floor:.1f}x")


if __name__ == "__main__":
    main()
