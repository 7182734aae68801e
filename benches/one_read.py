"""One timed read in a fresh process, so that peak memory is the reader's own.

    python benches/one_read.py '<json spec>'

The spec names the reader, the source (a file, or a folder of files), the
MinIO credentials when remote, the columns, optional filters (a list of
``[column, op, value]`` triples, ANDed; fastingest, pyarrow and polars
readers), and fastingest's config and cache. Prints one JSON line: seconds,
rows, peak RSS and RSS before the read (MiB), and fastingest's own counters
when it is the reader.

With ``"repeat": N`` the same read runs N times in this one process and
``seconds`` is the last one's (the steady state a pipeline sees: imports,
thread pools, connections and allocator already warm); ``all_seconds`` has
every read's. Between reads the page cache is put back the way the caller
had it before the first (``"page_cache": "evict"`` or ``"warm"``, over the
files at ``"local"``: a file, or a folder's Parquet files), so that a
cold-disk read stays cold.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

Spec = dict[str, Any]
READERS: dict[str, Callable[[Spec], Callable[[], Any]]] = {}
# Readers that can hand over a first batch before the whole read is done,
# for the time-to-first-batch measure: each returns the first batch.
STREAMERS: dict[str, Callable[[Spec], Callable[[], Any]]] = {}
REMOTE_ONLY = {"s3fs", "fsspec-parquet", "obstore"}
SINGLE_FILE_ONLY = {"fsspec-parquet"}


def reader(name: str):
    """Registers a reader: a function of the spec returning the timed call."""

    def register(make: Callable[[Spec], Callable[[], Any]]):
        READERS[name] = make
        return make

    return register


def _status(field: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1]) / 1024
    return 0.0


def peak_rss_mib() -> float:
    """This process's peak RSS (VmHWM). Not ru_maxrss: Linux carries that
    over from the parent across fork and exec."""
    return _status("VmHWM:")


def rss_mib() -> float:
    return _status("VmRSS:")


def parquet_files(path: Path) -> list[Path]:
    """The file, or a folder's Parquet files (a source's local files)."""
    return sorted(path.glob("*.parquet")) if path.is_dir() else [path]


def drop_page_cache(paths: list[Path]) -> bool:
    """Evicts the files from the page cache (POSIX_FADV_DONTNEED needs no
    privilege for clean pages); False where that is not available."""
    if not hasattr(os, "posix_fadvise"):
        return False
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    return True


def warm_page_cache(paths: list[Path]) -> None:
    """Reads the files whole, so that the read after it finds them in the
    page cache (what a second read of the same files meets). Through one
    1 MiB buffer: a reader's process doing this keeps its peak RSS."""
    buf = bytearray(1 << 20)
    for p in paths:
        with open(p, "rb", buffering=0) as f:
            while f.readinto(buf):
                pass


def set_page_cache(spec: Spec) -> None:
    """Puts the spec's files in the page cache state it names, if any."""
    # The folder, not its file names: 2,000 of them would near the 128 KiB
    # that Linux allows one command-line argument.
    if spec.get("page_cache") == "evict":
        drop_page_cache(parquet_files(Path(spec["local"])))
    elif spec.get("page_cache") == "warm":
        warm_page_cache(parquet_files(Path(spec["local"])))


def storage_options(s3: dict | None) -> dict | None:
    """fastingest's storage options for the benchmark's MinIO."""
    if not s3:
        return None
    return {
        "endpoint_url": s3["endpoint"],
        "access_key_id": s3["key"],
        "secret_access_key": s3["secret"],
        "region": "us-east-1",
        "allow_http": "true",
    }


def pyarrow_fs(url: str, s3: dict | None):
    """pyarrow's S3 filesystem and path for `url` (None and the path if local)."""
    if not s3:
        return None, url
    import pyarrow.fs as pafs

    fs = pafs.S3FileSystem(
        access_key=s3["key"],
        secret_key=s3["secret"],
        region="us-east-1",
        endpoint_override=s3["endpoint"].removeprefix("http://"),
        scheme="http",
    )
    return fs, url.removeprefix("s3://")


def _filters(spec: Spec) -> list[tuple] | None:
    """The spec's filters as DNF tuples (JSON makes them lists)."""
    return [tuple(f) for f in spec["filters"]] if spec.get("filters") else None


def _polars_predicate(filters: list[tuple]):
    """The filters as one polars expression."""
    import operator

    import polars as pl

    ops = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
    ops.update({"=": operator.eq, "==": operator.eq, "!=": operator.ne})
    return pl.all_horizontal([ops[op](pl.col(c), v) for c, op, v in filters])


