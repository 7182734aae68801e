"""Local files: every type and codec, projection, row groups, filters, errors,
and the Python-level behaviour (GIL, async, fork)."""

from __future__ import annotations

import asyncio
import datetime
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fastingest
from fastingest import _fastingest, _filters

from .conftest import assert_tables_equal, read_in_forked_child
from .datagen import all_types_table, numeric_table

CODECS = ["none", "snappy", "gzip", "brotli", "lz4", "zstd"]


@pytest.fixture(scope="module")
def typed_table() -> pa.Table:
    return all_types_table()


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("page_version", ["1.0", "2.0"])
def test_every_type_and_codec_matches_pyarrow(tmp_path, typed_table, codec, page_version):
    path = tmp_path / "t.parquet"
    pq.write_table(
        typed_table, path, compression=codec, data_page_version=page_version, row_group_size=128
    )
    assert_tables_equal(fastingest.read_parquet(str(path)), pq.read_table(path))


def test_page_index_tiny_pages_and_dictionary_off(tmp_path, typed_table):
    path = tmp_path / "t.parquet"
    pq.write_table(
        typed_table,
        path,
        write_page_index=True,
        data_page_size=64,
        use_dictionary=False,
        row_group_size=100,
        write_statistics=True,
    )
    assert_tables_equal(fastingest.read_parquet(path), pq.read_table(path))


def test_zero_rows_keep_schema(tmp_path, typed_table):
    path = tmp_path / "empty.parquet"
    pq.write_table(typed_table.slice(0, 0), path)
    got = fastingest.read_parquet(str(path))
    assert got.num_rows == 0
    assert_tables_equal(got, pq.read_table(path))


def test_pandas_and_field_metadata_survive(tmp_path):
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]}, index=pd.Index([7, 8, 9], name="k"))
    table = pa.Table.from_pandas(df)
    table = table.replace_schema_metadata({**table.schema.metadata, b"custom": b"v"})
    field = table.schema.field("a").with_metadata({b"unit": b"m"})
    table = table.cast(table.schema.set(0, field))
    path = tmp_path / "pd.parquet"
    pq.write_table(table, path)
    got = fastingest.read_parquet(path)
    assert_tables_equal(got, pq.read_table(path))
    assert b"pandas" in got.schema.metadata
    assert fastingest.metadata(str(path))["schema"].equals(got.schema, check_metadata=True)
    assert got.schema.field("a").metadata == {b"unit": b"m"}
    assert got.to_pandas().index.name == "k"


@pytest.fixture
def numeric_file(tmp_path) -> Path:
    path = tmp_path / "n.parquet"
    pq.write_table(numeric_table(), path, row_group_size=1000)
    return path


@pytest.mark.parametrize("columns", [["x"], ["name", "id"], ["g", "g"], []])
def test_columns_match_pyarrow(numeric_file, columns):
    assert_tables_equal(
        fastingest.read_parquet(numeric_file, columns=columns),
        pq.read_table(numeric_file, columns=columns),
    )


def test_nested_columns_by_name_and_dotted_path(tmp_path, typed_table):
    path = tmp_path / "t.parquet"
    pq.write_table(typed_table, path)
    for cols in (["struct"], ["struct.x"], ["nested_struct.a.b", "i8"], ["map", "list_list"]):
        assert_tables_equal(
            fastingest.read_parquet(path, columns=cols), pq.read_table(path, columns=cols)
        )


def test_dotted_paths_sharing_a_name_each_return_their_own_field(tmp_path):
    # `a.f`, `b.f` and `f` all come back as a column named `f`: each must be
    # its own (all three were once the first one asked for), in one file, a
    # directory of them, and streamed.
    a = pa.StructArray.from_arrays([pa.array([1, 2, 3])], ["f"])
    b = pa.StructArray.from_arrays([pa.array(["x", None, "z"])], ["f"])
    table = pa.table({"a": a, "b": b, "f": pa.array([7.0, 8.0, 9.0])})
    folder = tmp_path / "d"
    folder.mkdir()
    pq.write_table(table, folder / "1.parquet")
    pq.write_table(table, folder / "2.parquet")
    one = folder / "1.parquet"
    for cols in (["a.f", "b.f"], ["b.f", "a.f"], ["f", "a.f"], ["b.f", "f", "a.f"]):
        want = pq.read_table(one, columns=cols)
        assert_tables_equal(fastingest.read_parquet(one, columns=cols), want)
        streamed = pa.Table.from_batches(list(fastingest.iter_batches(one, columns=cols)))
        assert_tables_equal(streamed, want)
        both = fastingest.read_parquet(folder, columns=cols)
        assert_tables_equal(both, pa.concat_tables([want, want]))


def test_a_required_field_of_a_nullable_struct_is_returned_nullable(tmp_path):
    # A null struct makes its fields null: a field asked for by path is
    # nullable whatever it says (pyarrow keeps `not null` on a column that
    # holds nulls; Arrow refuses that).
    inner = pa.struct([pa.field("h", pa.int32(), nullable=False)])
    kind = pa.struct([pa.field("f", pa.int32(), nullable=False), pa.field("g", inner, False)])
    schema = pa.schema([("s", kind), pa.field("r", kind, nullable=False)])
    s = pa.array([{"f": 1, "g": {"h": 1}}, None, {"f": 3, "g": {"h": 2}}], type=kind)
    r = pa.array([{"f": 4, "g": {"h": 5}}] * 3, type=kind)
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"s": s, "r": r}, schema=schema), path)
    got = fastingest.read_parquet(path, columns=["s.f", "s.g.h", "s.g", "r.f"])
    assert [f.nullable for f in got.schema] == [True, True, True, False]
    assert got.column(0).to_pylist() == [1, None, 3]
    assert got.column(1).to_pylist() == [1, None, 2]
    assert got.column(2).to_pylist() == [{"h": 1}, None, {"h": 2}]
    assert got.column(3).to_pylist() == [4, 4, 4]


