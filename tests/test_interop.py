"""DataHub / Dataplex import, DataHub export: every example of seeds 001 and 002, field by field, then on Spark.

Each example (tests/interop/, the seed text with its indentation restored) is imported and the
contract compared *field by field* with one written here by hand; then the imported contracts are
evaluated on real Spark data whose outcome — check by check — is also written here by hand.
Mappings that need check types of issue #10/#11 (schema enforcement, sql, row/table conditions) are
refused with a located message until those exist; their tests of the mapped contract are skipped
with a reason naming the missing type. Malformed input gives located errors, never a traceback.
"""

from __future__ import annotations

import datetime as dt
import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
import yaml

from airflow_dq_contracts.cli.main import main
from airflow_dq_contracts.contract import ContractValidationError, parse_contract
from airflow_dq_contracts.interop.datahub import import_datahub, import_datahub_texts
from airflow_dq_contracts.interop.datahub_export import export_datahub, export_datahub_report
from airflow_dq_contracts.interop.dataplex import import_dataplex, import_dataplex_texts

HERE = Path(__file__).resolve().parent / "interop"
DATAHUB = HERE / "datahub"
DATAPLEX = HERE / "dataplex"
URN = "urn:li:dataset:(urn:li:dataPlatform:snowflake,test_db.public.purchase_events,PROD)"
HEAD = {
    "name": "purchase_events",
    "dataset": {"table": "test_db.public.purchase_events"},
    "metadata": {"datahub_urn": URN},
}


def doc(text: str) -> dict:
    return yaml.safe_load(text)


def col(name: str, *checks: dict) -> dict:
    return {"name": name, "checks": list(checks)} if checks else {"name": name}


# --------------------------------------------------------------------------------------- DataHub, seed 001

DATAHUB_EXPECTED = {
    "01_freshness.yaml": {
        **HEAD,
        "columns": [col("updated_at")],
        "checks": [
            {
                "name": "updated_at updated within 6 hours",
                "type": "freshness",
                "timestamp_column": "updated_at",
                "max_age_hours": 6,
                "tolerance": 0,
            }
        ],
    },
    "02_volume_between.yaml": {
        **HEAD,
        "checks": [{"name": "row count between 1000 and 10000", "type": "num_rows", "between": [1000, 10000]}],
    },
    "03_volume_lte.yaml": {
        **HEAD,
        "checks": [{"name": "row count less_than_or_equal_to 1000", "type": "num_rows", "max": 1000}],
    },
    "04_volume_gte.yaml": {
        **HEAD,
        "checks": [{"name": "row count greater_than_or_equal_to 1000", "type": "num_rows", "min": 1000}],
    },
    # NULLs excluded, no threshold: every non-null amount in [0, 10] ⇔ min ≥ 0 and max ≤ 10.
    "05_field_between.yaml": {
        **HEAD,
        "columns": [
            col(
                "amount",
                {"name": "amount between 0 and 10 (min)", "type": "min", "min": 0, "tolerance": 0},
                {"name": "amount between 0 and 10 (max)", "type": "max", "max": 10, "tolerance": 0},
            )
        ],
    },
    # exclude_nulls: False → a NULL fails too: all rows non-null and in the set ⇔ conforming ratio = 1.
    "06_field_in.yaml": {
        **HEAD,
        "columns": [
            col(
                "product_id",
                {
                    "name": "product_id in [product_1, product_2, product_3]",
                    "type": "whitelist",
                    "values": ["product_1", "product_2", "product_3"],
                    "return": "pct",
                    "min": 1,
                    "tolerance": 0,
                },
            )
        ],
    },
    # DataHub matches the whole value (REGEXP_LIKE); contract patterns search: anchored.
    "07_field_regex.yaml": {
        **HEAD,
        "columns": [
            col(
                "email_address",
                {
                    "name": r"email_address matches_regex [A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Z|a-z]{2,}",
                    "type": "pattern",
                    "pattern": r"^(?:[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Z|a-z]{2,})$",
                    "return": "pct",
                    "min": 1,
                    "tolerance": 0,
                },
            )
        ],
    },
    "08_metric_null_count.yaml": {
        **HEAD,
        "columns": [
            col(
                "col_date",
                {"name": "col_date null_count equal_to 0", "type": "missing", "return": "count", "equals": 0},
            )
        ],
    },
    # unique% = 100 · (1 − duplicate ratio): "= 100" is "duplicate ratio = 0".
    "09_metric_unique_percentage.yaml": {
        **HEAD,
        "columns": [
            col(
                "id",
                {
                    "name": "id unique_percentage equal_to 100",
                    "type": "duplicates",
                    "return": "pct",
                    "equals": 0,
                    "tolerance": 0,
                },
            )
        ],
    },
    # Rows conforming to "length ≤ 0" are the empty strings.
    # DataHub's compiler counts "empty" as `name IS NULL OR TRIM(name) = ''`: the rows violating its negation.
    "10_metric_empty_percentage.yaml": {
        **HEAD,
        "checks": [
            {
                "name": "name empty_percentage equal_to 0",
                "type": "row_condition",
                "condition": "name IS NOT NULL AND TRIM(name) <> ''",
                "return": "pct",
                "equals": 0,
                "tolerance": 0,
            }
        ],
    },
}
# What the seed examples that need the second-wave types (sql, enforcement) import as.
DATAHUB_EXPECTED_LATER = {
    "11_sql_foreign_key.yaml": (
        {
            **HEAD,
            "checks": [
                {
                    "name": "sql equal_to 0",
                    "type": "sql",
                    "return": "value",
                    "equals": 0,
                    "tolerance": 0,
                    "query": "SELECT COUNT(*)\nFROM {dataset} AS pe\nLEFT JOIN test_db.public.products AS p\n"
                    "ON pe.product_id = p.id\nWHERE p.id IS NULL",
                }
            ],
        }
    ),
    "12_sql_row_count_difference.yaml": (
        {
            **HEAD,
            "checks": [
                {
                    "name": "sql equal_to 0",
                    "type": "sql",
                    "return": "value",
                    "equals": 0,
                    "tolerance": 0,
                    "query": "SELECT COUNT(*) FROM {dataset}\n- (SELECT COUNT(*) FROM test_db.public.purchase_events_raw) "
                    "AS row_count_difference",
                }
            ],
        }
    ),
    "13_schema_exact.yaml": (
        {
            **HEAD,
            "enforcement": {"schema": {"mode": "exact", "severity": "P0"}},
            "columns": [
                {"name": "id", "type": "long"},  # DataHub INTEGER: any integer up to long
                {"name": "product_id", "type": "string"},
                {"name": "amount", "type": "decimal"},
                {"name": "updated_at", "type": "timestamp"},
            ],
        }
    ),
    "14_schema_contains.yaml": (
        {
            **HEAD,
            "metadata": {**HEAD["metadata"], "datahub_types": {"amount": "number"}},
            "enforcement": {"schema": {"mode": "contains", "severity": "P0"}},
            "columns": [
                {"name": "id", "type": "long"},
                {"name": "product_id", "type": "string"},
                {"name": "amount"},  # DataHub NUMBER accepts every numeric type: declared without a type
            ],
        }
    ),
}


