"""Flat primitive, string and binary columns are decoded by fastingest's own
decoders (`parquet/flat.rs`, `parquet/byte_arrays.rs`), the rest by the
`parquet` crate: both must give what
pyarrow gives, for every type, null pattern, encoding, page format and
codec, alone and mixed in one file."""

from __future__ import annotations

import datetime
import decimal
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fastingest

ROWS = 5_000

TYPES = {
    "bool": pa.bool_(),
    "i8": pa.int8(),
    "i16": pa.int16(),
    "i32": pa.int32(),
    "i64": pa.int64(),
    "u8": pa.uint8(),
    "u16": pa.uint16(),
    "u32": pa.uint32(),
    "u64": pa.uint64(),
    "f32": pa.float32(),
    "f64": pa.float64(),
    "date": pa.date32(),
    "str": pa.string(),
    "bin": pa.binary(),
    # What polars and pandas write into a file's Arrow schema.
    "lstr": pa.large_string(),
    "lbin": pa.large_binary(),
    # pyarrow stores these as fixed-length arrays of 3, 4, 8 and 16 bytes
    # (or INT32/INT64 with `store_decimal_as_integer`).
    "dec5": pa.decimal128(5, 1),
    "dec9": pa.decimal128(9, 2),
    "dec18": pa.decimal128(18, 4),
    "dec38": pa.decimal128(38, 10),
    # With a time zone in the file's Arrow schema but not in Parquet's.
    "ts_ms": pa.timestamp("ms"),
    "ts_us": pa.timestamp("us", tz="UTC"),
    "ts_ns": pa.timestamp("ns", tz="America/New_York"),
}

# Empty, ASCII, two- to four-byte characters, and values longer than any
# fixed-size copy a decoder might use.
WORDS = ["", "a", "é", "日本", "🦀", "x" * 40, "naïve café", "z" * 17]


def column(kind: pa.DataType, rows: int, null_share: float, distinct: int, seed: int) -> pa.Array:
    rng = np.random.default_rng(seed)
    mask = rng.random(rows) < null_share if null_share else None
    if kind == pa.bool_():
        values = rng.random(rows) < 0.3
        return pa.array(values, mask=mask)
    if kind in (pa.string(), pa.binary(), pa.large_string(), pa.large_binary()):
        pool = ["".join(rng.choice(WORDS, 1 + i % 3)) + str(i) for i in range(distinct)]
        values = [pool[i] for i in rng.integers(0, distinct, rows)]
        if kind in (pa.binary(), pa.large_binary()):
            return pa.array([v.encode() + b"\xff" for v in values], type=kind, mask=mask)
        return pa.array(values, type=kind, mask=mask)
    if pa.types.is_decimal(kind):
        # Unscaled values up to the precision's extremes, either sign.
        top = 10**kind.precision - 1
        pool = [int(top * x) for x in rng.uniform(-1, 1, distinct)]
        pool[: min(2, distinct)] = [top, -top][: min(2, distinct)]
        exact = decimal.Context(prec=40)  # the default 28 digits would round
        picks = rng.integers(0, distinct, rows)
        values = [decimal.Decimal(pool[i]).scaleb(-kind.scale, exact) for i in picks]
        return pa.array(values, type=kind, mask=mask)
    if pa.types.is_timestamp(kind):
        ticks = rng.integers(-(2**62), 2**62, distinct)[rng.integers(0, distinct, rows)]
        return pa.array(ticks, type=pa.int64(), mask=mask).cast(kind)
    if kind == pa.date32():
        days = rng.integers(-1000, 20_000, distinct)[rng.integers(0, distinct, rows)]
        return pa.array(days.astype(np.int32), type=pa.int32(), mask=mask).cast(pa.date32())
    dtype = kind.to_pandas_dtype()
    if np.issubdtype(dtype, np.floating):
        pool = rng.normal(size=distinct).astype(dtype)
        pool[0] = -0.0
    else:
        info = np.iinfo(dtype)
        # Extremes included: the narrowing from INT32/INT64 must keep them.
        pool = rng.integers(info.min, info.max, distinct, dtype=dtype, endpoint=True)
        pool[: min(2, distinct)] = [info.min, info.max][: min(2, distinct)]
    return pa.array(pool[rng.integers(0, distinct, rows)], mask=mask)


def table(null_share: float, distinct: int, seed: int = 0) -> pa.Table:
    return pa.table(
        {
            name: column(kind, ROWS, null_share, distinct, seed + i)
            for i, (name, kind) in enumerate(TYPES.items())
        }
    )


def assert_same(path, **read) -> None:
    ours = fastingest.read_parquet(str(path), **read)
    theirs = pq.read_table(path, **read)
    assert ours.schema == theirs.schema
    for name in theirs.column_names:
        assert ours[name].equals(theirs[name]), name
        assert ours[name].null_count == theirs[name].null_count, name


