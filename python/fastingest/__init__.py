"""fastingest: planned, sliced, parallel Parquet and ORC reads from object storage and
local disk into Arrow.

    >>> import fastingest
    >>> table = fastingest.read_parquet("s3://bucket/data/*.parquet", columns=["a", "b"],
    ...                                 filters=[("a", ">", 10)])

All I/O and decoding run in Rust with the GIL released.
"""

from __future__ import annotations

import asyncio
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa

from . import exceptions
from ._fastingest import (
    BatchStream,
    Cache,
    Chunk,
    ChunkInfo,
    ChunkSet,
    Config,
    DeviceChunk,
    DeviceChunkSet,
    ReadStats,
    __version__,
    cuda_available,
    cuda_device_count,
)
from ._fastingest import iter_batches as _iter_batches
from ._fastingest import plan_orc as _plan_orc
from ._fastingest import plan_parquet as _plan_parquet
from ._fastingest import read_chunks as _read_chunks
from ._fastingest import read_metadata as _read_metadata
from ._fastingest import read_orc as _read_orc
from ._fastingest import read_orc_metadata as _read_orc_metadata
from ._fastingest import read_parquet as _read_parquet
from ._fastingest import start_read_orc as _start_read_orc
from ._fastingest import start_read_parquet as _start_read_parquet
from ._filters import normalize as _normalize_filters
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

CacheArg = Cache | str | os.PathLike[str] | bool | None

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
    if isinstance(cache, (str, os.PathLike)):
        return _shared_cache(cache)
    raise InvalidArgumentError(
        f"cache must be a fastingest.Cache, a directory or False, not {type(cache).__name__}"
    )


def _warn_cache(cache: Cache | None, stacklevel: int = 3) -> None:
    """Re-raises what the cache reported (full disk, unwritable directory,
    damaged entries) as :class:`CacheWarning`; the read itself succeeded."""
    if cache is not None:
        for message in cache._take_warnings():
            warnings.warn(message, CacheWarning, stacklevel=stacklevel)


@contextmanager
def _cache_warnings(args: dict[str, Any]) -> Iterator[None]:
    try:
        yield
    finally:
        _warn_cache(args["cache"], stacklevel=4)


def _read_args(
    columns: Any,
    filters: Any,
    row_groups: Any,
    storage_options: dict[str, Any] | None,
    config: Config | None,
    stats: ReadStats | None,
    cache: CacheArg,
) -> dict[str, Any]:
    """Checks and normalises the keyword arguments shared by the read calls."""
    if isinstance(columns, str):
        raise InvalidArgumentError("columns must be a list of names, not a single str")
    return {
        "columns": None if columns is None else list(columns),
        "filters": _normalize_filters(filters),
        "row_groups": None if row_groups is None else list(row_groups),
        "storage_options": storage_options,
        "config": config,
        "stats": stats,
        "cache": _cache_arg(cache),
    }


def read_parquet(
    source: Any,
    *,
    columns: list[str] | None = None,
    filters: Any = None,
    row_groups: list[int] | None = None,
    storage_options: dict[str, Any] | None = None,
    config: Config | None = None,
    stats: ReadStats | None = None,
    cache: CacheArg = None,
) -> pa.Table:
    """Read Parquet file(s) into a :class:`pyarrow.Table`.

    See ``fastingest.pyi`` for the full description of every argument.
    """
    args = _read_args(columns, filters, row_groups, storage_options, config, stats, cache)
    with _cache_warnings(args):
        return _read_parquet(source, args)


async def read_parquet_async(
    source: Any,
    *,
    columns: list[str] | None = None,
    filters: Any = None,
    row_groups: list[int] | None = None,
    storage_options: dict[str, Any] | None = None,
    config: Config | None = None,
    stats: ReadStats | None = None,
    cache: CacheArg = None,
) -> pa.Table:
    """Like :func:`read_parquet`, as a coroutine: the read runs on fastingest's
    own runtime and the event loop stays free meanwhile."""
    args = _read_args(columns, filters, row_groups, storage_options, config, stats, cache)
    return await _run_async(_start_read_parquet, source, args)


def iter_batches(
    source: Any,
    *,
    columns: list[str] | None = None,
    filters: Any = None,
    row_groups: list[int] | None = None,
    storage_options: dict[str, Any] | None = None,
    config: Config | None = None,
    stats: ReadStats | None = None,
    cache: CacheArg = None,
) -> BatchStream:
    """Read Parquet as a stream of :class:`pyarrow.RecordBatch`, each row group
    handed over as soon as it is decoded (the same batches, in the same order,
    as :func:`read_parquet`'s table holds).

    See ``fastingest.pyi`` for the full description of every argument.
    """
    args = _read_args(columns, filters, row_groups, storage_options, config, stats, cache)
    with _cache_warnings(args):
        return _iter_batches(source, args)


def read_chunks(
    source: Any,
    *,
    columns: list[str] | None = None,
    row_groups: list[int] | None = None,
    filters: Any = None,
    storage_options: dict[str, Any] | None = None,
    config: Config | None = None,
    stats: ReadStats | None = None,
    cache: CacheArg = None,
    device: int | str | None = None,
    staging_size: int | None = None,
    staging_buffers: int | None = None,
    streams: int | None = None,
) -> ChunkSet | DeviceChunkSet:
    """Read the raw column chunks a read selects (compressed, encoded, exactly
    the file's bytes) with their metadata. With ``device``, each chunk is
    uploaded while later ones are still being fetched and a
    :class:`DeviceChunkSet` is returned.

    See ``fastingest.pyi`` for the full description of every argument.
    """
    args = _read_args(columns, filters, row_groups, storage_options, config, stats, cache)
    with _cache_warnings(args):
        return _read_chunks(source, args, device, staging_size, staging_buffers, streams)


