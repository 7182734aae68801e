"""Object stores for real: MinIO (S3), fake-gcs-server (GCS), Azurite (Azure),
a presigned HTTP URL, and faults injected by toxiproxy."""

from __future__ import annotations

import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fastingest

from .conftest import assert_tables_equal, read_in_forked_child
from .datagen import all_types_table, numeric_table, parquet_bytes

# Beside a single file's footer request, a read asks for the file's start and
# a longer tail once that request has gone unanswered for 5 ms: loopback
# MinIO answers sooner, unless the machine is loaded (a CI run). A test that
# counts a direct read's requests exactly turns both off, so that it counts
# the plan's requests alone; the Rust tests time the speculation with an
# injected delay, and the tests through toxiproxy's latency here.
NO_SPECULATION = {"start_prefetch": 0, "long_footer_prefetch": 0}


@pytest.fixture(scope="module")
def wide() -> pa.Table:
    n = 40_000
    return pa.table({f"c{i:02d}": pa.array(range(i, i + n), pa.int64()) for i in range(20)})


def test_s3_read_columns_filters_row_groups(s3):
    table = numeric_table(20_000)
    url = s3.put("data/n.parquet", parquet_bytes(table, row_group_size=2000))
    opts = s3.options()
    assert_tables_equal(fastingest.read_parquet(url, storage_options=opts), table)
    got = fastingest.read_parquet(
        url, columns=["x", "id"], filters=[("id", ">=", 15_000)], storage_options=opts
    )
    local = pa.BufferReader(parquet_bytes(table, row_group_size=2000))
    assert_tables_equal(
        got, pq.read_table(local, columns=["x", "id"], filters=[("id", ">=", 15_000)])
    )
    rgs = fastingest.read_parquet(url, row_groups=[9, 0], storage_options=opts)
    assert rgs.column("id").to_pylist()[:1] == [18_000]


def test_s3_every_type(s3):
    table = all_types_table()
    url = s3.put("types.parquet", parquet_bytes(table, compression="zstd", row_group_size=64))
    assert_tables_equal(
        fastingest.read_parquet(url, storage_options=s3.options()),
        pq.read_table(pa.BufferReader(parquet_bytes(table, compression="zstd", row_group_size=64))),
    )


def test_s3_glob_and_list_keep_order(s3):
    table = numeric_table(3000)
    for i in range(3):
        s3.put(f"parts/p-{i}.parquet", parquet_bytes(table.slice(i * 1000, 1000)))
    s3.put("parts/other.csv", b"a,b\n")
    s3.put("parts/deeper/p-9.parquet", parquet_bytes(table.slice(0, 5)))
    opts = s3.options()
    got = fastingest.read_parquet(s3.url("parts/*.parquet"), storage_options=opts)
    assert_tables_equal(got, table)
    deep = fastingest.read_parquet(s3.url("parts/**/*.parquet"), storage_options=opts)
    assert deep.num_rows == 3005
    listed = fastingest.read_parquet(
        [s3.url("parts/p-2.parquet"), s3.url("parts/p-0.parquet")], storage_options=opts
    )
    assert listed.column("id").to_pylist()[0] == 2000


def test_s3_errors(s3):
    opts = s3.options()
    with pytest.raises(FileNotFoundError, match="missing.parquet"):
        fastingest.read_parquet(s3.url("missing.parquet"), storage_options=opts)
    with pytest.raises(fastingest.NotFoundError, match="no objects match"):
        fastingest.read_parquet(s3.url("nothing/*.parquet"), storage_options=opts)
    url = s3.put("junk.parquet", b"definitely not parquet, but long enough")
    with pytest.raises(fastingest.CorruptFileError, match="junk.parquet"):
        fastingest.read_parquet(url, storage_options=opts)
    s3.put("ok.parquet", parquet_bytes(numeric_table(10)))
    bad_creds = {**opts, "secret_access_key": "wrong"}
    with pytest.raises(PermissionError, match="ok.parquet"):
        fastingest.read_parquet(s3.url("ok.parquet"), storage_options=bad_creds)
    with pytest.raises(fastingest.InvalidArgumentError, match="not_an_option"):
        fastingest.read_parquet(
            s3.url("ok.parquet"), storage_options={**opts, "not_an_option": "1"}
        )


def test_s3_fetches_only_the_projected_columns(s3, wide):
    data = parquet_bytes(wide, row_group_size=10_000, compression="none")
    url = s3.put("wide.parquet", data)
    stats = fastingest.ReadStats()
    # Gaps shorter than the hole limit are fetched (next test): here every
    # gap is longer.
    config = fastingest.Config(hole_limit="64K", **NO_SPECULATION)
    got = fastingest.read_parquet(
        url, columns=["c03", "c17"], storage_options=s3.options(), stats=stats, config=config
    )
    assert got.column_names == ["c03", "c17"]
    meta = pq.ParquetFile(pa.BufferReader(data)).metadata
    needed = sum(
        meta.row_group(r).column(c).total_compressed_size
        for r in range(meta.num_row_groups)
        for c in (3, 17)
    )
    tail = min(len(data), 64 * 1024)
    assert stats.bytes_fetched <= 1.2 * needed + tail
    assert stats.unplanned_requests == 0
    plan = fastingest.plan_parquet(
        url, columns=["c03", "c17"], storage_options=s3.options(), config=config
    )[0]
    assert plan["bytes_needed"] == needed
    assert stats.requests == 1 + plan["num_requests"]


def test_s3_fetches_short_gaps_rather_than_a_request_for_each_chunk(s3, tmp_path):
    """Chunks of 80 KB, every fourth column read: the 240 KB gaps between
    them are within the store's hole limit (512 KiB), so a row group's
    chunks come in one request; a local file's hole limit (64 KiB) keeps
    them apart. The rows are the same either way."""
    table = pa.table({f"c{i:02d}": pa.array(range(i, i + 40_000), pa.int64()) for i in range(16)})
    data = parquet_bytes(table, row_group_size=10_000, compression="none")
    url = s3.put("gaps.parquet", data)
    local = tmp_path / "gaps.parquet"
    local.write_bytes(data)
    columns = ["c00", "c04", "c08", "c12"]
    store = fastingest.plan_parquet(url, columns=columns, storage_options=s3.options())[0]
    apart = fastingest.plan_parquet(
        url,
        columns=columns,
        storage_options=s3.options(),
        config=fastingest.Config(hole_limit="64K"),
    )[0]
    on_disk = fastingest.plan_parquet(str(local), columns=columns)[0]
    assert apart["num_requests"] == on_disk["num_requests"] == 16  # 4 chunks x 4 row groups
    assert store["num_requests"] < 8
    assert store["bytes_to_fetch"] > 2.5 * store["bytes_needed"]  # the gaps came too
    assert on_disk["bytes_to_fetch"] == on_disk["bytes_needed"]
    stats = fastingest.ReadStats()
    got = fastingest.read_parquet(
        url,
        columns=columns,
        storage_options=s3.options(),
        stats=stats,
        config=fastingest.Config(**NO_SPECULATION),
    )
    assert got.equals(table.select(columns))
    assert stats.requests <= 1 + store["num_requests"]
    assert fastingest.read_parquet(str(local), columns=columns).equals(table.select(columns))
    # The local hole limit is its own knob.
    merged = fastingest.plan_parquet(
        str(local), columns=columns, config=fastingest.Config(local_hole_limit="1M")
    )[0]
    assert merged["num_requests"] < 8


