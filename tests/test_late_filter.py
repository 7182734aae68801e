"""Filtered reads decode the filter's columns first and then only the kept
rows of the others (parquet/late.rs). The rows must be pyarrow's whatever
the shape: nulls and pages of every size in the kept and the filter
columns, dictionary and plain pages, columns the `parquet` crate decodes
(structs, maps), strings, filters keeping every row or none, a filter
column not asked for, and streams whose first batch is decoded apart."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fastingest


def _table(n: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    nulls = rng.random(n) < 0.15
    return pa.table(
        {
            "key": pa.array(rng.integers(0, 100, n), pa.int32()),
            "sorted": pa.array(np.arange(n), pa.int64()),
            "x": pa.array(rng.standard_normal(n), mask=nulls),
            "small": pa.array(rng.integers(-100, 100, n).astype(np.int8)),
            "flag": pa.array(rng.random(n) < 0.5, mask=rng.random(n) < 0.1),
            "label": pa.array([f"s{i % 37}" if i % 11 else None for i in range(n)]),
            "price": pa.array(
                [None if i % 13 == 0 else i * 7 % 10_000 for i in range(n)], pa.int64()
            ).cast(pa.decimal128(21, 2)),
            "when": pa.array(rng.integers(0, 10**12, n), pa.timestamp("ms", "UTC")),
            "pair": pa.StructArray.from_arrays(
                [pa.array(np.arange(n) % 5), pa.array([str(i) for i in range(n)])], ["a", "b"]
            ),
            "tags": pa.array([[i % 3, i % 7] if i % 4 else None for i in range(n)]),
        }
    )


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The same rows written several ways: small pages and row groups with
    dictionaries, plain pages only, page version 2 with zstd."""
    folder = tmp_path_factory.mktemp("late")
    table = _table(30_000)
    written = {}
    for name, options in {
        "small-pages": {"data_page_size": 2048, "row_group_size": 7_000},
        "plain": {"use_dictionary": False, "row_group_size": 12_000},
        "v2-zstd": {"data_page_version": "2.0", "compression": "zstd"},
        # Dictionaries that fill at once: dictionary pages, then plain ones.
        "fallback": {"dictionary_pagesize_limit": 128, "data_page_size": 2048},
        # A page index: only the pages it chooses are fetched, and decoded
        # with the others' rows known to be left out.
        "page-index": {"data_page_size": 2048, "row_group_size": 7_000, "write_page_index": True},
    }.items():
        path = folder / f"{name}.parquet"
        pq.write_table(table, path, **options)
        written[name] = path
    return table, written


FILTERS = [
    [("key", "<", 10)],  # a tenth of the rows, scattered
    [("key", "==", 42)],  # a hundredth
    [("sorted", ">=", 29_000)],  # the last rows: whole words kept
    [("sorted", "<", 0)],  # none (the statistics skip it all)
    [("key", ">=", 0)],  # every row
    [("key", "<", 200)],  # every row, the literal past the values
    [("x", ">", 0.5)],  # a column with nulls decides
    [("key", "in", [1, 2, 3]), ("x", "<", 0)],
    [[("key", "==", 7)], [("flag", "==", True)]],  # OR, a boolean column
    [("label", "in", ["s1", "s2"])],  # a string column decides (compared as keys)
    [("label", ">=", "s3"), ("label", "!=", "s30")],
    [("label", "not in", ["s1", "s2"])],  # most kept: their values copied out of keys
    [("small", "not in", [0, 1])],
    [("key", "<", 50), ("sorted", ">", 15_000)],
    # A narrow range of a sorted column, and two single rows: the other
    # columns' pages without a kept row are passed over undecompressed.
    [("sorted", ">=", 10_500), ("sorted", "<", 10_700)],
    [("sorted", "in", [3, 20_001])],
    [("when", "<", pa.scalar(10**11, pa.timestamp("ms", "UTC")).as_py())],
]


@pytest.mark.parametrize("layout", ["small-pages", "plain", "v2-zstd", "fallback", "page-index"])
@pytest.mark.parametrize("filters", FILTERS, ids=lambda f: repr(f)[:60])
def test_filtered_reads_keep_pyarrows_rows(files, layout, filters):
    _, paths = files
    path = paths[layout]
    want = pq.read_table(path, filters=filters)
    got = fastingest.read_parquet(path, filters=filters)
    assert got.schema == want.schema
    assert got.equals(want)
    # A filter column not among those asked for, and columns the crate
    # decodes (struct, list) beside flat ones.
    columns = ["pair", "price", "tags", "small"]
    want = pq.read_table(path, columns=columns, filters=filters)
    got = fastingest.read_parquet(path, columns=columns, filters=filters)
    assert got.equals(want)


