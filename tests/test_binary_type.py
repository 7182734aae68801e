"""``binary_type``: every string and binary column in the layout asked for
(views, 64-bit offsets, 32-bit offsets), with the values ``pq.read_table``
returns, whatever the column's nesting, its pages' encodings, a filter, the
call, or the Arrow schema the writer stored."""

from __future__ import annotations

import asyncio

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fastingest

ROWS = 6_000
GROUP = 2_000

# What each layout makes of a string and of a binary type.
LAYOUTS = {
    "binary_view": (pa.string_view(), pa.binary_view()),
    "large_binary": (pa.large_string(), pa.large_binary()),
    "binary": (pa.string(), pa.binary()),
}


def relaid(t: pa.DataType, layout: str) -> pa.DataType:
    """`t` with every string and binary type under it in `layout`
    (dictionaries kept), as ``binary_type`` promises."""
    string, binary = LAYOUTS[layout]
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return string
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return binary
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(relaid(t.value_type, layout)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(relaid(t.value_type, layout)))
    if pa.types.is_map(t):
        return pa.map_(
            t.key_field.with_type(relaid(t.key_type, layout)),
            t.item_field.with_type(relaid(t.item_type, layout)),
            t.keys_sorted,
        )
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(relaid(f.type, layout)) for f in t])
    return t


def relaid_schema(schema: pa.Schema, layout: str) -> pa.Schema:
    return pa.schema(
        [f.with_type(relaid(f.type, layout)) for f in schema], metadata=schema.metadata
    )


def _table(rows: int = ROWS) -> pa.Table:
    rng = np.random.default_rng(5)
    words = [
        f"w{i}-{'é' * (i % 3)}-{'long enough to sit outside the view' * (i % 2)}" for i in range(60)
    ]
    picks = rng.integers(0, len(words), rows)
    nulls = rng.random(rows) < 0.1
    s = pa.array([None if n else words[p] for p, n in zip(picks, nulls, strict=True)])
    unique = pa.array([f"row-{i}-{words[p]}" for i, p in enumerate(picks)])
    b = pa.array([words[p].encode() for p in picks[::-1]], pa.binary())
    big = pa.array([words[p % 7] for p in picks], pa.large_string())
    st = pa.StructArray.from_arrays(
        [pa.array([words[p % 5] for p in picks]), pa.array(picks, pa.int32())], ["x", "y"]
    )
    tags = pa.array([[words[p], words[(p + 1) % 60]] if p % 4 else None for p in picks])
    m = pa.array(
        [[(words[p % 3], words[p].encode())] for p in picks],
        pa.map_(pa.string(), pa.binary()),
    )
    d = pa.array([words[p % 9] for p in picks]).dictionary_encode()
    return pa.table(
        {
            "s": s,
            "unique": unique,
            "b": b,
            "big": big,
            "i": pa.array(picks, pa.int64()),
            "st": st,
            "tags": tags,
            "m": m,
            "d": d,
        }
    )


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> str:
    p = tmp_path_factory.mktemp("binary_type") / "words.parquet"
    pq.write_table(_table(), p, row_group_size=GROUP)
    return str(p)


def _same(got: pa.Table, want: pa.Table, layout: str) -> None:
    """`got` has `want`'s schema in `layout`, and `want`'s values."""
    assert got.schema.equals(relaid_schema(want.schema, layout)), (got.schema, want.schema)
    assert got.num_rows == want.num_rows
    for name in want.column_names:
        assert got.column(name).to_pylist() == want.column(name).to_pylist(), name


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_every_string_and_binary_column_takes_the_layout(path: str, layout: str) -> None:
    got = fastingest.read_parquet(path, binary_type=getattr(pa, layout)())
    _same(got, pq.read_table(path), layout)
    # The dictionary column stays one.
    assert got.schema.field("d").type == pa.dictionary(pa.int32(), pa.string())


