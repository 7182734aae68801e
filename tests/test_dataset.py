"""Partitioned datasets: directories and prefixes, hive keys, pruning by
partition filters before any request, schemas across files; pyarrow is the
oracle, locally and on MinIO, fake-gcs-server and Azurite."""

from __future__ import annotations

import datetime
import io
import os
import time
import urllib.parse
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.orc as po
import pyarrow.parquet as pq
import pytest

import fastingest
from fastingest import _parts

from .conftest import assert_tables_equal


def _lake_table() -> pa.Table:
    n = 240
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "x": pa.array([i * 0.5 for i in range(n)], pa.float64()),
            "year": pa.array([2023 + i % 3 if i % 17 else None for i in range(n)], pa.int32()),
            "city": pa.array(
                [["New York", "a/b", "2A001", "Zürich%"][i % 4] for i in range(n)], pa.string()
            ),
            "day": pa.array([f"2025-01-0{1 + i % 2}" for i in range(n)], pa.string()),
        }
    )


@pytest.fixture
def lake(tmp_path) -> Path:
    """A hive lake three keys deep, written by pyarrow (URL-encoded values,
    nulls as __HIVE_DEFAULT_PARTITION__), with the files writers leave
    beside the data."""
    root = tmp_path / "lake"
    ds.write_dataset(
        _lake_table(),
        root,
        format="parquet",
        partitioning=["year", "city", "day"],
        partitioning_flavor="hive",
    )
    (root / "_SUCCESS").write_bytes(b"")
    (root / "_metadata").write_bytes(b"not a data file")
    (root / ".part.crc").write_bytes(b"junk")
    (root / "_temporary").mkdir()
    (root / "_temporary" / "x.parquet").write_bytes(b"junk")
    return root


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.parquet") if "_temporary" not in p.parts)


def test_directory_reads_like_pq_read_table(lake):
    got = fastingest.read_parquet(lake)
    want = pq.read_table(lake)
    assert_tables_equal(got, want)
    # Values and types as pyarrow infers them: int32 and string dictionaries.
    assert got.schema.field("year").type == pa.dictionary(pa.int32(), pa.int32())
    assert got.schema.field("city").type == pa.dictionary(pa.int32(), pa.string())
    assert set(got.column("city").to_pylist()) == {"New York", "a/b", "2A001", "Zürich%"}
    # (pyarrow's null is a null dictionary value, ours a null index: the
    # same rows are null.)
    assert (
        got.column("year").to_pylist().count(None)
        == want.column("year").to_pylist().count(None)
        > 0
    )
    # The same as a file:// URL, as a stream, and with a trailing slash.
    assert_tables_equal(fastingest.read_parquet(lake.as_uri() + "/"), want)
    streamed = pa.Table.from_batches(list(fastingest.iter_batches(str(lake))))
    assert_tables_equal(streamed, want)


@pytest.mark.parametrize(
    "filters",
    [
        [("year", "=", 2024)],
        [("year", "in", [2023, 2025]), ("city", "!=", "a/b")],
        [("city", "=", "New York"), ("x", ">", 30.0)],
        [[("year", "=", 2024), ("x", "<", 10.0)], [("day", "=", "2025-01-02")]],
        [("year", ">=", 2099)],
    ],
)
def test_partition_filters_prune_files_before_any_request(lake, filters):
    stats = fastingest.ReadStats()
    got = fastingest.read_parquet(lake, filters=filters, stats=stats)
    want = pq.read_table(lake, filters=filters)
    assert_tables_equal(got, want)
    # Only files whose keys may match are opened (one footer request each),
    # and the first file, whose footer gives the schema (as in pyarrow).
    conjs = [[t for t in conj if t[0] != "x"] for conj in _dnf(filters)]
    files = _files(lake)
    matching = [f for f in files if _keys_may_match(_keys(lake, f), conjs)]
    assert stats.files == len(set(matching) | {files[0]}) < len(files)
    if not matching:
        assert got.num_rows == 0


def _dnf(filters):
    return filters if isinstance(filters[0], list) else [filters]


def _keys(root: Path, f: Path) -> dict:
    """A file's hive keys, decoded as pyarrow does (ints where they parse)."""
    out = {}
    for part in f.relative_to(root).parts[:-1]:
        k, v = part.split("=", 1)
        v = urllib.parse.unquote(v)
        out[k] = None if v == "__HIVE_DEFAULT_PARTITION__" else int(v) if v.isdigit() else v
    return out


