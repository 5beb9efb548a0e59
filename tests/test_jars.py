"""Jar resolution (``airflow_dq_contracts/runtime/jars.py``) and ``dq-contracts jars``: real Ivy, real locks.

Resolution runs Spark's own Ivy against this machine's warm Ivy cache (``~/.ivy2.5.2``, what
``./dev setup`` filled), so it needs no network; the failure cases point Ivy at a closed loopback
port, which is what an unreachable Maven Central looks like to it.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from airflow_dq_contracts.runtime import jars, spark_config

ROOT = Path(__file__).resolve().parent.parent
DELTA = spark_config.delta_package()
# Ivy's file name of the Delta jar for the installed Spark (4.0 and 4.1 need different artifacts).
DELTA_JAR = "{}_{}-{}.jar".format(*DELTA.split(":"))


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "airflow_dq_contracts.cli.main", "jars", *args],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=900,
    )


def _fake_complete(folder: Path, names: list[str]) -> list[Path]:
    folder.mkdir(parents=True)
    for name in names:
        (folder / name).write_bytes(b"")
    (folder / jars.COMPLETE_MARKER).write_text("\n".join(names))
    return sorted(folder / name for name in names)


@pytest.fixture()
def unreachable_settings(tmp_path) -> Path:
    """Ivy settings whose only repository is a closed port on loopback: resolution cannot succeed."""
    path = tmp_path / "ivysettings.xml"
    path.write_text(
        textwrap.dedent("""\
        <ivysettings>
          <settings defaultResolver="offline-test"/>
          <resolvers>
            <ibiblio name="offline-test" m2compatible="true" root="http://127.0.0.1:9/maven2/"/>
          </resolvers>
        </ivysettings>
    """)
    )
    return path


def test_folder_names_are_readable_and_keyed_by_every_coordinate():
    one = jars.folder_name(DELTA)
    assert one.startswith(DELTA_JAR.removesuffix(".jar") + "-")
    assert jars.folder_name([DELTA]) == one == jars.folder_name(f" {DELTA} ")
    two = jars.folder_name([DELTA, "org.example:extra:1.0"])
    assert two != one and "+1-" in two
    assert jars.folder_name(["org.example:extra:1.0", DELTA]) == two  # order does not matter
    with pytest.raises(jars.JarResolutionError, match=r"group:artifact:version, got \['io.delta:delta-spark'\]"):
        jars.folder_name("io.delta:delta-spark")


def test_four_processes_resolve_once_into_one_complete_folder(tmp_path):
    """Four processes start together on an empty jars folder; all get the same complete folder."""
    script = textwrap.dedent(f"""
        import json, sys, time
        from pathlib import Path
        from airflow_dq_contracts.runtime import jars
        go = Path({str(tmp_path / "go")!r})
        while not go.exists():
            time.sleep(0.01)
        found = jars.resolve([{DELTA!r}], {str(tmp_path / "jars")!r})
        print(json.dumps([str(p) for p in found]))
    """)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        for _ in range(4)
    ]
    (tmp_path / "go").touch()
    answers = []
    for proc in procs:
        out, err = proc.communicate(timeout=900)
        assert proc.returncode == 0, err[-2000:]
        answers.append(json.loads(out))
    assert all(answer == answers[0] for answer in answers)
    folder = tmp_path / "jars" / jars.folder_name(DELTA)
    assert [Path(p) for p in answers[0]] == sorted(folder.glob("*.jar"))
    names = {Path(p).name for p in answers[0]}
    assert DELTA_JAR in names and "io.delta_delta-storage-4.4.0.jar" in names
    assert not any(name.startswith("org.scala-lang_scala-library") for name in names)  # Spark ships its own
    assert sorted((folder / jars.COMPLETE_MARKER).read_text().split()) == sorted(names)
    # Nothing else left behind: the one folder and its lock file, no staging folder.
    assert sorted(p.name for p in (tmp_path / "jars").iterdir()) == sorted([folder.name, f".{folder.name}.lock"])


def test_a_half_written_folder_is_never_used(tmp_path):
    folder = tmp_path / jars.folder_name(DELTA)
    folder.mkdir()
    (folder / DELTA_JAR).write_bytes(b"truncated")  # no marker: cut short
    assert jars.complete_jars(folder) is None
    found = jars.resolve([DELTA], tmp_path)
    assert (folder / jars.COMPLETE_MARKER).is_file() and len(found) > 2
    assert (folder / DELTA_JAR).read_bytes() != b"truncated"


def test_an_unreachable_repository_fails_once_with_the_offline_route(tmp_path, unreachable_settings):
    with pytest.raises(jars.JarResolutionError) as caught:
        jars.resolve(
            ["org.example:not-cached:0.0.1"],
            tmp_path / "jars",
            ivy_home=tmp_path / "ivy",
            ivy_settings=unreachable_settings,
        )
    message = str(caught.value)
    assert "could not resolve org.example:not-cached:0.0.1" in message
    assert "dq-contracts jars fetch" in message and "DQ_CONTRACTS_DELTA_JARS" in message
    assert not [p for p in (tmp_path / "jars").iterdir() if not p.name.endswith(".lock")]  # no folder, no staging


def test_a_held_lock_is_waited_for_by_time_then_reported(tmp_path):
    root = tmp_path / "jars"
    root.mkdir()
    lock = root / f".{jars.folder_name(DELTA)}.lock"
    with open(lock, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        with pytest.raises(jars.JarResolutionError, match="gave up waiting for another process resolving"):
            jars.resolve([DELTA], root, timeout=1.0)
        # The holder finishes its folder: a waiter takes it as soon as the lock is free.
        made = _fake_complete(root / jars.folder_name(DELTA), ["a.jar", "b.jar"])
    assert jars.resolve([DELTA], root, timeout=1.0) == made


def test_a_wait_on_the_lock_is_journaled_in_the_lock_file_once_the_waiter_holds_it(tmp_path):
    """The contention a concurrency test must prove: a waiter journals its wait; an uncontended take writes nothing."""
    import time

    lock = tmp_path / ".held.lock"
    waiter = textwrap.dedent(f"""
        import time
        from pathlib import Path
        from airflow_dq_contracts.runtime import jars
        Path({str(tmp_path / "trying")!r}).touch()
        with jars.exclusive_lock(Path({str(lock)!r}), time.monotonic() + 60, "the test's jars"):
            pass
    """)
    with jars.exclusive_lock(lock, time.monotonic() + 5, "the test's jars") as note:
        assert lock.read_text(encoding="utf-8") == ""  # taken at once: nothing to journal
        proc = subprocess.Popen([sys.executable, "-c", waiter], env={**os.environ, "PYTHONPATH": str(ROOT)})
        while not (tmp_path / "trying").exists():
            assert proc.poll() is None
            time.sleep(0.05)
        time.sleep(1.0)
        assert proc.poll() is None  # it waits for this process's lock
        note("made the jars")
    assert proc.wait(timeout=60) == 0
    first, second = lock.read_text(encoding="utf-8").splitlines()
    assert first.endswith(f" pid {os.getpid()} made the jars")
    stamp, pid, seconds = second.split(" ", 1)[0], second.split(" pid ", 1)[1].split()[0], second.split(" waited ")[1]
    assert int(pid) == proc.pid and seconds.endswith(" s for the lock (the test's jars)")
    assert float(seconds.split()[0]) >= 1.0
    assert dt.datetime.fromisoformat(stamp) > dt.datetime.fromisoformat(first.split(" ", 1)[0])


def test_delta_jars_env_is_used_as_is_and_an_empty_one_is_an_error(tmp_path, monkeypatch):
    for name in ("delta-spark.jar", "delta-storage.jar"):
        (tmp_path / name).write_bytes(b"")
    monkeypatch.setenv(spark_config.DELTA_JARS_ENV, str(tmp_path))
    monkeypatch.setenv(jars.JARS_DIR_ENV, str(tmp_path / "never-used"))
    assert jars.delta_jars() == [str(tmp_path / "delta-spark.jar"), str(tmp_path / "delta-storage.jar")]
    assert jars.planned_delta_folder() == tmp_path
    assert not (tmp_path / "never-used").exists()
    monkeypatch.setenv(spark_config.DELTA_JARS_ENV, str(tmp_path / "empty"))
    with pytest.raises(jars.JarResolutionError, match="no \\*.jar is there"):
        jars.delta_jars()


def test_cli_jars_path_and_fetch(tmp_path):
    env = {jars.JARS_DIR_ENV: str(tmp_path / "jars"), spark_config.DELTA_JARS_ENV: ""}
    missing = _cli("path", env=env)
    folder = tmp_path / "jars" / jars.folder_name(DELTA)
    assert missing.returncode == 1 and missing.stdout.strip() == str(folder)
    assert "dq-contracts jars fetch" in missing.stderr

    fetched = _cli("fetch", "--dir", str(tmp_path / "other"), env=env)
    assert fetched.returncode == 0, fetched.stderr
    other = tmp_path / "other" / jars.folder_name(DELTA)
    assert fetched.stdout.strip() == str(other) and jars.complete_jars(other)
    assert f"resolving {DELTA}" in fetched.stderr
    # Fetched already: nothing is resolved, and nothing says it is.
    again = _cli("fetch", "--dir", str(tmp_path / "other"), env=env)
    assert again.returncode == 0 and again.stdout.strip() == str(other)
    assert "resolving" not in again.stderr
    assert f"{len(jars.complete_jars(other) or [])} jars already there" in again.stderr

    listed = _cli("path", "--dir", str(tmp_path / "other"), "--list", env=env)
    assert listed.returncode == 0
    assert listed.stdout.split() == [str(other)] + [str(p) for p in jars.complete_jars(other)]