def test_views_are_views_and_polars_takes_them_as_they_are(path: str) -> None:
    got = fastingest.read_parquet(path, binary_type=pa.binary_view(), columns=["s", "unique"])
    for name in ("s", "unique"):
        chunk = got.column(name).chunk(0)
        assert chunk.type == pa.string_view()
        # Views (16 bytes a row) and at least one buffer of long values.
        assert chunk.buffers()[1].size >= 16 * len(chunk)
        assert len(chunk.buffers()) > 2
    pl = pytest.importorskip("polars")
    frame = pl.from_arrow(got)
    assert frame.equals(pl.read_parquet(path, columns=["s", "unique"]))


def test_files_without_a_stored_schema_read_as_pyarrow_reads_them(tmp_path) -> None:
    # Where pyarrow applies its own `binary_type` (no Arrow schema in the
    # file), both return the same table.
    p = tmp_path / "bare.parquet"
    table = _table(1_000).drop_columns(["d"])
    pq.write_table(table, p, store_schema=False)
    for layout in ("binary_view", "large_binary"):
        bt = getattr(pa, layout)()
        want = pq.read_table(p, binary_type=bt)
        got = fastingest.read_parquet(p, binary_type=bt)
        assert got.equals(want), (got.schema, want.schema)


@pytest.mark.parametrize(
    "writer",
    [
        {"data_page_version": "2.0", "compression": "zstd"},
        {"data_page_size": 512, "compression": "none"},
        {"data_page_size": 512, "data_page_version": "2.0", "compression": "snappy"},
        {"use_dictionary": False, "compression": "snappy"},
        {"use_dictionary": False, "column_encoding": "DELTA_BYTE_ARRAY"},
        {"use_dictionary": False, "column_encoding": "DELTA_LENGTH_BYTE_ARRAY"},
        {"dictionary_pagesize_limit": 1024, "data_page_size": 4096},
    ],
    ids=["v2-zstd", "small-pages", "small-v2", "plain", "delta", "delta-length", "fallback"],
)
def test_page_formats_encodings_and_null_patterns(tmp_path, writer: dict) -> None:
    rows = 5_000
    rng = np.random.default_rng(13)
    words = ["", "a", "日本", "🦀", "x" * 12, "y" * 13, "z" * 40]
    picks = rng.integers(0, len(words), rows)
    sparse = rng.random(rows) < 0.95
    table = pa.table(
        {
            "dense": pa.array([words[p] + str(i % 50) for i, p in enumerate(picks)]),
            "sparse": pa.array(
                [None if n else words[p] for p, n in zip(picks, sparse, strict=True)]
            ),
            "all_null": pa.array([None] * rows, pa.string()),
            "empty": pa.array([""] * rows),
            "required": pa.array([words[p].encode() for p in picks], pa.binary()),
        }
    )
    schema = table.schema.set(4, pa.field("required", pa.binary(), nullable=False))
    p = tmp_path / "pages.parquet"
    pq.write_table(table.cast(schema), p, row_group_size=2_000, **writer)
    got = fastingest.read_parquet(p, binary_type=pa.binary_view())
    _same(got, pq.read_table(p), "binary_view")
    assert not got.schema.field("required").nullable


def test_filters_compare_view_columns_and_statistics_still_prune(tmp_path) -> None:
    p = tmp_path / "sorted.parquet"
    keys = pa.array([f"k-{i // 500:04d}" for i in range(10_000)])
    pq.write_table(pa.table({"k": keys, "v": pa.array(range(10_000))}), p, row_group_size=1_000)
    view = pa.binary_view()
    cases = [
        ([("k", "==", "k-0007")], list(range(3_500, 4_000))),
        ([("k", "in", ["k-0001", "k-0019"])], [*range(500, 1_000), *range(9_500, 10_000)]),
        ([("k", "<", "k-0001")], list(range(500))),
        ([("k", "!=", "k-0000"), ("v", "<", 1_000)], list(range(500, 1_000))),
    ]
    for filters, rows in cases:
        got = fastingest.read_parquet(p, filters=filters, binary_type=view)
        assert got.column("v").to_pylist() == rows, filters
        assert got.schema.field("k").type == pa.string_view()
    stats = fastingest.ReadStats()
    fastingest.read_parquet(p, filters=[("k", "==", "k-0007")], binary_type=view, stats=stats)
    whole = fastingest.ReadStats()
    fastingest.read_parquet(p, binary_type=view, stats=whole)
    assert stats.bytes_needed * 5 < whole.bytes_needed


