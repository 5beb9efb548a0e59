"""What the contract parsers share: the located-issue collector of one document, and "did you mean" hints.

Example::

    >>> similar("maxx", ("max", "min"))
    " (did you mean 'max'?)"
"""

from __future__ import annotations

from typing import Any

from .errors import ValidationIssue
from .yamlsrc import Path, SourceMap, format_path

__all__ = ["ParseContext", "read_null_values", "similar"]


def similar(word: str, options: Any) -> str:
    """A " (did you mean ...?)" hint for an unknown word, or "" when nothing is close."""
    import difflib

    close = difflib.get_close_matches(str(word), [str(o) for o in options], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


class ParseContext:
    """Collects issues for one document; knows the line of every path."""

    def __init__(self, smap: SourceMap):
        self.smap = smap
        self.issues: list[ValidationIssue] = []

    def add(self, path: Path, message: str) -> None:
        self.issues.append(ValidationIssue(self.smap.file, self.smap.line(path), format_path(path), message))

    def keys(self, data: dict, allowed: tuple[str, ...], path: Path, what: str) -> None:
        for key in data:
            if not isinstance(key, str):
                self.add(path + (key,), f"keys must be strings, got {key!r}")
            elif key not in allowed and not key.startswith("x-"):
                self.add(
                    path + (key,),
                    f"unknown key {key!r} in {what}{similar(key, allowed)}; allowed: {', '.join(allowed)}",
                )

    def string(self, data: dict, key: str, path: Path, required: bool = False) -> str | None:
        value = data.get(key)
        if value is None:
            if required:
                self.add(path + (key,) if key in data else path, f"'{key}' is required")
            return None
        if not isinstance(value, str) or (required and not value.strip()):
            self.add(path + (key,), f"'{key}' must be a non-empty string, got {value!r}")
            return None
        return value

    def mapping(self, value: Any, path: Path, what: str) -> dict | None:
        """``value`` when it is a mapping; None when absent, or (with the issue added) when not a mapping."""
        return value if self._is(dict, "a mapping", value, path, what) else None

    def list_item(self, raw: Any, path: Path, what: str, needs: str) -> dict | None:
        """A list entry that must be a mapping (``what`` with ``needs``), or None with the issue added."""
        if raw is None:
            self.add(path, f"empty list item: {what} must be a mapping with {needs}")
            return None
        return self.mapping(raw, path, what)

    def seq(self, value: Any, path: Path, what: str) -> list | None:
        """``value`` when it is a list; None when absent, or (with the issue added) when not a list."""
        return value if self._is(list, "a list", value, path, what) else None

    def _is(self, kind: type, described: str, value: Any, path: Path, what: str) -> bool:
        if value is None:
            return False
        if not isinstance(value, kind):
            self.add(path, f"{what} must be {described}, got {type(value).__name__}")
            return False
        return True

    def str_list(self, value: Any, path: Path, what: str) -> tuple[str, ...]:
        items = self.seq(value, path, what)
        if items is None:
            return ()
        out = []
        for index, item in enumerate(items):
            if not isinstance(item, str) or not item:
                self.add(path + (index,), f"{what} entries must be non-empty strings, got {item!r}")
            else:
                out.append(item)
        return tuple(out)


def read_null_values(value: Any, add: Any) -> tuple[str, ...]:
    """``null_values`` (of ``dataset`` or a reference): a list of distinct strings; ``add(sub_path, message)``.

    YAML reads a bare ``null`` as no value and ``-999`` as a number: both must be quoted.

    >>> problems = []
    >>> read_null_values(["NA", "N/A", "", None, -999], lambda path, message: problems.append((path, message)))
    ('NA', 'N/A', '')
    >>> for path, message in problems: print(path, message)
    (3,) 'null_values' entries are strings; got None (write it quoted: "null")
    (4,) 'null_values' entries are strings; got -999 (write it quoted: "-999")
    """
    if value is None:
        return ()
    if not isinstance(value, list):
        add((), f"'null_values' must be a list of strings like [NA, \"N/A\"], got {value!r}")
        return ()
    out: list[str] = []
    for index, item in enumerate(value):
        if not isinstance(item, str):
            written = "null" if item is None else str(item).lower() if isinstance(item, bool) else str(item)
            add((index,), f"'null_values' entries are strings; got {item!r} (write it quoted: \"{written}\")")
        elif item in out:
            add((index,), f"{item!r} is listed twice in 'null_values'")
        else:
            out.append(item)
    return tuple(out)
