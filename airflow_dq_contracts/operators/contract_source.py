"""Where a contract comes from: a file found like Airflow finds templates, YAML text or a dict, rendered with Jinja.

The Airflow side of reading a contract (the plain loader is :func:`airflow_dq_contracts.contract.load_contract`):
:class:`ContractSourceMixin` gives :class:`~airflow_dq_contracts.operators.contract_check.ContractCheckOperator`
its ``render_template_fields`` (the contract *file's text* is rendered, with located errors) and
``load_contract`` (validated locally; a bad contract fails the task, no retry).

What it needs of the operator: ``contract`` (a source, or a list of them), ``render_contract``, ``policy``,
``task_id``, the DAG (its folder and ``template_searchpath``) and the origins kept at construction
(:meth:`ContractSourceMixin.init_contract_origins`).

An ODCS document describing several objects (tables) is several contracts: once rendered, the task's
``contract`` becomes the list of its objects' contracts (named ``FILE#OBJECT``) and the task runs them as
``contract=[…]`` does (:mod:`.contract_suite`: one application, the same argument rules); ``FILE#OBJECT``
picks one object.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow_dq_contracts.contract import Contract, ContractValidationError, load_contract
from airflow_dq_contracts.contract.odcs.objects import load_object, object_documents
from airflow_dq_contracts.operators.contract_suite import check_suite_arguments
from airflow_dq_contracts.version_compat import AirflowFailException, Context

__all__ = ["ContractSourceMixin", "contract_argument", "is_contract_path"]

#: The operator's settings checked against several contracts (``contract=[…]`` or a multi-object document).
SUITE_SETTINGS = ("table", "input_path", "references", "quarantine_table", "valid_table")


def is_contract_path(value: Any) -> bool:
    """True when ``value`` names a contract file: the rule of ``load_contract`` — one line that is not inline JSON.

    >>> is_contract_path("contracts/orders.yaml"), is_contract_path("name: x\\n"), is_contract_path('{"name": "x"}')
    (True, False, False)
    """
    return isinstance(value, str) and "\n" not in value and not value.lstrip().startswith("{")


def contract_argument(task_id: str, contract: Any, **settings: Any) -> Any:
    """The operator's ``contract=`` checked when the DAG is parsed: a path, YAML text or a dict; or a list of them
    (several contracts, one application: :func:`~airflow_dq_contracts.operators.contract_suite.check_suite_arguments`
    checks the other ``settings`` against it). ``ValueError`` otherwise.

    >>> contract_argument("t", "c.yaml"), contract_argument("t", ["a.yaml", "b.yaml"])
    ('c.yaml', ['a.yaml', 'b.yaml'])
    >>> contract_argument("t", 3)
    Traceback (most recent call last):
    ...
    ValueError: t: contract= must be a path, YAML text or a dict, got 3
    """
    if isinstance(contract, (list, tuple)):
        return check_suite_arguments(task_id, contract, **settings)
    if not isinstance(contract, (str, dict, os.PathLike)) or (isinstance(contract, str) and not contract.strip()):
        raise ValueError(f"{task_id}: contract= must be a path, YAML text or a dict, got {contract!r}")
    return os.fspath(contract) if isinstance(contract, os.PathLike) else contract


class ContractSourceMixin:
    """Reads and renders the operator's ``contract`` (see the module docs)."""

    contract: Any
    render_contract: bool
    policy: dict[str, Any] | None
    task_id: str
    _contract_origin: str
    _contract_origins: list[str]

    if TYPE_CHECKING:  # BaseOperator's, which the operator class puts after this mixin
        dag: Any
        has_dag: Any
        render_template: Any
        get_template_env: Any

    def init_contract_origins(self) -> None:
        """Remember what each contract was before rendering (a path locates errors; the text replaces it)."""
        self._contract_origin = str(self.contract) if is_contract_path(self.contract) else f"<{self.task_id}.contract>"
        self._contract_origins = [
            str(item) if is_contract_path(item) else f"<{self.task_id}.contract[{index}]>"
            for index, item in enumerate(self.contract if isinstance(self.contract, list) else [])
        ]

    def _search_path(self) -> list[Path]:
        folders: list[Path] = []
        dag = self.dag if self.has_dag() else None
        if dag is not None:
            folders.append(Path(dag.folder))
            for extra in dag.template_searchpath or ():
                folders.append(Path(extra))
        folders.append(Path.cwd())
        return folders

    def _read_contract_file(self, name: str) -> tuple[str, str]:
        """(text, name for error locations) of a contract file, found like Airflow finds templates."""
        candidate = Path(name).expanduser()
        tried: list[str] = []
        paths = [candidate] if candidate.is_absolute() else [folder / candidate for folder in self._search_path()]
        for path in paths:
            tried.append(str(path))
            if path.is_file():
                try:
                    return path.read_text(encoding="utf-8"), name
                except (OSError, UnicodeDecodeError) as exc:
                    raise AirflowFailException(f"{name}: cannot read the contract: {exc}") from None
        raise AirflowFailException(f"{name}: contract file not found (looked in: {', '.join(tried)})")

    def render_template_fields(self, context: Context, jinja_env: Any = None) -> None:
        """Render the templated fields; the contract's *file text* is rendered, with located errors."""
        if "data_interval_end" not in context:
            # A run without a logical date (asset-triggered, or manual without one) has no data
            # interval, and Airflow 3.0 leaves the name out of the context: the default
            # reference_time "{{ data_interval_end }}" would fail the task on Jinja's StrictUndefined.
            # As on Airflow 3.1 (the name present, None), such a run uses the evaluation time.
            context = {**context, "data_interval_end": None}
        source = self.contract
        self.contract = None  # rendered below, once
        try:
            super().render_template_fields(context, jinja_env)  # type: ignore[misc]
        finally:
            self.contract = source
        if jinja_env is None:
            jinja_env = self.get_template_env()
        if isinstance(source, list):
            origins = self._contract_origins
            self.contract = [self._render_contract(*pair, context, jinja_env)[0] for pair in zip(source, origins)]
            return
        self.contract, self._contract_origin = self._render_contract(source, self._contract_origin, context, jinja_env)
        self._split_objects()

    def _render_contract(self, source: Any, origin: str, context: Context, jinja_env: Any) -> tuple[Any, str]:
        """(rendered contract, name for error locations) of one contract: a dict, a file or a text."""
        if isinstance(source, dict):
            return (self.render_template(source, context, jinja_env) if self.render_contract else source), origin
        selected = None
        if is_contract_path(source):
            source, selected = self._object_of(source)
            source, origin = self._read_contract_file(source)
        text = self._render_text(source, origin, context, jinja_env) if self.render_contract else source
        if selected is not None:  # FILE#OBJECT: that object's compiled contract
            try:
                return load_object(text, origin, selected), f"{origin}#{selected}"
            except ContractValidationError as exc:
                raise AirflowFailException(f"invalid contract, nothing submitted:\n{exc}") from None
        return text, origin

    def _object_of(self, name: str) -> tuple[str, str | None]:
        """(file, object) of ``FILE#OBJECT`` when FILE exists and the whole name does not; else (name, None)."""
        if "#" not in name or self._find_contract_file(name) is not None:
            return name, None
        location, selected = name.rsplit("#", 1)
        return (location, selected) if self._find_contract_file(location) is not None else (name, None)

    def _find_contract_file(self, name: str) -> Path | None:
        candidate = Path(name).expanduser()
        paths = [candidate] if candidate.is_absolute() else [folder / candidate for folder in self._search_path()]
        return next((path for path in paths if path.is_file()), None)

    def _split_objects(self) -> None:
        """A rendered ODCS document with several objects becomes one contract per object: a suite."""
        if not isinstance(self.contract, str) or is_contract_path(self.contract):
            return
        try:
            documents = object_documents(self.contract, self._contract_origin)
        except ContractValidationError as exc:
            raise AirflowFailException(f"invalid contract, nothing submitted:\n{exc}") from None
        if documents is None:
            return
        try:
            check_suite_arguments(
                self.task_id,
                [document for _, document in documents],
                **{name: getattr(self, name, None) for name in SUITE_SETTINGS},
            )
        except ValueError as exc:
            raise AirflowFailException(
                f"{exc} ({self._contract_origin} describes {len(documents)} objects: one contract each)"
            ) from None
        self.contract = [document for _, document in documents]
        self._contract_origins = [f"{self._contract_origin}#{name}" for name, _ in documents]

    def _render_text(self, text: str, origin: str, context: Context, jinja_env: Any) -> str:
        import jinja2

        try:
            rendered = jinja_env.from_string(text).render(**context)
        except jinja2.TemplateSyntaxError as exc:
            raise AirflowFailException(
                f"{origin}:{exc.lineno}: template error in the contract: {exc.message}"
            ) from None
        except jinja2.TemplateError as exc:
            raise AirflowFailException(f"{origin}: template error in the contract: {exc}") from None
        # Jinja drops the final newline; keep the text a document (a single line would read as a path).
        return rendered if rendered.endswith("\n") or not text.endswith("\n") else rendered + "\n"

    def contract_sources(self) -> list[tuple[Any, str]]:
        """(contract, name for error locations) of each contract of a task given a list (see ``contract_suite``)."""
        return list(zip(self.contract, self._contract_origins)) if isinstance(self.contract, list) else []

    def load_contract(self, source: Any = None, origin: str | None = None) -> tuple[Contract, str]:
        """Validate the (rendered) contract — or ``source`` named ``origin`` — locally; (contract, its text as
        shipped to the job).

        Raises ``AirflowFailException`` listing every problem, located (no retry: a bad contract
        does not heal).
        """
        alone = source is None
        if alone:
            source, origin = self.contract, self._contract_origin
        if is_contract_path(source):  # not rendered (execute() called directly)
            source, origin = self._read_contract_file(source)
            if alone:
                self._contract_origin = origin
        try:
            contract = load_contract(source, filename=origin, policy=self.policy)
        except ContractValidationError as exc:
            raise AirflowFailException(f"invalid contract, nothing submitted:\n{exc}") from None
        if isinstance(source, dict):
            text = json.dumps(source, default=str)  # JSON is YAML: the job's loader reads it as is
        else:
            text = str(source) if str(source).endswith("\n") else f"{source}\n"
        return contract, text
