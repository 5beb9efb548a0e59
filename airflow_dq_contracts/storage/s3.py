"""Object-store settings in one vocabulary for both sides (plain Python: no Airflow, no pyspark).

Credentials travel the way every AWS SDK already reads them: the standard environment variables.
The Airflow side turns a connection (``storage_conn_id``) into :meth:`S3Settings.to_env` and gives that
environment to the job's process (never its command line); the CLI takes the caller's own
environment. Each consumer then derives what it needs from the same values:

* delta-rs (sensors, read-back, report, history, the driver's commits): :meth:`S3Settings.delta_options`;
* Spark's ``s3a`` filesystem: :meth:`S3Settings.spark_conf` — endpoint, addressing style and region
  only. The secrets stay in the environment, where the AWS SDK's environment credentials provider reads
  them, so they never appear in a Spark conf, an event log or the Spark UI.

>>> s = S3Settings(access_key_id="AKIA", secret_access_key="s3cr3t", endpoint_url="http://127.0.0.1:9000")
>>> s.uses_path_style, s.allow_http
(True, True)
>>> "s3cr3t" in repr(s)
False
>>> sorted(S3Settings.from_env(s.to_env()).to_env()) == sorted(s.to_env())
True
>>> spark_location("s3://bucket/orders"), spark_location("/data/orders")
('s3a://bucket/orders', '/data/orders')
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

ACCESS_KEY_ID = "AWS_ACCESS_KEY_ID"
SECRET_ACCESS_KEY = "AWS_SECRET_ACCESS_KEY"
SESSION_TOKEN = "AWS_SESSION_TOKEN"
REGION = "AWS_REGION"
DEFAULT_REGION = "AWS_DEFAULT_REGION"  # older SDKs' name; read, never written
ENDPOINT_URL = "AWS_ENDPOINT_URL"
#: object_store's (delta-rs's) own names: "true" = virtual-hosted-style requests, else path-style.
VIRTUAL_HOSTED_STYLE = "AWS_VIRTUAL_HOSTED_STYLE_REQUEST"
ALLOW_HTTP = "AWS_ALLOW_HTTP"

#: Every environment variable this module reads or writes for S3 (what a caller copies or clears).
S3_ENV_NAMES = (
    ACCESS_KEY_ID,
    SECRET_ACCESS_KEY,
    SESSION_TOKEN,
    REGION,
    DEFAULT_REGION,
    ENDPOINT_URL,
    VIRTUAL_HOSTED_STYLE,
    ALLOW_HTTP,
)
#: The values that are secrets (to mask, never to log or put on a command line).
SECRET_ENV_NAMES = frozenset({SECRET_ACCESS_KEY, SESSION_TOKEN})

S3_SCHEMES = ("s3://", "s3a://", "s3n://")
#: The AWS SDK v2 provider that reads AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN.
ENV_CREDENTIALS_PROVIDER = "software.amazon.awssdk.auth.credentials.EnvironmentVariableCredentialsProvider"

#: How long delta-rs (object_store) retries one S3 request that failed for a transient reason (no
#: answer, a reset connection, 5xx, ``503 SlowDown``): up to 5 retries, backing off from 100 ms
#: (doubling, jittered, at most 5 s apart), and none later than 30 s after the request's first try.
#: Set explicitly (object_store's own default retries for 3 minutes); a caller's option of the same
#: name wins (:func:`with_retry_bounds`). Documented in docs/storage.md (S3).
DELTA_RETRY_OPTIONS: Mapping[str, str] = {
    "max_retries": "5",
    "retry_timeout": "30s",
    "backoff_config.init_backoff": "100ms",
    "backoff_config.max_backoff": "5s",
    "backoff_config.base": "2",
}

#: The same bound for Spark's ``s3a`` (Hadoop 3.4): each S3 call is tried by the AWS SDK up to 3 times,
#: and S3A retries a failed call up to 3 more times 500 ms apart (a throttled one up to 5 more times,
#: from 500 ms, exponential) — instead of Hadoop's defaults (5 SDK attempts, 7 retries, 20 throttle retries).
S3A_RETRY_CONF: Mapping[str, str] = {
    "spark.hadoop.fs.s3a.attempts.maximum": "3",
    "spark.hadoop.fs.s3a.retry.limit": "3",
    "spark.hadoop.fs.s3a.retry.interval": "500ms",
    "spark.hadoop.fs.s3a.retry.throttle.limit": "5",
    "spark.hadoop.fs.s3a.retry.throttle.interval": "500ms",
}


def _flag(value: str | None) -> bool | None:
    if value is None or value.strip() == "":
        return None
    return value.strip().lower() in {"1", "true", "yes", "on"}


@dataclasses.dataclass(frozen=True)
class S3Settings:
    """Where an S3-compatible store is and who we are to it. No field is required: with no key, the
    SDKs' default chain (instance profile, web identity, ~/.aws) applies on each side.

    ``path_style=None`` means: path-style when a custom ``endpoint_url`` is given (MinIO, SeaweedFS,
    Ceph, R2 serve buckets under the path), virtual-hosted style against AWS itself.
    """

    access_key_id: str | None = None
    secret_access_key: str | None = dataclasses.field(default=None, repr=False)
    session_token: str | None = dataclasses.field(default=None, repr=False)
    region: str | None = None
    endpoint_url: str | None = None
    path_style: bool | None = None

    def __post_init__(self) -> None:
        if bool(self.access_key_id) != bool(self.secret_access_key):
            raise ValueError("an S3 access key id needs its secret access key, and the other way round")

    @property
    def uses_path_style(self) -> bool:
        return self.path_style if self.path_style is not None else bool(self.endpoint_url)

    @property
    def allow_http(self) -> bool:
        return bool(self.endpoint_url) and str(self.endpoint_url).lower().startswith("http://")

    def secrets(self) -> list[str]:
        """The secret values (for a secrets masker)."""
        return [v for v in (self.secret_access_key, self.session_token) if v]

    def to_env(self) -> dict[str, str]:
        """The standard environment variables for these settings (only those that are set)."""
        env: dict[str, str] = {}
        for name, value in (
            (ACCESS_KEY_ID, self.access_key_id),
            (SECRET_ACCESS_KEY, self.secret_access_key),
            (SESSION_TOKEN, self.session_token),
            (REGION, self.region),
            (ENDPOINT_URL, self.endpoint_url),
        ):
            if value:
                env[name] = value
        if self.path_style is not None or self.endpoint_url:
            env[VIRTUAL_HOSTED_STYLE] = "false" if self.uses_path_style else "true"
        if self.allow_http:
            env[ALLOW_HTTP] = "true"
        return env

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> S3Settings:
        """Settings from the standard variables (``os.environ`` by default)."""
        env = os.environ if env is None else env
        hosted = _flag(env.get(VIRTUAL_HOSTED_STYLE))
        return cls(
            access_key_id=env.get(ACCESS_KEY_ID) or None,
            secret_access_key=env.get(SECRET_ACCESS_KEY) or None,
            session_token=env.get(SESSION_TOKEN) or None,
            region=env.get(REGION) or env.get(DEFAULT_REGION) or None,
            endpoint_url=env.get(ENDPOINT_URL) or None,
            path_style=None if hosted is None else not hosted,
        )

    def delta_options(self) -> dict[str, str]:
        """delta-rs ``storage_options`` (object_store's key names)."""
        options = self.to_env()
        if self.region is None and self.endpoint_url:
            # object_store needs a region to sign with; S3-compatible servers accept any.
            options[REGION] = "us-east-1"
        return options

    def spark_conf(self) -> dict[str, str]:
        """``spark.hadoop.fs.s3a.*`` settings, without any secret (those stay in the environment)."""
        conf = {
            "spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
            "spark.hadoop.fs.s3a.path.style.access": "true" if self.uses_path_style else "false",
        }
        if self.access_key_id:
            conf["spark.hadoop.fs.s3a.aws.credentials.provider"] = ENV_CREDENTIALS_PROVIDER
        if self.endpoint_url:
            conf["spark.hadoop.fs.s3a.endpoint"] = self.endpoint_url
            conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] = "false" if self.allow_http else "true"
        if self.region or self.endpoint_url:
            conf["spark.hadoop.fs.s3a.endpoint.region"] = self.region or "us-east-1"
        conf.update(S3A_RETRY_CONF)
        return conf


