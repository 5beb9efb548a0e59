"""Which runs landed in a results table since a version: its Delta log's new commits, read one by one (no JVM).

A watcher of a results table asks one question per poll: *which commits came after version N, and which
runs did each write?* Answering it costs one metadata request when nothing happened (does
``_delta_log/<N+1>.json`` exist?) and, per new commit, that one small JSON file: every results write of this
package — the Spark job's and delta-rs's — tags its commit (``userMetadata``, see
:func:`~airflow_dq_contracts.store.results.driver_commits.commit_token`) with the run id. A commit another
writer made without the tag is answered from the files it adds (their ``run_id`` column only); a commit
that adds no data (``OPTIMIZE``, ``VACUUM``, a schema change, a delete) lands no run.

The newest version (where a watcher starts) is one listing of ``_delta_log``, as :func:`.log_reader.read_log`
lists it; the commits themselves are the protocol's ``%020d.json`` files.

Example::

    start = newest_version("/wh/dq_results")               # -1: no table yet
    for commit in commits_after("/wh/dq_results", start):   # later, at each poll
        commit.version, commit.run_ids
"""

from __future__ import annotations

import dataclasses
import json
import posixpath
import urllib.parse
from collections.abc import Mapping
from typing import Any

from airflow_dq_contracts.store.tablemeta.parquet_dir import table_filesystem
from airflow_dq_contracts.store.tablemeta.table_facts import DeltaMetadataError

__all__ = ["LandedCommit", "appended_files", "commits_after", "newest_version", "oldest_commit", "source_ranges"]

#: The writer name our commits' ``userMetadata`` carries.
_WRITER = "airflow-dq-contracts"


@dataclasses.dataclass(frozen=True)
class LandedCommit:
    """One commit of a results table: its version and the run ids whose rows it wrote (in file order)."""

    version: int
    run_ids: tuple[str, ...]


def _log_dir(location: str, storage_options: Mapping[str, str] | None) -> tuple[Any, str]:
    fs, root = table_filesystem(location, storage_options)
    return fs, posixpath.join(root, "_delta_log")


def _commit_versions(location: str, storage_options: Mapping[str, str] | None) -> list[int]:
    import pyarrow.fs as pafs

    fs, log_dir = _log_dir(location, storage_options)
    try:
        entries = fs.get_file_info(pafs.FileSelector(log_dir, allow_not_found=True))
    except OSError as exc:
        raise DeltaMetadataError(f"cannot list the Delta log of {location}: {exc}", location) from None
    names = (posixpath.basename(entry.path) for entry in entries)
    return sorted(
        int(name[:20]) for name in names if len(name) == 25 and name.endswith(".json") and name[:20].isdigit()
    )


def newest_version(location: str, storage_options: Mapping[str, str] | None = None) -> int:
    """The table's newest commit version; -1 when there is no table (yet): every commit to come is new."""
    versions = _commit_versions(location, storage_options)
    return versions[-1] if versions else -1


def oldest_commit(location: str, storage_options: Mapping[str, str] | None = None) -> int | None:
    """The oldest commit file still in the log (older ones were cleaned up after a checkpoint); None: no table."""
    versions = _commit_versions(location, storage_options)
    return versions[0] if versions else None


