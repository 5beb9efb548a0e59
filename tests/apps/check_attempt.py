"""One attempt of a check task, as an Airflow worker runs it: the operator's transport runs the packaged job.

The hook is the one the operator builds (``hooks.transport.build_job_hook``) for connection
``spark_default``: ``ContractSubmitHook`` (spark-submit, client or standalone cluster mode) unless the
connection is of type ``spark_connect`` (``ContractConnectHook``). The kill -9 tests start this in a
process of its own so they can SIGKILL it while its job is mid-run (the test-only pause hook of
``engine/runner.py`` holds the job at a point). It prints one ``ATTEMPT_DONE <payload>`` or
``ATTEMPT_FAILED <error>`` line and exits 0 / 1.

Example::

    python check_attempt.py spec.json 2 '{"spark.dqcontracts.driverReadBytes": "1"}'
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    from airflow_dq_contracts.hooks.errors import ContractJobError
    from airflow_dq_contracts.hooks.transport import JobRequest, build_job_hook
    from airflow_dq_contracts.runspec import RunSpec

    spec = dataclasses.replace(RunSpec.from_json(Path(argv[0]).read_text(encoding="utf-8")), attempt=int(argv[1]))
    conf = json.loads(argv[2]) if len(argv) > 2 else {}
    arguments, files = spec.job_arguments()
    request = JobRequest(
        conn_id="spark_default", application_args=arguments, files=files, run_id=spec.run_id, spark_conf=conf
    )
    hook = build_job_hook(request)
    try:
        payload = hook.submit_job()
    except ContractJobError as exc:
        print("ATTEMPT_FAILED " + json.dumps({"kind": exc.kind, "message": str(exc)}), flush=True)
        return 1
    print("ATTEMPT_DONE " + json.dumps(payload), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