def test_a_small_file_read_whole_comes_in_the_footer_s_round_trip(s3, toxi, wide):
    """A single path's size is unknown until the first response, so a read of
    all of it (decoded, streamed, or as raw chunks) through a link with
    latency asks for the file's start (1 MiB slices of `start_prefetch`)
    beside the footer: a small file needs no second round trip. A read of
    some columns, a plan, the knob at 0, or a store that answers at once
    asks for no byte of the start. (No long tail goes beside the footer
    request here: the first, direct, read decoded this object's footer, and
    the later reads find it again; see the test after the next. That read
    asks for nothing beside its footer, so that its count is the plan's
    whatever the loopback's load.)"""
    table = wide.slice(0, 12_000)
    data = parquet_bytes(table, row_group_size=3_000, compression="none")
    assert 1 << 20 < len(data) < 3 << 20
    url = s3.put("start/whole.parquet", data)
    mib, tail = 1 << 20, 64 * 1024
    direct = fastingest.ReadStats()
    fastingest.read_parquet(
        url,
        storage_options=s3.options(),
        stats=direct,
        config=fastingest.Config(**NO_SPECULATION),
    )
    toxi.add_toxic("s3", "latency", {"latency": 30})
    opts = s3.options(proxied=True)
    assert (
        direct.requests == 1 + fastingest.plan_parquet(url, storage_options=opts)[0]["num_requests"]
    ), direct

    stats = fastingest.ReadStats()
    assert_tables_equal(fastingest.read_parquet(url, storage_options=opts, stats=stats), table)
    # The tail and the start's slices (those past the file's end are refused
    # by the store); the start's bytes serve every column chunk.
    slices = fastingest.Config().start_prefetch // mib
    assert slices >= 3
    assert stats.requests == 1 + slices, stats
    assert stats.bytes_fetched == tail + len(data) - 4, stats
    assert stats.unplanned_requests == 0

    streamed = fastingest.ReadStats()
    batches = list(fastingest.iter_batches(url, storage_options=opts, stats=streamed))
    assert sum(b.num_rows for b in batches) == table.num_rows
    assert streamed.requests == 1 + slices, streamed

    # Raw chunks fetched at once (to host memory or through the staging
    # pipeline) take the same single round trip, and are the file's bytes.
    chunked = fastingest.ReadStats()
    chunks = fastingest.read_chunks(url, storage_options=opts, stats=chunked)
    assert chunked.requests == 1 + slices, chunked
    meta = pq.ParquetFile(pa.BufferReader(data)).metadata
    assert len(chunks) == meta.num_row_groups * meta.num_columns > 0
    for c in chunks:
        assert bytes(memoryview(c)) == data[c.file_offset : c.file_offset + c.length]
    staged = fastingest.ReadStats()
    dev = fastingest.read_chunks(url, storage_options=opts, stats=staged, device="cpu")
    assert staged.requests == 1 + slices, staged
    assert len(dev) == len(chunks)

    planned = fastingest.ReadStats()
    plan = fastingest.plan_parquet(url, storage_options=opts, stats=planned)[0]
    # The footer request alone: the footer is the one decoded before.
    assert (planned.requests, planned.bytes_fetched) == (1, tail), planned
    off = fastingest.ReadStats()
    fastingest.read_parquet(
        url, storage_options=opts, stats=off, config=fastingest.Config(start_prefetch=0)
    )
    assert off.requests == 1 + plan["num_requests"] > 1 + 1, off
    # A start shorter than the file: its slice serves the first chunks, the
    # rest is fetched from where it ends (no byte twice).
    one = fastingest.ReadStats()
    got = fastingest.read_parquet(
        url, storage_options=opts, stats=one, config=fastingest.Config(start_prefetch=mib)
    )
    assert_tables_equal(got, table)
    assert one.bytes_fetched <= tail + plan["bytes_needed"], one
    assert one.requests > 1 + 1

    some = fastingest.ReadStats()
    fastingest.read_parquet(url, columns=["c03"], storage_options=opts, stats=some)
    needed = fastingest.plan_parquet(url, columns=["c03"], storage_options=opts)[0]
    assert some.requests == 1 + needed["num_requests"]
    assert some.bytes_fetched <= tail + 1.2 * needed["bytes_needed"]

    # A presigned URL is one file of unknown size too (plain HTTP GETs).
    signed = s3.presign("start/whole.parquet", proxied=True)
    by_url = fastingest.ReadStats()
    assert_tables_equal(fastingest.read_parquet(signed, stats=by_url), table)
    assert by_url.requests == 2 + slices, by_url


def test_large_footer_takes_a_second_request(s3):
    table = pa.table({f"column_with_a_long_name_{i:04d}": [i] for i in range(1500)})
    data = parquet_bytes(table)
    # One object per case: a footer decoded once is reused for the same
    # object version, which would skip the second request being counted.
    urls = [s3.put(f"widefooter-{i}.parquet", data) for i in range(3)]
    stats = fastingest.ReadStats()
    cfg = fastingest.Config(footer_prefetch="16K")
    md = fastingest.metadata(urls[0], storage_options=s3.options(), config=cfg, stats=stats)
    assert md["num_rows"] == 1
    assert stats.requests == 2
    stats2 = fastingest.ReadStats()
    fastingest.metadata(urls[1], storage_options=s3.options(), stats=stats2)
    assert stats2.requests == 2  # the footer is > 64 KiB too
    big = fastingest.Config(footer_prefetch="4M")
    stats3 = fastingest.ReadStats()
    fastingest.metadata(urls[2], storage_options=s3.options(), config=big, stats=stats3)
    assert stats3.requests == 1
    # Read again with the small prefetch: the kept footer saves the second request.
    again = fastingest.ReadStats()
    fastingest.metadata(urls[0], storage_options=s3.options(), config=cfg, stats=again)
    assert again.requests == 1


