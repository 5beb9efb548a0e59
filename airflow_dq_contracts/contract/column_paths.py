"""Column paths: how a contract names a nested field (plain Python; the Spark side is :mod:`engine.column_paths`).

A column name is a *path* of steps (DESIGN §10, docs/contracts.md "Nested fields"):

* ``address.city`` — the field ``city`` of the struct column ``address`` (dots separate fields);
* ```a.b``` — a name that itself contains a dot (or ``[``, ``]``, a backtick) is written in
  backticks; a backtick inside backticks is doubled (````` `` `````);
* ``items[]`` — every element of the array ``items``; ``items[].sku`` — the field ``sku`` of every
  element (an array of structs); a check on such a path fails a row when ANY element fails;
* ``attrs[color]`` — the value of the map ``attrs`` under the key ``color`` (the key is the text up
  to ``]``; ``attrs['a]b']`` quotes a key with ``]`` in single or double quotes).

Example::

    >>> [str(s) for s in parse_path("address.`zip.code`")]
    ['address', '`zip.code`']
    >>> [s.kind for s in parse_path("items[].sku")]
    ['field', 'elements', 'field']
    >>> parse_path("attrs['a]b']")[1].name
    'a]b'
    >>> format_path(parse_path("a.`b.c`[]"))
    'a.`b.c`[]'
    >>> is_nested("address.city"), is_nested("`a.b`"), top_name("`a.b`[]")
    (True, False, 'a.b')
"""

from __future__ import annotations

import dataclasses

FIELD, ELEMENTS, KEY = "field", "elements", "key"
_SPECIAL = set(".[]`")


@dataclasses.dataclass(frozen=True)
class Step:
    """One step of a path: a struct ``field`` (or the top-level column), every array ``elements``, a map ``key``."""

    kind: str
    name: str = ""

    def __str__(self) -> str:
        if self.kind == ELEMENTS:
            return "[]"
        if self.kind == KEY:
            return f"[{self.name}]" if "]" not in self.name else f"['{self.name}']"
        return quote_name(self.name)


def quote_name(name: str) -> str:
    """A field name as written in a path: backticks when it holds ``.``, ``[``, ``]`` or a backtick.

    >>> quote_name("city"), quote_name("a.b"), quote_name("a`b")
    ('city', '`a.b`', '`a``b`')
    """
    if name and not (_SPECIAL & set(name)):
        return name
    return "`" + name.replace("`", "``") + "`"


def parse_path(text: str) -> tuple[Step, ...]:
    """The steps of a column path; ValueError saying what is wrong with the text."""
    steps: list[Step] = []
    i, n = 0, len(text)
    expect_field = True
    while i < n:
        char = text[i]
        if expect_field:
            if char == "`":
                name, i = _backticked(text, i)
            else:
                j = i
                while j < n and text[j] not in _SPECIAL:
                    j += 1
                name, i = text[i:j], j
                if not name:
                    raise ValueError(f"column path {text!r}: empty field name at position {i}")
            steps.append(Step(FIELD, name))
            expect_field = False
        elif char == ".":
            i += 1
            expect_field = True
            if i == n:
                raise ValueError(f"column path {text!r} ends with '.'")
        elif char == "[":
            close = _closing(text, i)
            inner = text[i + 1 : close]
            if inner == "":
                steps.append(Step(ELEMENTS))
            else:
                if len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "'\"":
                    inner = inner[1:-1]
                steps.append(Step(KEY, inner))
            i = close + 1
        else:
            raise ValueError(
                f"column path {text!r}: unexpected {char!r} at position {i} (names with it go in backticks)"
            )
    if not steps:
        raise ValueError("empty column path")
    return tuple(steps)


def _backticked(text: str, start: int) -> tuple[str, int]:
    """The name inside backticks starting at ``start`` and the position after the closing one."""
    out, i = [], start + 1
    while i < len(text):
        if text[i] == "`":
            if text[i + 1 : i + 2] == "`":
                out.append("`")
                i += 2
                continue
            if not out:
                raise ValueError(f"column path {text!r}: empty name in backticks")
            return "".join(out), i + 1
        out.append(text[i])
        i += 1
    raise ValueError(f"column path {text!r}: unclosed backtick")


def _closing(text: str, start: int) -> int:
    """The index of the ``]`` closing the ``[`` at ``start`` (a quoted key may hold ``]``)."""
    quote = text[start + 1 : start + 2]
    if quote in ("'", '"'):
        end = text.find(quote + "]", start + 2)
        if end >= 0:
            return end + 1
    end = text.find("]", start)
    if end < 0:
        raise ValueError(f"column path {text!r}: unclosed '['")
    return end


def format_path(steps: tuple[Step, ...] | list[Step]) -> str:
    """The canonical text of a path (the inverse of :func:`parse_path`)."""
    out = ""
    for step in steps:
        if step.kind == FIELD and out:
            out += "."
        out += str(step)
    return out


def try_parse(text: str) -> tuple[Step, ...] | None:
    """:func:`parse_path`, or None when the text is not a valid path."""
    try:
        return parse_path(text)
    except ValueError:
        return None


def is_nested(text: str) -> bool:
    """Whether ``text`` names something below a top-level column (more than one step)."""
    steps = try_parse(text)
    return steps is not None and len(steps) > 1


def has_elements(text: str) -> bool:
    """Whether the path passes through every element of an array (``[]``)."""
    steps = try_parse(text)
    return steps is not None and any(s.kind == ELEMENTS for s in steps)


def top_name(text: str) -> str:
    """The top-level column a path starts from (the whole text when it is not a valid path)."""
    steps = try_parse(text)
    return steps[0].name if steps else text


def parent(text: str) -> str | None:
    """The path one field up (``a.b[].c`` → ``a.b``; ``a`` → None)."""
    steps = try_parse(text)
    if not steps or len(steps) == 1:
        return None
    cut = list(steps[:-1])
    while len(cut) > 1 and cut[-1].kind == ELEMENTS:
        cut.pop()
    return format_path(cut)
