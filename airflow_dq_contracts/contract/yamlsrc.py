"""Safe YAML reading that remembers the line of every node, so errors can point at it."""

from __future__ import annotations

import dataclasses
from typing import Any

import yaml

Path = tuple[Any, ...]  # ("columns", 2, "checks", 0, "between")


def format_path(path: Path) -> str:
    """``("columns", 2, "checks", 0, "between")`` → ``columns[2].checks[0].between``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


@dataclasses.dataclass
class SourceMap:
    """Line numbers (1-based) of every key and item of a parsed document."""

    file: str
    lines: dict[Path, int] = dataclasses.field(default_factory=dict)

    def line(self, path: Path) -> int | None:
        """Line of ``path``, or of its nearest ancestor that has one."""
        probe = tuple(path)
        while True:
            if probe in self.lines:
                return self.lines[probe]
            if not probe:
                return None
            probe = probe[:-1]


# Values built by re-expanding an alias (an anchored node built again): far above any real document's
# reuse, and it stops a "billion laughs" document. Plain values are not counted: a large file of plain
# rules is not a bomb.
MAX_NODES = 200_000


class YamlSyntaxError(ValueError):
    """The text is not YAML (or uses a non-safe construct); carries the line."""

    def __init__(self, message: str, line: int | None):
        super().__init__(message)
        self.line = line


# libyaml's parser (when PyYAML has it) composes several times faster; construction stays PyYAML's safe one.
class _Builder(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    pass


_PLAIN_COLLECTION_TAGS: dict[type[yaml.Node], str] = {
    yaml.MappingNode: "tag:yaml.org,2002:map",
    yaml.SequenceNode: "tag:yaml.org,2002:seq",
}


def _refuse_foreign_tag(node: yaml.Node, loader: yaml.SafeLoader) -> None:
    """Refuse explicit non-plain tags (``!!python/object:…``, ``!include``).

    The node-by-node builder constructs mappings and sequences itself, so the safe loader never sees
    their tags: without this, ``!!python/object:os.system {…}`` would silently load as a plain dict.
    """
    plain = _PLAIN_COLLECTION_TAGS.get(type(node))
    allowed = node.tag == plain if plain else node.tag in loader.yaml_constructors
    if not allowed:
        raise yaml.constructor.ConstructorError(
            None,
            None,
            f"the tag {node.tag!r} is not allowed (contracts are plain YAML, read with a safe loader)",
            node.start_mark,
        )


def load_yaml(text: str, file: str) -> tuple[Any, SourceMap, list[tuple[Path, str]]]:
    """Parse ``text`` with the safe loader.

    Returns ``(data, source_map, duplicate_key_problems)``. Raises :class:`YamlSyntaxError`.
    """
    smap = SourceMap(file)
    duplicates: list[tuple[Path, str]] = []
    loader = _Builder(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, smap, duplicates

        own_keys: dict[int, set[int]] = {}  # mapping node → its key nodes written in place (not merged)
        active: set[int] = set()  # collection nodes being built: an alias back into one is a cycle
        seen: set[int] = set()  # nodes built once: building one again is an alias expansion
        built = [0]

        def build(n: yaml.Node, path: Path) -> Any:
            smap.lines.setdefault(path, n.start_mark.line + 1)
            _refuse_foreign_tag(n, loader)
            if id(n) in seen:
                built[0] += 1
                if built[0] > MAX_NODES:
                    raise yaml.constructor.ConstructorError(
                        None,
                        None,
                        f"the document expands to more than {MAX_NODES} values through aliases",
                        n.start_mark,
                    )
            else:
                seen.add(id(n))
            if isinstance(n, (yaml.MappingNode, yaml.SequenceNode)):
                if id(n) in active:
                    raise yaml.constructor.ConstructorError(
                        None, None, "recursive alias: a value contains itself", n.start_mark
                    )
                active.add(id(n))
                try:
                    return (
                        build_mapping(n, path)
                        if isinstance(n, yaml.MappingNode)
                        else [build(item, path + (index,)) for index, item in enumerate(n.value)]
                    )
                finally:
                    active.discard(id(n))
            if n.tag == "tag:yaml.org,2002:str":
                return n.value  # the common case, without the constructor's bookkeeping
            return loader.construct_object(n, deep=True)

        def build_mapping(n: yaml.MappingNode, path: Path) -> dict[Any, Any]:
            if id(n) not in own_keys:
                own_keys[id(n)] = {id(k) for k, _ in n.value if k.tag != "tag:yaml.org,2002:merge"}
                loader.flatten_mapping(n)
            own = own_keys[id(n)]
            result: dict[Any, Any] = {}
            written: set[Any] = set()
            for key_node, value_node in n.value:
                key = loader.construct_object(key_node, deep=True)
                if isinstance(key, (list, dict)):
                    key = str(key)
                child = path + (key,)
                smap.lines[child] = key_node.start_mark.line + 1
                if key in written and id(key_node) in own:
                    duplicates.append((child, f"duplicate key {key!r}"))
                    continue
                # Otherwise a value merged in with '<<' is overridden by a later one (YAML merge keys).
                result[key] = build(value_node, child)
                if id(key_node) in own:
                    written.add(key)
            return result

        data = build(node, ())
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        # An unclosed quote or bracket is only noticed at the end of the text, past the last line;
        # the line where the construct started is the one the author has to fix.
        if exc.context_mark is not None and (mark is None or mark.index >= len(text.rstrip())):
            mark = exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        if exc.context and exc.problem and exc.context_mark is not None:
            problem += f" ({exc.context} started at line {exc.context_mark.line + 1})"
        raise YamlSyntaxError(f"invalid YAML: {problem}", line) from None
    except RecursionError:
        raise YamlSyntaxError("invalid YAML: nested too deeply", None) from None
    except yaml.YAMLError as exc:  # pragma: no cover - other YAML errors carry no mark
        raise YamlSyntaxError(f"invalid YAML: {exc}", None) from None
    finally:
        loader.dispose()
    return data, smap, duplicates
