"""Delta deletion vectors, decoded in plain Python: which rows of a data file a ``DELETE`` removed.

A deletion vector descriptor (the ``deletionVector`` of an add action) is stored

* inline (``storageType`` ``i``): ``pathOrInlineDv`` is the Z85-encoded bitmap;
* in a file next to the table (``u``): ``pathOrInlineDv`` is an optional folder prefix and a
  Z85-encoded UUID, the file ``<prefix>/deletion_vector_<uuid>.bin``; the bitmap starts at ``offset``
  (a 4-byte big-endian size, the bitmap, a CRC-32);
* at an absolute path (``p``), laid out as ``u``.

The bitmap is Delta's ``RoaringBitmapArray``: a little-endian magic number, the count of 32-bit Roaring
bitmaps, then each bitmap's high 32 bits and its standard portable Roaring serialisation (array,
bitmap and run containers). Only the row positions are decoded; nothing else of Roaring is needed.

Example::

    >>> z85_decode("HelloWorld").hex()
    '864fd26fb559f75b'
    >>> sorted(deleted_rows({"storageType": "i", "pathOrInlineDv": _INLINE_EXAMPLE, "cardinality": 3}, "/t"))
    [0, 2, 70000]
"""

from __future__ import annotations

import posixpath
import struct
import uuid
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["DeletionVectorError", "deleted_rows", "dv_file_path", "dv_key", "z85_decode"]

_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_VALUE = {c: i for i, c in enumerate(_Z85)}
_MAGIC = 1681511377  # RoaringBitmapArray, portable serialisation
_SERIAL_COOKIE_NO_RUN = 12346
_SERIAL_COOKIE = 12347
_NO_OFFSET_THRESHOLD = 4


class DeletionVectorError(ValueError):
    """A deletion vector that cannot be read or decoded here (the message says why)."""


def z85_decode(text: str) -> bytes:
    """Z85 (ZeroMQ base-85) text as bytes; its length must be a multiple of 5."""
    if len(text) % 5:
        raise DeletionVectorError(f"Z85 text of length {len(text)} is not a multiple of 5")
    out = bytearray()
    for start in range(0, len(text), 5):
        value = 0
        for char in text[start : start + 5]:
            if char not in _Z85_VALUE:
                raise DeletionVectorError(f"{char!r} is not a Z85 character")
            value = value * 85 + _Z85_VALUE[char]
        out += value.to_bytes(4, "big")
    return bytes(out)


def dv_key(descriptor: Mapping[str, Any] | None) -> str | None:
    """The deletion vector's identity (Delta's ``uniqueId``), part of a data file's identity in the log."""
    if not descriptor:
        return None
    offset = descriptor.get("offset")
    tail = "" if offset is None else f"@{offset}"
    return f"{descriptor.get('storageType')}{descriptor.get('pathOrInlineDv')}{tail}"


def dv_file_path(descriptor: Mapping[str, Any], table_root: str) -> str:
    """Where a ``u`` or ``p`` deletion vector is stored (``table_root`` joined for ``u``)."""
    kind, value = descriptor.get("storageType"), str(descriptor.get("pathOrInlineDv") or "")
    if kind == "p":
        return value
    if kind != "u" or len(value) < 20:
        raise DeletionVectorError(f"deletion vector storage type {kind!r} with {value!r} is not a file")
    prefix, encoded = value[:-20], value[-20:]
    name = f"deletion_vector_{uuid.UUID(bytes=z85_decode(encoded))}.bin"
    return posixpath.join(table_root.rstrip("/"), prefix, name) if prefix else posixpath.join(table_root, name)