def test_a_long_footer_comes_in_the_first_round_trip_on_a_slow_link(s3, toxi):
    """On a link with latency, the footer request of a single path has a
    longer tail beside it (`long_footer_prefetch`): a footer longer than
    `footer_prefetch` then needs no request after the first answer. Parquet
    and ORC, through the S3 API and a presigned URL."""
    import pyarrow.orc as orc

    table = pa.table({f"column_with_a_long_name_{i:04d}": [i] for i in range(1500)})
    data = parquet_bytes(table)
    sink = pa.BufferOutputStream()
    orc.write_table(table, sink)
    orc_data = sink.getvalue().to_pybytes()
    tail, long_tail = 64 * 1024, fastingest.Config().long_footer_prefetch
    footer = int.from_bytes(data[-8:-4], "little") + 8
    assert tail < footer < long_tail and tail < len(orc_data)
    toxi.add_toxic("s3", "latency", {"latency": 30})
    opts = s3.options(proxied=True)
    # One object per read: a footer decoded before is reused, and then the
    # long tail is not waited for.
    keys = [f"longfooter/{i}.parquet" for i in range(4)]
    urls = [s3.put(key, data) for key in keys]

    on = fastingest.ReadStats()
    assert len(fastingest.metadata(urls[0], storage_options=opts, stats=on)["schema"]) == 1500
    # The first tail and the long tail, which holds the footer (the whole
    # file, which is shorter): nothing after them.
    assert (on.requests, on.bytes_fetched) == (2, tail + min(long_tail, len(data))), on
    # The same object again: the first answer confirms the version whose
    # footer was decoded above, so no long tail goes beside it.
    again = fastingest.ReadStats()
    assert len(fastingest.metadata(urls[0], storage_options=opts, stats=again)["schema"]) == 1500
    assert (again.requests, again.bytes_fetched) == (1, tail), again

    off = fastingest.ReadStats()
    cfg = fastingest.Config(long_footer_prefetch=0)
    fastingest.metadata(urls[1], storage_options=opts, stats=off, config=cfg)
    # The first tail, then the footer's part before it.
    assert (off.requests, off.bytes_fetched) == (2, footer), off

    got = fastingest.read_parquet(urls[2], storage_options=opts)
    assert_tables_equal(got, table)

    signed = fastingest.ReadStats()
    by_url = s3.presign(keys[3], proxied=True)
    # One URL, one file: a dict, though its query has a "?".
    assert len(fastingest.metadata(by_url, stats=signed)["schema"]) == 1500
    assert signed.bytes_fetched == tail + min(long_tail, len(data)), signed

    orc_url = s3.put("longfooter/wide.orc", orc_data)
    orc_stats = fastingest.ReadStats()
    assert_tables_equal(fastingest.read_orc(orc_url, storage_options=opts, stats=orc_stats), table)
    assert orc_stats.bytes_fetched >= tail + min(long_tail, len(orc_data)), orc_stats


def test_a_page_index_comes_from_the_long_tail_on_a_slow_link(s3, toxi):
    """A filtered read wants the page index, which lies before the footer:
    on a link with latency the long tail asked for beside the footer request
    is kept until the footer says where the index starts, and serves it."""
    import numpy as np

    n = 100_000
    table = pa.table(
        {
            "id": pa.array(np.arange(n)),
            "x": pa.array(np.arange(n) * 0.5),
            "s": pa.array([f"v{i % 1000:04d}" for i in range(n)]),
        }
    )
    # Pages of 64 rows: a page index of ~160 KB before a ~2 KB footer.
    data = parquet_bytes(
        table,
        row_group_size=25_000,
        write_page_index=True,
        data_page_size=256,
        write_batch_size=64,
        compression="none",
    )
    footer = int.from_bytes(data[-8:-4], "little") + 8
    assert footer < 64 * 1024 < len(data)
    toxi.add_toxic("s3", "latency", {"latency": 30})
    opts = s3.options(proxied=True)
    filters = [("id", ">=", 99_000)]
    want = pq.read_table(pa.BufferReader(data), filters=filters)
    assert want.num_rows == 1_000

    on = fastingest.ReadStats()
    url = s3.put("pageindex/on.parquet", data)
    got = fastingest.read_parquet(url, filters=filters, storage_options=opts, stats=on)
    assert_tables_equal(got, want)
    assert on.unplanned_requests == 0, on
    # The tail, and the long tail: it held the index and the last row
    # group's pages too, so the plan needed no request of its own.
    assert on.requests == 2, on

    off = fastingest.ReadStats()
    url = s3.put("pageindex/off.parquet", data)
    cfg = fastingest.Config(long_footer_prefetch=0)
    got = fastingest.read_parquet(url, filters=filters, storage_options=opts, stats=off, config=cfg)
    assert_tables_equal(got, want)
    assert off.unplanned_requests >= 1, off
    assert off.requests > 2 and off.bytes_needed == on.bytes_needed, off


def _counted_read(
    url: str, table: pa.Table, opts: dict, cfg: fastingest.Config, stream: bool
) -> fastingest.ReadStats:
    """Reads `url` whole (as a table, or as a stream when `stream`), checks it
    equals `table`, and returns the read's counters."""
    stats = fastingest.ReadStats()
    if stream:
        got = fastingest.iter_batches(url, storage_options=opts, config=cfg, stats=stats)
        got = got.read_all()
    else:
        got = fastingest.read_parquet(url, storage_options=opts, config=cfg, stats=stats)
    assert_tables_equal(got, table)
    return stats