def _keys_may_match(keys: dict, conjs) -> bool:
    ops = {
        "=": lambda a, b: a == b,
        "!=": lambda a, b: a != b,
        "<": lambda a, b: a < b,
        ">=": lambda a, b: a >= b,
        "in": lambda a, b: a in b,
    }
    return any(
        all(keys.get(c) is not None and ops[op](keys[c], v) for c, op, v in conj) for conj in conjs
    )


def test_partition_only_columns_read_footers_only(lake):
    stats = fastingest.ReadStats()
    got = fastingest.read_parquet(lake, columns=["city", "year"], stats=stats)
    want = pq.read_table(lake, columns=["city", "year"])
    assert_tables_equal(got, want)
    snap = stats.to_dict()
    # One footer request per file, and one for the lake's `_metadata`, which
    # turns out not to be a summary.
    assert snap["files"] == snap["requests"] - 1 == len(_files(lake))
    assert snap["bytes_needed"] == 0


def test_partitioning_none_hive_for_globs_and_given_types(lake):
    plain = fastingest.read_parquet(lake, partitioning=None)
    assert plain.column_names == ["id", "x"]
    # A glob has no partition columns unless asked.
    glob = str(lake / "year=*" / "**" / "*.parquet")
    assert fastingest.read_parquet(glob).column_names == ["id", "x"]
    keyed = fastingest.read_parquet(glob, partitioning="hive")
    assert keyed.column_names == ["id", "x", "year", "city", "day"]
    typed = fastingest.read_parquet(
        lake,
        partitioning={"year": pa.int16(), "day": pa.date32()},
        filters=[("day", "=", datetime.date(2025, 1, 2))],
    )
    assert typed.schema.field("year").type == pa.int16()
    assert typed.schema.field("day").type == pa.date32()
    assert typed.schema.field("city").type == pa.dictionary(pa.int32(), pa.string())
    want = pq.read_table(lake, filters=[("day", "=", "2025-01-02")])
    assert sorted(typed.column("id").to_pylist()) == sorted(want.column("id").to_pylist())
    as_schema = fastingest.read_parquet(lake, partitioning=pa.schema([("year", pa.int64())]))
    assert as_schema.schema.field("year").type == pa.int64()
    with pytest.raises(fastingest.InvalidArgumentError, match=r'"city".*not a'):
        fastingest.read_parquet(lake, partitioning={"city": pa.int32()})
    with pytest.raises(fastingest.InvalidArgumentError, match="partitioning must be"):
        fastingest.read_parquet(lake, partitioning="directory")


def test_files_missing_columns_conflicts_and_given_schema(tmp_path):
    root = tmp_path / "t"
    (root / "k=1").mkdir(parents=True)
    (root / "k=2").mkdir()
    pq.write_table(pa.table({"a": [1, 2], "b": ["x", "y"]}), root / "k=1" / "p.parquet")
    pq.write_table(pa.table({"a": [3], "c": [True]}), root / "k=2" / "p.parquet")
    got = fastingest.read_parquet(root)
    unified = pa.unify_schemas(
        [pq.read_schema(root / "k=1" / "p.parquet"), pq.read_schema(root / "k=2" / "p.parquet")]
    )
    want = ds.dataset(root, partitioning="hive", schema=unified.append(pa.field("k", pa.int32())))
    assert got.column_names == ["a", "b", "c", "k"]
    assert (
        got.select(["a", "b", "c"]).to_pylist()
        == want.to_table().select(["a", "b", "c"]).to_pylist()
    )
    assert got.column("k").to_pylist() == [1, 1, 2]
    # Columns and filters over a column only some files have.
    sel = fastingest.read_parquet(root, columns=["c", "a"], filters=[("b", "=", "y")])
    assert sel.to_pylist() == [{"c": None, "a": 2}]
    with pytest.raises(fastingest.ColumnNotFoundError, match="nope"):
        fastingest.read_parquet(root, columns=["nope"])
    with pytest.raises(fastingest.ColumnNotFoundError, match="nope"):
        fastingest.read_parquet(root, filters=[("nope", "=", 1)])
    # schema= casts, fills and leaves out.
    schema = pa.schema([("a", pa.float64()), ("c", pa.bool_()), ("k", pa.string())])
    given = fastingest.read_parquet(root, schema=schema)
    assert given.schema == schema
    assert given.to_pylist() == [
        {"a": 1.0, "c": None, "k": "1"},
        {"a": 2.0, "c": None, "k": "1"},
        {"a": 3.0, "c": True, "k": "2"},
    ]
    # One column, two types: an error naming both files.
    pq.write_table(pa.table({"a": ["text"]}), root / "k=2" / "q.parquet")
    with pytest.raises(fastingest.SchemaMismatchError) as e:
        fastingest.read_parquet(root)
    assert "k=1" in str(e.value) and "q.parquet" in str(e.value)


