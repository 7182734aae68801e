"""fastingest: planned, sliced, parallel Parquet and ORC reads from object storage and
local disk into Arrow.

    >>> import fastingest
    >>> table = fastingest.read_parquet("s3://bucket/data/*.parquet", columns=["a", "b"],
    ...                                 filters=[("a", ">", 10)])

All I/O and decoding run in Rust with the GIL released.
"""

from __future__ import annotations

import atexit
import copyreg
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal, Unpack

from . import exceptions
from ._fastingest import (
    BatchStream,
    Buffer,
    Cache,
    Chunk,
    ChunkInfo,
    ChunkSet,
    Config,
    DeviceChunk,
    DeviceChunkSet,
    ReadStats,
    __version__,
    _flush_logs,
    cuda_available,
    cuda_device_count,
)
from ._fastingest import iter_batches as _iter_batches
from ._fastingest import iter_orc_batches as _iter_orc_batches
from ._fastingest import plan_orc as _plan_orc
from ._fastingest import plan_parquet as _plan_parquet
from ._fastingest import read_any_metadata as _read_any_metadata
from ._fastingest import read_chunks as _read_chunks
from ._fastingest import read_metadata as _read_metadata
from ._fastingest import read_orc as _read_orc
from ._fastingest import read_orc_metadata as _read_orc_metadata
from ._fastingest import read_orc_stripes as _read_orc_stripes
from ._fastingest import read_parquet as _read_parquet
from ._fastingest import start_read_orc as _start_read_orc
from ._fastingest import start_read_parquet as _start_read_parquet
from ._options import (
    ORC_KEYS,
    ORC_READ_KEYS,
    ORC_STRIPE_KEYS,
    PARQUET_DECODE_KEYS,
    PARQUET_KEYS,
    PARQUET_READ_KEYS,
    PARQUET_TABLE_KEYS,
    STORE_KEYS,
    CacheArg,
    Filters,
    Metadata,
    OrcMetadata,
    OrcOptions,
    OrcPlan,
    OrcReadOptions,
    OrcStripe,
    OrcStripeOptions,
    ParquetDecodeOptions,
    ParquetMetadata,
    ParquetOptions,
    ParquetPlan,
    ParquetReadOptions,
    ParquetTableOptions,
    Source,
    StoreOptions,
    read_args,
)
from ._progress import reporting as _reporting
from .exceptions import (
    CacheWarning,
    ColumnNotFoundError,
    CorruptFileError,
    DeviceError,
    DeviceUnavailableError,
    FastIngestError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    RemoteIOError,
    RequestTimeoutError,
    SchemaMismatchError,
    UnsupportedError,
)

if TYPE_CHECKING:
    import pyarrow as pa  # imported by the first call that returns Arrow data

# One Cache per directory and process, so that "once" validation and the size
# estimate are shared by every read that names the directory.
_shared_caches: dict[tuple[int, str], Cache] = {}


def _shared_cache(path: str | os.PathLike[str], **options: Any) -> Cache:
    key = (os.getpid(), os.path.abspath(os.path.expanduser(os.fspath(path))))
    cache = _shared_caches.get(key)
    if cache is None:
        cache = _shared_caches[key] = Cache(key[1], **options)
    return cache


def _env_cache() -> Cache | None:
    """The cache ``FASTINGEST_CACHE_DIR`` turns on for every read, with
    ``FASTINGEST_CACHE_MAX_BYTES``, ``..._MIN_FREE_BYTES`` and ``..._VALIDATE``."""
    path = os.environ.get("FASTINGEST_CACHE_DIR")
    if not path:
        return None
    options: dict[str, Any] = {}
    for name in ("max_bytes", "min_free_bytes", "validate"):
        value = os.environ.get(f"FASTINGEST_CACHE_{name.upper()}")
        if value:
            options[name] = int(value) if name == "validate" and value.isdigit() else value
    return _shared_cache(path, **options)


def _cache_arg(cache: CacheArg) -> Cache | None:
    """``cache=``: a Cache, a directory (shorthand with defaults), ``False``
    (no cache even when the environment names one) or ``None`` (the
    environment's cache, if any)."""
    if cache is None or cache is True:
        return _env_cache()
    if cache is False:
        return None
    if isinstance(cache, Cache):
        return cache
    if isinstance(cache, str | os.PathLike):
        return _shared_cache(cache)
    raise InvalidArgumentError(
        f"cache must be a fastingest.Cache, a directory or False, not {type(cache).__name__}"
    )


def _config_from_dict(values: dict[str, Any]) -> Config:
    return Config(**values)