def test_read_dictionary_wins_for_the_columns_it_names(path: str) -> None:
    got = fastingest.read_parquet(path, read_dictionary=["s"], binary_type=pa.binary_view())
    assert got.schema.field("s").type == pa.dictionary(pa.int32(), pa.string())
    assert got.schema.field("unique").type == pa.string_view()
    assert got.column("s").to_pylist() == pq.read_table(path, columns=["s"]).column(0).to_pylist()


def test_batches_async_datasets_and_a_given_schema(tmp_path, path: str) -> None:
    view = pa.binary_view()
    want = pq.read_table(path)
    batches = list(fastingest.iter_batches(path, binary_type=view))
    assert all(b.schema.equals(relaid_schema(want.schema, "binary_view")) for b in batches)
    _same(pa.Table.from_batches(batches), want, "binary_view")
    _same(asyncio.run(fastingest.read_parquet_async(path, binary_type=view)), want, "binary_view")
    # A partitioned directory: one schema over its files; the partition
    # key stays a dictionary.
    for part in ("a", "b"):
        d = tmp_path / "lake" / f"part={part}"
        d.mkdir(parents=True)
        pq.write_table(_table(1_000).select(["s", "i"]), d / "0.parquet")
    lake = fastingest.read_parquet(str(tmp_path / "lake"), binary_type=view)
    assert lake.schema.field("s").type == pa.string_view()
    assert pa.types.is_dictionary(lake.schema.field("part").type)
    assert lake.num_rows == 2_000
    assert lake.column("s").to_pylist() == _table(1_000).column("s").to_pylist() * 2
    # A schema the caller gives decides the types.
    given = pa.schema([("s", pa.large_string()), ("i", pa.int64())])
    cast = fastingest.read_parquet(
        str(tmp_path / "lake"), binary_type=view, schema=given, partitioning=None
    )
    assert cast.schema.field("s").type == pa.large_string()


@pytest.mark.parametrize("bad", [pa.int32(), pa.utf8().__class__, "utf16", 5, pa.binary(4)])
def test_other_types_are_refused_naming_the_keyword(path: str, bad) -> None:
    with pytest.raises(fastingest.InvalidArgumentError, match="binary_type"):
        fastingest.read_parquet(path, binary_type=bad)


def test_names_and_string_types_are_taken(path: str) -> None:
    for value in ("binary_view", pa.string_view(), "string_view"):
        got = fastingest.read_parquet(path, columns=["s"], binary_type=value)
        assert got.schema.field("s").type == pa.string_view()
    got = fastingest.read_parquet(path, columns=["big"], binary_type=pa.string())
    assert got.schema.field("big").type == pa.string()


def test_calls_that_do_not_decode_parquet_do_not_take_it(path: str, tmp_path) -> None:
    for call in (fastingest.plan_parquet, fastingest.read_chunks):
        with pytest.raises(TypeError, match="binary_type"):
            call(path, binary_type=pa.binary_view())
    import pyarrow.orc as orc

    o = tmp_path / "t.orc"
    orc.write_table(pa.table({"s": ["a"]}), o)
    with pytest.raises(TypeError, match="binary_type"):
        fastingest.read_orc(str(o), binary_type=pa.binary_view())


def test_views_outlive_a_mapped_file_cut_short(tmp_path) -> None:
    # Uncompressed plain pages: the views' values are the pages' own bytes,
    # which a local read maps. The table must not point into the mapping:
    # a file cut short after the read would kill the process on access.
    p = tmp_path / "plain.parquet"
    values = [f"value number {i} of a plain page" for i in range(100_000)]
    pq.write_table(pa.table({"s": values}), p, compression="none", use_dictionary=False)
    p.read_bytes()  # in the page cache: the read maps it
    stats = fastingest.ReadStats()
    got = fastingest.read_parquet(p, binary_type=pa.binary_view(), stats=stats)
    assert stats.bytes_mapped > 0
    with open(p, "r+b") as f:
        f.truncate(0)
    assert got.column("s").to_pylist() == values