def test_directory_errors(tmp_path):
    empty = tmp_path / "empty"
    (empty / "_temporary").mkdir(parents=True)
    (empty / "_SUCCESS").write_bytes(b"")
    with pytest.raises(fastingest.NotFoundError, match="no data files"):
        fastingest.read_parquet(empty)
    bad = tmp_path / "bad" / "k=1"
    bad.mkdir(parents=True)
    (bad / "x.parquet").write_bytes(b"not parquet at all, but long enough to have a tail")
    with pytest.raises(fastingest.CorruptFileError, match="x.parquet"):
        fastingest.read_parquet(bad.parent)


def _typo_lakes(tmp_path) -> dict[str, Path]:
    """Parquet and ORC directories of two partitions each (the second file
    has a column the first lacks), and a Parquet directory of one file."""
    roots = {}
    for fmt, write in (("parquet", pq.write_table), ("orc", po.write_table)):
        root = tmp_path / fmt
        for k, table in ((1, pa.table({"a": [1, 2], "b": ["x", "y"]})), (2, pa.table({"c": [3]}))):
            (root / f"k={k}").mkdir(parents=True)
            write(table, root / f"k={k}" / f"p.{fmt}")
        roots[fmt] = root
    one = tmp_path / "one" / "k=1"
    one.mkdir(parents=True)
    pq.write_table(pa.table({"a": [1], "b": ["x"]}), one / "p.parquet")
    roots["one"] = one.parent
    return roots


def test_a_column_no_file_holds_is_an_error_listing_every_column(tmp_path):
    # Each file of a directory is planned with the columns it holds, so a
    # typo was found, if at all, against the columns asked: a directory of
    # ORC files returned no column for it, and plans and chunks planned
    # nothing; the errors listed the columns found of those asked.
    lakes = _typo_lakes(tmp_path)
    every = 'no column named "zz"; available columns: a, b, c, k$'
    calls = {
        "read_parquet": lambda **o: fastingest.read_parquet(lakes["parquet"], **o),
        "iter_batches": lambda **o: list(fastingest.iter_batches(lakes["parquet"], **o)),
        "plan_parquet": lambda **o: fastingest.plan_parquet(lakes["parquet"], **o),
        "read_chunks": lambda **o: fastingest.read_chunks(lakes["parquet"], **o),
        "read_orc": lambda **o: fastingest.read_orc(lakes["orc"], **o),
        "iter_orc_batches": lambda **o: list(fastingest.iter_orc_batches(lakes["orc"], **o)),
        "plan_orc": lambda **o: fastingest.plan_orc(lakes["orc"], **o),
    }
    for name, call in calls.items():
        for options in (
            {"columns": ["zz"]},
            {"columns": ["k", "a", "zz"]},
            {"columns": ["a"], "filters": [("zz", "=", 1)]},
        ):
            with pytest.raises(fastingest.ColumnNotFoundError, match=every):
                call(**options)
                pytest.fail(f"{name}({options}) raised nothing")
    with pytest.raises(fastingest.ColumnNotFoundError, match=every):
        fastingest.read_orc_stripes(lakes["orc"], filters=[("zz", "=", 1)])
    # A directory of one file lists its partition keys too.
    with pytest.raises(fastingest.ColumnNotFoundError, match="available columns: a, b, k$"):
        fastingest.read_parquet(lakes["one"], columns=["zz"])
    # What every file or key holds is still read, a column some lack null.
    got = fastingest.read_orc(lakes["orc"], columns=["k", "c", "a"])
    assert got.column_names == ["a", "c", "k"]  # the files' order, as pyarrow's ORC reader
    assert got.to_pydict() == {"a": [1, 2, None], "c": [None, None, 3], "k": [1, 1, 2]}
    got = fastingest.read_parquet(lakes["one"], columns=["k", "a"], filters=[("k", "=", 1)])
    assert got.to_pydict() == {"k": [1], "a": [1]}
    plans = fastingest.plan_parquet(lakes["parquet"], columns=["c"])
    assert [p["bytes_needed"] > 0 for p in plans] == [False, True]