def _cache_from_settings(path: str, max_bytes: Any, min_free_bytes: Any, validate: str) -> Cache:
    try:
        ttl: str | float = float(validate)
    except ValueError:
        ttl = validate
    return _shared_cache(path, max_bytes=max_bytes, min_free_bytes=min_free_bytes, validate=ttl)


# Configs and caches travel to other processes (DataLoader workers, Ray and
# Dask tasks) as their settings; a cache is opened again there.
copyreg.pickle(Config, lambda c: (_config_from_dict, (c.to_dict(),)))
copyreg.pickle(
    Cache,
    lambda c: (_cache_from_settings, (str(c.path), c.max_bytes, c.min_free_bytes, c.validate)),
)


# Records the core logs go to Python `logging` (see `_log`, which sets it
# up with the first record). Records still queued at exit are handed over
# first; `_log` registers the same flush to run before logging's shutdown.
atexit.register(_flush_logs)


def _warn_cache(cache: Cache | None, stacklevel: int = 3) -> None:
    """Re-raises what the cache reported (full disk, unwritable directory,
    damaged entries) as :class:`CacheWarning`; the read itself succeeded."""
    if cache is not None:
        messages = cache._take_warnings()
        if not messages:
            return
        from . import _log  # sets up logging, which a clean read never needs

        for message in messages:
            _log.emit("fastingest.cache", 30, message)
            warnings.warn(message, CacheWarning, stacklevel=stacklevel)


@contextmanager
def _cache_warnings(args: dict[str, Any]) -> Iterator[None]:
    try:
        yield
    finally:
        _warn_cache(args["cache"], stacklevel=4)


def _args(call: str, options: dict[str, Any], allowed: tuple[str, ...]) -> dict[str, Any]:
    return read_args(call, options, allowed, _cache_arg)


_OPTIONS_DOC = """
    Keywords (:class:`fastingest.ParquetOptions`; ORC calls take ``stripes``
    in place of ``row_groups``, and their filters prune stripes by integer and
    date statistics):

    - ``columns``: top-level names or dotted paths into structs, returned in
      this order (``"s.x"`` as a column ``x``, nullable where ``s`` is).
    - ``filters``: pyarrow's DNF, e.g. ``[("a", ">", 1)]``; rows to keep. Row
      groups (and pages) whose statistics rule them out are not fetched.
    - ``row_groups``: indices into the file (a single file only).
    - ``read_dictionary`` (``read_parquet``, ``read_parquet_async``,
      ``iter_batches``): string and binary columns, by Parquet path
      (``"name"``, ``"struct.field"``, ``"tags.list.element"``), returned as
      ``dictionary<int32>`` arrays, as ``pq.read_table`` returns them; a name
      that is no string or binary column of a file is ignored there.
    - ``binary_type`` (the same calls, ``fastingest.dask`` and, except views,
      ``fastingest.ray``): ``pyarrow.binary_view()`` returns every string and
      binary column as ``string_view``/``binary_view`` (no copy of each
      row's bytes; what polars takes as it is), ``pyarrow.large_binary()``
      with 64-bit offsets, ``pyarrow.binary()`` with 32-bit ones; ``None``:
      as the file's Arrow schema says. Dictionary columns stay dictionaries.
    - ``coerce_int96_timestamp_unit`` (``read_parquet``, ``read_parquet_async``,
      ``iter_batches``): the unit of legacy INT96 timestamps (Spark, Hive),
      ``"s"`` to ``"ns"``, as in ``pq.read_table``; ``"us"`` reads dates
      outside 1677-2262, which wrap in nanoseconds.
    - ``storage_options``: object_store keys for the URL's backend, e.g.
      ``access_key_id``, ``secret_access_key``, ``endpoint_url``, ``region``,
      ``allow_http``; ``AWS_*``/``GOOGLE_*``/``AZURE_*`` variables also apply.
    - ``config``: a :class:`Config` (fetch tuning).
    - ``stats``: a :class:`ReadStats` the read adds its counters to.
    - ``cache``: a :class:`Cache`, a cache directory, or ``False``; by default
      the cache ``FASTINGEST_CACHE_DIR`` names, if any.
    - ``progress`` (``read_parquet``, ``read_orc``, ``read_chunks``): a
      progress bar (tqdm) of bytes planned vs fetched; ``True`` anywhere,
      ``False`` never, by default on a terminal once the read takes 2 s
      (``FASTINGEST_PROGRESS=1``/``0`` changes the default).

    The GIL is released for the whole read; Ctrl-C cancels it.
"""


