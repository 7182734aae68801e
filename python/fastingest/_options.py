"""The keyword arguments the read calls share, defined once, and the shapes of
the dicts they return. The calls take ``**options: Unpack[ParquetOptions]``
(or ``OrcOptions``), so editors and type checkers see every keyword while the
list lives here alone."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from os import PathLike
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypedDict

from ._filters import normalize as _normalize_filters
from ._interrupt import import_module
from .exceptions import InvalidArgumentError

if TYPE_CHECKING:
    import pyarrow as pa

    from ._fastingest import Buffer, Cache, Config, ReadStats

Source: TypeAlias = "str | PathLike[str] | Sequence[str | PathLike[str]]"
"""A path, a ``file://``, ``s3://``, ``gs://``, ``az://``/``abfs[s]://``,
``http(s)://`` or ``memory://`` URL, a glob of those (``*``, ``?``, ``[..]``,
``**``), a directory or prefix (``s3://bucket/table/``: every data file
under it, recursively), or a list of any of these. Files are read in the
given order; a glob's or directory's files in sorted order. Below a
directory, names beginning with ``_`` or ``.`` (``_SUCCESS``, ``_metadata``,
``.crc``) are not data and are skipped, as pyarrow does; a ``_metadata``
summary at the top of a directory or prefix plans its files (one request
instead of one footer per file)."""

Partitioning: TypeAlias = "Literal['hive'] | Mapping[str, pa.DataType] | pa.Schema | None"
"""``partitioning=``: how ``key=value`` directories become columns.
By default, Hive keys below a directory or prefix the read names (none for
files named directly or by a glob); ``"hive"``: Hive keys of every file's
path; a mapping or schema: Hive keys, these with the given types (the rest
inferred); ``None``: no partition columns."""

Op: TypeAlias = Literal["==", "=", "!=", "<", "<=", ">", ">=", "in", "not in"]
Term: TypeAlias = "tuple[str, Op, Any] | Sequence[Any]"
Filters: TypeAlias = "Sequence[Term] | Sequence[Sequence[Term]]"
"""pyarrow's DNF: a list of (column, op, value) tuples is an AND; a list of
such lists is an OR of ANDs (a term may be a list, as JSON gives it:
``[["x", "<", 5]]`` is one term, as in pyarrow). Values compare with the literal as numbers,
whatever their types (``x < 2.5`` over integers keeps 2), floats by IEEE 754;
a comparison with a null does not match, ``in`` matches a null where its
values hold ``None`` and ``not in`` where they do not, as in pyarrow."""

CacheArg: TypeAlias = "Cache | str | PathLike[str] | bool | None"
"""``cache=``: a :class:`Cache`, a cache directory (one ``Cache`` per directory
and process), ``False`` (no cache even when ``FASTINGEST_CACHE_DIR`` names
one), or ``None`` (the cache ``FASTINGEST_CACHE_DIR`` names, if any)."""


class StoreOptions(TypedDict, total=False):
    """Where the bytes come from and how they are fetched: every call takes these."""

    storage_options: dict[str, Any] | None
    """object_store keys for the URL's backend (``access_key_id``,
    ``secret_access_key``, ``endpoint_url``, ``region``, ``allow_http``, ...);
    ``AWS_*``/``GOOGLE_*``/``AZURE_*`` environment variables also apply."""
    config: Config | None
    """Fetch tuning (:class:`Config`); by default the built-in values under
    the ``FASTINGEST_*`` environment variables."""
    stats: ReadStats | None
    """Counters the call adds to (:class:`ReadStats`)."""
    cache: CacheArg
    """The on-disk cache remote bytes go through (see :data:`CacheArg`)."""


class DatasetOptions(TypedDict, total=False):
    """How a read's files make one table: the table reads take these."""

    partitioning: Partitioning
    """Partition columns from ``key=value`` directories (see :data:`Partitioning`).
    Values are URL-decoded, ``__HIVE_DEFAULT_PARTITION__`` is null; inferred
    keys are ``dictionary<int32>`` when every value is an integer, else
    ``dictionary<string>``, as ``pq.read_table`` gives them. A filter on a
    key drops files from the listing alone, before any request to them."""
    schema: pa.Schema | None
    """The table's schema: columns are cast to it, a column a file lacks is
    null there, and columns it does not name are not read. By default every
    file's columns, in order of first appearance, then the partition keys; a
    column whose type differs between files raises ``SchemaMismatchError``."""


