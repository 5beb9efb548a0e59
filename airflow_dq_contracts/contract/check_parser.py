"""Parse the checks of a contract (a column's or the table's): type, parameters, validator, severity, action.

Part of :func:`airflow_dq_contracts.contract.loader.load_contract`: every problem is added, located, to the
document's :class:`~airflow_dq_contracts.contract.parsing.ParseContext`; a check that cannot be built is left
out (the load fails with every issue at once).
"""

from __future__ import annotations

import math
from typing import Any

from . import checks as registry
from .baseline import expand_drift, parse_baseline
from .model import ACTIONS, DEFAULT_SEVERITY, SEVERITIES, Check
from .parsing import ParseContext, similar
from .validators import DEFAULT_TOLERANCE, Validator, slug
from .yamlsrc import Path, format_path

__all__ = ["parse_checks"]


def parse_checks(ctx: ParseContext, raw: Any, path: Path, column: str | None, policy: dict) -> list[Check]:
    items = ctx.seq(raw, path, "'checks'") or []
    out: list[Check] = []
    names: dict[str, int] = {}
    ids: dict[str, int] = {}
    for index, item in enumerate(items):
        check = _check(ctx, item, path + (index,), column, policy)
        if check is None:
            continue
        scope = f"column {column!r}" if column else "the table-level checks"
        if check.name in names:
            ctx.add(
                path + (index, "name"),
                f"two checks named {check.name!r} in {scope} "
                f"(first at {format_path(path + (names[check.name],))}); "
                "their check_id would collide",
            )
        elif check.check_id in ids:
            ctx.add(
                path + (index, "name"),
                f"check name {check.name!r} gives the same check_id "
                f"{check.check_id!r} as {format_path(path + (ids[check.check_id],))}",
            )
        names.setdefault(check.name, index)
        ids.setdefault(check.check_id, index)
        out.extend(expand_drift(check) if check.type == "drift" else [check])
    return out


def _number(ctx: ParseContext, value: Any, path: Path, what: str) -> float | None:
    if not registry.is_number(value):
        ctx.add(path, f"{what} must be a number, got {value!r}")
        return None
    return float(value)


def _validator(
    ctx: ParseContext, data: dict, path: Path, ctype: registry.CheckType, params: dict[str, Any]
) -> Validator | None:
    present = [k for k in registry.VALIDATOR_KEYS if k in data]
    tolerance = DEFAULT_TOLERANCE
    if "tolerance" in data:
        value = _number(ctx, data["tolerance"], path + ("tolerance",), "'tolerance'")
        if value is not None and value < 0:
            ctx.add(path + ("tolerance",), f"'tolerance' must not be negative, got {data['tolerance']!r}")
        elif value is not None:
            tolerance = value
    if not ctype.validators and present:
        uses = {
            "max_age_hours": "it is validated by 'max_age_hours'",
            "max_gap_count": "it is validated by 'max_gap_count'",
            "drift": "it is validated by 'max_sigma'",
        }.get(ctype.implicit or "", "it passes when its condition is true")
        ctx.add(path + (present[0],), f"'{ctype.name}' takes no validator ({', '.join(present)}); {uses}")
        return None
    if len(present) > 1:
        ctx.add(path + (present[1],), f"only one validator per check; found {', '.join(present)}")
        return None
    if not present:
        try:
            return registry.implicit_validator(ctype, params, tolerance)
        except (KeyError, TypeError, ValueError):
            return None  # a required parameter is missing or wrong: already reported
    kind = present[0]
    raw = data[kind]
    where = path + (kind,)
    if kind in ("between", "not_between"):
        if not isinstance(raw, list) or len(raw) != 2:
            ctx.add(where, f"'{kind}' needs a list of two numbers [low, high], got {raw!r}")
            return None
        low = _number(ctx, raw[0], where + (0,), f"'{kind}' bounds")
        high = _number(ctx, raw[1], where + (1,), f"'{kind}' bounds")
        if low is None or high is None:
            return None
        if low > high:
            ctx.add(where, f"'{kind}' low bound {raw[0]!r} is greater than high bound {raw[1]!r}")
            return None
        return Validator(kind, low=low, high=high, tolerance=tolerance)
    value = _number(ctx, raw, where, f"'{kind}'")
    if value is None:
        return None
    if kind == "max":
        return Validator("max", high=value, tolerance=tolerance)
    return Validator(kind, low=value, tolerance=tolerance)


