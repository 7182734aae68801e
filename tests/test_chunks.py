"""Raw column chunks (read_chunks, ChunkSet.to_parquet_bytes), the staged
upload pipeline through its host-memory target (device="cpu", DLPack), and
decoded columns for Torch. The CUDA variants are in test_gpu.py."""

from __future__ import annotations

import ctypes

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import fastingest
from fastingest._torch import host_columns

from .conftest import assert_tables_equal, need_torch
from .datagen import all_types_table, numeric_table, parquet_bytes
from .test_corpus import KNOWN_UNSUPPORTED, corpus_files


def _write(tmp_path, table, name="t.parquet", **kwargs):
    path = tmp_path / name
    path.write_bytes(parquet_bytes(table, **kwargs))
    return path


def _assert_chunks_are_file_bytes(chunks, raw: bytes):
    for c in chunks:
        assert len(memoryview(c)) == c.length == len(c)
        assert bytes(memoryview(c)) == raw[c.file_offset : c.file_offset + c.length], (
            f"chunk {c.column} of row group {c.row_group} differs from the file"
        )


def _expected(path, columns, row_groups):
    """pyarrow's read of those columns and row groups, in file column order."""
    f = pq.ParquetFile(path)
    t = f.read_row_groups(row_groups or list(range(f.num_row_groups)), columns=columns)
    order = f.schema_arrow.names
    return t.select(sorted(t.column_names, key=order.index))


@pytest.mark.parametrize("compression", ["snappy", "zstd", "none"])
def test_chunks_are_the_files_bytes_with_their_metadata(tmp_path, compression):
    table = all_types_table(2000)
    path = _write(tmp_path, table, row_group_size=700, compression=compression)
    chunks = fastingest.read_chunks(path)
    meta = pq.ParquetFile(path).metadata
    assert len(chunks) == meta.num_row_groups * meta.num_columns
    _assert_chunks_are_file_bytes(chunks, path.read_bytes())
    by_key = {(c.row_group, c.leaf): c for c in chunks}
    for rg in range(meta.num_row_groups):
        for leaf in range(meta.num_columns):
            want = meta.row_group(rg).column(leaf)
            got = by_key[(rg, leaf)]
            assert got.column == want.path_in_schema
            assert got.num_values == want.num_values
            assert got.length == want.total_compressed_size
            assert got.physical_type == want.physical_type
            assert got.codec == want.compression.upper().replace("NONE", "UNCOMPRESSED")
            assert got.source == str(path)
    assert chunks.nbytes == sum(c.length for c in chunks)
    assert chunks.sources == [str(path)]
    assert chunks[-1].leaf == chunks[len(chunks) - 1].leaf
    with pytest.raises(IndexError):
        chunks[len(chunks)]
    # Strings carry their logical type.
    assert any(c.column == "str" and "String" in (c.logical_type or "") for c in chunks)


@pytest.mark.parametrize(
    "columns,row_groups",
    [
        (None, None),
        (["i64", "str"], [1]),
        (["struct.y", "f64"], [0, 2]),
        (["list_list", "map", "nested_struct"], None),
        (["dict", "ts_us_tz", "dec_big"], [2, 0]),
    ],
)
def test_to_parquet_bytes_reads_back_like_the_original(tmp_path, columns, row_groups):
    table = all_types_table(1500, seed=3)
    path = _write(tmp_path, table, row_group_size=500)
    chunks = fastingest.read_chunks(path, columns=columns, row_groups=row_groups)
    packed = chunks.to_parquet_bytes()
    assert len(packed) < path.stat().st_size or columns is None
    got = pq.read_table(pa.BufferReader(packed))
    want = _expected(path, columns, row_groups)
    assert_tables_equal(got, want)
    # The rewritten footer points at the packed chunks.
    f = pq.ParquetFile(pa.BufferReader(packed))
    assert f.metadata.num_row_groups == len(row_groups or [0, 1, 2])


def test_filters_prune_row_groups_but_chunks_stay_whole(tmp_path):
    table = numeric_table(30_000)
    path = _write(tmp_path, table, row_group_size=10_000)
    chunks = fastingest.read_chunks(path, columns=["x"], filters=[("id", ">=", 25_000)])
    assert {c.row_group for c in chunks} == {2}
    assert [c.column for c in chunks] == ["x"]  # the filter's column is not returned
    _assert_chunks_are_file_bytes(chunks, path.read_bytes())
    got = pq.read_table(pa.BufferReader(chunks.to_parquet_bytes()))
    assert got.num_rows == 10_000  # whole row group: the filter is for the consumer to apply


