"""The compiled extension (``crates/fastingest-python``). Use the wrappers in
``fastingest``: these stubs describe the classes they hand out and the raw
calls they make, and are checked against the built module by stubtest."""

from collections.abc import Iterator
from os import PathLike
from typing import Any, Literal, Self, TypeAlias, final

import pyarrow as pa
from typing_extensions import disjoint_base

__version__: str
__all__ = [
    "BatchStream",
    "Buffer",
    "Cache",
    "Chunk",
    "ChunkInfo",
    "ChunkSet",
    "Config",
    "DeviceChunk",
    "DeviceChunkSet",
    "PendingRead",
    "ReadStats",
    "Units",
    "__version__",
    "_allocator_huge_pages",
    "_allocator_prefaults",
    "_allocator_purge_delay",
    "_allocator_reuse",
    "_allocator_reuses_spans",
    "_filter_literal",
    "_flush_logs",
    "_error_classes",
    "_put",
    "cuda_available",
    "cuda_device_count",
    "iter_batches",
    "iter_orc_batches",
    "open_orc_units",
    "open_parquet_units",
    "plan_orc",
    "plan_parquet",
    "read_chunks",
    "read_any_metadata",
    "read_metadata",
    "read_orc",
    "read_orc_metadata",
    "read_orc_stripes",
    "read_parquet",
    "start_read_orc",
    "start_read_parquet",
    "take_rows",
]

Size: TypeAlias = int | str
"""A byte count: an int, or text such as ``"512M"`` or ``"10G"`` (binary units)."""