class ParquetOptions(StoreOptions, DatasetOptions, total=False):
    """The keywords of the Parquet reads (``read_parquet``, ``iter_batches``,
    ``read_parquet_async``, ``plan_parquet``, ``read_chunks``, ``read_torch``)."""

    columns: Sequence[str] | None
    """Top-level names or dotted paths into structs, returned in this order."""
    filters: Filters | None
    """Rows to keep; row groups (and pages) that statistics rule out are not fetched."""
    row_groups: Sequence[int] | None
    """Row-group indices into the file (a single file only)."""


class ProgressOption(TypedDict, total=False):
    """The keyword of the whole-table reads (``read_parquet``, ``read_orc``,
    ``read_chunks``)."""

    progress: bool | None
    """A progress bar on stderr or in a notebook (tqdm): bytes planned vs
    fetched, rate, requests, files. ``True``: shown anywhere (logs and CI
    too); ``False``: never; ``None`` (default): on a terminal, once the read
    has taken two seconds. ``FASTINGEST_PROGRESS=1``/``0`` sets the default."""


class ParquetReadOptions(ParquetOptions, ProgressOption, total=False):
    """The keywords of ``read_chunks`` (``read_parquet`` takes these and
    :class:`ParquetDecodeOptions`' ``read_dictionary`` and ``binary_type``)."""


class ParquetDecodeOptions(ParquetOptions, total=False):
    """The keywords of the Parquet reads that decode (``iter_batches``,
    ``read_parquet_async``; ``read_parquet`` adds ``progress``)."""

    read_dictionary: Sequence[str] | None
    """String and binary columns to return as ``dictionary<int32>`` arrays
    (``pandas.Categorical`` in pandas), as ``pq.read_table`` does: each row
    group's dictionary page becomes the dictionary and the rows its indices,
    so repeated values are neither copied nor stored once per row. Columns
    are named by their Parquet path (``"name"``, ``"struct.field"``,
    ``"tags.list.element"``); a name that is no string or binary column of
    a file is ignored there, as pyarrow ignores it."""

    binary_type: pa.DataType | str | None
    """The Arrow layout of every string and binary column:
    ``pyarrow.binary_view()`` returns ``string_view`` and ``binary_view``
    columns (16 bytes a row, values up to 12 bytes inline, longer ones
    pointing into the read's page buffers: no copy of each row's bytes, and
    what polars and DataFusion take without converting);
    ``pyarrow.large_binary()`` returns ``large_string`` and ``large_binary``;
    ``pyarrow.binary()`` returns ``string`` and ``binary``. The matching
    string types and the names (``"binary_view"``, ...) are taken too.
    ``None`` (default): as the file's Arrow schema says, else ``string`` and
    ``binary``. Unlike pyarrow's keyword of that name, it applies to files
    that carry their Arrow schema too. Dictionary columns (the file's, or
    ``read_dictionary``'s) stay dictionaries."""

    coerce_int96_timestamp_unit: str | None
    """The unit of Parquet's legacy INT96 timestamps (Spark, Hive, Impala),
    at any depth: ``"s"``, ``"ms"``, ``"us"`` or ``"ns"``, as in
    ``pq.read_table``. Nanoseconds hold only the years 1677-2262; Spark
    writes dates outside them (``0001-01-01``), which in nanoseconds wrap
    into other dates, here as in pyarrow, and read right in ``"us"``.
    ``None`` (default): the unit the file's Arrow schema gives, else
    nanoseconds."""


class ParquetTableOptions(ParquetDecodeOptions, ProgressOption, total=False):
    """The keywords of ``read_parquet``."""


class ClusterOptions(StoreOptions, DatasetOptions, total=False):
    """The keywords ``fastingest.ray`` and ``fastingest.dask`` pass on to
    every task's read, besides ``columns`` and ``filters``."""

    read_dictionary: Sequence[str] | None
    """Parquet only: string and binary columns read as dictionaries (see
    :class:`ParquetDecodeOptions`); Dask sees categoricals whose categories
    it treats as unknown."""

    binary_type: pa.DataType | str | None
    """Parquet only: the Arrow layout of string and binary columns (see
    :class:`ParquetDecodeOptions`)."""