@pytest.mark.parametrize("filters", FILTERS[:4], ids=lambda f: repr(f)[:60])
def test_streams_keep_the_same_rows(files, filters):
    """`iter_batches` decodes a first batch apart and the rest after it;
    both must keep the rows the whole read keeps."""
    _, paths = files
    path = paths["small-pages"]
    want = pq.read_table(path, filters=filters)
    batches = list(fastingest.iter_batches(path, filters=filters))
    got = pa.Table.from_batches(batches, schema=want.schema)
    assert got.equals(want)


def test_large_row_groups_are_cut_into_batches_after_the_filter(tmp_path):
    """A row group of more rows than a batch takes, mostly kept: the kept
    rows come in batches of at most 2**20, in order."""
    n = (1 << 20) + 300_000
    table = pa.table({"k": pa.array(np.arange(n) % 10, pa.int8()), "v": np.arange(n)})
    path = tmp_path / "big.parquet"
    pq.write_table(table, path, row_group_size=n)
    filters = [("k", "!=", 3)]
    got = fastingest.read_parquet(path, filters=filters)
    assert got.equals(pq.read_table(path, filters=filters))
    assert max(len(b) for b in got.to_batches()) <= 1 << 20


def test_dictionary_columns_and_views_follow_the_filter(files):
    _, paths = files
    path = paths["small-pages"]
    filters = [("key", "<", 30)]
    want = pq.read_table(path, filters=filters, read_dictionary=["label"])
    got = fastingest.read_parquet(path, filters=filters, read_dictionary=["label"])
    assert got.equals(want)
    views = fastingest.read_parquet(path, filters=filters, binary_type=pa.binary_view())
    assert views["label"].type == pa.string_view()
    assert views["label"].cast(pa.string()).equals(pq.read_table(path, filters=filters)["label"])