def env_delta_options(location: str) -> dict[str, str] | None:
    """delta-rs ``storage_options`` for ``location`` from this process's standard AWS_* environment (the
    credentials its Spark uses): on S3 only; None elsewhere (a local path needs none)."""
    return S3Settings.from_env().delta_options() if is_s3(location) else None


def with_retry_bounds(options: Mapping[str, str] | None) -> dict[str, str]:
    """delta-rs ``options`` with :data:`DELTA_RETRY_OPTIONS` wherever the caller set none of its own.

    >>> with_retry_bounds({"AWS_REGION": "eu-west-1", "max_retries": "2"})["max_retries"]
    '2'
    >>> with_retry_bounds(None)["retry_timeout"]
    '30s'
    """
    return {**DELTA_RETRY_OPTIONS, **(options or {})}


# How object_store words a request that got no answer, or only a "try later" one, after its retries.
_NO_ANSWER = re.compile(
    r"error sending request|connection (?:reset|refused|closed)|connection error|timed out|operation timed out|"
    r"dns error|broken pipe|incomplete message|Connection reset by peer",
    re.IGNORECASE,
)
_BUSY = re.compile(r"\b50[0-9]\b|SlowDown|Service Unavailable|Internal ?Error", re.IGNORECASE)
_RETRIES = re.compile(r"after (\d+) retr", re.IGNORECASE)