def test_row_groups_match_pyarrow(numeric_file):
    want = pq.ParquetFile(numeric_file).read_row_groups([3, 1], columns=["id", "x"])
    got = fastingest.read_parquet(numeric_file, row_groups=[3, 1], columns=["id", "x"])
    assert_tables_equal(got, want)


FILTERS = [
    [("g", "==", 3)],
    [("g", "=", 3), ("x", ">", 0.5)],
    [("id", "<", 1500)],
    [("id", ">=", 9_500)],
    [("id", "<=", 10)],
    [("g", "!=", 0)],
    [("name", "in", ["n001", "n050"])],
    [("g", "not in", [1, 2, 3])],
    [[("id", "<", 100)], [("id", ">", 9_900), ("flag", "==", True)]],
    [("x", ">", 100.0)],
    # Lists longer than 8 values are matched by a hash set, not value by value.
    [("name", "in", [f"n{i:03d}" for i in range(0, 200, 7)] + ["", "zz"])],
    [("name", "not in", [f"n{i:03d}" for i in range(3, 100, 2)])],
    [("id", "in", list(range(-50, 20_000, 37)))],
    [("g", "not in", [0, 2, 4, 6, 8, 10, 12, 14, 16, 1])],
    [("x", "in", [float("nan"), -0.0, 0.0, 1e300] + [i / 8 for i in range(-40, 40)])],
]


@pytest.mark.parametrize("filters", FILTERS)
def test_filters_match_pyarrow(numeric_file, filters):
    got = fastingest.read_parquet(numeric_file, columns=["id", "x"], filters=filters)
    assert_tables_equal(got, pq.read_table(numeric_file, columns=["id", "x"], filters=filters))


@pytest.mark.parametrize(
    "values",
    [
        [1],
        [0, -5, 2**63 - 1, -(2**63)],
        [True, False, True] * 5,
        [1.5, float("nan"), -0.0],
        ["x", "", "Zürich%"],
        [b"a", b""],
        [1, 2.0],
        [None],
        [datetime.date(2025, 1, 31), datetime.date(1969, 12, 31), datetime.date(1, 1, 1)],
        [datetime.datetime(2025, 1, 31, 12)],
    ],
)
def test_filter_values_are_the_arrays_pyarrow_makes(values):
    # Plain values reach the core untyped; it builds the array.
    literal = _filters.normalize([("c", "in", values)])[0][0][2]
    got = _fastingest._filter_literal(literal)
    want = pa.array(values)
    got.validate(full=True)
    assert got.type == want.type
    assert repr(got.to_pylist()) == repr(want.to_pylist())


@pytest.mark.parametrize("value", ["\ud800", 2**64])
def test_unusable_filter_values_are_invalid_arguments(value):
    with pytest.raises(fastingest.InvalidArgumentError, match="not usable"):
        _filters.normalize([("c", "=", value)])


