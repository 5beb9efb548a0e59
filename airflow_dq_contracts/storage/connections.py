"""Storage connections → credentials in each consumer's vocabulary (plain Python: no Airflow, no pyspark).

An Airflow connection named by ``storage_conn_id`` is looked up and masked on the Airflow side
(:mod:`airflow_dq_contracts.hooks.storage`, and the sensors' triggers in the triggerer); this module is the
mapping itself, from the connection's fields — read here, so the Amazon, Google and Azure providers stay
optional and are never imported — to what each consumer needs:

* :attr:`StorageCredentials.delta_options` — delta-rs ``storage_options`` (sensors, triggers, read-back,
  report, history);
* :attr:`StorageCredentials.env` — the environment of the job's process (spark-submit and the driver it
  starts): for S3 the standard ``AWS_*`` variables (:meth:`~airflow_dq_contracts.storage.s3.S3Settings.to_env`),
  read there by the AWS SDK's environment credentials provider and by delta-rs. Never a command line;
* :attr:`StorageCredentials.spark_conf` — Spark settings *without any secret* (endpoint, addressing style,
  region, which credentials provider): safe on a command line;
* :attr:`StorageCredentials.secrets` — the values Airflow's secrets masker must hide.

Connection types (their fields as their providers define them):

``aws`` (Amazon provider)
    login = access key id, password = secret access key (or extra ``aws_access_key_id`` /
    ``aws_secret_access_key``); extra ``aws_session_token``, ``region_name``, ``endpoint_url`` (a
    ``service_config.s3.endpoint_url`` wins for S3, as in the provider). No key → the SDKs' default chain
    (instance profile, web identity, ``~/.aws``) on each side. A custom endpoint (MinIO, SeaweedFS, Ceph,
    R2) implies path-style requests unless ``config_kwargs.s3.addressing_style`` says ``virtual``
    (``path`` forces path-style against AWS too). ``role_arn`` / ``profile_name`` are refused: they need
    the provider's STS session, which a Spark job cannot share.
``google_cloud_platform`` (Google provider)
    extra ``key_path`` (a key file on the machines) or ``keyfile_dict`` (the key's JSON), ``project`` — the
    old ``extra__google_cloud_platform__*`` names too. No key → Application Default Credentials.
``wasb`` / ``adls`` (Azure provider)
    account: ``adls`` host, ``wasb`` login (or host / account URL when ``tenant_id`` is set), or extra
    ``account_name``; password = account key, or with extra ``tenant_id`` login = client id and password =
    client secret; extra ``sas_token``, ``shared_access_key``, ``connection_string`` (AccountName,
    AccountKey, SharedAccessSignature). No secret → the default chain (managed identity).

Example::

    creds = credentials_from_connection(conn)          # conn: airflow.sdk.Connection
    open_table("s3://lake/orders", storage_options=creds.delta_options)
"""

from __future__ import annotations

import dataclasses
import json
import urllib.parse
from collections.abc import Mapping
from typing import Any

from airflow_dq_contracts.storage.s3 import S3Settings

KIND_S3 = "s3"
KIND_GCS = "gcs"
KIND_AZURE = "azure"
#: Connection type → the storage it reaches.
CONNECTION_KINDS: Mapping[str, str] = {
    "aws": KIND_S3,
    "google_cloud_platform": KIND_GCS,
    "wasb": KIND_AZURE,
    "adls": KIND_AZURE,
}
#: Location schemes of each storage (a connection of another kind for such a location is an error).
SCHEMES: Mapping[str, tuple[str, ...]] = {
    KIND_S3: ("s3://", "s3a://", "s3n://"),
    KIND_GCS: ("gs://", "gcs://"),
    KIND_AZURE: ("abfs://", "abfss://", "az://", "adl://", "azure://", "wasb://", "wasbs://"),
}

GCS_FILESYSTEM = "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem"
GCS_ABSTRACT_FILESYSTEM = "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFS"
ABFS_CLIENT_CREDS_PROVIDER = "org.apache.hadoop.fs.azurebfs.oauth2.ClientCredsTokenProvider"


class StorageConnectionError(ValueError):
    """A storage connection that is of the wrong type or incomplete. The message always names the connection."""