def _glob(spec: Spec) -> str:
    """The source as a glob when it is a folder of files."""
    url = spec["url"]
    return url.rstrip("/") + "/*.parquet" if spec.get("folder") else url


def _fastingest(spec: Spec, read_name: str, **more: Any) -> Callable[[], Any]:
    import fastingest

    cache: Any = False
    if spec.get("cache"):
        c = spec["cache"]
        cache = fastingest.Cache(c["dir"], validate=c["validate"], min_free_bytes=0)
    stats = fastingest.ReadStats()
    spec["_stats"] = stats
    read = getattr(fastingest, read_name)
    kwargs = {
        "storage_options": storage_options(spec.get("s3")),
        "config": fastingest.Config(**spec.get("config", {})),
        "cache": cache,
        "stats": stats,
        "columns": spec.get("columns"),
        "filters": _filters(spec),
        **more,
    }
    source = _glob(spec)
    return lambda: read(source, **kwargs)


@reader("fastingest")
def _fi(spec: Spec):
    return _fastingest(spec, "read_parquet")


@reader("fastingest-warm")
def _fi_warm(spec: Spec):
    return _fastingest(spec, "read_parquet")


@reader("fastingest-chunks")
def _fi_chunks(spec: Spec):
    return _fastingest(spec, "read_chunks")


@reader("fastingest-view")
def _fi_view(spec: Spec):
    import pyarrow as pa

    # Strings as views (`binary_type`): what a pipeline headed to polars asks for.
    return _fastingest(spec, "read_parquet", binary_type=pa.binary_view())


@reader("fastingest-orc")
def _fi_orc(spec: Spec):
    return _fastingest(spec, "read_orc")


@reader("pyarrow")
def _pa(spec: Spec):
    import pyarrow.parquet as pq

    fs, path = pyarrow_fs(spec["url"], spec.get("s3"))
    cols, filters = spec.get("columns"), _filters(spec)
    return lambda: pq.read_table(path, filesystem=fs, columns=cols, filters=filters)


@reader("pyarrow-dataset")
def _pa_ds(spec: Spec):
    import pyarrow.dataset as ds

    fs, path = pyarrow_fs(spec["url"], spec.get("s3"))
    return lambda: ds.dataset(path, format="parquet", filesystem=fs).to_table(
        columns=spec.get("columns")
    )


@reader("pyarrow-orc")
def _pa_orc(spec: Spec):
    import pyarrow.orc as orc

    fs, path = pyarrow_fs(spec["url"], spec.get("s3"))
    return lambda: orc.read_table(path, filesystem=fs, columns=spec.get("columns"))


def _polars_options(s3: dict | None) -> dict | None:
    if not s3:
        return None
    return {
        "aws_endpoint_url": s3["endpoint"],
        "aws_access_key_id": s3["key"],
        "aws_secret_access_key": s3["secret"],
        "aws_region": "us-east-1",
        "aws_allow_http": "true",
    }


@reader("polars")
def _pl(spec: Spec):
    import polars as pl

    opts = _polars_options(spec.get("s3"))
    if not spec.get("filters"):
        return lambda: pl.read_parquet(
            _glob(spec), columns=spec.get("columns"), storage_options=opts
        )
    # read_parquet takes no filter: the same read as a filtered scan.
    predicate = _polars_predicate(_filters(spec))

    def run():
        lf = pl.scan_parquet(_glob(spec), storage_options=opts).filter(predicate)
        return lf.select(spec["columns"]).collect() if spec.get("columns") else lf.collect()

    return run


@reader("polars-scan")
def _pl_scan(spec: Spec):
    import polars as pl

    opts = _polars_options(spec.get("s3"))

    def run():
        lf = pl.scan_parquet(_glob(spec), storage_options=opts)
        if spec.get("columns"):
            lf = lf.select(spec["columns"])
        return lf.collect()

    return run


def _s3fs(s3: dict):
    import s3fs

    return s3fs.S3FileSystem(
        key=s3["key"],
        secret=s3["secret"],
        endpoint_url=s3["endpoint"],
        client_kwargs={"region_name": "us-east-1"},
    )


@reader("s3fs")
def _s3fs_pa(spec: Spec):
    import pyarrow.parquet as pq

    fs = _s3fs(spec["s3"])
    path = spec["url"].removeprefix("s3://")
    return lambda: pq.read_table(path, filesystem=fs, columns=spec.get("columns"))


@reader("fsspec-parquet")
def _fsspec_parquet(spec: Spec):
    import fsspec.parquet
    import pyarrow.parquet as pq

    s3 = spec["s3"]
    options = {
        "key": s3["key"],
        "secret": s3["secret"],
        "endpoint_url": s3["endpoint"],
        "client_kwargs": {"region_name": "us-east-1"},
    }

    def run():
        with fsspec.parquet.open_parquet_file(
            spec["url"], storage_options=options, columns=spec.get("columns"), engine="pyarrow"
        ) as f:
            return pq.read_table(f, columns=spec.get("columns"))

    return run