@final
class Config:
    """Fetch tuning. Keyword arguments override ``FASTINGEST_<NAME>``
    environment variables, which override the defaults.

    Sizes accept ints or strings such as ``"8M"``; durations are seconds.

    - ``footer_prefetch`` (64 KiB): bytes read from the end of each file in the
      first request; a second request only when the footer is larger. A local
      file at most twice this big is read whole by that first read.
    - ``long_footer_prefetch`` (1 MiB): a remote file whose size no listing
      gave (one path: a read, a plan, metadata; Parquet or ORC) whose footer
      request is not answered within 5 ms gets a second request beside it
      for this many bytes of its end, so a footer longer than
      ``footer_prefetch`` (a wide or long file) needs no request after the
      first answer, nor does the page index before it that a filtered read
      uses. It is cancelled as soon as that answer shows the footer fits
      (and, with a filter, once the footer shows where the page index is).
      Not asked for a Parquet object whose footer this process decoded
      before (the answer will most likely confirm that version). 0 (or
      anything up to ``footer_prefetch``) turns it off.
    - ``small_file`` (1 MiB): a remote file that a glob listed at most this big
      is fetched whole in its first request (one request per file, not two);
      so is a local file this big read for all its column chunks.
    - ``start_prefetch`` (16 MiB): ``read_parquet``, ``iter_batches`` or
      ``read_chunks`` of all of one remote file whose size no listing gave
      (one path, not a glob or a list) asks for up to this many bytes of the
      file's start beside its footer, in requests of 1 MiB, before the size
      is known: a file this small is read in one round trip instead of two,
      and a larger one's first row groups come a round trip early (a file
      over twice this big keeps only the first half of those requests). Not
      with ``columns``, ``filters``, ``row_groups`` or a cache, nor for plans
      and metadata
      (the bytes might not be wanted), nor when the footer request is
      answered within 5 ms (a store on loopback); asked with the footer
      where the store's latest footer answer in this process came later.
      0 turns it off.
    - ``hole_limit`` (512 KiB): ranges of an object store or HTTP file
      closer than this are fetched together (a request costs about what
      400-700 KB of transfer costs).
    - ``local_hole_limit`` (64 KiB): the same for a local file.
    - ``slice_size`` (8 MiB): the largest single request; longer ranges are
      split and fetched in parallel into one buffer. A read smaller than 8
      slices is cut into about 8 requests of at least 1 MiB instead. Through
      a link with round trips; a near store has ``near_slice_size``.
    - ``near_slice_size`` (16 MiB): the largest single request to a near
      store, one that answered a footer request of the read within 5 ms
      (loopback, the same rack): there each request costs the server more
      than its round trip costs the link, so fewer, larger requests bring the
      bytes sooner; a stream's first row group then goes as the plan's
      slices too, not spread over 16 requests. The same for a local file on
      a rotational disk (``local_disk``). At most ``memory_budget``;
      0: ``slice_size``.
    - ``max_in_flight`` (32): requests in flight at once, all files together;
      requests of at most 1 MiB (footers, small files) count half and those
      of at most 256 KiB (the chunks of a few columns of a wide file) a
      quarter, so up to twice and four times as many of those. From a store
      a region away (whose quickest footer answer of the read, and of the
      store's latest 8 in this process, took 60 ms or more) each request
      counts half again, and a large read is spread over
      twice as many requests: there one connection carries a fraction of
      the link.
    - ``memory_budget`` (512 MiB): bytes of requests in flight at once. A read
      or stream of local files fetches at most 64 MiB (or this, if smaller)
      ahead of decoding.
    - ``max_retries`` (5), ``retry_backoff`` (0.1 s), ``retry_backoff_max``
      (5 s): retries of transient failures, exponential backoff with jitter.
    - ``request_timeout`` (60 s): one attempt, first byte to last.
    - ``connect_timeout`` (5 s).
    - ``decode_parallelism`` (0 = two per core): row groups decoded at once, on
      at most one thread per core (a row group's columns are shared out to
      threads that fall idle).
    - ``summary_files`` (``"check"``): what a ``_metadata`` summary at the top
      of a directory or prefix does: ``"check"`` plans the files from it,
      except those modified after it; ``"trust"`` plans them all from it (a
      dataset copied in another order than it was written); ``"ignore"``
      reads every file's own footer.
    - ``map_local_files`` (``True``): local files whose bytes are in the page
      cache are read through a memory mapping: the page cache's pages are the
      fetched bytes, with no copy and no fresh buffers (bytes that must come
      from disk are read with ``pread``). A file
      cut short while it is read fails the read with an error naming it (the
      process survives: a ``SIGBUS`` handler takes care of it, and hands any
      other fault to the handler before it). Decoded data never points into
      the mapping. ``False`` reads with ``pread``. Linux only; elsewhere
      always ``pread``.
    - ``local_disk`` (``"auto"``): how local bytes that must come from disk
      are read. ``"rotational"``: few long reads (a near store's slices,
      ``near_slice_size``, and reads of 4 MiB or more two at a time; with
      ``map_local_files``, spans of 4 MiB or more read into the page cache
      through the mapping and decoded in place), for a disk that seeks or a
      virtual disk that reads concurrent streams slower than one after
      another; ``"ssd"``: many reads at once (deep queues pay on SSDs and
      NVMe); ``"auto"``: as the device says (Linux's
      ``/sys/dev/block/*/queue/rotational``), ``"ssd"`` where nothing says.
    - ``bloom_filters`` (``True``): a filter's ``==`` and ``in`` values are
      looked up in the bloom filters of their columns, where the file has
      them, and a row group whose bloom filter holds none of a term's values
      is not fetched (``ReadStats.row_groups_bloom_skipped``). Integer, date,
      timestamp, string and binary columns only; one row group's bloom
      filters are read only while they are at most half its bytes.
    - ``verify_checksums`` (``False``): each Parquet page whose header
      carries a CRC32 (parquet-mr and Spark write one; pyarrow with
      ``write_page_checksum=True``) is checked against its bytes before it
      is decoded; a mismatch raises ``CorruptFileError`` naming the file,
      the page's bytes, the row group and the column. Pages without one are
      read as they are; raw chunks (``read_chunks``) are handed over as
      stored, unchecked.
    """

    footer_prefetch: int
    long_footer_prefetch: int
    small_file: int
    start_prefetch: int
    hole_limit: int
    local_hole_limit: int
    slice_size: int
    near_slice_size: int
    max_in_flight: int
    memory_budget: int
    max_retries: int
    retry_backoff: float
    retry_backoff_max: float
    request_timeout: float
    connect_timeout: float
    decode_parallelism: int
    summary_files: str
    map_local_files: bool
    local_disk: str
    bloom_filters: bool
    verify_checksums: bool
    def __new__(cls, **kwargs: float | str) -> Self: ...
    def to_dict(self) -> dict[str, int | float | str]: ...