def test_plan_chunks_metadata_and_orc_on_directories(lake, tmp_path):
    plans = fastingest.plan_parquet(lake, filters=[("year", "=", 2024)])
    # The first file is planned too, with no row groups: its footer gives
    # the read's schema.
    first, *matching = plans
    assert "year=2024" not in first["location"] and first["row_groups"] == []
    assert len(matching) == len([f for f in _files(lake) if "year=2024" in str(f)])
    assert all("year=2024" in p["location"] and p["row_groups"] for p in matching)
    chunks = fastingest.read_chunks(lake, columns=["id", "year"], filters=[("year", "=", 2025)])
    assert [c.column for c in chunks] == ["id"] * len(chunks) and len(chunks) > 0
    assert all("year=2025" in chunks.sources[c.file] for c in chunks)
    metas = fastingest.metadata(lake)
    assert len(metas) == len(_files(lake))
    # ORC in a hive layout.
    orc_root = tmp_path / "orc"
    t = _lake_table()
    for year in (2023, 2024):
        part = orc_root / f"year={year}"
        part.mkdir(parents=True)
        rows = t.filter(pa.compute.equal(t["year"], year)).drop_columns(["year"])
        po.write_table(rows, part / "p.orc")
    got = fastingest.read_orc(orc_root, filters=[("year", "=", 2024)])
    want = t.filter(pa.compute.equal(t["year"], 2024))
    assert got.column("id").to_pylist() == want.column("id").to_pylist()
    assert got.column("year").to_pylist() == [2024] * want.num_rows