def test_a_near_store_gets_fewer_larger_requests(s3, toxi):
    """A store that answers a footer request within 5 ms (MinIO on loopback)
    is near: there each request costs the server CPU more than a round trip
    costs the link, so a read's slices are `near_slice_size`, and a stream's
    first row group goes as its plan's slices rather than spread wider.
    Through a 30 ms link the same reads keep `slice_size`."""
    import numpy as np

    rng = np.random.default_rng(11)
    n = 1_500_000
    table = pa.table({c: rng.integers(0, 2**62, n) for c in ("a", "b")})
    data = parquet_bytes(table, compression="none", use_dictionary=False, row_group_size=n)
    url = s3.put("near/one.parquet", data)
    meta = pq.ParquetFile(pa.BufferReader(data)).metadata.row_group(0)
    chunks = [meta.column(i).total_compressed_size for i in range(2)]
    mib = 1 << 20
    # Speculation off, so that only the plan's requests follow the footer's.
    cfg = fastingest.Config(
        slice_size=mib, near_slice_size=2 * mib, start_prefetch=0, long_footer_prefetch=0
    )

    def requests(opts: dict, stream: bool) -> int:
        return _counted_read(url, table, opts, cfg, stream).requests

    def footer_and_slices(slice_size: int) -> int:
        return 1 + sum(-(-c // slice_size) for c in chunks)

    # A loaded loopback may answer a footer late; near in one of three tries.
    assert min(requests(s3.options(), False) for _ in range(3)) == footer_and_slices(2 * mib)
    assert min(requests(s3.options(), True) for _ in range(3)) == footer_and_slices(2 * mib)
    toxi.add_toxic("s3", "latency", {"latency": 30})
    far = s3.options(proxied=True)
    assert requests(far, False) == requests(far, True) == footer_and_slices(mib) == 25


def _spread_through_a_link(s3, toxi, key: str, groups: int, rows_per_group: int, cfg):
    """Writes `groups` row groups of two columns whose chunks are 2-3 MiB
    each, checks that a near store reads them as one request a chunk and,
    through a 30 ms link, as two of at least 1 MiB each (the plan, and the
    read's requests: only the plan's follow the footer's). Returns the
    file's chunk sizes and a read through the link."""
    import numpy as np

    rng = np.random.default_rng(groups)
    table = pa.table({c: rng.integers(0, 2**62, rows_per_group * groups) for c in ("a", "b")})
    data = parquet_bytes(
        table, compression="none", use_dictionary=False, row_group_size=rows_per_group
    )
    url = s3.put(key, data)
    meta = pq.ParquetFile(pa.BufferReader(data)).metadata
    chunks = [
        meta.row_group(g).column(c).total_compressed_size for g in range(groups) for c in range(2)
    ]
    mib = 1 << 20
    assert all(2 * mib <= c <= 3 * mib for c in chunks), chunks

    def read(opts: dict, stream: bool = False) -> fastingest.ReadStats:
        return _counted_read(url, table, opts, cfg, stream)

    # A loaded loopback may answer a footer late; near in one of three tries.
    assert min(read(s3.options()).requests for _ in range(3)) == 1 + len(chunks)
    toxi.add_toxic("s3", "latency", {"latency": 30})
    far = s3.options(proxied=True)
    spread = 2 * len(chunks)
    plan = fastingest.plan_parquet(url, storage_options=far, config=cfg)[0]
    assert plan["num_requests"] == spread, plan
    assert min(e - s for s, e in plan["requests"]) >= mib, plan["requests"]
    stats = read(far)
    assert stats.requests == 1 + spread and stats.bytes_fetched < len(data) + 64 * 1024, stats
    return chunks, lambda stream: read(far, stream)


def test_a_large_read_through_a_link_is_spread_over_the_request_slots(s3, toxi):
    """Through a link one connection brings a few tens of MB/s whatever the
    link allows, so a large read whose plan has fewer requests than the
    slots is cut into more (slices of at least 1 MiB); a stream's later
    windows too. A near store keeps one request a column chunk."""
    mib = 1 << 20
    # 10 chunks of 2-3 MiB: 30 MB, a large read for 3 MiB slices (8 of them
    # or more); each chunk one request as planned, two when spread.
    cfg = fastingest.Config(
        slice_size=3 * mib, near_slice_size=3 * mib, start_prefetch=0, long_footer_prefetch=0
    )
    chunks, read_far = _spread_through_a_link(s3, toxi, "spread/one.parquet", 5, 375_000, cfg)
    # The stream's first row group goes alone, in slices of 1 MiB; the other
    # four as one window, spread as the whole read is.
    streamed = read_far(True)
    first = sum(-(-c // mib) for c in chunks[:2])
    assert streamed.requests == 1 + first + 2 * (len(chunks) - 2), streamed


def test_a_smaller_read_through_a_link_is_spread_over_the_request_slots_too(s3, toxi):
    """A read of less than 8 slices' worth gets slices of about an eighth of
    it (`slice_for`), here one request per column chunk of 2-3 MiB; through
    a link it is cut into more, of at least 1 MiB, as a large read is. A near
    store keeps one request a column chunk."""
    mib = 1 << 20
    # 12 chunks of 2.3 MiB: 29 MB, less than 8 slices of 8 MiB, so slices of
    # 3.6 MB, one request a chunk as planned; two when spread.
    cfg = fastingest.Config(slice_size=8 * mib, start_prefetch=0, long_footer_prefetch=0)
    chunks, _ = _spread_through_a_link(s3, toxi, "spread/smaller.parquet", 6, 300_000, cfg)
    assert sum(chunks) < 8 * 8 * mib


def test_presigned_https_url(s3):
    table = numeric_table(5000)
    s3.put("signed/n.parquet", parquet_bytes(table, row_group_size=1000))
    url = s3.presign("signed/n.parquet")
    assert url.startswith("http://") and "X-Amz-Signature" in url
    assert_tables_equal(fastingest.read_parquet(url), table)
    got = fastingest.read_parquet(url, columns=["name"], filters=[("g", "==", 2)])
    assert got.num_rows == table.filter(pa.compute.equal(table["g"], 2)).num_rows
    with pytest.raises(FileNotFoundError):
        fastingest.read_parquet(s3.presign("signed/missing.parquet"))


def test_presigned_url_signatures_stay_out_of_messages_and_names(s3):
    from fastingest._parts import plan

    table = numeric_table(3000)
    s3.put("signed/p.parquet", parquet_bytes(table, row_group_size=1000))
    url = s3.presign("signed/p.parquet")
    missing = s3.presign("signed/missing.parquet")
    secrets = [
        part.split("=", 1)[1]
        for u in (url, missing)
        for part in u.split("?", 1)[1].split("&")
        if part.startswith(("X-Amz-Signature=", "X-Amz-Credential="))
    ]
    assert len(secrets) == 4
    with pytest.raises(fastingest.NotFoundError) as raised:
        fastingest.read_parquet(missing)
    message = str(raised.value)
    assert "signed/missing.parquet" in message
    assert not any(s in message for s in secrets), message
    # What a cluster task is told: names without the signature, and a
    # location that still opens the object (with it).
    planned = plan("t", "parquet", url, {}, fastingest._cache_arg)
    (part,) = planned.parts_of_count(1)
    shown = repr(part) + " ".join(part.names) + " ".join(planned.names)
    assert "signed/p.parquet" in shown
    assert not any(s in shown for s in secrets), shown
    assert_tables_equal(planned.scan.read(part), table)
    meta = fastingest.metadata(url)
    assert not any(s in repr(meta) for s in secrets)


def test_gcs_read(gcs):
    table = numeric_table(4000)
    gcs.gcs_upload("test-bucket", "dir/n.parquet", parquet_bytes(table, row_group_size=500))
    opts = {"service_account_path": str(gcs.gcs_service_account()), "allow_http": "true"}
    assert_tables_equal(
        fastingest.read_parquet("gs://test-bucket/dir/n.parquet", storage_options=opts), table
    )
    assert (
        fastingest.read_parquet("gs://test-bucket/dir/*.parquet", storage_options=opts).num_rows
        == 4000
    )
    with pytest.raises(FileNotFoundError):
        fastingest.read_parquet("gs://test-bucket/dir/none.parquet", storage_options=opts)


def test_azure_read(azure):
    azure.azure_create_container("data")
    table = numeric_table(4000)
    opts = azure.azure_options()
    fastingest._fastingest._put(
        "az://data/x/n.parquet", parquet_bytes(table, row_group_size=700), opts
    )
    assert_tables_equal(
        fastingest.read_parquet("az://data/x/n.parquet", storage_options=opts), table
    )
    assert fastingest.read_parquet("az://data/x/*.parquet", storage_options=opts).num_rows == 4000
    with pytest.raises(FileNotFoundError):
        fastingest.read_parquet("az://data/x/none.parquet", storage_options=opts)


def test_azure_through_a_slow_link_is_asked_for_no_long_tail(azure, toxi):
    """Azure has no suffix ranges (object_store refuses one without sending
    it; the footer takes a HEAD and a bounded GET instead): through a link
    with latency (and on loopback, where the HEAD and GET take over 5 ms
    too) no long tail is attempted beside the footer request: the requests
    counted are the ones made."""
    azure.azure_create_container("slowlink")
    direct = azure.azure_options()
    host = direct["endpoint"].removeprefix("http://").split("/", 1)[0]
    listen = toxi.proxies.get("azure") or toxi.create("azure", host)
    slow = {**direct, "endpoint": direct["endpoint"].replace(host, listen)}
    table = pa.table({f"column_with_a_long_name_{i:04d}": [i] for i in range(1500)})
    for name in ("fast", "slow"):
        fastingest._fastingest._put(f"az://slowlink/{name}.parquet", parquet_bytes(table), direct)
    fast_stats = fastingest.ReadStats()
    fastingest.metadata("az://slowlink/fast.parquet", storage_options=direct, stats=fast_stats)
    toxi.add_toxic("azure", "latency", {"latency": 30})
    try:
        slow_stats = fastingest.ReadStats()
        md = fastingest.metadata(
            "az://slowlink/slow.parquet", storage_options=slow, stats=slow_stats
        )
    finally:
        toxi.clear("azure")
    assert len(md["schema"]) == 1500
    # Counted: the tail (object_store's HEAD and bounded GET, one attempt)
    # and the footer's part before it. A long tail attempted would be a third.
    assert slow_stats.requests == fast_stats.requests == 2, (slow_stats, fast_stats)


# -- faults ------------------------------------------------------------------


@pytest.fixture(scope="module")
def fault_table() -> pa.Table:
    return numeric_table(200_000)


def _put_fault_file(s3, table) -> tuple[str, bytes]:
    data = parquet_bytes(table, row_group_size=25_000, compression="none")
    return s3.put("faults/n.parquet", data), data


@pytest.mark.parametrize(
    "kind,attributes",
    [
        # For the first 0.7 s every connection is reset after 100 ms: those
        # requests fail and are retried until the fault clears.
        ("reset_peer", {"timeout": 100}),
        # Responses arrive in small pieces with delays: slow, but no failure.
        ("slicer", {"average_size": 500, "size_variation": 400, "delay": 100}),
        # Every connection dies after 150 kB: the second request on a kept-alive
        # connection is cut short and must be retried on a new one.
        ("limit_data", {"bytes": 150_000}),
    ],
)
def test_faults_give_the_right_table_after_retries(s3, toxi, fault_table, kind, attributes, caplog):
    caplog.set_level("INFO", logger="fastingest")
    url, _ = _put_fault_file(s3, fault_table)
    name = toxi.add_toxic("s3", kind, attributes)
    if kind == "reset_peer":
        threading.Timer(0.7, toxi.remove_toxic, ("s3", name)).start()
    stats = fastingest.ReadStats()
    # Fewer requests than slices at once, so that connections are reused
    # (128 KiB requests count a quarter slot: 16 at once).
    cfg = fastingest.Config(
        slice_size="128K",
        near_slice_size="128K",  # the proxy on loopback answers within 5 ms
        max_in_flight=4,
        max_retries=30,
        retry_backoff=0.01,
        retry_backoff_max=0.1,
        request_timeout=10,
        connect_timeout=2,
    )
    got = fastingest.read_parquet(
        url, storage_options=s3.options(proxied=True), config=cfg, stats=stats
    )
    assert_tables_equal(got, fault_table)
    fastingest._fastingest._flush_logs()
    retried = [r for r in caplog.records if r.name == "fastingest.retry"]
    if kind != "slicer":
        assert stats.retries > 0
        # Each retry is a WARNING record naming the object and the bytes.
        assert len(retried) == stats.retries
        assert all(r.levelname == "WARNING" for r in retried)
        assert "faults/" in retried[0].getMessage() and "retrying in" in retried[0].getMessage()
    else:
        assert retried == []


_LOG_AT_EXIT_CHILD = """
import json, logging, sys
import fastingest
logging.basicConfig(level="WARNING", format="%(name)s|%(message)s")
url, options = sys.argv[1], json.loads(sys.argv[2])
config = fastingest.Config(max_retries=2, retry_backoff=0.01, retry_backoff_max=0.02)
try:
    fastingest.read_parquet(url, storage_options=options, config=config)
except fastingest.RemoteIOError:
    print("failed")
"""


def _read_in_child_with_resets(code: str, s3, toxi, fault_table):
    """Runs `code` in a new process against a store that resets every
    connection: its read fails after its retries."""
    import json
    import subprocess
    import sys

    url, _ = _put_fault_file(s3, fault_table)
    toxi.add_toxic("s3", "reset_peer", {"timeout": 0})
    return subprocess.run(
        [sys.executable, "-c", code, url, json.dumps(s3.options(proxied=True))],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_retry_records_reach_logging_before_the_program_exits(s3, toxi, fault_table):
    done = _read_in_child_with_resets(_LOG_AT_EXIT_CHILD, s3, toxi, fault_table)
    assert done.stdout.strip() == "failed", done.stderr[-2000:]
    # A short-lived program that configures logging sees each retry (2 per
    # request) on its handler, the records forwarded from the runtime's
    # threads (and flushed at exit).
    retries = [line for line in done.stderr.splitlines() if line.startswith("fastingest.retry|")]
    assert len(retries) >= 2, done.stderr[-2000:]
    assert "faults/n.parquet" in retries[0]


_SILENT_CHILD = """
import json, sys
import fastingest
assert "logging" not in sys.modules  # set up by the first record, not the import
url, options = sys.argv[1], json.loads(sys.argv[2])
config = fastingest.Config(max_retries=2, retry_backoff=0.01, retry_backoff_max=0.02)
try:
    fastingest.read_parquet(url, storage_options=options, config=config)
except fastingest.RemoteIOError:
    fastingest._fastingest._flush_logs()  # every record handed to logging
    print("failed", "logging" in sys.modules)
"""


def test_retry_records_print_nothing_unless_logging_is_configured(s3, toxi, fault_table):
    done = _read_in_child_with_resets(_SILENT_CHILD, s3, toxi, fault_table)
    # The retries were logged (logging got imported to take them), and
    # Python's last-resort handler printed none of them.
    assert done.stdout.strip() == "failed True", done.stderr[-2000:]
    assert "retrying in" not in done.stderr, done.stderr[-2000:]


def test_timeouts_end_in_a_clear_error(s3, toxi, fault_table):
    url, _ = _put_fault_file(s3, fault_table)
    toxi.add_toxic("s3", "timeout", {"timeout": 0})  # swallow everything, never answer
    cfg = fastingest.Config(
        max_retries=2,
        retry_backoff=0.01,
        retry_backoff_max=0.05,
        request_timeout=0.5,
        connect_timeout=0.5,
    )
    with pytest.raises(fastingest.RequestTimeoutError, match=r"faults/n.parquet.*footer"):
        fastingest.read_parquet(url, storage_options=s3.options(proxied=True), config=cfg)


def test_exhausted_retries_name_the_byte_range(s3, toxi, fault_table):
    url, _ = _put_fault_file(s3, fault_table)
    # Every connection dies after 100 kB: the 64 KiB footer read succeeds,
    # every 256 KiB slice fails on every attempt.
    toxi.add_toxic("s3", "limit_data", {"bytes": 100_000})
    cfg = fastingest.Config(
        slice_size="256K",
        near_slice_size="256K",  # the proxy on loopback answers within 5 ms
        max_retries=2,
        retry_backoff=0.01,
        retry_backoff_max=0.05,
    )
    with pytest.raises(
        fastingest.RemoteIOError, match=r"faults/n.parquet: read of bytes \d+\.\.\d+ failed after 3"
    ):
        fastingest.read_parquet(url, storage_options=s3.options(proxied=True), config=cfg)


def test_proxy_down_ends_in_a_clear_error(s3, toxi, fault_table, fast_retry_config):
    url, _ = _put_fault_file(s3, fault_table)
    toxi.set_enabled("s3", False)
    cfg = fastingest.Config(
        max_retries=2,
        retry_backoff=0.01,
        retry_backoff_max=0.05,
        request_timeout=2,
        connect_timeout=1,
    )
    with pytest.raises(fastingest.RemoteIOError, match="attempt"):
        fastingest.read_parquet(url, storage_options=s3.options(proxied=True), config=cfg)


def test_s3_read_in_forked_child_after_parent_read(s3):
    table = numeric_table(2000)
    url = s3.put("fork/n.parquet", parquet_bytes(table))
    opts = s3.options()
    assert fastingest.read_parquet(url, storage_options=opts).num_rows == 2000
    # The child must build its own runtime and connections.
    got = read_in_forked_child(
        lambda: str(
            fastingest.read_parquet(url, storage_options=opts, columns=["id"]).num_rows
        ).encode()
    )
    assert got == b"2000"
    assert fastingest.read_parquet(url, storage_options=opts).num_rows == 2000


# The child installs Python's own Ctrl-C handler explicitly: a process started
# as a background job of a non-interactive shell (`make test &`, some CI
# runners) inherits SIGINT *ignored*, and Python then installs no handler, so
# no program could be interrupted there. That, not fastingest, made the
# earlier form of this test fail on some machines.
_CTRL_C_CHILD = """
import json, signal, sys, time, fastingest
signal.signal(signal.SIGINT, signal.default_int_handler)
url, options = sys.argv[1], json.loads(sys.argv[2])
for call in sys.argv[3:]:
    try:
        # Inside the try: a signal sent at once may land right after it.
        print("start", flush=True)
        if call == "read_parquet":
            fastingest.read_parquet(url, storage_options=options)
        else:
            for _ in fastingest.iter_batches(url, storage_options=options):
                pass
        print("finished", flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
"""

# Seconds after the child says "start" at which Ctrl-C is sent: at once
# (while the runtime is built and the first connection opened), early in the
# footer request, and while it hangs.
_CTRL_C_DELAYS = [0.0, 0.01, 0.05, 0.2, 0.5, 1.0]


def test_ctrl_c_interrupts_a_slow_read_at_any_moment(s3, toxi, fault_table):
    """Ctrl-C at any moment of a read, its first milliseconds included,
    raises KeyboardInterrupt within a bounded time, for the one-shot read and
    for the batch stream, one read after another in the same process."""
    import json
    import signal
    import subprocess
    import sys
    import time

    url, _ = _put_fault_file(s3, fault_table)
    # Requests get no answer: without Ctrl-C each read would wait out its
    # request timeout (60 s).
    toxi.add_toxic("s3", "timeout", {"timeout": 0})
    calls = [
        ("read_parquet" if i % 2 == 0 else "iter_batches", delay)
        for i, delay in enumerate(_CTRL_C_DELAYS + _CTRL_C_DELAYS[::-1])
    ]
    proc = subprocess.Popen(
        [sys.executable, "-c", _CTRL_C_CHILD, url, json.dumps(s3.options(proxied=True))]
        + [call for call, _ in calls],
        stdout=subprocess.PIPE,
        text=True,
    )
    waits = []
    try:
        for call, delay in calls:
            assert proc.stdout.readline().strip() == "start"
            time.sleep(delay)
            sent = time.monotonic()
            proc.send_signal(signal.SIGINT)
            line = _readline_within(proc, 10.0)
            waits.append(time.monotonic() - sent)
            assert line == "interrupted", f"{call}, Ctrl-C after {delay} s: got {line!r}"
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # The read looks for a signal every 50 ms; allow for a loaded machine.
    assert max(waits) < 5.0, waits


def _readline_within(proc, seconds: float) -> str:
    """The child's next line, or a failure naming the wait if none comes."""
    import threading

    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(seconds)
    if not got:
        pytest.fail(f"the read did not stop within {seconds} s of Ctrl-C")
    return got[0].strip()


def test_object_replaced_mid_read_is_an_error_not_a_mixed_table(s3, toxi):
    """The first request pins the object's ETag; after the object is replaced
    the remaining requests fail with a clear error instead of mixing versions.
    The read runs in a child process so that its abandoned connections close
    with it (toxiproxy cannot remove a toxic from a connection left unread)."""
    import json
    import subprocess
    import sys
    import threading as th

    big = numeric_table(400_000)
    small = numeric_table(400_000, seed=9)
    key = "changing/n.parquet"
    s3.put(key, parquet_bytes(big, row_group_size=50_000, compression="none"))
    # Slow responses so the replacement lands between the footer and the data.
    toxi.add_toxic("s3", "slicer", {"average_size": 2000, "size_variation": 0, "delay": 1000})
    replaced = th.Event()

    def replace():
        s3.put(key, parquet_bytes(small, row_group_size=50_000, compression="none"))
        replaced.set()

    th.Timer(0.3, replace).start()
    code = (
        "import json, sys, fastingest\n"
        # 256 KiB requests count a quarter slot: 8 at once. No start asked
        # for beside the footer: all of the data comes after it.
        "cfg = fastingest.Config(slice_size='256K', near_slice_size='256K', max_in_flight=2,\n"
        "                        request_timeout=30, start_prefetch=0)\n"
        "try:\n"
        "    fastingest.read_parquet(sys.argv[1], storage_options=json.loads(sys.argv[2]),\n"
        "                            config=cfg)\n"
        "    print('read')\n"
        "except fastingest.RemoteIOError as e:\n"
        "    print('RemoteIOError', e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, s3.url(key), json.dumps(s3.options(proxied=True))],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert replaced.wait(10)
    assert out.stdout.startswith("RemoteIOError"), out.stdout + out.stderr
    assert "changed while it was being read" in out.stdout
    assert key in out.stdout


def test_decoded_footers_are_reused_only_for_the_same_version(s3):
    """A footer decoded once is kept per object version: a second read of the
    same object is the same table, and a replaced object (new ETag) is read
    with its own footer, not the kept one."""
    key = "memo/t.parquet"
    first = numeric_table(3_000, seed=1)
    url = s3.put(key, parquet_bytes(first, row_group_size=1_000))
    for _ in range(2):
        assert_tables_equal(fastingest.read_parquet(url, storage_options=s3.options()), first)
    other = pa.table({"z": pa.array(range(7), pa.int16())})
    s3.put(key, parquet_bytes(other))
    assert_tables_equal(fastingest.read_parquet(url, storage_options=s3.options()), other)


def test_small_listed_files_take_one_request_each(s3):
    """A glob lists each object's size: files under `small_file` are fetched
    whole by the footer request, so each costs one GET (plus the LIST)."""
    from .datagen import numeric_table, parquet_bytes

    tables = [numeric_table(20_000, seed=i) for i in range(6)]  # ~330 KB: > footer_prefetch
    for i, t in enumerate(tables):
        s3.put(f"small/p{i}.parquet", parquet_bytes(t))
    url = s3.url("small/*.parquet")
    stats = fastingest.ReadStats()
    got = fastingest.read_parquet(url, storage_options=s3.options(), stats=stats)
    assert got.equals(pa.concat_tables(tables))
    assert stats.requests == 1 + 6, stats  # LIST + one GET per file
    # With the threshold below the files' size, footer and data are separate.
    stats = fastingest.ReadStats()
    config = fastingest.Config(small_file=1024)
    fastingest.read_parquet(url, storage_options=s3.options(), stats=stats, config=config)
    assert stats.requests == 1 + 2 * 6, stats
    # Chunks and streams are served from the same first request.
    stats = fastingest.ReadStats()
    chunks = fastingest.read_chunks(url, storage_options=s3.options(), stats=stats)
    assert stats.requests == 1 + 6 and len(chunks) == 6 * 5
    stats = fastingest.ReadStats()
    streamed = fastingest.iter_batches(url, storage_options=s3.options(), stats=stats).read_all()
    assert streamed.equals(got) and stats.requests == 1 + 6


def test_s3_stream_fetches_its_first_row_group_first_in_finer_requests(s3, toxi):
    """A stream's first row group goes alone, through a link with round trips
    in requests of about 1 MiB (more connections bring it sooner), as the
    rest of the stream and the whole read do there; from a near store in the
    plan's own slices (there each request costs the server more than a round
    trip); its first 64 Ki rows come as a batch of their own; the rows are
    those of the whole read."""
    import numpy as np

    rows = 1_600_000  # 2 row groups of 12.8 MB: the plan's requests are 3.2 MB
    rng = np.random.default_rng(3)
    table = pa.table({"a": rng.integers(0, 2**62, rows), "b": rng.random(rows)})
    data = parquet_bytes(table, row_group_size=rows // 2, compression="none")
    url = s3.put("stream/first.parquet", data)
    first_group = pq.ParquetFile(pa.BufferReader(data)).metadata.row_group(0)
    assert first_group.total_byte_size > 12 << 20
    cfg = fastingest.Config(start_prefetch=0, long_footer_prefetch=0)

    def read_and_stream(opts: dict) -> tuple[int, int]:
        whole = fastingest.ReadStats()
        want = fastingest.read_parquet(url, storage_options=opts, config=cfg, stats=whole)
        streamed = fastingest.ReadStats()
        stream = fastingest.iter_batches(url, storage_options=opts, config=cfg, stats=streamed)
        batches = list(stream)
        assert batches[0].num_rows == 65_536
        assert pa.Table.from_batches(batches).equals(want)
        assert streamed.bytes_needed == whole.bytes_needed
        return whole.requests, streamed.requests

    # A loaded loopback may answer a footer late; near in one of three tries.
    near = [read_and_stream(s3.options()) for _ in range(3)]
    assert any(streamed == whole for whole, streamed in near), near
    toxi.add_toxic("s3", "latency", {"latency": 30})
    whole, streamed = read_and_stream(s3.options(proxied=True))
    # Requests of at most 1.5 MiB: the first row group's cut to 1 MiB, the
    # rest spread over the request slots.
    finest = 1 + -(-first_group.total_byte_size * 2 // (3 << 19))
    assert whole >= finest and streamed >= finest, (streamed, whole, finest)


def test_s3_stream_from_a_distant_store_fetches_the_rest_beside_the_first_row_group(s3, toxi):
    """From a store a region away (its footer answered in 60 ms or more) the
    rest of a stream is asked for half a round trip after its first row group
    (which has the link to itself meanwhile), not after that row group's
    first batch: the last batch then comes about half a round trip after the
    first, not one more whole round trip."""
    import time

    import numpy as np

    rows = 800_000  # 4 row groups of 3.2 MB: the first alone, the rest a window
    rng = np.random.default_rng(5)
    table = pa.table({"a": rng.integers(0, 2**62, rows), "b": rng.random(rows)})
    url = s3.put("stream/distant.parquet", parquet_bytes(table, row_group_size=rows // 4))
    latency = 300  # ms; far past the 60 ms that makes a store distant
    toxi.add_toxic("s3", "latency", {"latency": latency})
    cfg = fastingest.Config(start_prefetch=0, long_footer_prefetch=0)
    stream = iter(
        fastingest.iter_batches(url, storage_options=s3.options(proxied=True), config=cfg)
    )
    batches = [next(stream)]
    first = time.perf_counter()
    batches += list(stream)
    after_first = (time.perf_counter() - first) * 1000
    assert pa.Table.from_batches(batches).equals(table)
    # Fetched after the first batch, the rest would take a round trip more
    # (300 ms and up); asked for half a round trip after the first row
    # group, its bytes come about 150 ms after that row group's.
    assert after_first < latency * 0.85, after_first


def test_a_decoded_span_s_memory_holds_the_read_s_later_output(s3):
    """The blocks of spans fetched from a store, once decoded, serve the
    read's later large allocations (its output), whatever thread frees or
    asks; none is held once the reads end, concurrent reads sharing them get
    their own tables right, and `FASTINGEST_REUSE_SPANS=0` turns it off."""
    import json
    import os
    import subprocess
    import sys
    import time
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    rng = np.random.default_rng(7)
    groups, rows = 8, 300_000
    table = pa.table({"a": rng.integers(0, 2**62, groups * rows)})
    data = parquet_bytes(table, compression="none", use_dictionary=False, row_group_size=rows)
    url = s3.put("reuse/spans.parquet", data)
    opts = s3.options()
    lib = fastingest._fastingest
    assert lib._allocator_reuses_spans()

    def none_kept_soon() -> bool:
        # The read's last tasks may end on the runtime's threads just after
        # it returns; the last one gives the kept blocks back.
        deadline = time.monotonic() + 10
        while lib._allocator_reuse()[1] and time.monotonic() < deadline:
            time.sleep(0.01)
        return lib._allocator_reuse()[1] == 0

    before, _ = lib._allocator_reuse()
    assert_tables_equal(fastingest.read_parquet(url, storage_options=opts), table)
    # A row group's 2.4 MB of output fits the span of one decoded before it.
    assert lib._allocator_reuse()[0] - before >= 2 << 20, (before, lib._allocator_reuse())
    assert none_kept_soon()

    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda _: fastingest.read_parquet(url, storage_options=opts), range(8)))
    for t in got:
        assert_tables_equal(t, table)
    assert none_kept_soon()

    code = (
        "import sys, json, fastingest, pyarrow.parquet as pq\n"
        "lib = fastingest._fastingest\n"
        "t = fastingest.read_parquet(sys.argv[1], storage_options=json.loads(sys.argv[2]))\n"
        "print(lib._allocator_reuses_spans(), lib._allocator_reuse()[0], t.num_rows)"
    )
    env = {**os.environ, "FASTINGEST_REUSE_SPANS": "0"}
    out = subprocess.run(
        [sys.executable, "-c", code, url, json.dumps(opts)], capture_output=True, text=True, env=env
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "0", str(table.num_rows)]


def _one_large_row_group() -> pa.Table:
    """One row group of over 8 MiB: through a link its columns are decoded
    one by one as their bytes arrive, then joined."""
    import numpy as np

    rows = 400_000
    rng = np.random.default_rng(23)
    words = pa.array([f"word-{i:05d}" + "z" * (i % 17) for i in range(20_000)])
    return pa.table(
        {
            "i64": rng.integers(-(2**60), 2**60, rows),
            "s": pa.array(
                words.take(pa.array(rng.integers(0, 20_000, rows))), mask=rng.random(rows) < 0.1
            ),
            # Left to the `parquet` crate: decoded at the join.
            "h": pa.array(rng.random(rows).astype(np.float16)),
            "st": pa.StructArray.from_arrays(
                [pa.array(np.arange(rows) % 5), pa.array(rng.random(rows))], ["a", "b"]
            ),
            "l": pa.array([[i % 7] * (i % 3) for i in range(rows)], pa.list_(pa.int32())),
        }
    )


def test_a_large_row_group_through_a_link_reads_as_one(s3, toxi):
    table = _one_large_row_group()
    data = parquet_bytes(table, row_group_size=len(table))
    assert pq.ParquetFile(pa.BufferReader(data)).metadata.row_group(0).total_byte_size > 8 << 20
    url = s3.put("large-row-group.parquet", data)
    toxi.add_toxic("s3", "latency", {"latency": 20, "jitter": 5})
    toxi.add_toxic("s3", "bandwidth", {"rate": 20_000})
    opts = s3.options(proxied=True)
    written = pq.read_table(pa.BufferReader(data))
    assert_tables_equal(fastingest.read_parquet(url, storage_options=opts), written)
    # Some columns only; the crate's alone beside one of fastingest's.
    for columns in (["l", "s"], ["h", "i64"], ["st"]):
        got = fastingest.read_parquet(url, columns=columns, storage_options=opts)
        assert_tables_equal(got, written.select(columns))
    # A filter decodes its own columns first instead.
    got = fastingest.read_parquet(url, filters=[("i64", "<", 0)], storage_options=opts)
    want = pq.read_table(pa.BufferReader(data), filters=[("i64", "<", 0)])
    assert_tables_equal(got, want)


def test_a_damaged_chunk_of_a_large_row_group_through_a_link_names_the_file(s3, toxi):
    table = _one_large_row_group()
    data = bytearray(parquet_bytes(table, row_group_size=len(table)))
    column = pq.ParquetFile(pa.BufferReader(bytes(data))).metadata.row_group(0).column(1)
    start = column.dictionary_page_offset or column.data_page_offset
    data[start : start + 64] = b"\xff" * 64  # the string column's first page header
    url = s3.put("damaged-large-row-group.parquet", bytes(data))
    toxi.add_toxic("s3", "latency", {"latency": 20, "jitter": 5})
    with pytest.raises(fastingest.CorruptFileError, match="damaged-large-row-group.parquet"):
        fastingest.read_parquet(url, storage_options=s3.options(proxied=True))
    # The other columns read.
    got = fastingest.read_parquet(
        url, columns=["i64", "h"], storage_options=s3.options(proxied=True)
    )
    assert_tables_equal(got, table.select(["i64", "h"]))