def test_several_files_pack_into_one(tmp_path):
    a = _write(tmp_path, numeric_table(3000, seed=1), "a.parquet", row_group_size=1000)
    b = _write(tmp_path, numeric_table(2000, seed=2), "b.parquet", row_group_size=1000)
    chunks = fastingest.read_chunks([str(a), str(b)], columns=["id", "name"])
    assert chunks.sources == [str(a), str(b)]
    assert {c.file for c in chunks} == {0, 1}
    got = pq.read_table(pa.BufferReader(chunks.to_parquet_bytes()))
    want = pa.concat_tables([pq.read_table(p, columns=["id", "name"]) for p in (a, b)])
    assert got.equals(want)
    assert len(chunks.footers) == 2
    assert chunks.footers[1] is chunks.footers[1]  # encoded once, not per access
    for footer, path in zip(chunks.footers, (a, b), strict=True):
        raw = path.read_bytes()
        n = int.from_bytes(raw[-8:-4], "little")
        # Re-encoded with the original offsets: same row groups and chunks.
        rebuilt = raw[: -8 - n] + footer + len(footer).to_bytes(4, "little") + b"PAR1"
        assert pq.read_table(pa.BufferReader(rebuilt)).equals(pq.read_table(path))


def test_different_schemas_do_not_pack(tmp_path):
    a = _write(tmp_path, pa.table({"x": [1, 2]}), "a.parquet")
    b = _write(tmp_path, pa.table({"x": ["p", "q"]}), "b.parquet")
    chunks = fastingest.read_chunks([str(a), str(b)])
    with pytest.raises(fastingest.SchemaMismatchError, match="b.parquet"):
        chunks.to_parquet_bytes()


def test_chunk_errors_name_the_file(tmp_path):
    path = _write(tmp_path, numeric_table(100))
    with pytest.raises(fastingest.ColumnNotFoundError, match="nope"):
        fastingest.read_chunks(path, columns=["nope"])
    with pytest.raises(fastingest.InvalidArgumentError, match="row group 5"):
        fastingest.read_chunks(path, row_groups=[5])
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(path.read_bytes()[:-20] + b"\0" * 12 + b"PAR1")
    with pytest.raises(fastingest.CorruptFileError, match="bad.parquet"):
        fastingest.read_chunks(bad)
    chunk = fastingest.read_chunks(path)[0]
    assert memoryview(chunk).readonly
    with pytest.raises((BufferError, TypeError), match="writable|read-only"):
        ctypes.c_char.from_buffer(chunk)  # asks for a writable buffer


def test_chunks_through_minio_equal_local(tmp_path, s3):
    table = all_types_table(3000, seed=5)
    data = parquet_bytes(table, row_group_size=1000)
    url = s3.put("c/t.parquet", data)
    stats = fastingest.ReadStats()
    chunks = fastingest.read_chunks(
        url,
        columns=["i64", "str", "map"],
        row_groups=[0, 2],
        storage_options=s3.options(),
        stats=stats,
    )
    _assert_chunks_are_file_bytes(chunks, data)
    needed = sum(c.length for c in chunks)
    assert stats.bytes_needed == needed
    assert stats.bytes_fetched <= needed + 2 * 1024 * 1024  # footer prefetch + merged holes


# Files whose footer arrow-rs reads but cannot write back, with the reason.
KNOWN_UNPACKABLE = {
    "unknown-logical-type.parquet": "a logical type from a future format version",
}


def test_corpus_files_pack_and_read_back(corpora):
    checked = 0
    unpackable = set()
    for path in corpus_files(corpora):
        rel = str(path.relative_to(corpora / "parquet-testing"))
        if rel in KNOWN_UNSUPPORTED or "bad_data" in rel or path.suffix != ".parquet":
            continue
        try:
            want = pq.read_table(path)
        except Exception:  # noqa: BLE001 - files pyarrow cannot read are out of scope
            continue
        try:
            chunks = fastingest.read_chunks(path)
        except (fastingest.UnsupportedError, fastingest.CorruptFileError):
            continue  # read_parquet's conformance test covers these verdicts
        _assert_chunks_are_file_bytes(chunks, path.read_bytes())
        if want.num_columns == 0 or len(chunks) == 0:
            continue
        try:
            packed = chunks.to_parquet_bytes()
        except fastingest.UnsupportedError as e:
            assert path.name in str(e)
            unpackable.add(path.name)
            continue
        got = pq.read_table(pa.BufferReader(packed))
        # The packed footer keeps every key-value pair; pyarrow shows some
        # writers' pairs (e.g. parquet-avro's) for one file and not the other.
        assert_tables_equal(got.replace_schema_metadata(None), want.replace_schema_metadata(None))
        checked += 1
    assert unpackable <= set(KNOWN_UNPACKABLE), unpackable
    assert checked >= 40, f"only {checked} corpus files were packed"


