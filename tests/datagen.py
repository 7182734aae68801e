"""Generated tables covering the Arrow types pyarrow writes to Parquet."""

from __future__ import annotations

import datetime as dt
import decimal
import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def all_types_table(n: int = 500, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    nulls = rng.random(n) < 0.1
    ints = rng.integers(-1000, 1000, n)

    def masked(arr: pa.Array) -> pa.Array:
        return pa.array(arr.to_pylist(), type=arr.type, mask=nulls)

    strs = [("ü" if i % 10 == 0 else "") + f"s{i % 37}" for i in range(n)]
    lists = [[int(x) for x in range(i % 4)] for i in range(n)]
    return pa.table(
        {
            "i8": pa.array(ints % 100, pa.int8()),
            "i16": pa.array(ints, pa.int16()),
            "i32": masked(pa.array(ints, pa.int32())),
            "i64": pa.array(ints * 1_000_000, pa.int64()),
            "u8": pa.array(np.abs(ints) % 200, pa.uint8()),
            "u32": pa.array(np.abs(ints), pa.uint32()),
            "u64": pa.array(np.abs(ints) * 7, pa.uint64()),
            "f32": pa.array(rng.random(n), pa.float32()),
            "f64": masked(pa.array(rng.standard_normal(n), pa.float64())),
            "bool": masked(pa.array(ints % 2 == 0)),
            "str": masked(pa.array(strs)),
            "large_str": pa.array(strs, pa.large_string()),
            "bin": pa.array([s.encode() for s in strs], pa.binary()),
            "large_bin": pa.array([s.encode() for s in strs], pa.large_binary()),
            "fixed": pa.array([bytes([i % 256]) * 4 for i in range(n)], pa.binary(4)),
            "date": pa.array([dt.date(2020, 1, 1) + dt.timedelta(days=int(i)) for i in range(n)]),
            "ts_ms": pa.array(ints.astype("int64") * 86_400_000, pa.timestamp("ms")),
            "ts_us_tz": pa.array(
                ints.astype("int64") * 1_000_000, pa.timestamp("us", tz="Europe/Paris")
            ),
            "ts_ns_utc": pa.array(ints.astype("int64"), pa.timestamp("ns", tz="UTC")),
            "time_us": pa.array((np.abs(ints) * 1000).astype("int64"), pa.time64("us")),
            "dec": pa.array([decimal.Decimal(int(x)) / 100 for x in ints], pa.decimal128(12, 2)),
            "dec_big": pa.array([decimal.Decimal(int(x)) for x in ints], pa.decimal128(30, 0)),
            "dict": pa.array([f"k{i % 5}" for i in range(n)]).dictionary_encode(),
            "list_i32": pa.array(lists, pa.list_(pa.int32())),
            "list_list": pa.array([[li, li] for li in lists], pa.list_(pa.list_(pa.int32()))),
            "large_list": pa.array(lists, pa.large_list(pa.int64())),
            "struct": pa.array([{"x": int(i), "y": s} for i, s in zip(ints, strs, strict=True)]),
            "nested_struct": pa.array([{"a": {"b": int(i)}, "c": [int(i)]} for i in ints]),
            "map": pa.array(
                [[("a", int(i)), ("b", 2)] for i in ints], pa.map_(pa.string(), pa.int64())
            ),
        }
    )


def numeric_table(n: int = 10_000, seed: int = 1) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "id": pa.array(np.arange(n), pa.int64()),
            "g": pa.array(rng.integers(0, 10, n), pa.int32()),
            "x": pa.array(rng.standard_normal(n)),
            "name": pa.array([f"n{i % 100:03d}" for i in range(n)]),
            "flag": pa.array(rng.random(n) < 0.5),
        }
    )


def parquet_bytes(table: pa.Table, **kwargs) -> bytes:
    """`table` written as Parquet with pyarrow (`kwargs` go to write_table)."""
    sink = io.BytesIO()
    pq.write_table(table, sink, **kwargs)
    return sink.getvalue()


