"""ORC: generated files (every type and codec pyarrow's writer has), the
apache/orc example corpus (against pyarrow and the expected JSON rows),
corrupt files, requests through MinIO, and the cache."""

from __future__ import annotations

import datetime as dt
import decimal
import gzip
import io
import json
import math
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.orc as orc
import pytest

import fastingest
from devtools.orc_zone import fields as protobuf_fields
from devtools.orc_zone import written_in

from .conftest import assert_tables_equal
from .datagen import numeric_table, random_array, random_type

CODECS = ["uncompressed", "zlib", "snappy", "lz4", "zstd"]

# Example files fastingest knowingly reads differently from pyarrow, with the
# reason. This list only shrinks.
KNOWN_UNSUPPORTED: dict[str, str] = {}


# Files read with the right rows but metadata pyarrow carries and
# fastingest cannot, with the reason; their rows and types are compared.
KNOWN_METADATA_DIFFERS = {
    "TestOrcFile.metaData.orc": (
        "user metadata with non-UTF-8 values: arrow-rs keeps metadata as strings, so such "
        "bytes arrive replaced (U+FFFD)"
    ),
    "complextypes_iceberg.orc": (
        "ORC type attributes (iceberg.id, ...) of nested fields, which pyarrow turns into "
        "nested field metadata; fastingest carries those of top-level columns only (nested "
        "metadata would change the column's Arrow type away from what orc-rust decodes)"
    ),
}


def assert_same_rows_and_types(got: pa.Table, want: pa.Table) -> None:
    """Equal but for schema and field metadata."""
    assert [(f.name, str(f.type)) for f in got.schema] == [
        (f.name, str(f.type)) for f in want.schema
    ]
    assert got.to_pylist() == want.to_pylist()


def orc_bytes(table: pa.Table, **kwargs) -> bytes:
    sink = io.BytesIO()
    orc.write_table(table, sink, **kwargs)
    return sink.getvalue()


def every_type_table(n: int = 3_000, seed: int = 3) -> pa.Table:
    """The types pyarrow's ORC writer writes, with nulls in every column."""
    rng = np.random.default_rng(seed)
    valid = rng.random(n) > 0.1

    def masked(arr: pa.Array) -> pa.Array:
        return pa.array(arr.to_pylist(), arr.type, mask=~valid)

    base = dt.datetime(2020, 1, 1)
    return pa.table(
        {
            "i8": masked(pa.array(rng.integers(-128, 127, n), pa.int8())),
            "i16": masked(pa.array(rng.integers(-(2**15), 2**15 - 1, n), pa.int16())),
            "i32": masked(pa.array(rng.integers(-(2**31), 2**31 - 1, n), pa.int32())),
            "i64": masked(pa.array(rng.integers(-(2**62), 2**62, n), pa.int64())),
            "f32": masked(pa.array(rng.standard_normal(n), pa.float32())),
            "f64": masked(pa.array(rng.standard_normal(n), pa.float64())),
            "b": masked(pa.array(rng.random(n) > 0.5)),
            "s": masked(pa.array([f"v{i % 97}é" if i % 10 else "" for i in range(n)])),
            "bin": masked(pa.array([bytes([i % 256]) * (i % 5) for i in range(n)], pa.binary())),
            "d": masked(pa.array([dt.date(2000, 1, 1) + dt.timedelta(days=i) for i in range(n)])),
            "ts": masked(
                pa.array(
                    [base + dt.timedelta(seconds=i * 37, microseconds=i) for i in range(n)],
                    pa.timestamp("ns"),
                )
            ),
            "dec": masked(
                pa.array(
                    [decimal.Decimal(i * 7 - 5000).scaleb(-2) for i in range(n)],
                    pa.decimal128(12, 2),
                )
            ),
            "l": masked(pa.array([list(range(i % 4)) for i in range(n)], pa.list_(pa.int32()))),
            "st": masked(
                pa.array(
                    [{"x": i, "y": str(i)} for i in range(n)],
                    pa.struct([("x", pa.int64()), ("y", pa.string())]),
                )
            ),
            "m": masked(
                pa.array(
                    [[(f"k{j}", j) for j in range(i % 3)] for i in range(n)],
                    pa.map_(pa.string(), pa.int64()),
                )
            ),
        }
    )


@pytest.mark.parametrize("codec", CODECS)
def test_every_type_and_codec(tmp_path, codec):
    table = every_type_table(20_000)
    path = tmp_path / f"t-{codec}.orc"
    path.write_bytes(orc_bytes(table, compression=codec, stripe_size=64 * 1024))
    assert orc.ORCFile(path).nstripes > 1
    assert_tables_equal(fastingest.read_orc(str(path)), orc.read_table(path))


def test_projection_keeps_file_order_and_stripes_select(tmp_path):
    table = numeric_table(200_000)
    path = tmp_path / "n.orc"
    path.write_bytes(orc_bytes(table, stripe_size=256 * 1024))
    f = orc.ORCFile(path)
    assert f.nstripes >= 3
    cols = [table.column_names[3], table.column_names[0]]
    assert_tables_equal(
        fastingest.read_orc(str(path), columns=cols), orc.read_table(path, columns=cols)
    )
    want = pa.Table.from_batches([f.read_stripe(1), f.read_stripe(2)])
    assert_tables_equal(fastingest.read_orc(str(path), stripes=[1, 2]), want)


def test_zero_rows_and_many_files(tmp_path):
    empty = numeric_table(10).slice(0, 0)
    (tmp_path / "a.orc").write_bytes(orc_bytes(empty))
    got = fastingest.read_orc(str(tmp_path / "a.orc"))
    assert got.num_rows == 0 and got.schema == orc.read_table(tmp_path / "a.orc").schema
    parts = [numeric_table(1_000, seed=i) for i in range(3)]
    for i, t in enumerate(parts):
        (tmp_path / f"p{i}.orc").write_bytes(orc_bytes(t))
    got = fastingest.read_orc(str(tmp_path / "p*.orc"))
    assert_tables_equal(
        got, pa.concat_tables([orc.read_table(tmp_path / f"p{i}.orc") for i in range(3)])
    )


