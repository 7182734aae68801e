"""Type stubs for fastingest (hand-written)."""

from collections.abc import Sequence
from os import PathLike
from typing import Any, Literal, Self, TypeAlias

import pyarrow as pa

from . import exceptions as exceptions
from .exceptions import (
    CacheWarning as CacheWarning,
)
from .exceptions import (
    ColumnNotFoundError as ColumnNotFoundError,
)
from .exceptions import (
    CorruptFileError as CorruptFileError,
)
from .exceptions import (
    DeviceError as DeviceError,
)
from .exceptions import (
    DeviceUnavailableError as DeviceUnavailableError,
)
from .exceptions import (
    FastIngestError as FastIngestError,
)
from .exceptions import (
    InvalidArgumentError as InvalidArgumentError,
)
from .exceptions import (
    NotFoundError as NotFoundError,
)
from .exceptions import (
    PermissionDeniedError as PermissionDeniedError,
)
from .exceptions import (
    RemoteIOError as RemoteIOError,
)
from .exceptions import (
    RequestTimeoutError as RequestTimeoutError,
)
from .exceptions import (
    SchemaMismatchError as SchemaMismatchError,
)
from .exceptions import (
    UnsupportedError as UnsupportedError,
)

__version__: str

Source: TypeAlias = str | PathLike[str] | Sequence[str | PathLike[str]]
"""A path, a ``file://``, ``s3://``, ``gs://``, ``az://``/``abfs[s]://``,
``http(s)://`` or ``memory://`` URL, a glob of those (``*``, ``?``, ``[..]``,
``**``), or a list of any of these. Files are read in the given order; a
glob's matches in sorted order."""

Op: TypeAlias = Literal["==", "=", "!=", "<", "<=", ">", ">=", "in", "not in"]
Term: TypeAlias = tuple[str, Op, Any]
Filters: TypeAlias = Sequence[Term] | Sequence[Sequence[Term]]
"""pyarrow's DNF: a list of (column, op, value) tuples is an AND; a list of
such lists is an OR of ANDs. Rows where a comparison is null do not match."""

class Config:
    """Fetch tuning. Keyword arguments override ``FASTINGEST_<NAME>``
    environment variables, which override the defaults.

    Sizes accept ints or strings such as ``"8M"``; durations are seconds.

    - ``footer_prefetch`` (64 KiB): bytes read from the end of each file in the
      first request; a second request only when the footer is larger.
    - ``small_file`` (1 MiB): a remote file that a glob listed at most this big
      is fetched whole in its first request (one request per file, not two).
    - ``hole_limit`` (64 KiB): ranges closer than this are fetched together.
    - ``slice_size`` (8 MiB): the largest single request; longer ranges are
      split and fetched in parallel into one buffer.
    - ``max_in_flight`` (32): requests in flight at once, all files together.
    - ``memory_budget`` (512 MiB): bytes of requests in flight at once.
    - ``max_retries`` (5), ``retry_backoff`` (0.1 s), ``retry_backoff_max``
      (5 s): retries of transient failures, exponential backoff with jitter.
    - ``request_timeout`` (60 s): one attempt, first byte to last.
    - ``connect_timeout`` (5 s).
    - ``decode_parallelism`` (0 = one per core): row groups decoded at once.
    """

    footer_prefetch: int
    small_file: int
    hole_limit: int
    slice_size: int
    max_in_flight: int
    memory_budget: int
    max_retries: int
    retry_backoff: float
    retry_backoff_max: float
    request_timeout: float
    connect_timeout: float
    decode_parallelism: int
    def __init__(self, **kwargs: float | str) -> None: ...
    def to_dict(self) -> dict[str, int | float]: ...

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
    def __init__(self) -> None: ...
    def to_dict(self) -> dict[str, int | float]: ...

