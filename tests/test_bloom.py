"""Bloom filters rule out row groups for `==` and `in` filters
(parquet/bloom.rs). Each row group of the test file holds the values of one
residue class modulo the number of row groups, so its minimum and maximum
span almost the whole range and statistics rule nothing out: a value is in
one row group, and only its bloom filter says which. The rows must be
pyarrow's, whatever the bloom filters say; a row group is skipped only
where its bloom filter holds none of the values."""

from __future__ import annotations

import datetime
import decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fastingest
from tests.conftest import assert_tables_equal

GROUPS = 40
ROWS = 1_000  # a row group


def _base() -> np.ndarray:
    """Row group k's values are integers of the class k modulo GROUPS, from
    the whole of 0..40,000, so every row group's min and max are close to 0
    and 40,000. About a third of 0..40,000 is in no row group."""
    rng = np.random.default_rng(7)
    return np.concatenate([k + GROUPS * rng.integers(0, 1_000, ROWS) for k in range(GROUPS)])


EPOCH = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)
# Each column's value for a base value v, and its type.
COLUMNS = {
    "i64": (lambda v: v * 1_000_003 + 10**12, pa.int64()),
    "i32": (lambda v: v - 20_000, pa.int32()),
    "i16": (lambda v: v - 20_000, pa.int16()),
    "u32": (lambda v: v + 2**31, pa.uint32()),
    "u64": (lambda v: v + 2**63, pa.uint64()),
    "day": (lambda v: datetime.date(1970, 1, 1) + datetime.timedelta(days=v), pa.date32()),
    "ts_us": (
        lambda v: EPOCH + datetime.timedelta(seconds=v, microseconds=v % 7),
        pa.timestamp("us", "UTC"),
    ),
    "ts_s": (
        lambda v: datetime.datetime(2001, 1, 1) + datetime.timedelta(seconds=v),
        pa.timestamp("s"),
    ),
    "s": (lambda v: f"key-{v:05d}", pa.string()),
    "ls": (lambda v: f"long-{v}", pa.large_string()),
    "b": (lambda v: v.to_bytes(4, "little"), pa.binary()),
    "cat": (lambda v: f"c{v}", pa.string()),
    "f": (lambda v: v / 8.0, pa.float64()),
    "dec": (lambda v: decimal.Decimal(v) / 100, pa.decimal128(9, 2)),
}


def _table() -> pa.Table:
    base = _base().tolist()
    n = len(base)
    columns = {"row": pa.array(np.arange(n), pa.int64())}
    for name, (of, type_) in COLUMNS.items():
        columns[name] = pa.array([of(v) for v in base], type_)
    columns["cat"] = columns["cat"].dictionary_encode()
    # 240 values over 40 row groups: a value's class modulo 40 is its base
    # value's, so it too is in one row group.
    columns["i8"] = pa.array([v % 240 - 120 for v in base], pa.int8())
    columns["x"] = pa.array(np.random.default_rng(8).standard_normal(n))
    return pa.table(columns)


def _absent(column: str):
    """A value of `column` in no row group, within every row group's min
    and max."""
    present = set(_base().tolist())
    v = next(v for v in range(20_000, 40_000) if v not in present)
    of, type_ = COLUMNS[column]
    return pa.scalar(of(v), type_) if column == "u64" else of(v)


BLOOMED = [*COLUMNS, "i8"]
# Columns whose bloom filters fastingest reads: the values read are the
# values hashed. Not floats (-0.0 == 0.0, NaN) or decimals. (pyarrow writes
# `timestamp[s]` as milliseconds; the filter's literal is compared, and
# looked up, as milliseconds.)
TRUSTED = set(BLOOMED) - {"f", "dec"}


@pytest.fixture(scope="module")
def table() -> pa.Table:
    return _table()


def _write(table: pa.Table, path: Path, **options) -> Path:
    blooms = {c: {"ndv": ROWS, "fpp": 0.01} for c in BLOOMED}
    pq.write_table(
        table, path, row_group_size=ROWS, bloom_filter_options=blooms, compression="zstd", **options
    )
    return path