@pytest.mark.parametrize("null_share", [0.0, 0.1, 0.9, 1.0])
@pytest.mark.parametrize("dictionary", [True, False])
@pytest.mark.parametrize("page_version", ["1.0", "2.0"])
def test_every_type_and_null_pattern(tmp_path, null_share, dictionary, page_version):
    path = tmp_path / "t.parquet"
    pq.write_table(
        table(null_share, distinct=300),
        path,
        use_dictionary=dictionary,
        data_page_version=page_version,
        data_page_size=2048,  # many pages per chunk
        row_group_size=1_700,  # row groups of unequal size
        compression="snappy",
    )
    assert_same(path)


@pytest.mark.parametrize("codec", ["none", "zstd", "gzip", "lz4", "brotli"])
def test_codecs(tmp_path, codec):
    path = tmp_path / "t.parquet"
    pq.write_table(table(0.2, distinct=70_000), path, compression=codec, data_page_size=8192)
    assert_same(path)


def test_required_columns_and_a_dictionary_that_falls_back_to_plain(tmp_path):
    # Not-null fields are written without definition levels; a dictionary
    # larger than the page limit makes later pages plain mid-chunk.
    data = table(0.0, distinct=ROWS)
    schema = pa.schema([f.with_nullable(False) for f in data.schema])
    path = tmp_path / "t.parquet"
    pq.write_table(data.cast(schema), path, dictionary_pagesize_limit=1024, data_page_size=1024)
    assert_same(path)
    ours = fastingest.read_parquet(str(path))
    assert all(not f.nullable for f in ours.schema)


def test_mixed_with_columns_the_crate_decodes(tmp_path):
    # Strings, lists, structs and timestamps between flat columns: the
    # batch puts every column back in its place.
    rng = np.random.default_rng(5)
    flat = table(0.3, distinct=40)
    data = pa.table(
        {
            "s": pa.array([f"v{i % 17}" if i % 5 else None for i in range(ROWS)]),
            "i8": flat["i8"],
            "lst": pa.array([[int(x)] * (i % 3) for i, x in enumerate(rng.integers(0, 9, ROWS))]),
            "f64": flat["f64"],
            "st": pa.array([{"a": i, "b": str(i)} for i in range(ROWS)]),
            "ts": pa.array(rng.integers(0, 10**12, ROWS), type=pa.timestamp("ms")),
            "bool": flat["bool"],
            "cat": pa.array([f"c{i % 4}" for i in range(ROWS)]).dictionary_encode(),
        }
    )
    path = tmp_path / "t.parquet"
    pq.write_table(data, path, row_group_size=1_000)
    assert_same(path)
    assert_same(path, columns=["bool", "s", "i8"])
    assert_same(path, columns=["f64"])
    ours = fastingest.read_parquet(str(path), filters=[("i8", ">", 0), ("bool", "==", True)])
    theirs = pq.read_table(path, filters=[("i8", ">", 0), ("bool", "==", True)])
    assert ours.equals(theirs)


def test_legacy_converted_types_and_dates(tmp_path):
    # Files that give integer widths as converted types only (Parquet 1.0
    # writers) and dates read as date32.
    data = pa.table(
        {
            "i16": pa.array([1, None, -3, 32_767], pa.int16()),
            "u32": pa.array([0, 4_000_000_000, None, 7], pa.uint32()),
            "d": pa.array([datetime.date(1, 1, 1), None, datetime.date(1969, 12, 31), None]),
        }
    )
    path = tmp_path / "t.parquet"
    pq.write_table(data, path, version="1.0")
    assert_same(path)


def test_decimals_stored_as_integers(tmp_path):
    data = table(0.2, distinct=300).select(["dec5", "dec9", "dec18"])
    path = tmp_path / "t.parquet"
    pq.write_table(data, path, store_decimal_as_integer=True, data_page_size=2048)
    kinds = [pq.ParquetFile(path).schema.column(i).physical_type for i in range(3)]
    assert kinds == ["INT32", "INT32", "INT64"]
    assert_same(path)


@pytest.mark.parametrize("null_share", [0.0, 0.3])
@pytest.mark.parametrize("page_version", ["1.0", "2.0"])
def test_byte_stream_split_numbers_and_lists_of_them(tmp_path, null_share, page_version):
    # Floats, and (format 2.11) integers, dates, timestamps and decimals
    # stored as integers, written as byte streams (DuckDB's v2 files, ML
    # features); flat and as the items of lists (embeddings).
    kinds = ["i8", "u16", "i32", "u32", "i64", "u64", "f32", "f64", "date", "ts_us", "dec9"]
    flat = table(null_share, distinct=ROWS, seed=3).select(kinds)
    rng = np.random.default_rng(4)
    offsets = np.concatenate([[0], np.cumsum(rng.integers(0, 9, ROWS))]).astype(np.int32)
    items = pa.array(rng.normal(size=offsets[-1]).astype(np.float32))
    validity = pa.array(rng.random(ROWS) >= null_share) if null_share else None
    lists = pa.ListArray.from_arrays(
        pa.array(offsets), items, mask=pa.compute.invert(validity) if validity else None
    )
    data = flat.append_column("emb", lists)
    path = tmp_path / "t.parquet"
    pq.write_table(
        data,
        path,
        use_dictionary=False,
        use_byte_stream_split=True,
        store_decimal_as_integer=True,
        data_page_version=page_version,
        data_page_size=4096,
        row_group_size=1_700,
        compression="zstd",
    )
    meta = pq.ParquetFile(path).metadata.row_group(0)
    written = {
        meta.column(i).path_in_schema: meta.column(i).encodings for i in range(meta.num_columns)
    }
    assert all("BYTE_STREAM_SPLIT" in e for e in written.values()), written
    assert_same(path)
    assert_same(path, columns=["emb", "f64"], filters=[("i32", ">", 0)])