def test_every_seed_001_example_has_an_expectation():
    assert sorted(p.name for p in DATAHUB.glob("*.yaml")) == sorted({**DATAHUB_EXPECTED, **DATAHUB_EXPECTED_LATER})


@pytest.mark.parametrize("name", sorted(DATAHUB_EXPECTED))
def test_datahub_seed_example_imports_field_by_field(name):
    text = import_datahub([DATAHUB / name])
    assert doc(text) == DATAHUB_EXPECTED[name]
    # A comment above each check names its source assertion; the text is a valid contract.
    source_line = 4  # the assertion's first line in every example file
    assert text.count(f"# DataHub {name}:{source_line} assertions[0] (") == len(list(load_contract_text(text)))


def load_contract_text(text: str):
    return parse_contract(text).all_checks()


@pytest.mark.parametrize("name", sorted(DATAHUB_EXPECTED_LATER))
def test_datahub_seed_example_needing_new_types(name):
    assert doc(import_datahub([DATAHUB / name])) == DATAHUB_EXPECTED_LATER[name]


def test_seed_regex_example_verbatim_is_invalid_yaml_with_a_located_error():
    # The seed writes the regex in double quotes with "\." — not a valid YAML escape.
    with pytest.raises(ContractValidationError) as err:
        import_datahub([HERE / "malformed_datahub_regex_escape.yaml"])
    (issue,) = err.value.issues
    assert issue.line == 9 and "invalid YAML" in issue.message and "escape" in issue.message


# --------------------------------------------------------------------------------------- exactness


def _one(assertion: str) -> str:
    return f"version: 1\nassertions:\n  - entity: {URN}\n" + "".join(
        f"    {line}\n" for line in assertion.strip().splitlines()
    )


def _checks(text: str) -> list[dict]:
    data = doc(text)
    return data.get("checks", []) + [c for column in data.get("columns", []) for c in column.get("checks", [])]


@pytest.mark.parametrize(
    "condition, expected",
    [
        ("{type: greater_than, value: 1000}", {"min": 1001}),
        ("{type: less_than, value: 1000}", {"max": 999}),
        ("{type: greater_than, value: 10.5}", {"min": 11}),
        ("{type: less_than, value: 10.5}", {"max": 10}),
        ("{type: not_equal_to, value: 0}", {"not_between": [0, 0], "tolerance": 0}),
        ("{type: equal_to, value: 7}", {"equals": 7}),
    ],
)
def test_strict_row_count_conditions_become_exact_integer_bounds(condition, expected):
    checks = _checks(
        import_datahub_texts([(_one(f"type: volume\nmetric: row_count\ncondition: {condition}"), "v.yaml")])
    )
    assert {k: v for k, v in checks[0].items() if k not in ("name", "type")} == expected


@pytest.mark.parametrize(
    "metric, condition, expected",
    [
        # A ratio lies in [0, 1]: "> 5%" is "not in [0, 0.05]", "< 5%" is "not in [0.05, 1]".
        ("null_percentage", "{type: greater_than, value: 5}", {"not_between": [0, 0.05]}),
        ("null_percentage", "{type: less_than, value: 5}", {"not_between": [0.05, 1]}),
        ("null_percentage", "{type: between, min: 1, max: 2.5}", {"between": [0.01, 0.025]}),
        # unique% > 90 ⇔ duplicate ratio < 0.1
        ("unique_percentage", "{type: greater_than, value: 90}", {"not_between": [0.1, 1]}),
        ("unique_percentage", "{type: greater_than_or_equal_to, value: 99.5}", {"max": 0.005}),
        ("null_count", "{type: greater_than, value: 3}", {"min": 4}),
        ("unique_count", "{type: less_than, value: 3}", {"max": 2}),
        ("median", "{type: between, min: 1, max: 2}", {"between": [1, 2]}),
    ],
)
def test_metric_conditions_map_exactly(metric, condition, expected):
    checks = _checks(
        import_datahub_texts([(_one(f"type: field\nfield: c\nmetric: {metric}\ncondition: {condition}"), "m.yaml")])
    )
    got = {k: v for k, v in checks[0].items() if k in ("min", "max", "between", "not_between", "equals")}
    assert got == expected
    assert checks[0].get("tolerance") == (None if metric.endswith("_count") else 0)


