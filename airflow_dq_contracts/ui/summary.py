"""The per-run summary of a results table, built with Arrow in chunks (:func:`summarise_runs`): what
:class:`~airflow_dq_contracts.ui.views.ResultsView` keeps per table version and answers its pages from."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Sequence
from typing import Any

from airflow_dq_contracts.results import DECISION_GATE, DECISION_PASS, DECISION_QUARANTINE, STATUS_PASSED
from airflow_dq_contracts.storage.locations import StoreError

#: Severity weights of the quality score (the asset verdict's, ``operators.assets.SEVERITY_WEIGHTS``).
SEVERITY_WEIGHTS = {"P0": 8, "P1": 4, "P2": 2, "P3": 1}
OPTIONAL_RUN_COLUMNS = ["failed_rows", "dag_id", "task_id", "airflow_run_id", "contract_version", "dataset", "filter"]
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
#: contract → check id → DAG id → whether the check ever did not pass in that DAG's runs.
CheckFirings = dict[str, dict[str, dict[str | None, bool]]]


@dataclasses.dataclass(frozen=True)
class RunSummary:
    """One run: its decision, quality score, rows, checks and where in Airflow it ran."""

    contract_name: str
    run_id: str
    at: dt.datetime
    decision: str
    score: float | None
    rows: int | None
    checks: int
    failed_checks: int
    dag_id: str | None
    task_id: str | None
    airflow_run_id: str | None
    contract_version: str | None
    dataset: str | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (the time as ISO-8601 text)."""
        out = dataclasses.asdict(self)
        out["at"] = self.at.isoformat()
        return out