def _documented(fn: Any) -> Any:
    """Appends the shared keyword documentation to a read call's docstring."""
    fn.__doc__ = (fn.__doc__ or "").rstrip() + "\n" + _OPTIONS_DOC
    return fn


@_documented
def read_parquet(source: Source, **options: Unpack[ParquetTableOptions]) -> pa.Table:
    """Read Parquet into a :class:`pyarrow.Table` equal to
    ``pyarrow.parquet.read_table`` with the same arguments (schema with its
    metadata, rows, order).

    ``source``: a path, a ``file://``, ``s3://``, ``gs://``, ``az://``/``abfs[s]://``,
    ``http(s)://`` or ``memory://`` URL, a glob of those, or a list of any of these;
    several files are read in parallel and joined in source order.
    """
    args = _args("read_parquet", dict(options), PARQUET_TABLE_KEYS)
    with _cache_warnings(args), _reporting(args, options.get("progress"), "read_parquet"):
        return _read_parquet(source, args)


@_documented
async def read_parquet_async(source: Source, **options: Unpack[ParquetDecodeOptions]) -> pa.Table:
    """:func:`read_parquet` as a coroutine: the read runs on fastingest's own
    runtime and the event loop stays free meanwhile."""
    args = _args("read_parquet_async", dict(options), PARQUET_DECODE_KEYS)
    return await _run_async(_start_read_parquet, source, args)


@_documented
def iter_batches(source: Source, **options: Unpack[ParquetDecodeOptions]) -> BatchStream:
    """:func:`read_parquet` as a stream of :class:`pyarrow.RecordBatch` (the
    same rows, in the same order, as the table holds): every footer is read
    first (the schema is known and checked across files), then each row
    group's batches are handed over as soon as they are decoded, while later
    bytes are still being fetched. The first batch comes early: the first row
    group is fetched on its own, and when it holds more than 128 Ki rows its
    first 64 Ki rows are decoded first and handed over as a batch of their
    own; the rest of the read starts then (from a store a region away, whose
    footer answers took 60 ms or more, at once: there waiting costs a long
    round trip). A slow consumer holds the read back: the
    row groups fetched or decoded but not yet handed over stay within the
    config's ``memory_budget`` (plus a few batches), so a file or dataset
    larger than memory can be streamed. A row group of flat columns that
    holds more batches (2^20 rows each) than the stream keeps decoded ahead
    is decoded a batch of rows at a time, so a file written as one large row
    group (as Spark writes them) is not held decoded whole; with ``filters``,
    each such batch's kept rows are handed over as it is decoded (the
    filter's columns first; a batch whose pages' statistics rule it out is
    not decoded at all). No batch is empty: a row group (or a batch of
    rows) of which the filter keeps no row gives none, so a stream whose
    filter keeps nothing yields no batch (its ``schema`` is still the
    read's). Closing the stream (or dropping it) stops the read."""
    args = _args("iter_batches", dict(options), PARQUET_DECODE_KEYS)
    with _cache_warnings(args):
        return _iter_batches(source, args)


@_documented
def plan_parquet(source: Source, **options: Unpack[ParquetOptions]) -> list[ParquetPlan]:
    """Each file's read plan, fetching footers only (and, with ``filters``,
    the bloom filters their ``==`` and ``in`` values are looked up in):
    ``location``,
    ``file_size``, ``row_groups``, ``ranges`` (needed column chunks),
    ``spans`` (coalesced), ``requests`` (slices), ``bytes_needed``,
    ``bytes_to_fetch`` and ``num_requests``."""
    args = _args("plan_parquet", dict(options), PARQUET_KEYS)
    with _cache_warnings(args):
        return _plan_parquet(source, args)  # type: ignore[return-value]


@_documented
def read_chunks(
    source: Source,
    *,
    device: int | str | None = None,
    staging_size: int | None = None,
    staging_buffers: int | None = None,
    streams: int | None = None,
    staging_threads: int | None = None,
    **options: Unpack[ParquetReadOptions],
) -> ChunkSet | DeviceChunkSet:
    """The raw column chunks a read selects (compressed and encoded, exactly
    the file's bytes) with their metadata, fetched with the same plan,
    retries and cache as :func:`read_parquet`. ``filters`` prune row groups
    by their statistics; chunks are always whole (apply the filter after
    decoding). Returns a :class:`ChunkSet`.

    With ``device`` (``0``, ``"cuda:1"``; ``"cpu"`` runs the same pipeline
    into host memory) each chunk is uploaded while later ones are still on
    the network: ``staging_threads`` threads (default: one per core, up to 8)
    copy parts of at most ``staging_size`` bytes (default 8 MiB) into
    ``staging_buffers`` pinned buffers (default two per thread), copied on
    ``streams`` copy streams (default 2), and a :class:`DeviceChunkSet` is
    returned. The pinned buffers are kept for the process's later uploads
    (at most 256 MiB a device)."""
    args = _args("read_chunks", dict(options), PARQUET_READ_KEYS)
    with _cache_warnings(args), _reporting(args, options.get("progress"), "read_chunks"):
        return _read_chunks(
            source, args, device, staging_size, staging_buffers, streams, staging_threads
        )