@pytest.mark.parametrize("metric", ["min", "max", "mean", "median", "stddev"])
@pytest.mark.parametrize("strict", ["greater_than", "less_than"])
def test_strict_condition_on_a_real_valued_metric_is_refused_located(metric, strict):
    text = _one(f"type: field\nfield: amount\nmetric: {metric}\ncondition:\n  type: {strict}\n  value: 1.5")
    with pytest.raises(ContractValidationError) as err:
        import_datahub_texts([(text, "strict.yaml")])
    (issue,) = err.value.issues
    assert (issue.file, issue.line, issue.path) == ("strict.yaml", 7, "assertions[0].condition")
    assert "no exact equivalent" in issue.message


@pytest.mark.parametrize(
    "body, expected",
    [
        # failing ≤ p% with NULLs failing ⇔ conforming (non-null) rows ≥ (1 − p%) of all rows
        (
            "condition: {type: in, value: [a, b]}\nexclude_nulls: false\nfailure_threshold: {type: percentage, value: 10}",
            {"type": "whitelist", "values": ["a", "b"], "return": "pct", "min": 0.9, "tolerance": 0},
        ),
        ("condition: {type: not_in, value: [x]}", {"type": "blacklist", "values": ["x"]}),
        (
            "condition: {type: is_not_null}\nfailure_threshold: {type: count, value: 3}",
            {"type": "missing", "return": "count", "max": 3},
        ),
        (
            "condition: {type: is_not_null}\nfailure_threshold: {type: percentage, value: 2}",
            {"type": "missing", "return": "pct", "max": 0.02, "tolerance": 0},
        ),
        ("condition: {type: is_null}", {"type": "count", "max": 0}),
        ("condition: {type: not_empty}", {"type": "min_length", "min": 1}),
        ("condition: {type: length_greater_than, value: 3}", {"type": "min_length", "min": 4}),
        ("condition: {type: length_less_than, value: 3}", {"type": "max_length", "max": 2}),
        ("condition: {type: equal_to, value: 5}", {"type": "whitelist", "values": [5]}),
        ("condition: {type: not_equal_to, value: NEW}", {"type": "blacklist", "values": ["NEW"]}),
        ("condition: {type: greater_than_or_equal_to, value: 0}", {"type": "min", "min": 0, "tolerance": 0}),
    ],
)
def test_field_value_conditions_map_exactly(body, expected):
    checks = _checks(import_datahub_texts([(_one("type: field\nfield: c\n" + body), "f.yaml")]))
    assert len(checks) == 1
    assert {k: v for k, v in checks[0].items() if k != "name"} == expected


@pytest.mark.parametrize("filters", ["\"event_type = 'purchase'\"", "{type: sql, sql: \"event_type = 'purchase'\"}"])
def test_filters_become_the_check_filter_and_survive_the_round_trip(filters):
    text = _one(f"type: volume\nmetric: row_count\ncondition: {{type: equal_to, value: 3}}\nfilters: {filters}")
    first = import_datahub_texts([(text, "f.yaml")])
    assert _checks(first)[0]["filter"] == "event_type = 'purchase'"
    exported = export_datahub(parse_contract(first))
    assert doc(exported)["assertions"][0]["filters"] == {"type": "sql", "sql": "event_type = 'purchase'"}
    assert doc(import_datahub_texts([(exported, "e.yaml")])) == doc(first)


def test_field_values_between_with_nulls_failing_adds_a_null_check():
    body = "condition: {type: between, min: 0, max: 10}\nexclude_nulls: false"
    checks = _checks(import_datahub_texts([(_one("type: field\nfield: c\n" + body), "f.yaml")]))
    assert [(c["type"], c.get("min"), c.get("max")) for c in checks] == [
        ("min", 0, None),
        ("max", None, 10),
        ("missing", None, 0),
    ]


def test_strict_field_value_comparison_becomes_a_row_condition():
    checks = _checks(
        import_datahub_texts([(_one("type: field\nfield: c\ncondition: {type: greater_than, value: 0}"), "f.yaml")])
    )
    assert checks == [
        {
            "name": "c greater_than 0",
            "type": "row_condition",
            "condition": "c > 0",
            "null_passes": True,
            "return": "count",
            "max": 0,
        }
    ]


# --------------------------------------------------------------------------------------- malformed DataHub