@dataclasses.dataclass(frozen=True)
class StorageCredentials:
    """One connection's credentials, in the vocabulary of each consumer (see the module docs).

    ``repr`` shows no secret-bearing field.
    """

    conn_id: str
    conn_type: str
    kind: str
    delta_options: Mapping[str, str] = dataclasses.field(default_factory=dict, repr=False)
    env: Mapping[str, str] = dataclasses.field(default_factory=dict, repr=False)
    spark_conf: Mapping[str, str] = dataclasses.field(default_factory=dict)
    secrets: tuple[str, ...] = dataclasses.field(default=(), repr=False)
    s3: S3Settings | None = None

    @property
    def has_secrets(self) -> bool:
        """True when the connection carries a secret (False: the default chain, e.g. an instance role)."""
        return bool(self.secrets)

    def storage_options(self, explicit: Mapping[str, str] | None = None) -> dict[str, str]:
        """delta-rs options: the connection's, with ``explicit`` (a raw ``storage_options``) on top."""
        return {**self.delta_options, **{str(k): str(v) for k, v in (explicit or {}).items()}}

    def check_location(self, location: str | None) -> None:
        """Refuse a location on another storage than the connection's (``s3://`` with a ``wasb`` one).

        >>> StorageCredentials("c", "aws", KIND_S3).check_location("gs://b/t")
        Traceback (most recent call last):
        ...
        airflow_dq_contracts.storage.connections.StorageConnectionError: storage connection 'c' (type aws) reaches s3, not gs://b/t
        """
        text = str(location or "").lower()
        for kind, schemes in SCHEMES.items():
            if text.startswith(schemes) and kind != self.kind:
                raise StorageConnectionError(
                    f"storage connection {self.conn_id!r} (type {self.conn_type}) reaches {self.kind}, not {location}"
                )


# --------------------------------------------------------------------------------------- mapping


def _extra(conn: Any) -> dict[str, Any]:
    raw = getattr(conn, "extra", None)
    if isinstance(raw, Mapping):  # built in code with a dict rather than JSON text
        return dict(raw)
    try:
        extra = getattr(conn, "extra_dejson", None)
    except (TypeError, ValueError):
        raise StorageConnectionError(
            f"storage connection {getattr(conn, 'conn_id', None)!r}: extra is not JSON"
        ) from None
    return dict(extra) if isinstance(extra, Mapping) else {}


def _field(extra: Mapping[str, Any], name: str, prefix: str | None = None) -> Any:
    """An extra field, by its plain name or the old ``extra__<type>__<name>`` one; empty → None."""
    value = extra.get(name)
    if value in (None, "") and prefix:
        value = extra.get(f"extra__{prefix}__{name}")
    return None if value in (None, "") else value


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def s3_settings(conn: Any) -> S3Settings:
    """The :class:`~airflow_dq_contracts.storage.s3.S3Settings` of an ``aws`` connection (fields: module docs).

    >>> from types import SimpleNamespace as Connection
    >>> s = s3_settings(Connection(conn_id="minio", conn_type="aws", login="AK", password="SK",
    ...                            extra={"endpoint_url": "http://127.0.0.1:9000"}))
    >>> s.access_key_id, s.uses_path_style
    ('AK', True)
    """
    conn_id = getattr(conn, "conn_id", None)
    extra = _extra(conn)
    for unsupported in ("role_arn", "profile_name"):
        if extra.get(unsupported):
            raise StorageConnectionError(
                f"storage connection {conn_id!r}: extra {unsupported!r} is not supported for tables (the Spark "
                "job cannot share the Amazon provider's session): give an access key, or leave the key out "
                "so each side uses its default chain (instance profile, web identity)"
            )
    access_key = getattr(conn, "login", None) or None
    secret_key = getattr(conn, "password", None) or None
    if not (access_key and secret_key):  # the provider's second place for them
        access_key = access_key or _field(extra, "aws_access_key_id")
        secret_key = secret_key or _field(extra, "aws_secret_access_key")
    if bool(access_key) != bool(secret_key):
        have, missing = ("an access key id", "secret access key") if access_key else ("a secret", "access key id")
        raise StorageConnectionError(
            f"storage connection {conn_id!r} (type aws) has {have} but no {missing} "
            "(login = access key id, password = secret access key)"
        )
    s3_service = _mapping(_mapping(extra.get("service_config")).get("s3"))
    endpoint = s3_service.get("endpoint_url") or _field(extra, "endpoint_url")
    style = str(_mapping(_mapping(extra.get("config_kwargs")).get("s3")).get("addressing_style") or "").lower()
    if style not in ("", "auto", "path", "virtual"):
        raise StorageConnectionError(
            f"storage connection {conn_id!r}: config_kwargs.s3.addressing_style={style!r} is not one of "
            "auto, path, virtual"
        )
    path_style = {"path": True, "virtual": False}.get(style)
    return S3Settings(
        access_key_id=str(access_key) if access_key else None,
        secret_access_key=str(secret_key) if secret_key else None,
        session_token=_field(extra, "aws_session_token"),
        region=s3_service.get("region_name") or _field(extra, "region_name"),
        endpoint_url=str(endpoint) if endpoint else None,
        path_style=path_style,
    )