def to_torch(data: Any, device: Any = "cuda:0", *, strings: str = "error") -> dict[str, Any]:
    """Columns of a pyarrow Table (or batches) as ``dict[str, torch.Tensor]``:
    integers, floats, booleans; dates, times and timestamps as int64; a
    ``fixed_size_list`` of integers or floats as shape ``(rows, size, ...)``.
    A column with nulls adds ``"<name>.validity"``. Strings raise naming the column,
    unless ``strings="offsets"`` (``"<name>"`` bytes as uint8 and
    ``"<name>.offsets"`` int64). CPU tensors share Arrow's buffers where the
    layout allows; CUDA tensors are copied through pinned memory. (NumPy and
    Torch are imported on first use.)"""
    from ._torch import to_torch as convert

    return convert(data, device, strings=strings)


@_documented
def read_torch(
    source: Source,
    device: Any = "cuda:0",
    *,
    strings: str = "error",
    **options: Unpack[ParquetOptions],
) -> dict[str, Any]:
    """:func:`read_parquet` then :func:`to_torch`."""
    return to_torch(read_parquet(source, **options), device, strings=strings)


async def _run_async(start: Any, source: Any, args: dict[str, Any]) -> pa.Table:
    """Starts a read on fastingest's runtime and awaits its end."""
    # Imported here: a program awaiting this has asyncio loaded already, and
    # the others do not pay its import (~85 ms) when they import fastingest.
    import asyncio

    loop = asyncio.get_running_loop()
    future: asyncio.Future[pa.Table] = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if future.done():  # cancelled meanwhile
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def done(ok: bool, value: Any) -> None:
        loop.call_soon_threadsafe(settle, ok, value)

    pending = start(done, source, args)
    try:
        with _cache_warnings(args):
            return await future
    except asyncio.CancelledError:
        # The awaiting task was cancelled (a timeout, a TaskGroup): so is
        # the read, its requests dropped and its memory freed.
        pending.cancel()
        raise


@_documented
def read_orc(source: Source, **options: Unpack[OrcReadOptions]) -> pa.Table:
    """Read ORC into a :class:`pyarrow.Table` equal to ``pyarrow.orc.read_table``
    with the same ``columns`` (returned in file order, as pyarrow does).

    The file tail comes from one speculative request, then the selected
    stripes' footers, then only the projected columns' streams (coalesced,
    sliced, fetched in parallel, through the cache when one is given);
    stripes decode while later ones are still on the wire. ``stripes``:
    stripe indices (a single file only). ``filters`` skip the stripes whose
    statistics rule them out (integer and date columns) and keep the
    matching rows; their columns need not be among ``columns``."""
    args = _args("read_orc", dict(options), ORC_READ_KEYS)
    with _cache_warnings(args), _reporting(args, options.get("progress"), "read_orc"):
        return _read_orc(source, args)


@_documented
def iter_orc_batches(source: Source, **options: Unpack[OrcOptions]) -> BatchStream:
    """:func:`read_orc` as a stream of :class:`pyarrow.RecordBatch`, as
    :func:`iter_batches` is for Parquet: every tail first (the schema is
    checked across files), then each stripe's batches as soon as they are
    decoded, while later stripes are still being fetched; the first batch
    comes early, as in :func:`iter_batches` (the first stripe fetched on its
    own, and its first 64 Ki rows decoded first). No batch is empty (a
    stripe of which the filter keeps no row gives none). Closing the stream
    (or dropping it) stops the read."""
    args = _args("iter_orc_batches", dict(options), ORC_KEYS)
    with _cache_warnings(args):
        return _iter_orc_batches(source, args)


def read_orc_stripes(source: Source, **options: Unpack[OrcStripeOptions]) -> list[OrcStripe]:
    """The selected stripes of ORC files, raw: each stripe's bytes (index,
    data and footer, exactly as the file stores them) with where it lies,
    fetched with the same plan, retries and cache as :func:`read_orc`, for a
    consumer that decodes ORC itself. ``stripes`` and ``filters`` choose
    stripes as in :func:`read_orc` (whole stripes: the filter's rows are not
    applied); the store keywords are those of every call."""
    args = _args("read_orc_stripes", dict(options), ORC_STRIPE_KEYS)
    with _cache_warnings(args):
        return _read_orc_stripes(source, args)  # type: ignore[no-any-return]


