"""Filters keep exactly the rows whose values meet them: literals compared
with the column's values as numbers (whatever either's type), floats by IEEE
754, and nulls and NaN as pyarrow treats them. Each case is checked against
Python's own comparison of the values, and against pyarrow where pyarrow
answers (it refuses some casts, e.g. an integer past 2**24 to float32)."""

from __future__ import annotations

import datetime
import math
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import fastingest

NAN = float("nan")
INF = float("inf")


def _table() -> pa.Table:
    ms = datetime.timedelta(milliseconds=1)
    epoch = datetime.datetime(1970, 1, 1)
    columns = {
        "f64": pa.array([1.0, NAN, None, -0.0, 0.0, 0.5, INF, -INF, 2.5, 0.1]),
        "f32": pa.array(
            np.array([0.1, 16777216, 16777218, 3.0, 0, NAN, -0.0, 1e38, 2.5, -1], np.float32),
            mask=np.array([0, 0, 0, 0, 1, 0, 0, 0, 0, 0], bool),
        ),
        "i64": pa.array([1, 2, 3, 4, None, 2**53 + 1, -(2**63), 2**63 - 1, 0, -1]),
        "u8": pa.array([0, 1, 255, None, 7, 128, 2, 3, 254, 1], pa.uint8()),
        "u64": pa.array([0, 2**63, 2**64 - 1, 5, None, 1, 2, 3, 4, 6], pa.uint64()),
        "dec": pa.array(
            [
                Decimal(v) if v else None
                for v in [
                    "1.25",
                    "2.50",
                    None,
                    "-3.75",
                    "0.00",
                    "999.99",
                    "-999.99",
                    "2.51",
                    "2.49",
                    "1",
                ]
            ],
            pa.decimal128(5, 2),
        ),
        "ts": pa.array(
            [epoch + k * ms if k is not None else None for k in [1, 2, None, 3, 4, -1, 0, 5, 6, 7]],
            pa.timestamp("ms"),
        ),
        "day": pa.array([0, 1, 2, None, -1, 3, 4, 5, 6, 7], pa.date32()),
        "s": pa.array(["a", None, "b", "", "é", "a", "zz", None, "b", "c"]),
    }
    return pa.table({"row": pa.array(range(10)), **columns})


@pytest.fixture(scope="module")
def table_file(tmp_path_factory) -> tuple[pa.Table, str, str]:
    """The table; a file of it whose statistics decide what is skipped (row
    groups of 3 rows, tiny pages with a page index), so that a wrong skip
    loses rows; and one without statistics for pyarrow, whose own skips
    ignore NaN (it drops a row group of 1.0 and NaN for `!= 1.0`)."""
    table = _table()
    folder = tmp_path_factory.mktemp("filters")
    path, plain = str(folder / "t.parquet"), str(folder / "plain.parquet")
    pq.write_table(
        table, path, row_group_size=3, data_page_size=16, write_page_index=True, write_batch_size=1
    )
    pq.write_table(table, plain, write_statistics=False)
    return table, path, plain


def _same_number(x, y) -> bool:
    """`in` matches as pyarrow's `is_in`: NaN matches NaN; -0.0 and 0.0 are
    told apart between floats."""
    if isinstance(x, float) and isinstance(y, float):
        if math.isnan(x) or math.isnan(y):
            return math.isnan(x) and math.isnan(y)
        return x == y and math.copysign(1, x) == math.copysign(1, y)
    return x == y and not (isinstance(y, float) and math.isnan(y))


def _keeps(value, op: str, literal) -> bool:
    """Python's exact comparison (int, float and Decimal compare as numbers),
    with pyarrow's rules for nulls."""
    if op in ("in", "not in"):
        values = list(literal)
        if value is None:
            found = any(v is None for v in values)
        else:
            found = any(v is not None and _same_number(value, v) for v in values)
        return found if op == "in" else not found
    if value is None or literal is None:
        return False
    return {
        "==": value == literal,
        "!=": value != literal,
        "<": value < literal,
        "<=": value <= literal,
        ">": value > literal,
        ">=": value >= literal,
    }[op]


def _f32(x: float) -> float:
    return float(np.float32(x))