def test_a_filtered_read_does_not_import_pandas(numeric_file):
    # pa.array on Python values imports pandas when it is installed: 0.3 s
    # added to the first filtered read of every process.
    pytest.importorskip("pandas", reason="pandas is not installed: nothing to import")
    code = (
        "import sys, fastingest\n"
        # pyarrow is imported by the first read, while its requests run.
        "assert 'pyarrow' not in sys.modules\n"
        f"t = fastingest.read_parquet({str(numeric_file)!r}, filters=[('id', 'in', [1, 2]),"
        " ('x', '<', 9.5), ('id', '!=', 3)])\n"
        "assert type(t).__module__.startswith('pyarrow'), type(t)\n"
        "assert t.num_rows == 2, t.num_rows\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_filters_with_nulls_timestamps_and_dictionaries(tmp_path, typed_table):
    path = tmp_path / "t.parquet"
    pq.write_table(typed_table, path, row_group_size=100)
    import datetime as dt
    import decimal

    for filters in (
        [("i32", ">", 0)],
        [("f64", "!=", 0.5)],
        [("str", "==", "s3")],
        [("dict", "in", ["k1", "k3"])],
        [("ts_ms", ">", dt.datetime(2000, 1, 1))],
        [("dec", "<", decimal.Decimal("1.00"))],
        [("bool", "==", False)],
        [("date", ">=", dt.date(2020, 6, 1))],
    ):
        cols = ["i16", filters[0][0]]
        assert_tables_equal(
            fastingest.read_parquet(path, columns=cols, filters=filters),
            pq.read_table(path, columns=cols, filters=filters),
        )


def test_filters_prune_row_groups_by_statistics(numeric_file):
    plan = fastingest.plan_parquet(numeric_file, filters=[("id", "<", 1500)])[0]
    assert plan["row_groups"] == [0, 1]
    everything = fastingest.plan_parquet(numeric_file)[0]
    assert plan["bytes_needed"] < everything["bytes_needed"] / 3


def test_several_files_and_globs_in_order(tmp_path):
    t = numeric_table(3000)
    for i in range(3):
        pq.write_table(t.slice(i * 1000, 1000), tmp_path / f"part-{i}.parquet")
    (tmp_path / "sub").mkdir()
    pq.write_table(t.slice(0, 10), tmp_path / "sub" / "part-9.parquet")
    got = fastingest.read_parquet(str(tmp_path / "*.parquet"))
    assert_tables_equal(got, t)
    deep = fastingest.read_parquet(str(tmp_path / "**" / "*.parquet"))
    assert deep.num_rows == 3010
    listed = fastingest.read_parquet(
        [tmp_path / "part-2.parquet", str(tmp_path / "part-0.parquet")]
    )
    assert listed.column("id").to_pylist()[:2] == [2000, 2001]
    assert fastingest.read_parquet(f"file://{tmp_path}/part-1.parquet").num_rows == 1000


def test_schema_mismatch_names_the_file(tmp_path):
    pq.write_table(pa.table({"a": [1]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"a": ["x"]}), tmp_path / "b.parquet")
    with pytest.raises(fastingest.SchemaMismatchError, match="b.parquet"):
        fastingest.read_parquet(str(tmp_path / "*.parquet"))


def test_errors_are_clear_python_exceptions(tmp_path, numeric_file):
    with pytest.raises(FileNotFoundError, match="nope.parquet"):
        fastingest.read_parquet(str(tmp_path / "nope.parquet"))
    with pytest.raises(fastingest.NotFoundError, match="no files match"):
        fastingest.read_parquet(str(tmp_path / "*.nothing"))
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(b"hello world, not parquet at all")
    with pytest.raises(fastingest.CorruptFileError, match="junk.parquet.*PAR1"):
        fastingest.read_parquet(junk)
    tiny = tmp_path / "tiny.parquet"
    tiny.write_bytes(b"PAR1")
    with pytest.raises(fastingest.CorruptFileError, match="too small"):
        fastingest.read_parquet(tiny)
    data = numeric_file.read_bytes()
    truncated = tmp_path / "truncated.parquet"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(fastingest.CorruptFileError, match="truncated.parquet"):
        fastingest.read_parquet(truncated)
    huge_footer = tmp_path / "huge_footer.parquet"
    huge_footer.write_bytes(b"PAR1" + b"\0" * 100 + (10**9).to_bytes(4, "little") + b"PAR1")
    with pytest.raises(fastingest.CorruptFileError, match="beyond the file"):
        fastingest.read_parquet(huge_footer)
    with pytest.raises(fastingest.ColumnNotFoundError, match='"zz".*available columns: id, g, x'):
        fastingest.read_parquet(numeric_file, columns=["zz"])
    with pytest.raises(KeyError):
        fastingest.read_parquet(numeric_file, filters=[("zz", "==", 1)])
    with pytest.raises(fastingest.InvalidArgumentError, match="row group 99"):
        fastingest.read_parquet(numeric_file, row_groups=[99])
    with pytest.raises(ValueError, match="operator"):
        fastingest.read_parquet(numeric_file, filters=[("g", "~", 1)])
    with pytest.raises(ValueError, match="cannot compare"):
        fastingest.read_parquet(numeric_file, filters=[("g", "==", "not a number")])
    # A directory is a dataset now: the bad files in it are named.
    with pytest.raises(fastingest.CorruptFileError, match=r"tmp_path|\.parquet"):
        fastingest.read_parquet(tmp_path)


def test_corrupt_page_gives_error_not_crash(tmp_path, numeric_file):
    data = bytearray(numeric_file.read_bytes())
    meta = pq.ParquetFile(numeric_file).metadata
    chunk = meta.row_group(2).column(2)
    start = chunk.data_page_offset
    for i in range(start + 20, start + chunk.total_compressed_size - 20):
        data[i] ^= 0x5A
    bad = tmp_path / "bad_page.parquet"
    bad.write_bytes(bytes(data))
    with pytest.raises(fastingest.FastIngestError, match="bad_page.parquet"):
        fastingest.read_parquet(bad)


def test_config_from_kwargs_env_and_errors(numeric_file, monkeypatch):
    c = fastingest.Config(slice_size="1M", max_in_flight=4)
    assert c.slice_size == 1 << 20 and c.max_in_flight == 4
    monkeypatch.setenv("FASTINGEST_SLICE_SIZE", "2M")
    assert fastingest.Config().slice_size == 2 << 20
    with pytest.raises(fastingest.InvalidArgumentError, match="unknown config key"):
        fastingest.Config(no_such_knob=1)
    with pytest.raises(ValueError):
        fastingest.Config(max_in_flight=0)
    assert fastingest.Config().near_slice_size == 16 << 20
    monkeypatch.setenv("FASTINGEST_NEAR_SLICE_SIZE", "0")
    assert fastingest.Config().near_slice_size == 0  # 0: slice_size
    with pytest.raises(ValueError, match="near_slice_size"):
        fastingest.Config(near_slice_size="1K")
    # small_file=0: not read whole in the footer's request, for all its columns.
    tiny = fastingest.Config(slice_size="4K", hole_limit=0, small_file=0)
    stats = fastingest.ReadStats()
    got = fastingest.read_parquet(numeric_file, config=tiny, stats=stats)
    assert_tables_equal(got, pq.read_table(numeric_file))
    plan = fastingest.plan_parquet(numeric_file, config=tiny)[0]
    assert max(e - s for s, e in plan["requests"]) <= 4096
    # Spans within the footer request's bytes are served from them; the rest
    # go out as 4 KiB requests.
    assert 10 < stats.requests <= 1 + plan["num_requests"]


def test_a_rotational_local_disk_is_read_in_fewer_longer_requests(tmp_path):
    # 24 MB of incompressible values in one row group, read with `pread`
    # (not mapped) so that every request is a read of the disk.
    n = 3_000_000
    rng = np.random.default_rng(7)
    path = tmp_path / "wide_values.parquet"
    pq.write_table(
        pa.table({"v": rng.integers(0, 2**62, n)}),
        path,
        compression="none",
        row_group_size=n,
    )
    want = pq.read_table(path)
    longest = {}
    for disk in ("ssd", "rotational"):
        config = fastingest.Config(slice_size="1M", map_local_files=False, local_disk=disk)
        assert config.local_disk == disk
        plan = fastingest.plan_parquet(path, config=config)[0]
        longest[disk] = max(e - s for s, e in plan["requests"])
        stats = fastingest.ReadStats()
        assert_tables_equal(fastingest.read_parquet(path, config=config, stats=stats), want)
        assert stats.requests <= 1 + plan["num_requests"]
    # An SSD keeps `slice_size`; a rotational disk gets a near store's slices
    # (`near_slice_size`, 16 MiB): the read goes as about eight long requests
    # instead of 24 of 1 MiB.
    assert longest["ssd"] <= 1 << 20
    assert 2 << 20 < longest["rotational"] <= 16 << 20
    assert fastingest.Config().local_disk == "auto"
    assert fastingest.Config().to_dict()["local_disk"] == "auto"
    with pytest.raises(fastingest.InvalidArgumentError, match="local_disk"):
        fastingest.Config(local_disk="spinning")


def test_a_small_local_file_is_one_read_and_its_tiny_row_groups_stay_in_order(tmp_path):
    path = tmp_path / "tiny.parquet"
    pq.write_table(numeric_table().slice(0, 2000), path, row_group_size=100)
    assert path.stat().st_size <= 2 * 64 * 1024  # twice the footer prefetch
    stats = fastingest.ReadStats()
    got = fastingest.read_parquet(path, stats=stats)
    assert_tables_equal(got, pq.read_table(path))
    assert stats.requests == 1  # footer and column chunks in one read
    # Tiny row groups are decoded together, yet each stays one batch, in order.
    assert got.column("x").num_chunks == 20
    assert [b.num_rows for b in fastingest.iter_batches(path)] == [100] * 20
    filters = [("x", ">", 5)]
    assert_tables_equal(
        fastingest.read_parquet(path, columns=["x", "id"], filters=filters),
        pq.read_table(path, columns=["x", "id"], filters=filters),
    )
    # A file over twice the prefetch, read for some of its columns: the tail
    # first, then what it lacks (read whole, it would be one read: see below).
    big = tmp_path / "big.parquet"
    pq.write_table(numeric_table(), big, row_group_size=1000)
    assert big.stat().st_size > 2 * 64 * 1024
    stats = fastingest.ReadStats()
    fastingest.read_parquet(big, stats=stats, columns=["id", "x", "name"])
    assert stats.requests == 2


def test_local_files_are_fetched_window_by_window_within_the_memory_budget(tmp_path):
    # A budget of 256 KiB over files of ~1.6 MB: each file's row groups are
    # fetched a few at a time, behind their decoding, and several files
    # share the budget; the table is the same.
    table = numeric_table(50_000)
    for i in range(3):
        pq.write_table(table.slice(i * 1000), tmp_path / f"{i}.parquet", row_group_size=2_000)
    config = fastingest.Config(memory_budget="256K", slice_size="64K")
    stats = fastingest.ReadStats()
    got = fastingest.read_parquet(tmp_path / "*.parquet", config=config, stats=stats)
    assert_tables_equal(got, pq.read_table(tmp_path))
    row_groups = sum(pq.ParquetFile(p).num_row_groups for p in tmp_path.glob("*.parquet"))
    assert got.column("id").num_chunks == row_groups == 74
    assert stats.bytes_fetched >= stats.bytes_needed > 3 * 256 * 1024
    filters = [("g", "in", [1, 3, 5, 7, 9, 11, 13, 15, 17])]
    assert_tables_equal(
        fastingest.read_parquet(tmp_path / "*.parquet", config=config, filters=filters),
        pq.read_table(tmp_path, filters=filters),
    )


def test_a_file_rewritten_in_place_is_read_with_what_it_holds_now(tmp_path):
    """Local footers are kept by their bytes, not by path or mtime: a file
    rewritten with the same size is read anew, whether its footer's bytes
    changed (other statistics) or not (no statistics, same layout: only the
    pages differ)."""
    path = tmp_path / "t.parquet"

    def write(values: list[int], statistics: bool) -> bytes:
        table = pa.table({"v": pa.array(values, pa.int64())})
        pq.write_table(
            table,
            path,
            compression="none",
            use_dictionary=False,
            write_statistics=statistics,
            row_group_size=250,
        )
        return path.read_bytes()

    def footer(data: bytes) -> bytes:
        length = int.from_bytes(data[-8:-4], "little")
        return data[-8 - length : -8]

    for statistics in (False, True):
        seen: list[bytes] = []
        for seed in range(3):
            # Each row group holds one quarter of the range, a different one
            # each time: a filter read with stale statistics would keep the
            # wrong row group.
            values = [
                ((i // 250 + seed) % 4) * 250_000 + i % 250 * 1000 + seed for i in range(1000)
            ]
            data = write(values, statistics)
            seen.append(data)
            for _ in range(2):  # the second read may use the kept footer
                got = fastingest.read_parquet(str(path))
                assert got.column("v").to_pylist() == values
                got = fastingest.read_parquet(str(path), filters=[("v", "<", 250_000)])
                assert got.column("v").to_pylist() == [v for v in values if v < 250_000]
        assert len({len(d) for d in seen}) == 1  # same size each time
        assert len({footer(d) for d in seen}) == (3 if statistics else 1)


def test_a_local_file_under_small_file_read_whole_is_one_read(tmp_path):
    """Past twice the footer prefetch, a local file of at most `small_file`
    is still one read when every column chunk is wanted (a cold disk then
    serves one request per file, not two); a file over `small_file` reads
    its footer first."""
    path = tmp_path / "mid.parquet"
    table = numeric_table(20_000)
    pq.write_table(table, path, row_group_size=5_000, compression="none")
    size = path.stat().st_size
    assert 2 * 64 * 1024 < size <= 1 << 20, size

    def requests(at=path, config=None, **options):
        # Read, not mapped: a mapped file's spans all come from its mapping.
        config = config or fastingest.Config()
        config = fastingest.Config(**{**config.to_dict(), "map_local_files": False})
        stats = fastingest.ReadStats()
        got = fastingest.read_parquet(at, stats=stats, config=config, **options)
        columns = options.get("columns")
        assert_tables_equal(got, pq.read_table(at, columns=columns))
        return stats.requests

    assert requests() == 1
    assert requests(columns=["x"]) >= 1
    # A file over `small_file` (a copy: no footer kept): the tail, then the rest.
    copy = tmp_path / "copy.parquet"
    copy.write_bytes(path.read_bytes())
    assert requests(copy, config=fastingest.Config(small_file=size - 5)) == 2
    # Several such files: each one read.
    other = tmp_path / "mid2.parquet"
    other.write_bytes(path.read_bytes())
    stats = fastingest.ReadStats()
    fastingest.read_parquet([path, other], stats=stats)
    assert stats.requests == 2


def test_stats_and_plan_agree(numeric_file):
    stats = fastingest.ReadStats()
    fastingest.read_parquet(numeric_file, columns=["x"], stats=stats)
    plan = fastingest.plan_parquet(numeric_file, columns=["x"])[0]
    assert stats.files == 1
    assert stats.rows == 10_000
    assert stats.unplanned_requests == 0
    # One tail request for the footer, then exactly the planned requests.
    assert stats.requests == 1 + plan["num_requests"]
    assert stats.bytes_needed >= plan["bytes_needed"]
    meta = pq.ParquetFile(numeric_file).metadata
    x_bytes = sum(
        meta.row_group(i).column(2).total_compressed_size for i in range(meta.num_row_groups)
    )
    assert plan["bytes_needed"] == x_bytes


def test_metadata_describes_the_file(numeric_file):
    md = fastingest.metadata(str(numeric_file))
    ref = pq.ParquetFile(numeric_file).metadata
    assert md["num_rows"] == ref.num_rows == 10_000
    assert md["num_row_groups"] == ref.num_row_groups
    assert md["schema"].names == ["id", "g", "x", "name", "flag"]
    col = md["row_groups"][1]["columns"][0]
    assert col["path"] == "id" and col["codec"] == "SNAPPY"
    assert col["statistics"]["min"] == 1000 and col["statistics"]["max"] == 1999
    assert md["row_groups"][0]["columns"][3]["statistics"]["min"] == "n000"
    # A path object names one file as its text does: a dict, not a list.
    assert fastingest.metadata(Path(numeric_file))["num_rows"] == 10_000
    assert isinstance(fastingest.metadata([str(numeric_file)]), list)


def test_gil_is_released_during_a_read(tmp_path):
    path = tmp_path / "big.parquet"
    pq.write_table(numeric_table(600_000), path, row_group_size=50_000, compression="zstd")
    ticks = 0
    stop = threading.Event()

    def spin():
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            time.sleep(0.001)

    t = threading.Thread(target=spin)
    t.start()
    started = time.perf_counter()
    for _ in range(3):
        fastingest.read_parquet(path)
    elapsed = time.perf_counter() - started
    stop.set()
    t.join()
    # With the GIL held the whole time, the other thread could not tick at all.
    assert ticks > 0.2 * elapsed / 0.001 * 0.1, (ticks, elapsed)


def test_async_read_runs_concurrently(numeric_file):
    async def main():
        return await asyncio.gather(
            fastingest.read_parquet_async(numeric_file, columns=["id"]),
            fastingest.read_parquet_async(numeric_file, filters=[("g", "==", 1)]),
        )

    a, b = asyncio.run(main())
    assert_tables_equal(a, pq.read_table(numeric_file, columns=["id"]))
    assert_tables_equal(b, pq.read_table(numeric_file, filters=[("g", "==", 1)]))

    async def failing():
        await fastingest.read_parquet_async(str(numeric_file) + ".missing")

    with pytest.raises(FileNotFoundError):
        asyncio.run(failing())


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_read_after_fork_in_child(numeric_file):
    fastingest.read_parquet(numeric_file)  # the parent's runtime now exists
    got = read_in_forked_child(
        lambda: str(fastingest.read_parquet(numeric_file, columns=["id"]).num_rows).encode()
    )
    assert got == b"10000"
    assert fastingest.read_parquet(numeric_file).num_rows == 10_000


def test_memory_store_for_unit_use():
    table = numeric_table(100)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    fastingest._fastingest._put("memory:///unit/x.parquet", sink.getvalue().to_pybytes())
    assert_tables_equal(fastingest.read_parquet("memory:///unit/x.parquet"), table)
    assert fastingest.read_parquet("memory:///unit/*.parquet").num_rows == 100


@pytest.mark.parametrize(
    "filters",
    [
        [("id", ">=", 40_000), ("id", "<", 41_000)],
        [[("id", "<", 500)], [("id", ">", 99_500)]],
        [("id", "in", [5, 77_777])],
        [("g", "==", 3)],
    ],
)
def test_page_index_prunes_pages_within_row_groups(tmp_path, filters):
    table = numeric_table(100_000)
    path = tmp_path / "paged.parquet"
    pq.write_table(
        table,
        path,
        row_group_size=50_000,
        write_page_index=True,
        data_page_size=8 * 1024,
        compression="none",
        use_dictionary=False,
    )
    stats = fastingest.ReadStats()
    got = fastingest.read_parquet(path, columns=["id", "x", "name"], filters=filters, stats=stats)
    assert_tables_equal(got, pq.read_table(path, columns=["id", "x", "name"], filters=filters))
    assert stats.unplanned_requests == 0
    full = fastingest.plan_parquet(path, columns=["id", "x", "name"])[0]["bytes_needed"]
    pruned = fastingest.plan_parquet(path, columns=["id", "x", "name"], filters=filters)[0]
    if filters[0][0] == "id" or isinstance(filters[0], list):
        # The id column is sorted: only a few pages of each column are needed.
        assert pruned["bytes_needed"] < full / 5, (pruned["bytes_needed"], full)


def test_allocator_keeps_freed_buffers_unless_told_otherwise():
    import subprocess
    import sys

    code = "import fastingest; print(fastingest._fastingest._allocator_purge_delay())"
    default = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert default.stdout.strip() == "-1", default.stderr
    env = {**os.environ, "MIMALLOC_PURGE_DELAY": "250"}
    told = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert told.stdout.strip() == "250", told.stderr


def test_allocator_skips_huge_pages_but_leaves_them_to_the_rest_of_the_process():
    import subprocess
    import sys

    code = (
        "import fastingest, re\n"
        "found = re.search(r'THP_enabled:\\s*(\\d)', open('/proc/self/status').read())\n"
        "print(fastingest._fastingest._allocator_huge_pages(), found and found.group(1))"
    )

    def run(thp: str | None = None) -> list[str]:
        env = {k: v for k, v in os.environ.items() if k != "MIMALLOC_ALLOW_THP"}
        if thp is not None:
            env["MIMALLOC_ALLOW_THP"] = thp
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        assert out.returncode == 0, out.stderr
        return out.stdout.split()

    # Ours are off; the process's own setting is untouched ("None": the
    # kernel reports none).
    assert run() in (["False", "1"], ["False", "None"])
    # mimalloc's variable still decides when set, both ways (its "0" turns
    # them off for the whole process, as mimalloc documents).
    assert run("1")[0] == "True"
    assert run("0") in (["False", "0"], ["False", "None"])


def test_allocator_prefaults_decoded_output_unless_told_not_to(tmp_path):
    import pyarrow.parquet as pq

    from .datagen import all_types_table

    # Big enough that its columns' buffers pass the 256 KiB mark.
    table = pa.concat_tables([all_types_table(20_000, seed=s) for s in range(8)])
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, row_group_size=40_000)
    code = (
        "import sys, fastingest, pyarrow.parquet as pq\n"
        "t = fastingest.read_parquet(sys.argv[1])\n"
        "print(fastingest._fastingest._allocator_prefaults(), t.equals(pq.read_table(sys.argv[1])))"
    )

    def run(prefault: str | None) -> list[str]:
        env = {k: v for k, v in os.environ.items() if k != "FASTINGEST_PREFAULT"}
        if prefault is not None:
            env["FASTINGEST_PREFAULT"] = prefault
        out = subprocess.run(
            [sys.executable, "-c", code, str(path)], capture_output=True, text=True, env=env
        )
        assert out.returncode == 0, out.stderr
        return out.stdout.split()

    # On by default where the kernel has MADV_POPULATE_WRITE (Linux 5.14+);
    # the table is the same either way.
    release = tuple(int(p) for p in os.uname().release.split(".")[:2] if p.isdigit())
    expected_on = sys.platform == "linux" and release >= (5, 14)
    assert run(None) == [str(expected_on), "True"]
    assert run("0") == ["False", "True"]
    assert run("1") == [str(expected_on), "True"]


# --- streaming ---------------------------------------------------------------


def test_iter_batches_equals_read_parquet(tmp_path):
    from .datagen import all_types_table, parquet_bytes

    paths = []
    for i in range(3):
        p = tmp_path / f"part-{i}.parquet"
        p.write_bytes(parquet_bytes(all_types_table(3000, seed=i), row_group_size=700))
        paths.append(p)
    glob = str(tmp_path / "part-*.parquet")
    want = fastingest.read_parquet(glob, columns=["i64", "str", "struct"])
    stats = fastingest.ReadStats()
    with fastingest.iter_batches(glob, columns=["i64", "str", "struct"], stats=stats) as stream:
        assert stream.schema.equals(want.schema, check_metadata=True)
        batches = list(stream)
    assert len(batches) >= 3 * 5  # at least one batch per row group
    assert pa.Table.from_batches(batches, schema=want.schema).equals(want)
    assert stats.rows == want.num_rows
    # Filters and read_all.
    got = fastingest.iter_batches(glob, filters=[("i64", ">", 0)]).read_all()
    assert got.equals(fastingest.read_parquet(glob, filters=[("i64", ">", 0)]))


def test_iter_batches_errors_and_early_close(tmp_path):
    a = tmp_path / "a.parquet"
    a.write_bytes(b"PAR1" + b"\0" * 100)
    with pytest.raises(fastingest.CorruptFileError, match="a.parquet"):
        fastingest.iter_batches(a)
    b = tmp_path / "b.parquet"
    pq.write_table(pa.table({"x": list(range(100_000))}), b, row_group_size=1000)
    c = tmp_path / "c.parquet"
    pq.write_table(pa.table({"x": ["s"]}), c)
    with pytest.raises(fastingest.SchemaMismatchError, match="c.parquet"):
        fastingest.iter_batches([str(b), str(c)])
    stream = fastingest.iter_batches(b)
    first = next(stream)
    assert first.num_rows == 1000 and first.column(0)[0].as_py() == 0
    stream.close()
    assert list(stream) == []


def _big_row_groups(path: Path, rows: int, row_group_size: int, **write) -> pa.Table:
    """A file whose row groups hold many more rows than a stream's first batch."""
    import numpy as np

    rng = np.random.default_rng(7)
    ints = rng.integers(-(2**40), 2**40, rows)
    table = pa.table(
        {
            "i64": ints,
            "i8": pa.array(rng.integers(-100, 100, rows).astype(np.int8), mask=ints % 5 == 0),
            "f64": rng.random(rows),
            "s": pa.array(rng.integers(0, 500, rows)).cast(pa.string()),
            "l": pa.array([[int(v) % 7] * (int(v) % 3) for v in ints], pa.list_(pa.int32())),
        }
    )
    pq.write_table(table, path, row_group_size=row_group_size, **write)
    return table


def test_iter_batches_hands_over_the_first_rows_before_their_row_group(tmp_path):
    """The stream's first 64 Ki rows come as a batch of their own, decoded
    before the rest of their row group; the stream as a whole still equals
    the read, with filters and columns too."""
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    table = _big_row_groups(a, 300_000, 200_000)
    _big_row_groups(b, 150_000, 150_000)
    both = [str(a), str(b)]
    batches = list(fastingest.iter_batches(both))
    assert batches[0].num_rows == 65_536
    assert batches[0].equals(table.slice(0, 65_536).to_batches()[0])
    # Only the stream's first row group is cut.
    assert [x.num_rows for x in batches[1:]] == [200_000 - 65_536, 100_000, 150_000]
    assert pa.Table.from_batches(batches).equals(fastingest.read_parquet(both))
    for options in (
        {"filters": [("i8", ">", 50)]},
        {"filters": [("f64", "<", 0.3)], "columns": ["s", "l"]},
        {"filters": [("s", "in", ["1", "2", "3"])], "columns": ["i8"]},
        {"read_dictionary": ["s"]},
    ):
        got = fastingest.iter_batches(both, **options)
        assert got.read_all().equals(fastingest.read_parquet(both, **options)), options
    # Rows chosen by the page index are decoded with their selection, in one.
    indexed = tmp_path / "indexed.parquet"
    sorted_table = _big_row_groups(indexed, 300_000, 300_000, write_page_index=True)
    sorted_table = sorted_table.sort_by("i64")
    pq.write_table(sorted_table, indexed, row_group_size=300_000, write_page_index=True)
    low = int(sorted_table["i64"][150_000].as_py())
    kept = list(fastingest.iter_batches(indexed, filters=[("i64", ">=", low)]))
    assert [x.num_rows for x in kept] == [150_000]
    assert pa.Table.from_batches(kept).equals(pq.read_table(indexed, filters=[("i64", ">=", low)]))


def test_a_head_batch_of_every_type_equals_pyarrow(tmp_path):
    """The head is decoded by the `parquet` crate and the rest of its row
    group by fastingest's own decoders: every type comes out the same, under
    one schema, with either codec and page version."""
    table = all_types_table(300_000, seed=1)
    path = tmp_path / "all.parquet"
    for codec, page_version in (("snappy", "2.0"), ("none", "1.0")):
        pq.write_table(
            table,
            path,
            row_group_size=300_000,
            compression=codec,
            data_page_version=page_version,
        )
        batches = list(fastingest.iter_batches(path))
        assert [b.num_rows for b in batches] == [65_536, 300_000 - 65_536]
        want = pq.read_table(path)
        assert all(b.schema.equals(want.schema) for b in batches), codec
        assert pa.Table.from_batches(batches).equals(want), codec


def test_iter_batches_names_the_file_when_its_first_row_group_is_damaged(tmp_path):
    """A damaged first row group fails the stream with the file's name, from
    its head or from the rest of it, and does not hang."""
    good = tmp_path / "good.parquet"
    _big_row_groups(good, 300_000, 300_000, compression="none")
    column = pq.ParquetFile(good).metadata.row_group(0).column(0)
    start = column.dictionary_page_offset or column.data_page_offset
    data = bytearray(good.read_bytes())
    data[start : start + 64] = b"\xff" * 64  # the first page header
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(bytes(data))
    with pytest.raises(fastingest.CorruptFileError, match="bad.parquet"):
        list(fastingest.iter_batches(bad))


def test_every_core_error_variant_maps_to_its_own_exception_class():
    """Each variant of the Rust core's error becomes a specific class of
    fastingest.exceptions (never the bare base class a new, unmapped variant
    would fall back to)."""
    from fastingest import _fastingest, exceptions

    pairs = _fastingest._error_classes()
    variants = [v for v, _ in pairs]
    assert len(variants) == len(set(variants)) >= 11
    for variant, name in pairs:
        assert name != "FastIngestError", f"{variant} has no exception class of its own"
        cls = getattr(exceptions, name)
        assert issubclass(cls, exceptions.FastIngestError), (variant, name)


def test_read_calls_take_exactly_their_options_keywords(numeric_file):
    """The shared keywords are defined once (fastingest.ParquetOptions /
    OrcOptions / StoreOptions); a misspelt or foreign keyword is a TypeError
    naming the call, as Python's own would be."""
    parquet_keys = set(fastingest.ParquetOptions.__annotations__)
    assert parquet_keys == {
        "storage_options",
        "config",
        "stats",
        "cache",
        "partitioning",
        "schema",
        "columns",
        "filters",
        "row_groups",
    }
    assert set(fastingest.OrcOptions.__annotations__) == {
        "storage_options",
        "config",
        "stats",
        "cache",
        "columns",
        "filters",
        "stripes",
        "partitioning",
        "schema",
    }
    source = str(numeric_file)
    with pytest.raises(
        TypeError, match=r"read_parquet\(\) got an unexpected keyword argument 'colums'"
    ):
        fastingest.read_parquet(source, colums=["id"])
    with pytest.raises(TypeError, match=r"iter_batches\(\) .* 'stripes'"):
        fastingest.iter_batches(source, stripes=[0])
    with pytest.raises(TypeError, match=r"read_orc\(\) .* 'row_groups'"):
        fastingest.read_orc(source, row_groups=[0])
    with pytest.raises(TypeError, match=r"read_orc_stripes\(\) .* 'columns'"):
        fastingest.read_orc_stripes(source, columns=["id"])
    with pytest.raises(TypeError, match=r"metadata\(\) .* 'columns'"):
        fastingest.metadata(source, columns=["id"])
    # Every keyword each call documents is accepted.
    stats = fastingest.ReadStats()
    table = fastingest.read_parquet(
        source,
        columns=["id"],
        filters=[("id", ">=", 0)],
        row_groups=[0],
        storage_options=None,
        config=fastingest.Config(),
        stats=stats,
        cache=False,
    )
    assert table.column_names == ["id"] and stats.files == 1
    assert "row_groups" in (fastingest.read_parquet.__doc__ or "")


def test_source_errors_raised_inside_fspath_propagate(numeric_file):
    """A source that is not a path is a TypeError naming its type; anything
    else raised while the source is read (an error inside ``__fspath__``, a
    Ctrl-C landing there) propagates as it is and no read starts with a
    made-up path."""

    class Raises:
        def __init__(self, exc):
            self.exc = exc

        def __fspath__(self):
            raise self.exc

    class PathOf:
        def __fspath__(self):
            return str(numeric_file)

    with pytest.raises(TypeError, match="source must be a path, URL, or a list of them, not int"):
        fastingest.read_parquet(42)
    with pytest.raises(KeyboardInterrupt):
        fastingest.read_parquet(Raises(KeyboardInterrupt()))
    with pytest.raises(ValueError, match="bad mount"):
        fastingest.read_parquet([str(numeric_file), Raises(ValueError("bad mount"))])
    with pytest.raises(KeyboardInterrupt):
        fastingest.metadata(Raises(KeyboardInterrupt()))
    assert fastingest.read_parquet(PathOf()).num_rows == pq.read_metadata(numeric_file).num_rows


def test_a_stream_with_slices_larger_than_its_window_reads(tmp_path):
    """A `slice_size` above the stream's 64 MiB window (here 128 MiB) makes
    each window one slice; it used to panic the read's task."""
    path = tmp_path / "w.parquet"
    table = numeric_table(5000)
    pq.write_table(table, path, row_group_size=1000)
    cfg = fastingest.Config(slice_size="128M", near_slice_size="256M", memory_budget="1G")
    batches = list(fastingest.iter_batches(path, config=cfg))
    assert_tables_equal(pa.Table.from_batches(batches), table)