def test_errors_name_the_file(tmp_path):
    path = tmp_path / "n.orc"
    path.write_bytes(orc_bytes(numeric_table(1_000)))
    with pytest.raises(fastingest.ColumnNotFoundError, match="nope"):
        fastingest.read_orc(str(path), columns=["nope"])
    with pytest.raises(fastingest.InvalidArgumentError, match="stripe 7"):
        fastingest.read_orc(str(path), stripes=[7])
    parquet = tmp_path / "x.parquet"
    import pyarrow.parquet as pq

    pq.write_table(numeric_table(10), parquet)
    with pytest.raises(
        fastingest.CorruptFileError, match="not a valid ORC file: it is a Parquet file"
    ):
        fastingest.read_orc(str(parquet))
    for cut in (0, 1, 100, len(path.read_bytes()) - 3):
        bad = tmp_path / f"cut{cut}.orc"
        bad.write_bytes(path.read_bytes()[:cut])
        with pytest.raises(fastingest.FastIngestError, match=f"cut{cut}.orc"):
            fastingest.read_orc(str(bad))
    # Garbage in the data (ORC has no checksums): an error naming the file,
    # or a table of the file's shape; never a crash or a hang.
    for codec in ("uncompressed", "zlib"):
        raw = bytearray(orc_bytes(numeric_table(1_000), compression=codec))
        for i in range(10, len(raw) // 2, 97):
            raw[i] ^= 0xFF
        bad = tmp_path / f"flipped-{codec}.orc"
        bad.write_bytes(bytes(raw))
        try:
            got = fastingest.read_orc(str(bad))
        except fastingest.FastIngestError as e:
            assert bad.name in str(e)
        else:
            assert got.num_rows == 1_000 and got.schema == orc.read_table(path).schema


def integer_runs_table(n: int = 60_000, seed: int = 5) -> pa.Table:
    """Integer and date columns whose values make pyarrow's writer use every kind of
    run: short repeats, direct, patched base (small values with a few
    outliers), fixed and varying deltas; with nulls dense, sparse and
    total, and each type's extremes."""
    rng = np.random.default_rng(seed)
    columns: dict[str, pa.Array] = {}
    for name, kind in [
        ("int8", np.int8),
        ("int16", np.int16),
        ("int32", np.int32),
        ("int64", np.int64),
    ]:
        info = np.iinfo(kind)
        typ = pa.from_numpy_dtype(kind)
        outliers = rng.integers(0, 100, n).astype(kind)
        outliers[rng.integers(0, n, n // 200)] = info.max - rng.integers(0, 9, n // 200)
        # The same below zero: a patched run's base is then negative.
        below_zero = outliers - kind(100 if kind is np.int8 else 1000)
        patterns = {
            "random": rng.integers(info.min, info.max, n, endpoint=True, dtype=kind),
            "small": rng.integers(-5, 5, n).astype(kind),
            "runs": np.repeat(
                rng.integers(info.min // 2, info.max // 2, n // 7 + 1, dtype=kind), 7
            )[:n],
            "step": (np.arange(n) % 120 - 60).astype(kind),
            "sorted": np.sort(rng.integers(info.min // 2, info.max // 2, n, dtype=kind)),
            "falling": np.sort(rng.integers(info.min // 2, info.max // 2, n, dtype=kind))[::-1],
            "outliers": outliers,
            "below_zero_outliers": below_zero,
            "extremes": np.resize(np.array([info.min, info.max, 0, -1, 1], dtype=kind), n),
        }
        for pattern, values in patterns.items():
            columns[f"{name}_{pattern}"] = pa.array(values, typ)
        for density in (0.3, 0.99):
            mask = rng.random(n) < density
            columns[f"{name}_nulls_{density}"] = pa.array(
                rng.integers(info.min, info.max, n, dtype=kind), typ, mask=mask
            )
        columns[f"{name}_all_null"] = pa.nulls(n, typ)
    # Dates: days since 1970, an int's stream.
    days = rng.integers(-50_000, 50_000, n).astype(np.int32)
    columns["date_random"] = pa.array(days, pa.int32()).cast(pa.date32())
    columns["date_sorted"] = pa.array(np.sort(days), pa.int32()).cast(pa.date32())
    columns["date_nulls"] = pa.array(days, pa.int32(), mask=rng.random(n) < 0.5).cast(pa.date32())
    columns["s"] = pa.array([f"v{i % 13}" for i in range(n)])
    columns["f"] = pa.array(rng.standard_normal(n))
    return pa.table(columns)


@pytest.mark.parametrize("codec", CODECS)
def test_integer_runs_of_every_kind_match_pyarrow(tmp_path, codec):
    # fastingest decodes top-level integer columns itself (run length
    # encoding v2, byte runs, present streams) and the rest with orc-rust:
    # both, and the two joined, must equal pyarrow's reader.
    table = integer_runs_table()
    for stripe_size in (64 << 20, 256 << 10):
        path = tmp_path / f"ints-{codec}-{stripe_size}.orc"
        path.write_bytes(orc_bytes(table, compression=codec, stripe_size=stripe_size))
        want = orc.read_table(path)
        assert_tables_equal(fastingest.read_orc(str(path)), want)
        some = ["int8_random", "int16_outliers", "s", "int64_nulls_0.3", "date_nulls", "f"]
        assert_tables_equal(
            fastingest.read_orc(str(path), columns=some), orc.read_table(path, columns=some)
        )
        only_ints = ["int32_sorted", "int64_below_zero_outliers"]
        streamed = pa.Table.from_batches(
            list(fastingest.iter_orc_batches(str(path), columns=only_ints))
        )
        assert_tables_equal(streamed, orc.read_table(path, columns=only_ints))


def text_and_number_table(n: int = 40_000, seed: int = 7) -> pa.Table:
    """String, binary, boolean, timestamp and decimal columns shaped to reach each path of
    fastingest's own decoders: values of every length class (empty, short, around
    16, 32 and 64 bytes, long), multi-byte UTF-8, few distinct values (dictionary
    encoded when the writer is asked to), nulls dense, sparse and total; timestamps
    before 1970 with fractions (ORC-763), at nanosecond precision and near the
    ends of timestamp[ns]; decimals of every precision class, negative and at
    their extremes."""
    rng = np.random.default_rng(seed)
    lengths = rng.choice([0, 1, 5, 15, 16, 17, 31, 32, 33, 63, 64, 65, 200, 1500], n)
    alphabet = np.array(list("abcdefghijklmnopqrstuvwxyz0123456789"))

    def text(length: int, i: int) -> str:
        body = "".join(alphabet[(i + np.arange(length)) % len(alphabet)])
        return body if i % 7 else body[: max(0, length - 2)] + "é"

    words = [text(int(lengths[i]), i) for i in range(n)]
    few = [f"label-{i % 37}-" + "x" * (i % 37) for i in range(n)]
    long_few = [("long-" * 30) + str(i % 11) for i in range(n)]
    columns: dict[str, pa.Array] = {
        "s_any": pa.array(words),
        "s_few": pa.array(few),
        "s_long_few": pa.array(long_few),
        "s_nulls": pa.array(words, mask=rng.random(n) < 0.4),
        "s_few_nulls": pa.array(few, mask=rng.random(n) < 0.97),
        "s_all_null": pa.nulls(n, pa.string()),
        "s_empty": pa.array([""] * n),
        "bin": pa.array([w.encode() + bytes([i % 256]) for i, w in enumerate(words)]),
        "bin_nulls": pa.array(
            [bytes([i % 251]) * (i % 9) for i in range(n)], pa.binary(), mask=rng.random(n) < 0.5
        ),
    }
    second = 1_000_000_000
    stamps = rng.integers(-3_000_000_000, 3_000_000_000, n) * second + rng.integers(0, second, n)
    stamps[::13] = rng.integers(-86_400, 86_400, len(stamps[::13])) * second + (
        rng.integers(0, 1000, len(stamps[::13])) * 1_000_000
    )
    stamps[::17] = rng.integers(-5, 5, len(stamps[::17])) * second
    stamps[:4] = [-(2**63) + 2 * second, 2**63 - 2 * second, -1, 0]
    columns["ts"] = pa.array(stamps, pa.timestamp("ns"))
    columns["ts_nulls"] = pa.array(stamps, pa.timestamp("ns"), mask=rng.random(n) < 0.3)
    columns["ts_utc"] = pa.array(stamps, pa.timestamp("ns", tz="UTC"))
    for precision, scale in [(5, 2), (18, 4), (19, 0), (38, 10), (38, 38)]:
        top = 10**precision - 1
        unscaled = [int(v) for v in rng.integers(-(2**62), 2**62, n)]
        unscaled = [max(-top, min(top, v * (10 ** max(0, precision - 19)))) for v in unscaled]
        unscaled[:3] = [top, -top, 0]
        wide = decimal.Context(prec=60)
        values = [decimal.Decimal(v).scaleb(-scale, wide) for v in unscaled]
        typ = pa.decimal128(precision, scale)
        columns[f"dec_{precision}_{scale}"] = pa.array(values, typ)
    columns["dec_nulls"] = pa.array(values, typ, mask=rng.random(n) < 0.5)
    flags = rng.random(n) < 0.5
    columns["b"] = pa.array(flags)
    columns["b_runs"] = pa.array(np.repeat(flags[: n // 100 + 1], 100)[:n])
    columns["b_nulls"] = pa.array(flags, mask=rng.random(n) < 0.3)
    columns["b_few"] = pa.array(flags, mask=rng.random(n) < 0.99)
    columns["b_all_null"] = pa.nulls(n, pa.bool_())
    columns["i"] = pa.array(np.arange(n, dtype=np.int64))
    columns["f"] = pa.array(rng.standard_normal(n))
    return pa.table(columns)


@pytest.mark.parametrize("codec", CODECS)
def test_strings_timestamps_decimals_match_pyarrow(tmp_path, codec):
    # fastingest decodes top-level string, binary, boolean, timestamp and
    # decimal columns itself, strings direct or dictionary encoded: each, and the
    # columns orc-rust decodes beside them, must equal pyarrow's reader.
    table = text_and_number_table()
    for threshold in (0.0, 1.0):
        for stripe_size in (64 << 20, 256 << 10):
            path = tmp_path / f"t-{codec}-{threshold}-{stripe_size}.orc"
            path.write_bytes(
                orc_bytes(
                    table,
                    compression=codec,
                    stripe_size=stripe_size,
                    dictionary_key_size_threshold=threshold,
                )
            )
            assert_tables_equal(fastingest.read_orc(str(path)), orc.read_table(path))
            some = ["s_few_nulls", "f", "ts_utc", "dec_38_10", "bin", "b_nulls"]
            streamed = pa.Table.from_batches(
                list(fastingest.iter_orc_batches(str(path), columns=some))
            )
            assert_tables_equal(streamed, orc.read_table(path, columns=some))


@pytest.mark.parametrize("codec", CODECS)
def test_float_bits_match_pyarrow_across_compression_chunks(tmp_path, codec):
    # fastingest copies a float column's stream into its values, chunk by
    # chunk (64 KiB compression blocks, the smallest pyarrow writes; a value
    # cut by a chunk's end is the Rust tests' case). NaN payloads,
    # infinities, -0.0 and subnormals must come back bit for bit.
    rng = np.random.default_rng(11)
    n = 50_000
    special = np.array([np.nan, np.inf, -np.inf, -0.0, 5e-324, -1e-310, 1.5], np.float64)
    f64 = rng.standard_normal(n)
    f64[rng.integers(0, n, 500)] = rng.choice(special, 500)
    f64[7] = np.frombuffer(np.uint64(0x7FF8_0000_DEAD_BEEF).tobytes(), np.float64)[0]
    f32 = f64.astype(np.float32)
    nulls = rng.random(n) < 0.2
    table = pa.table(
        {
            "f32": pa.array(f32),
            "f64": pa.array(f64),
            "f32_nulls": pa.array(f32, mask=nulls),
            "f64_nulls": pa.array(f64, mask=nulls),
            "f64_all_null": pa.nulls(n, pa.float64()),
        }
    )
    path = tmp_path / f"floats-{codec}.orc"
    path.write_bytes(
        orc_bytes(table, compression=codec, compression_block_size=64 << 10, stripe_size=128 << 10)
    )
    assert orc.ORCFile(path).nstripes > 1
    got, want = fastingest.read_orc(str(path)), orc.read_table(path)
    assert got.schema == want.schema
    for name in table.column_names:
        ours, theirs = got[name].combine_chunks(), want[name].combine_chunks()
        assert ours.null_count == theirs.null_count, name
        assert ours.is_null().equals(theirs.is_null()), name
        width = np.uint32 if ours.type == pa.float32() else np.uint64
        bits = [a.fill_null(0).to_numpy(zero_copy_only=False).view(width) for a in (ours, theirs)]
        assert np.array_equal(bits[0], bits[1]), name


def test_timestamps_written_in_another_zone_read_as_its_wall_clock(tmp_path, system_zones):
    # pyarrow's writer records GMT; with the stripe footers made to say
    # Asia/Taipei (an uncompressed file of many stripes) the values are
    # wall-clock times there, as Hive and Spark files in the JVM's zone are.
    # Times spread over 1900-2037 (every span of the zone's transition
    # tables is built), clustered ones (the kept hours), times before 1970
    # with fractions (the C++ writer's negative nanoseconds), and nulls: as
    # pyarrow reads them.
    rng = np.random.default_rng(5)
    n = 60_000
    spread = rng.integers(-2_208_988_800, 2_145_916_800, n) * 1_000_000_000
    spread += rng.integers(0, 1_000_000_000, n)
    clustered = 1_616_900_000_000_000_000 + rng.integers(0, 86_400_000_000_000, n)
    before_1970 = -rng.integers(1, 10**18, n)
    table = pa.table(
        {
            "spread": pa.array(spread, pa.timestamp("ns")),
            "clustered": pa.array(clustered, pa.timestamp("ns")),
            "before_1970": pa.array(before_1970, pa.timestamp("ns"), mask=rng.random(n) < 0.1),
        }
    )
    path = tmp_path / "taipei.orc"
    data = orc_bytes(table, compression="uncompressed", stripe_size=256 << 10)
    path.write_bytes(written_in(data, "Asia/Taipei"))
    assert orc.ORCFile(path).nstripes > 1
    want = orc.read_table(path)
    assert not want.equals(table)  # the zone moved them
    assert_tables_equal(fastingest.read_orc(str(path)), want)


@pytest.mark.parametrize("seed", range(48))
def test_random_schemas_read_as_pyarrow_reads_them(tmp_path, seed):
    # Columns of every type pyarrow's ORC writer takes, nested two deep in
    # structs, lists and maps, nulls at every level, a random codec, stripe
    # size, dictionary threshold and format version (0.11: run length
    # encoding v1). A run of 200 such schemas found timestamps inside
    # structs, lists and maps read wrong by orc-rust, and in 0.11 files
    # refused.
    rng = np.random.default_rng(seed)
    n = int(rng.choice([1, 50, 3_000]))
    columns = {f"c{i}": random_array(rng, random_type(rng), n) for i in range(rng.integers(1, 5))}
    table = pa.table(columns)
    options = {
        "compression": str(rng.choice(CODECS)),
        "stripe_size": int(rng.choice([64 << 10, 64 << 20])),
        "dictionary_key_size_threshold": float(rng.choice([0.0, 1.0])),
        "file_version": str(rng.choice(["0.11", "0.12"])),
    }
    path = tmp_path / "random.orc"
    path.write_bytes(orc_bytes(table, **options))
    assert_tables_equal(fastingest.read_orc(str(path)), orc.read_table(path))


def _nested_table(rng, n: int, times: pa.Array) -> pa.Table:
    """Structs, lists and maps, nested two deep, of `times` and other
    types, with nulls at every level."""

    def mask(k: int) -> pa.Array:
        return pa.array(rng.random(k) < 0.15)

    def offsets(k: int) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(rng.integers(0, 4, k))]).astype(np.int32)

    assert len(times) == n
    ints = pa.array(rng.integers(-(2**40), 2**40, n), pa.int64(), mask=rng.random(n) < 0.2)
    names = pa.array([f"n{i % 13}" for i in range(n)], mask=rng.random(n) < 0.2)
    struct = pa.StructArray.from_arrays([times, ints, names], ["t", "i", "s"], mask=mask(n))
    outer = offsets(n)
    inner_n = int(outer[-1])
    inner = pa.StructArray.from_arrays(
        [
            times.take(pa.array(rng.integers(0, n, inner_n))),
            pa.array(rng.standard_normal(inner_n)),
        ],
        ["t", "f"],
        mask=mask(inner_n),
    )
    lists = pa.ListArray.from_arrays(pa.array(outer), inner, mask=mask(n))
    keys = pa.array([f"k{i}" for i in range(inner_n)])
    value_offsets = offsets(inner_n)
    value_items = times.take(pa.array(rng.integers(0, n, int(value_offsets[-1]))))
    values = pa.ListArray.from_arrays(pa.array(value_offsets), value_items, mask=mask(inner_n))
    maps = pa.MapArray.from_arrays(pa.array(outer), keys, values, mask=mask(n))
    return pa.table({"struct": struct, "lists": lists, "maps": maps, "plain": ints})


@pytest.mark.parametrize("compression", ["uncompressed", "zstd", "snappy"])
def test_nested_columns_read_as_pyarrow_reads_them_with_times_before_1970(tmp_path, compression):
    # Timestamps inside structs, lists and maps, many before 1970 with a
    # fraction of a second (which pyarrow's writer stores with negative
    # nanoseconds): `orc-rust` read those 2^61 ns off or refused them; they
    # are decoded here now, with the structs, lists and maps around them.
    rng = np.random.default_rng(21)
    n = 150_000
    seconds = rng.integers(-3 * 10**9, 3 * 10**9, n)
    fraction = rng.choice([0, 1, 1_000, 1_000_000, 123_456_789], n)
    times = pa.array(seconds * 10**9 + fraction, pa.timestamp("ns"), mask=rng.random(n) < 0.1)
    table = _nested_table(rng, n, times)
    path = tmp_path / "nested.orc"
    path.write_bytes(orc_bytes(table, compression=compression, stripe_size=1 << 20))
    assert orc.ORCFile(path).nstripes > 1
    want = orc.read_table(path)
    assert_tables_equal(fastingest.read_orc(str(path)), want)
    # Streamed, and a column at a time.
    streamed = pa.Table.from_batches(list(fastingest.iter_orc_batches([str(path), str(path)])))
    assert_tables_equal(streamed, pa.concat_tables([want, want]))
    for name in table.column_names:
        assert_tables_equal(fastingest.read_orc(str(path), columns=[name]), want.select([name]))


def test_nested_summer_times_after_2099_follow_the_zones_rule(tmp_path):
    rng = np.random.default_rng(22)
    n = 20_000
    times = pa.array(rng.integers(4_102_444_800, 9_183_110_400, n) * 10**9, pa.timestamp("ns"))
    table = _nested_table(rng, n, times)
    data = orc_bytes(table, compression="uncompressed")
    path = tmp_path / "nested-cet.orc"
    path.write_bytes(data.replace(b"\x1a\x03GMT", b"\x1a\x03CET"))
    want = orc.read_table(path)
    assert not want["struct"].equals(table["struct"])  # the zone moved them
    assert_tables_equal(fastingest.read_orc(str(path)), want)


def _times_in(zone: str, tmp_path, values: np.ndarray) -> Path:
    table = pa.table({"t": pa.array(values, pa.timestamp("ns"))})
    path = tmp_path / f"{zone.replace('/', '_')}.orc"
    path.write_bytes(written_in(orc_bytes(table, compression="uncompressed"), zone))
    return path


def _spread_times(rng, n: int) -> np.ndarray:
    """Times over 1700-2260, with fractions: local mean time before the
    zones' first transitions, their histories, and the rules past 2099."""
    seconds = rng.integers(-8_520_000_000, 9_100_000_000, n)
    return seconds * 10**9 + rng.integers(0, 10**9, n)


SYSTEM_ZONES = Path("/usr/share/zoneinfo")


@pytest.fixture
def system_zones(monkeypatch):
    # pyarrow's ORC reader reads the zone files of the machine it runs on.
    if not (SYSTEM_ZONES / "Europe" / "Paris").exists():
        pytest.skip(f"no tz database in {SYSTEM_ZONES} for pyarrow's ORC reader to compare with")
    monkeypatch.delenv("TZDIR", raising=False)
    monkeypatch.delenv("CONDA_PREFIX", raising=False)


def test_the_writer_zone_is_read_from_the_systems_zone_file(tmp_path, system_zones):
    # As the ORC C++ reader (pyarrow's) reads it, before a zone's first
    # transition too (there: the first standard time it changed to, where
    # `chrono-tz` gives local mean time: 6 minutes apart in Asia/Taipei),
    # and for names the tz database's builds define differently (`CET`: a
    # link to Europe/Brussels upstream, a zone of its own in Debian's).
    rng = np.random.default_rng(31)
    zones = [
        "Asia/Taipei",
        "America/New_York",
        "Europe/Dublin",
        "Australia/Lord_Howe",
        "America/Sao_Paulo",
        "Africa/Casablanca",
        "Pacific/Apia",
        "Asia/Kolkata",
        "CET",
        "EET",
        "WET",
        "EST",
        "HST",
        "PRC",
    ]
    values = _spread_times(rng, 20_000)
    moved = []
    for zone in zones:
        if not (SYSTEM_ZONES / zone).exists():
            continue
        path = _times_in(zone, tmp_path, values)
        want = orc.read_table(path)
        assert_tables_equal(fastingest.read_orc(str(path)), want)
        # (A zone of one offset reads every value as written.)
        if not want.equals(pa.table({"t": pa.array(values, pa.timestamp("ns"))})):
            moved.append(zone)
    assert len(moved) >= 10, moved


def test_tzdir_names_the_zone_files_as_for_pyarrow(tmp_path, system_zones, monkeypatch):
    # TZDIR moves the zone files, for both readers: here `CET` is Sydney's.
    zones = tmp_path / "zones"
    zones.mkdir()
    (zones / "CET").write_bytes((SYSTEM_ZONES / "Australia" / "Sydney").read_bytes())
    # (pyarrow's reader reads in GMT, from there too.)
    (zones / "GMT").write_bytes((SYSTEM_ZONES / "GMT").read_bytes())
    values = np.arange(0, 2_000_000_000, 1_000_003) * 10**9
    path = _times_in("CET", tmp_path, values)
    in_paris = fastingest.read_orc(str(path))
    monkeypatch.setenv("TZDIR", str(zones))
    got = fastingest.read_orc(str(path))
    assert_tables_equal(got, orc.read_table(path))
    # Read against ORC's epoch in January (summer there, 11 hours on):
    # July times (winter, 10 hours on) an hour back; Paris' an hour on.
    july = np.datetime64("2020-07-15T12:00", "ns").astype(np.int64)
    at = int(np.argmin(np.abs(values - july)))
    hour = 3600 * 10**9
    assert got["t"].cast(pa.int64())[at].as_py() == values[at] - hour
    assert in_paris["t"].cast(pa.int64())[at].as_py() == values[at] + hour
    # No file for the zone: the tables fastingest carries (`chrono-tz`'s),
    # where pyarrow refuses the file; they agree with the system's since 1970.
    # (Both readers keep a zone file once read: another directory.)
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "GMT").write_bytes((SYSTEM_ZONES / "GMT").read_bytes())
    monkeypatch.setenv("TZDIR", str(bare))
    with pytest.raises(Exception, match="(?i)time ?zone"):
        orc.read_table(path)
    assert_tables_equal(fastingest.read_orc(str(path)), in_paris)


@pytest.mark.parametrize("compression", ["uncompressed", "snappy", "lz4"])
def test_a_zone_the_tz_database_does_not_name_refuses_timestamps_only(tmp_path, compression):
    # A Java writer records the JVM's zone, which can be a custom
    # `GMT+08:00`. `orc-rust` panicked on such a name whatever the columns
    # (the file was refused as corrupt); like pyarrow, fastingest now reads
    # the other columns and refuses the timestamps, naming the zone.
    n = 150_000
    table = pa.table(
        {
            "i": pa.array(np.arange(n)),
            "s": pa.array([f"v{i % 97}" for i in range(n)]),
            "t": pa.array(np.arange(n) * 10**9, pa.timestamp("ns")),
        }
    )
    data = orc_bytes(table, compression=compression, stripe_size=1 << 20)
    if compression == "uncompressed":
        zone, data = "GMT+08:00", written_in(data, "GMT+08:00")
    else:
        # Their small footers are stored as they are: the name in place.
        assert data.count(b"\x1a\x03GMT") == orc.ORCFile(pa.BufferReader(data)).nstripes
        zone, data = "XYZ", data.replace(b"\x1a\x03GMT", b"\x1a\x03XYZ")
    path = tmp_path / "zone.orc"
    path.write_bytes(data)
    want = orc.read_table(path, columns=["i", "s"])
    assert_tables_equal(fastingest.read_orc(str(path), columns=["s", "i"]), want)
    streamed = fastingest.iter_orc_batches([str(path)], columns=["i", "s"])
    assert_tables_equal(pa.Table.from_batches(list(streamed)), want)
    with pytest.raises(Exception, match="(?i)time ?zone"):
        orc.read_table(path)
    with pytest.raises(
        fastingest.UnsupportedError, match=rf"zone\.orc.*stripe 0.*time zone \"{re.escape(zone)}\""
    ):
        fastingest.read_orc(str(path))


def _random_union(rng, n: int) -> pa.Array:
    """A sparse union of 1-3 random types (leaves, or structs, lists and
    maps of them), each row tagged at random."""
    types = [random_type(rng, depth=1) for _ in range(rng.integers(1, 4))]
    tags = pa.array(rng.integers(0, len(types), n).astype(np.int8))
    return pa.UnionArray.from_sparse(tags, [random_array(rng, t, n) for t in types])


@pytest.mark.parametrize("seed", range(24))
def test_random_unions_read_as_pyarrow_reads_them(tmp_path, seed):
    # Unions at the top, in a struct and as a list's items (with nulls), of
    # every type pyarrow's ORC writer takes (timestamps before 1970 with
    # fractions among them, which `orc-rust` read 2^61 ns off), in both
    # format versions.
    rng = np.random.default_rng(1000 + seed)
    n = int(rng.choice([1, 50, 3_000]))
    ends = np.concatenate([[0], np.cumsum(rng.integers(0, 4, n))]).astype(np.int32)
    table = pa.table(
        {
            "top": _random_union(rng, n),
            # (pyarrow's writer aborts on a union in a struct with nulls.)
            "in_struct": pa.StructArray.from_arrays(
                [_random_union(rng, n), random_array(rng, pa.int32(), n)], ["u", "i"]
            ),
            "in_list": pa.ListArray.from_arrays(
                pa.array(ends),
                _random_union(rng, int(ends[-1])),
                mask=pa.array(rng.random(n) < 0.2),
            ),
        }
    )
    options = {
        "compression": str(rng.choice(CODECS)),
        "stripe_size": int(rng.choice([64 << 10, 64 << 20])),
        "file_version": str(rng.choice(["0.11", "0.12"])),
    }
    path = tmp_path / "unions.orc"
    path.write_bytes(orc_bytes(table, **options))
    want = orc.read_table(path)
    assert_tables_equal(fastingest.read_orc(str(path)), want)
    for name in table.column_names:
        assert_tables_equal(fastingest.read_orc(str(path), columns=[name]), want.select([name]))


@pytest.mark.parametrize("when", ["before_1970", "after_2099"])
def test_times_in_a_union_read_before_1970_and_after_2099(tmp_path, when):
    # `orc-rust` decoded unions, and read a timestamp under one wrong: before
    # 1970 with a fraction 2^61 ns off, after 2099 in a zone with summer
    # time an hour off. Here each, in a union beside integers; the later
    # times in a file written in CET (the earlier in UTC: zone databases
    # differ on CET's history before 1900).
    rng = np.random.default_rng(23)
    n = 30_000
    if when == "before_1970":
        values = rng.integers(-3 * 10**9, 0, n) * 10**9 + rng.choice([1, 1_000, 123_456_789], n)
    else:
        values = rng.integers(4_102_444_800, 9_183_110_400, n) * 10**9
    times = pa.array(values, pa.timestamp("ns"))
    tags = pa.array((rng.random(n) < 0.7).astype(np.int8))
    ints = pa.array(rng.integers(-(2**40), 2**40, n), pa.int64())
    union = pa.UnionArray.from_sparse(tags, [ints, times])
    data = orc_bytes(pa.table({"u": union}), compression="uncompressed")
    path = tmp_path / "union.orc"
    path.write_bytes(
        data if when == "before_1970" else data.replace(b"\x1a\x03GMT", b"\x1a\x03CET")
    )
    want = orc.read_table(path)
    got = fastingest.read_orc(str(path))
    assert_tables_equal(got, want)
    union_read = got["u"].combine_chunks()
    picked = np.asarray(union_read.type_codes) == 1
    assert picked.sum() > n // 2
    read_times = union_read.field(1).cast(pa.int64()).to_numpy(zero_copy_only=False)[picked]
    written = values[picked]
    if when == "before_1970":
        assert np.array_equal(read_times, written)
    else:
        # Summer times an hour on, winter ones as written (see below).
        assert set((read_times - written) // 3_600_000_000_000) == {0, 1}


def test_a_union_row_tagged_past_its_variants_is_refused_naming_the_file(tmp_path):
    # 200 rows, all tagged 1: the tag stream is two runs (127 + 3 = 130,
    # 67 + 3 = 70) of the byte 1; tagged 5 instead, past the 2 variants.
    union = pa.UnionArray.from_sparse(
        pa.array(np.ones(200, np.int8)), [pa.array(np.arange(200)), pa.array(np.arange(200.0))]
    )
    data = orc_bytes(pa.table({"u": union}), compression="uncompressed")
    runs = b"\x7f\x01\x43\x01"
    assert data.count(runs) == 1
    path = tmp_path / "bad-tag.orc"
    path.write_bytes(data.replace(runs, b"\x7f\x05\x43\x05"))
    with pytest.raises(fastingest.CorruptFileError, match="bad-tag.orc.*tagged 5, past its 2"):
        fastingest.read_orc(str(path))


def test_summer_times_after_2099_follow_the_zones_rule_of_today(tmp_path):
    # chrono-tz's tables end in 2099; after them the ORC C++ reader goes on
    # with the zone's rule (the compiled zone file's POSIX string), and so
    # does fastingest. CET keeps the EU rule (last Sundays of March and
    # October at 01:00 UTC) in every tz database version, so its future
    # reads the same everywhere: times spread over 2100-2261, and every ten
    # minutes across the transitions of 2100, 2204 (a leap year) and 2261.
    rng = np.random.default_rng(11)
    spread = rng.integers(4_102_444_800, 9_183_110_400, 40_000) * 1_000_000_000
    around = []
    for year in (2100, 2204, 2261):
        for month in (3, 10):
            start = np.datetime64(f"{year}-{month:02d}-24", "s").astype(np.int64)
            around.append(np.arange(start, start + 9 * 86_400, 600))
    edges = np.concatenate(around) * 1_000_000_000
    values = np.concatenate([spread, edges]) + rng.integers(0, 10**9, len(spread) + len(edges))
    table = pa.table({"at": pa.array(values, pa.timestamp("ns"))})
    data = orc_bytes(table, compression="uncompressed", stripe_size=256 << 10)
    path = tmp_path / "cet-future.orc"
    path.write_bytes(data.replace(b"\x1a\x03GMT", b"\x1a\x03CET"))
    want = orc.read_table(path)
    # Summer times an hour further on than winter ones (which stay: ORC
    # counts from 2015-01-01 00:00 in the writer's zone, a winter time).
    moved = want["at"].cast(pa.int64()).to_numpy() - values
    assert set(moved // 3_600_000_000_000) == {0, 1}
    assert_tables_equal(fastingest.read_orc(str(path)), want)


def _decimal64_file(tmp_path, unscaled: pa.Array) -> Path:
    """An uncompressed ORC file of format version 1.9999 whose one column,
    `d`, is a decimal(12, 2) stored as integers (`unscaled`): pyarrow's
    writer writes an int64 column (signed run length encoding v2); its
    footer is made to say decimal and its postscript version 1.9999."""
    raw = orc_bytes(pa.table({"d": unscaled}), compression="uncompressed")
    # The footer's type of column 1: `kind: LONG` (4) with precision 0 and
    # scale 0 becomes `kind: DECIMAL` (14), precision 12, scale 2 (same
    # length).
    long_type = b"\x22\x08\x08\x04\x20\x00\x28\x00\x30\x00"
    assert raw.count(long_type) == 1
    raw = raw.replace(long_type, b"\x22\x08\x08\x0e\x20\x00\x28\x0c\x30\x02")
    # The postscript (its length in the last byte): version [1, 9999] for
    # [0, 12], one byte longer.
    ps_len = raw[-1]
    ps = raw[-1 - ps_len : -1]
    assert ps.count(b"\x22\x02\x00\x0c") == 1
    ps = ps.replace(b"\x22\x02\x00\x0c", b"\x22\x03\x01\x8f\x4e")
    path = tmp_path / "decimal64.orc"
    path.write_bytes(raw[: -1 - ps_len] + ps + bytes([len(ps)]))
    return path


def _hive11_decimals(table: pa.Table, types: list[tuple[int, int]]) -> bytes:
    """`table` written by pyarrow (uncompressed) with its decimal columns of
    these (precision, scale) made precision 0 and scale 0 in the footer, as
    Hive 0.11 wrote decimals: each value keeps the scale it was stored at."""
    raw = orc_bytes(table, compression="uncompressed")
    for precision, scale in types:
        typed = b"\x22\x08\x08\x0e\x20\x00\x28" + bytes([precision, 0x30, scale])
        assert raw.count(typed) == 1
        raw = raw.replace(typed, b"\x22\x08\x08\x0e\x20\x00\x28\x00\x30\x00")
    return raw


def test_hive_011_decimals_read_at_scale_6_as_pyarrow_reads_them(tmp_path):
    # Precision 0: pyarrow gives decimal(38, 6), each value cut (towards
    # zero) or widened from its own scale to 6. Nulls, and values at scales
    # 10 and 2.
    rng = np.random.default_rng(12)
    n = 5_000
    digits = rng.integers(-(10**18), 10**18, n)
    wide = [
        None if k % 7 == 0 else decimal.Decimal(int(v)).scaleb(-10) for k, v in enumerate(digits)
    ]
    narrow = [decimal.Decimal(int(v) % 100_000).scaleb(-2) for v in digits]
    table = pa.table(
        {
            "wide": pa.array(wide, pa.decimal128(20, 10)),
            "narrow": pa.array(narrow, pa.decimal128(5, 2)),
        }
    )
    path = tmp_path / "hive11.orc"
    path.write_bytes(_hive11_decimals(table, [(20, 10), (5, 2)]))
    want = orc.read_table(path)
    assert want.schema.types == [pa.decimal128(38, 6)] * 2
    cut = [
        None if v is None else v.quantize(decimal.Decimal("1e-6"), decimal.ROUND_DOWN) for v in wide
    ]
    assert want["wide"].to_pylist() == cut
    assert_tables_equal(fastingest.read_orc(str(path)), want)


def test_hive_011_decimals_past_38_digits_are_refused_naming_them(tmp_path):
    # 35 digits at scale 0 are 41 at scale 6: the ORC C++ reader refuses
    # them too.
    big = pa.array([decimal.Decimal(10**34 + 7)], pa.decimal128(38, 0))
    path = tmp_path / "too-long.orc"
    path.write_bytes(_hive11_decimals(pa.table({"big": big}), [(38, 0)]))
    with pytest.raises(OSError, match="more than 38 digits"):
        orc.read_table(path)
    with pytest.raises(
        fastingest.CorruptFileError, match=r"too-long\.orc.*column 'big'.*does not fit 38 digits"
    ):
        fastingest.read_orc(str(path))


def test_hive_011_decimals_nested_and_streamed_read_as_pyarrow_reads_them(tmp_path):
    # In a struct, a list, a map's values and a union (they were refused),
    # and one at the top level of a stripe of over 2 x 64 Ki rows, whose
    # first batch a stream decodes on its own (`orc-rust` refused the type
    # there).
    rng = np.random.default_rng(13)
    n = 140_000

    def decimals(k: int, precision: int, scale: int) -> pa.Array:
        digits = rng.integers(-(10 ** (precision - 1)), 10 ** (precision - 1), k)
        values = [decimal.Decimal(int(v)).scaleb(-scale) for v in digits]
        return pa.array(values, pa.decimal128(precision, scale), mask=rng.random(k) < 0.1)

    ends = np.concatenate([[0], np.cumsum(rng.integers(0, 3, n))]).astype(np.int32)
    entries = int(ends[-1])
    tags = pa.array(rng.integers(0, 2, n).astype(np.int8))
    table = pa.table(
        {
            "top": decimals(n, 18, 8),
            "struct": pa.StructArray.from_arrays(
                [decimals(n, 9, 1), pa.array(np.arange(n))], ["d", "i"]
            ),
            "list": pa.ListArray.from_arrays(pa.array(ends), decimals(entries, 12, 3)),
            "map": pa.MapArray.from_arrays(
                pa.array(ends),
                pa.array([f"k{i % 50}" for i in range(entries)]),
                decimals(entries, 15, 4),
            ),
            "union": pa.UnionArray.from_sparse(tags, [decimals(n, 7, 2), pa.array(np.arange(n))]),
        }
    )
    path = tmp_path / "hive11-nested.orc"
    path.write_bytes(_hive11_decimals(table, [(18, 8), (9, 1), (12, 3), (15, 4), (7, 2)]))
    want = orc.read_table(path)
    assert str(want.schema.field("map").type) == "map<string, decimal128(38, 6)>"
    assert_tables_equal(fastingest.read_orc(str(path)), want)
    streamed = pa.Table.from_batches(list(fastingest.iter_orc_batches([str(path)])))
    assert_tables_equal(streamed, want)


def test_decimals_stored_as_integers_read_as_pyarrow_reads_them(tmp_path):
    # ORC's format version 1.9999 stores a decimal of up to 18 digits as its
    # unscaled digits, an integer: read whole, and as a stream whose first
    # batch is decoded on its own (a stripe of over 2 x 64 Ki rows).
    rng = np.random.default_rng(8)
    n = 200_000
    unscaled = pa.array(
        rng.integers(-(10**12) + 1, 10**12, n), pa.int64(), mask=rng.random(n) < 0.1
    )
    path = _decimal64_file(tmp_path, unscaled)
    want = orc.read_table(path)
    assert orc.ORCFile(path).file_version == "1.9999"
    assert want.schema.field("d").type == pa.decimal128(12, 2)
    assert want["d"].to_pylist() == [
        None if v is None else decimal.Decimal(v).scaleb(-2) for v in unscaled.to_pylist()
    ]
    assert_tables_equal(fastingest.read_orc(str(path)), want)
    batches = list(fastingest.iter_orc_batches([str(path), str(path)]))
    assert batches[0].num_rows < n
    assert pa.Table.from_batches(batches).equals(pa.concat_tables([want, want]))


def test_a_string_column_that_is_not_utf8_is_refused_naming_it(tmp_path):
    # A binary column whose footer is made to say `string`: its values are
    # not UTF-8, and the read says where.
    values = pa.array([b"ok", b"\xff\xfe", b"fine"] * 100, pa.binary())
    raw = orc_bytes(pa.table({"name": values}), compression="uncompressed")
    # The footer's type list: the column's type is a message of 8 bytes
    # (field 4, tag 0x22) that starts `kind: BINARY` (8); STRING is 7.
    binary_type = b"\x22\x08\x08\x08"
    assert raw.count(binary_type) == 1
    path = tmp_path / "not-utf8.orc"
    path.write_bytes(raw.replace(binary_type, b"\x22\x08\x08\x07"))
    assert orc.ORCFile(path).schema.field("name").type == pa.string()
    with pytest.raises(
        fastingest.CorruptFileError, match=r"not-utf8\.orc.*column 'name'.*not valid UTF-8"
    ):
        fastingest.read_orc(str(path))


def _stripe_file(tmp_path, n: int = 200_000, name: str = "s.orc") -> Path:
    """An ORC file of `numeric_table` plus a date column, in several stripes."""
    table = numeric_table(n)
    days = pa.array(np.arange(n) // 1_000, pa.int32()).cast(pa.date32())
    table = table.append_column("day", days)
    path = tmp_path / name
    path.write_bytes(orc_bytes(table, stripe_size=256 * 1024))
    assert orc.ORCFile(path).nstripes >= 4
    return path


def test_filters_skip_stripes_and_keep_the_matching_rows(tmp_path):
    import pyarrow.compute as pc

    path = _stripe_file(tmp_path)
    whole = orc.read_table(path)
    cases = [
        ([("id", ">=", 150_000)], pc.field("id") >= 150_000),
        ([("id", "<", 1_000), ("g", "==", 3)], (pc.field("id") < 1_000) & (pc.field("g") == 3)),
        (
            [[("id", "<", 10)], [("id", ">", 199_990)]],
            (pc.field("id") < 10) | (pc.field("id") > 199_990),
        ),
        ([("day", ">=", dt.date(1970, 6, 1))], pc.field("day") >= dt.date(1970, 6, 1)),
        ([("name", "in", ["n001", "n002"])], pc.field("name").isin(["n001", "n002"])),
        ([("x", ">", 1.5)], pc.field("x") > 1.5),
        ([("id", "==", -1)], pc.field("id") == -1),
    ]
    for filters, expr in cases:
        got = fastingest.read_orc(str(path), filters=filters)
        assert_tables_equal(got, whole.filter(expr))
        # The filter's columns need not be returned.
        got = fastingest.read_orc(str(path), columns=["x", "flag"], filters=filters)
        assert_tables_equal(got, whole.filter(expr).select(["x", "flag"]))
    # Integer and date statistics skip stripes before any byte of them is fetched.
    nstripes = orc.ORCFile(path).nstripes
    for filters in ([("id", ">=", 150_000)], [("day", "<", dt.date(1970, 1, 20))]):
        (plan,) = fastingest.plan_orc(str(path), filters=filters)
        assert 0 < len(plan["stripes"]) < nstripes, (filters, plan["stripes"])
    (plan,) = fastingest.plan_orc(str(path), filters=[("id", "==", -1)])
    assert plan["stripes"] == [] and plan["bytes_to_fetch"] == 0
    # Doubles and strings are never pruned (their statistics can mislead).
    (plan,) = fastingest.plan_orc(str(path), filters=[("x", ">", 100.0)])
    assert len(plan["stripes"]) == nstripes
    with pytest.raises(fastingest.ColumnNotFoundError, match="nope"):
        fastingest.read_orc(str(path), filters=[("nope", "==", 1)])
    with pytest.raises(fastingest.InvalidArgumentError, match="id"):
        fastingest.read_orc(str(path), filters=[("id", ">", "abc")])


def test_iter_orc_batches_streams_what_read_orc_returns(tmp_path):
    paths = [_stripe_file(tmp_path, 60_000 + i, f"p{i}.orc") for i in range(2)]
    source = str(tmp_path / "p*.orc")
    want = fastingest.read_orc(source, columns=["id", "name"], filters=[("g", "<", 5)])
    stream = fastingest.iter_orc_batches(source, columns=["id", "name"], filters=[("g", "<", 5)])
    batches = list(stream)
    assert len(batches) >= 8  # several stripes per file, handed over one by one
    assert_tables_equal(pa.Table.from_batches(batches, schema=stream.schema), want)
    expected = pa.concat_tables([orc.read_table(p) for p in paths])
    assert_tables_equal(pa.Table.from_batches(list(fastingest.iter_orc_batches(source))), expected)
    with pytest.raises(TypeError, match="row_groups"):
        fastingest.iter_orc_batches(source, row_groups=[0])  # type: ignore[call-arg]


def test_iter_orc_batches_hands_over_a_big_stripes_first_rows_first(tmp_path):
    """A stream's first stripe, when large, hands over its first 64 Ki rows
    before the rest of it is decoded; the rows are those of `read_orc`."""
    rows = 300_000
    table = pa.table(
        {
            "id": pa.array(np.arange(rows, dtype=np.int64)),
            "g": pa.array(np.arange(rows) % 11, pa.int32()),
            "s": pa.array([f"v{i % 977}" for i in range(rows)]),
        }
    )
    path = tmp_path / "big.orc"
    orc.write_table(table, path, stripe_size=256 << 20)
    assert orc.ORCFile(path).nstripes == 1
    batches = list(fastingest.iter_orc_batches(path))
    assert batches[0].num_rows == 65_536
    assert batches[0].column(0).to_pylist()[-1] == 65_535
    assert_tables_equal(pa.Table.from_batches(batches), orc.read_table(path))
    filters = [("g", "<", 3)]
    got = fastingest.iter_orc_batches(path, columns=["s"], filters=filters).read_all()
    assert_tables_equal(got, fastingest.read_orc(path, columns=["s"], filters=filters))


def test_a_big_stripes_first_rows_of_timestamps_before_1970_are_those_of_read_orc(tmp_path):
    # The first 64 Ki rows of a big stripe come from `orc-rust`'s lazy decoder
    # unless a column is one fastingest decodes differently from it: times
    # before 1970 with a fraction of a second, as pyarrow writes them.
    rows = 150_000
    nanos = np.arange(rows, dtype=np.int64) * -1_234_567_891
    table = pa.table({"ts": pa.array(nanos, pa.timestamp("ns")), "i": pa.array(np.arange(rows))})
    path = tmp_path / "before-1970.orc"
    orc.write_table(table, path, stripe_size=256 << 20)
    assert orc.ORCFile(path).nstripes == 1
    want = orc.read_table(path)
    assert_tables_equal(fastingest.read_orc(path), want)
    assert_tables_equal(fastingest.iter_orc_batches(path).read_all(), want)


def test_raw_stripes_are_the_files_bytes(tmp_path):
    path = _stripe_file(tmp_path)
    raw = path.read_bytes()
    f = orc.ORCFile(path)
    stripes = fastingest.read_orc_stripes(str(path))
    assert [s["stripe"] for s in stripes] == list(range(f.nstripes))
    assert sum(s["num_rows"] for s in stripes) == f.nrows
    for s in stripes:
        length = s["index_length"] + s["data_length"] + s["footer_length"]
        assert len(s["data"]) == length
        assert memoryview(s["data"]).tobytes() == raw[s["offset"] : s["offset"] + length]
        assert s["location"] == str(path) and s["file"] == 0
    chosen = fastingest.read_orc_stripes(str(path), stripes=[2, 0])
    assert [s["stripe"] for s in chosen] == [2, 0]
    assert bytes(chosen[0]["data"]) == bytes(stripes[2]["data"])
    pruned = fastingest.read_orc_stripes(str(path), filters=[("id", ">=", 150_000)])
    assert 0 < len(pruned) < len(stripes)
    assert all(s["stripe"] > 0 for s in pruned)
    with pytest.raises(TypeError, match="columns"):
        fastingest.read_orc_stripes(str(path), columns=["id"])  # type: ignore[call-arg]
    assert memoryview(stripes[0]["data"]).readonly


def test_metadata_understands_orc(tmp_path):
    table = numeric_table(50_000)
    path = tmp_path / "n.orc"
    path.write_bytes(orc_bytes(table, compression="zstd", stripe_size=128 * 1024))
    f = orc.ORCFile(path)
    m = fastingest.metadata(str(path))
    assert m["format"] == "orc" and m["num_rows"] == f.nrows
    assert m["num_stripes"] == f.nstripes == len(m["stripes"])
    assert m["compression"] == "zstd"
    assert m["schema"] == f.schema
    assert sum(s["num_rows"] for s in m["stripes"]) == f.nrows
    assert m["statistics"]["id"]["min"] == 0 and m["statistics"]["id"]["max"] == 49_999
    # Told by the content when the name does not say.
    other = tmp_path / "data.bin"
    other.write_bytes(path.read_bytes())
    assert fastingest.metadata(str(other))["format"] == "orc"


def test_two_columns_of_twenty_fetch_only_their_streams(s3, tmp_path):
    n = 100_000
    rng = np.random.default_rng(20)
    # Random values: every column's streams are large, as in real data.
    table = pa.table({f"c{i:02d}": rng.integers(0, 2**62, n) for i in range(20)})
    data = orc_bytes(table, stripe_size=4 << 20)
    url = s3.put("orc/wide.orc", data)
    stats = fastingest.ReadStats()
    got = fastingest.read_orc(
        url, columns=["c03", "c17"], storage_options=s3.options(), stats=stats
    )
    assert_tables_equal(got, table.select(["c03", "c17"]))
    tail = 64 * 1024
    assert stats.bytes_fetched <= 1.2 * stats.bytes_needed + tail, stats
    assert stats.bytes_fetched < len(data) / 5


def test_orc_through_the_cache(s3, toxi, tmp_path):
    table = every_type_table()
    url = s3.put("orc/cached.orc", orc_bytes(table, compression="zstd", stripe_size=64 * 1024))
    options = s3.options(proxied=True)
    cache = fastingest.Cache(tmp_path, validate="immutable", min_free_bytes=0)
    want = fastingest.read_orc(url, storage_options=options, cache=cache)
    toxi.set_enabled("s3", False)
    stats = fastingest.ReadStats()
    got = fastingest.read_orc(url, storage_options=options, cache=cache, stats=stats)
    assert_tables_equal(got, want)
    assert stats.requests == 0


def test_read_orc_async(tmp_path):
    import asyncio

    path = tmp_path / "n.orc"
    table = numeric_table(5_000)
    path.write_bytes(orc_bytes(table))
    got = asyncio.run(fastingest.read_orc_async(str(path), columns=["id"]))
    assert got.column("id").to_pylist() == table.column("id").to_pylist()


# -- the apache/orc example corpus -------------------------------------------


def example_files(corpora: Path) -> list[Path]:
    return sorted((corpora / "orc-examples" / "examples").glob("*.orc"))


def _read_expected(path: Path) -> pa.Table | Exception:
    try:
        return orc.read_table(path)
    except Exception as e:  # noqa: BLE001 - any rejection by pyarrow counts
        return e


@pytest.mark.parametrize("where", ["local", "minio"])
def test_example_corpus_matches_pyarrow(corpora, where, request):
    files = example_files(corpora)
    assert len(files) > 30
    s3 = request.getfixturevalue("s3") if where == "minio" else None
    outcomes: dict[str, str] = {}
    for path in files:
        source, options = str(path), None
        if s3 is not None:
            source, options = s3.put_file(f"orc/{path.name}", path), s3.options()
        want = _read_expected(path)
        try:
            got = fastingest.read_orc(source, storage_options=options)
        except fastingest.FastIngestError as e:
            assert path.name in str(e), e
            if isinstance(want, Exception):
                outcomes[path.name] = "both-reject"
                continue
            assert path.name in KNOWN_UNSUPPORTED, f"{path.name}: {e}"
            outcomes[path.name] = "known-rejected"
            continue
        if isinstance(want, Exception):
            # pyarrow rejects it, fastingest reads it: must still be a sane table.
            outcomes[path.name] = "only-fastingest"
            continue
        if path.name in KNOWN_UNSUPPORTED:
            outcomes[path.name] = "known-differs"
            continue
        if path.name in KNOWN_METADATA_DIFFERS:
            assert_same_rows_and_types(got, want)
        else:
            assert_tables_equal(got, want)
        outcomes[path.name] = "equal"
    assert list(outcomes.values()).count("equal") >= 30, outcomes


def _same_value(ours, theirs) -> bool:
    """An Arrow value against its JSON form in expected/*.jsn.gz."""
    if ours is None or theirs is None:
        return ours is None and theirs is None
    if isinstance(ours, bytes):
        return list(ours) == theirs
    if isinstance(ours, bool):
        return ours == theirs
    if isinstance(ours, float):
        return math.isclose(ours, float(theirs), rel_tol=1e-6, abs_tol=1e-12)
    if isinstance(ours, decimal.Decimal):
        return ours == decimal.Decimal(str(theirs))
    if isinstance(ours, dt.datetime | dt.date):
        # The JSON writes "2000-03-12 15:00:00.0"; compare to the second.
        return str(ours)[:19].replace("T", " ") == str(theirs)[:19]
    if isinstance(ours, dict):
        return ours.keys() == theirs.keys() and all(_same_value(ours[k], theirs[k]) for k in ours)
    if isinstance(ours, list):
        if ours and isinstance(ours[0], tuple):  # a map: [(k, v)] vs [{"key", "value"}]
            return len(ours) == len(theirs) and all(
                _same_value(k, t["key"]) and _same_value(v, t["value"])
                for (k, v), t in zip(ours, theirs, strict=True)
            )
        return len(ours) == len(theirs) and all(
            _same_value(a, b) for a, b in zip(ours, theirs, strict=True)
        )
    return ours == theirs


# Expected-rows files that cannot be compared value by value, with the reason.
JSON_NOT_COMPARABLE = {
    "TestOrcFile.testUnionAndTimestamp.jsn.gz": "unions are written as {tag: value} in the JSON",
    "TestOrcFile.testTimestamp.jsn.gz": "pyarrow and fastingest reject the file (no rows)",
}


def test_example_rows_match_the_expected_json(corpora):
    root = corpora / "orc-examples" / "examples"
    checked = 0
    for expected in sorted((root / "expected").glob("*.jsn.gz")):
        name = expected.name.removesuffix(".jsn.gz") + ".orc"
        if name in KNOWN_UNSUPPORTED or expected.name in JSON_NOT_COMPARABLE:
            continue
        table = fastingest.read_orc(str(root / name))
        rows = table.to_pylist()
        with gzip.open(expected, "rt") as f:
            want = [json.loads(line) for line in f if line.strip()]
        assert len(rows) == len(want), name
        for i, (a, b) in enumerate(zip(rows, want, strict=True)):
            assert _same_value(a, b), f"{name} row {i}: {a} != {b}"
        checked += 1
    assert checked >= 15


def test_corrupt_examples_raise_clear_errors(corpora):
    root = corpora / "orc-examples" / "examples"
    files = sorted((root / "corrupt").glob("*.orc")) + sorted((root / "encrypted").glob("*.orc"))
    assert files
    for path in files:
        try:
            fastingest.read_orc(str(path))
        except fastingest.FastIngestError as e:
            assert path.name in str(e)
        else:
            # Read without an error (the encrypted examples' columns are
            # masked, readable without keys): then it must be what pyarrow reads.
            assert_tables_equal(fastingest.read_orc(str(path)), orc.read_table(path))


def tail_length(data: bytes) -> int:
    """Postscript + footer + metadata bytes, from the postscript's fields 1
    (footer length) and 5 (metadata length)."""
    ps_len = data[-1]
    ps = {n: v for n, _, v in protobuf_fields(data[-1 - ps_len : -1])}
    return 1 + ps_len + ps[1] + ps[5]


def test_tail_in_one_request_or_two_when_longer(tmp_path):
    table = numeric_table(400_000)
    path = tmp_path / "n.orc"
    data = orc_bytes(table, stripe_size=32 * 1024)
    path.write_bytes(data)
    assert 16 * 1024 < tail_length(data) < 64 * 1024, "the test needs a mid-sized tail"
    one = fastingest.ReadStats()
    fastingest.metadata(str(path), stats=one)
    assert one.requests == 1  # the default 64 KiB prefetch holds it
    two = fastingest.ReadStats()
    small = fastingest.Config(footer_prefetch=256)  # raised to orc-rust's 16 KiB
    meta = fastingest.metadata(str(path), stats=two, config=small)
    assert two.requests == 2
    assert meta["num_stripes"] == orc.ORCFile(path).nstripes
    assert_tables_equal(fastingest.read_orc(str(path), config=small), orc.read_table(path))


def test_small_stripes_are_not_fetched_twice(s3):
    """With small stripes the stripe footers lie close together, and fetching
    them brings the streams between them too: those are not fetched again."""
    table = numeric_table(200_000)
    data = orc_bytes(table, stripe_size=64 * 1024)
    assert orc.ORCFile(pa.BufferReader(data)).nstripes > 50
    url = s3.put("orc/small-stripes.orc", data)
    stats = fastingest.ReadStats()
    got = fastingest.read_orc(url, storage_options=s3.options(), stats=stats)
    assert_tables_equal(got, orc.read_table(pa.BufferReader(data)))
    assert stats.bytes_fetched <= 1.05 * len(data) + 64 * 1024, stats
