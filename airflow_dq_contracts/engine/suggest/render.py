"""Write a :class:`~.rules.Draft` as YAML with its evidence in comments (plain Python).

Block style for mappings and lists of mappings, flow style for short lists (``[a, b]``) and type
mappings; every scalar is quoted by PyYAML's safe dumper, so a value such as ``yes``, ``1e3`` or
``a: b`` reads back as the same string. Comments sit on the lines above the element they explain.

Example::

    text = render_yaml(draft)
    load_contract(text)     # the draft as a contract (suggest() checks this before returning)
"""

from __future__ import annotations

from typing import Any

import yaml

from .rules import Draft


def scalar(value: Any) -> str:
    """One YAML scalar or flow collection, as the safe dumper writes it.

    >>> scalar("yes"), scalar(3), scalar("a b"), scalar(["x", "on"])
    ("'yes'", '3', 'a b', "[x, 'on']")
    """
    text = yaml.safe_dump(value, default_flow_style=True, width=1_000_000, allow_unicode=True).strip()
    if text.endswith("\n..."):
        text = text[: -len("\n...")].strip()
    elif text.endswith("..."):
        text = text[: -len("...")].strip()
    return text


def _is_block(value: Any) -> bool:
    if isinstance(value, dict):
        return not ("kind" in value and all(not isinstance(v, (dict, list)) or _is_flat(v) for v in value.values()))
    if isinstance(value, list):
        return any(isinstance(item, dict) for item in value)
    return False


def _is_flat(value: Any) -> bool:
    if isinstance(value, dict):
        return all(not isinstance(v, (dict, list)) for v in value.values())
    return not isinstance(value, (dict, list))


def _comments(draft: Draft, path: tuple[Any, ...], indent: str, out: list[str]) -> None:
    for line in draft.comments.get(path, []):
        out.append(f"{indent}# {line}")


def _mapping(
    draft: Draft, data: dict[str, Any], path: tuple[Any, ...], indent: str, out: list[str], first: str = ""
) -> None:
    """``data`` as block lines; with ``first`` (``"- "``), its first key shares the list item's line."""
    for position, (key, value) in enumerate(data.items()):
        if position == 0 and first:
            prefix = first  # its comments were written above the "- " line by the caller
        else:
            _comments(draft, path + (key,), indent, out)
            prefix = indent
        if _is_block(value):
            out.append(f"{prefix}{scalar(key)}:")
            _block(draft, value, path + (key,), indent + "  ", out)
        else:
            out.append(f"{prefix}{scalar(key)}: {scalar(value)}")


def _block(draft: Draft, value: Any, path: tuple[Any, ...], indent: str, out: list[str]) -> None:
    if isinstance(value, dict):
        _mapping(draft, value, path, indent, out)
        return
    for index, item in enumerate(value):
        _comments(draft, path + (index,), indent, out)
        if isinstance(item, dict) and item:
            keys = list(item)
            # comments of the first key go above the "- " line (they cannot sit inside it)
            _comments(draft, path + (index, keys[0]), indent, out)
            _mapping(draft, item, path + (index,), indent + "  ", out, first=f"{indent}- ")
        else:
            out.append(f"{indent}- {scalar(item)}")


def render_yaml(draft: Draft) -> str:
    """The draft as commented YAML text (ends with a newline)."""
    out = [f"# {line}" for line in draft.header]
    for key, value in draft.document.items():
        if out and key in ("columns", "checks", "sla", "dataset", "metadata"):
            out.append("")
        _comments(draft, (key,), "", out)
        if _is_block(value):
            out.append(f"{scalar(key)}:")
            _block(draft, value, (key,), "  ", out)
        else:
            out.append(f"{scalar(key)}: {scalar(value)}")
    return "\n".join(out) + "\n"
