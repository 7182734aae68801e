"""fastingest as a Ray Data datasource.

``fastingest.ray.read_parquet(source, ...)`` and ``read_orc`` return a
``ray.data.Dataset`` whose read tasks read with fastingest: every fetch and
decode in Rust with the GIL released, through the node's on-disk cache when
one is given. Ray does the scheduling; fastingest only says what each task
reads. The driver reads the footers once and groups the row groups
(stripes) into tasks; each task ships a small description (file locations
and unit indices), opens only its own files and returns one Arrow table.

Each task's metadata is exact without reading data: rows (when no row
filter applies), decoded bytes, input files. Column selections Ray pushes
down (``ds.select_columns``) and filters it pushes down (``ds.filter(expr=...)``)
are applied in the read: comparisons and ``is_in`` prune row groups by
their statistics and filter rows in Rust, anything else is evaluated on the
task's table.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Unpack

from . import _cache_arg
from ._options import ClusterOptions, Filters
from ._parts import Format, Planned, Scan, plan, select

try:
    import ray
    from ray.data import Datasource, ReadTask
    from ray.data.block import BlockMetadata
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError("fastingest.ray needs Ray Data: pip install 'ray[data]'") from e

try:
    from ray.data._internal.arrow_block import _BATCH_SIZE_PRESERVING_STUB_COL_NAME
except ImportError:  # pragma: no cover - the name Ray 2.x has used throughout
    _BATCH_SIZE_PRESERVING_STUB_COL_NAME = "__bsp_stub"
_ROW_COUNT_STUB = _BATCH_SIZE_PRESERVING_STUB_COL_NAME

# Tasks per cluster CPU when the caller leaves the count to fastingest, and
# the most decoded bytes one such task should read. One wave of tasks: each
# fetches in parallel inside itself and streams its blocks to Ray as it
# reads, so a second wave only adds Ray's per-task cost (2 CPUs, cloud link,
# 203 MB: 0.58 s steady with one task per CPU, 0.92 s with two).
TASKS_PER_CPU = 1
TASK_BYTES = 1 << 30

if TYPE_CHECKING:
    import pyarrow as pa
    from ray.data.expressions import Expr

__all__ = ["FastingestDatasource", "read_orc", "read_parquet"]


class FastingestDatasource(Datasource):
    """A Parquet or ORC dataset read by fastingest, as Ray Data reads it.

    Made by :func:`read_parquet` / :func:`read_orc`; the footers are read
    when it is made, so a bad path or a schema conflict raises there."""

    def __init__(self, planned: Planned, num_blocks: int | None = None) -> None:
        super().__init__()
        self._planned = planned
        # The task count the caller asked for (`override_num_blocks`); None:
        # fastingest picks it (see `task_count`), not Ray's default.
        self._num_blocks = num_blocks
        # Ray's projection mixin reads this but leaves setting it to us.
        self._projection_map: dict[str, str] | None = None

    def get_name(self) -> str:
        return f"Fastingest{self._planned.scan.format.capitalize()}"

    def estimate_inmemory_data_size(self) -> int:
        return self._planned.total_bytes()

    def supports_projection_pushdown(self) -> bool:
        return True

    def supports_predicate_pushdown(self) -> bool:
        return True

    def get_read_tasks(
        self,
        parallelism: int,
        per_task_row_limit: int | None = None,
        data_context: Any = None,
    ) -> list[ReadTask]:
        scan, post_filter = self._scan()
        count = parallelism if self._num_blocks is not None else min(parallelism, self.task_count())
        parts = self._planned.parts_of_count(max(1, count))
        exact_rows = scan.filters is None and post_filter is None
        tasks = []
        for part in parts:
            metadata = BlockMetadata(
                num_rows=part.num_rows if exact_rows else None,
                size_bytes=part.size_bytes,
                exec_stats=None,
                input_files=list(part.names),
            )
            tasks.append(
                ReadTask(
                    _ReadPart(scan, part, post_filter),
                    metadata,
                    schema=_output_schema(scan, post_filter),
                    per_task_row_limit=per_task_row_limit,
                )
            )
        return tasks

    def task_count(self) -> int:
        """Tasks for a read whose count the caller left to us.

        Ray's default asks for many small blocks (200, or one per MiB of
        small data); each fastingest task pays for opening its files and
        fetches in parallel inside itself, so fewer, larger tasks are
        faster: one per CPU of the cluster, more when each would pass
        :data:`TASK_BYTES` decoded; never more than the data has units."""
        try:
            cpus = int(ray.cluster_resources().get("CPU", 1))
        except Exception:  # noqa: BLE001 - no cluster info: a small default
            cpus = 1
        by_bytes = -(-self._planned.total_bytes() // TASK_BYTES)
        units = len(self._planned.units)
        return max(1, min(units, max(TASKS_PER_CPU * cpus, by_bytes)))

    def _scan(self) -> tuple[Scan, tuple[Expr, tuple[str, ...]] | None]:
        """The scan with Ray's projection and predicate applied: the
        predicate as fastingest filters when it translates exactly, else as
        a filter evaluated on each task's table (with the columns it needs)."""
        scan = self._planned.scan
        columns = self._get_data_columns()
        if columns is not None:
            scan = scan.project(list(columns))
        predicate = self.get_current_predicate()
        if predicate is None:
            return scan, None
        translated = _to_filters(predicate)
        if translated is not None:
            return dataclasses.replace(scan, filters=_and(scan.filters, translated)), None
        needed = _referenced_columns(predicate)
        output = tuple(scan.schema.names)
        wider = [c for c in self._planned.scan.schema.names if c in output or c in needed]
        return self._planned.scan.project(wider), (predicate, output)


