"""Type stubs for fastingest (hand-written)."""

from collections.abc import Sequence
from os import PathLike
from typing import Any, Literal, TypeAlias

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