Size: TypeAlias = int | str
"""A byte count: an int, or text such as ``"512M"`` or ``"10G"`` (binary units)."""

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
      LIST per prefix); ``"always"`` on every read; a number: after that many
      seconds. A changed object's old bytes are dropped, never served.

    The directory is created with mode 0700. Names in it are hashes: no
    credentials or URL signatures are written.
    """

    def __init__(
        self,
        path: str | PathLike[str],
        *,
        max_bytes: Size | None = None,
        min_free_bytes: Size | None = None,
        validate: Literal["immutable", "once", "always"] | float = "once",
    ) -> None: ...
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

CacheArg: TypeAlias = Cache | str | PathLike[str] | bool | None

def read_parquet(
    source: Source,
    *,
    columns: Sequence[str] | None = None,
    filters: Filters | None = None,
    row_groups: Sequence[int] | None = None,
    storage_options: dict[str, Any] | None = None,
    config: Config | None = None,
    stats: ReadStats | None = None,
    cache: CacheArg = None,
) -> pa.Table:
    """Read Parquet into a ``pyarrow.Table`` equal to ``pyarrow.parquet.read_table``
    with the same arguments (schema with its metadata, rows, order).

    - ``columns``: top-level names or dotted paths into structs, returned in
      this order.
    - ``filters``: rows to keep; row groups whose statistics rule them out are
      not fetched at all.
    - ``row_groups``: indices into the file (a single file only).
    - ``storage_options``: object_store keys for the URL's backend, e.g.
      ``access_key_id``, ``secret_access_key``, ``endpoint_url``, ``region``,
      ``allow_http``; ``AWS_*``/``GOOGLE_*``/``AZURE_*`` variables also apply.
    - ``cache``: a :class:`Cache`, a cache directory, or ``False``; by default
      the cache ``FASTINGEST_CACHE_DIR`` names, if any.

    The GIL is released for the whole read; Ctrl-C cancels it.
    """

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
    def __exit__(self, *exc: object) -> None: ...

def iter_batches(
    source: Source,
    *,
    columns: Sequence[str] | None = None,
    filters: Filters | None = None,
    row_groups: Sequence[int] | None = None,
    storage_options: dict[str, Any] | None = None,
    config: Config | None = None,
    stats: ReadStats | None = None,
    cache: CacheArg = None,
) -> BatchStream:
    """:func:`read_parquet` as a stream: every footer is read first (the schema
    is known and checked across files), then each row group's batches are
    handed over as soon as they are decoded, while later bytes are still being
    fetched; the next files' fetch starts while the current one is consumed.
    A slow consumer holds the read back (a few batches and two files ahead),
    so a dataset larger than memory can be streamed."""

async def read_parquet_async(
    source: Source,
    *,
    columns: Sequence[str] | None = None,
    filters: Filters | None = None,
    row_groups: Sequence[int] | None = None,
    storage_options: dict[str, Any] | None = None,
    config: Config | None = None,
    stats: ReadStats | None = None,
    cache: CacheArg = None,
) -> pa.Table:
    """:func:`read_parquet` as a coroutine; the event loop stays free."""

def plan_parquet(
    source: Source,
    *,
    columns: Sequence[str] | None = None,
    filters: Filters | None = None,
    row_groups: Sequence[int] | None = None,
    storage_options: dict[str, Any] | None = None,
    config: Config | None = None,
    stats: ReadStats | None = None,
    cache: CacheArg = None,
) -> list[dict[str, Any]]:
    """Each file's read plan, fetching footers only: ``location``,
    ``file_size``, ``row_groups``, ``ranges`` (needed column chunks),
    ``spans`` (coalesced), ``requests`` (slices), ``bytes_needed``,
    ``bytes_to_fetch`` and ``num_requests``."""

def metadata(
    source: Source,
    *,
    storage_options: dict[str, Any] | None = None,
    config: Config | None = None,
    stats: ReadStats | None = None,
    cache: CacheArg = None,
    format: Literal["parquet", "orc"] | None = None,
) -> dict[str, Any] | list[dict[str, Any]]:
    """File metadata, read from the footer only. ``format``: by default told
    by the name (``.orc``) or else by the content.

    Parquet (``"format": "parquet"``): ``schema`` (pyarrow), ``num_rows``,
    ``num_row_groups``, ``created_by``, and ``row_groups`` with each column
    chunk's ``path``, ``codec``, ``encodings``, ``file_offset``, sizes and
    ``statistics``.

    ORC (``"format": "orc"``): ``schema``, ``num_rows``, ``num_stripes``,
    ``compression``, ``file_format_version``, ``row_index_stride``,
    ``statistics`` (per top-level column: ``num_values``, ``has_null``,
    ``min``/``max`` where the type has them), and ``stripes`` with each
    stripe's ``offset``, ``index_length``, ``data_length``, ``footer_length``,
    ``num_rows`` and ``statistics``.

    A dict for one file, a list for a glob or list."""

def read_orc(
    source: Source,
    *,
    columns: Sequence[str] | None = None,
    stripes: Sequence[int] | None = None,
    storage_options: dict[str, Any] | None = None,
    config: Config | None = None,
    stats: ReadStats | None = None,
    cache: CacheArg = None,
) -> pa.Table:
    """Read ORC into a ``pyarrow.Table`` equal to ``pyarrow.orc.read_table``
    with the same ``columns`` (returned in file order, as pyarrow does).

    The file tail comes from one speculative request, then the selected
    stripes' footers, then only the projected columns' streams (coalesced,
    sliced, fetched in parallel, through the cache when one is given);
    stripes decode while later ones are still on the wire.

    - ``columns``: top-level names.
    - ``stripes``: stripe indices (a single file only).
    """

async def read_orc_async(
    source: Source,
    *,
    columns: Sequence[str] | None = None,
    stripes: Sequence[int] | None = None,
    storage_options: dict[str, Any] | None = None,
    config: Config | None = None,
    stats: ReadStats | None = None,
    cache: CacheArg = None,
) -> pa.Table:
    """:func:`read_orc` as a coroutine; the event loop stays free."""

def plan_orc(
    source: Source,
    *,
    columns: Sequence[str] | None = None,
    stripes: Sequence[int] | None = None,
    storage_options: dict[str, Any] | None = None,
    config: Config | None = None,
    stats: ReadStats | None = None,
    cache: CacheArg = None,
) -> list[dict[str, Any]]:
    """Each ORC file's read plan (tail and stripe footers are fetched, column
    streams are not): ``location``, ``file_size``, ``stripes``, ``ranges``
    (the projected streams), ``spans``, ``requests``, ``bytes_needed``,
    ``bytes_to_fetch``, ``num_requests``."""

# --- raw column chunks and the GPU --------------------------------------------

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

class Chunk(ChunkInfo):
    """One column chunk's bytes in host memory: exactly the file's bytes at
    ``file_offset``. Supports the (read-only) buffer protocol:
    ``memoryview(chunk)`` does not copy."""

    def __buffer__(self, flags: int) -> memoryview: ...

class ChunkSet:
    """The column chunks of a read, in file, row-group and column order."""

    def __len__(self) -> int: ...
    def __getitem__(self, index: int) -> Chunk: ...
    def __iter__(self) -> Any: ...
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
    ) -> DeviceChunkSet:
        """Uploads every chunk to ``device`` (``0``, ``"cuda:1"``; ``"cpu"``
        runs the same pipeline into host memory) through a bounded pool of
        pinned staging buffers (``staging_buffers`` × ``staging_size``,
        default 4 × 8 MiB) on ``streams`` copy streams (default 2). Returns
        when every copy has completed, so ``stream`` needs no synchronisation.
        Raises :class:`DeviceUnavailableError` without a GPU."""

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

class DeviceChunkSet:
    """Column chunks in one device allocation, each 256-byte aligned."""

    def __len__(self) -> int: ...
    def __getitem__(self, index: int) -> DeviceChunk: ...
    def __iter__(self) -> Any: ...
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
        ``wait_for_data_s``, ``staging_copy_s``, ``total_s``."""

