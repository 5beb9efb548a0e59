"""Package the Spark job for ``spark-submit``: a zip of this package (``--py-files``) plus a launcher.

Plain Python (no pyspark, no Airflow), so the operator can build the bundle on the Airflow worker.

The zip holds only the job's world — ``contract/``, ``engine/``, ``jobs/`` and the plain modules —
never the Airflow-side modules (``operators/``, ``sensors/``, ``triggers/``, ``hooks/``,
``version_compat.py``): a driver or executor on a cluster has no Airflow, and shipping code that
could only fail there would hide a broken import graph. Python resolves ``airflow_dq_contracts``
from the zip first (spark-submit puts ``--py-files`` in front of ``site-packages``), so what runs on
the cluster is exactly what was shipped, whatever version the cluster nodes have installed.

The launcher is a two-line script written *next to* the zip rather than the module file inside the
package: a script's own folder becomes ``sys.path[0]``, and the package's ``jobs/`` folder must not
shadow top-level modules for the driver.

Both files are named by a hash of their content and written atomically, so concurrent tasks on one
worker share them and a code change produces a new bundle instead of overwriting one in use.

For standalone *cluster* deploy mode, :func:`build_carrier_jar` writes the code-free jar that
carries a Python driver through Spark's ``PythonRunner`` (spark-submit refuses a ``.py``
application there; see ``docs/deployment.md``).

Example::

    bundle = build_job_bundle()
    # spark-submit --py-files {bundle.zip_path} {bundle.launcher_path} --spec=...
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import tempfile
import zipfile
from pathlib import Path

PACKAGE_NAME = "airflow_dq_contracts"
CACHE_ENV = "DQ_CONTRACTS_JOB_CACHE"
# Airflow-only parts of the package: never shipped to Spark.
AIRFLOW_ONLY = frozenset({"operators", "sensors", "triggers", "hooks", "notifications", "version_compat.py"})
LAUNCHER_SOURCE = (
    '"""spark-submit entry point of airflow-dq-contracts (generated; the code is in the --py-files zip)."""\n'
    "import sys\n\n"
    "from airflow_dq_contracts.jobs.run_contract import main\n\n"
    'if __name__ == "__main__":\n'
    "    sys.exit(main())\n"
)
# A fixed timestamp makes the zip bytes depend on the sources only (reproducible bundle hash).
_ZIP_TIME = (2020, 1, 1, 0, 0, 0)
CARRIER_JAR_NAME = "dq-contracts-pydriver.jar"
_CARRIER_MANIFEST = "Manifest-Version: 1.0\r\nCreated-By: airflow-dq-contracts\r\n\r\n"


@dataclasses.dataclass(frozen=True)
class JobBundle:
    """Where the packaged job lives: ``zip_path`` for ``--py-files``, ``launcher_path`` as the application."""

    zip_path: Path
    launcher_path: Path
    digest: str


def package_root() -> Path:
    """The folder of the installed ``airflow_dq_contracts`` package."""
    return Path(__file__).resolve().parent.parent


def cache_dir() -> Path:
    """``$DQ_CONTRACTS_JOB_CACHE``, else a per-user folder under the system temp dir."""
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured)
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return Path(tempfile.gettempdir()) / f"dq-contracts-job-{uid}"


def _job_files(root: Path) -> list[tuple[Path, str]]:
    """(file, archive name) of every shipped source file, sorted for a stable hash."""
    files: list[tuple[Path, str]] = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if "__pycache__" in rel.parts or rel.parts[0] in AIRFLOW_ONLY:
            continue
        files.append((path, f"{PACKAGE_NAME}/{rel.as_posix()}"))
    return files


def build_zip_bytes(root: Path | None = None) -> bytes:
    """The zip of the job's modules, byte-for-byte reproducible for the same sources.

    >>> import zipfile, io
    >>> names = zipfile.ZipFile(io.BytesIO(build_zip_bytes())).namelist()
    >>> "airflow_dq_contracts/jobs/run_contract.py" in names
    True
    >>> any(n.startswith("airflow_dq_contracts/operators/") for n in names)
    False
    """
    root = root or package_root()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path, name in _job_files(root):
            info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, path.read_bytes())
    return buffer.getvalue()


def _write_atomic(target: Path, data: bytes) -> None:
    if target.exists() and target.read_bytes() == data:
        return
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    replaced = False
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)  # atomic: a concurrent reader sees the old file or the new, never half
        replaced = True
    finally:
        if not replaced and os.path.exists(tmp):  # whatever stopped us (even an interrupt): no litter
            os.unlink(tmp)


def build_job_bundle(dest: Path | str | None = None) -> JobBundle:
    """Write (or reuse) the job zip and its launcher in ``dest`` (default :func:`cache_dir`).

    >>> b = build_job_bundle()
    >>> b.zip_path.suffix, b.launcher_path.suffix
    ('.zip', '.py')
    """
    folder = Path(dest) if dest is not None else cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    data = build_zip_bytes()
    digest = hashlib.sha256(data + LAUNCHER_SOURCE.encode()).hexdigest()[:16]
    zip_path = folder / f"{PACKAGE_NAME}-{digest}.zip"
    launcher_path = folder / f"dq_contracts_job_{digest}.py"
    _write_atomic(zip_path, data)
    _write_atomic(launcher_path, LAUNCHER_SOURCE.encode())
    return JobBundle(zip_path=zip_path, launcher_path=launcher_path, digest=digest)


def carrier_jar_bytes() -> bytes:
    """A jar (a zip) holding only a manifest, byte-for-byte the same on every call.

    >>> import io, zipfile
    >>> zipfile.ZipFile(io.BytesIO(carrier_jar_bytes())).namelist()
    ['META-INF/MANIFEST.MF']
    """
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as jar:
        info = zipfile.ZipInfo("META-INF/MANIFEST.MF", date_time=_ZIP_TIME)
        info.external_attr = 0o644 << 16
        jar.writestr(info, _CARRIER_MANIFEST)
    return buffer.getvalue()


def build_carrier_jar(dest: Path | str | None = None) -> Path:
    """Write (or reuse) the carrier jar of a Python driver in ``dest`` (default :func:`cache_dir`).

    Spark's standalone ``Client`` insists on a jar URL for the driver; the driver's main class is
    Spark's own ``org.apache.spark.deploy.PythonRunner``, so the jar needs no class at all. It must
    sit where the Spark worker can read it, like the bundle.

    >>> build_carrier_jar().name
    'dq-contracts-pydriver.jar'
    """
    folder = Path(dest) if dest is not None else cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / CARRIER_JAR_NAME
    _write_atomic(path, carrier_jar_bytes())
    return path