# --- the upload pipeline through its host target -------------------------


def test_to_device_cpu_is_dlpack_exportable(tmp_path):
    path = _write(tmp_path, all_types_table(3000), row_group_size=1000)
    chunks = fastingest.read_chunks(path)
    dev = chunks.to_device("cpu", staging_size=4096, staging_buffers=2, streams=3)
    assert len(dev) == len(chunks) and dev.device == "cpu"
    assert dev.nbytes == chunks.nbytes
    report = dev.upload_report
    assert report["bytes"] == chunks.nbytes
    assert report["staging_allocated"] <= 2
    assert report["copies"] >= sum(-(-c.length // 4096) for c in chunks)
    for host, d in zip(chunks, dev, strict=True):
        assert d.__dlpack_device__() == (1, 0)
        assert d.ptr % 256 == 0 and d.size == host.length
        assert np.from_dlpack(d).tobytes() == bytes(memoryview(host))
        assert (d.column, d.row_group, d.file_offset) == (
            host.column,
            host.row_group,
            host.file_offset,
        )
        assert not hasattr(d, "__cuda_array_interface__")


def test_a_pinned_copy_keeps_every_chunk_and_its_metadata(tmp_path):
    path = _write(tmp_path, all_types_table(3000), row_group_size=1000)
    chunks = fastingest.read_chunks(path)
    pinned = chunks.pin("cpu", staging_threads=3)
    assert len(pinned) == len(chunks) and pinned.nbytes == chunks.nbytes
    for host, p in zip(chunks, pinned, strict=True):
        assert bytes(memoryview(p)) == bytes(memoryview(host))
        assert (p.column, p.row_group, p.file_offset) == (
            host.column,
            host.row_group,
            host.file_offset,
        )
    assert pinned.to_parquet_bytes() == chunks.to_parquet_bytes()
    dev = pinned.to_device("cpu")
    for host, d in zip(chunks, dev, strict=True):
        assert np.from_dlpack(d).tobytes() == bytes(memoryview(host))


def test_dlpack_capsules_outlive_the_set(tmp_path):
    path = _write(tmp_path, numeric_table(5000))
    dev = fastingest.read_chunks(path, device="cpu")
    want = [np.from_dlpack(c).copy() for c in dev]
    views = [np.from_dlpack(c) for c in dev]
    del dev
    import gc

    gc.collect()
    for v, w in zip(views, want, strict=True):
        assert np.array_equal(v, w)
    # An unconsumed capsule is freed by its destructor.
    dev = fastingest.read_chunks(path, device="cpu")
    capsule = dev[0].__dlpack__()
    assert "dltensor" in repr(capsule)
    del capsule, dev
    gc.collect()


def test_read_chunks_to_device_overlaps_the_fetch(s3, toxi):
    """Through a slow link, copies start while later chunks are still on the
    wire: the same pipeline as on a GPU, with the host target."""
    table = numeric_table(400_000)
    data = parquet_bytes(table, row_group_size=50_000, compression="none")
    url = s3.put("c/slow.parquet", data)
    toxi.add_toxic("s3", "latency", {"latency": 40})
    toxi.add_toxic("s3", "bandwidth", {"rate": 20_000})  # KB/s per connection
    # 1 MiB requests count half a slot: 2 at once.
    config = fastingest.Config(slice_size=1 << 20, max_in_flight=1)
    dev = fastingest.read_chunks(
        url,
        columns=["id", "x"],
        device="cpu",
        storage_options=s3.options(proxied=True),
        config=config,
    )
    report = dev.upload_report
    assert report["copies_before_last_arrival"] > 0
    assert report["wait_for_data_s"] > 0.05
    local = fastingest.read_chunks(
        s3.url("c/slow.parquet"), columns=["id", "x"], storage_options=s3.options()
    )
    for a, b in zip(dev, local, strict=True):
        assert np.from_dlpack(a).tobytes() == bytes(memoryview(b))


def test_cuda_without_a_gpu_raises_a_clear_error(tmp_path):
    if fastingest.cuda_available():
        pytest.skip("a GPU is present: test_gpu.py covers the CUDA path")
    path = _write(tmp_path, numeric_table(100))
    chunks = fastingest.read_chunks(path)
    with pytest.raises(fastingest.DeviceUnavailableError) as info:
        chunks.to_device(0)
    assert isinstance(info.value, RuntimeError)
    with pytest.raises(RuntimeError, match="CUDA|cuda"):
        fastingest.read_chunks(path, device="cuda:0")
    with pytest.raises(fastingest.DeviceUnavailableError):
        fastingest.cuda_device_count()
    with pytest.raises(fastingest.InvalidArgumentError, match="device"):
        chunks.to_device("tpu")


# --- decoded columns for Torch -----------------------------------------------


def test_host_columns_match_the_table():
    table = all_types_table(1000, seed=9)
    fixed = [
        "i8",
        "i16",
        "i32",
        "i64",
        "u8",
        "u32",
        "u64",
        "f32",
        "f64",
        "bool",
        "date",
        "ts_ms",
        "ts_us_tz",
        "ts_ns_utc",
        "time_us",
        "dict",
    ]
    cols = host_columns(table.select(fixed[:-1]))
    for name in fixed[:-1]:
        arr = table[name].combine_chunks()
        col = cols[name]
        assert len(col.values) == len(arr)
        valid = np.asarray(arr.is_valid())
        if arr.null_count:
            assert np.array_equal(col.validity, valid), name
        else:
            assert col.validity is None
        if pa.types.is_temporal(arr.type):
            expect = (
                pc.cast(arr, pa.int64())
                if not pa.types.is_date32(arr.type)
                else pc.cast(pc.cast(arr, pa.int32()), pa.int64())
            )
            assert col.values.dtype == np.int64
        else:
            expect = arr
        expect = pc.drop_null(expect).to_numpy(zero_copy_only=False)
        assert np.array_equal(col.values[valid], expect), name
    # Zero-copy: a column without nulls shares Arrow's buffer.
    i64 = table["i64"].combine_chunks()
    assert (
        host_columns(pa.table({"i64": i64}))["i64"].values.ctypes.data == i64.buffers()[1].address
    )
    # Dictionary columns are decoded; strings are refused unless asked for.
    with pytest.raises(fastingest.InvalidArgumentError, match="'dict'"):
        host_columns(table.select(["dict"]))
    strs = host_columns(table.select(["str", "large_bin", "dict"]), strings="offsets")
    for name in ("str", "large_bin", "dict"):
        arr = table[name].combine_chunks()
        if pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_decode()
        col = strs[name]
        got = [bytes(col.values[col.offsets[i] : col.offsets[i + 1]]) for i in range(len(arr))]
        want = [(v.encode() if isinstance(v, str) else v) or b"" for v in arr.to_pylist()]
        assert got == want, name
    with pytest.raises(fastingest.InvalidArgumentError, match="'list_i32'"):
        host_columns(table.select(["list_i32"]))
    # Sliced arrays honour their offset.
    sliced = pa.table({"x": pa.array(np.arange(100), pa.int64()).slice(10, 5)})
    assert host_columns(sliced)["x"].values.tolist() == [10, 11, 12, 13, 14]


def test_fixed_size_lists_become_tensors_of_their_shape():
    # pyarrow stores an embedding as fixed_size_list<float>[n]: one array of
    # rows x n over Arrow's buffer, nested ones one axis per level; a sliced
    # column starts at its own rows; a null row adds validity.
    from fastingest._torch import host_arrays, host_columns

    rows = 50
    flat = np.arange(rows * 6, dtype=np.float32)
    emb = pa.FixedSizeListArray.from_arrays(pa.array(flat), 6)
    grid = pa.FixedSizeListArray.from_arrays(
        pa.FixedSizeListArray.from_arrays(pa.array(np.arange(rows * 6, dtype=np.int16)), 3), 2
    )
    nulls = pa.array(np.arange(rows) % 5 == 0)
    holed = pa.FixedSizeListArray.from_arrays(pa.array(flat), 6, mask=nulls)
    table = pa.table({"emb": emb, "grid": grid, "holed": holed})
    got = host_columns(table)
    assert got["emb"].values.shape == (rows, 6) and got["emb"].values.dtype == np.float32
    np.testing.assert_array_equal(got["emb"].values, flat.reshape(rows, 6))
    assert got["emb"].validity is None
    # Zero-copy: the items' own buffer.
    assert got["emb"].values.ctypes.data == emb.values.buffers()[1].address
    assert got["grid"].values.shape == (rows, 2, 3)
    np.testing.assert_array_equal(got["grid"].values.reshape(-1), np.arange(rows * 6))
    valid = ~np.asarray(nulls)
    np.testing.assert_array_equal(got["holed"].validity, valid)
    np.testing.assert_array_equal(got["holed"].values[valid], flat.reshape(rows, 6)[valid])
    sliced = host_columns(pa.table({"emb": emb.slice(7, 2), "grid": grid.slice(3, 2)}))
    np.testing.assert_array_equal(sliced["emb"].values, flat.reshape(rows, 6)[7:9])
    np.testing.assert_array_equal(
        sliced["grid"].values, np.arange(rows * 6, dtype=np.int16).reshape(rows, 2, 3)[3:5]
    )
    empty = host_arrays(pa.table({"emb": emb.slice(0, 0)}))
    assert empty["emb"].shape == (0, 6)
    # What a tensor cannot hold, refused naming the column.
    items_with_nulls = pa.FixedSizeListArray.from_arrays(pa.array([1.0, None, 3.0, 4.0]), 2)
    with pytest.raises(fastingest.InvalidArgumentError, match="'n'.*null items"):
        host_columns(pa.table({"n": items_with_nulls}))
    inner_null = pa.FixedSizeListArray.from_arrays(
        pa.FixedSizeListArray.from_arrays(
            pa.array(np.arange(8.0)), 2, mask=pa.array([False, True, False, False])
        ),
        2,
    )
    with pytest.raises(fastingest.InvalidArgumentError, match="'g'.*null lists inside"):
        host_columns(pa.table({"g": inner_null}))
    words = pa.FixedSizeListArray.from_arrays(pa.array(["a", "b", "c", "d"]), 2)
    with pytest.raises(fastingest.InvalidArgumentError, match="'w'.*integers or floats"):
        host_columns(pa.table({"w": words}))


def test_to_torch_on_cpu_equals_the_table(tmp_path):
    torch = need_torch()
    table = numeric_table(2000)
    path = _write(tmp_path, table)
    got = fastingest.read_torch(path, device="cpu", columns=["id", "x", "flag"])
    assert torch.equal(got["id"], torch.arange(2000))
    assert np.array_equal(got["x"].numpy(), table["x"].to_numpy())
    assert got["flag"].dtype == torch.bool


def test_packed_host_arrays_equal_the_concatenated_ones():
    """The CUDA path of to_torch writes each chunk straight into one block:
    every array must read back as host_arrays makes it from the whole column
    (nulls in some chunks only, an empty chunk, a sliced one, offsets shifted
    chunk by chunk), and each array is reported once all its bytes are in."""
    from fastingest._torch import host_arrays, pack_host, pack_layout

    rng = np.random.default_rng(5)

    def chunk(n: int, nulls: bool) -> pa.RecordBatch:
        mask = (rng.random(n) < 0.3) if nulls else None
        words = [f"w{i % 13}" * (i % 4) for i in range(n)]
        return pa.record_batch(
            {
                "i": pa.array(rng.integers(-50, 50, n), pa.int16(), mask=mask),
                "x": pa.array(rng.random(n)),
                "b": pa.array(rng.random(n) < 0.5, mask=mask),
                "d": pa.array(rng.integers(0, 20_000, n).astype(np.int32), pa.date32()),
                "t": pa.array(rng.integers(0, 1 << 40, n), pa.timestamp("us"), mask=mask),
                "s": pa.array(words, pa.string(), mask=mask),
                "ls": pa.array(words, pa.large_string()),
                "k": pa.array(words, pa.string()).dictionary_encode(),
                "e": pa.FixedSizeListArray.from_arrays(
                    pa.array(rng.random(n * 3).astype(np.float32)),
                    3,
                    mask=None if mask is None else pa.array(mask),
                ),
            }
        )

    batches = [chunk(5000, False), chunk(0, True), chunk(3000, True), chunk(7001, False)]
    batches.append(chunk(4000, True).slice(123, 2500))
    table = pa.Table.from_batches(batches)
    want = host_arrays(table, strings="offsets")
    layout = pack_layout(table, strings="offsets")
    seen = []
    block = pack_host(
        layout, lambda size: np.full(size, 0xAB, np.uint8), lambda k, slot: seen.append(k)
    )
    assert seen == list(want) == list(layout.slots)
    for key, arr in want.items():
        slot = layout.slots[key]
        assert slot.start % 64 == 0
        got = block[slot.start : slot.start + slot.nbytes].view(slot.dtype).reshape(slot.shape)
        assert got.dtype == arr.dtype and got.shape == arr.shape, key
        if key + ".validity" in want and key + ".offsets" not in want:
            # Values under nulls are unspecified.
            valid = want[key + ".validity"]
            assert np.array_equal(got[valid], arr[valid]), key
        else:
            assert np.array_equal(got, arr), key
    with pytest.raises(fastingest.InvalidArgumentError, match="'s'"):
        pack_layout(table)