def deleted_rows(
    descriptor: Mapping[str, Any], table_root: str, read_bytes: Callable[[str, int, int], bytes] | None = None
) -> set[int]:
    """Row positions (0-based, within the data file) the deletion vector removes.

    ``read_bytes(path, offset, length)`` reads part of a file (``u``/``p`` vectors); the decoded count
    must equal the descriptor's ``cardinality``.
    """
    kind = descriptor.get("storageType")
    if kind == "i":
        data = z85_decode(str(descriptor.get("pathOrInlineDv") or ""))
    elif kind in ("u", "p"):
        if read_bytes is None:
            raise DeletionVectorError("a deletion vector file needs a reader")
        path = dv_file_path(descriptor, table_root)
        offset = int(descriptor.get("offset") or 0)
        size = int(descriptor["sizeInBytes"])
        raw = read_bytes(path, offset, size + 4)
        if len(raw) < size + 4 or struct.unpack(">i", raw[:4])[0] != size:
            raise DeletionVectorError(f"{path} at offset {offset} does not hold a deletion vector of {size} bytes")
        data = raw[4 : 4 + size]
    else:
        raise DeletionVectorError(f"unknown deletion vector storage type {kind!r}")
    rows = _roaring_array(data)
    cardinality = descriptor.get("cardinality")
    if cardinality is not None and len(rows) != int(cardinality):
        raise DeletionVectorError(f"decoded {len(rows)} deleted rows where the log says {cardinality}")
    return rows


def _roaring_array(data: bytes) -> set[int]:
    if len(data) < 12 or struct.unpack_from("<i", data, 0)[0] != _MAGIC:
        raise DeletionVectorError("not a RoaringBitmapArray (wrong magic number)")
    (count,) = struct.unpack_from("<q", data, 4)
    position = 12
    rows: set[int] = set()
    for _ in range(count):
        (high,) = struct.unpack_from("<I", data, position)
        position = _roaring32(data, position + 4, high << 32, rows)
    return rows


def _roaring32(data: bytes, position: int, high: int, rows: set[int]) -> int:
    """Decode one portable 32-bit Roaring bitmap at ``position`` into ``rows``; the position after it."""
    (cookie,) = struct.unpack_from("<I", data, position)
    position += 4
    run_flags = b""
    if cookie & 0xFFFF == _SERIAL_COOKIE:
        size = (cookie >> 16) + 1
        run_flags = data[position : position + (size + 7) // 8]
        position += (size + 7) // 8
    elif cookie == _SERIAL_COOKIE_NO_RUN:
        (size,) = struct.unpack_from("<I", data, position)
        position += 4
    else:
        raise DeletionVectorError(f"unknown Roaring cookie {cookie}")
    header = struct.unpack_from(f"<{2 * size}H", data, position)
    position += 4 * size
    if not run_flags or size >= _NO_OFFSET_THRESHOLD:
        position += 4 * size  # container offsets: the containers follow in order anyway
    for index in range(size):
        base = high | (header[2 * index] << 16)
        cardinality = header[2 * index + 1] + 1
        if run_flags and run_flags[index // 8] >> (index % 8) & 1:
            (runs,) = struct.unpack_from("<H", data, position)
            pairs = struct.unpack_from(f"<{2 * runs}H", data, position + 2)
            position += 2 + 4 * runs
            for start, length in zip(pairs[::2], pairs[1::2]):
                rows.update(range(base | start, (base | start) + length + 1))
        elif cardinality > 4096:
            words = data[position : position + 8192]
            position += 8192
            for byte_index, byte in enumerate(words):
                if byte:
                    rows.update(base | (byte_index * 8 + bit) for bit in range(8) if byte >> bit & 1)
        else:
            values = struct.unpack_from(f"<{cardinality}H", data, position)
            position += 2 * cardinality
            rows.update(base | value for value in values)
    return position


def _inline_example() -> str:
    """A RoaringBitmapArray of rows 0, 2 and 70000, Z85-encoded (the doctest's inline vector)."""
    body = struct.pack("<IIHHHH", _SERIAL_COOKIE_NO_RUN, 2, 0, 1, 1, 0) + struct.pack("<II", 0, 0)
    body += struct.pack("<HH", 0, 2) + struct.pack("<H", 70000 - 65536)
    data = struct.pack("<iq", _MAGIC, 1) + struct.pack("<I", 0) + body
    data += b"\0" * (-len(data) % 4)
    out = []
    for start in range(0, len(data), 4):
        value = int.from_bytes(data[start : start + 4], "big")
        chars = []
        for _ in range(5):
            value, rest = divmod(value, 85)
            chars.append(_Z85[rest])
        out.append("".join(reversed(chars)))
    return "".join(out)


_INLINE_EXAMPLE = _inline_example()