def _parquet_bytes(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def _upload_lake(lake: Path, put) -> list[str]:
    keys = []
    for f in sorted(lake.rglob("*")):
        if f.is_file():
            key = f.relative_to(lake).as_posix()
            put(key, f.read_bytes())
            keys.append(key)
    return keys


def test_s3_prefix_reads_the_lake_with_pruning(s3, lake):
    _upload_lake(lake, lambda k, b: s3.put(f"lake/{k}", b))
    want = pq.read_table(lake)
    opts = s3.options()
    for spelling in ("lake/", "lake"):
        stats = fastingest.ReadStats()
        got = fastingest.read_parquet(s3.url(spelling), storage_options=opts, stats=stats)
        assert_tables_equal(got, want)
    # Pruned files get no request: one footer per file read (the listing is
    # one more, counted apart from range requests).
    stats = fastingest.ReadStats()
    got = fastingest.read_parquet(
        s3.url("lake/"), storage_options=opts, stats=stats, filters=[("year", "=", 2024)]
    )
    assert_tables_equal(got, pq.read_table(lake, filters=[("year", "=", 2024)]))
    files = _files(lake)
    wanted_files = len({f for f in files if "year=2024" in str(f)} | {files[0]})
    assert stats.files == wanted_files
    assert stats.requests <= 2 * wanted_files
    with pytest.raises(FileNotFoundError):
        fastingest.read_parquet(s3.url("nolake"), storage_options=opts)
    with pytest.raises(fastingest.NotFoundError, match="no data objects"):
        fastingest.read_parquet(s3.url("nolake/"), storage_options=opts)


def test_s3_prefix_listing_cached_when_immutable(s3, lake, tmp_path):
    _upload_lake(lake, lambda k, b: s3.put(f"lake/{k}", b))
    cache = fastingest.Cache(tmp_path / "cache", validate="immutable")
    opts = s3.options()
    first = fastingest.read_parquet(s3.url("lake/"), storage_options=opts, cache=cache)
    # A new object appears; the immutable cache keeps serving the listing.
    s3.put(
        "lake/year=2030/city=x/day=y/late.parquet",
        _parquet_bytes(pa.table({"id": [1], "x": [1.0]})),
    )
    stats = fastingest.ReadStats()
    again = fastingest.read_parquet(s3.url("lake/"), storage_options=opts, cache=cache, stats=stats)
    assert_tables_equal(again, first)
    assert stats.requests == 0


def test_gcs_and_azure_prefixes(gcs, azure, lake):
    want = pq.read_table(lake, filters=[("city", "=", "a/b")])
    _upload_lake(lake, lambda k, b: gcs.gcs_upload("test-bucket", f"lake/{k}", b))
    gopts = {"service_account_path": str(gcs.gcs_service_account()), "allow_http": "true"}
    got = fastingest.read_parquet(
        "gs://test-bucket/lake/", storage_options=gopts, filters=[("city", "=", "a/b")]
    )
    assert_tables_equal(got, want)
    azure.azure_create_container("lake")
    aopts = azure.azure_options()
    # `_put` takes a URL, whose path is percent-decoded: escape the key's `%`.
    _upload_lake(
        lake,
        lambda k, b: fastingest._fastingest._put(f"az://lake/t/{k.replace('%', '%25')}", b, aopts),
    )
    got = fastingest.read_parquet(
        "az://lake/t", storage_options=aopts, filters=[("city", "=", "a/b")]
    )
    assert_tables_equal(got, want)


# --- `_metadata` summary files -------------------------------------------------------


def _summary_table() -> pa.Table:
    """Ids in ranges per partition (`part` = id // 60), several row groups
    per file: statistics in the summary rule files out."""
    n = 240
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "name": pa.array([f"n{i % 7}" for i in range(n)], pa.string()),
            "part": pa.array([i // 60 for i in range(n)], pa.int32()),
        }
    )


def _summarised_lake(root: Path) -> list[Path]:
    """A hive lake with the `_metadata` summary pyarrow writes beside it (as
    Dask and Spark lay theirs out); the data files, in name order."""
    collected: list = []
    table = _summary_table()
    pq.write_to_dataset(
        table,
        root,
        partition_cols=["part"],
        metadata_collector=collected,
        row_group_size=20,
    )
    pq.write_metadata(table.drop_columns(["part"]).schema, root / "_metadata", collected)
    return sorted(root.rglob("*.parquet"))


def _break_footer_keep_mtime(f: Path) -> None:
    """Makes the file's own footer unreadable (its length runs past the
    file's start) without changing its size or modification time."""
    st = f.stat()
    data = bytearray(f.read_bytes())
    data[-8:-4] = (0x7FFFFFFF).to_bytes(4, "little")
    f.write_bytes(bytes(data))
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_summary_plans_every_file_without_its_footer(tmp_path):
    root = tmp_path / "lake"
    files = _summarised_lake(root)
    assert len(files) == 4
    want = pq.read_table(root)
    filters = [("id", "<", 75), ("name", "!=", "n3")]
    want_filtered = pq.read_table(root, filters=filters)
    for f in files:
        _break_footer_keep_mtime(f)
    # Read directly, a file's footer is now corrupt; through its directory,
    # the summary describes it and its footer is never read.
    with pytest.raises(fastingest.CorruptFileError, match="footer length"):
        fastingest.read_parquet(files[0])
    stats = fastingest.ReadStats()
    assert_tables_equal(fastingest.read_parquet(root, stats=stats), want)
    assert stats.files == 4
    assert_tables_equal(fastingest.read_parquet(root, filters=filters), want_filtered)
    streamed = pa.Table.from_batches(list(fastingest.iter_batches(root, filters=filters)))
    assert_tables_equal(streamed, want_filtered)
    # The summary's statistics leave the row groups of ids below 75: all
    # three of the first file, one of the second.
    plans = fastingest.plan_parquet(root, filters=[("id", "<", 75)])
    assert [len(p["row_groups"]) for p in plans] == [3, 1, 0, 0]
    chunks = fastingest.read_chunks(root, columns=["id"], filters=[("id", ">=", 180)])
    assert [chunks.sources[c.file] for c in chunks] == [str(files[3])] * 3
    metas = fastingest.metadata(root, format="parquet")
    assert [m["num_rows"] for m in metas] == [60] * 4
    assert [m["num_row_groups"] for m in metas] == [3] * 4
    # The Ray and Dask drivers plan from it too (their tasks then read the
    # footers of their own files).
    planned = _parts.plan("read_parquet", "parquet", root, {}, lambda c: c)
    assert [u[2] for u in planned.units] == [20] * 12
    # Partition keys alone: the row counts come from the summary; the files
    # see no request at all.
    stats = fastingest.ReadStats()
    only_keys = fastingest.read_parquet(root, columns=["part"], stats=stats)
    assert only_keys.column("part").to_pylist() == want.column("part").to_pylist()
    assert stats.requests == 1 and stats.bytes_needed == 0


def test_summary_is_not_trusted_where_it_may_be_stale(tmp_path, caplog):
    root = tmp_path / "lake"
    files = _summarised_lake(root)
    summary_written = (root / "_metadata").stat().st_mtime_ns
    # Rewritten after the summary: other rows, another layout.
    pq.write_table(
        pa.table({"id": pa.array([1000, 1001], pa.int64()), "name": ["a", "b"]}), files[1]
    )
    os.utime(files[1], ns=(summary_written + 10**9, summary_written + 10**9))
    # A file the summary does not name (older than it).
    extra = root / "part=9" / "late.parquet"
    extra.parent.mkdir()
    pq.write_table(pa.table({"id": pa.array([5000], pa.int64()), "name": ["z"]}), extra)
    os.utime(extra, ns=(summary_written - 10**9, summary_written - 10**9))
    # A file the summary names but which is gone.
    files[2].unlink()
    caplog.set_level("INFO", logger="fastingest.summary")
    got = fastingest.read_parquet(root)
    assert_tables_equal(got, pq.read_table(root))
    assert sorted(got.column("id").to_pylist())[-3:] == [1000, 1001, 5000]
    said = [r.getMessage() for r in caplog.records if r.name == "fastingest.summary"]
    assert any("written after" in m and str(files[1]) in m for m in said)
    # Chunks that do not fit the file (its mtime kept older than the
    # summary's): the file's own footer is read instead.
    pq.write_table(pa.table({"id": pa.array([7], pa.int64()), "name": ["q"]}), files[0])
    os.utime(files[0], ns=(summary_written - 10**9, summary_written - 10**9))
    caplog.clear()
    got = fastingest.read_parquet(root)
    assert_tables_equal(got, pq.read_table(root))
    said = [r.getMessage() for r in caplog.records if r.name == "fastingest.summary"]
    assert any("does not fit" in m and str(files[0]) in m for m in said)


def test_a_damaged_summary_is_ignored_with_a_warning(lake, caplog):
    # The lake fixture's `_metadata` is not Parquet at all.
    got = fastingest.read_parquet(lake)
    assert_tables_equal(got, pq.read_table(lake))
    said = [r for r in caplog.records if r.name == "fastingest.summary"]
    assert said and said[0].levelname == "WARNING"
    assert "not used" in said[0].getMessage() and "_metadata" in said[0].getMessage()


def test_s3_summary_saves_the_footer_requests(s3, tmp_path):
    root = tmp_path / "lake"
    _summarised_lake(root)
    summary = (root / "_metadata").read_bytes()
    # Uploaded as the writers do: the data, then the summary.
    _upload_lake(root, lambda k, b: s3.put(f"summarised/{k}", b) if k != "_metadata" else None)
    s3.put("summarised/_metadata", summary)
    _upload_lake(root, lambda k, b: s3.put(f"plain/{k}", b) if k != "_metadata" else None)
    # Copied in name order: the summary first, older than the data.
    s3.put("copied/_metadata", summary)
    time.sleep(0.05)
    _upload_lake(root, lambda k, b: s3.put(f"copied/{k}", b) if k != "_metadata" else None)
    opts = s3.options()

    def read(prefix, **kw):
        stats = fastingest.ReadStats()
        table = fastingest.read_parquet(s3.url(prefix), storage_options=opts, stats=stats, **kw)
        return table, stats

    with_summary, s1 = read("summarised/")
    assert_tables_equal(with_summary, pq.read_table(root))
    # These files are small: one request brings each whole, footer and
    # data, so the summary is not read (it would only add a round trip).
    assert s1.requests == 1 + 4
    # Taken as large files, they are planned from the summary. Ids below 30
    # lie in one file: the summary's statistics rule the other three out,
    # so they get no request (without it, each footer is read). Each read
    # also lists the prefix (one request).
    large = fastingest.Config(small_file=0)
    ids = [("id", "<", 30)]
    filtered, s1 = read("summarised/", filters=ids, config=large)
    plain, s2 = read("plain/", filters=ids, config=large)
    assert_tables_equal(filtered, plain)
    assert filtered.num_rows == 30
    assert (s1.requests, s2.requests) == (1 + 1 + 1, 1 + 4)
    # Row counts only (small files or not): the listing and the summary.
    _, s1 = read("summarised/", columns=["part"])
    _, s2 = read("plain/", columns=["part"])
    assert (s1.requests, s2.requests) == (1 + 1, 1 + 4)
    # A summary older than the files is not used, unless the config says so.
    _, s3_ = read("copied/", filters=ids, config=large)
    trust = fastingest.Config(small_file=0, summary_files="trust")
    trusted, s4 = read("copied/", filters=ids, config=trust)
    ignore = fastingest.Config(small_file=0, summary_files="ignore")
    _, s5 = read("summarised/", filters=ids, config=ignore)
    assert_tables_equal(trusted, plain)
    assert (s3_.requests, s4.requests, s5.requests) == (1 + 1 + 4, 1 + 1 + 1, 1 + 4)


def test_gcs_and_azure_summaries(gcs, azure, tmp_path):
    root = tmp_path / "lake"
    _summarised_lake(root)
    want = pq.read_table(root)
    gopts = {"service_account_path": str(gcs.gcs_service_account()), "allow_http": "true"}
    azure.azure_create_container("summarised")
    aopts = azure.azure_options()
    stores = [
        ("gs://test-bucket/summarised/", gopts, lambda k, b: gcs.gcs_upload("test-bucket", k, b)),
        ("az://summarised/t/", aopts, lambda k, b: fastingest._fastingest._put(k, b, aopts)),
    ]
    for prefix, opts, put in stores:
        base = "summarised/" if prefix.startswith("gs") else "az://summarised/t/"
        # The data, then the summary, as writers do.
        for f in sorted(root.rglob("*.parquet")):
            put(base + f.relative_to(root).as_posix(), f.read_bytes())
        put(base + "_metadata", (root / "_metadata").read_bytes())
        assert_tables_equal(fastingest.read_parquet(prefix, storage_options=opts), want)
        # Row counts only: the listing and the summary, no data file.
        stats = fastingest.ReadStats()
        keys = fastingest.read_parquet(prefix, storage_options=opts, columns=["part"], stats=stats)
        assert keys.column("part").to_pylist() == want.column("part").to_pylist()
        assert stats.requests == 2, (prefix, stats)


def test_the_schema_and_filters_do_not_hang_on_which_partitions_match(tmp_path):
    # The first file has `s`; the other lacks it. Whatever the filter leaves,
    # the table has `s` (null where a file lacks it), as pyarrow's has, and a
    # term on `s` is decided as on a null (`not in` holds), not refused.
    root = tmp_path / "lake"
    (root / "k=a").mkdir(parents=True)
    (root / "k=b").mkdir()
    pq.write_table(pa.table({"id": [1, 2], "s": ["p", None]}), root / "k=a" / "p.parquet")
    pq.write_table(pa.table({"id": [3, 4]}), root / "k=b" / "p.parquet")
    for filters, ids in [
        ([("k", "==", "b")], [3, 4]),
        ([("k", "==", "b"), ("s", "not in", ["p"])], [3, 4]),
        ([("k", "==", "b"), ("s", "==", "p")], []),
        ([("s", "not in", ["p"])], [2, 3, 4]),
    ]:
        got = fastingest.read_parquet(root, filters=filters)
        want = pq.read_table(root, filters=filters)
        assert got.column_names == want.column_names == ["id", "s", "k"], filters
        assert got["id"].to_pylist() == want["id"].to_pylist() == ids, filters
        assert got["s"].to_pylist() == want["s"].to_pylist(), filters
    # pyarrow refuses a set of only None ("string vs null"); it holds for nulls.
    only_null = [("k", "==", "b"), ("s", "in", [None])]
    assert fastingest.read_parquet(root, filters=only_null)["id"].to_pylist() == [3, 4]