CASES = [
    # NaN, infinities and signed zero in a float64 column.
    ("f64", ">", 0.4),
    ("f64", ">=", 0.5),
    ("f64", "<", 1.0),
    ("f64", "==", 0.0),
    ("f64", "==", -0.0),
    ("f64", "!=", 1.0),
    ("f64", "==", NAN),
    ("f64", "!=", NAN),
    ("f64", ">", NAN),
    ("f64", "<=", INF),
    ("f64", ">", -INF),
    ("f64", "in", [NAN, 0.5]),
    ("f64", "not in", [NAN]),
    ("f64", "in", [0.0]),
    ("f64", "in", [None, 1.0]),
    ("f64", "not in", [None, 1.0]),
    ("f64", "not in", [1.0, 2.5]),
    ("f64", ">", 2),
    ("f64", "==", 1),
    # float32 against numbers it cannot hold.
    ("f32", ">", 0.1),
    ("f32", "==", 0.1),
    ("f32", "==", _f32(0.1)),
    ("f32", "<=", 0.2),
    ("f32", "==", 16777217),
    ("f32", ">", 16777217),
    ("f32", ">=", 16777217.0),
    ("f32", "<", 1e39),
    ("f32", ">", 1e39),
    ("f32", "in", [_f32(0.1), 2.5, NAN]),
    ("f32", "in", [0.1, 16777217]),
    ("f32", "not in", [0.1, 3]),
    # Integers against fractions and numbers past their range.
    ("i64", ">=", 2.5),
    ("i64", "<", 2.5),
    ("i64", "<=", -0.5),
    ("i64", "==", 2.0),
    ("i64", "==", 2.5),
    ("i64", "!=", 2.5),
    ("i64", ">", 2**63 - 2),
    ("i64", "<", -(2**63) + 1),
    ("i64", ">", 1e30),
    ("i64", "<", INF),
    ("i64", ">", NAN),
    ("i64", "!=", NAN),
    ("i64", "in", [1.5, 2, 3.0]),
    ("i64", "not in", [1.5, 2]),
    ("i64", "not in", [None, 2]),
    ("i64", "==", Decimal("3.00")),
    ("i64", "<", Decimal("2.5")),
    ("u8", "<", -1),
    ("u8", ">", -1),
    ("u8", ">", 300),
    ("u8", "<", 300),
    ("u8", "==", 1000),
    ("u8", "!=", -1),
    ("u8", ">=", 254.5),
    ("u8", "in", [-1, 1, 255, 256]),
    ("u8", "not in", [-1, 1]),
    ("u64", ">", -1),
    ("u64", ">=", 2**63),
    ("u64", "<", 1.5),
    ("u64", "in", [-5, 5]),
    ("u64", ">", 1e30),
    # Decimals against more digits, floats and numbers past their precision.
    ("dec", ">=", 2.501),
    ("dec", ">=", Decimal("2.501")),
    ("dec", "<", Decimal("2.501")),
    ("dec", "==", Decimal("2.5000")),
    ("dec", "==", Decimal("2.505")),
    ("dec", ">", Decimal("99999.5")),
    ("dec", "<", Decimal("99999.5")),
    ("dec", ">", -1000),
    ("dec", "==", 1),
    ("dec", "<", 2.5),
    ("dec", "in", [Decimal("2.5"), Decimal("2.505"), Decimal("1.250")]),
    ("dec", "not in", [Decimal("2.5"), Decimal("2.505")]),
    # Times finer than the column's unit.
    ("ts", ">=", datetime.datetime(1970, 1, 1, 0, 0, 0, 1500)),
    ("ts", "<", datetime.datetime(1970, 1, 1, 0, 0, 0, 2500)),
    ("ts", "==", datetime.datetime(1970, 1, 1, 0, 0, 0, 2500)),
    ("ts", ">", datetime.datetime(1969, 12, 31, 23, 59, 59, 999500)),
    (
        "ts",
        "in",
        [
            datetime.datetime(1970, 1, 1, 0, 0, 0, 2000),
            datetime.datetime(1970, 1, 1, 0, 0, 0, 2500),
        ],
    ),
    ("day", ">=", datetime.datetime(1970, 1, 2, 12)),
    ("day", "<", datetime.datetime(1970, 1, 2, 12)),
    ("day", "==", datetime.datetime(1970, 1, 2)),
    ("day", "<=", datetime.date(1970, 1, 3)),
    # Strings and nulls.
    ("s", "not in", ["a"]),
    ("s", "in", [None, "a"]),
    ("s", "in", [None]),
    ("s", "not in", [None]),
    ("s", "!=", "a"),
    ("s", "<", "b"),
    ("s", "==", None),
    ("s", "!=", None),
    ("f64", "in", []),
    ("f64", "not in", []),
]