def _param_value(ctx: ParseContext, param: registry.Param, value: Any, path: Path) -> Any:
    kind = param.kind
    if kind == "bool":
        if not isinstance(value, bool):
            ctx.add(path, f"'{param.name}' must be true or false, got {value!r}")
            return param.default
        return value
    if kind in ("number", "int"):
        if kind == "int" and not (isinstance(value, int) and not isinstance(value, bool)):
            ctx.add(path, f"'{param.name}' must be an integer, got {value!r}")
            return None
        if not registry.is_number(value):
            ctx.add(path, f"'{param.name}' must be a number, got {value!r}")
            return None
        if param.minimum is not None and value < param.minimum:
            ctx.add(path, f"'{param.name}' must be ≥ {param.minimum:g}, got {value!r}")
            return None
        if param.exclusive_minimum and param.minimum is not None and value <= param.minimum:
            ctx.add(path, f"'{param.name}' must be > {param.minimum:g}, got {value!r}")
            return None
        if param.maximum is not None and value > param.maximum:
            bound = (
                f"in [{param.minimum:g}, {param.maximum:g}]" if param.minimum is not None else f"≤ {param.maximum:g}"
            )
            ctx.add(path, f"'{param.name}' must be {bound}, got {value!r}")
            return None
        return value
    if kind == "str":
        if not isinstance(value, str) or not value:
            ctx.add(path, f"'{param.name}' must be a non-empty string, got {value!r}")
            return None
        return value
    if kind == "choice":
        if value not in param.choices:
            ctx.add(
                path,
                f"unknown {param.name} {value!r}{similar(value, param.choices)}; allowed: {', '.join(param.choices)}",
            )
            return None
        return value
    if kind == "str_list":
        if not isinstance(value, list) or not value:
            ctx.add(path, f"'{param.name}' must be a non-empty list of column names, got {value!r}")
            return None
        return list(ctx.str_list(value, path, f"'{param.name}'"))
    if kind == "value_list":
        if not isinstance(value, list) or not value:
            ctx.add(path, f"'{param.name}' must be a non-empty list, got {value!r}")
            return None
        for index, item in enumerate(value):
            if item is None or isinstance(item, (list, dict)) or (isinstance(item, float) and math.isnan(item)):
                ctx.add(path + (index,), f"'{param.name}' entries must be strings, numbers or booleans, got {item!r}")
        return list(value)
    if kind == "mapping":
        if not isinstance(value, dict):
            ctx.add(path, f"'{param.name}' must be a mapping, got {value!r}")
            return None
        return dict(value)
    if kind == "flags":
        if not isinstance(value, list):
            ctx.add(path, f"'{param.name}' must be a list like [IGNORECASE], got {value!r}")
            return ()
        flags = []
        for index, item in enumerate(value):
            name = str(item).upper() if isinstance(item, str) else item
            if name not in registry.REGEX_FLAGS:
                ctx.add(
                    path + (index,),
                    f"unknown regex flag {item!r}{similar(item, registry.REGEX_FLAGS)}; "
                    f"allowed: IGNORECASE, MULTILINE, DOTALL, VERBOSE, UNICODE",
                )
            else:
                flags.append(name)
        return tuple(flags)
    raise AssertionError(kind)  # pragma: no cover