@pytest.mark.parametrize(
    "text, located",
    [
        ("version: 1\nassertions: {a: 1}\n", (2, "assertions", "must be a list")),
        ("version: 2\nassertions: []\n", (1, "version", "unsupported version")),
        (
            "version: 1\nassertions:\n  - type: volume\n    condition: {type: between, min: 1, max: 2}\n",
            (3, "assertions[0]", "'entity' is required"),
        ),
        (
            f"version: 1\nassertions:\n  - entity: {URN}\n    type: volumes\n",
            (4, "assertions[0].type", "unknown assertion type"),
        ),
        (
            f"version: 1\nassertions:\n  - entity: {URN}\n    type: volume\n    condtion: {{type: equal_to, value: 1}}\n",
            (5, "assertions[0].condtion", "unknown key"),
        ),
        (
            f"version: 1\nassertions:\n  - entity: {URN}\n    type: volume\n    condition: {{type: between, min: 9, max: 2}}\n",
            (5, "assertions[0].condition", "greater than max"),
        ),
        (
            f"version: 1\nassertions:\n  - entity: {URN}\n    type: field\n    field: a\n    metric: null_count\n"
            "    condition: {type: equal_to, value: ten}\n",
            (7, "assertions[0].condition.value", "must be a number"),
        ),
        (
            f"version: 1\nassertions:\n  - entity: {URN}\n    type: freshness\n    lookback_interval: soon\n"
            "    last_modified_field: t\n",
            (5, "assertions[0].lookback_interval", "cannot read interval"),
        ),
        (
            "version: 1\nassertions:\n  - entity: urn:li:corpuser:bob\n    type: volume\n",
            (3, "assertions[0].entity", "not a DataHub dataset URN"),
        ),
        ("version: 1\nassertions: [\n", (None, "", "invalid YAML")),
    ],
)
def test_malformed_datahub_is_a_located_error(text, located):
    with pytest.raises(ContractValidationError) as err:
        import_datahub_texts([(text, "bad.yaml")])
    line, path, message = located
    assert any(
        (i.file, i.path) == ("bad.yaml", path) and message in i.message and (line is None or i.line == line)
        for i in err.value.issues
    ), err.value.issues


def test_all_refusals_of_a_file_are_reported_at_once():
    text = (
        f"version: 1\nassertions:\n"
        f"  - {{entity: '{URN}', type: field, field: a, metric: mean, condition: {{type: greater_than, value: 1}}}}\n"
        f"  - {{entity: '{URN}', type: field, field: a, metric: modes, condition: {{type: equal_to, value: 1}}}}\n"
        f"  - {{entity: '{URN}', type: volume, condition: {{type: equal_to, value: x}}}}\n"
    )
    with pytest.raises(ContractValidationError) as err:
        import_datahub_texts([(text, "many.yaml")])
    assert [(i.line, i.path) for i in err.value.issues] == [
        (3, "assertions[0].condition"),
        (4, "assertions[1].metric"),
        (5, "assertions[2].condition.value"),
    ]


# --------------------------------------------------------------------------------------- Dataplex, seed 002

DATAPLEX_EXPECTED = {
    # Every DataQualityRule field: name, description, dimension → tag, threshold → ratio, attributes ignored.
    "01_rule_fields.json": [
        col(
            "status",
            {
                "name": "status-valid",
                "type": "whitelist",
                "values": ["NEW", "PAID", "SHIPPED"],
                "return": "pct",
                "min": 0.75,
                "tolerance": 0,
                "description": "Status is one of the known states",
                "tags": ["VALIDITY"],
            },
        )
    ],
    # ignoreNull false (default): NULL rows fail, so "no NULL" joins the bounds.
    "02_range.json": [
        col(
            "price",
            {"name": "price-range (min)", "type": "min", "min": 0, "tags": ["VALIDITY"]},
            {"name": "price-range (max)", "type": "max", "max": 100, "tags": ["VALIDITY"]},
            {"name": "price-range (no nulls)", "type": "missing", "max": 0, "tags": ["VALIDITY"]},
        )
    ],
    "03_non_null.json": [
        col("id", {"name": "id non-null", "type": "missing", "max": 0, "tags": ["COMPLETENESS"]}),
        col("email", {"name": "email-mostly-present", "type": "missing", "return": "pct", "max": 0.2, "tolerance": 0}),
    ],
    "04_set.json": [
        col(
            "status",
            {
                "name": "status in set",
                "type": "whitelist",
                "values": ["NEW", "PAID", "SHIPPED"],
                "return": "pct",
                "min": 1,
                "tolerance": 0,
                "tags": ["VALIDITY"],
            },
        )
    ],
    "05_regex.json": [
        col("email", {"name": "email-format", "type": "pattern", "pattern": r"^[^@ ]+@[^@ ]+\.[a-z]{2,}$"})
    ],
    "06_uniqueness.json": [
        col("id", {"name": "id unique", "type": "duplicates", "max": 0, "tags": ["UNIQUENESS"]}),
        col("email", {"name": "email-unique", "type": "duplicates", "max": 0, "filter": "email IS NOT NULL"}),
    ],
    "07_statistic_range.json": [
        col(
            "price",
            {"name": "mean-price", "type": "mean", "between": [10, 50], "tolerance": 0},
            {"name": "min-price", "type": "min", "min": 0, "tolerance": 0},
            {"name": "max-price", "type": "max", "max": 100, "tolerance": 0},
        )
    ],
    "12_scan_spec.yaml": [
        col("id", {"name": "id non-null", "type": "missing", "max": 0, "tags": ["COMPLETENESS"]}),
        col(
            "status",
            {
                "name": "status-known",
                "type": "whitelist",
                "values": ["NEW", "PAID", "SHIPPED"],
                "return": "pct",
                "min": 1,
                "tolerance": 0,
                "enabled": False,
            },
        ),
        col("price", {"name": "price max in range", "type": "max", "max": 100, "tolerance": 0, "tags": ["ACCURACY"]}),
    ],
}
DATAPLEX_EXPECTED_LATER = {
    "01b_ignore_null_threshold.json": (
        "row_condition",
        {
            "checks": [
                {
                    "name": "status-valid-or-null",
                    "type": "row_condition",
                    "condition": "status IN ('NEW', 'PAID', 'SHIPPED')",
                    "null_passes": True,
                    "return": "pct",
                    "max": 0.25,
                    "tolerance": 0,
                }
            ]
        },
    ),
    "02b_range_strict.json": (
        "row_condition",
        {
            "checks": [
                {
                    "name": "price-positive-strict",
                    "type": "row_condition",
                    "condition": "price > 0",
                    "null_passes": True,
                    "return": "count",
                    "max": 0,
                }
            ]
        },
    ),
    "08_row_condition.json": (
        "row_condition",
        {
            "checks": [
                {
                    "name": "col-bounds",
                    "type": "row_condition",
                    "condition": "col1 >= 0 AND col2 < 10",
                    "null_passes": False,
                    "return": "count",
                    "max": 0,
                    "tags": ["VALIDITY"],
                }
            ]
        },
    ),
    "09_table_condition.json": (
        "table_condition",
        {"checks": [{"name": "col1-non-negative", "type": "table_condition", "condition": "MIN(col1) >= 0"}]},
    ),
    "10_sql_assertion.json": (
        "sql",
        {
            "checks": [
                {
                    "name": "no-negative-prices",
                    "type": "sql",
                    "query": "SELECT * FROM {dataset} WHERE price < 0",
                    "return": "rows",
                    "max": 0,
                }
            ]
        },
    ),
}