# The types a random schema's columns are drawn from (those pyarrow's ORC
# writer takes), and how deep structs, lists and maps nest.
RANDOM_LEAVES = [
    pa.int8(),
    pa.int16(),
    pa.int32(),
    pa.int64(),
    pa.float32(),
    pa.float64(),
    pa.bool_(),
    pa.string(),
    pa.binary(),
    pa.timestamp("ns"),
    pa.date32(),
    pa.decimal128(10, 2),
    pa.decimal128(38, 10),
]
RANDOM_DEPTH = 2


def random_type(rng: np.random.Generator, depth: int = 0) -> pa.DataType:
    """A leaf type, or (above `RANDOM_DEPTH`) a struct, list or map of them."""
    r = rng.random()
    if depth < RANDOM_DEPTH and r < 0.2:
        fields = [(f"f{i}", random_type(rng, depth + 1)) for i in range(rng.integers(1, 4))]
        return pa.struct(fields)
    if depth < RANDOM_DEPTH and r < 0.35:
        return pa.list_(random_type(rng, depth + 1))
    if depth < RANDOM_DEPTH and r < 0.45:
        return pa.map_(pa.string(), random_type(rng, depth + 1))
    return RANDOM_LEAVES[rng.integers(0, len(RANDOM_LEAVES))]


def random_array(rng: np.random.Generator, t: pa.DataType, n: int) -> pa.Array:
    """`n` values of type `t`: nulls (none, some or half), extremes, times
    before 1970 with fractions, repeats and unique values."""
    nulls = rng.random(n) < rng.choice([0.0, 0.1, 0.5])
    if pa.types.is_struct(t):
        children = [random_array(rng, f.type, n) for f in t]
        return pa.StructArray.from_arrays(children, fields=list(t), mask=pa.array(nulls))
    if pa.types.is_list(t) or pa.types.is_map(t):
        ends = np.concatenate([[0], np.cumsum(rng.integers(0, 4, n))]).astype(np.int32)
        offsets, entries = pa.array(ends), int(ends[-1])
        if pa.types.is_list(t):
            items = random_array(rng, t.value_type, entries)
            return pa.ListArray.from_arrays(offsets, items, mask=pa.array(nulls))
        keys = pa.array([f"k{i}" for i in rng.integers(0, 40, entries)], pa.string())
        items = random_array(rng, t.item_type, entries)
        return pa.MapArray.from_arrays(offsets, keys, items, mask=pa.array(nulls))
    if pa.types.is_integer(t):
        info = np.iinfo(t.to_pandas_dtype())
        lo, hi = (info.min, info.max) if rng.random() < 0.5 else (-100, 100)
        values = rng.integers(lo, hi, n, endpoint=True, dtype=np.int64)
        return pa.array(values.astype(t.to_pandas_dtype()), t, mask=nulls)
    if pa.types.is_floating(t):
        values = rng.standard_normal(n) * 10.0 ** rng.integers(-5, 30)
        values[rng.random(n) < 0.05] = np.nan
        return pa.array(values.astype(t.to_pandas_dtype()), t, mask=nulls)
    if pa.types.is_boolean(t):
        return pa.array(rng.random(n) < 0.5, t, mask=nulls)
    if pa.types.is_string(t) or pa.types.is_binary(t):
        top = 0x3000 if rng.random() < 0.3 else 127
        words = [
            "".join(chr(c) for c in rng.integers(32, top, rng.integers(0, 20)))
            for _ in range(int(rng.choice([3, 200, 2000])))
        ]
        values = [words[i] for i in rng.integers(0, len(words), n)]
        if pa.types.is_binary(t):
            values = [w.encode() for w in values]
        return pa.array(values, t, mask=nulls)
    if pa.types.is_timestamp(t):
        values = rng.integers(-3 * 10**18, 3 * 10**18, n)
        if rng.random() < 0.5:  # whole seconds and milliseconds
            values = values // 10**9 * 10**9 + rng.integers(-999, 999, n) * 10**6
        return pa.array(values, t, mask=nulls)
    if pa.types.is_date(t):
        return pa.array(rng.integers(-100_000, 100_000, n).astype(np.int32)).cast(t)
    if pa.types.is_decimal(t):
        digits = rng.integers(-(10**9) + 1, 10**9, n)
        values = [
            None if m else decimal.Decimal(int(d)).scaleb(-t.scale)
            for d, m in zip(digits, nulls, strict=True)
        ]
        return pa.array(values, t)
    raise TypeError(t)
