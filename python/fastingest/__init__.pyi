"""Type stubs for fastingest (hand-written)."""

from collections.abc import Sequence
from os import PathLike
from typing import Any, Literal, TypeAlias

import pyarrow as pa

from . import exceptions as exceptions
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
    def __init__(self) -> None: ...
    def to_dict(self) -> dict[str, int | float]: ...

def read_parquet(
    source: Source,
    *,
    columns: Sequence[str] | None = None,
    filters: Filters | None = None,
    row_groups: Sequence[int] | None = None,
    storage_options: dict[str, Any] | None = None,
    config: Config | None = None,
    stats: ReadStats | None = None,
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
) -> dict[str, Any] | list[dict[str, Any]]:
    """Footer metadata: ``schema`` (pyarrow), ``num_rows``, ``num_row_groups``,
    ``created_by``, and ``row_groups`` with each column chunk's ``path``,
    ``codec``, ``encodings``, ``file_offset``, sizes and ``statistics``. A dict
    for one file, a list for a glob or list."""