class OrcStripeOptions(StoreOptions, total=False):
    """The keywords of ``read_orc_stripes`` (raw stripes hold every column)."""

    filters: Filters | None
    """Stripes whose statistics rule the filter out are skipped (integer and
    date columns; other types keep every stripe)."""
    stripes: Sequence[int] | None
    """Stripe indices into the file (a single file only)."""


class OrcOptions(OrcStripeOptions, DatasetOptions, total=False):
    """The keywords of the ORC reads (``read_orc``, ``iter_orc_batches``,
    ``read_orc_async``, ``plan_orc``)."""

    columns: Sequence[str] | None
    """Top-level names; returned in file order, as pyarrow's ORC reader does."""


class OrcReadOptions(OrcOptions, ProgressOption, total=False):
    """The keywords of ``read_orc``."""


class Plan(TypedDict):
    """One file's read plan (``plan_parquet``, ``plan_orc``)."""

    location: str
    file_size: int
    ranges: list[tuple[int, int]]
    """The byte ranges the read needs (column chunks, or ORC streams)."""
    spans: list[tuple[int, int]]
    """The ranges after coalescing small gaps."""
    requests: list[tuple[int, int]]
    """The spans split into slices: one request each."""
    bytes_needed: int
    bytes_to_fetch: int
    num_requests: int


class ParquetPlan(Plan):
    row_groups: list[int]


class OrcPlan(Plan):
    stripes: list[int]


class OrcStripe(TypedDict):
    """One raw stripe (``read_orc_stripes``)."""

    location: str
    file: int
    """Index of the stripe's file among the sources read."""
    stripe: int
    offset: int
    index_length: int
    data_length: int
    footer_length: int
    num_rows: int
    data: Buffer
    """The stripe's bytes (index, data, footer) as the file stores them;
    ``memoryview(data)`` without a copy."""


class ParquetMetadata(TypedDict):
    """``metadata()`` of a Parquet file."""

    format: Literal["parquet"]
    location: str
    file_size: int
    schema: pa.Schema
    num_rows: int
    num_row_groups: int
    created_by: str | None
    format_version: int
    row_groups: list[dict[str, Any]]
    """Each with ``index``, ``num_rows``, ``total_byte_size``,
    ``compressed_size`` and ``columns``: every column chunk's ``path``,
    ``physical_type``, ``codec``, ``encodings``, ``file_offset``, sizes,
    ``num_values`` and ``statistics``."""


class OrcMetadata(TypedDict):
    """``metadata()`` of an ORC file."""

    format: Literal["orc"]
    location: str
    file_size: int
    schema: pa.Schema
    num_rows: int
    num_stripes: int
    compression: str
    file_format_version: str
    row_index_stride: int
    statistics: list[dict[str, Any]]
    """Per top-level column: ``num_values``, ``has_null``, ``min``/``max``."""
    stripes: list[dict[str, Any]]
    """Each stripe's ``offset``, ``index_length``, ``data_length``,
    ``footer_length``, ``num_rows`` and ``statistics``."""


Metadata: TypeAlias = "ParquetMetadata | OrcMetadata"

# The keys each call accepts, in the order every signature lists them.
_STORE_KEYS = tuple(StoreOptions.__annotations__)
_DATASET_KEYS = tuple(DatasetOptions.__annotations__)
PARQUET_KEYS = ("columns", "filters", "row_groups", *_DATASET_KEYS, *_STORE_KEYS)
ORC_KEYS = ("columns", "filters", "stripes", *_DATASET_KEYS, *_STORE_KEYS)
ORC_STRIPE_KEYS = ("filters", "stripes", *_STORE_KEYS)
PARQUET_READ_KEYS = (*PARQUET_KEYS, "progress")
PARQUET_DECODE_KEYS = (
    *PARQUET_KEYS,
    "read_dictionary",
    "binary_type",
    "coerce_int96_timestamp_unit",
)
PARQUET_TABLE_KEYS = (*PARQUET_DECODE_KEYS, "progress")
ORC_READ_KEYS = (*ORC_KEYS, "progress")
STORE_KEYS = _STORE_KEYS