def _sorted_table(n: int) -> pa.Table:
    """Columns sorted as a time series' are, with nulls, NaNs and every type
    whose page bounds a read uses; `x` is a payload."""
    rng = np.random.default_rng(5)
    f = np.linspace(-50.0, 50.0, n)
    f[1_000:1_003] = np.nan
    return pa.table(
        {
            "i8": pa.array(np.repeat(np.arange(-100, 100), n // 200 + 1)[:n].astype(np.int8)),
            "u32": pa.array(np.arange(n, dtype=np.uint32) * 3),
            "f": pa.array(f),
            "s": pa.array([f"k{i:06d}" for i in range(n)]),
            "d": pa.array(np.arange(n) // 10, pa.int32()).cast(pa.date32()),
            "t": pa.array(np.arange(n) * 1_000, pa.timestamp("us", "UTC")),
            "n": pa.array([None if i < 10_000 else i for i in range(n)], pa.int64()),
            "b": pa.array([None if i % 97 == 0 else i % 3 == 0 for i in range(n)]),
            "x": pa.array(rng.standard_normal(n)),
        }
    )


@pytest.fixture(scope="module")
def sorted_files(tmp_path_factory):
    """The sorted rows in small pages (whose headers give their bounds): by
    pyarrow with v1 and v2 pages, and by polars."""
    import polars as pl

    folder = tmp_path_factory.mktemp("sorted")
    table = _sorted_table(50_000)
    written = {}
    for name, options in {
        "v1": {"data_page_size": 2048, "row_group_size": 20_000},
        "v2": {"data_page_size": 4096, "data_page_version": "2.0", "compression": "zstd"},
        "v1-index": {"data_page_size": 2048, "row_group_size": 20_000, "write_page_index": True},
    }.items():
        written[name] = folder / f"{name}.parquet"
        pq.write_table(table, written[name], **options)
    written["polars"] = folder / "polars.parquet"
    pl.from_arrow(table).write_parquet(
        written["polars"], data_page_size=2048, row_group_size=20_000
    )
    return written


SORTED_FILTERS = [
    [("i8", ">=", 10), ("i8", "<", 12)],
    [("u32", ">", 90_000), ("u32", "<=", 90_300)],
    [("f", ">", 20.0), ("f", "<", 20.5)],
    [("f", "<", -49.0)],  # the pages with NaNs among the rows before
    [("s", "==", "k012345")],
    [("s", ">=", "k049990")],
    [("s", "in", ["k000001", "k030000", "zzz"])],
    [("d", "==", pa.scalar(1234, pa.date32()).as_py())],
    [("t", ">=", pa.scalar(41_000_000, pa.timestamp("us", "UTC")).as_py())],
    [("n", "<", 10_500)],  # pages of nulls before the rows kept
    [("n", "!=", 20_000)],
    [("u32", "<", 30), ("x", ">", 0)],  # a column without order decides too
    [[("s", "==", "k000010")], [("u32", "==", 149_997)]],  # OR of two narrow ranges
    [("u32", ">", 10**9)],  # no page may match
    [("b", "==", True), ("u32", "<", 3_000)],  # a boolean column decides too
]


@pytest.mark.parametrize("layout", ["v1", "v2", "polars", "v1-index"])
@pytest.mark.parametrize("filters", SORTED_FILTERS, ids=lambda f: repr(f)[:60])
def test_page_bounds_pass_over_pages_and_keep_pyarrows_rows(sorted_files, layout, filters):
    """The filter columns' pages whose headers rule them out are not
    decoded: the rows kept must still be pyarrow's."""
    path = sorted_files[layout]
    want = pq.read_table(path, filters=filters)
    got = fastingest.read_parquet(path, filters=filters)
    assert got.schema == want.schema
    assert got.equals(want)
    columns = ["x", "s"]
    want = pq.read_table(path, columns=columns, filters=filters)
    got = fastingest.read_parquet(path, columns=columns, filters=filters)
    assert got.equals(want)


@pytest.mark.parametrize("layout", ["v1", "v2", "polars", "v1-index"])
@pytest.mark.parametrize("filters", SORTED_FILTERS[:6], ids=lambda f: repr(f)[:60])
def test_dictionary_columns_pass_over_pages_without_a_kept_row(sorted_files, layout, filters):
    """A column read as a dictionary keeps only its selected rows, page by
    page, as the other columns do."""
    path = sorted_files[layout]
    want = pq.read_table(path, filters=filters, read_dictionary=["s"])
    got = fastingest.read_parquet(path, filters=filters, read_dictionary=["s"])
    assert got.schema == want.schema
    # The dictionary may hold entries no kept row uses (pyarrow's too):
    # compare the values.
    assert got["s"].cast(pa.string()).equals(want["s"].cast(pa.string()))
    assert got.drop_columns(["s"]).equals(want.drop_columns(["s"]))


@pytest.fixture(scope="module")
def large_row_group(tmp_path_factory):
    """One row group of many more rows than a stream's first batch (64 Ki),
    which a stream decodes apart from the rest."""
    n = 300_000
    rng = np.random.default_rng(11)
    table = pa.table(
        {
            "sorted": pa.array(np.arange(n), pa.int64()),
            "key": pa.array(rng.integers(0, 100, n), pa.int32()),
            "flag": pa.array(rng.random(n) < 0.5, mask=rng.random(n) < 0.1),
            "label": pa.array([f"s{i % 37}" if i % 11 else None for i in range(n)]),
            "x": pa.array(rng.standard_normal(n)),
        }
    )
    path = tmp_path_factory.mktemp("large") / "large.parquet"
    pq.write_table(table, path, row_group_size=n, data_page_size=8192)
    return path


STREAM_FILTERS = [
    [("key", "<", 10)],  # scattered over the head and the rest
    [("sorted", "<", 1_000)],  # only in the head
    [("sorted", ">=", 200_000), ("sorted", "<", 200_500)],  # only after it
    [("sorted", ">=", 65_000), ("sorted", "<", 66_000)],  # across its end
    [("sorted", "in", [0, 65_535, 65_536, 299_999])],  # at its edges
    [("sorted", "<", 0)],  # none
    [("key", ">=", 0)],  # all
]


@pytest.mark.parametrize("filters", STREAM_FILTERS, ids=lambda f: repr(f)[:60])
def test_streams_of_a_large_row_group_keep_the_same_rows(large_row_group, filters):
    """The rows after a stream's first batch are decoded late too (the
    filter's columns first, then only the kept rows of the others): the
    head and the rest together keep the rows the whole read keeps."""
    want = pq.read_table(large_row_group, filters=filters)
    batches = list(fastingest.iter_batches(large_row_group, filters=filters))
    got = pa.Table.from_batches(batches, schema=want.schema)
    assert got.equals(want)
    whole = fastingest.read_parquet(large_row_group, filters=filters)
    assert whole.equals(want)
    columns = ["x", "flag"]
    want = pq.read_table(large_row_group, columns=columns, filters=filters)
    batches = list(fastingest.iter_batches(large_row_group, columns=columns, filters=filters))
    assert pa.Table.from_batches(batches, schema=want.schema).equals(want)


def _list_table(n: int) -> pa.Table:
    rng = np.random.default_rng(11)
    lengths = rng.integers(0, 5, n)

    def lists(values, null_every: int, type_=None):
        out = []
        for i, k in enumerate(lengths):
            if null_every and i % null_every == 3:
                out.append(None)
            else:
                out.append([values(i, j) for j in range(int(k))])
        return pa.array(out, type_)

    return pa.table(
        {
            "k": pa.array(rng.integers(0, 1000, n), pa.int32()),
            "ints": lists(lambda i, j: None if (i + j) % 9 == 0 else i * 10 + j, 7),
            "words": lists(lambda i, j: f"w{(i * 7 + j) % 300}", 0),
            "nested": lists(lambda i, j: [i, j] if j % 3 else [], 11),
            "large": lists(lambda i, j: f"long-{i}-{j}", 5, pa.large_list(pa.large_string())),
            "x": pa.array(rng.standard_normal(n)),
        }
    )


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize(
    "filters",
    [
        [("k", "==", 7)],
        [("k", "<", 100)],
        [("k", ">=", 500)],
        [("k", "in", [1, 999])],
        [("k", "<", 0)],
        [("k", ">=", 0)],
        [[("k", "<", 3)], [("k", ">", 996)]],
    ],
    ids=repr,
)
def test_list_columns_keep_only_the_selected_rows(tmp_path, version, filters):
    """Lists decoded by fastingest build the lists of the kept rows only
    (`lists::assemble_selected`): rows, nulls at every level and the
    values must be pyarrow's, however the kept rows fall across pages."""
    table = _list_table(30_000)
    path = tmp_path / "lists.parquet"
    pq.write_table(
        table, path, row_group_size=12_000, data_page_size=4096, data_page_version=version
    )
    got = fastingest.read_parquet(str(path), filters=filters)
    want = pq.read_table(path, filters=filters)
    assert got.num_rows == want.num_rows
    assert got.equals(want), filters


def _sparse_match_table(n: int, at: int) -> pa.Table:
    """Even keys everywhere (so statistics never rule a row group out for an
    odd one) and one odd key, 51, at row ``at``."""
    rng = np.random.default_rng(5)
    keys = rng.integers(0, 100, n).astype(np.int32) * 2
    keys[at] = 51
    return pa.table({"k": keys, "v": np.arange(n), "s": [f"r{i % 97}" for i in range(n)]})


@pytest.mark.parametrize("layout", ["row groups", "head apart", "orc stripes"])
def test_streams_hand_over_no_empty_batch(tmp_path, layout):
    """A row group (or stripe) whose statistics allow the filter but whose
    rows it all drops gives no batch, as a slab that keeps none gives none:
    whether it is decoded whole, or its first rows apart (a row group of
    more than 128 Ki rows). A stream whose filter keeps nothing yields no
    batch at all, and its schema is the read's."""
    n = 400_000
    table = _sparse_match_table(n, at=230_000)
    path = tmp_path / ("t.orc" if layout == "orc stripes" else "t.parquet")
    if layout == "orc stripes":
        from pyarrow import orc

        orc.write_table(table, path, stripe_size=256 * 1024)
        stream = fastingest.iter_orc_batches
        units = orc.ORCFile(path).nstripes
    else:
        size = 50_000 if layout == "row groups" else 200_000
        pq.write_table(table, path, row_group_size=size)
        stream = fastingest.iter_batches
        units = pq.ParquetFile(path).metadata.num_row_groups
    assert units >= 2

    batches = list(stream(path, filters=[("k", "==", 51)]))
    assert [b.num_rows for b in batches] == [1]
    assert batches[0].column("v").to_pylist() == [230_000]

    # Kept rows in some units and not others: only non-empty batches, the
    # same rows as pyarrow keeps.
    filters = [("k", "in", [51, 0])]
    got = list(stream(path, filters=filters))
    assert got and all(b.num_rows > 0 for b in got)
    keys = table.column("k").to_numpy()
    want = table.filter(pa.array((keys == 51) | (keys == 0)))
    assert pa.Table.from_batches(got).equals(want)

    with stream(path, filters=[("k", "==", 53)]) as none_kept:
        assert list(none_kept) == []
        assert none_kept.schema == table.schema
    assert stream(path, filters=[("k", "==", 53)]).read_all().equals(table.schema.empty_table())