def read_chunks(
    source: Source,
    *,
    columns: Sequence[str] | None = None,
    row_groups: Sequence[int] | None = None,
    filters: Filters | None = None,
    storage_options: dict[str, Any] | None = None,
    config: Config | None = None,
    stats: ReadStats | None = None,
    cache: CacheArg = None,
    device: int | str | None = None,
    staging_size: int | None = None,
    staging_buffers: int | None = None,
    streams: int | None = None,
) -> Any:
    """The raw column chunks a read selects (compressed and encoded, exactly
    the file's bytes) with their metadata, fetched with the same plan,
    retries and cache as :func:`read_parquet`. ``filters`` prune row groups
    by their statistics; chunks are always whole (apply the filter after
    decoding). Returns a :class:`ChunkSet`; with ``device``, each chunk is
    uploaded while later ones are still on the network, and a
    :class:`DeviceChunkSet` is returned."""

def cuda_available() -> bool:
    """Whether CUDA uploads can run here (CUDA build, driver, a device)."""

def cuda_device_count() -> int:
    """CUDA devices; raises :class:`DeviceUnavailableError` saying why there are none."""

def to_torch(data: Any, device: Any = "cuda:0", *, strings: str = "error") -> dict[str, Any]:
    """Columns of a pyarrow Table (or batches) as ``dict[str, torch.Tensor]``:
    integers, floats, booleans; dates, times and timestamps as int64. A column
    with nulls adds ``"<name>.validity"``. Strings raise naming the column,
    unless ``strings="offsets"`` (``"<name>"`` bytes as uint8 and
    ``"<name>.offsets"`` int64). CPU tensors share Arrow's buffers where the
    layout allows; CUDA tensors are copied through pinned memory."""

def read_torch(
    source: Source, device: Any = "cuda:0", *, strings: str = "error", **read_args: Any
) -> dict[str, Any]:
    """:func:`read_parquet` (``read_args`` are its keywords) then :func:`to_torch`."""