def test_every_seed_002_example_has_an_expectation():
    assert sorted(p.name for p in DATAPLEX.iterdir()) == sorted(
        {**DATAPLEX_EXPECTED, **DATAPLEX_EXPECTED_LATER, "11_template_reference.json": None}
    )


@pytest.mark.parametrize("name", sorted(DATAPLEX_EXPECTED))
def test_dataplex_seed_example_imports_field_by_field(name):
    text = import_dataplex([DATAPLEX / name], table="shop.orders")
    assert doc(text) == {"name": "orders", "dataset": {"table": "shop.orders"}, "columns": DATAPLEX_EXPECTED[name]}
    assert text.count(f"# Dataplex {name}:") == len(list(load_contract_text(text)))


@pytest.mark.parametrize("name", sorted(DATAPLEX_EXPECTED_LATER))
def test_dataplex_seed_example_needing_new_types(name):
    needed, expected = DATAPLEX_EXPECTED_LATER[name]
    imported = doc(import_dataplex([DATAPLEX / name], table="shop.orders"))
    assert [check["type"] for check in imported["checks"]] == [needed]
    assert imported == {"name": "orders", "dataset": {"table": "shop.orders"}, **expected}


@pytest.mark.parametrize(
    "rule, located",
    [
        ('{"column": "p", "templateReference": {"name": "t"}}', ("rules[0].templateReference", "catalog template")),
        (
            '{"column": "p", "statisticRangeExpectation": {"statistic": "MEDIAN", "maxValue": "1"}}',
            ("rules[0].statisticRangeExpectation.statistic", "MEAN, MIN, MAX"),
        ),
        ('{"column": "p", "rangeExpectation": {"minValue": "abc"}}', ("rules[0].rangeExpectation.minValue", "number")),
        ('{"column": "p", "rangeExpectation": {}}', ("rules[0].rangeExpectation", "at least one")),
        ('{"column": "p", "nonNullExpectation": {}, "setExpectation": {"values": ["a"]}}', ("rules[0]", "exactly one")),
        ('{"nonNullExpectation": {}}', ("rules[0]", "needs 'column'")),
        ('{"column": "p", "threshold": 1.5, "nonNullExpectation": {}}', ("rules[0].threshold", "[0.0, 1.0]")),
        ('{"column": "p", "ignoreNull": true, "nonNullExpectation": {}}', ("rules[0].ignoreNull", "only valid")),
        ('{"column": "p", "threshold": 0.5, "uniquenessExpectation": {}}', ("rules[0].threshold", "extra copies")),
        ('{"column": "p", "suspended": "yes", "nonNullExpectation": {}}', ("rules[0].suspended", "true or false")),
        ('{"column": "p", "nonNullExpectation": {}, "colour": 1}', ("rules[0].colour", "unknown key")),
    ],
)
def test_malformed_or_inexact_dataplex_rule_is_refused_located(rule, located):
    text = '{"rules": [\n' + rule + "\n]}"
    with pytest.raises(ContractValidationError) as err:
        import_dataplex_texts([(text, "scan.json")], table="t")
    path, message = located
    assert any(
        i.file == "scan.json" and i.line == 2 and i.path == path and message in i.message for i in err.value.issues
    ), err.value.issues


def test_dataplex_scan_resource_and_sampling():
    scan = {
        "data": {"resource": "//bigquery.googleapis.com/projects/p1/datasets/d1/tables/t1"},
        "dataQualitySpec": {"rowFilter": "region = 'EU'", "rules": [{"column": "a", "nonNullExpectation": {}}]},
    }
    data = doc(import_dataplex_texts([(json.dumps(scan), "scan.json")]))
    assert data["dataset"] == {"table": "p1.d1.t1"}
    assert data["columns"][0]["checks"][0]["filter"] == "region = 'EU'"
    scan["dataQualitySpec"]["samplingPercent"] = 10
    with pytest.raises(ContractValidationError, match="samplingPercent"):
        import_dataplex_texts([(json.dumps(scan), "scan.json")])


# --------------------------------------------------------------------------------------- real Spark