class RunTable:
    """Every run of one table version, oldest first within each contract, as an Arrow table (100,000 runs are
    a few megabytes of columns, not Python objects); :meth:`summaries` makes chosen runs :class:`RunSummary`."""

    FIELDS = (
        "contract_name", "run_id", "at", "decision", "score", "rows", "checks", "failed_checks", "dag_id", "task_id",
        "airflow_run_id", "contract_version", "dataset",
    )  # fmt: skip

    def __init__(self, table: Any) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        #: One row per run (``at``: epoch microseconds), sorted by contract, time and run id.
        self.table = table
        #: contract → (first, end) positions of its runs; and the DAGs among them.
        self.slices: dict[str, tuple[int, int]] = {}
        self.dags: dict[str, set[str | None]] = {}
        if table.num_rows == 0:
            return
        names, firsts, ends = contract_spans(table["contract_name"])
        self.slices = {name: (first, end) for name, first, end in zip(names, firsts, ends)}
        # Which DAGs ran each contract: (contract, DAG) pairs as one integer code, the distinct ones decoded.
        contract_codes, contracts = _codes(table["contract_name"])
        dag_codes, dags = _codes(table["dag_id"])
        pairs = pc.unique(
            pc.add(pc.multiply(contract_codes.cast(pa.int64()), int_scalar(len(dags) + 1)), dag_codes.cast(pa.int64()))
        )
        for code in pairs.to_pylist():
            contract, dag = divmod(code, len(dags) + 1)
            self.dags.setdefault(contracts[contract], set()).add(dags[dag] if dag < len(dags) else None)

    def __len__(self) -> int:
        return int(self.table.num_rows)

    def position(self, run_id: str) -> int | None:
        """Where run ``run_id`` is (None: not in this version)."""
        import pyarrow.compute as pc

        if self.table.num_rows == 0:
            return None
        found = pc.index(self.table["run_id"], strings([run_id])[0]).as_py()
        return None if found is None or found < 0 else int(found)

    def summaries(self, indices: list[int]) -> list[RunSummary]:
        """The runs at ``indices``, in that order."""

        chosen = self.table.take(ints(indices)).select(list(self.FIELDS))
        out = []
        for values in chosen.to_pylist():
            values["at"] = when(values["at"])
            out.append(RunSummary(**values))
        return out

    def summary(self, index: int) -> RunSummary:
        """The run at ``index``."""
        return self.summaries([index])[0]

    def visible(self, name: str, access: Any) -> list[int]:
        """Positions of ``name``'s runs ``access`` may read, oldest first."""
        first, end = self.slices.get(name, (0, 0))
        dags = self.dags.get(name, set())
        allowed = {dag for dag in dags if access.can_read(dag)}
        if allowed == dags:
            return list(range(first, end))
        dag_ids = self.table["dag_id"].slice(first, end - first).to_pylist()
        return [first + offset for offset, dag_id in enumerate(dag_ids) if dag_id in allowed]

    def visible_table(self, access: Any) -> Any:
        """The runs ``access`` may read (the table filtered by DAG, order kept)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        every = set().union(*self.dags.values()) if self.dags else set()
        allowed = {dag for dag in every if access.can_read(dag)}
        if allowed == every:
            return self.table
        named = sorted(dag for dag in allowed if dag is not None)
        mask = pc.fill_null(pc.is_in(self.table["dag_id"], value_set=strings(named)), int_scalar(0, pa.bool_()))
        if None in allowed:
            mask = pc.or_(mask, pc.is_null(self.table["dag_id"]))
        return self.table.filter(mask)


@dataclasses.dataclass
class TableSummary:
    """The per-run summary of one table version, and which checks ever did not pass (per DAG)."""

    key: tuple[Any, ...]
    runs: RunTable
    checks: dict[str, dict[str, dict[str | None, bool]]]  # contract → check id → dag id → fired
    registry: dict[str, list[dict[str, Any]]]  # contract → registry rows (every version)
    checked_at: float = 0.0


def plain_strings(table: Any) -> Any:
    import pyarrow as pa

    def plain(kind: Any) -> Any:
        if kind == pa.string_view() or kind == pa.large_string():
            return pa.string()
        if pa.types.is_dictionary(kind):
            return plain(kind.value_type)
        return kind

    fields = [pa.field(f.name, plain(f.type)) for f in table.schema]
    return table.cast(pa.schema(fields)) if fields != list(table.schema) else table


def when(micros: int | None) -> dt.datetime:
    return EPOCH if micros is None else EPOCH + dt.timedelta(microseconds=micros)


def ints(values: Any) -> Any:
    """An int64 array of ``values`` (no nulls), from a buffer: no Python object per value.

    >>> ints(range(3)).to_pylist()
    [0, 1, 2]
    """
    import array

    import pyarrow as pa

    data = array.array("q", values)
    return pa.Array.from_buffers(pa.int64(), len(data), [None, pa.py_buffer(data.tobytes())])


def int_scalar(value: int, kind: Any = None) -> Any:
    """An int64 (or ``kind``) scalar."""
    array = ints([value])
    return (array if kind is None else array.cast(kind))[0]


def strings(values: list[str]) -> Any:
    """A string array of ``values``."""
    import pyarrow as pa

    return pa.array(values, pa.string())


def contract_spans(column: Any) -> tuple[list[Any], list[int], list[int]]:
    """(names, first positions, end positions) of the runs of equal values of a column sorted by contract —
    run-end encoded (no hash table, no group-by).

    >>> contract_spans(strings(["a", "a", "b"]))
    (['a', 'b'], [0, 2], [2, 3])
    """
    import pyarrow.compute as pc

    if hasattr(column, "combine_chunks"):
        column = column.combine_chunks()
    if len(column) == 0:
        return [], [], []
    encoded = pc.run_end_encode(column)
    ends = encoded.run_ends.to_pylist()
    return encoded.values.to_pylist(), [0, *ends[:-1]], ends


def _codes(column: Any) -> tuple[Any, list[Any]]:
    """(int32 codes, distinct values) of a string column (nulls: the code ``len(values)``) — strings hashed once,
    then grouped and compared as integers."""
    if hasattr(column, "combine_chunks"):
        column = column.combine_chunks()
    encoded = column.dictionary_encode()
    values = encoded.dictionary.cast("string").to_pylist() if len(encoded.dictionary) else []
    return encoded.indices.fill_null(int_scalar(len(values), encoded.indices.type)), values


def _mapped(column: Any, value_of: Callable[[Any], int]) -> Any:
    """``value_of`` of each value of a string column (an int64 array), computed once per distinct value."""
    codes, values = _codes(column)
    return ints([value_of(value) for value in [*values, None]]).take(codes)


#: Results rows aggregated at a time (the table is streamed: memory is bounded by this, not by the table).
CHUNK_ROWS = 100_000
#: A run's identity: the same on each of its rows (taken from its first row).
_IDENTITY = ("contract_name", "run_id", "dag_id", "task_id", "airflow_run_id", "contract_version", "dataset")
#: Per run: (column, aggregate of a chunk's rows, aggregate combining the chunks' partial results).
_RUN_AGGREGATES = [
    ("gate", "max", "max"),
    ("quarantine", "max", "max"),
    ("failed", "sum", "sum"),
    ("one", "sum", "sum"),
    ("weight", "sum", "sum"),
    ("passed_weight", "sum", "sum"),
    ("rows", "max", "max"),
    ("unfiltered_rows", "max", "max"),
    ("at", "min", "min"),
]


def _per_run(identity: Any, numbers: dict[str, Any], which: int) -> Any:
    """Group rows by (contract, run id): the ``which`` aggregate of :data:`_RUN_AGGREGATES` of ``numbers``, the
    identity (``identity``'s columns, plain strings) from each run's first row."""
    import pyarrow as pa
    import pyarrow.compute as pc

    contract_codes, _ = _codes(identity["contract_name"])
    run_codes, run_ids = _codes(identity["run_id"])
    key = pc.add(pc.multiply(contract_codes.cast(pa.int64()), int_scalar(len(run_ids) + 1)), run_codes.cast(pa.int64()))
    work = pa.table({"key": key, "row": ints(range(len(key))), **numbers})
    aggregates = [(column, kinds[which]) for column, *kinds in _RUN_AGGREGATES]
    grouped = work.group_by("key").aggregate([*aggregates, ("row", "min")])
    first = plain_strings(identity).take(grouped["row_min"])
    return pa.table(
        {
            **{name: first[name] for name in _IDENTITY},
            **{column: grouped[f"{column}_{kind}"] for column, kind in aggregates},
        }
    )


def _chunk(table: Any, checks: dict[str, dict[str, dict[str | None, bool]]]) -> Any:
    """The per-run aggregates of one chunk of results rows (Arrow, vectorised); which checks did not pass (per
    contract, check and DAG) is merged into ``checks``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    table = table.combine_chunks()
    for name in OPTIONAL_RUN_COLUMNS:
        if name not in table.column_names:
            kind = pa.int64() if name == "failed_rows" else pa.string()
            table = table.append_column(name, pa.nulls(table.num_rows, kind))
    zero = int_scalar(0)
    not_passed = _mapped(table["status"], lambda status: int(status != STATUS_PASSED))
    failing = not_passed.cast(pa.bool_())
    is_gate = _mapped(table["action"], lambda action: int(action == DECISION_GATE)).cast(pa.bool_())
    is_quarantine = _mapped(table["action"], lambda action: int(action == DECISION_QUARANTINE)).cast(pa.bool_())
    has_rows = pc.greater(pc.fill_null(table["failed_rows"].cast(pa.int64()), zero), zero)
    weights = _mapped(table["severity"], lambda severity: SEVERITY_WEIGHTS.get(severity or "", 1))
    # DESIGN §6: a failed gate, or a failed quarantine check without rows to set aside, gates the run.
    failed_quarantine = pc.and_(is_quarantine, failing)
    gate_hit = pc.or_(pc.and_(is_gate, failing), pc.and_(failed_quarantine, pc.invert(has_rows)))
    rows = table["row_count"].cast(pa.int64())
    numbers = {
        "gate": gate_hit.cast(pa.int64()),
        "quarantine": pc.and_(failed_quarantine, has_rows).cast(pa.int64()),
        "failed": not_passed,
        "one": pc.add(pc.multiply(not_passed, zero), int_scalar(1)),
        "weight": weights,
        "passed_weight": pc.if_else(failing, zero, weights),
        "rows": rows,
        "unfiltered_rows": pc.if_else(pc.is_null(table["filter"]), rows, pa.nulls(1, pa.int64())[0]),
        "at": table["evaluated_at"].cast(pa.timestamp("us", tz="UTC")).cast(pa.int64()),
    }
    per_run = _per_run(table.select(list(_IDENTITY)), numbers, 0)
    # Which checks ever did not pass, per contract, check and DAG: grouped as one integer key.
    contract_codes, contracts = _codes(table["contract_name"])
    check_codes, check_ids = _codes(table["check_id"])
    dag_codes, dags = _codes(table["dag_id"])
    key = pc.add(
        pc.multiply(
            pc.add(
                pc.multiply(contract_codes.cast(pa.int64()), int_scalar(len(check_ids) + 1)),
                check_codes.cast(pa.int64()),
            ),
            int_scalar(len(dags) + 1),
        ),
        dag_codes.cast(pa.int64()),
    )
    fired = pa.table({"key": key, "fired": not_passed}).group_by("key").aggregate([("fired", "max")])
    for code, any_failed in zip(fired["key"].to_pylist(), fired["fired_max"].to_pylist()):
        rest, dag = divmod(code, len(dags) + 1)
        contract, check = divmod(rest, len(check_ids) + 1)
        dag_id = dags[dag] if dag < len(dags) else None
        found = checks.setdefault(contracts[contract], {}).setdefault(
            check_ids[check] if check < len(check_ids) else "", {}
        )
        found[dag_id] = found.get(dag_id, False) or bool(any_failed)
    return per_run


def summarise_runs(batches: Any) -> tuple[RunTable, dict[str, dict[str, dict[str | None, bool]]]]:
    """Per run of a results table (Arrow record ``batches``: a table or a stream of them): decision (DESIGN §6),
    score, rows; and per contract, check and DAG whether the check ever did not pass.

    Streamed: every :data:`CHUNK_ROWS` rows are aggregated with Arrow (``group_by`` on integer codes) and let go,
    and the chunks' partial aggregates are combined — rows are never Python objects, and never all in memory."""
    import pyarrow as pa

    if isinstance(batches, pa.Table):
        batches = batches.to_batches()
    checks: dict[str, dict[str, dict[str | None, bool]]] = {}
    parts: list[Any] = []
    pending: list[Any] = []
    pending_rows = 0
    for batch in batches:
        if batch.num_rows:
            pending.append(batch)
            pending_rows += batch.num_rows
        if pending_rows >= CHUNK_ROWS:
            parts.append(_chunk(pa.Table.from_batches(pending), checks))
            pending, pending_rows = [], 0
    if pending_rows:
        parts.append(_chunk(pa.Table.from_batches(pending), checks))
    if not parts:
        empty = {name: pa.nulls(0, pa.string()) for name in RunTable.FIELDS}
        empty.update({name: pa.nulls(0, pa.int64()) for name in ("at", "rows", "checks", "failed_checks")})
        empty["score"] = pa.nulls(0, pa.float64())
        return RunTable(pa.table(empty)), checks
    per_run = pa.concat_tables(parts).combine_chunks()
    if len(parts) > 1:  # a run's rows may be in two chunks: combine the partial aggregates
        numbers = {column: per_run[column] for column, *_ in _RUN_AGGREGATES}
        per_run = _per_run(per_run.select(list(_IDENTITY)), numbers, 1)
    return RunTable(_run_rows(per_run)), checks


#: The columns a results table must have for the summary (the others are NULL when an older table lacks them).
REQUIRED_RUN_COLUMNS = (
    "contract_name", "run_id", "check_id", "severity", "action", "status", "row_count", "evaluated_at",
)  # fmt: skip


def _sql_name(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def summary_queries(contract_name: str | None = None) -> Callable[[Sequence[str]], list[str]]:
    """The SQL of :func:`summarise_runs` (for :meth:`~airflow_dq_contracts.store.results.ResultsStore.query_results_table`),
    one scan with two grouping sets: per run (``per_run = 1``) its aggregates as :func:`_per_run` makes them; per
    contract, check and DAG whether the check ever did not pass (``fired``). ``contract_name``: that contract's rows
    alone (its partition).

    >>> sql = summary_queries("o'k")(list(REQUIRED_RUN_COLUMNS))[0]
    >>> sql.count(" = 'o''k'"), 'MIN(CAST(NULL AS VARCHAR)) AS "dag_id"' in sql
    (1, True)
    """

    def queries(columns: Sequence[str]) -> list[str]:
        present = set(columns)
        missing = [name for name in REQUIRED_RUN_COLUMNS if name not in present]
        if missing:
            raise StoreError(f"not an airflow-dq-contracts results table: missing column(s) {', '.join(missing)}")
        q = _sql_name

        def col(name: str, kind: str = "VARCHAR") -> str:
            return q(name) if name in present else f"CAST(NULL AS {kind})"

        failing = f"({col('status')} IS NULL OR {col('status')} <> {_sql_text(STATUS_PASSED)})"
        has_rows = f"(COALESCE(CAST({col('failed_rows', 'BIGINT')} AS BIGINT), 0) > 0)"
        gate = f"({col('action')} = {_sql_text(DECISION_GATE)})"
        quarantine = f"({col('action')} = {_sql_text(DECISION_QUARANTINE)})"
        weights = " ".join(f"WHEN {_sql_text(name)} THEN {weight}" for name, weight in SEVERITY_WEIGHTS.items())
        weight = f"(CASE {col('severity')} {weights} ELSE 1 END)"
        rows = f"CAST({col('row_count')} AS BIGINT)"
        check = f"COALESCE({col('check_id')}, '')"
        where = "" if contract_name is None else f" WHERE {q('contract_name')} = {_sql_text(contract_name)}"
        aggregates = [
            *(f"MIN({col(name)}) AS {q(name)}" for name in _IDENTITY[2:]),
            # DESIGN §6: a failed gate, or a failed quarantine check without rows to set aside, gates the run.
            f"MAX(CASE WHEN {failing} AND ({gate} OR ({quarantine} AND NOT {has_rows})) THEN 1 ELSE 0 END) AS {q('gate')}",
            f"MAX(CASE WHEN {failing} AND {quarantine} AND {has_rows} THEN 1 ELSE 0 END) AS {q('quarantine')}",
            f"SUM(CASE WHEN {failing} THEN 1 ELSE 0 END) AS {q('failed')}",
            f"COUNT(*) AS {q('one')}",
            f"SUM({weight}) AS {q('weight')}",
            f"SUM(CASE WHEN {failing} THEN 0 ELSE {weight} END) AS {q('passed_weight')}",
            f"MAX({rows}) AS {q('rows')}",
            f"MAX(CASE WHEN {col('filter')} IS NULL THEN {rows} END) AS {q('unfiltered_rows')}",
            f"MIN({col('evaluated_at')}) AS {q('at')}",
            f"MAX(CASE WHEN {failing} THEN 1 ELSE 0 END) AS {q('fired')}",
        ]
        keys = [
            f"{col('contract_name')} AS {q('contract_name')}",
            f"{col('run_id')} AS {q('run_id')}",
            f"{check} AS {q('check_key')}",
            f"{col('dag_id')} AS {q('dag_key')}",
            f"1 - GROUPING({col('run_id')}) AS {q('per_run')}",
        ]
        return [
            f"SELECT {', '.join(keys + aggregates)} FROM results{where} GROUP BY GROUPING SETS "
            f"(({col('contract_name')}, {col('run_id')}), ({col('contract_name')}, {check}, {col('dag_id')}))"
        ]

    return queries


def summarise_with_sql(store: Any, contract_name: str | None = None) -> tuple[RunTable, CheckFirings] | None:
    """:func:`summarise_runs` computed by the store's SQL engine where the table is read (delta-rs's DataFusion:
    only the aggregates — one row per run — reach Python); None when the store runs no SQL or there is no table."""
    import pyarrow as pa
    import pyarrow.compute as pc

    found = store.query_results_table(summary_queries(contract_name))
    if found is None:
        return None
    both = plain_strings(found[0]).combine_chunks()
    is_run = pc.equal(both["per_run"], int_scalar(1, both.schema.field("per_run").type))
    per_run, fired = both.filter(is_run), both.filter(pc.invert(is_run))
    at = per_run["at"].cast(pa.timestamp("us", tz="UTC")).cast(pa.int64())
    per_run = per_run.set_column(per_run.column_names.index("at"), "at", at)
    checks: CheckFirings = {}
    columns = ("contract_name", "check_key", "dag_key", "fired")
    for name, check_id, dag_id, any_failed in zip(*(fired[c].to_pylist() for c in columns)):
        found_dags = checks.setdefault(name, {}).setdefault(check_id, {})
        found_dags[dag_id] = found_dags.get(dag_id, False) or bool(any_failed)
    return RunTable(_run_rows(per_run)), checks


def _run_rows(per_run: Any) -> Any:
    """The runs table of :class:`RunTable` from the per-run aggregates: decision, score, sorted."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def text(value: str) -> Any:
        return pa.scalar(value, pa.string())

    decision = pc.if_else(
        per_run["gate"].cast(pa.bool_()),
        text(DECISION_GATE),
        pc.if_else(per_run["quarantine"].cast(pa.bool_()), text(DECISION_QUARANTINE), text(DECISION_PASS)),
    )
    total = per_run["weight"]
    score = pc.round(
        pc.divide(
            per_run["passed_weight"].cast(pa.float64()),
            pc.if_else(pc.equal(total, int_scalar(0)), pa.nulls(1, pa.int64())[0], total).cast(pa.float64()),
        ),
        4,
    )
    runs = pa.table(
        {
            "contract_name": per_run["contract_name"],
            "run_id": per_run["run_id"],
            "at": per_run["at"],
            "decision": decision,
            "score": score,
            "rows": pc.coalesce(per_run["unfiltered_rows"], per_run["rows"]),
            "checks": per_run["one"],
            "failed_checks": per_run["failed"],
            **{name: per_run[name] for name in ("dag_id", "task_id", "airflow_run_id", "contract_version", "dataset")},
        }
    )
    order = pc.sort_indices(runs, [("contract_name", "ascending"), ("at", "ascending"), ("run_id", "ascending")])
    return runs.take(order).combine_chunks()


#: The saved summary's file format (:func:`save_summary`): a header line, then two Arrow IPC streams.
SAVED_FORMAT = "airflow-dq-contracts ui summary 1"


def save_summary(path: Any, location: str, version: int, runs: RunTable, checks: CheckFirings) -> None:
    """Write the summary of ``location``'s results table at ``version`` to ``path`` (a local file, readable by its
    owner alone), replaced atomically — what :func:`load_summary` gives back after a restart.

    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "summary"
    >>> runs, checks = summarise_runs(_example_rows())
    >>> save_summary(path, "/wh/dq_results", 7, runs, checks)
    >>> version, loaded, fired = load_summary(path, "/wh/dq_results")
    >>> version, loaded.table.equals(runs.table), fired == checks, load_summary(path, "/elsewhere")
    (7, True, True, None)
    """
    import json
    import os
    import tempfile
    from pathlib import Path

    import pyarrow as pa

    flat = [
        (contract, check_id, dag_id, fired)
        for contract, by_check in checks.items()
        for check_id, by_dag in by_check.items()
        for dag_id, fired in by_dag.items()
    ]
    fired_table = pa.table(
        {
            "contract_name": pa.array([row[0] for row in flat], pa.string()),
            "check_id": pa.array([row[1] for row in flat], pa.string()),
            "dag_id": pa.array([row[2] for row in flat], pa.string()),
            "fired": pa.array([row[3] for row in flat], pa.bool_()),
        }
    )
    parts = []
    for table in (runs.table, fired_table):
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        parts.append(sink.getvalue().to_pybytes())
    header = {"format": SAVED_FORMAT, "location": location, "version": version, "sizes": [len(p) for p in parts]}
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")  # mode 0600
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(json.dumps(header).encode() + b"\n")
            for part in parts:
                out.write(part)
        os.replace(temporary, target)
    except BaseException:  # any failure (an interrupt too): no half-written temporary file left
        Path(temporary).unlink(missing_ok=True)
        raise


def load_summary(path: Any, location: str) -> tuple[int, RunTable, CheckFirings] | None:
    """(the results table version, runs, check firings) saved by :func:`save_summary` for ``location``; None when
    there is none (or it is of another table or format, or unreadable)."""
    import json

    import pyarrow as pa

    try:
        with open(path, "rb") as source:
            header = json.loads(source.readline())
            if header.get("format") != SAVED_FORMAT or header.get("location") != location:
                return None
            tables = [pa.ipc.open_stream(source.read(size)).read_all() for size in header["sizes"]]
    except (OSError, ValueError, KeyError, TypeError, pa.ArrowException):
        return None
    runs, fired = tables
    checks: CheckFirings = {}
    columns = ("contract_name", "check_id", "dag_id", "fired")
    for name, check_id, dag_id, any_failed in zip(*(fired[c].to_pylist() for c in columns)):
        checks.setdefault(name, {}).setdefault(check_id, {})[dag_id] = bool(any_failed)
    return int(header["version"]), RunTable(runs), checks


def _example_rows() -> Any:
    """Two runs of one contract's results rows (the doctests')."""
    import datetime

    import pyarrow as pa

    at = datetime.datetime(2024, 6, 1, tzinfo=datetime.timezone.utc)
    return pa.table(
        {
            "contract_name": ["orders"] * 3,
            "run_id": ["r1", "r1", "r2"],
            "check_id": ["a", "b", "a"],
            "severity": ["P0", "P1", "P0"],
            "action": ["gate", "flag", "gate"],
            "status": ["passed", "failed", "passed"],
            "row_count": [10, 10, 12],
            "evaluated_at": [at, at, at + datetime.timedelta(hours=1)],
        }
    )