@reader("obstore")
def _obstore(spec: Spec):
    """Whole objects downloaded with obstore (concurrently for a folder),
    then parsed by pyarrow from memory."""
    import asyncio

    import obstore
    import pyarrow as pa
    import pyarrow.parquet as pq
    from obstore.store import S3Store

    s3 = spec["s3"]
    bucket, key = spec["url"].removeprefix("s3://").split("/", 1)
    store = S3Store(
        bucket,
        endpoint=s3["endpoint"],
        access_key_id=s3["key"],
        secret_access_key=s3["secret"],
        region="us-east-1",
        client_options={"allow_http": True},
    )

    async def fetch_all() -> list[bytes]:
        if not spec.get("folder"):
            return [bytes(await (await obstore.get_async(store, key)).bytes_async())]
        keys = [m["path"] for batch in obstore.list(store, key.rstrip("/") + "/") for m in batch]
        gate = asyncio.Semaphore(32)

        async def one(k: str) -> bytes:
            async with gate:
                return bytes(await (await obstore.get_async(store, k)).bytes_async())

        return await asyncio.gather(*(one(k) for k in sorted(keys)))

    def run():
        blobs = asyncio.run(fetch_all())
        tables = [pq.read_table(pa.BufferReader(b), columns=spec.get("columns")) for b in blobs]
        return pa.concat_tables(tables)

    return run


def streamer(name: str):
    def register(make: Callable[[Spec], Callable[[], Any]]):
        STREAMERS[name] = make
        return make

    return register


@streamer("fastingest")
def _fi_first(spec: Spec):
    import fastingest

    kwargs = {
        "storage_options": storage_options(spec.get("s3")),
        "config": fastingest.Config(**spec.get("config", {})),
        "cache": False,
        "columns": spec.get("columns"),
    }
    return lambda: next(iter(fastingest.iter_batches(_glob(spec), **kwargs)))


@streamer("pyarrow")
def _pa_first(spec: Spec):
    import pyarrow.parquet as pq

    fs, path = pyarrow_fs(spec["url"], spec.get("s3"))
    return lambda: next(
        pq.ParquetFile(path, filesystem=fs).iter_batches(columns=spec.get("columns"))
    )


@streamer("pyarrow-dataset")
def _pa_ds_first(spec: Spec):
    import pyarrow.dataset as ds

    fs, path = pyarrow_fs(spec["url"], spec.get("s3"))
    return lambda: next(
        iter(
            ds.dataset(path, format="parquet", filesystem=fs).to_batches(
                columns=spec.get("columns")
            )
        )
    )


@streamer("polars-scan")
def _pl_first(spec: Spec):
    import polars as pl

    opts = _polars_options(spec.get("s3"))

    def run():
        lf = pl.scan_parquet(_glob(spec), storage_options=opts)
        if spec.get("columns"):
            lf = lf.select(spec["columns"])
        return next(iter(lf.collect_batches()))

    return run


def rows_of(result: Any) -> int | None:
    if hasattr(result, "num_rows"):
        return int(result.num_rows)
    if hasattr(result, "height"):
        return int(result.height)
    return None  # a chunk set: no rows decoded


def main() -> None:
    spec = json.loads(sys.argv[1])
    import pyarrow  # noqa: F401 - imported before the baseline by every reader

    makers = STREAMERS if spec.get("first_batch") else READERS
    run = makers[spec["reader"]](spec)
    before = rss_mib()
    all_seconds = []
    stats_before: dict[str, Any] = {}
    for i in range(max(1, int(spec.get("repeat", 1)))):
        if i:  # the caller set the page cache up for the first read
            set_page_cache(spec)
        if "_stats" in spec:  # fastingest's counters add up over the reads
            stats_before = spec["_stats"].to_dict()
        started = time.perf_counter()
        result = run()
        all_seconds.append(time.perf_counter() - started)
        rows = rows_of(result)
        del result  # what a pipeline does before its next read
    report: dict[str, Any] = {
        "seconds": all_seconds[-1],
        "rows": rows,
        "peak_mib": peak_rss_mib(),
        "before_mib": before,
    }
    if len(all_seconds) > 1:
        report["all_seconds"] = all_seconds
    if "_stats" in spec:  # the last read's own
        after = spec["_stats"].to_dict()
        report["stats"] = {k: v - stats_before.get(k, 0) for k, v in after.items()}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
