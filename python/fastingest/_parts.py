"""A dataset cut into read tasks for a cluster engine (``fastingest.ray``,
``fastingest.dask``).

The driver opens the dataset once (footers, statistics pruning, one schema
with the partition keys) and groups its units (Parquet row groups, ORC
stripes), in file order, into :class:`Part` s: small picklable descriptions
(locations and unit indices, no bytes). A task opens only its part's files,
with the dataset's schema and partition key types fixed by the driver so
that every task's table has the same schema, and streams its units through
the same Rust reader as every other read (fetch ahead, GIL released).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from ._fastingest import open_orc_units, open_parquet_units
from ._interrupt import import_module
from ._options import read_args
from .exceptions import InvalidArgumentError

if TYPE_CHECKING:
    import pyarrow as pa

    from ._fastingest import Cache, Config, Units

Format = Literal["parquet", "orc"]

# The keywords the cluster readers pass on to the read (row or stripe
# selection is theirs to make, so `row_groups`/`stripes` are not among them).
PLAN_KEYS = (
    "columns",
    "filters",
    "read_dictionary",
    "binary_type",
    "partitioning",
    "schema",
    "storage_options",
    "config",
    "cache",
)

# Bytes a task's reader may fetch ahead of its consumer: enough for every
# connection of the default Config to stay busy.
TASK_AHEAD_BYTES = 256 << 20


@dataclass(frozen=True)
class Part:
    """One read task: units of one or more files, in file order."""

    locations: tuple[str, ...] = field(repr=False)
    """What opens the files (a presigned URL keeps its signature)."""
    units: tuple[tuple[int, int], ...]
    """``(file, index)``: the file's position in ``locations`` and the row
    group's (stripe's) index in that file."""
    num_rows: int
    """Rows of the units before any row filter."""
    size_bytes: int
    """About how many bytes the units take decoded."""
    names: tuple[str, ...] = ()
    """The files for display (no credentials or URL signatures)."""


@dataclass(frozen=True)
class Scan:
    """What every task of one read shares: how to open and read a part."""

    format: Format
    schema: pa.Schema
    """The tables' schema (the columns read, partition keys included)."""
    columns: tuple[str, ...] | None
    filters: Any
    """The normalised DNF the Rust reader applies (None: every row)."""
    partition_types: tuple[tuple[str, pa.DataType], ...] | None
    """The keys and their value types, fixed by the driver; None: no keys."""
    storage_options: dict[str, Any] | None = field(default=None, repr=False)
    config: Config | None = None
    cache: Cache | None = None
    planned_filters: Any = None
    """The filters the driver planned with: a task whose filters add to
    them may find fewer units in its files (statistics rule them out)."""
    read_dictionary: tuple[str, ...] | None = None
    """Columns read as dictionaries (Parquet's ``read_dictionary``)."""
    binary_type: str | None = None
    """The layout of string and binary columns (Parquet's ``binary_type``,
    by name)."""

    def __repr__(self) -> str:
        # Storage options carry credentials: name their keys, never values.
        keys = sorted(self.storage_options or {})
        return (
            f"Scan(format={self.format!r}, columns={self.columns!r}, "
            f"filters={self.filters!r}, storage_options=<{len(keys)} keys: "
            f"{', '.join(keys)}>)"
        )

    def project(self, columns: Sequence[str]) -> Scan:
        """This scan reading only `columns` (names of its schema)."""
        missing = [c for c in columns if c not in self.schema.names]
        if missing:
            raise InvalidArgumentError(f"columns {missing} are not in the dataset's schema")
        return replace(self, columns=tuple(columns), schema=select(self.schema, columns))

    def read(self, part: Part) -> pa.Table:
        """Reads `part` into one table under :attr:`schema`."""
        pa = import_module("pyarrow")  # Ctrl-C kept (see _interrupt)
        return pa.Table.from_batches(list(self.stream(part)), schema=self.schema)

    def stream(self, part: Part) -> Iterator[pa.RecordBatch]:
        """`part`'s record batches under :attr:`schema`, in unit order, read
        ahead by up to :data:`TASK_AHEAD_BYTES`."""
        if not part.units:
            return iter(())
        opened = self._open(list(part.locations))
        # By location: a filter on partition keys may drop files here, which
        # renumbers those that stay.
        # (A file named directly may be named as it was asked for, or by
        # its key: either matches.)
        asked = set(part.locations)
        names = [n if n in asked else reopenable(n) for n in opened.sources()]
        where = {(names[u[0]], u[1]): position for position, u in enumerate(opened.units())}
        order = []
        for unit in part.units:
            position = where.get((part.locations[unit[0]], unit[1]))
            if position is not None:
                order.append(position)
            elif self.filters is self.planned_filters:
                raise InvalidArgumentError(
                    f"{part.names[unit[0]]}: unit {unit[1]} was planned but the file no "
                    "longer has it (did the file change since the read was planned?)"
                )
        return iter(opened.stream(order, TASK_AHEAD_BYTES))

    def _open(self, locations: list[str]) -> Units:
        options: dict[str, Any] = {
            "columns": None if self.columns is None else list(self.columns),
            "read_dictionary": self.read_dictionary,
            "binary_type": self.binary_type,
            "schema": self.schema,
            "partitioning": None if self.partition_types is None else dict(self.partition_types),
            "storage_options": self.storage_options,
            "config": self.config,
            "cache": self.cache,
        }
        args = read_args("read", options, PLAN_KEYS, lambda c: c)
        args["filters"] = self.filters
        opener = open_parquet_units if self.format == "parquet" else open_orc_units
        return opener(locations, args)


