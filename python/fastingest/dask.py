"""fastingest as a Dask DataFrame reader.

``fastingest.dask.read_parquet(source, ...)`` and ``read_orc`` return a
``dask.dataframe.DataFrame`` built with ``dd.from_map``: Dask schedules,
and each partition is read by fastingest on the worker (fetch and decode in
Rust with the GIL released, through the node's on-disk cache when one is
given). The driver reads the footers once; partitions are runs of row
groups (stripes) grouped up to ``blocksize`` decoded bytes, and ``meta``
comes from the schema without reading data. Column selections Dask makes
(``df[["a", "b"]]``) reach the read: only those columns are fetched.
Filters are applied inside the read (row groups their statistics rule out
are never fetched). Hive partition keys are categoricals whose categories
are every value in the dataset, as ``dd.read_parquet`` has them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Unpack

from . import _cache_arg
from ._options import ClusterOptions, Filters
from ._parts import Format, Part, Planned, Scan, plan
from .exceptions import InvalidArgumentError

try:
    import dask.dataframe as dd
    from dask.utils import parse_bytes
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError("fastingest.dask needs Dask DataFrame: pip install 'dask[dataframe]'") from e

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

__all__ = ["read_orc", "read_parquet"]

DEFAULT_BLOCKSIZE = "256MiB"


class ReadPartition:
    """The function ``dd.from_map`` calls per partition: reads one
    :class:`~fastingest._parts.Part` into a pandas DataFrame.

    It takes part in Dask's column projection (a ``columns=`` keyword, and
    the ``DataFrameIOFunction`` protocol's ``columns``/``project_columns``),
    and its repr never shows credentials."""

    def __init__(self, scan: Scan, categories: dict[str, pa.Array]) -> None:
        self.scan = scan
        self.categories = categories

    @property
    def columns(self) -> list[str]:
        return list(self.scan.schema.names)

    def project_columns(self, columns: Sequence[str]) -> ReadPartition:
        if list(columns) == self.columns:
            return self
        return ReadPartition(self.scan.project(list(columns)), self.categories)

    def __call__(self, part: Part, columns: Sequence[str] | None = None) -> pd.DataFrame:
        scan = self.scan if columns is None else self.scan.project(list(columns))
        return to_pandas(scan.read(part), self.categories)

    def __repr__(self) -> str:
        return f"fastingest.dask.ReadPartition({self.scan!r})"

    def __dask_tokenize__(self) -> Any:
        # Deterministic and free of credentials: what is read and how.
        return (
            type(self).__name__,
            self.scan.format,
            str(self.scan.schema),
            repr(self.scan.filters),
            sorted(self.categories),
        )


def read_parquet(
    source: Any,
    *,
    columns: Sequence[str] | None = None,
    filters: Filters | None = None,
    blocksize: int | str | None = DEFAULT_BLOCKSIZE,
    **options: Unpack[ClusterOptions],
) -> dd.DataFrame:
    """Reads Parquet `source` (paths, URLs, globs, directories, as
    :func:`fastingest.read_parquet`) as a ``dask.dataframe.DataFrame``.

    ``blocksize`` (``"256MiB"`` by default; an int, or text such as
    ``"64MB"``, as ``dd.read_parquet`` takes it): row groups are grouped, in
    file order, into partitions of about this many decoded bytes (a larger
    row group is a partition alone); ``None``: one partition per file.
    Tasks carry ``storage_options`` to the workers (never into reprs or task
    names); a ``cache`` must be a directory on each node (a local disk),
    shared by that node's workers."""
    return _read(
        "fastingest.dask.read_parquet", "parquet", source, columns, filters, blocksize, options
    )


def read_orc(
    source: Any,
    *,
    columns: Sequence[str] | None = None,
    filters: Filters | None = None,
    blocksize: int | str | None = DEFAULT_BLOCKSIZE,
    **options: Unpack[ClusterOptions],
) -> dd.DataFrame:
    """Reads ORC `source` as a ``dask.dataframe.DataFrame``: :func:`read_parquet`'s
    keywords, stripes in place of row groups (a stripe's size is its
    compressed size: ORC stores no decoded size)."""
    return _read("fastingest.dask.read_orc", "orc", source, columns, filters, blocksize, options)


def _read(
    call: str,
    format: Format,
    source: Any,
    columns: Any,
    filters: Any,
    blocksize: int | str | None,
    options: dict[str, Any],
) -> dd.DataFrame:
    planned = plan(
        call, format, source, {**options, "columns": columns, "filters": filters}, _cache_arg
    )
    parts = _parts(planned, blocksize)
    categories = _categories(planned)
    meta = to_pandas(planned.scan.schema.empty_table(), categories)
    return dd.from_map(
        ReadPartition(planned.scan, categories),
        parts,
        meta=meta,
        label=f"fastingest-read-{format}",
        enforce_metadata=False,
    )


def _parts(planned: Planned, blocksize: int | str | None) -> list[Part]:
    if blocksize is None:
        # One partition per file: a target no file's units reach together
        # would merge files, so cut at every file boundary instead.
        return planned.parts_by_file()
    try:
        target = parse_bytes(blocksize)
    except (ValueError, TypeError) as e:
        raise InvalidArgumentError(
            f"blocksize: {blocksize!r} is not a size such as '256MiB'"
        ) from e
    if isinstance(blocksize, bool) or target <= 0:
        raise InvalidArgumentError(f"blocksize must be positive, not {blocksize!r}")
    return planned.parts_of_size(target)


def _categories(planned: Planned) -> dict[str, pa.Array]:
    """Every value of each inferred (dictionary) partition key."""
    import pyarrow as pa

    if planned.partitions is None:
        return {}
    return {
        f.name: planned.partitions.column(i).dictionary
        for i, f in enumerate(planned.partitions.schema)
        if pa.types.is_dictionary(f.type)
    }


def to_pandas(table: pa.Table, categories: dict[str, pa.Array]) -> pd.DataFrame:
    """`table` as pandas, partition keys as categoricals over all their
    values (a partition holds only some of them), other dictionary columns
    with categories Dask treats as unknown."""
    import pandas as pd
    import pyarrow as pa
    from dask.dataframe.utils import clear_known_categories

    frame = table.to_pandas()
    unknown = []
    for field in table.schema:
        if field.name in categories:
            values = pd.Index(categories[field.name].to_pandas())
            frame[field.name] = frame[field.name].cat.set_categories(values)
        elif pa.types.is_dictionary(field.type):
            unknown.append(field.name)
    if unknown and len(frame) == 0:
        frame = clear_known_categories(frame, cols=unknown)
    return frame
