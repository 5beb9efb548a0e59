"""A real PostgreSQL server for the tests that run Airflow on production's metadata database.

Debian's PostgreSQL (``./dev setup`` installs the ``postgresql`` package as root when it is missing): one
throw-away cluster per test session, ``initdb`` into a temporary folder, listening on 127.0.0.1 only (a
free port; its Unix socket in the same folder), trust authentication for local connections, stopped
(``pg_ctl stop -m fast``) and removed when the session ends — also when a test failed. PostgreSQL refuses
to run as root: as root, the cluster is owned and run by the unprivileged ``nobody`` user.

Each test asks :func:`PostgresServer.create_database` for a database of its own.
"""

from __future__ import annotations

import contextlib
import glob
import importlib.util
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from ci_guard import require
from cluster_fixtures import free_port

HINT = "./dev setup installs Debian's postgresql package (as root)"


def postgres_bindir() -> Path | None:
    """The folder of Debian's PostgreSQL server binaries (the newest major installed), or None."""
    found = [Path(p) for p in glob.glob("/usr/lib/postgresql/*/bin") if (Path(p) / "postgres").is_file()]
    return max(found, key=lambda p: int(p.parent.name), default=None)


@dataclass(frozen=True)
class PostgresServer:
    host: str
    port: int
    user: str
    run_as: list[str]
    bindir: Path

    def url(self, database: str, driver: str = "psycopg2") -> str:
        return f"postgresql+{driver}://{self.user}@{self.host}:{self.port}/{database}"

    def create_database(self, name: str) -> PostgresDatabase:
        """Create database ``name`` (owned by the server's user)."""
        subprocess.run(
            [*self.run_as, str(self.bindir / "createdb"), "-h", self.host, "-p", str(self.port), "-U", self.user, name],
            check=True,
            capture_output=True,
            text=True,
        )
        return PostgresDatabase(self, name)

    def query(self, database: str, sql: str, *params: Any) -> list[tuple]:
        """Rows of ``sql`` (``%s`` placeholders) read with psycopg2 — independently of Airflow's own session."""
        import psycopg2

        with contextlib.closing(
            psycopg2.connect(host=self.host, port=self.port, user=self.user, dbname=database)
        ) as conn:
            conn.autocommit = True
            with conn.cursor() as cursor:
                cursor.execute(sql, params)
                return list(cursor.fetchall())


@dataclass(frozen=True)
class PostgresDatabase:
    server: PostgresServer
    name: str

    @property
    def url(self) -> str:
        """Its SQLAlchemy URL (psycopg2; Airflow derives the asyncpg one from it)."""
        return self.server.url(self.name)

    def query(self, sql: str, *params: Any) -> list[tuple]:
        return self.server.query(self.name, sql, *params)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    bindir = postgres_bindir()
    require(bindir is not None, "PostgreSQL (the postgresql server package)", HINT)
    assert bindir is not None
    require(importlib.util.find_spec("psycopg2") is not None, "psycopg2", "it is in the [test] extra")
    root = Path(tempfile.mkdtemp(prefix="dq-pg-"))
    run_as: list[str] = []
    user = pwd.getpwuid(os.getuid()).pw_name
    if os.getuid() == 0:  # initdb and postgres refuse root
        nobody = pwd.getpwnam("nobody")
        os.chown(root, nobody.pw_uid, nobody.pw_gid)
        run_as, user = ["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups"], "nobody"
    data, port = root / "data", free_port()
    env = {**os.environ, "LC_ALL": "C", "LANG": "C"}

    def run(*args: str) -> None:
        done = subprocess.run([*run_as, *args], capture_output=True, text=True, env=env, cwd=root, check=False)
        assert done.returncode == 0, f"{' '.join(args)}: {done.stdout[-2000:]}{done.stderr[-2000:]}"

    run(str(bindir / "initdb"), "-D", str(data), "-U", user, "--auth=trust", "-E", "UTF8", "--no-sync")
    options = f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={root} -c fsync=off"
    try:
        run(str(bindir / "pg_ctl"), "-D", str(data), "-l", str(root / "server.log"), "-o", options, "-w", "start")
        yield PostgresServer("127.0.0.1", port, user, run_as, bindir)
    finally:
        with contextlib.suppress(Exception):
            subprocess.run(
                [*run_as, str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"],
                capture_output=True,
                timeout=60,
                check=False,
            )
        shutil.rmtree(root, ignore_errors=True)