def _aws(conn: Any) -> StorageCredentials:
    settings = s3_settings(conn)
    return StorageCredentials(
        conn_id=str(conn.conn_id),
        conn_type="aws",
        kind=KIND_S3,
        delta_options=settings.delta_options(),
        env=settings.to_env(),
        spark_conf=settings.spark_conf(),
        secrets=tuple(settings.secrets()),
        s3=settings,
    )


def _gathered(
    conn: Any,
    conn_type: str,
    kind: str,
    options: dict[str, str],
    env: dict[str, str],
    conf: dict[str, str],
    secrets: list[str],
) -> StorageCredentials:
    """What a cloud connection's mapping gathered, as its :class:`StorageCredentials` (fields in their order)."""
    return StorageCredentials(str(conn.conn_id), conn_type, kind, options, env, conf, tuple(secrets))


def _gcp(conn: Any) -> StorageCredentials:
    extra = _extra(conn)
    prefix = "google_cloud_platform"
    if _field(extra, "key_secret_name", prefix):
        raise StorageConnectionError(
            f"storage connection {conn.conn_id!r}: key_secret_name (a key in Secret Manager) is not supported "
            "for tables: give key_path or keyfile_dict, or neither for Application Default Credentials"
        )
    key_path = _field(extra, "key_path", prefix)
    keyfile = _field(extra, "keyfile_dict", prefix)
    project = _field(extra, "project", prefix)
    options: dict[str, str] = {}
    env: dict[str, str] = {}
    secrets: list[str] = []
    conf = {
        "spark.hadoop.fs.gs.impl": GCS_FILESYSTEM,
        "spark.hadoop.fs.AbstractFileSystem.gs.impl": GCS_ABSTRACT_FILESYSTEM,
        # The connector's Application Default Credentials: GOOGLE_APPLICATION_CREDENTIALS, else the metadata server.
        "spark.hadoop.fs.gs.auth.type": "APPLICATION_DEFAULT",
    }
    if keyfile:
        if isinstance(keyfile, str):
            try:
                parsed = json.loads(keyfile)
            except json.JSONDecodeError:
                raise StorageConnectionError(
                    f"storage connection {conn.conn_id!r}: keyfile_dict is not JSON (a service account key)"
                ) from None
        else:
            parsed = keyfile
        if not isinstance(parsed, Mapping):
            raise StorageConnectionError(f"storage connection {conn.conn_id!r}: keyfile_dict is not a JSON object")
        text = json.dumps(parsed)
        options["google_service_account_key"] = text
        env["GOOGLE_SERVICE_ACCOUNT_KEY"] = text
        secrets.append(text)
        if parsed.get("private_key"):
            secrets.append(str(parsed["private_key"]))
    elif key_path:
        options["google_service_account_path"] = str(key_path)
        env["GOOGLE_APPLICATION_CREDENTIALS"] = str(key_path)
    if project:
        env["GOOGLE_CLOUD_PROJECT"] = str(project)
        conf["spark.hadoop.fs.gs.project.id"] = str(project)
    return _gathered(conn, str(conn.conn_type), KIND_GCS, options, env, conf, secrets)


def _connection_string(text: str) -> dict[str, str]:
    parts = (item.split("=", 1) for item in str(text).split(";") if "=" in item)
    return {key.strip(): value.strip() for key, value in parts}


def _account_from_host(host: str | None) -> str | None:
    if not host:
        return None
    text = str(host).strip()
    if "://" in text:
        text = urllib.parse.urlparse(text).hostname or ""
    return text.split(".", 1)[0] or None