def test_runs_of_one_string_and_a_dictionary_of_one(tmp_path):
    # Long runs of one dictionary index are RLE runs, not bit-packed ones.
    data = pa.table(
        {
            "runs": pa.array(["é" * (i // 500) for i in range(ROWS)]),
            "one": pa.array(["same"] * ROWS),
            "none": pa.array([None] * ROWS, pa.string()),
        }
    )
    path = tmp_path / "t.parquet"
    pq.write_table(data, path, data_page_size=1024)
    assert_same(path)


@pytest.mark.parametrize("page_version", ["1.0", "2.0"])
def test_distinct_values_a_dictionary_holds_in_order(tmp_path, page_version):
    # A column of distinct values comes as a dictionary of each value
    # once, in row order (pages of indices 0, 1, 2, ...), until the
    # dictionary outgrows its page and the writer falls back to PLAIN:
    # images as Hugging Face writes them (row groups of 100), blobs as
    # pyarrow's defaults write them, ids. Such rows take the dictionary's
    # bytes whole; any other order, a repeat or a null is gathered.
    rng = np.random.default_rng(5)
    rows = 1_200
    blobs = [
        rng.integers(0, 256, int(n), dtype=np.uint8).tobytes() for n in rng.integers(0, 3_000, rows)
    ]
    names = [f"train/img_{i:06d}.jpg" for i in range(rows)]
    ids = [f"id-{i}-{'é' * (i % 5)}" for i in range(rows)]
    repeats = [f"v{i if i < 700 else int(rng.integers(0, 700))}" for i in range(rows)]
    late_nulls = [None if i >= 900 and i % 3 == 0 else f"n{i}" for i in range(rows)]
    images = pa.StructArray.from_arrays(
        [pa.array(blobs, pa.binary()), pa.array(names)], names=["bytes", "path"]
    )
    data = pa.table(
        {
            "image": images,
            "blob": pa.array(blobs, pa.large_binary()),
            "id": pa.array(ids, pa.large_string()),
            "repeats": pa.array(repeats),
            "late_nulls": pa.array(late_nulls),
            "one": pa.array(["only"] * rows),
        }
    )
    layouts = {
        "hugging_face": {"row_group_size": 100},
        "falls_back": {
            "dictionary_pagesize_limit": 64 << 10,
            "data_page_size": 16 << 10,
            "write_batch_size": 64,
        },
        "one_group": {"row_group_size": rows, "data_page_size": 4 << 10},
    }
    for name, layout in layouts.items():
        path = tmp_path / f"{name}.parquet"
        pq.write_table(data, path, data_page_version=page_version, compression="snappy", **layout)
        chunk = pq.ParquetFile(path).metadata.row_group(0).column(1)
        assert "RLE_DICTIONARY" in chunk.encodings, name
        assert_same(path)
        assert_same(path, columns=["id", "image"])
        # A selection reads the rows it keeps, not the dictionary in order.
        assert_same(path, filters=[("late_nulls", ">=", "n5")])
        streamed = pa.Table.from_batches(list(fastingest.iter_batches(str(path))))
        assert streamed.equals(fastingest.read_parquet(str(path))), name


def test_large_and_dictionary_string_types_keep_their_types(tmp_path):
    # The schema pyarrow stores asks for other Arrow types than the
    # natural `string`: `large_string` gets `i64` offsets, a dictionary
    # type its keys, and each keeps its type.
    words = [f"w{i % 7}é" for i in range(ROWS)]
    data = pa.table(
        {
            "large": pa.array(words, pa.large_string()),
            "dict": pa.array(words).dictionary_encode(),
            "plain": pa.array(words),
        }
    )
    path = tmp_path / "t.parquet"
    pq.write_table(data, path)
    assert_same(path)


def test_a_file_polars_wrote(tmp_path):
    # zstd, large_string and large_list in the Arrow schema, pages of its
    # own sizes; short strings of a few values (a dictionary of 3 entries
    # must not size the values as if they were long), nulls and lists.
    import polars as pl

    rng = np.random.default_rng(12)
    rows = 20_000
    frame = pl.DataFrame(
        {
            "flag": rng.choice(["A", "N", "R"], rows),
            "mode": [("REG AIR", "TRUCK", None)[i] for i in rng.integers(0, 3, rows)],
            "comment": [f"comment {i % 997} é" for i in range(rows)],
            "tags": [[f"t{j}" for j in range(i % 4)] for i in range(rows)],
            "ints": [list(range(i % 5)) if i % 7 else None for i in range(rows)],
            "n": rng.integers(0, 1000, rows),
        }
    )
    path = tmp_path / "polars.parquet"
    frame.write_parquet(path, row_group_size=6_000)
    assert pq.read_schema(path).field("flag").type == pa.large_string()
    assert_same(path)


@pytest.mark.parametrize("dictionary", [True, False])
def test_int96_timestamps_in_every_unit(tmp_path, dictionary):
    # Spark's and Hive's legacy INT96 timestamps, with nulls and a few
    # distinct values (dictionary-encoded when asked), read in the unit the
    # file's Arrow schema asks for, seconds to nanoseconds. (pyarrow reads
    # them all as nanoseconds unless told a unit: compared with that unit.)
    rng = np.random.default_rng(13)
    mask = rng.random(ROWS) < 0.1
    # Within the nanosecond range (1677-2262), before 1970 included.
    pool = rng.integers(-(2**62), 2**62, 300)
    ticks = pool[rng.integers(0, 300, ROWS)]
    per_unit = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}
    data = pa.table(
        {
            unit: pa.array(ticks // n, pa.int64(), mask=mask).cast(pa.timestamp(unit))
            for unit, n in per_unit.items()
        }
    )
    path = tmp_path / "int96.parquet"
    pq.write_table(data, path, use_deprecated_int96_timestamps=True, use_dictionary=dictionary)
    assert pq.ParquetFile(path).schema.column(0).physical_type == "INT96"
    ours = fastingest.read_parquet(str(path))
    for unit in per_unit:
        theirs = pq.read_table(path, columns=[unit], coerce_int96_timestamp_unit=unit)[unit]
        assert ours[unit].type == pa.timestamp(unit) == theirs.type
        assert ours[unit].equals(theirs), unit
        assert ours[unit].equals(data[unit]), unit


def invalid_utf8_file(path, dictionary: bool) -> None:
    # A string column whose bytes are not UTF-8, written as pyarrow would
    # write them (it does not check): "é" split over two values, and a
    # lone continuation byte.
    raw = [b"ok", b"a\xc3", b"\xa9b", b"\x80"] * 50
    data = b"".join(raw)
    offsets = np.cumsum([0] + [len(v) for v in raw], dtype=np.int32)
    strings = pa.Array.from_buffers(
        pa.string(), len(raw), [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data)]
    )
    pq.write_table(pa.table({"s": strings}), path, use_dictionary=dictionary)


@pytest.mark.parametrize("dictionary", [True, False])
def test_invalid_utf8_is_an_error_naming_the_file(tmp_path, dictionary):
    path = tmp_path / "bad.parquet"
    invalid_utf8_file(path, dictionary)
    with pytest.raises(fastingest.FastIngestError, match="bad.parquet") as raised:
        fastingest.read_parquet(str(path))
    assert "utf" in str(raised.value).lower()


def test_streamed_batches_match_the_whole_read(tmp_path):
    path = tmp_path / "t.parquet"
    pq.write_table(table(0.1, distinct=50), path, row_group_size=1_000)
    batches = list(fastingest.iter_batches(str(path)))
    assert pa.Table.from_batches(batches).equals(pq.read_table(path))


def test_a_row_group_of_more_rows_than_a_batch(tmp_path):
    # Decoded whole by fastingest's decoders (the struct column too, a
    # field at a time), then cut into batches of at most 2**20 rows, as the
    # crate would have cut it.
    rows = (1 << 20) + 1_234
    rng = np.random.default_rng(11)
    data = pa.table(
        {
            "i64": rng.integers(-(2**40), 2**40, rows),
            "f32": rng.random(rows).astype(np.float32),
            "s": pa.array(rng.integers(0, 300, rows)).cast(pa.string()),
            "st": pa.StructArray.from_arrays([pa.array(np.arange(rows) % 7)], ["a"]),
        }
    )
    path = tmp_path / "big.parquet"
    pq.write_table(data, path, row_group_size=rows)
    assert pq.ParquetFile(path).metadata.num_row_groups == 1
    assert_same(path)
    assert_same(path, columns=["s", "i64"])
    batches = list(fastingest.iter_batches(str(path)))
    # The stream's first 64 Ki rows come first, on their own; the rest of
    # the row group follows in batches of at most 2^20 rows.
    assert [b.num_rows for b in batches] == [65_536, (1 << 20) - 65_536, 1_234]
    assert pa.Table.from_batches(batches).equals(pq.read_table(path))
    kept = fastingest.read_parquet(str(path), filters=[("f32", "<", 0.25)])
    assert kept.equals(pq.read_table(path, filters=[("f32", "<", 0.25)]))


def test_columns_decoded_whole_line_up_with_the_crates_batches(tmp_path):
    # Over 2**20 rows and 128 MiB uncompressed: fastingest's decoders take
    # the strings and int8 whole, the `parquet` crate the float16 a batch of
    # 2**20 rows at a time; the whole columns are sliced to its batches.
    rows = (1 << 20) + 4_321
    rng = np.random.default_rng(13)
    values = pa.array([f"{i:03d}" + "v" * 130 for i in range(7)])
    data = pa.table(
        {
            "s": values.take(pa.array(rng.integers(0, 7, rows))),
            "h": pa.array(rng.random(rows).astype(np.float16), mask=rng.random(rows) < 0.1),
            "i8": pa.array((np.arange(rows) % 101).astype(np.int8)),
        }
    )
    path = tmp_path / "wide_values.parquet"
    pq.write_table(data, path, row_group_size=rows, use_dictionary=False, compression="zstd")
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups == 1
    assert meta.row_group(0).total_byte_size > 128 << 20
    theirs = pq.read_table(path)
    ours = fastingest.read_parquet(str(path))
    assert ours.equals(theirs)
    # Batches end where the crate's do (and where a chunk decoded in pieces
    # on several threads was cut), none longer than 2**20 rows.
    ends = np.cumsum([len(c) for c in ours["s"].chunks])
    assert (1 << 20) in ends and ends[-1] == rows
    assert max(len(c) for c in ours["s"].chunks) <= 1 << 20
    kept = fastingest.read_parquet(str(path), filters=[("i8", "<", 7)])
    assert kept.equals(pq.read_table(path, filters=[("i8", "<", 7)]))


def test_a_large_chunk_decoded_in_pieces_reads_as_one(tmp_path):
    # One row group whose string and int64 chunks hold far more than a
    # thread's share (8 MiB decoded): each is decoded as runs of its pages
    # on several threads, the float16 beside them by the `parquet` crate.
    rows = 700_000
    rng = np.random.default_rng(17)
    words = pa.array([f"w{i:06d}-" + "x" * (i % 40) for i in range(150_000)])
    data = pa.table(
        {
            "s": pa.array(
                words.take(pa.array(rng.integers(0, len(words), rows))),
                mask=rng.random(rows) < 0.05,
            ),
            "i64": pa.array(rng.integers(-(2**50), 2**50, rows), mask=rng.random(rows) < 0.1),
            "h": pa.array(rng.random(rows).astype(np.float16)),
            "l": pa.array([[i % 3] * (i % 3) for i in range(rows)], pa.list_(pa.int32())),
        }
    )
    for version in ["1.0", "2.0"]:
        path = tmp_path / f"pieces-{version}.parquet"
        pq.write_table(
            data, path, row_group_size=rows, data_page_version=version, data_page_size=64 << 10
        )
        meta = pq.ParquetFile(path).metadata
        assert meta.num_row_groups == 1
        assert meta.row_group(0).column(0).total_uncompressed_size > 16 << 20
        theirs = pq.read_table(path)
        ours = fastingest.read_parquet(str(path))
        assert ours.equals(theirs), version
        if len(os.sched_getaffinity(0)) >= 2:
            # Cut where the pieces end: more batches than the one row group
            # (on one core there is one decode thread, and no pieces).
            assert ours["s"].num_chunks >= 2, version
        assert fastingest.read_parquet(str(path), columns=["l", "s"]).equals(
            pq.read_table(path, columns=["l", "s"])
        )
        kept = fastingest.read_parquet(str(path), filters=[("i64", "<", 0)])
        assert kept.equals(pq.read_table(path, filters=[("i64", "<", 0)])), version
        streamed = pa.Table.from_batches(list(fastingest.iter_batches(str(path))))
        assert streamed.equals(theirs), version
        one = fastingest.read_parquet(str(path), config=fastingest.Config(decode_parallelism=1))
        assert one.equals(theirs), version


def test_a_row_group_of_more_rows_than_a_footer_is_trusted_for(tmp_path):
    # Over 2**23 rows (Spark writes row groups by bytes: tens of millions of
    # rows of narrow columns): fastingest's decoders take each chunk whose
    # page headers count the footer's rows, the float16 is the `parquet`
    # crate's, a batch of 2**20 rows at a time, and the two line up.
    rows = (1 << 23) + 4_321
    rng = np.random.default_rng(12)
    half = pa.array(rng.random(rows).astype(np.float16), mask=rng.random(rows) < 0.1)
    sizes = np.arange(rows) % 3
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int32)
    items = pa.array((np.arange(offsets[-1]) % 1000).astype(np.int32))
    words = pa.array(["red", "green", "blue", None, "a much longer word than the others"])
    data = pa.table(
        {
            "b": rng.random(rows) < 0.3,
            "h": half,
            "i8": pa.array((np.arange(rows) % 101).astype(np.int8)),
            "t": pa.array((np.arange(rows) % 86_400_000).astype(np.int32), pa.time32("ms")),
            "i64": pa.array(rng.integers(-(2**60), 2**60, rows), mask=rng.random(rows) < 0.1),
            "s": words.take(pa.array(rng.integers(0, len(words), rows))),
            "l": pa.ListArray.from_arrays(pa.array(offsets), items),
            "st": pa.StructArray.from_arrays(
                [pa.array(np.arange(rows, dtype=np.int32)), pa.array(sizes.astype(np.int16))],
                ["x", "y"],
            ),
        }
    )
    for version in ["1.0", "2.0"]:
        path = tmp_path / f"huge-{version}.parquet"
        pq.write_table(data, path, row_group_size=rows, data_page_version=version)
        assert pq.ParquetFile(path).metadata.num_row_groups == 1
        theirs = pq.read_table(path)
        ours = fastingest.read_parquet(str(path))
        assert ours.equals(theirs), version
        assert max(len(c) for c in ours["h"].chunks) <= 1 << 20
        assert fastingest.read_parquet(str(path), columns=["i8", "b"]).equals(
            theirs.select(["i8", "b"])
        )
        batches = list(fastingest.iter_batches(str(path), columns=["t", "b"]))
        assert max(b.num_rows for b in batches) == 1 << 20
        assert pa.Table.from_batches(batches).equals(theirs.select(["t", "b"]))
        kept = fastingest.read_parquet(str(path), filters=[("i8", "<", 7)])
        assert kept.equals(pq.read_table(path, filters=[("i8", "<", 7)])), version
        alone = fastingest.read_parquet(str(path), columns=["i64"])
        assert alone.equals(theirs.select(["i64"])), version
        if len(os.sched_getaffinity(0)) >= 2:
            # Decoded here, as runs of its pages on two threads: a batch
            # ends where a run does, not only at the crate's 2**20 rows.
            ends = np.cumsum([len(c) for c in alone["i64"].chunks])
            assert any(end % (1 << 20) for end in ends[:-1]), version


@pytest.mark.parametrize(
    "writer",
    [
        {"data_page_version": "1.0"},
        # No dictionary, no row limit per page: pages of up to 1 MiB.
        {
            "data_page_version": "2.0",
            "compression": "zstd",
            "use_dictionary": False,
            "data_page_size": 1 << 20,
            "write_page_checksum": True,
        },
    ],
)
def test_a_stream_decodes_a_large_row_group_a_slab_at_a_time(tmp_path, writer):
    # One row group of more slabs (batches of 2^20 rows) than the stream
    # holds (with one decode thread: 2 decoding and 4 waiting): it is
    # decoded a slab at a time, each from the pages that hold its rows (cut
    # to them: pages straddle the slabs' edges), and the stream hands over
    # the batches a whole decode would, with the same values. A float16
    # column (which fastingest's decoders leave to the crate) keeps the
    # whole row group's decode.
    rows = (6 << 20) + 777
    rng = np.random.default_rng(21)
    words = pa.array([f"{w}{i}" for i, w in enumerate(WORDS * 40)])

    def nulls(share: float):
        return rng.random(rows) < share

    data = pa.table(
        {
            "b": pa.array(rng.random(rows) < 0.3, mask=nulls(0.1)),
            "i8": pa.array(rng.integers(-128, 128, rows).astype(np.int8), mask=nulls(0.1)),
            "u16": pa.array(rng.integers(0, 1 << 16, rows).astype(np.uint16)),
            "i64": pa.array(rng.integers(-(2**62), 2**62, rows), mask=nulls(0.5)),
            "s": pa.array(
                words.take(pa.array(rng.integers(0, len(words), rows))), mask=nulls(0.05)
            ),
            "dec": pa.array(rng.integers(-(10**8), 10**8, rows)).cast(pa.decimal128(21, 2)),
            "ts": pa.array(rng.integers(0, 2**50, rows), pa.timestamp("us", tz="UTC")),
            "h": pa.array(rng.random(rows).astype(np.float16)),
        }
    )
    path = tmp_path / "slabs.parquet"
    pq.write_table(data, path, row_group_size=rows, **writer)
    assert pq.ParquetFile(path).metadata.num_row_groups == 1
    theirs = pq.read_table(path)
    one_thread = fastingest.Config(verify_checksums=True, decode_parallelism=1)
    for columns, config in [
        (None, one_thread),
        (["ts", "s", "i8"], one_thread),
        (["h", "b"], one_thread),
        (None, fastingest.Config()),
    ]:
        batches = list(fastingest.iter_batches(str(path), columns=columns, config=config))
        # The first 64 Ki rows on their own, then up to each multiple of 2^20.
        first = [65_536, (1 << 20) - 65_536]
        assert [b.num_rows for b in batches] == first + [1 << 20] * 5 + [777], columns
        want = theirs.select(columns) if columns else theirs
        got = pa.Table.from_batches(batches)
        assert got.schema == want.schema, columns
        for name in want.column_names:
            assert got[name].equals(want[name]), (columns, name)
    # A filter keeps the rows pyarrow keeps, the float16 column's (the
    # crate's) among them.
    kept = fastingest.iter_batches(str(path), filters=[("i8", "<", -100)], config=one_thread)
    assert kept.read_all().equals(pq.read_table(path, filters=[("i8", "<", -100)]))


def test_a_filtered_stream_hands_over_each_slab_s_kept_rows(tmp_path):
    # One row group of 6 slabs and a bit: a filtered stream decodes it a
    # slab at a time, the filter's columns first, and hands over each
    # slab's kept rows as that slab is decoded (a whole decode handed over
    # every kept row at the end, in batches of 2^20 kept rows). `day` rises
    # with the row, so its pages' statistics rule out whole slabs; `noise`
    # is random, so every slab keeps some rows. A float16 column (`h`,
    # left to the crate) keeps the whole row group's decode.
    slab = 1 << 20
    rows = 6 * slab + 4321
    rng = np.random.default_rng(7)
    ids = np.arange(rows, dtype=np.int64)
    data = pa.table(
        {
            "id": ids,
            "day": (ids // 10_000).astype(np.int32),
            "noise": pa.array(
                rng.integers(0, 1000, rows).astype(np.int16), mask=rng.random(rows) < 0.1
            ),
            "s": pa.array([f"w{i % 977}" for i in range(rows)]),
            # Distinct: dictionary pages, then PLAIN ones once it is full.
            "u": pa.array(np.char.add("u", ids.astype(str))),
            "flag": pa.array(rng.random(rows) < 0.5, mask=rng.random(rows) < 0.2),
            "h": pa.array(rng.random(rows).astype(np.float16)),
        }
    )
    path = tmp_path / "one_group.parquet"
    pq.write_table(data, path, row_group_size=rows, data_page_size=64 << 10)
    assert pq.ParquetFile(path).metadata.num_row_groups == 1
    one_thread = fastingest.Config(decode_parallelism=1)
    last_day = int(data["day"][-1].as_py())

    def slab_of(row: int) -> int:
        # The stream's first 64 Ki rows are a batch of their own.
        return -1 if row < 65_536 else row // slab

    cases = [
        # Only the last slab and a half: the first four are never decoded.
        ([("day", ">=", last_day - 150)], ["id", "day", "noise", "s"]),
        # Some rows of every slab, a column read only for the filter.
        ([("noise", "<", 40)], ["id", "s", "u", "flag"]),
        # Two filter columns, one with nulls; nothing kept in most slabs.
        ([("noise", "=", 3), ("day", "<", 200)], ["s", "id", "noise", "day"]),
        # No rows at all.
        ([("day", ">", last_day)], ["id", "s"]),
        # The whole row group, decoded late, for a column left to the crate.
        ([("noise", "<", 40)], None),
    ]
    for filters, columns in cases:
        want = pq.read_table(path, columns=columns, filters=filters)
        stream = fastingest.iter_batches(
            str(path), columns=columns, filters=filters, config=one_thread
        )
        batches = [b for b in stream if b.num_rows]
        got = pa.Table.from_batches(batches, schema=stream.schema)
        assert got.equals(want), filters
        if "h" in want.column_names:
            continue
        # A batch per slab that kept rows (the id column tells which slab a
        # row came from), each of that slab's rows alone.
        kept_slabs = {slab_of(i) for i in want["id"].to_pylist()}
        assert len(batches) == len(kept_slabs), filters
        for batch in batches:
            assert len({slab_of(i) for i in batch["id"].to_pylist()}) == 1, filters


@pytest.mark.parametrize("store_schema", [False, True])
def test_int96_outside_the_nanosecond_range_reads_in_the_unit_asked_for(tmp_path, store_schema):
    # Spark writes INT96 days far outside 1677-2262 (0001-01-01 as "no
    # date"); in nanoseconds they wrap, so pyarrow users ask for
    # coerce_int96_timestamp_unit="us". Top-level, in lists and in structs
    # (the crate's decoders), with and without an Arrow schema in the file.
    values = [
        datetime.datetime(1, 1, 1),
        datetime.datetime(1969, 12, 31, 23, 59, 59, 999999),
        None,
        datetime.datetime(9999, 12, 31, 23, 59, 59, 999999),
        datetime.datetime(2024, 2, 29, 12),
    ]
    table = pa.table(
        {
            "ts": pa.array(values, pa.timestamp("us")),
            "listed": pa.array([[v, v] for v in values], pa.list_(pa.timestamp("us"))),
            "inside": pa.array([{"t": v} for v in values], pa.struct([("t", pa.timestamp("us"))])),
        }
    )
    path = tmp_path / "spark.parquet"
    pq.write_table(table, path, use_deprecated_int96_timestamps=True, store_schema=store_schema)
    for unit in ("us", "ms", "s"):
        got = fastingest.read_parquet(path, coerce_int96_timestamp_unit=unit)
        want = pq.read_table(path, coerce_int96_timestamp_unit=unit)
        assert got.schema == want.schema
        assert got.equals(want), unit
        if unit == "us":
            assert got.equals(table), unit
        streamed = pa.Table.from_batches(
            list(fastingest.iter_batches(path, coerce_int96_timestamp_unit=unit))
        )
        assert streamed.equals(want), unit
    # Unasked, nanoseconds (without an Arrow schema) hold only the middle rows.
    if not store_schema:
        plain = fastingest.read_parquet(path)
        assert plain.schema.field("ts").type == pa.timestamp("ns")
        assert plain["ts"][1].as_py() == table["ts"][1].as_py()
    with pytest.raises(fastingest.InvalidArgumentError, match="coerce_int96_timestamp_unit"):
        fastingest.read_parquet(path, coerce_int96_timestamp_unit="minutes")


@pytest.mark.parametrize("page_version", ["1.0", "2.0"])
@pytest.mark.parametrize("dictionary", [True, False])
@pytest.mark.parametrize("struct_nulls", [0.0, 0.2, 1.0])
@pytest.mark.parametrize("field_nulls", [0.0, 0.1])
def test_structs_of_flat_fields(tmp_path, page_version, dictionary, struct_nulls, field_nulls):
    # Top-level structs of flat fields are decoded a field at a time
    # (`parquet/structs.rs`): nulls of the struct, of its fields, both; a
    # struct that is never null; fields that may not be null.
    rng = np.random.default_rng(int(struct_nulls * 10 + field_nulls * 100))
    kinds = [pa.int64(), pa.float32(), pa.string(), pa.bool_(), pa.decimal128(12, 3), pa.int8()]
    children = [column(k, ROWS, field_nulls, 40, i) for i, k in enumerate(kinds)]
    fields = [pa.field(f"f{i}", c.type) for i, c in enumerate(children)]
    mask = pa.array(rng.random(ROWS) < struct_nulls) if struct_nulls else None
    required = [column(k, ROWS, 0.0, 40, 9 + i) for i, k in enumerate(kinds[:2])]
    data = pa.table(
        {
            "s": pa.StructArray.from_arrays(children, fields=fields, mask=mask),
            "id": pa.array(np.arange(ROWS)),
            "never_null": pa.StructArray.from_arrays(
                required, fields=[pa.field("a", kinds[0], False), pa.field("b", kinds[1], False)]
            ),
        }
    )
    schema = data.schema.set(2, data.schema.field(2).with_nullable(False))
    path = tmp_path / "t.parquet"
    pq.write_table(
        data.cast(schema),
        path,
        use_dictionary=dictionary,
        data_page_version=page_version,
        data_page_size=2048,
        row_group_size=1_700,
    )
    assert_same(path)
    assert_same(path, columns=["never_null", "s"])
    batches = list(fastingest.iter_batches(str(path)))
    assert pa.Table.from_batches(batches).equals(pq.read_table(path))
    # Filtered: the struct's rows are cut to the kept ones (by the crate).
    kept = [("id", ">=", ROWS // 3), ("id", "<", ROWS // 2)]
    assert fastingest.read_parquet(str(path), filters=kept).equals(
        pq.read_table(path, filters=kept)
    )


@pytest.mark.parametrize("page_version", ["1.0", "2.0"])
def test_structs_within_structs(tmp_path, page_version):
    # Structs of flat fields and structs, three levels deep, nulls at every
    # level, an inner struct that may not be null.
    rng = np.random.default_rng(21)

    def struct(children, names, null_share, nullable=True):
        mask = pa.array(rng.random(ROWS) < null_share) if nullable and null_share else None
        return pa.StructArray.from_arrays(children, names, mask=mask)

    leaves = [column(k, ROWS, 0.1, 40, i) for i, k in enumerate([pa.int32(), pa.string()])]
    innermost = struct(leaves, ["i", "s"], 0.2)
    required_fields = [column(pa.float64(), ROWS, 0.0, 40, 5)]
    required = pa.StructArray.from_arrays(
        required_fields, fields=[pa.field("f", pa.float64(), nullable=False)]
    )
    middle = struct([innermost, column(pa.int64(), ROWS, 0.1, 40, 7)], ["innermost", "n"], 0.1)
    top = pa.StructArray.from_arrays(
        [middle, required, column(pa.bool_(), ROWS, 0.1, 2, 9)],
        fields=[
            pa.field("middle", middle.type),
            pa.field("required", required.type, nullable=False),
            pa.field("b", pa.bool_()),
        ],
        mask=pa.array(rng.random(ROWS) < 0.1),
    )
    data = pa.table({"id": pa.array(np.arange(ROWS)), "top": top})
    path = tmp_path / "t.parquet"
    pq.write_table(
        data, path, data_page_version=page_version, data_page_size=2048, row_group_size=1_700
    )
    assert_same(path)
    batches = list(fastingest.iter_batches(str(path)))
    assert pa.Table.from_batches(batches).equals(pq.read_table(path))
    kept = [("id", ">=", ROWS // 4)]
    assert fastingest.read_parquet(str(path), filters=kept).equals(
        pq.read_table(path, filters=kept)
    )


def test_a_struct_with_a_field_the_crate_decodes_reads_whole(tmp_path):
    # A field in an encoding fastingest's decoders leave to the crate
    # (DELTA_BINARY_PACKED), or a list of structs holding a struct among the
    # fields: the whole struct is the crate's, beside structs decoded here.
    ints = pa.array(np.arange(ROWS) * 3)
    delta = pa.StructArray.from_arrays([ints, pa.array(np.arange(ROWS) % 5)], ["d", "plain"])
    listed = pa.StructArray.from_arrays(
        [ints, pa.array([[{"x": {"y": i}}] * (i % 3) for i in range(ROWS)])], ["n", "l"]
    )
    flat = pa.StructArray.from_arrays([ints], ["n"])
    data = pa.table({"delta": delta, "listed": listed, "flat": flat})
    path = tmp_path / "t.parquet"
    pq.write_table(
        data,
        path,
        use_dictionary=False,
        column_encoding={"delta.d": "DELTA_BINARY_PACKED"},
        data_page_version="2.0",
    )
    assert_same(path)
