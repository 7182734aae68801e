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