def _azure(conn: Any) -> StorageCredentials:
    conn_type = str(conn.conn_type)
    extra = _extra(conn)
    prefix = conn_type
    login = getattr(conn, "login", None) or None
    password = getattr(conn, "password", None) or None
    host = getattr(conn, "host", None) or None
    parsed = _connection_string(_field(extra, "connection_string", prefix) or "")
    tenant = _field(extra, "tenant_id", prefix)
    account = _field(extra, "account_name", prefix) or parsed.get("AccountName")
    if not account:
        account = _account_from_host(host) if (conn_type == "adls" or tenant) else (login or _account_from_host(host))
    if not account:
        raise StorageConnectionError(
            f"storage connection {conn.conn_id!r} (type {conn_type}) names no storage account "
            f"({'host' if conn_type == 'adls' else 'login, or host with tenant_id'}, or extra account_name)"
        )
    options = {"azure_storage_account_name": str(account)}
    suffix = f"{account}.dfs.core.windows.net"
    conf: dict[str, str] = {}
    key = parsed.get("AccountKey") or _field(extra, "shared_access_key", prefix)
    sas = parsed.get("SharedAccessSignature") or _field(extra, "sas_token", prefix)
    secrets: list[str] = []
    if tenant and not key:
        if not (login and password):
            raise StorageConnectionError(
                f"storage connection {conn.conn_id!r}: with tenant_id, login is the client id and password "
                "the client secret — one of them is missing"
            )
        options.update({"azure_client_id": str(login), "azure_client_secret": str(password), "azure_tenant_id": tenant})
        secrets.append(str(password))
        conf.update(
            {
                f"spark.hadoop.fs.azure.account.auth.type.{suffix}": "OAuth",
                f"spark.hadoop.fs.azure.account.oauth.provider.type.{suffix}": ABFS_CLIENT_CREDS_PROVIDER,
                f"spark.hadoop.fs.azure.account.oauth2.client.id.{suffix}": str(login),
                f"spark.hadoop.fs.azure.account.oauth2.client.endpoint.{suffix}": (
                    f"https://login.microsoftonline.com/{tenant}/oauth2/token"
                ),
            }
        )
    elif key or (password and not sas):
        options["azure_storage_account_key"] = str(key or password)
        secrets.append(str(key or password))
        conf[f"spark.hadoop.fs.azure.account.auth.type.{suffix}"] = "SharedKey"
    elif sas:
        options["azure_storage_sas_token"] = str(sas).lstrip("?")
        secrets.append(str(sas).lstrip("?"))
        conf[f"spark.hadoop.fs.azure.account.auth.type.{suffix}"] = "SAS"
    # object_store (delta-rs) reads the same names, upper-cased, from its environment.
    env = {name.upper(): value for name, value in options.items()}
    return _gathered(conn, conn_type, KIND_AZURE, options, env, conf, secrets)


def credentials_from_connection(conn: Any) -> StorageCredentials:
    """Map a connection (``airflow.sdk.Connection`` or anything with its fields) to :class:`StorageCredentials`.

    Pure: no lookup, no masking (the Airflow side's :mod:`airflow_dq_contracts.hooks.storage` does both).

    >>> from types import SimpleNamespace as Connection
    >>> creds = credentials_from_connection(Connection(conn_id="lake", conn_type="aws", login=None, password=None))
    >>> creds.kind, dict(creds.env), creds.has_secrets     # no key: the default chain on each side
    ('s3', {}, False)
    """
    conn_id = getattr(conn, "conn_id", None)
    conn_type = str(getattr(conn, "conn_type", "") or "")
    if conn_type == "aws":
        return _aws(conn)
    if conn_type == "google_cloud_platform":
        return _gcp(conn)
    if conn_type in ("wasb", "adls"):
        return _azure(conn)
    raise StorageConnectionError(
        f"storage connection {conn_id!r} has type {conn_type or 'none'!r}; a storage connection is of type "
        f"{', '.join(sorted(CONNECTION_KINDS))}"
    )


__all__ = [
    "CONNECTION_KINDS",
    "KIND_AZURE",
    "KIND_GCS",
    "KIND_S3",
    "StorageConnectionError",
    "StorageCredentials",
    "credentials_from_connection",
    "s3_settings",
]