def _check(ctx: ParseContext, raw: Any, path: Path, column: str | None, policy: dict) -> Check | None:
    data = ctx.list_item(raw, path, "a check", "'name' and 'type'")
    if data is None:
        return None
    name = ctx.string(data, "name", path, required=True)
    type_name = data.get("type")
    level = "table" if column is None else "column"
    if not isinstance(type_name, str):
        ctx.add(
            path + ("type",) if "type" in data else path,
            "'type' is required" if type_name is None else f"'type' must be a string, got {type_name!r}",
        )
        return None
    ctype = registry.check_type(level, type_name)
    if ctype is None:
        other = "column" if level == "table" else "table"
        if registry.check_type(other, type_name) is not None:
            where = "under columns[].checks" if other == "column" else "in the top-level 'checks'"
            ctx.add(path + ("type",), f"'{type_name}' is a {other}-level check; put it {where}")
        else:
            allowed = registry.TABLE_TYPES if level == "table" else registry.COLUMN_TYPES
            ctx.add(
                path + ("type",),
                f"unknown {level}-level check type {type_name!r}"
                f"{similar(type_name, registry.TABLE_TYPES + registry.COLUMN_TYPES)}; "
                f"allowed: {', '.join(allowed)}",
            )
        return None
    allowed_keys = registry.COMMON_KEYS + tuple(p.name for p in ctype.params)
    if ctype.validators:
        allowed_keys += registry.VALIDATOR_KEYS + ("baseline",)
    # Validators on freshness/completeness get their own message in _validator.
    ctx.keys(
        {k: v for k, v in data.items() if k not in registry.VALIDATOR_KEYS or ctype.validators},
        allowed_keys,
        path,
        f"a '{type_name}' check",
    )

    params: dict[str, Any] = {}
    for param in ctype.params:
        if param.name in data and data[param.name] is not None:
            value = _param_value(ctx, param, data[param.name], path + (param.name,))
            params[param.name] = value if value is not None else param.default
            if value is None:
                params.setdefault("__invalid__", []).append(param.name)
        elif param.required:
            ctx.add(path, f"'{type_name}' check needs '{param.name}'")
            params["__invalid__"] = params.get("__invalid__", []) + [param.name]
        else:
            params[param.name] = param.default
    invalid = params.pop("__invalid__", [])
    if ctype.extra is not None and not invalid:
        ctype.extra(params, lambda sub, message: ctx.add(path + tuple(sub), message))

    validator = _validator(ctx, data, path, ctype, params) if not invalid or ctype.validators else None
    baseline = None
    if "baseline" in data and ctype.validators:
        baseline = parse_baseline(
            data["baseline"], lambda sub, message: ctx.add(path + ("baseline",) + tuple(sub), message)
        )
        static = [k for k in registry.VALIDATOR_KEYS if k in data]
        if static:
            ctx.add(
                path + (static[0],),
                f"a check with 'baseline' learns its bounds from history; remove the static validator '{static[0]}'",
            )
            return None
        if baseline is None:
            return None

    severity = data.get("severity", DEFAULT_SEVERITY)
    if not isinstance(severity, str) or severity not in SEVERITIES:
        ctx.add(path + ("severity",), f"unknown severity {severity!r}; allowed: {', '.join(SEVERITIES)}")
        severity = DEFAULT_SEVERITY
    tags = ctx.str_list(data.get("tags"), path + ("tags",), "'tags'")
    check_filter = ctx.string(data, "filter", path)
    description = ctx.string(data, "description", path)
    enabled = data.get("enabled", True)
    if not isinstance(enabled, bool):
        ctx.add(path + ("enabled",), f"'enabled' must be true or false, got {enabled!r}")
        enabled = True
    if name is None or validator is None or invalid:
        return None

    check_id = f"{column or '_table_'}/{slug(name)}"
    draft = Check(
        name=name,
        type=type_name,
        column=column,
        severity=severity,
        action="flag",
        validator=validator,
        params=params,
        check_id=check_id,
        tags=tags,
        filter=check_filter,
        description=description,
        enabled=enabled,
        path=format_path(path),
        line=ctx.smap.line(path),
        baseline=baseline,
    )
    explicit = data.get("action")
    if explicit is not None:
        if explicit not in ACTIONS:
            ctx.add(
                path + ("action",),
                f"unknown action {explicit!r}{similar(explicit, ACTIONS)}; allowed: {', '.join(ACTIONS)}",
            )
            return None
        if explicit == "quarantine" and not draft.row_level:
            ctx.add(
                path + ("action",),
                f"'{type_name}' has no per-row reading here, so it cannot quarantine rows; use gate or flag",
            )
            return None
        action = explicit
    else:
        action = policy[severity]["row" if draft.row_level else "table"]
    return Check(**{**draft.__dict__, "action": action, "explicit_action": explicit is not None})