def _expected_rows(table: pa.Table, column: str, op: str, literal) -> list[int]:
    values = table[column].to_pylist()
    if column == "day":
        values = [
            None if v is None else datetime.datetime.combine(v, datetime.time()) for v in values
        ]
        if isinstance(literal, datetime.date) and not isinstance(literal, datetime.datetime):
            literal = datetime.datetime.combine(literal, datetime.time())
    return [
        r for r, v in zip(table["row"].to_pylist(), values, strict=True) if _keeps(v, op, literal)
    ]


@pytest.mark.parametrize(
    "column,op,literal", CASES, ids=[f"{c} {o} {lit!r}" for c, o, lit in CASES]
)
def test_filters_compare_values_exactly(table_file, column, op, literal):
    table, path, plain = table_file
    filters = [(column, op, literal)]
    want = _expected_rows(table, column, op, literal)
    got = fastingest.read_parquet(path, filters=filters)["row"].to_pylist()
    assert got == want
    assert fastingest.read_parquet(plain, filters=filters)["row"].to_pylist() == want
    try:
        theirs = pq.read_table(plain, filters=filters)["row"].to_pylist()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, OverflowError):
        return  # pyarrow refuses the cast (16777217 to float32) or the value (2**63)
    if column == "f32" and op in ("in", "not in"):
        # pyarrow's `is_in` casts the set to float32 first (0.1 becomes the
        # float32 nearest it) where its `==` compares as float64; here `in`
        # is `==` one of the values, compared exactly.
        if op == "in" and not any(v != v for v in literal):  # NaN: `==` never holds
            any_equal = [[(column, "==", v)] for v in literal if _f32(v) == v]
            if any_equal:
                assert got == pq.read_table(plain, filters=any_equal)["row"].to_pylist()
        return
    assert got == theirs


def test_filters_in_conjunctions_and_disjunctions(table_file):
    table, path, plain = table_file
    cases = [
        [("f64", ">", 0.4), ("i64", "not in", [1])],
        [[("f64", "==", NAN)], [("u8", "<", 1.5)]],
        [[("s", "not in", ["a"]), ("dec", ">=", 2.501)], [("i64", "<", -0.5)]],
    ]
    for filters in cases:
        terms = filters if isinstance(filters[0], list) else [filters]
        want = [
            r
            for r in range(table.num_rows)
            if any(
                all(_keeps(table[c][r].as_py(), op, lit) for c, op, lit in conj) for conj in terms
            )
        ]
        got = fastingest.read_parquet(path, filters=filters)["row"].to_pylist()
        assert got == want, filters
        try:
            theirs = pq.read_table(plain, filters=filters)["row"].to_pylist()
        except pa.ArrowInvalid:
            continue  # pyarrow refuses to cast 2**53 + 1 to a float for `i64 < -0.5`
        assert got == theirs, filters


def test_filters_take_the_shapes_pyarrow_takes(table_file):
    """Terms as lists (filters read from JSON), a list of one term's list,
    tuples and lists mixed: the shape is told by the first item's first
    element, as pyarrow tells it."""
    _, path, plain = table_file
    shapes = [
        [["u8", "<", 2]],
        [("u8", "<", 3), ["i64", ">", 0]],
        [[["u8", "<", 3]], [("i64", "==", 4)]],
        ((("u8", ">=", 254),), [["s", "in", ["a", "zz"]]]),
    ]
    for filters in shapes:
        got = fastingest.read_parquet(path, filters=filters)["row"].to_pylist()
        assert got, filters
        assert got == pq.read_table(plain, filters=filters)["row"].to_pylist(), filters


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        ([], "non-empty list"),
        ("u8 < 3", "non-empty list"),
        ([("u8", "<", 3), "u8"], "got the item 'u8'"),
        ([[]], "must be non-empty"),
        ([[("u8", "<", 3)], ("u8", ">", 1)], "must be a .column, op, value. tuple"),
        ([("u8", "<")], "must be a .column, op, value. tuple"),
        (pc.field("u8") < 3, "Expression is not taken"),
    ],
)
def test_misshapen_filters_are_refused_with_the_shape_named(table_file, filters, message):
    _, path, _ = table_file
    with pytest.raises(fastingest.InvalidArgumentError, match=message):
        fastingest.read_parquet(path, filters=filters)