def _purchase_events(spark, rows):
    from pyspark.sql import types as T

    schema = T.StructType(
        [
            T.StructField("id", T.LongType()),
            T.StructField("product_id", T.StringType()),
            T.StructField("amount", T.DoubleType()),
            T.StructField("email_address", T.StringType()),
            T.StructField("col_date", T.DateType()),
            T.StructField("name", T.StringType()),
            T.StructField("updated_at", T.TimestampType()),
        ]
    )
    return spark.createDataFrame(rows, schema)


REF = dt.datetime(2024, 5, 2, 12, 0, tzinfo=dt.timezone.utc)
DATAHUB_WORKING = sorted(DATAHUB_EXPECTED)


@pytest.mark.spark
def test_datahub_imports_evaluate_on_spark_as_expected(spark):
    contract = parse_contract(import_datahub([DATAHUB / n for n in DATAHUB_WORKING]))
    from airflow_dq_contracts.engine import evaluate

    # Good: 1000 conforming rows, updated 1 h before the reference time.
    good = [
        (
            i,
            f"product_{i % 3 + 1}",
            float(i % 11),
            f"user{i}@example.com",
            dt.date(2024, 5, 1),
            f"n{i}",
            REF - dt.timedelta(hours=1),
        )
        for i in range(1000)
    ]
    # Bad: 5 hand-written rows, each breaking something; written outcome below.
    old = REF - dt.timedelta(hours=7)
    bad = [
        (1, "product_1", 5.0, "a@b.co", dt.date(2024, 5, 1), "x", old),
        (1, None, -1.0, "not-an-email", None, "", old),  # duplicate id, NULL product, negative, empty name
        (2, "product_9", 11.5, "c@d.org", dt.date(2024, 5, 1), "y", old),  # unknown product, amount > 10
        (3, "product_2", None, "e@f.io", dt.date(2024, 5, 1), "z", old),  # NULL amount: excluded (passes)
        (4, "product_3", 0.0, "g@h.com", dt.date(2024, 5, 1), "w", old),
    ]
    ids = [c.check_id for c in contract.all_checks()]
    good_result = evaluate(contract, _purchase_events(spark, good), REF)
    assert {r.check_id: r.status for r in good_result.checks if r.check_type != "schema"} == dict.fromkeys(
        ids, "passed"
    )
    bad_result = evaluate(contract, _purchase_events(spark, bad), REF)
    expected_bad = {
        "_table_/updated_at_updated_within_6_hours": "failed",  # 7 h old
        "_table_/row_count_between_1000_and_10000": "failed",  # 5 rows
        "_table_/row_count_less_than_or_equal_to_1000": "passed",
        "_table_/row_count_greater_than_or_equal_to_1000": "failed",
        "amount/amount_between_0_and_10_min": "failed",  # -1
        "amount/amount_between_0_and_10_max": "failed",  # 11.5
        "product_id/product_id_in_product_1_product_2_product_3": "failed",  # NULL and product_9
        "email_address/email_address_matches_regex_a_za_z0_9_a_za_z0_9_a_z_a_z_2": "failed",  # not-an-email
        "col_date/col_date_null_count_equal_to_0": "failed",  # one NULL date
        "id/id_unique_percentage_equal_to_100": "failed",  # id 1 twice
        "_table_/name_empty_percentage_equal_to_0": "failed",  # one empty (NULL or blank) name
    }
    # the written checks as expected; the declared columns' schema checks (enforcement) all pass
    assert {r.check_id: r.status for r in bad_result.checks if r.check_type != "schema"} == expected_bad
    assert {r.status for r in bad_result.checks if r.check_type == "schema"} <= {"passed"}
    by_id = {r.check_id: r for r in bad_result.checks}
    assert by_id["product_id/product_id_in_product_1_product_2_product_3"].metric_value == pytest.approx(3 / 5)
    assert by_id["id/id_unique_percentage_equal_to_100"].metric_value == pytest.approx(1 / 5)
    assert by_id["_table_/name_empty_percentage_equal_to_0"].metric_value == pytest.approx(1 / 5)


