"""fastingest: planned, sliced, parallel Parquet reads from object storage and
local disk into Arrow.

    >>> import fastingest
    >>> table = fastingest.read_parquet("s3://bucket/data/*.parquet", columns=["a", "b"],
    ...                                 filters=[("a", ">", 10)])

All I/O and decoding run in Rust with the GIL released.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pyarrow as pa

from . import exceptions
from ._fastingest import Config, ReadStats, __version__
from ._fastingest import plan_parquet as _plan_parquet
from ._fastingest import read_metadata as _read_metadata
from ._fastingest import read_parquet as _read_parquet
from ._fastingest import start_read_parquet as _start_read_parquet
from ._filters import normalize as _normalize_filters
from .exceptions import (
    ColumnNotFoundError,
    CorruptFileError,
    FastIngestError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    RemoteIOError,
    RequestTimeoutError,
    SchemaMismatchError,
    UnsupportedError,
)


def _read_args(
    columns: Any,
    filters: Any,
    row_groups: Any,
    storage_options: dict[str, Any] | None,
    config: Config | None,
    stats: ReadStats | None,
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
) -> pa.Table:
    """Read Parquet file(s) into a :class:`pyarrow.Table`.

    See ``fastingest.pyi`` for the full description of every argument.
    """
    return _read_parquet(
        source, **_read_args(columns, filters, row_groups, storage_options, config, stats)
    )


async def read_parquet_async(
    source: Any,
    *,
    columns: list[str] | None = None,
    filters: Any = None,
    row_groups: list[int] | None = None,
    storage_options: dict[str, Any] | None = None,
    config: Config | None = None,
    stats: ReadStats | None = None,
) -> pa.Table:
    """Like :func:`read_parquet`, as a coroutine: the read runs on fastingest's
    own runtime and the event loop stays free meanwhile."""
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

    _start_read_parquet(
        done, source, **_read_args(columns, filters, row_groups, storage_options, config, stats)
    )
    return await future


def plan_parquet(
    source: Any,
    *,
    columns: list[str] | None = None,
    filters: Any = None,
    row_groups: list[int] | None = None,
    storage_options: dict[str, Any] | None = None,
    config: Config | None = None,
    stats: ReadStats | None = None,
) -> list[dict[str, Any]]:
    """The read plan of each file (footers are fetched, column data is not)."""
    return _plan_parquet(
        source, **_read_args(columns, filters, row_groups, storage_options, config, stats)
    )


def metadata(
    source: Any,
    *,
    storage_options: dict[str, Any] | None = None,
    config: Config | None = None,
    stats: ReadStats | None = None,
) -> dict[str, Any] | list[dict[str, Any]]:
    """Footer metadata: schema, row count, row groups with their column chunks,
    codecs and statistics. A dict for a single file, a list for several."""
    files = _read_metadata(source, storage_options=storage_options, config=config, stats=stats)
    single = isinstance(source, str) and not any(c in source for c in "*?[")
    return files[0] if single and len(files) == 1 else files


__all__ = [
    "ColumnNotFoundError",
    "Config",
    "CorruptFileError",
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
    "exceptions",
    "metadata",
    "plan_parquet",
    "read_parquet",
    "read_parquet_async",
]