def to_torch(data: Any, device: Any = "cuda:0", *, strings: str = "error") -> dict[str, Any]:
    """Columns of a pyarrow Table (or batches) as ``dict[str, torch.Tensor]``;
    see ``fastingest.pyi``. (NumPy and Torch are imported on first use.)"""
    from ._torch import to_torch as convert

    return convert(data, device, strings=strings)


def read_torch(
    source: Any, device: Any = "cuda:0", *, strings: str = "error", **read_args: Any
) -> dict[str, Any]:
    """:func:`read_parquet` then :func:`to_torch`; see ``fastingest.pyi``."""
    return to_torch(read_parquet(source, **read_args), device, strings=strings)


async def _run_async(start: Any, source: Any, args: dict[str, Any]) -> pa.Table:
    """Starts a read on fastingest's runtime and awaits its end."""
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

    start(done, source, args)
    with _cache_warnings(args):
        return await future


def read_orc(
    source: Any,
    *,
    columns: list[str] | None = None,
    stripes: list[int] | None = None,
    storage_options: dict[str, Any] | None = None,
    config: Config | None = None,
    stats: ReadStats | None = None,
    cache: CacheArg = None,
) -> pa.Table:
    """Read ORC file(s) into a :class:`pyarrow.Table` equal to
    ``pyarrow.orc.read_table`` with the same columns (file order)."""
    args = _read_args(columns, None, stripes, storage_options, config, stats, cache)
    with _cache_warnings(args):
        return _read_orc(source, args)


def plan_orc(
    source: Any,
    *,
    columns: list[str] | None = None,
    stripes: list[int] | None = None,
    storage_options: dict[str, Any] | None = None,
    config: Config | None = None,
    stats: ReadStats | None = None,
    cache: CacheArg = None,
) -> list[dict[str, Any]]:
    """The read plan of each ORC file (tails and stripe footers are fetched,
    column streams are not): ``stripes``, ``ranges`` (the projected streams),
    ``spans``, ``requests``, ``bytes_needed``, ``bytes_to_fetch``."""
    args = _read_args(columns, None, stripes, storage_options, config, stats, cache)
    with _cache_warnings(args):
        return _plan_orc(source, args)


async def read_orc_async(
    source: Any,
    *,
    columns: list[str] | None = None,
    stripes: list[int] | None = None,
    storage_options: dict[str, Any] | None = None,
    config: Config | None = None,
    stats: ReadStats | None = None,
    cache: CacheArg = None,
) -> pa.Table:
    """:func:`read_orc` as a coroutine; the event loop stays free."""
    args = _read_args(columns, None, stripes, storage_options, config, stats, cache)
    return await _run_async(_start_read_orc, source, args)


def plan_parquet(
    source: Any,
    *,
    columns: list[str] | None = None,
    filters: Any = None,
    row_groups: list[int] | None = None,
    storage_options: dict[str, Any] | None = None,
    config: Config | None = None,
    stats: ReadStats | None = None,
    cache: CacheArg = None,
) -> list[dict[str, Any]]:
    """The read plan of each file (footers are fetched, column data is not)."""
    args = _read_args(columns, filters, row_groups, storage_options, config, stats, cache)
    with _cache_warnings(args):
        return _plan_parquet(source, args)


def metadata(
    source: Any,
    *,
    storage_options: dict[str, Any] | None = None,
    config: Config | None = None,
    stats: ReadStats | None = None,
    cache: CacheArg = None,
    format: str | None = None,
) -> dict[str, Any] | list[dict[str, Any]]:
    """Footer metadata: schema, row count, row groups (Parquet) or stripes
    (ORC) with their statistics. ``format``: ``"parquet"``, ``"orc"``, or
    ``None`` to tell by the name (``.orc``) or else by the content. A dict for
    a single file, a list for several."""
    args = _read_args(None, None, None, storage_options, config, stats, cache)
    names = [source] if isinstance(source, str | os.PathLike) else list(source)
    if format is None and names and all(os.fspath(n).endswith(".orc") for n in names):
        format = "orc"
    if format not in (None, "parquet", "orc"):
        raise InvalidArgumentError(f'format must be "parquet" or "orc", not {format!r}')
    with _cache_warnings(args):
        if format == "orc":
            files = _read_orc_metadata(source, args)
        else:
            try:
                files = _read_metadata(source, args)
            except CorruptFileError as e:
                if format == "parquet" or 'expected magic "PAR1"' not in str(e):
                    raise
                files = _read_orc_metadata(source, args)
    single = isinstance(source, str) and not any(c in source for c in "*?[")
    return files[0] if single and len(files) == 1 else files


__all__ = [
    "BatchStream",
    "Cache",
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
    "InvalidArgumentError",
    "NotFoundError",
    "PermissionDeniedError",
    "ReadStats",
    "RemoteIOError",
    "RequestTimeoutError",
    "SchemaMismatchError",
    "UnsupportedError",
    "__version__",
    "cuda_available",
    "cuda_device_count",
    "exceptions",
    "iter_batches",
    "metadata",
    "plan_orc",
    "plan_parquet",
    "read_orc",
    "read_orc_async",
    "read_chunks",
    "read_parquet",
    "read_parquet_async",
    "read_torch",
    "to_torch",
]