def _read_commit(fs: Any, path: str) -> list[dict[str, Any]] | None:
    """The actions of one commit file; None when it does not exist (yet)."""
    import pyarrow.fs as pafs

    if fs.get_file_info(path).type == pafs.FileType.NotFound:
        return None
    with fs.open_input_stream(path) as stream:
        text = stream.read().decode("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _tagged_run(actions: list[dict[str, Any]]) -> str | None:
    info: dict[str, Any] = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
    try:
        tag = json.loads(info.get("userMetadata") or "{}")
    except (TypeError, ValueError):
        return None
    if isinstance(tag, dict) and tag.get("writer") == _WRITER and tag.get("table") == "results":
        run_id = tag.get("run_id")
        return str(run_id) if run_id else None
    return None


def _runs_in_files(
    fs: Any, root: str, adds: list[dict[str, Any]], storage_options: Mapping[str, str] | None
) -> tuple[str, ...]:
    """The run ids of the rows these add actions bring (one column of each file; partition values first)."""
    import pyarrow.parquet as pq

    seen: dict[str, None] = {}
    for add in adds:
        partition = (add.get("partitionValues") or {}).get("run_id")
        if partition:
            seen.setdefault(str(partition), None)
            continue
        path = urllib.parse.unquote(add["path"])
        where = (fs, posixpath.join(root, path)) if "://" not in path else table_filesystem(path, storage_options)
        with where[0].open_input_file(where[1]) as handle:
            column = pq.ParquetFile(handle).read(columns=["run_id"]).column("run_id")
        for value in column.unique().to_pylist():
            if value is not None:
                seen.setdefault(str(value), None)
    return tuple(seen)


def commits_after(
    location: str, version: int, storage_options: Mapping[str, str] | None = None, *, limit: int = 100
) -> list[LandedCommit]:
    """The commits after ``version`` that exist now (at most ``limit``, oldest first), each with the runs it wrote.

    A commit that adds no data rows is listed with no run ids, so a caller's position moves past it.
    Raises :class:`DeltaMetadataError` when the log cannot be read.
    """
    fs, log_dir = _log_dir(location, storage_options)
    root = posixpath.dirname(log_dir)
    landed: list[LandedCommit] = []
    current = version
    try:
        while len(landed) < limit:
            actions = _read_commit(fs, posixpath.join(log_dir, f"{current + 1:020d}.json"))
            if actions is None:
                break
            current += 1
            adds = [a["add"] for a in actions if "add" in a and a["add"].get("dataChange", True)]
            if not adds:
                runs: tuple[str, ...] = ()
            else:
                tagged = _tagged_run(actions)
                runs = (tagged,) if tagged else _runs_in_files(fs, root, adds, storage_options)
            landed.append(LandedCommit(current, runs))
    except (OSError, ValueError, KeyError) as exc:
        raise DeltaMetadataError(
            f"cannot read commit {current + 1} of the Delta log of {location}: {exc}", location
        ) from None
    return landed


def appended_files(
    location: str, after_version: int, to_version: int, storage_options: Mapping[str, str] | None = None
) -> list[str] | None:
    """The data files the commits ``after_version + 1`` … ``to_version`` added (paths relative to the table,
    decoded), when those commits only appended; None otherwise — the caller compares snapshots instead.

    None when a commit removed a file (a delete, an update, a compaction — even one that changes no
    data: its new files may hold appended rows), added a file that brings no new data, names a file
    outside the table, or is gone (cleaned up after a checkpoint), or when the log cannot be read.
    One small JSON read per commit; no JVM.
    """
    fs, log_dir = _log_dir(location, storage_options)
    added: list[str] = []
    try:
        for version in range(after_version + 1, to_version + 1):
            actions = _read_commit(fs, posixpath.join(log_dir, f"{version:020d}.json"))
            if actions is None:
                return None
            for action in actions:
                if "remove" in action:
                    return None
                add = action.get("add")
                if add is None:
                    continue
                path = urllib.parse.unquote(str(add.get("path", "")))
                if not add.get("dataChange", True) or not path or "://" in path:
                    return None
                added.append(path)
    except (OSError, ValueError, KeyError, DeltaMetadataError):
        return None
    return added


def source_ranges(
    location: str, contract_name: str, dataset: str, storage_options: Mapping[str, str] | None = None
) -> list[tuple[str, str]] | None:
    """The distinct ``(run_id, source_range)`` a results table records for ``contract_name`` on ``dataset``
    (incremental runs' ranges), read by delta-rs: [] when there is no table or it has no ``source_range``
    (an earlier release); None when delta-rs cannot read it from here (a catalog name, an unreadable table).
    """
    from airflow_dq_contracts.store.delta import (
        TableNotFoundError,
        is_path,
        open_table,
        plain_rows,
        scan_table,
        sql_string,
    )

    if not is_path(location):
        return None
    try:
        table = open_table(location, storage_options=storage_options, what="results")
        if "source_range" not in table.schema().to_arrow().names:
            return []
        predicate = (
            f"contract_name = {sql_string(contract_name)} AND dataset = {sql_string(dataset)} "
            "AND source_range IS NOT NULL"
        )
        rows = plain_rows(scan_table(table, location, "results", ["run_id", "source_range"], predicate))
    except TableNotFoundError:
        return []
    except Exception:  # noqa: BLE001 - any doubt: the caller reads it with Spark
        return None
    return sorted({(str(row["run_id"]), str(row["source_range"])) for row in rows})
