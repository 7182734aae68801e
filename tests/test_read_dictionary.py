"""``read_dictionary``: string and binary columns returned as
``dictionary<int32>`` arrays, equal to what ``pq.read_table`` returns with the
same argument (types, values, nulls), whatever the column's nesting, its
pages' encodings, a filter or the call."""

from __future__ import annotations

import asyncio

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import fastingest

ROWS = 6_000
GROUP = 2_000


def _table(rows: int = ROWS) -> pa.Table:
    rng = np.random.default_rng(7)
    words = [f"word-{i}-{'é' * (i % 3)}" for i in range(40)]
    picks = rng.integers(0, len(words), rows)
    nulls = rng.random(rows) < 0.1
    s = pa.array([None if n else words[p] for p, n in zip(picks, nulls, strict=True)])
    b = pa.array([words[p].encode() for p in picks[::-1]], pa.binary())
    big = pa.array([words[p % 7] for p in picks], pa.large_string())
    st = pa.StructArray.from_arrays(
        [pa.array([words[p % 5] for p in picks]), pa.array(picks, pa.int32())], ["x", "y"]
    )
    tags = pa.array([[words[p], words[(p + 1) % 40]] if p % 4 else None for p in picks])
    m = pa.array(
        [[(words[p % 3], words[p].encode())] for p in picks],
        pa.map_(pa.string(), pa.binary()),
    )
    return pa.table(
        {
            "s": s,
            "b": b,
            "big": big,
            "i": pa.array(picks, pa.int64()),
            "st": st,
            "tags": tags,
            "m": m,
        }
    )


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> str:
    p = tmp_path_factory.mktemp("read_dictionary") / "words.parquet"
    pq.write_table(_table(), p, row_group_size=GROUP)
    return str(p)


def _same(got: pa.Table, want: pa.Table) -> None:
    """Equal types, and equal values once the dictionaries are decoded (the
    chunking may differ, and with it which dictionary each chunk carries)."""
    assert got.schema.equals(want.schema), (got.schema, want.schema)
    assert got.num_rows == want.num_rows
    for name in want.column_names:
        assert got.column(name).to_pylist() == want.column(name).to_pylist(), name


@pytest.mark.parametrize(
    "names",
    [
        ["s"],
        ["b"],
        ["big"],
        ["s", "b", "big"],
        ["st.x"],
        ["tags.list.element"],
        ["m.key_value.value", "m.key_value.key"],
        # Not string or binary columns, groups, names no column has: pyarrow
        # ignores them, and so does fastingest.
        ["i"],
        ["st"],
        ["tags"],
        ["nope"],
        [],
    ],
)
def test_equal_to_pyarrow(path: str, names: list[str]) -> None:
    want = pq.read_table(path, read_dictionary=names)
    got = fastingest.read_parquet(path, read_dictionary=names)
    _same(got, want)