def test_a_string_literal_for_a_number_column_is_still_refused(table_file):
    _, path, _ = table_file
    with pytest.raises(fastingest.InvalidArgumentError, match="cannot compare column"):
        fastingest.read_parquet(path, filters=[("i64", "in", ["two"])])


def test_dictionary_columns_follow_the_same_rules(tmp_path):
    table = pa.table(
        {
            "row": pa.array(range(6)),
            "s": pa.array(["a", None, "b", "a", None, "c"]).dictionary_encode(),
        }
    )
    path = tmp_path / "d.parquet"
    pq.write_table(table, path)
    for op, literal, want in [
        ("not in", ["a"], [1, 2, 4, 5]),
        ("in", [None, "c"], [1, 4, 5]),
        ("!=", "a", [2, 5]),
    ]:
        filters = [("s", op, literal)]
        got = fastingest.read_parquet(path, filters=filters)["row"].to_pylist()
        assert got == want, filters
        assert got == pq.read_table(path, filters=filters)["row"].to_pylist(), filters


def test_orc_filters_follow_the_same_rules(tmp_path):
    import pyarrow.orc as orc

    # ORC has no unsigned integers.
    table = _table().drop_columns(["u8", "u64"])
    path = str(tmp_path / "t.orc")
    orc.write_table(table, path)
    wrong = []
    for column, op, literal in CASES:
        if column not in table.column_names:
            continue
        want = _expected_rows(table, column, op, literal)
        got = fastingest.read_orc(path, filters=[(column, op, literal)])["row"].to_pylist()
        if got != want:
            wrong.append((column, op, literal, got, want))
    assert not wrong


@pytest.mark.parametrize("kind", [pa.decimal128(38, 5), pa.decimal256(50, 5)])
def test_a_float_against_wide_decimals_keeps_the_rows_the_exact_comparison_keeps(tmp_path, kind):
    # 6543605981154.28 is the double 6543605981154.2802734375; decimals
    # just below and above it must fall on their side (a float cast to the
    # column's units rounded it by 60 units and dropped ...154.27976).
    near = ["6543605981154.27976", "6543605981154.28027", "6543605981154.28028", "-1.5"]
    values = [Decimal(v) for v in near] + [None]
    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"d": pa.array(values, kind)}), path)
    literal = 6543605981154.28
    exact = Decimal(literal)
    for op, keep in [
        ("<", lambda v: v < exact),
        ("<=", lambda v: v <= exact),
        (">", lambda v: v > exact),
        (">=", lambda v: v >= exact),
        ("==", lambda v: v == exact),
        ("!=", lambda v: v != exact),
    ]:
        got = fastingest.read_parquet(path, filters=[("d", op, literal)]).column("d").to_pylist()
        assert got == [v for v in values if v is not None and keep(v)], op


@pytest.mark.parametrize("kind", [pa.decimal128(20, 5), pa.decimal256(50, 5)])
@pytest.mark.parametrize(
    "literal", [Decimal("1.234564"), Decimal("-1.234565"), Decimal("1.23456"), 1, -2]
)
def test_decimal_and_integer_literals_against_decimals_compare_exactly(tmp_path, kind, literal):
    # A literal of more digits than the column's scale is between two of its
    # values (a cast rounded 1.234564 to 1.23456, which `==` then matched).
    values = [Decimal(v) for v in ["1.23456", "1.23457", "-1.23457", "-1.23456", "1.00000"]]
    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"d": pa.array([*values, None], kind)}), path)
    ops = {
        "<": lambda v: v < literal,
        "<=": lambda v: v <= literal,
        ">": lambda v: v > literal,
        ">=": lambda v: v >= literal,
        "==": lambda v: v == literal,
        "!=": lambda v: v != literal,
    }
    for op, keep in ops.items():
        got = fastingest.read_parquet(path, filters=[("d", op, literal)]).column("d").to_pylist()
        assert got == [v for v in values if keep(v)], op