def _output_schema(scan: Scan, post_filter: tuple[Any, tuple[str, ...]] | None) -> pa.Schema:
    if post_filter is None:
        return scan.schema
    return select(scan.schema, post_filter[1])


class _ReadPart:
    """A read task's function: small, picklable, no credentials in its repr."""

    def __init__(self, scan: Scan, part: Any, post_filter: Any) -> None:
        self.scan, self.part, self.post_filter = scan, part, post_filter

    def __repr__(self) -> str:
        return f"fastingest read of {len(self.part.units)} units in {list(self.part.names)}"

    def __call__(self) -> Iterator[pa.Table]:
        """The part as blocks of about Ray's target block size, each yielded
        as soon as it is read (Ray streams them on while the rest decodes)."""
        import pyarrow as pa

        target = _target_block_bytes()
        pending: list[pa.RecordBatch] = []
        size = 0
        emitted = False
        for batch in self.scan.stream(self.part):
            pending.append(batch)
            size += batch.nbytes
            if size >= target:
                yield self._finish(pa.Table.from_batches(pending, schema=self.scan.schema))
                pending, size, emitted = [], 0, True
        if pending or not emitted:
            yield self._finish(pa.Table.from_batches(pending, schema=self.scan.schema))

    def _finish(self, table: pa.Table) -> pa.Table:
        if self.post_filter is not None:
            predicate, output = self.post_filter
            table = table.filter(predicate.to_pyarrow()).select(list(output))
        if table.num_columns == 0 and table.num_rows > 0:
            # A table without columns loses its row count when Ray
            # concatenates it (`ds.count()` projects every column away):
            # Ray's own stub column keeps it, as its Parquet reader does.
            import pyarrow as pa

            table = table.append_column(_ROW_COUNT_STUB, pa.nulls(table.num_rows))
        return table


def _target_block_bytes() -> int:
    """Ray's target block size (DataContext), 128 MiB when unset."""
    try:
        return int(ray.data.DataContext.get_current().target_max_block_size or (128 << 20))
    except Exception:  # noqa: BLE001 - older Ray: its long-standing default
        return 128 << 20


def read_parquet(
    source: Any,
    *,
    columns: Sequence[str] | None = None,
    filters: Filters | None = None,
    override_num_blocks: int | None = None,
    concurrency: int | None = None,
    ray_remote_args: dict[str, Any] | None = None,
    **options: Unpack[ClusterOptions],
) -> ray.data.Dataset:
    """Reads Parquet `source` (paths, URLs, globs, directories, as
    :func:`fastingest.read_parquet`) as a ``ray.data.Dataset``.

    ``override_num_blocks=n`` asks for n read tasks (fewer when the data has
    fewer row groups); by default one per cluster CPU (more when a task
    would pass 1 GiB decoded), never more than the data has row groups.
    ``concurrency`` and ``ray_remote_args`` go to ``ray.data.read_datasource``.
    Tasks carry ``storage_options`` to the workers (never into logs or
    reprs); a ``cache`` must be a directory on each node (a local disk),
    shared by that node's workers."""
    return _read(
        "fastingest.ray.read_parquet",
        "parquet",
        source,
        columns,
        filters,
        override_num_blocks,
        concurrency,
        ray_remote_args,
        options,
    )