@_documented
async def read_orc_async(source: Source, **options: Unpack[OrcOptions]) -> pa.Table:
    """:func:`read_orc` as a coroutine; the event loop stays free."""
    args = _args("read_orc_async", dict(options), ORC_KEYS)
    return await _run_async(_start_read_orc, source, args)


@_documented
def plan_orc(source: Source, **options: Unpack[OrcOptions]) -> list[OrcPlan]:
    """Each ORC file's read plan (tail and stripe footers are fetched, column
    streams are not): ``location``, ``file_size``, ``stripes``, ``ranges``
    (the projected streams), ``spans``, ``requests``, ``bytes_needed``,
    ``bytes_to_fetch``, ``num_requests``."""
    args = _args("plan_orc", dict(options), ORC_KEYS)
    with _cache_warnings(args):
        return _plan_orc(source, args)  # type: ignore[return-value]


@_documented
def metadata(
    source: Source,
    *,
    format: Literal["parquet", "orc"] | None = None,
    **options: Unpack[StoreOptions],
) -> Metadata | list[Metadata]:
    """File metadata, read from the footer only. ``format``: by default told
    by the name (``.orc``) or else by the content.

    Parquet (``"format": "parquet"``, :class:`ParquetMetadata`): ``schema``
    (pyarrow), ``num_rows``, ``num_row_groups``, ``created_by``, and
    ``row_groups`` with each column chunk's ``path``, ``codec``,
    ``encodings``, ``file_offset``, sizes and ``statistics``.

    ORC (``"format": "orc"``, :class:`OrcMetadata`): ``schema``, ``num_rows``,
    ``num_stripes``, ``compression``, ``file_format_version``,
    ``row_index_stride``, ``statistics`` (per top-level column), and
    ``stripes`` with each stripe's offsets, lengths, ``num_rows`` and
    ``statistics``.

    A dict for one file, a list for a glob or list."""
    args = _args("metadata", dict(options), STORE_KEYS)
    names = [source] if isinstance(source, str | os.PathLike) else list(source)
    if format is None and names and all(os.fspath(n).endswith(".orc") for n in names):
        format = "orc"
    if format not in (None, "parquet", "orc"):
        raise InvalidArgumentError(f'format must be "parquet" or "orc", not {format!r}')
    with _cache_warnings(args):
        if format == "orc":
            files = _read_orc_metadata(source, args)
        elif format == "parquet":
            files = _read_metadata(source, args)
        else:
            files = _read_any_metadata(source, args)
    # One file: a path or URL without glob characters, or any http(s) URL
    # (its "?" starts the query; it is never a glob).
    name = os.fspath(source) if isinstance(source, str | os.PathLike) else None
    single = isinstance(name, str) and (
        name.startswith(("http://", "https://")) or not any(c in name for c in "*?[")
    )
    result: list[Metadata] = files  # type: ignore[assignment]
    return result[0] if single and len(result) == 1 else result


__all__ = [
    "BatchStream",
    "Buffer",
    "Cache",
    "CacheArg",
    "CacheWarning",
    "Chunk",
    "ChunkInfo",
    "ChunkSet",
    "ColumnNotFoundError",
    "Config",
    "CorruptFileError",
    "DeviceChunk",
    "DeviceChunkSet",
    "DeviceError",
    "DeviceUnavailableError",
    "FastIngestError",
    "Filters",
    "InvalidArgumentError",
    "NotFoundError",
    "OrcMetadata",
    "OrcOptions",
    "OrcReadOptions",
    "OrcPlan",
    "OrcStripe",
    "OrcStripeOptions",
    "ParquetDecodeOptions",
    "ParquetMetadata",
    "ParquetOptions",
    "ParquetReadOptions",
    "ParquetPlan",
    "ParquetTableOptions",
    "PermissionDeniedError",
    "ReadStats",
    "RemoteIOError",
    "RequestTimeoutError",
    "SchemaMismatchError",
    "Source",
    "StoreOptions",
    "UnsupportedError",
    "__version__",
    "cuda_available",
    "cuda_device_count",
    "exceptions",
    "iter_batches",
    "iter_orc_batches",
    "metadata",
    "plan_orc",
    "plan_parquet",
    "read_chunks",
    "read_orc",
    "read_orc_async",
    "read_orc_stripes",
    "read_parquet",
    "read_parquet_async",
    "read_torch",
    "to_torch",
]
