"""``dq-contracts jars fetch|path``: Delta's jars ahead of time (image builds, air-gapped clusters);
``dq-contracts jvm-archive build|path``: the class-data-sharing archive of short drivers (jvm_archive.py).

``fetch`` resolves them once (:func:`airflow_dq_contracts.runtime.jars.resolve`, under the same lock every
submission takes) and prints the folder; ``path`` prints the folder a submission will use and
exits 1 when it is not there yet. Both are plain Python; only ``fetch`` starts Java (Ivy, no Spark).

Example::

    dq-contracts jars fetch --dir /opt/dq-contracts/jars     # then DQ_CONTRACTS_JARS_DIR=/opt/dq-contracts/jars
    dq-contracts jars fetch --with s3                        # Delta's jars and the s3a filesystem's
    dq-contracts jars fetch --with kafka                     # … and Spark's Kafka source
    dq-contracts jars path                                   # …/airflow-dq-contracts/jars/io.delta_delta-spark_…
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from airflow_dq_contracts.runtime import jars, jvm_archive, spark_config

EXIT_OK = 0
EXIT_MISSING = 1
EXIT_FAILED = 4


def _fetch(args: argparse.Namespace) -> int:
    coordinate = spark_config.delta_package()
    target = jars.default_jars_dir() if args.dir is None else Path(args.dir).expanduser()
    # Said only when something is resolved: a folder resolved by an earlier run is reused as it is.
    cached = jars.complete_jars(target / jars.folder_name([coordinate])) is not None
    if not cached:
        print(f"[dq-contracts] resolving {coordinate} into {target} (once; later runs reuse it)", file=sys.stderr)
    try:
        found = jars.resolve([coordinate], args.dir, ivy_home=args.ivy)
    except jars.JarResolutionError as exc:
        print(f"dq-contracts jars fetch: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print(f"[dq-contracts] {len(found)} jars {'already there' if cached else 'ready'}", file=sys.stderr)
    print(found[0].parent)
    extras: dict[str, tuple[str, str, str, Any, Any, Callable[[], Any]]] = {
        "s3": ("the s3a filesystem", "s3a", jars.S3_JARS_ENV, jars.planned_s3_folder, jars.s3_jars, jars.s3_packages),
        "kafka": (
            "Spark's Kafka source",
            "Kafka",
            jars.KAFKA_JARS_ENV,
            jars.planned_kafka_folder,
            jars.kafka_jars,
            lambda: (jars.kafka_packages(), None),
        ),
    }
    for extra in args.with_ or []:
        what, label, env, planned, resolve_extra, packages = extras[extra]
        try:
            cached = bool(os.environ.get(env)) or jars.complete_jars(planned(args.dir)) is not None
            if not cached:
                print(f"[dq-contracts] resolving {what}: {', '.join(packages()[0])}", file=sys.stderr)
            fetched = resolve_extra(args.dir, ivy_home=args.ivy)
        except jars.JarResolutionError as exc:
            print(f"dq-contracts jars fetch: {exc}", file=sys.stderr)
            return EXIT_FAILED
        print(f"[dq-contracts] {len(fetched)} {label} jars {'already there' if cached else 'ready'}", file=sys.stderr)
        print(planned(args.dir))
    return EXIT_OK


def _path(args: argparse.Namespace) -> int:
    folder = jars.planned_delta_folder(args.dir)
    offline = bool(os.environ.get(spark_config.DELTA_JARS_ENV))
    found = jars.jars_in(folder) if offline else (jars.complete_jars(folder) or [])
    print(folder)
    if args.list:
        for jar in found:
            print(jar)
    source = f"${spark_config.DELTA_JARS_ENV}" if offline else "resolved by `dq-contracts jars fetch` or the first run"
    if not found:
        print(f"[dq-contracts] no jars there yet ({source}); `dq-contracts jars fetch` resolves them", file=sys.stderr)
        return EXIT_MISSING
    print(f"[dq-contracts] {len(found)} jars ({source})", file=sys.stderr)
    return EXIT_OK


def _archive_build(args: argparse.Namespace) -> int:
    try:
        archive = jvm_archive.build(force=args.force, log=lambda text: print(text, file=sys.stderr))
    except (jvm_archive.ArchiveError, jars.JarResolutionError) as exc:
        print(f"dq-contracts jvm-archive build: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print(archive)
    return EXIT_OK


def _archive_path(args: argparse.Namespace) -> int:
    archive = jvm_archive.planned_archive()
    if archive is None:
        print(f"[dq-contracts] off (${jvm_archive.ARCHIVE_ENV}), or Java/Spark not found", file=sys.stderr)
        return EXIT_MISSING
    print(archive)
    if jvm_archive.java_option() is None:
        print("[dq-contracts] not built yet; `dq-contracts jvm-archive build` makes it", file=sys.stderr)
        return EXIT_MISSING
    print(
        f"[dq-contracts] {archive.stat().st_size / 1e6:.0f} MB; local and client-mode drivers map it", file=sys.stderr
    )
    return EXIT_OK


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``jars fetch`` and ``jars path`` on the ``dq-contracts`` subparsers."""
    p_jars = sub.add_parser("jars", help="Delta's jars: resolve them ahead of time, or show where they are")
    actions = p_jars.add_subparsers(dest="jars_command", required=True)
    dir_help = f"jars folder (default ${jars.JARS_DIR_ENV}, else ~/.cache/airflow-dq-contracts/jars)"
    p_fetch = actions.add_parser("fetch", help="resolve Delta's jars now (needs Maven Central or a warm Ivy cache)")
    p_fetch.add_argument("--dir", default=None, metavar="DIR", help=dir_help)
    p_fetch.add_argument("--ivy", default=None, metavar="DIR", help="Ivy home to use (default ~/.ivy2.5.2)")
    p_fetch.add_argument(
        "--with",
        dest="with_",
        action="append",
        choices=["s3", "kafka"],
        default=None,
        help="also the jars of a filesystem or source: s3 (hadoop-aws matching Spark's Hadoop, and the AWS SDK "
        "modules it needs), kafka (Spark's Kafka source, for format: kafka datasets)",
    )
    p_fetch.set_defaults(func=_fetch)
    p_path = actions.add_parser("path", help="print the jar folder runs will use; exit 1 if it is not there yet")
    p_path.add_argument("--dir", default=None, metavar="DIR", help=dir_help)
    p_path.add_argument("--list", action="store_true", help="also print every jar")
    p_path.set_defaults(func=_path)

    p_archive = sub.add_parser("jvm-archive", help="class-data-sharing archive that shortens every driver's start")
    archive_actions = p_archive.add_subparsers(dest="archive_command", required=True)
    p_build = archive_actions.add_parser("build", help="build it now by running the job once on a tiny table")
    p_build.add_argument("--force", action="store_true", help="rebuild even when it exists")
    p_build.set_defaults(func=_archive_build)
    p_apath = archive_actions.add_parser("path", help="print the archive drivers will map; exit 1 if not built")
    p_apath.set_defaults(func=_archive_path)