@final
class ReadStats:
    """Counters of the reads it is passed to (``stats=``); they accumulate."""

    files: int
    requests: int
    retries: int
    bytes_fetched: int
    bytes_needed: int
    unplanned_requests: int
    fetch_seconds: float
    decode_seconds: float
    rows: int
    cache_hits: int
    """Ranges (or pieces of ranges) served from the cache."""
    cache_misses: int
    """Ranges the cache did not hold, fetched from the store."""
    cache_corrupt: int
    """Damaged cache entries found (removed and fetched again)."""
    bytes_from_cache: int
    bytes_mapped: int
    """Of ``bytes_fetched``, those read through a mapping of a local file
    (from the page cache, without a copy: ``Config.map_local_files``)."""
    row_groups_bloom_skipped: int
    """Row groups whose bloom filters hold none of an ``==`` or ``in``
    filter's values: their column data was not fetched
    (``Config.bloom_filters``)."""
    def __init__(self) -> None: ...
    def to_dict(self) -> dict[str, int | float]: ...

@final
class Cache:
    """An on-disk cache of remote bytes (object stores and HTTP; local files
    are never cached), safe to share between threads and processes.

    Pass it as ``cache=`` to the read calls; ``cache="some/dir"`` is shorthand
    for ``Cache("some/dir")`` (one per directory and process), and
    ``FASTINGEST_CACHE_DIR`` turns a cache on for every read
    (``FASTINGEST_CACHE_MAX_BYTES``, ``..._MIN_FREE_BYTES``, ``..._VALIDATE``
    set its options); ``cache=False`` turns it off.

    - ``max_bytes``: most bytes the cache holds. Above 90 % of it, least
      recently used entries are evicted in the background down to 75 %; a
      write that would pass the limit is skipped.
    - ``min_free_bytes`` (1 GiB): space left free on the disk whatever
      ``max_bytes`` says; short of it, reads go uncached (one
      :class:`CacheWarning`) while eviction frees space.
    - ``validate``: when cached objects are checked against the store:
      ``"immutable"`` never (warm reads make no request, glob listings are
      cached too); ``"once"`` once per process (a HEAD per object, or one
      LIST per prefix; a forked child trusts what its parent validated);
      ``"always"`` on every read; a number: after that many
      seconds. A changed object's old bytes are dropped, never served.

    The directory is created with mode 0700. Names in it are hashes: no
    credentials or URL signatures are written.
    """

    def __new__(
        cls,
        path: str | PathLike[str],
        *,
        max_bytes: Size | None = None,
        min_free_bytes: Size | None = None,
        validate: Literal["immutable", "once", "always"] | float | None = None,
    ) -> Self: ...
    @property
    def path(self) -> PathLike[str]: ...
    @property
    def max_bytes(self) -> int | None: ...
    @property
    def min_free_bytes(self) -> int: ...
    @property
    def validate(self) -> str: ...
    def info(self) -> dict[str, Any]:
        """``path``, ``bytes``, ``entries``, ``objects``, ``hits``, ``misses``,
        ``hit_ratio``, ``bytes_served``, ``corrupt`` (counters of every process
        that used the directory), and the options."""
    def prune(self, max_bytes: Size | None = None) -> dict[str, int]:
        """Evicts least-recently-used entries down to ``max_bytes`` (default:
        75 % of the cache's own limit). Returns ``entries_removed`` and
        ``bytes_removed``."""
    def clear(self) -> dict[str, int]:
        """Deletes every entry, record and listing."""
    def _take_warnings(self) -> list[str]: ...

@final
class BatchStream:
    """The batches of a read, in file and row order; iterate it, or
    ``read_all()``. Closing it (or dropping it) stops the read."""

    @property
    def schema(self) -> pa.Schema: ...
    def __iter__(self) -> Self: ...
    def __next__(self) -> pa.RecordBatch: ...
    def read_all(self) -> pa.Table:
        """The batches not yet taken, as one table."""
    def close(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, _t: object, _v: object, _tb: object) -> None: ...

@final
class Units:
    """A Parquet or ORC dataset whose footers are read, streamed by unit
    (row group, stripe) in any order: the reader under ``fastingest.torch``,
    ``fastingest.ray`` and ``fastingest.dask``."""

    @property
    def schema(self) -> pa.Schema: ...
    def units(self) -> list[tuple[int, int, int, int, int]]:
        """``(file, index, num_rows, fetch_bytes, decoded_bytes)`` per unit."""
    def locations(self) -> list[str]:
        """The files, for display (no credentials or URL signatures)."""
    def sources(self) -> list[str]:
        """What opens each file again (a presigned URL keeps its signature)."""
    def partitions(self) -> pa.RecordBatch | None:
        """The partition keys, one row per file; ``None`` without any."""
    def stream(self, order: list[int], ahead_bytes: int) -> BatchStream:
        """Units ``order`` as one filtered batch each, in that order."""