@pytest.mark.spark
def test_dataplex_imports_evaluate_on_spark_as_expected(spark):
    from pyspark.sql import types as T

    from airflow_dq_contracts.engine import evaluate

    contract = parse_contract(import_dataplex([DATAPLEX / n for n in sorted(DATAPLEX_EXPECTED)], table="shop.orders"))
    schema = T.StructType(
        [
            T.StructField("id", T.LongType()),
            T.StructField("price", T.DoubleType()),
            T.StructField("status", T.StringType()),
            T.StructField("email", T.StringType()),
        ]
    )
    good = [(i, 10.0 * i, ["NEW", "PAID", "SHIPPED"][i % 3], f"u{i}@shop.com") for i in range(1, 6)]
    # 10 rows: 2 of 10 statuses unknown (80% ≥ the 75% threshold, < 100%), 3 NULL emails (30% > 20%),
    # a NULL and a duplicate id, a price above 100 and a NULL price, one malformed email.
    bad = [
        (1, 10.0, "NEW", "a@shop.com"),
        (1, 20.0, "PAID", "b@shop.com"),
        (None, 30.0, "PAID", None),
        (4, 120.0, "LOST", None),
        (5, None, "NEW", None),
        (6, 40.0, "SHIPPED", "bad email"),
        (7, 50.0, "GONE", "c@shop.com"),
        (8, 5.0, "NEW", "d@shop.com"),
        (9, 15.0, "PAID", "e@shop.com"),
        (10, 25.0, "SHIPPED", "f@shop.com"),
    ]
    enabled = [c.check_id for c in contract.all_checks() if c.enabled]
    assert "status/status_known" not in enabled  # suspended → enabled: false → not evaluated
    good_result = evaluate(contract, spark.createDataFrame(good, schema), REF)
    assert {r.check_id: r.status for r in good_result.checks if r.check_type != "schema"} == dict.fromkeys(
        enabled, "passed"
    )
    bad_result = evaluate(contract, spark.createDataFrame(bad, schema), REF)
    prices = [r[1] for r in bad if r[1] is not None]
    expected_bad = {
        "status/status_valid": "passed",  # 8/10 known ≥ 0.75
        "status/status_in_set": "failed",  # 8/10 < 1
        "price/price_range_min": "passed",  # min 5
        "price/price_range_max": "failed",  # 120
        "price/price_range_no_nulls": "failed",  # one NULL price
        "price/mean_price": "passed" if 10 <= sum(prices) / len(prices) <= 50 else "failed",
        "price/min_price": "passed",
        "price/max_price": "failed",
        "price/price_max_in_range": "failed",
        "id/id_non_null": "failed",
        "id/id_unique": "failed",
        "id/id_non_null_2": "failed",
        "email/email_mostly_present": "failed",  # 3/10 NULL > 0.2
        "email/email_format": "failed",  # 'bad email' (NULLs ignored)
        "email/email_unique": "passed",  # non-null emails are unique; NULLs ignored
    }
    # the written checks as expected; the declared columns' schema checks (enforcement) all pass
    assert {r.check_id: r.status for r in bad_result.checks if r.check_type != "schema"} == expected_bad
    assert {r.status for r in bad_result.checks if r.check_type == "schema"} <= {"passed"}
    assert sum(prices) / len(prices) == pytest.approx(35.0)


# --------------------------------------------------------------------------------------- export and round trip


@pytest.mark.parametrize("name", DATAHUB_WORKING)
def test_import_export_import_is_stable(name):
    first = import_datahub([DATAHUB / name])
    exported = export_datahub(parse_contract(first))
    second = import_datahub_texts([(exported, "exported.yaml")])
    assert doc(second) == doc(first)
    assert export_datahub(parse_contract(second)) == exported


def test_export_of_a_hand_written_contract_and_its_refusals():
    contract = parse_contract(
        """\
name: orders
dataset: {table: shop.orders}
columns:
  - name: id
    checks:
      - {name: id present, type: missing, max: 0}
      - {name: id total, type: sum, min: 0}
      - {name: id distinct, type: cardinality, between: [1, 10]}
  - name: email
    checks:
      - {name: email format, type: pattern, format: email}
      - {name: email short, type: max_length, max: 50}
      - {name: email any case, type: whitelist, values: [a], case_sensitive: false}
  - name: ts
checks:
  - {name: rows, type: num_rows, not_between: [0, 0]}
  - {name: fresh, type: freshness, timestamp_column: ts, max_age_hours: 2.5}
  - {name: old, type: num_rows, min: 1, enabled: false}
""",
        filename="orders.yaml",
    )
    text, refused = export_datahub_report(contract)
    assertions = doc(text)["assertions"]
    urn = "urn:li:dataset:(urn:li:dataPlatform:delta,shop.orders,PROD)"
    assert assertions == [
        {
            "entity": urn,
            "type": "volume",
            "description": "rows",
            "metric": "row_count",
            "condition": {"type": "not_equal_to", "value": 0},
        },
        {
            "entity": urn,
            "type": "freshness",
            "description": "fresh",
            "lookback_interval": "2.5 hours",
            "last_modified_field": "ts",
        },
        {
            "entity": urn,
            "type": "field",
            "description": "id present",
            "field": "id",
            "metric": "null_count",
            "condition": {"type": "less_than_or_equal_to", "value": 0},
        },
        {
            "entity": urn,
            "type": "field",
            "description": "id distinct",
            "field": "id",
            "metric": "unique_count",
            "condition": {"type": "between", "min": 1, "max": 10},
        },
        {
            "entity": urn,
            "type": "field",
            "description": "email format",
            "field": "email",
            "condition": {
                "type": "matches_regex",
                "value": "(?s).*(?:^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\\.[a-zA-Z]{2,}$).*",
            },
            "exclude_nulls": True,
        },
        {
            "entity": urn,
            "type": "field",
            "description": "email short",
            "field": "email",
            "exclude_nulls": True,
            "condition": {"type": "length_less_than", "value": 51},
        },
    ]
    assert [(i.file, i.line, i.path) for i in refused] == [
        ("orders.yaml", 18, "checks[2]"),
        ("orders.yaml", 7, "columns[0].checks[1]"),
        ("orders.yaml", 13, "columns[1].checks[2]"),
    ]
    assert "disabled" in refused[0].message and "'sum'" in refused[1].message and "case" in refused[2].message
    with pytest.raises(ContractValidationError):
        export_datahub(contract)


# --------------------------------------------------------------------------------------- enabled: false


def test_enabled_key_is_validated():
    ok = parse_contract("name: t\nchecks: [{name: a, type: num_rows, min: 1, enabled: false}]")
    assert [c.enabled for c in ok.all_checks()] == [False]
    with pytest.raises(ContractValidationError) as err:
        parse_contract("name: t\nchecks:\n  - {name: a, type: num_rows, min: 1, enabled: 'no'}\n", filename="c.yaml")
    (issue,) = err.value.issues
    assert (issue.line, issue.path) == (3, "checks[0].enabled") and "true or false" in issue.message


