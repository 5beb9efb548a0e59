"""The Spark half of ``dq-contracts suggest``: start the session as ``run`` does, read the input as ``run`` does, suggest.

Only :mod:`airflow_dq_contracts.cli.suggest` imports this module.

Example::

    suggestion = suggest_from_cli(
        args, name="orders", input_format="csv", input_options={"sep": ";"}, partition_by=[], say=print
    )
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable, Mapping, Sequence

from airflow_dq_contracts.engine.cli_run import start_spark
from airflow_dq_contracts.engine.runner import DatasetError
from airflow_dq_contracts.engine.spark_errors import first_line

from . import ProfileError, Suggestion, input_dataset, read_input, suggest


def suggest_from_cli(
    args: argparse.Namespace,
    *,
    name: str,
    input_format: str,
    partition_by: Sequence[str],
    say: Callable[[str], None],
    input_options: Mapping[str, str] | None = None,
) -> Suggestion:
    """Read ``--input``/``--table`` (``--filter`` pushed down, ``--input-option``s applied) and suggest.

    The session is stopped if started here.

    Raises ``ValueError`` for a run that cannot be described (invalid filter, unknown partition
    column) and ``RuntimeError`` (:class:`DatasetError`, :class:`ProfileError`) when the data
    cannot be read or profiled — each with a one-line reason.
    """
    spark, started = start_spark(args, name, say)
    try:
        dataset = input_dataset(args.input, args.table, input_format, input_options)
        try:
            df = read_input(spark, dataset, args.filter)
            columns = df.columns
        except (ValueError, DatasetError):
            raise
        except Exception as exc:  # noqa: BLE001 - Spark's analysis errors: one readable line
            raise DatasetError(f"cannot read the input: {first_line(exc)}") from None
        missing = [c for c in partition_by if c not in columns]
        if missing:
            raise ValueError(f"--partition-column {missing[0]!r} is not a column of the input")
        source = args.table or args.input
        say(f"profiling {source}" + (f" where {args.filter}" if args.filter else ""))
        try:
            suggestion = suggest(
                df,
                name=name,
                dataset=dataset,
                partition_by=partition_by,
                sample=args.sample,
                reference_time=args.reference_time,
                results_table=args.results_table,
                source=source,
                filter=args.filter,
            )
        except ProfileError:
            raise
        except Exception as exc:  # noqa: BLE001 - a Spark failure while profiling: one readable line
            raise ProfileError(f"suggest failed: {first_line(exc)}") from None
        for label, seconds in suggestion.profile.passes:
            say(f"  {label}: {seconds:.1f} s")
        return suggestion
    finally:
        if started:
            with contextlib.suppress(Exception):
                spark.stop()