@pytest.fixture(scope="module")
def bloomed(table, tmp_path_factory) -> Path:
    return _write(table, tmp_path_factory.mktemp("bloom") / "bloomed.parquet")


def _read(path, filters, **kwargs) -> tuple[pa.Table, dict]:
    stats = fastingest.ReadStats()
    got = fastingest.read_parquet(str(path), filters=filters, stats=stats, **kwargs)
    return got, stats.to_dict()


def _value(table: pa.Table, column: str, group: int):
    value = table.column(column)[group * ROWS + 3]
    # pyarrow's filters take no Python int past int64's range.
    return value if column == "u64" else value.as_py()


@pytest.mark.parametrize("column", BLOOMED)
def test_a_value_of_one_row_group_is_read_from_it_alone(bloomed, table, column):
    value = _value(table, column, 7)
    filters = [(column, "==", value)]
    got, stats = _read(bloomed, filters)
    want = pq.read_table(bloomed, filters=filters)
    assert_tables_equal(got, want)
    assert got.num_rows >= 1
    assert set(v // ROWS for v in got.column("row").to_pylist()) == {7}
    if column in TRUSTED:
        # 39 row groups hold no such value; a false positive (1 %) keeps one.
        assert stats["row_groups_bloom_skipped"] >= GROUPS - 3, stats
    else:
        assert stats["row_groups_bloom_skipped"] == 0, stats


@pytest.mark.parametrize("column", sorted(TRUSTED - {"i8"}))
def test_a_value_in_no_row_group_fetches_no_column_data(bloomed, table, column):
    value = _absent(column)
    filters = [(column, "==", value)]
    got, stats = _read(bloomed, filters)
    assert_tables_equal(got, pq.read_table(bloomed, filters=filters))
    assert got.num_rows == 0
    assert stats["row_groups_bloom_skipped"] >= GROUPS - 2, stats
    assert stats["bytes_fetched"] < bloomed.stat().st_size / 4, stats


def test_in_keeps_the_row_groups_of_each_value(bloomed, table):
    values = [_value(table, "s", 3), _value(table, "s", 30), "absent"]
    filters = [("s", "in", values)]
    got, stats = _read(bloomed, filters)
    assert_tables_equal(got, pq.read_table(bloomed, filters=filters))
    assert {v // ROWS for v in got.column("row").to_pylist()} == {3, 30}
    assert stats["row_groups_bloom_skipped"] >= GROUPS - 4


def test_in_with_a_null_reads_every_row_group(tmp_path, table):
    t = table.select(["row", "s"]).set_column(
        1, "s", pa.array([None if i % 97 == 0 else v for i, v in enumerate(table["s"].to_pylist())])
    )
    path = tmp_path / "nulls.parquet"
    pq.write_table(t, path, row_group_size=ROWS, bloom_filter_options={"s": True})
    filters = [("s", "in", [_value(t, "s", 5), None])]
    got, stats = _read(path, filters)
    assert_tables_equal(got, pq.read_table(path, filters=filters))
    # The null rows of every row group match: none is skipped.
    assert {v // ROWS for v in got.column("row").to_pylist()} == set(range(GROUPS))
    assert stats["row_groups_bloom_skipped"] == 0


def test_each_alternative_of_an_or_keeps_its_row_groups(bloomed, table):
    filters = [
        [("i64", "==", _value(table, "i64", 11)), ("x", ">", -10.0)],
        [("s", "==", _value(table, "s", 22))],
        [("b", "==", b"none"), ("i32", "==", _value(table, "i32", 33))],
    ]
    got, stats = _read(bloomed, filters)
    assert_tables_equal(got, pq.read_table(bloomed, filters=filters))
    assert {v // ROWS for v in got.column("row").to_pylist()} == {11, 22}
    assert stats["row_groups_bloom_skipped"] >= GROUPS - 4


def test_an_alternative_without_a_bloom_filter_keeps_every_row_group(bloomed, table):
    filters = [[("s", "==", "absent")], [("x", ">", 3.0)]]
    got, stats = _read(bloomed, filters)
    assert_tables_equal(got, pq.read_table(bloomed, filters=filters))
    assert stats["row_groups_bloom_skipped"] == 0


def test_bloom_filters_off_read_the_same_rows(bloomed, table):
    filters = [("u64", "==", _value(table, "u64", 12))]
    on, with_blooms = _read(bloomed, filters)
    off, without = _read(bloomed, filters, config=fastingest.Config(bloom_filters=False))
    assert_tables_equal(on, off)
    assert without["row_groups_bloom_skipped"] == 0
    assert with_blooms["bytes_fetched"] * 4 < without["bytes_fetched"]


def test_a_stream_and_a_projection_skip_the_same_row_groups(bloomed, table):
    filters = [("ts_us", "==", _value(table, "ts_us", 17))]
    stats = fastingest.ReadStats()
    batches = list(
        fastingest.iter_batches(str(bloomed), columns=["row"], filters=filters, stats=stats)
    )
    got = pa.Table.from_batches(batches, schema=pa.schema([("row", pa.int64())]))
    assert_tables_equal(got, pq.read_table(bloomed, columns=["row"], filters=filters))
    assert {v // ROWS for v in got.column("row").to_pylist()} == {17}
    assert stats.to_dict()["row_groups_bloom_skipped"] >= GROUPS - 3


def test_damaged_bloom_filters_are_passed_over(tmp_path, table):
    path = _write(table.select(["row", "i64", "s"]), tmp_path / "damaged.parquet")
    meta = pq.ParquetFile(path).metadata
    data = bytearray(path.read_bytes())
    for rg in range(meta.num_row_groups):
        chunk = meta.row_group(rg).column(1).to_dict()  # i64
        start = chunk["bloom_filter_offset"]
        data[start : start + 8] = b"\xff" * 8
    path.write_bytes(bytes(data))
    value = _value(table, "i64", 9)
    got, stats = _read(path, [("i64", "==", value)])
    assert got.column("row").to_pylist() == [
        r
        for r, v in zip(table["row"].to_pylist(), table["i64"].to_pylist(), strict=True)
        if v == value
    ]
    assert stats["row_groups_bloom_skipped"] == 0
    # The other column's bloom filters still answer.
    got, stats = _read(path, [("s", "==", _value(table, "s", 9))])
    assert {v // ROWS for v in got.column("row").to_pylist()} == {9}
    assert stats["row_groups_bloom_skipped"] >= GROUPS - 3


def test_a_partitioned_dataset_looks_up_its_files_bloom_filters(tmp_path, table):
    for part in ("a", "b"):
        (tmp_path / f"part={part}").mkdir()
        _write(table.select(["row", "s"]), tmp_path / f"part={part}" / "data.parquet")
    filters = [("part", "==", "b"), ("s", "==", _value(table, "s", 25))]
    got, stats = _read(tmp_path, filters)
    assert {v // ROWS for v in got.column("row").to_pylist()} == {25}
    assert set(got.column("part").to_pylist()) == {"b"}
    assert stats["row_groups_bloom_skipped"] >= GROUPS - 3


def test_a_lookup_in_an_object_store_fetches_a_fraction_of_the_file(s3, bloomed, table):
    url = s3.put("bloomed.parquet", bloomed.read_bytes())
    filters = [("i32", "in", [_value(table, "i32", 2), _value(table, "i32", 38)])]
    stats = fastingest.ReadStats()
    got = fastingest.read_parquet(url, filters=filters, stats=stats, storage_options=s3.options())
    assert_tables_equal(got, pq.read_table(bloomed, filters=filters))
    assert {v // ROWS for v in got.column("row").to_pylist()} == {2, 38}
    s = stats.to_dict()
    assert s["row_groups_bloom_skipped"] >= GROUPS - 4
    assert s["bytes_fetched"] < bloomed.stat().st_size / 4, s