# --------------------------------------------------------------------------------------- CLI


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def test_cli_import_validate_export(tmp_path):
    contract = tmp_path / "purchase_events.yaml"
    files = [str(DATAHUB / n) for n in ("02_volume_between.yaml", "06_field_in.yaml")]
    assert _cli("import", "datahub", *files, "-o", str(contract))[0] == 0
    code, out, _ = _cli("validate", str(contract))
    # the two imported assertions, and the declared column's schema check
    assert code == 0 and "purchase_events" in out and "3 checks (2 written, 1 implied by columns/SLA)" in out
    code, out, _ = _cli("export", "datahub", str(contract))
    assert code == 0 and [a["type"] for a in doc(out)["assertions"]] == ["volume", "field"]
    plex = tmp_path / "orders.yaml"
    assert (
        _cli("import", "dataplex", str(DATAPLEX / "12_scan_spec.yaml"), "--table", "shop.orders", "-o", str(plex))[0]
        == 0
    )
    assert _cli("validate", str(plex))[0] == 0


def test_cli_refusals_are_located_and_exit_1(tmp_path):
    code, out, err = _cli("import", "dataplex", str(DATAPLEX / "11_template_reference.json"))
    assert code == 1 and out == ""
    assert err.strip().splitlines() == [
        f"{DATAPLEX / '11_template_reference.json'}:3: rules[0].templateReference: templateReference rules are "
        "resolved by Dataplex from a catalog template; import the resolved rule instead"
    ]
    code, _, err = _cli("import", "datahub", str(tmp_path / "missing.yaml"))
    assert code == 1 and "file not found" in err and "Traceback" not in err


# --------------------------------------------------------------------------------------- evaluated on Spark


@pytest.mark.spark
def test_dataplex_condition_and_sql_rules_evaluate_on_spark(spark):
    from pyspark.sql import types as T

    from airflow_dq_contracts.engine import evaluate

    files = ("08_row_condition.json", "09_table_condition.json", "10_sql_assertion.json")
    contract = parse_contract(import_dataplex([DATAPLEX / n for n in files], table="shop.orders"))
    schema = T.StructType(
        [
            T.StructField("col1", T.LongType()),
            T.StructField("col2", T.LongType()),
            T.StructField("price", T.DoubleType()),
        ]
    )
    good = [(0, 9, 0.0), (5, 1, 10.0)]
    bad = [(0, 9, 0.0), (-1, 1, 10.0), (3, None, -2.0)]  # col1 < 0; col2 NULL (a NULL result fails); price < 0
    ids = [c.check_id for c in contract.all_checks()]
    assert ids == ["_table_/col_bounds", "_table_/col1_non_negative", "_table_/no_negative_prices"]
    good_result = evaluate(contract, spark.createDataFrame(good, schema), REF)
    assert {r.check_id: r.status for r in good_result.checks if r.check_type != "schema"} == dict.fromkeys(
        ids, "passed"
    )
    bad_result = {r.check_id: r for r in evaluate(contract, spark.createDataFrame(bad, schema), REF).checks}
    assert {k: r.status for k, r in bad_result.items()} == dict.fromkeys(ids, "failed")
    assert bad_result["_table_/col_bounds"].failed_rows == 2
    assert bad_result["_table_/no_negative_prices"].metric_value == 1


@pytest.mark.spark
def test_datahub_schema_assertions_evaluate_on_spark(spark):
    from pyspark.sql import types as T

    from airflow_dq_contracts.engine import evaluate

    schema = T.StructType(
        [
            T.StructField("id", T.IntegerType()),
            T.StructField("product_id", T.StringType()),
            T.StructField("amount", T.DecimalType(10, 2)),
            T.StructField("updated_at", T.TimestampType()),
            T.StructField("extra", T.StringType()),
        ]
    )
    df = spark.createDataFrame([], schema)

    def failed_schema_checks(name: str) -> set[str]:
        result = evaluate(parse_contract(import_datahub([DATAHUB / name])), df, REF)
        return {r.check_id for r in result.checks if r.check_type == "schema" and r.status != "passed"}

    assert failed_schema_checks("14_schema_contains.yaml") == set()  # extra columns allowed
    assert failed_schema_checks("13_schema_exact.yaml") == {"_table_/schema"}  # 'extra' is undeclared


def test_cli_export_refuses_inexact_checks_unless_asked_to_skip(tmp_path):
    contract = tmp_path / "c.yaml"
    contract.write_text(
        "name: c\ndataset: db.c\ncolumns:\n  - name: a\n    checks:\n"
        "      - {name: a total, type: sum, min: 0}\n      - {name: a nulls, type: missing, max: 0}\n"
    )
    code, out, err = _cli("export", "datahub", str(contract))
    assert code == 1 and out == ""
    assert err.strip().splitlines() == [
        f"{contract}:6: columns[0].checks[0]: not exported: check type 'sum' has no exact DataHub assertion"
    ]
    code, out, err = _cli("export", "datahub", str(contract), "--skip-unsupported", "--platform", "hive")
    assert code == 0 and err.startswith("skipped: ")
    assert [a["description"] for a in doc(out)["assertions"]] == ["a nulls"]
    assert doc(out)["assertions"][0]["entity"] == "urn:li:dataset:(urn:li:dataPlatform:hive,db.c,PROD)"