def read_orc(
    source: Any,
    *,
    columns: Sequence[str] | None = None,
    filters: Filters | None = None,
    override_num_blocks: int | None = None,
    concurrency: int | None = None,
    ray_remote_args: dict[str, Any] | None = None,
    **options: Unpack[ClusterOptions],
) -> ray.data.Dataset:
    """Reads ORC `source` as a ``ray.data.Dataset``: :func:`read_parquet`'s
    keywords, stripes in place of row groups."""
    return _read(
        "fastingest.ray.read_orc",
        "orc",
        source,
        columns,
        filters,
        override_num_blocks,
        concurrency,
        ray_remote_args,
        options,
    )


def _read(
    call: str,
    format: Format,
    source: Any,
    columns: Any,
    filters: Any,
    override_num_blocks: int | None,
    concurrency: int | None,
    ray_remote_args: dict[str, Any] | None,
    options: dict[str, Any],
) -> ray.data.Dataset:
    if override_num_blocks is not None and (
        isinstance(override_num_blocks, bool)
        or not isinstance(override_num_blocks, int)
        or override_num_blocks < 1
    ):
        from .exceptions import InvalidArgumentError

        raise InvalidArgumentError(
            f"override_num_blocks must be a positive int, not {override_num_blocks!r}"
        )
    everything = {**options, "columns": columns, "filters": filters}
    planned = plan(call, format, source, everything, _cache_arg)
    if planned.scan.binary_type == "binary_view":
        from .exceptions import InvalidArgumentError

        # Ray Data's blocks fail on view columns in its own code, in a task,
        # with no word of where they came from: refused here instead.
        raise InvalidArgumentError(
            f"{call}: Ray Data does not take string_view or binary_view columns; "
            "pass binary_type=pyarrow.large_binary() or pyarrow.binary(), or leave it out"
        )
    datasource = FastingestDatasource(planned, override_num_blocks)
    # Ray is told the task count even when fastingest picks it: left to
    # itself, Ray splits each task's output into many small blocks to reach
    # its default parallelism (200), which on a 2-CPU node took a third of
    # a warm read's time.
    return ray.data.read_datasource(
        datasource,
        override_num_blocks=override_num_blocks or datasource.task_count(),
        concurrency=concurrency,
        ray_remote_args=ray_remote_args,
    )


# Ray expression operations that are exactly a fastingest comparison: rows
# where either side is null match neither (as Arrow's filter drops them).
_COMPARISONS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_FLIPPED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
# Past this many AND terms, a predicate stays a filter on the table.
_MAX_TERMS = 64


def _to_filters(expr: Any) -> list[list[tuple[str, str, Any]]] | None:
    """A Ray expression as fastingest's DNF, or None when it has a part
    that has no exact equivalent (`not`, `is_null`, arithmetic, ...)."""
    from ray.data.expressions import BinaryExpr, ColumnExpr, LiteralExpr

    if not isinstance(expr, BinaryExpr):
        return None
    op = expr.op.value
    if op in ("and", "or"):
        left, right = _to_filters(expr.left), _to_filters(expr.right)
        if left is None or right is None:
            return None
        if op == "or":
            terms = left + right
        else:
            terms = [a + b for a in left for b in right]
        return terms if len(terms) <= _MAX_TERMS else None
    if op == "in" and isinstance(expr.left, ColumnExpr) and isinstance(expr.right, LiteralExpr):
        values = expr.right.value
        if isinstance(values, (list, tuple, set, frozenset)) and None not in values:
            return [[(expr.left.name, "in", list(values))]]
        return None
    if op not in _COMPARISONS:
        return None
    name = _COMPARISONS[op]
    left, right = expr.left, expr.right
    if isinstance(left, ColumnExpr) and isinstance(right, LiteralExpr):
        column, value = left.name, right.value
    elif isinstance(left, LiteralExpr) and isinstance(right, ColumnExpr):
        column, value, name = right.name, left.value, _FLIPPED[name]
    else:
        return None
    if value is None:
        return None
    return [[(column, name, value)]]


def _and(a: Any, b: list[list[tuple[str, str, Any]]]) -> Any:
    """Normalised filters `a` (None, or a DNF) AND `b`."""
    from ._filters import normalize

    b_norm = normalize(b)
    if a is None:
        return b_norm
    return [x + y for x in a for y in b_norm]


def _referenced_columns(expr: Any) -> set[str]:
    """Every column name `expr` reads."""
    from ray.data.expressions import ColumnExpr

    found: set[str] = set()
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ColumnExpr):
            found.add(node.name)
            continue
        for child in ("left", "right", "operand", "expr"):
            value = getattr(node, child, None)
            if value is not None and hasattr(value, "to_pyarrow"):
                stack.append(value)
    return found