def outage(error: BaseException | str) -> str | None:
    """What an object-store failure says about the store, in a few words, or None when it is not an outage.

    "the object store did not answer" (no connection, a reset, a timeout), "the object store kept
    answering 503 SlowDown" / "…kept failing (5xx)", with the retries made when the error says.

    >>> outage("Error performing GET http://s3/x in 200ms, after 5 retries - HTTP error - Connection reset by peer")
    'the object store did not answer (after 5 retries)'
    >>> outage("503 Service Unavailable <Code>SlowDown</Code>")
    'the object store kept answering 503 SlowDown'
    >>> outage("schema mismatch") is None
    True
    """
    text = str(error)
    retries = _RETRIES.search(text)
    after = f" (after {retries.group(1)} retries)" if retries else ""
    if "slowdown" in text.lower():
        return f"the object store kept answering 503 SlowDown{after}"
    if _NO_ANSWER.search(text):
        return f"the object store did not answer{after}"
    if _BUSY.search(text):
        return f"the object store kept failing (5xx){after}"
    return None


def is_s3(location: str | None) -> bool:
    return bool(location) and str(location).lower().startswith(S3_SCHEMES)


_S3_URI = re.compile(r"(?<![A-Za-z0-9])s3[an]?://", re.IGNORECASE)


def mentions_s3(*texts: object) -> bool:
    """Whether any of these texts (a command line's arguments, a run's description) names an S3 location.

    >>> mentions_s3(["--spec", '{"results_table": "s3://lake/dq_results"}']), mentions_s3("/wh/t", "mys3://x")
    (True, False)
    """
    return any(_S3_URI.search(str(text)) for text in texts)


def needs_s3(locations: Iterable[str | None]) -> bool:
    """Whether any of these locations is on S3 (so Spark needs the ``s3a`` filesystem jars)."""
    return any(is_s3(location) for location in locations)


def parse_storage_options(items: Iterable[str] | None) -> dict[str, str]:
    """``--storage-option KEY=VALUE`` items → a dict (the last of a key wins).

    A malformed item raises ``ValueError`` naming its position only: its text may hold a secret.

    >>> parse_storage_options(["AWS_REGION=eu-west-1", "AWS_ALLOW_HTTP=true"])
    {'AWS_REGION': 'eu-west-1', 'AWS_ALLOW_HTTP': 'true'}
    """
    options: dict[str, str] = {}
    for position, item in enumerate(items or [], start=1):
        key, sep, value = str(item).partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--storage-option #{position} is not KEY=VALUE (its value is not shown)")
        options[key.strip()] = value
    return options


def add_storage_option_argument(parser: Any) -> None:
    """The commands' repeatable ``--storage-option KEY=VALUE`` (read by :func:`cli_storage_options`)."""
    parser.add_argument(
        "--storage-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="delta-rs storage option (object_store names, e.g. AWS_ENDPOINT_URL=…), over the standard AWS_* "
        "environment; repeatable; values are never printed",
    )


def cli_storage_options(
    items: Iterable[str] | None = None, env: Mapping[str, str] | None = None
) -> dict[str, str] | None:
    """delta-rs options for a command: the standard ``AWS_*`` environment, ``--storage-option`` items on top.

    None when both are empty (delta-rs then reads the environment itself, as it always did).

    >>> cli_storage_options(["AWS_REGION=eu-west-1"], env={"AWS_ENDPOINT_URL": "http://127.0.0.1:9000"})["AWS_REGION"]
    'eu-west-1'
    """
    options = {**S3Settings.from_env(env).delta_options(), **parse_storage_options(items)}
    return options or None


@contextlib.contextmanager
def storage_environment(options: Mapping[str, str] | None) -> Iterator[None]:
    """This process's environment with ``options`` (upper-cased: object_store's and the SDKs' names) while a
    local run lasts — what the Spark JVM it starts and delta-rs read — restored afterwards."""
    with environment_overlay({str(key).upper(): str(value) for key, value in (options or {}).items()}):
        yield


@contextlib.contextmanager
def environment_overlay(names: Mapping[str, str]) -> Iterator[None]:
    """This process's environment with ``names`` set while the block runs, each restored (or removed) after."""
    saved = {name: os.environ.get(name) for name in names}
    os.environ.update(names)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def arrow_s3_filesystem(options: Mapping[str, str]) -> Any:
    """A ``pyarrow.fs.S3FileSystem`` for delta-rs-style ``options`` (the ``AWS_*`` names) — for what delta-rs
    does not read: Parquet folders and the HTML report on S3. ``s3://bucket/key`` → path ``bucket/key``."""
    import urllib.parse

    from pyarrow import fs

    settings = S3Settings.from_env(options)
    endpoint = urllib.parse.urlparse(settings.endpoint_url) if settings.endpoint_url else None
    return fs.S3FileSystem(
        access_key=settings.access_key_id,
        secret_key=settings.secret_access_key,
        session_token=settings.session_token,
        region=settings.region or ("us-east-1" if endpoint else None),
        scheme=endpoint.scheme if endpoint else None,
        endpoint_override=endpoint.netloc if endpoint else None,
        force_virtual_addressing=not settings.uses_path_style and endpoint is not None,
    )


def spark_location(location: str) -> str:
    """The location as Spark's Hadoop filesystems name it: ``s3://`` and ``s3n://`` become ``s3a://``."""
    lowered = location.lower()
    for scheme in ("s3://", "s3n://"):
        if lowered.startswith(scheme):
            return "s3a://" + location[len(scheme) :]
    return location