@pytest.mark.parametrize(
    "writer",
    [
        {"data_page_version": "2.0", "compression": "zstd"},
        {"data_page_size": 512, "compression": "none"},
        {"data_page_size": 512, "data_page_version": "2.0", "compression": "snappy"},
    ],
    ids=["v2-zstd", "small-pages", "small-v2-pages"],
)
def test_page_formats_and_null_patterns(tmp_path, writer: dict) -> None:
    rows = 5_000
    rng = np.random.default_rng(11)
    words = ["", "a", "日本", "🦀", "x" * 40]
    picks = rng.integers(0, len(words), rows)
    sparse = rng.random(rows) < 0.95
    table = pa.table(
        {
            "dense": pa.array([words[p] for p in picks]),
            "sparse": pa.array(
                [None if n else words[p] for p, n in zip(picks, sparse, strict=True)]
            ),
            "all_null": pa.array([None] * rows, pa.string()),
            "empty": pa.array([""] * rows),
            "required": pa.array([words[p].encode() for p in picks], pa.binary()),
            "runs": pa.array([words[(i // 700) % 5] for i in range(rows)]),
        }
    )
    schema = table.schema.set(4, pa.field("required", pa.binary(), nullable=False))
    p = tmp_path / "pages.parquet"
    pq.write_table(table.cast(schema), p, row_group_size=2_000, **writer)
    names = table.column_names
    want = pq.read_table(p, read_dictionary=names)
    got = fastingest.read_parquet(p, read_dictionary=names)
    _same(got, want)
    assert not got.schema.field("required").nullable


def test_each_row_group_keeps_its_dictionary_page(path: str) -> None:
    got = fastingest.read_parquet(path, read_dictionary=["s"]).column("s")
    assert got.type == pa.dictionary(pa.int32(), pa.string())
    assert got.num_chunks == ROWS // GROUP
    for chunk in got.chunks:
        # The file's 40 distinct words, not one entry per row.
        assert len(chunk.dictionary) <= 40
        assert chunk.null_count == pc.sum(pc.is_null(chunk.indices)).as_py()
    # pandas sees a Categorical.
    pandas = pytest.importorskip("pandas")
    frame = fastingest.read_parquet(path, read_dictionary=["s"], columns=["s"]).to_pandas()
    assert isinstance(frame["s"].dtype, pandas.CategoricalDtype)


def test_pages_that_fell_back_to_plain(tmp_path) -> None:
    # A dictionary page limit of 1 KiB: each chunk's first values are
    # dictionary-encoded, the rest plain.
    rng = np.random.default_rng(3)
    values = pa.array([f"value-{v}" for v in rng.integers(0, 5_000, 20_000)])
    p = tmp_path / "fallback.parquet"
    pq.write_table(pa.table({"s": values}), p, dictionary_pagesize_limit=1024, data_page_size=4096)
    encodings = pq.ParquetFile(p).metadata.row_group(0).column(0).encodings
    assert "PLAIN" in encodings and "RLE_DICTIONARY" in encodings, encodings
    got = fastingest.read_parquet(p, read_dictionary=["s"])
    _same(got, pq.read_table(p, read_dictionary=["s"]))


def test_with_columns_and_a_filter(path: str) -> None:
    filters = [("s", "in", ["word-3-", "word-4-é"]), ("i", ">", 2)]
    want = pq.read_table(path, columns=["st.x", "s"], filters=filters, read_dictionary=["s"])
    got = fastingest.read_parquet(
        path, columns=["st.x", "s"], filters=filters, read_dictionary=["s", "st.x"]
    )
    assert got.column("s").type == pa.dictionary(pa.int32(), pa.string())
    # A dotted path returns the struct's field as a column of its own name.
    assert got.column("x").type == pa.dictionary(pa.int32(), pa.string())
    assert got.num_rows == want.num_rows > 0
    for name in ("s", "x"):
        assert got.column(name).to_pylist() == want.column(name).to_pylist()


def test_statistics_still_prune_a_dictionary_column(tmp_path) -> None:
    # Sorted values: only one row group can hold "k-0007".
    p = tmp_path / "sorted.parquet"
    keys = pa.array([f"k-{i // 500:04d}" for i in range(10_000)])
    pq.write_table(pa.table({"k": keys, "v": pa.array(range(10_000))}), p, row_group_size=1_000)
    stats = fastingest.ReadStats()
    got = fastingest.read_parquet(
        p, filters=[("k", "==", "k-0007")], read_dictionary=["k"], stats=stats
    )
    assert got.column("k").type == pa.dictionary(pa.int32(), pa.string())
    assert got.column("v").to_pylist() == list(range(3_500, 4_000))
    whole = fastingest.ReadStats()
    fastingest.read_parquet(p, read_dictionary=["k"], stats=whole)
    assert stats.bytes_needed * 5 < whole.bytes_needed


def test_batches_async_and_datasets(tmp_path, path: str) -> None:
    want = pq.read_table(path, read_dictionary=["s", "b"])
    batches = list(fastingest.iter_batches(path, read_dictionary=["s", "b"]))
    assert all(b.schema.equals(want.schema) for b in batches)
    _same(pa.Table.from_batches(batches), want)
    got = asyncio.run(fastingest.read_parquet_async(path, read_dictionary=["s", "b"]))
    _same(got, want)
    # A partitioned directory: every file's column is a dictionary, joined
    # under one schema; a file without the column does not refuse the name.
    for part in ("a", "b"):
        d = tmp_path / "lake" / f"part={part}"
        d.mkdir(parents=True)
        pq.write_table(_table(1_000).select(["s", "i"]), d / "0.parquet")
    (tmp_path / "lake" / "part=c").mkdir()
    pq.write_table(_table(500).select(["i"]), tmp_path / "lake" / "part=c" / "0.parquet")
    lake = fastingest.read_parquet(str(tmp_path / "lake"), read_dictionary=["s"])
    assert lake.schema.field("s").type == pa.dictionary(pa.int32(), pa.string())
    assert lake.num_rows == 2_500
    assert (
        lake.column("s").null_count
        == pc.sum(
            pc.is_null(pa.concat_arrays([_table(1_000).column("s").combine_chunks()] * 2))
        ).as_py()
        + 500
    )


@pytest.mark.parametrize("bad", ["s", [1], ["s", None]])
def test_bad_names_are_refused(path: str, bad) -> None:
    with pytest.raises(fastingest.InvalidArgumentError, match="read_dictionary"):
        fastingest.read_parquet(path, read_dictionary=bad)


def test_calls_that_do_not_decode_do_not_take_it(path: str) -> None:
    for call in (fastingest.plan_parquet, fastingest.read_chunks):
        with pytest.raises(TypeError, match="read_dictionary"):
            call(path, read_dictionary=["s"])


def test_dictionaries_written_with_large_values_read_as_pyarrow_reads_them(tmp_path) -> None:
    # pyarrow reads a dictionary of large strings or binary back as one of
    # (small) strings or binary, at any depth; pandas 3 writes its
    # categories of `str` that way.
    def dictionary(values: pa.DataType, keys: pa.DataType | None = None) -> pa.Array:
        return pa.DictionaryArray.from_arrays(
            pa.array([0, 1, 0, None], keys or pa.int32()), pa.array(["x", "yy"], values)
        )

    table = pa.table(
        {
            "ls": dictionary(pa.large_string(), pa.int8()),
            "lb": dictionary(pa.large_binary()),
            "s": dictionary(pa.string(), pa.int16()),
            "st": pa.StructArray.from_arrays([dictionary(pa.large_string())], ["x"]),
            "l": pa.ListArray.from_arrays(pa.array([0, 1, 2, 3, 4]), dictionary(pa.large_string())),
            "big": pa.array(["a", "b", None, "c"], pa.large_string()),
        }
    )
    p = tmp_path / "large.parquet"
    pq.write_table(table, p)
    want = pq.read_table(p)
    assert want.schema.field("ls").type == pa.dictionary(pa.int8(), pa.string())
    got = fastingest.read_parquet(p)
    assert got.equals(want), (got.schema, want.schema)
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame(
        {"cat": pandas.Categorical.from_codes([0, 1, 1, 0, -1], ["low", "high"])}
    )
    frame.to_parquet(tmp_path / "pandas.parquet")
    got = fastingest.read_parquet(tmp_path / "pandas.parquet")
    assert got.equals(pq.read_table(tmp_path / "pandas.parquet"))
    assert got.to_pandas()["cat"].tolist() == frame["cat"].tolist()


def test_narrow_keys_decoded_and_overflowing_ones_refused(tmp_path) -> None:
    def chunk(first: int) -> pa.Table:
        keys = pa.array(list(range(100)) * 3, pa.int8())
        values = pa.array([f"v{first + i}" for i in range(100)])
        return pa.table({"c": pa.DictionaryArray.from_arrays(keys, values)})

    # `int8` keys, each row group's dictionary of 100 entries: decoded.
    fits = tmp_path / "fits.parquet"
    with pq.ParquetWriter(fits, chunk(0).schema) as writer:
        writer.write_table(chunk(0))
        writer.write_table(chunk(100))
    got = fastingest.read_parquet(fits)
    assert got.schema.field("c").type == pa.dictionary(pa.int8(), pa.string())
    assert got.equals(pq.read_table(fits))
    # One row group whose dictionary page holds 200 entries for `int8`
    # keys: pyarrow refuses it, and so does fastingest, naming the file.
    over = tmp_path / "over.parquet"
    pq.write_table(pa.concat_tables([chunk(0), chunk(100)]), over)
    with pytest.raises(pa.ArrowInvalid):
        pq.read_table(over)
    with pytest.raises(fastingest.CorruptFileError, match="over.parquet"):
        fastingest.read_parquet(over)


def test_leaves_under_fixed_size_lists(tmp_path) -> None:
    # A fixed-size list is a list in the file; only the stored Arrow schema
    # gives its size. Its leaves were returned as plain strings.
    words = pa.array(["a", "b", None, "a", "c", "b"])
    table = pa.table(
        {
            "pairs": pa.FixedSizeListArray.from_arrays(words, 2),
            "nested": pa.array(
                [[["x", "y"]], [], [["y", None]]], pa.list_(pa.list_(pa.string(), 2))
            ),
            "tagged": pa.array(
                [[[("k", b"v")]], [[("k", b"w"), ("j", None)]], [None]],
                pa.list_(pa.map_(pa.string(), pa.binary()), 1),
            ),
        }
    )
    path = str(tmp_path / "fixed.parquet")
    pq.write_table(table, path)
    names = [
        "pairs.list.element",
        "nested.list.element.list.element",
        "tagged.list.element.key_value.key",
        "tagged.list.element.key_value.value",
    ]
    got = fastingest.read_parquet(path, read_dictionary=names)
    want = pq.read_table(path, read_dictionary=names)
    assert got.schema.field("pairs").type.value_type == pa.dictionary(pa.int32(), pa.string())
    assert got.schema == want.schema
    assert got.to_pylist() == want.to_pylist()
