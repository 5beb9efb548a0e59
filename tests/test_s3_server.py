"""The tests' S3 server is a real object store that enforces conditional writes.

What delta-rs's commits on S3 rely on: creating ``_delta_log/<version>.json`` with
``If-None-Match: *`` fails with 412 when another writer created it first. If the server ignored
the header, the concurrency test (tests/test_s3_concurrency.py) could not fail; this proves it can.
"""

from __future__ import annotations

import concurrent.futures

from s3_fixtures import S3Place, request

from airflow_dq_contracts.storage.s3 import S3Settings


def test_put_if_absent_on_an_existing_key_is_refused(s3: S3Place) -> None:
    key = f"{s3.prefix}/_delta_log/00000000000000000000.json"
    assert s3.server.put_object(key, b"first", if_none_match=True) == 200
    assert s3.server.put_object(key, b"second", if_none_match=True) == 412
    assert s3.server.get_object(key) == (200, b"first")
    # Without the condition the same PUT overwrites: the 412 above is the header's doing.
    assert s3.server.put_object(key, b"third") == 200
    assert s3.server.get_object(key) == (200, b"third")


def test_racing_creators_of_one_key_one_wins(s3: S3Place) -> None:
    key = f"{s3.prefix}/race.json"
    bodies = [f"writer-{i}".encode() for i in range(8)]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(lambda b: s3.server.put_object(key, b, if_none_match=True), bodies))
    assert sorted(statuses) == [200] + [412] * 7
    winner = bodies[statuses.index(200)]
    assert s3.server.get_object(key) == (200, winner)


def test_a_wrong_secret_is_refused(s3: S3Place) -> None:

    wrong = S3Settings(
        access_key_id=s3.settings.access_key_id,
        secret_access_key="not-the-secret",
        endpoint_url=s3.settings.endpoint_url,
    )
    status, _ = request("PUT", f"{s3.server.endpoint}/{s3.server.bucket}/{s3.prefix}/x", wrong, b"x")
    assert status == 403