@dataclass(frozen=True)
class Planned:
    """A dataset opened on the driver: how to read it, and its units."""

    scan: Scan
    locations: list[str]
    """What opens each file again (never for display)."""
    names: list[str]
    """The files for display."""
    units: list[tuple[int, int, int, int, int]]
    """``(file, index, num_rows, fetch_bytes, decoded_bytes)`` per unit."""
    partitions: pa.RecordBatch | None
    """The partition keys, one row per file."""

    def total_bytes(self) -> int:
        return sum(u[4] for u in self.units)

    def parts_of_size(self, target_bytes: int) -> list[Part]:
        """Consecutive units grouped until a group reaches `target_bytes`
        decoded (a unit larger than that is a part alone)."""
        groups: list[list[int]] = []
        size = 0
        for i, unit in enumerate(self.units):
            if not groups or size >= target_bytes:
                groups.append([])
                size = 0
            groups[-1].append(i)
            size += unit[4]
        return self._parts(groups)

    def parts_by_file(self) -> list[Part]:
        """One part per file (its units that the statistics leave)."""
        groups: dict[int, list[int]] = {}
        for i, unit in enumerate(self.units):
            groups.setdefault(unit[0], []).append(i)
        return self._parts(list(groups.values()))

    def parts_of_count(self, count: int) -> list[Part]:
        """The units cut into `count` runs of about equal decoded bytes (fewer
        when there are fewer units)."""
        n = len(self.units)
        count = max(1, min(count, n))
        total = self.total_bytes()
        groups: list[list[int]] = []
        done = 0
        for i, unit in enumerate(self.units):
            # Unit i goes to the run its midpoint falls in, never leaving a
            # later run without units.
            mid = done + unit[4] / 2
            run = int(mid * count / total) if total else i * count // n
            run = min(run, count - 1, len(groups) if groups else 0)
            run = max(run, count - (n - i))
            while len(groups) <= run:
                groups.append([])
            groups[run].append(i)
            done += unit[4]
        return self._parts([g for g in groups if g])

    def _parts(self, groups: list[list[int]]) -> list[Part]:
        if not groups:
            # No unit left (every row group ruled out): one empty part keeps
            # the schema in the engine's dataset.
            return [Part((), (), 0, 0)]
        parts = []
        for group in groups:
            files: list[int] = []
            for i in group:
                if self.units[i][0] not in files:
                    files.append(self.units[i][0])
            local = {f: k for k, f in enumerate(files)}
            parts.append(
                Part(
                    locations=tuple(reopenable(self.locations[f]) for f in files),
                    names=tuple(self.names[f] for f in files),
                    units=tuple((local[self.units[i][0]], self.units[i][1]) for i in group),
                    num_rows=sum(self.units[i][2] for i in group),
                    size_bytes=sum(self.units[i][4] for i in group),
                )
            )
        return parts


def plan(
    call: str, format: Format, source: Any, options: dict[str, Any], cache_arg: Any
) -> Planned:
    """Opens `source` on the driver (footers only) as `call` was asked to."""
    args = read_args(call, options, PLAN_KEYS, cache_arg)
    for keyword in ("read_dictionary", "binary_type"):
        if format == "orc" and args[keyword] is not None:
            raise InvalidArgumentError(f"{call}: {keyword} applies to Parquet, not ORC")
    opener = open_parquet_units if format == "parquet" else open_orc_units
    opened = opener(source, args)
    partitions = opened.partitions()
    types = None
    if partitions is not None:
        pa = import_module("pyarrow")  # Ctrl-C kept (see _interrupt)
        types = tuple(
            (f.name, f.type.value_type if pa.types.is_dictionary(f.type) else f.type)
            for f in partitions.schema
        )
    scan = Scan(
        format=format,
        schema=opened.schema,
        columns=None if args["columns"] is None else tuple(args["columns"]),
        filters=args["filters"],
        partition_types=types,
        storage_options=args["storage_options"],
        config=args["config"],
        cache=args["cache"],
        planned_filters=args["filters"],
        read_dictionary=None if args["read_dictionary"] is None else tuple(args["read_dictionary"]),
        binary_type=args["binary_type"],
    )
    return Planned(scan, opened.sources(), opened.locations(), opened.units(), partitions)


def select(schema: pa.Schema, names: Sequence[str]) -> pa.Schema:
    """`schema`'s fields `names`, in that order (its metadata kept)."""
    pa = import_module("pyarrow")  # Ctrl-C kept (see _interrupt)
    return pa.schema([schema.field(n) for n in names], metadata=schema.metadata)


def reopenable(location: str) -> str:
    """A file's location (as the reader names it) as a source that opens
    exactly that file again: an object key's ``%``, ``?`` and ``#`` are
    percent-encoded (URLs are decoded when opened), and glob characters are
    escaped (``[*]``), so that ``cat=a%20b`` stays ``cat=a%20b`` and
    ``part[1]`` is not a pattern. http(s) URLs are already what was asked for."""
    scheme, sep, rest = location.partition("://")
    if sep and scheme in ("http", "https"):
        return location
    if sep:
        authority, slash, key = rest.partition("/")
        key = key.replace("%", "%25").replace("?", "%3F").replace("#", "%23")
        location = f"{scheme}://{authority}{slash}{key}"
    if any(c in location for c in "*?["):
        location = "".join(f"[{c}]" if c in "*?[" else c for c in location)
    return location