def check_keywords(call: str, options: dict[str, Any], allowed: Sequence[str]) -> None:
    """Raises TypeError for a keyword `call` does not take, as Python would."""
    for name in options:
        if name not in allowed:
            raise TypeError(f"{call}() got an unexpected keyword argument {name!r}")


def read_args(
    call: str, options: dict[str, Any], allowed: Sequence[str], cache_arg: Any
) -> dict[str, Any]:
    """Checks and normalises a call's keywords into the dict the extension
    takes (`columns`, `filters`, `row_groups`, `read_dictionary`, `binary_type`,
    `int96_unit`, `storage_options`, `config`, `stats`, `cache`; ORC's
    `stripes` travel as `row_groups`)."""
    check_keywords(call, options, allowed)
    units = options.get("row_groups", options.get("stripes"))
    return {
        "partitioning": _partitioning(options),
        "schema": options.get("schema"),
        "columns": _names("columns", options.get("columns")),
        "filters": _normalize_filters(options.get("filters")),
        "row_groups": None if units is None else list(units),
        "read_dictionary": _names("read_dictionary", options.get("read_dictionary")),
        "binary_type": _binary_type(options.get("binary_type")),
        "int96_unit": _time_unit(options.get("coerce_int96_timestamp_unit")),
        "storage_options": options.get("storage_options"),
        "config": options.get("config"),
        "stats": options.get("stats"),
        "cache": cache_arg(options.get("cache")),
    }


def _names(keyword: str, names: Any) -> list[str] | None:
    """A keyword's list of column names (`None` stays `None`); a single str,
    which would iterate as its letters, is refused."""
    if names is None:
        return None
    if isinstance(names, str):
        raise InvalidArgumentError(f"{keyword} must be a list of names, not a single str")
    names = list(names)
    bad = [n for n in names if not isinstance(n, str)]
    if bad:
        raise InvalidArgumentError(f"{keyword} must name columns by str, not {bad[0]!r}")
    return names


# `binary_type`'s accepted types and names, by the name the extension takes.
_BINARY_TYPES = {
    "binary": ("binary", "string", "utf8"),
    "large_binary": ("large_binary", "large_string", "large_utf8"),
    "binary_view": ("binary_view", "string_view"),
}


def _binary_type(value: Any) -> str | None:
    """``binary_type=`` as the extension takes it: ``None`` or the name of
    pyarrow's binary type of the layout asked for."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value
    elif _is_arrow_type(value):
        text = str(value)  # pyarrow's name of the type: "binary_view", "large_string", ...
    else:
        text = None
    for name, spellings in _BINARY_TYPES.items():
        if text in spellings:
            return name
    raise InvalidArgumentError(
        "binary_type must be pyarrow.binary(), pyarrow.large_binary() or "
        f"pyarrow.binary_view() (or their string types, or names), not {value!r}"
    )


def _time_unit(value: Any) -> str | None:
    """``coerce_int96_timestamp_unit=``: ``None`` or a unit's name."""
    if value is None or value in ("s", "ms", "us", "ns"):
        return value
    raise InvalidArgumentError(
        f'coerce_int96_timestamp_unit must be "s", "ms", "us" or "ns", not {value!r}'
    )


def _is_arrow_type(value: Any) -> bool:
    pa = import_module("pyarrow")  # Ctrl-C kept (see _interrupt)
    return isinstance(value, pa.DataType)


def _partitioning(options: dict[str, Any]) -> Any:
    """``partitioning=`` as the extension takes it: ``"auto"`` (not given),
    ``"off"`` (None), ``"hive"``, or a ``pyarrow.Schema`` of typed keys."""
    if "partitioning" not in options:
        return "auto"
    value = options["partitioning"]
    if value is None:
        return "off"
    if value == "hive":
        return "hive"
    if isinstance(value, Mapping):
        pa = import_module("pyarrow")  # Ctrl-C kept (see _interrupt)
        try:
            return pa.schema([pa.field(str(k), t) for k, t in value.items()])
        except TypeError as e:
            raise InvalidArgumentError(
                f"partitioning: a mapping gives each key a pyarrow type ({e})"
            ) from None
    if type(value).__name__ == "Schema" and hasattr(value, "field"):
        return value
    raise InvalidArgumentError(
        "partitioning must be 'hive', None, a mapping of key names to pyarrow "
        f"types, or a pyarrow.Schema, not {value!r}"
    )