@disjoint_base
class ChunkInfo:
    """What a column chunk is (shared by :class:`Chunk` and :class:`DeviceChunk`)."""

    @property
    def source(self) -> str:
        """The file, as named in the read."""
    @property
    def file(self) -> int:
        """Index of the file in the set (into ``sources`` and ``footers``)."""
    @property
    def row_group(self) -> int: ...
    @property
    def column(self) -> str:
        """Dotted Parquet path of the leaf (``a``, ``s.x``, ``l.list.element``)."""
    @property
    def leaf(self) -> int:
        """Leaf column index in the file's schema."""
    @property
    def file_offset(self) -> int:
        """Where the chunk starts in the file (its dictionary page, if any)."""
    @property
    def length(self) -> int:
        """Bytes, compressed, page headers included."""
    @property
    def codec(self) -> str:
        """``UNCOMPRESSED``, ``SNAPPY``, ``GZIP``, ``BROTLI``, ``LZ4``, ``ZSTD``, ``LZ4_RAW``."""
    @property
    def num_values(self) -> int: ...
    @property
    def physical_type(self) -> str:
        """``BOOLEAN``, ``INT32``, ``INT64``, ``INT96``, ``FLOAT``, ``DOUBLE``,
        ``BYTE_ARRAY`` or ``FIXED_LEN_BYTE_ARRAY``."""
    @property
    def logical_type(self) -> str | None: ...
    def __len__(self) -> int: ...

@final
class Chunk(ChunkInfo):
    """One column chunk's bytes in host memory: exactly the file's bytes at
    ``file_offset``. Supports the (read-only) buffer protocol:
    ``memoryview(chunk)`` does not copy."""

    def __buffer__(self, flags: int) -> memoryview: ...

@final
class Buffer:
    """Bytes fetched by fastingest (a raw ORC stripe), shared without a copy
    through the read-only buffer protocol: ``memoryview(buf)``, ``bytes(buf)``."""

    def __buffer__(self, flags: int) -> memoryview: ...
    def __len__(self) -> int: ...

@final
class PendingRead:
    """A read started for a coroutine; cancelling it stops the read."""

    def cancel(self) -> None: ...
    def done(self) -> bool: ...

@final
class ChunkSet:
    """The column chunks of a read, in file, row-group and column order."""

    def __len__(self) -> int: ...
    def __getitem__(self, index: int, /) -> Chunk: ...
    def __iter__(self) -> Iterator[Chunk]: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def sources(self) -> list[str]: ...
    @property
    def footers(self) -> list[bytes]:
        """Each file's footer (Thrift ``FileMetaData``, original offsets, no
        page index): what cuDF's hybrid-scan reader is built from."""
    def to_parquet_bytes(self) -> bytes:
        """A minimal Parquet file holding exactly these row groups and columns
        (footer rewritten with the new offsets; several files join when their
        selected schemas agree). ``cudf.read_parquet`` accepts it as host bytes."""
    def to_device(
        self,
        device: int | str | None = None,
        stream: Any = None,
        *,
        staging_size: int | None = None,
        staging_buffers: int | None = None,
        streams: int | None = None,
        staging_threads: int | None = None,
    ) -> DeviceChunkSet:
        """Uploads every chunk to ``device`` (``0``, ``"cuda:1"``; ``"cpu"``
        runs the same pipeline into host memory): ``staging_threads`` threads
        (default: one per core, up to 8) copy parts of at most
        ``staging_size`` bytes (default 8 MiB) into a bounded pool of
        ``staging_buffers`` pinned buffers (default two per thread), kept for
        later uploads, sent on ``streams`` copy streams (default 2). Returns
        when every copy has completed, so ``stream`` needs no synchronisation.
        A set from :meth:`pin` is copied straight from its page-locked memory,
        with no staging. Raises :class:`DeviceUnavailableError` without a GPU."""
    def pin(
        self, device: int | str | None = None, *, staging_threads: int | None = None
    ) -> ChunkSet:
        """A copy of the set in page-locked host memory of ``device`` (default
        ``0``), made on ``staging_threads`` threads (default one per core, up to
        8): its :meth:`to_device` then runs at the link's speed, as a torch
        copy from pinned memory does. For chunks uploaded more than once, or
        read ahead of their upload; the memory is freed with the last chunk."""

