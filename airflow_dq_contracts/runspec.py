"""One run's settings as one value: :class:`RunSpec` — built once at the edge, read once by the job.

The operator and ``dq-contracts run`` each build a ``RunSpec`` (:meth:`RunSpec.for_contract`: the
dataset resolved against the contract into a :class:`DatasetSource`, the reference time an aware
UTC datetime, everything checked against the contract *once*); it crosses ``spark-submit`` as
**one** argument (:meth:`RunSpec.job_arguments`: base64 JSON, or a JSON file shipped with
``--files`` when large) and the job reads it back (:meth:`RunSpec.from_argument`,
:meth:`RunSpec.from_json`), resolves it against the contract it carries (:meth:`RunSpec.resolve`)
and hands it to the runner. Values are typed inside the program and become text only in
:meth:`RunSpec.to_json` / :meth:`RunSpec.from_json` (the process boundary). Nothing downstream
re-parses or re-derives a setting: references are structured (:class:`ReferenceOverride`), the
dataset is read from ``spec.source``, and the ``NAME=PATH[:FORMAT]`` text of the command line is
parsed only at the CLI edge (:func:`parse_reference_override`).

Plain Python: imports the contract model and the time module, never Spark or Airflow.

Example:

>>> from airflow_dq_contracts.contract import load_contract
>>> contract = load_contract({"name": "orders", "dataset": {"path": "/data/orders", "format": "parquet"},
...                           "references": {"customers": {"path": "/dim/customers"}}})
>>> spec = RunSpec.for_contract(contract, run_id="dq-1", reference_time="2024-05-02 00:00:00+02:00",
...                             references={"customers": ReferenceOverride("/dim/v2", "delta")})
>>> spec.source
DatasetSource(path='/data/orders', table=None, format='parquet', options={})
>>> spec.reference_time
datetime.datetime(2024, 5, 1, 22, 0, tzinfo=datetime.timezone.utc)
>>> RunSpec.from_json(spec.to_json()) == spec
True
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import datetime as dt
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from airflow_dq_contracts.contract.model import DATASET_FORMATS, ColumnType, Contract, Reference
from airflow_dq_contracts.contract.references import reference_column_types
from airflow_dq_contracts.timeutil import format_time, parse_time

#: The version of :meth:`RunSpec.to_json`'s document; a reader refuses any other.
SPEC_VERSION = 1
#: The job's option carrying the spec inline (base64 of its JSON).
SPEC_OPTION = "--spec"
#: The job's option naming a spec file (a path the driver reads, or a file shipped with ``--files``).
SPEC_FILE_OPTION = "--spec-file"
#: Specs up to this many encoded bytes travel inline; a single argv string is capped at 128 KiB on Linux.
MAX_INLINE_BYTES = 64 * 1024
#: The format of a dataset whose format neither the run nor the contract names.
DEFAULT_FORMAT = "delta"
#: Formats whose values are text: read with the declared columns' types (docs/contracts.md, "Text inputs");
#: a Kafka message's JSON value too (docs/contracts.md, "Kafka").
TEXT_FORMATS = ("csv", "json", "kafka")

_TEXT_FIELDS = (
    "contract_text",
    "contract_origin",
    "input_path",
    "table",
    "input_format",
    "filter",
    "run_id",
    "results_table",
    "quarantine_table",
    "valid_table",
    "dag_id",
    "task_id",
    "airflow_run_id",
    "summary_out",
    "markers_out",
    "checkpoint",
)


class RunSpecError(ValueError):
    """A run that cannot be described: the one error of :mod:`runspec` (and of the runner's arguments).

    ``field`` names the setting at fault (``reference_time``, ``references``, ``dataset``…) when
    there is one, so each edge can say it in its own words (``--reference-time``, ``reference_time=``);
    ``reason`` is the message without it.

    >>> str(RunSpecError("not an ISO-8601 time: 'x'", field="reference_time"))
    "reference_time: not an ISO-8601 time: 'x'"
    """

    def __init__(self, reason: str, *, field: str | None = None) -> None:
        super().__init__(f"{field}: {reason}" if field else reason)
        self.reason = reason
        self.field = field


@dataclasses.dataclass(frozen=True)
class ReferenceOverride:
    """Where to read one of the contract's ``references:`` for this run (``format`` None: the declared one).

    >>> ReferenceOverride.parse("s3://bucket/dim/customers:parquet")
    ReferenceOverride(path='s3://bucket/dim/customers', format='parquet')
    >>> ReferenceOverride.parse("/data/x:y")
    ReferenceOverride(path='/data/x:y', format=None)
    """

    path: str
    format: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.path, str) or not self.path.strip():
            raise RunSpecError(f"a reference needs a path, got {self.path!r}", field="references")
        if self.format is not None:
            if not isinstance(self.format, str) or self.format.lower() not in DATASET_FORMATS:
                raise RunSpecError(
                    f"unknown format {self.format!r} (one of {', '.join(DATASET_FORMATS)})", field="references"
                )
            object.__setattr__(self, "format", self.format.lower())

    @classmethod
    def parse(cls, text: str) -> ReferenceOverride:
        """``PATH[:FORMAT]`` — the text after the last ``:`` is a format only when it names one (URLs keep
        their scheme). The operator's ``references=`` values are written this way."""
        location = str(text).strip()
        head, colon, tail = location.rpartition(":")
        if colon and head and tail.lower() in DATASET_FORMATS:
            return cls(head, tail.lower())
        return cls(location)

    def apply_to(self, declared: Reference) -> Reference:
        """The declared reference read from here instead: its ``filter`` kept, its format unless one is given."""
        return dataclasses.replace(declared, path=self.path, table=None, format=self.format or declared.format)


def parse_reference_override(text: str) -> tuple[str, str, str | None]:
    """``NAME=PATH[:FORMAT]`` (the command line's ``--reference``) → (name, path, format or None).

    The one parser of that text: the CLI calls it, nothing downstream sees the string.

    >>> parse_reference_override("customers=s3://bucket/dim/customers:parquet")
    ('customers', 's3://bucket/dim/customers', 'parquet')
    >>> parse_reference_override("customers=s3://bucket/dim/customers")
    ('customers', 's3://bucket/dim/customers', None)
    """
    name, sep, location = text.partition("=")
    if not sep or not name.strip() or not location.strip():
        raise RunSpecError(f"--reference expects NAME=PATH[:FORMAT], got {text!r}")
    override = ReferenceOverride.parse(location)
    return name.strip(), override.path, override.format


def reference_instant(value: str | dt.datetime | None) -> dt.datetime | None:
    """An instant as an aware UTC datetime (naive = UTC; ISO-8601 text parsed); None or empty text → None.

    The one reading of a reference time given by an edge (the operator's rendered template, the
    command line's ``--reference-time``, a Python caller's datetime); :class:`RunSpecError` otherwise.

    >>> reference_instant("2024-05-02 00:00:00+02:00"), reference_instant(None)
    (datetime.datetime(2024, 5, 1, 22, 0, tzinfo=datetime.timezone.utc), None)
    """
    try:
        return parse_time(value)
    except ValueError as exc:
        raise RunSpecError(str(exc), field="reference_time") from None


def normalise_reference_time(value: str | dt.datetime | None) -> str | None:
    """An instant as ISO-8601 UTC with ``Z`` (naive = UTC); None or empty text → None (for the Airflow side's text).

    >>> normalise_reference_time("2024-05-02"), normalise_reference_time(None)
    ('2024-05-02T00:00:00Z', None)
    """
    return format_time(reference_instant(value))


@dataclasses.dataclass(frozen=True)
class DatasetSource:
    """What a run reads, resolved once (:meth:`resolve`): a catalog ``table`` or a ``path`` in ``format``,
    read with ``options`` (the contract's reader options for its own format; CSV's header defaults).

    ``columns`` (declared name → type) and ``null_values`` say how to read it *as declared*: a text
    format (:data:`TEXT_FORMATS`) is read with the declared types, the ``null_values`` strings (and a
    ``nullValue`` option) read as NULL; another format only when ``null_values`` are given (its string
    columns declared otherwise are parsed). With no declared columns a CSV's types are inferred.

    >>> from airflow_dq_contracts.contract import load_contract
    >>> contract = load_contract({"name": "o", "dataset": {"path": "/d/o", "format": "csv", "options": {"sep": ";"}}})
    >>> DatasetSource.resolve(contract)
    DatasetSource(path='/d/o', table=None, format='csv', options={'header': 'true', 'inferSchema': 'true', 'sep': ';'})
    >>> DatasetSource.resolve(contract, table="silver.orders").name
    'silver.orders'
    >>> typed = load_contract({"name": "o", "dataset": {"path": "/d/o", "format": "csv", "null_values": ["NA"]},
    ...                        "columns": [{"name": "x", "type": "double"}]})
    >>> source = DatasetSource.resolve(typed)
    >>> source.options, source.null_values, source.read_as_declared
    ({'header': 'true'}, ('NA',), True)
    """

    path: str | None = None
    table: str | None = None
    format: str = DEFAULT_FORMAT
    options: Mapping[str, str] = dataclasses.field(default_factory=dict, hash=False)
    columns: Mapping[str, ColumnType | None] = dataclasses.field(default_factory=dict, hash=False, repr=False)
    null_values: tuple[str, ...] = dataclasses.field(default=(), repr=False)

    @property
    def name(self) -> str:
        """What the results call the dataset: the table name, else the path."""
        return self.table or self.path or ""

    @property
    def text(self) -> bool:
        """Whether the values are text (CSV, JSON): read as the declared types say."""
        return self.format in TEXT_FORMATS

    @property
    def read_as_declared(self) -> bool:
        """Whether the reader parses declared columns (a text format with declared columns, or null tokens given)."""
        return bool(self.columns) and (self.text or bool(self.null_values))

    @property
    def null_tokens(self) -> tuple[str, ...]:
        """The strings read as NULL: ``null_values``, plus a text reader's ``nullValue`` option."""
        option = self.options.get("nullValue") if self.text else None
        extra = (option,) if option is not None and option not in self.null_values else ()
        return self.null_values + extra

    @classmethod
    def resolve(
        cls,
        contract: Contract,
        input_path: str | None = None,
        table: str | None = None,
        input_format: str | None = None,
    ) -> DatasetSource:
        """The given path or table (``input_format``, else the contract's format), else the contract's ``dataset``.

        Raises :class:`RunSpecError` (field ``dataset``) for both or neither.
        """
        if input_path and table:
            raise RunSpecError("give either an input path or a table, not both", field="dataset")
        declared = contract.dataset
        if not (input_path or table):
            if not declared.name:
                raise RunSpecError(
                    f"contract {contract.name!r} declares no dataset and none was given (an input path or a table)",
                    field="dataset",
                )
            # A Kafka dataset has neither: its name (kafka://servers/topics) stands for the path.
            input_path, table = declared.path or (None if declared.table else declared.name), declared.table
        fmt = (input_format or (declared.format if declared.name else None) or DEFAULT_FORMAT).lower()
        # The contract's reader options (CSV header, delimiter…) apply when reading its format.
        options = dict(declared.options) if fmt == declared.format else {}
        columns = {column.name: column.type for column in contract.columns}
        return cls(
            input_path or None,
            table or None,
            fmt,
            _text_defaults(fmt, bool(columns), options),
            columns,
            declared.null_values,
        )

    @classmethod
    def for_reference(cls, reference: Reference, contract: Contract) -> DatasetSource:
        """How to read ``reference``: its own format and options; as declared, the columns a check compares
        with a declared column of the dataset (:func:`~airflow_dq_contracts.contract.references.reference_column_types`).

        >>> from airflow_dq_contracts.contract import load_contract
        >>> c = load_contract({"name": "o", "columns": [{"name": "id", "type": "long"}],
        ...                    "references": {"r": {"path": "/r.csv", "format": "csv", "null_values": ["-"]}},
        ...                    "checks": [{"name": "k", "type": "referential", "columns": ["id"], "reference": "r"}]})
        >>> source = DatasetSource.for_reference(c.references["r"], c)
        >>> source.options, dict(source.columns), source.null_values
        ({'header': 'true'}, {'id': ColumnType(kind='long', value_type=None, key_type=None, precision=None, scale=None, raw='long')}, ('-',))
        """
        columns: dict[str, ColumnType | None] = dict(reference_column_types(contract, reference.name))
        options = dict(reference.options)
        if not reference.table:
            options = _text_defaults(reference.format, bool(columns), options)
        return cls(reference.path, reference.table, reference.format, options, columns, reference.null_values)


def _text_defaults(fmt: str, declared: bool, options: dict[str, str]) -> dict[str, str]:
    """The reader options of ``fmt`` under the given ones: a CSV has a header; its types are inferred only
    when no column is declared (declared columns are read as text and parsed as declared)."""
    if fmt != "csv":
        return options
    defaults = {"header": "true"} if declared else {"header": "true", "inferSchema": "true"}
    return {**defaults, **options}


class JobArguments(NamedTuple):
    """What :meth:`RunSpec.job_arguments` hands the submitter: the job's arguments and files to ship."""

    arguments: list[str]
    files: list[str]


@dataclasses.dataclass(frozen=True)
class RunSpec:
    """Everything one contract run needs, as one immutable value (see the module docs).

    * the contract: ``contract_text`` (YAML/JSON; None when the caller holds the loaded contract,
      e.g. ``dq-contracts run`` and the Python API), ``contract_origin`` (the name errors are located
      in) and ``policy`` (severity → action override applied when it is loaded);
    * the dataset: ``input_path`` or ``table``, ``input_format``; ``filter`` (SQL predicate);
    * ``references``: ``{name: ReferenceOverride}`` (sorted by name; a copy of what was given);
    * ``reference_time``: an aware UTC datetime (given as one, or as ISO-8601 text read once on
      construction; written as ``Z`` text only by :meth:`to_json`), ``run_id``;
    * the outputs: ``results_table``, ``quarantine_table``, ``valid_table``;
    * Airflow's identity of the run: ``dag_id``, ``task_id``, ``airflow_run_id``; ``attempt`` (Airflow's
      ``try_number``, an integer ≥ 1; None: not given, and the writes carry no attempt, as before it
      existed): every write of the run's results, quarantine and valid rows carries it, and a write of
      an earlier attempt after a newer one's is refused (store/fencing.py);
    * job options: ``summary_out`` (the summary JSON, driver-local), ``markers_out`` (marker lines);
    * ``incremental`` (check only the rows new since the last run) and ``checkpoint`` (the results
      table its ranges are recorded in; default the results table) — docs/incremental.md.

    * ``source``: the :class:`DatasetSource` the run reads, set by :meth:`resolve` against the
      contract (None before; not part of the JSON, which carries the fields it is resolved from).

    Construction checks what needs no contract (types, input path xor table, formats, the reference
    time); :meth:`resolve` what needs one and resolves the dataset. Build through :meth:`for_contract`
    to do both.
    """

    contract_text: str | None = None
    contract_origin: str = "<contract>"
    policy: Mapping[str, Any] | None = dataclasses.field(default=None, hash=False)
    input_path: str | None = None
    table: str | None = None
    input_format: str | None = None
    filter: str | None = None
    references: Mapping[str, ReferenceOverride] = dataclasses.field(default_factory=dict, hash=False)
    reference_time: dt.datetime | None = None
    run_id: str | None = None
    results_table: str | None = None
    quarantine_table: str | None = None
    valid_table: str | None = None
    dag_id: str | None = None
    task_id: str | None = None
    airflow_run_id: str | None = None
    attempt: int | None = None
    summary_out: str | None = None
    markers_out: str | None = None
    #: check only what arrived since the last run of this contract on this dataset (docs/incremental.md)
    incremental: bool = False
    #: the results table the incremental ranges are read from and recorded in (default: ``results_table``)
    checkpoint: str | None = None
    source: DatasetSource | None = dataclasses.field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        for name in _TEXT_FIELDS:
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise RunSpecError(f"expected text, got {type(value).__name__} {value!r}", field=name)
            if name not in ("contract_text", "contract_origin") and value is not None and not value.strip():
                object.__setattr__(self, name, None)  # "" means "not given", as on the command line
        if self.attempt is not None and (
            not isinstance(self.attempt, int) or isinstance(self.attempt, bool) or self.attempt < 1
        ):
            raise RunSpecError(f"expected an integer >= 1, got {self.attempt!r}", field="attempt")
        if self.filter is not None:
            object.__setattr__(self, "filter", self.filter.strip())
        if self.contract_text is not None and "\n" not in self.contract_text:
            # load_contract reads a single line as a file name: keep the text a document.
            object.__setattr__(self, "contract_text", self.contract_text + "\n")
        if self.policy is not None and not isinstance(self.policy, Mapping):
            raise RunSpecError("must be a mapping (severity → action)", field="policy")
        if self.input_path and self.table:
            raise RunSpecError("give either an input path or a table, not both", field="dataset")
        if self.input_format is not None:
            if self.input_format.lower() not in DATASET_FORMATS:
                raise RunSpecError(
                    f"unknown format {self.input_format!r} (one of {', '.join(DATASET_FORMATS)})", field="input_format"
                )
            object.__setattr__(self, "input_format", self.input_format.lower())
        object.__setattr__(self, "references", _reference_mapping(self.references))
        if self.reference_time is not None and not isinstance(self.reference_time, (str, dt.datetime)):
            raise RunSpecError(
                f"expected a datetime or ISO-8601 text, got {type(self.reference_time).__name__}",
                field="reference_time",
            )
        object.__setattr__(self, "reference_time", reference_instant(self.reference_time))
        if not isinstance(self.incremental, bool):
            raise RunSpecError(f"expected true or false, got {self.incremental!r}", field="incremental")
        if self.source is not None and not isinstance(self.source, DatasetSource):
            raise RunSpecError(f"expected a DatasetSource, got {type(self.source).__name__}", field="source")

    # ------------------------------------------------------------------ building

    @classmethod
    def for_contract(cls, contract: Contract, **settings: Any) -> RunSpec:
        """The spec of a run of ``contract``: ``settings`` are the fields; the dataset defaults to the
        contract's; checked once (:meth:`validate`). Raises :class:`RunSpecError`.

        >>> from airflow_dq_contracts.contract import load_contract
        >>> RunSpec.for_contract(load_contract({"name": "o"}))
        Traceback (most recent call last):
        ...
        airflow_dq_contracts.runspec.RunSpecError: dataset: contract 'o' declares no dataset and none was given (an input path or a table)
        """
        return cls(**settings).resolve(contract)

    def resolve(self, contract: Contract) -> RunSpec:
        """This spec checked against ``contract`` and its dataset resolved once (``source``).

        The one place of these rules: a dataset to read (the given one, else the contract's), references
        the contract declares. Each edge (operator, CLI, job) calls it once — directly, or through
        :meth:`for_contract`. Raises :class:`RunSpecError`.

        >>> from airflow_dq_contracts.contract import load_contract
        >>> RunSpec(input_path="/d", references={"rwa": ReferenceOverride("/x")}).resolve(load_contract({"name": "o"}))
        Traceback (most recent call last):
        ...
        airflow_dq_contracts.runspec.RunSpecError: references: rwa, which the contract does not declare (declared: none)
        """
        source = DatasetSource.resolve(contract, self.input_path, self.table, self.input_format)
        unknown = sorted(set(self.references) - set(contract.references))
        if unknown:
            declared = ", ".join(sorted(contract.references)) or "none"
            raise RunSpecError(
                f"{', '.join(unknown)}, which the contract does not declare (declared: {declared})", field="references"
            )
        # The JSON keeps the fields the source is resolved from (a given path's format may stay unsaid).
        given = bool(self.input_path or self.table)
        input_format = self.input_format if given else (self.input_format or contract.dataset.format)
        return dataclasses.replace(
            self, input_path=source.path, table=source.table, input_format=input_format, source=source
        )

    def validate(self, contract: Contract) -> None:
        """Check the spec against ``contract`` (:meth:`resolve`, its result dropped)."""
        self.resolve(contract)

    # ------------------------------------------------------------------ reading

    @property
    def dataset(self) -> str | None:
        """What the run checks: the table name or the input path (None before :meth:`resolve`)."""
        return self.source.name if self.source is not None else (self.table or self.input_path)

    def resolved_references(self, contract: Contract) -> dict[str, Reference]:
        """The contract's references with this run's overrides applied (names checked by :meth:`validate`)."""
        references = dict(contract.references)
        for name, override in self.references.items():
            references[name] = override.apply_to(references[name])
        return references

    # ------------------------------------------------------------------ JSON

    def to_json(self) -> str:
        """The spec as one JSON document: ``"version"`` first, then the fields that are set, in field order.

        >>> RunSpec(run_id="r1", references={"c": ReferenceOverride("/x")}).to_json()
        '{"version":1,"contract_origin":"<contract>","references":{"c":{"path":"/x","format":null}},"run_id":"r1"}'
        """
        document: dict[str, Any] = {"version": SPEC_VERSION}
        for field in _json_fields():
            value = getattr(self, field.name)
            if field.name == "references":
                value = {name: dataclasses.asdict(override) for name, override in self.references.items()} or None
            elif field.name == "policy" and value is not None:
                value = dict(value)
            elif field.name == "reference_time":
                value = format_time(value)
            elif field.name == "incremental":
                value = value or None  # written only when set: a spec of an earlier release reads the same
            if value is not None:
                document[field.name] = value
        return json.dumps(document, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> RunSpec:
        """Inverse of :meth:`to_json`; strict: another version, an unknown key or a wrong type is refused.

        >>> RunSpec.from_json('{"version":1,"maxx":1}')
        Traceback (most recent call last):
        ...
        airflow_dq_contracts.runspec.RunSpecError: spec: unknown key(s) maxx
        """
        try:
            document = json.loads(text)
        except (json.JSONDecodeError, TypeError) as exc:
            raise RunSpecError(f"not JSON: {exc}", field="spec") from None
        if not isinstance(document, dict):
            raise RunSpecError(f"expected a JSON object, got {type(document).__name__}", field="spec")
        version = document.pop("version", None)
        if version != SPEC_VERSION:
            raise RunSpecError(f"version {version!r}, this reader reads version {SPEC_VERSION}", field="spec")
        known = {field.name for field in _json_fields()}
        unknown = sorted(set(document) - known)
        if unknown:
            raise RunSpecError(f"unknown key(s) {', '.join(unknown)}", field="spec")
        references = document.pop("references", None) or {}
        if not isinstance(references, dict) or not all(isinstance(v, dict) for v in references.values()):
            raise RunSpecError("expected {name: {path, format}}", field="references")
        try:
            pairs = {str(name): ReferenceOverride(**value) for name, value in references.items()}
        except TypeError as exc:
            raise RunSpecError(f"expected {{name: {{path, format}}}}: {exc}", field="references") from None
        reference_time = document.pop("reference_time", None)
        if reference_time is not None and not isinstance(reference_time, str):
            raise RunSpecError(f"expected ISO-8601 text, got {reference_time!r}", field="reference_time")
        return cls(references=pairs, reference_time=reference_instant(reference_time), **document)

    # ------------------------------------------------------------------ the job's command line

    def job_arguments(
        self, *, folder: str | Path | None = None, max_inline_bytes: int = MAX_INLINE_BYTES
    ) -> JobArguments:
        """The job's arguments: ``--spec=<base64 JSON>``, or — above ``max_inline_bytes`` — ``--spec-file=PATH``
        with the file written into ``folder`` and listed to ship with ``--files`` (client mode reads the
        absolute path; cluster mode finds the shipped copy by its name). One ``--opt=value`` element: a
        value starting with ``-`` is never taken for an option.

        >>> spec = RunSpec(contract_text="name: t\\n", run_id="r1")
        >>> arguments, files = spec.job_arguments()
        >>> arguments[0].startswith("--spec="), files
        (True, [])
        >>> RunSpec.from_argument(arguments[0].partition("=")[2]) == spec
        True
        """
        return _job_arguments(self.to_json(), "runspec", folder, max_inline_bytes)

    @classmethod
    def from_argument(cls, encoded: str) -> RunSpec:
        """The spec from the inline ``--spec`` value (base64 of its JSON); a clear error on garbage."""
        return cls.from_json(decode_argument(encoded))


def _json_fields() -> tuple[dataclasses.Field[Any], ...]:
    """The fields :meth:`RunSpec.to_json` writes: all but ``source`` (resolved from them on the other side)."""
    return tuple(field for field in dataclasses.fields(RunSpec) if field.name != "source")


def _job_arguments(document: str, stem: str, folder: str | Path | None, max_inline_bytes: int) -> JobArguments:
    """``--spec=<base64>`` of ``document``, or above ``max_inline_bytes`` ``--spec-file=`` a file in ``folder``."""
    encoded = base64.b64encode(document.encode("utf-8")).decode("ascii")
    if len(encoded) <= max_inline_bytes:
        return JobArguments([f"{SPEC_OPTION}={encoded}"], [])
    if folder is None:
        raise RunSpecError(
            f"{len(encoded)} bytes encoded, over the inline limit of {max_inline_bytes}: give a folder for the spec file",
            field="spec",
        )
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    # Named by content: a retry writes the same file, two runs never share one.
    path = target / f"{stem}-{hashlib.sha256(document.encode('utf-8')).hexdigest()[:24]}.json"
    path.write_text(document, encoding="utf-8")
    return JobArguments([f"{SPEC_FILE_OPTION}={path}"], [str(path)])


def decode_argument(encoded: str) -> str:
    """The JSON text of an inline ``--spec`` value (base64 of UTF-8); :class:`RunSpecError` on garbage."""
    try:
        return base64.b64decode(encoded.encode("ascii"), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeError, ValueError) as exc:
        raise RunSpecError(f"not base64 of UTF-8 JSON: {exc}", field=SPEC_OPTION) from None


@dataclasses.dataclass(frozen=True)
class SuiteSpec:
    """Several runs evaluated by ONE Spark application (``ContractCheckOperator(contract=[…])``).

    ``specs`` are ordinary :class:`RunSpec` values, each complete (its contract text, dataset,
    outputs and a ``run_id`` of its own, distinct from the others'). The document is
    ``{"version": 1, "suite": [<spec>, …]}`` (each element what :meth:`RunSpec.to_json` writes); it
    crosses spark-submit through the same ``--spec``/``--spec-file`` option as one spec, and
    :func:`read_document` tells the two apart.

    >>> suite = SuiteSpec((RunSpec(contract_text="name: a\\n", input_path="/a", run_id="r-a"),
    ...                    RunSpec(contract_text="name: b\\n", input_path="/b", run_id="r-b")))
    >>> read_document(suite.to_json()) == suite
    True
    >>> SuiteSpec((RunSpec(run_id="r"), RunSpec(run_id="r")))
    Traceback (most recent call last):
    ...
    airflow_dq_contracts.runspec.RunSpecError: suite: run id 'r' given to two runs
    """

    specs: tuple[RunSpec, ...]

    def __post_init__(self) -> None:
        specs = tuple(self.specs) if isinstance(self.specs, (list, tuple)) else None
        if not specs or not all(isinstance(spec, RunSpec) for spec in specs):
            raise RunSpecError(f"expected a non-empty list of run specs, got {self.specs!r}", field="suite")
        seen: set[str] = set()
        for spec in specs:
            if spec.run_id is None:
                raise RunSpecError("every run of a suite needs its own run_id", field="suite")
            if spec.run_id in seen:
                raise RunSpecError(f"run id {spec.run_id!r} given to two runs", field="suite")
            seen.add(spec.run_id)
        object.__setattr__(self, "specs", specs)

    def to_json(self) -> str:
        """``{"version": 1, "suite": [...]}``: each run as :meth:`RunSpec.to_json` writes it."""
        runs = [json.loads(spec.to_json()) for spec in self.specs]
        return json.dumps({"version": SPEC_VERSION, "suite": runs}, separators=(",", ":"))

    def job_arguments(
        self, *, folder: str | Path | None = None, max_inline_bytes: int = MAX_INLINE_BYTES
    ) -> JobArguments:
        """As :meth:`RunSpec.job_arguments`: inline when small, else a ``runsuite-<hash>.json`` file to ship."""
        return _job_arguments(self.to_json(), "runsuite", folder, max_inline_bytes)


def read_document(text: str) -> RunSpec | SuiteSpec:
    """The job's input: one run's spec, or a :class:`SuiteSpec` (a document with ``"suite"``). Strict, as
    :meth:`RunSpec.from_json`."""
    try:
        document = json.loads(text)
    except (json.JSONDecodeError, TypeError) as exc:
        raise RunSpecError(f"not JSON: {exc}", field="spec") from None
    if not isinstance(document, dict) or "suite" not in document:
        return RunSpec.from_json(text)
    if document.get("version") != SPEC_VERSION or set(document) != {"version", "suite"}:
        raise RunSpecError(
            f"a suite is {{version: {SPEC_VERSION}, suite: [...]}}, got keys {sorted(document)} "
            f"and version {document.get('version')!r}",
            field="suite",
        )
    runs = document["suite"]
    if not isinstance(runs, list) or not all(isinstance(run, dict) for run in runs):
        raise RunSpecError("expected a list of run specs", field="suite")
    return SuiteSpec(tuple(RunSpec.from_json(json.dumps(run)) for run in runs))


def _reference_mapping(value: Any) -> Mapping[str, ReferenceOverride]:
    """Overrides given as a mapping or (name, override) pairs → a new dict sorted by name (picklable, unlike a proxy)."""
    items = value.items() if isinstance(value, Mapping) else value
    try:
        pairs = [(name, override) for name, override in items]
    except (TypeError, ValueError):
        raise RunSpecError(f"expected {{name: ReferenceOverride}}, got {value!r}", field="references") from None
    for name, override in pairs:
        if not isinstance(name, str) or not name.strip() or not isinstance(override, ReferenceOverride):
            raise RunSpecError(f"expected {{name: ReferenceOverride}}, got {name!r}: {override!r}", field="references")
    names = [name for name, _ in pairs]
    if len(set(names)) != len(names):
        raise RunSpecError(f"a name given twice in {names}", field="references")
    return dict(sorted(pairs, key=lambda pair: pair[0]))