@final
class DeviceChunk(ChunkInfo):
    """One column chunk in device memory: a 1-D ``uint8`` array exported
    without copying through ``__dlpack__`` (``torch.from_dlpack``) and
    ``__cuda_array_interface__`` v3 (``cupy.asarray``); ``ptr`` and ``size``
    make it a cuDF device span."""

    @property
    def ptr(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def device(self) -> str: ...
    @property
    def __cuda_array_interface__(self) -> dict[str, Any]: ...
    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any: ...
    def __dlpack_device__(self) -> tuple[int, int]: ...

@final
class DeviceChunkSet:
    """Column chunks in one device allocation, each 256-byte aligned."""

    def __len__(self) -> int: ...
    def __getitem__(self, index: int, /) -> DeviceChunk: ...
    def __iter__(self) -> Iterator[DeviceChunk]: ...
    @property
    def device(self) -> str: ...
    @property
    def ptr(self) -> int:
        """Address of the allocation holding every chunk."""
    @property
    def nbytes(self) -> int: ...
    @property
    def footers(self) -> list[bytes]: ...
    @property
    def upload_report(self) -> dict[str, Any]:
        """``bytes``, ``copies``, ``staging_allocated``, ``staging_waits``,
        ``copies_before_last_arrival`` (> 0: the upload overlapped the fetch),
        ``wait_for_data_s``, ``staging_copy_s`` (summed over the staging threads),
        ``staging_threads``, ``total_s``."""

# The raw calls. `args` is the dict `fastingest._options.read_args` builds:
# columns, filters, row_groups, read_dictionary, binary_type, int96_unit, storage_options,
# config, stats, cache, partitioning, schema.
def read_parquet(source: Any, args: dict[str, Any]) -> pa.Table: ...
def start_read_parquet(callback: Any, source: Any, args: dict[str, Any]) -> PendingRead: ...
def iter_batches(source: Any, args: dict[str, Any]) -> BatchStream: ...
def open_parquet_units(source: Any, args: dict[str, Any]) -> Units: ...
def open_orc_units(source: Any, args: dict[str, Any]) -> Units: ...
def plan_parquet(source: Any, args: dict[str, Any]) -> list[dict[str, Any]]: ...
def read_metadata(source: Any, args: dict[str, Any]) -> list[dict[str, Any]]: ...
def read_any_metadata(source: Any, args: dict[str, Any]) -> list[dict[str, Any]]: ...
def read_orc(source: Any, args: dict[str, Any]) -> pa.Table: ...
def start_read_orc(callback: Any, source: Any, args: dict[str, Any]) -> PendingRead: ...
def plan_orc(source: Any, args: dict[str, Any]) -> list[dict[str, Any]]: ...
def read_orc_metadata(source: Any, args: dict[str, Any]) -> list[dict[str, Any]]: ...
def iter_orc_batches(source: Any, args: dict[str, Any]) -> BatchStream: ...
def read_orc_stripes(source: Any, args: dict[str, Any]) -> list[dict[str, Any]]: ...
def read_chunks(
    source: Any,
    args: dict[str, Any],
    device: Any = None,
    staging_size: int | None = None,
    staging_buffers: int | None = None,
    streams: int | None = None,
    staging_threads: int | None = None,
) -> ChunkSet | DeviceChunkSet: ...
def cuda_available() -> bool:
    """Whether CUDA uploads can run here (CUDA build, driver, a device)."""

def cuda_device_count() -> int:
    """CUDA devices; raises :class:`DeviceUnavailableError` saying why there are none."""

def _put(url: str, data: bytes, storage_options: dict[str, str] | None = None) -> None: ...
def _allocator_huge_pages() -> bool: ...
def _allocator_prefaults() -> bool: ...
def _allocator_purge_delay() -> int: ...
def _allocator_reuse() -> tuple[int, int]: ...
def _allocator_reuses_spans() -> bool: ...
def take_rows(parts: list[Any], width: int, rows: Any) -> Buffer: ...
def _filter_literal(literal: Any) -> pa.Array: ...
def _flush_logs() -> None:
    """Waits until the records logged so far have reached ``logging``."""

def _error_classes() -> list[tuple[str, str]]: ...
