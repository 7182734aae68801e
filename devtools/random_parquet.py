"""Random Parquet files and random reads of them, for differential runs
against pyarrow: every type pyarrow writes, nested up to three deep in
structs, lists, fixed-size lists and maps, with nulls, dictionaries, all
encodings pyarrow offers per type, both page versions, tiny to large pages
and row groups, page indexes, with and without the stored Arrow schema.

A seed gives one file and the reads of it: the whole file, a column subset,
random filters (literals of the column's type and of others, fractions over
integers, nulls, NaN), two row groups, and the streamed batches.

    python -m devtools.random_parquet --seeds 0-999

prints each seed whose reads differ from pyarrow's, and a count.
"""

from __future__ import annotations

import argparse
import decimal
import math
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

PRIMITIVES = [
    pa.bool_(),
    pa.int8(),
    pa.int16(),
    pa.int32(),
    pa.int64(),
    pa.uint8(),
    pa.uint16(),
    pa.uint32(),
    pa.uint64(),
    pa.float16(),
    pa.float32(),
    pa.float64(),
    pa.decimal128(5, 2),
    pa.decimal128(12, 3),
    pa.decimal128(18, 0),
    pa.decimal128(30, 10),
    pa.decimal128(38, 38),
    pa.decimal256(50, 5),
    pa.date32(),
    pa.time32("s"),
    pa.time32("ms"),
    pa.time64("us"),
    pa.time64("ns"),
    pa.timestamp("s"),
    pa.timestamp("ms"),
    pa.timestamp("us"),
    pa.timestamp("ns"),
    pa.timestamp("us", "UTC"),
    pa.timestamp("ns", "Europe/Paris"),
    pa.duration("s"),
    pa.duration("ns"),
    pa.string(),
    pa.large_string(),
    pa.binary(),
    pa.large_binary(),
    pa.binary(7),
    pa.string_view(),
    pa.binary_view(),
    pa.dictionary(pa.int32(), pa.string()),
]

# Decimals pyarrow stores as int32 / int64 take the integer encodings.
_DECIMALS_AS_INTEGERS = {pa.decimal128(5, 2), pa.decimal128(12, 3), pa.decimal128(18, 0)}


def random_type(rng: np.random.Generator, depth: int = 0) -> pa.DataType:
    if depth < 3 and rng.random() < 0.3:
        kind = int(rng.integers(0, 5))
        child = random_type(rng, depth + 1)
        if kind == 0:
            fields = [
                pa.field(f"f{i}", random_type(rng, depth + 1), nullable=bool(rng.random() < 0.8))
                for i in range(int(rng.integers(1, 4)))
            ]
            return pa.struct(fields)
        if kind == 1:
            return pa.list_(pa.field("element", child, nullable=bool(rng.random() < 0.8)))
        if kind == 2:
            return pa.large_list(child)
        if kind == 3:
            return pa.list_(child, int(rng.integers(1, 4)))
        key = [pa.int8(), pa.int32(), pa.int64(), pa.large_string()][int(rng.integers(0, 4))]
        return pa.map_(key, child)
    return PRIMITIVES[int(rng.integers(0, len(PRIMITIVES)))]


def _values(t: pa.DataType, n: int, rng: np.random.Generator) -> pa.Array:
    """n random non-null values of a primitive type."""
    if pa.types.is_boolean(t):
        return pa.array(rng.random(n) < 0.5)
    if pa.types.is_integer(t):
        info = np.iinfo(t.to_pandas_dtype())
        return pa.array(rng.integers(info.min, info.max, n, dtype=info.dtype, endpoint=True), t)
    if pa.types.is_float16(t):
        return pa.array(rng.standard_normal(n).astype(np.float16), t)
    if pa.types.is_floating(t):
        v = rng.standard_normal(n).astype(t.to_pandas_dtype())
        v[rng.random(n) < 0.01] = np.nan
        return pa.array(v, t)
    if pa.types.is_decimal(t):
        limit = 10 ** min(t.precision, 18)
        unscaled = rng.integers(-limit + 1, limit, n)
        return pa.array([decimal.Decimal(int(u)).scaleb(-t.scale) for u in unscaled], t)
    if pa.types.is_date32(t):
        return pa.array(rng.integers(-100_000, 100_000, n, dtype=np.int32), pa.int32()).cast(t)
    if pa.types.is_time32(t):
        limit = 86_400 if t.unit == "s" else 86_400_000
        return pa.array(rng.integers(0, limit, n, dtype=np.int32), pa.int32()).cast(t)
    if pa.types.is_time64(t):
        limit = 86_400 * (10**6 if t.unit == "us" else 10**9)
        return pa.array(rng.integers(0, limit, n), pa.int64()).cast(t)
    if pa.types.is_timestamp(t):
        # Within Python's datetime (years 1-9999), for the filters' literals.
        per_second = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}[t.unit]
        limit = 2**62 if t.unit == "ns" else 2**35 * per_second
        return pa.array(rng.integers(-limit, limit, n), pa.int64()).cast(t)
    if pa.types.is_duration(t):
        return pa.array(rng.integers(-(2**40), 2**40, n), pa.int64()).cast(t)
    if pa.types.is_fixed_size_binary(t):
        return pa.array([rng.bytes(t.byte_width) for _ in range(n)], t)
    lengths = rng.integers(0, 30, n)
    if t in (pa.string(), pa.large_string()):
        letters = list("abcdeé€😀xyz")
        return pa.array(["".join(rng.choice(letters, size=int(k))) for k in lengths], t)
    return pa.array([rng.bytes(int(k)) for k in lengths], t)


def random_array(
    t: pa.DataType, n: int, rng: np.random.Generator, null_share: float, distinct: int | None
) -> pa.Array:
    """n values of type t, a share of them null at every level, drawn from
    `distinct` values where given."""
    mask = pa.array(rng.random(n) < null_share) if null_share > 0 else None
    if pa.types.is_struct(t):
        children = [
            random_array(f.type, n, rng, null_share if f.nullable else 0.0, distinct) for f in t
        ]
        return pa.StructArray.from_arrays(children, fields=list(t), mask=mask)
    if pa.types.is_fixed_size_list(t):
        item_nulls = null_share if t.value_field.nullable else 0.0
        items = random_array(t.value_type, n * t.list_size, rng, item_nulls, distinct)
        return pa.FixedSizeListArray.from_arrays(items, type=t, mask=mask)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(rng.integers(0, 4, n), out=offsets[1:])
        total = int(offsets[-1])
        if pa.types.is_map(t):
            keys = random_array(t.key_type, total, rng, 0.0, None)
            items = random_array(t.item_type, total, rng, null_share, distinct)
            return pa.MapArray.from_arrays(
                pa.array(offsets.astype(np.int32)), keys, items, type=t, mask=mask
            )
        item_nulls = null_share if t.value_field.nullable else 0.0
        items = random_array(t.value_type, total, rng, item_nulls, distinct)
        large = pa.types.is_large_list(t)
        cls = pa.LargeListArray if large else pa.ListArray
        offset_array = pa.array(offsets.astype(np.int64 if large else np.int32))
        return cls.from_arrays(offset_array, items, type=t, mask=mask)
    plain = t.value_type if pa.types.is_dictionary(t) else t
    view = plain in (pa.string_view(), pa.binary_view())
    base = {pa.string_view(): pa.string(), pa.binary_view(): pa.binary()}.get(plain, plain)
    pool = _values(base, distinct or n, rng)
    array = pool.take(pa.array(rng.integers(0, len(pool), n)))
    if mask is not None:
        array = pc.if_else(mask, pa.nulls(n, base), array)
    if pa.types.is_dictionary(t):
        array = array.dictionary_encode()
    return array.cast(plain) if view else array


def random_table(rng: np.random.Generator) -> pa.Table:
    n = int(rng.choice([1, 50, 3000, 20000]))
    null_share = float(rng.choice([0.0, 0.1, 0.5, 1.0]))
    distinct = int(rng.choice([0, 3, 100])) or None
    columns = {
        f"c{i}": random_array(random_type(rng), n, rng, null_share, distinct)
        for i in range(int(rng.integers(1, 6)))
    }
    table = pa.table(columns)
    flat = [c for c in table.column_names if _filterable(table[c].type)]
    if flat and rng.random() < 0.4:
        # Sorted data gives row groups and pages statistics that rule some
        # out (pyarrow cannot take from views: those stay unsorted).
        try:
            table = table.sort_by(flat[0])
        except pa.ArrowNotImplementedError:
            pass
    return table


def _leaves(name: str, t: pa.DataType) -> Iterator[tuple[str, pa.DataType]]:
    """The Parquet paths of a column's leaves, as `column_encoding` names them."""
    if pa.types.is_struct(t):
        for f in t:
            yield from _leaves(f"{name}.{f.name}", f.type)
    elif pa.types.is_map(t):
        yield from _leaves(f"{name}.key_value.key", t.key_type)
        yield from _leaves(f"{name}.key_value.value", t.item_type)
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        yield from _leaves(f"{name}.list.element", t.value_type)
    else:
        yield name, t


def _encodings(t: pa.DataType) -> list[str]:
    """The encodings pyarrow writes for a leaf of type t."""
    if pa.types.is_boolean(t):
        return ["PLAIN", "RLE"]
    if pa.types.is_float16(t) or pa.types.is_fixed_size_binary(t):
        return ["BYTE_STREAM_SPLIT", "PLAIN", "DELTA_BYTE_ARRAY"]
    if pa.types.is_floating(t):
        return ["BYTE_STREAM_SPLIT", "PLAIN"]
    if pa.types.is_decimal(t):
        if t in _DECIMALS_AS_INTEGERS:
            return ["DELTA_BINARY_PACKED", "BYTE_STREAM_SPLIT", "PLAIN"]
        return ["BYTE_STREAM_SPLIT", "PLAIN", "DELTA_BYTE_ARRAY"]
    if pa.types.is_integer(t) or pa.types.is_temporal(t):
        return ["DELTA_BINARY_PACKED", "BYTE_STREAM_SPLIT", "PLAIN"]
    return ["DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY", "PLAIN"]


def write_random(table: pa.Table, path: Path, rng: np.random.Generator) -> dict[str, Any]:
    """Writes `table` with random writer options; returns them."""
    options: dict[str, Any] = {
        "compression": str(rng.choice(["none", "snappy", "zstd", "gzip", "lz4", "brotli"])),
        "data_page_version": str(rng.choice(["1.0", "2.0"])),
        "row_group_size": int(rng.choice([100, 1000, 5000, 100000])),
        "data_page_size": int(rng.choice([64, 1024, 8192, 1 << 20])),
        "write_statistics": bool(rng.random() < 0.8),
        "store_schema": bool(rng.random() < 0.7),
        "write_page_index": bool(rng.random() < 0.5),
    }
    if rng.random() < 0.3:
        options["write_batch_size"] = int(rng.choice([7, 64, 1024]))
    leaves = [leaf for f in table.schema for leaf in _leaves(f.name, f.type)]
    draw = rng.random()
    if draw < 0.3:
        dictionary: set[str] = set()
    elif draw < 0.6:
        dictionary = {path for path, _ in leaves if rng.random() < 0.5}
    else:
        dictionary = {path for path, _ in leaves}
    options["use_dictionary"] = (
        True if draw >= 0.6 else (sorted(dictionary) if dictionary else False)
    )
    if draw < 0.6:
        chosen = {
            path: str(rng.choice(_encodings(t)))
            for path, t in leaves
            if path not in dictionary and not pa.types.is_dictionary(t) and rng.random() < 0.5
        }
        if chosen:
            options["column_encoding"] = chosen
    if rng.random() < 0.2:
        options["dictionary_pagesize_limit"] = int(rng.choice([64, 1024]))
    if rng.random() < 0.4:
        # Bloom filters on some flat columns, small enough (few distinct
        # values, a high false-positive rate) to be read and to rule out.
        blooms = {
            path: {"ndv": int(rng.choice([8, 64, 4096])), "fpp": float(rng.choice([0.01, 0.3]))}
            for path, t in leaves
            if "." not in path and rng.random() < 0.6
        }
        if blooms:
            options["bloom_filter_options"] = blooms
    pq.write_table(table, path, **options)
    return options


def _filterable(t: pa.DataType) -> bool:
    return not (
        pa.types.is_nested(t)
        or pa.types.is_dictionary(t)
        or pa.types.is_float16(t)
        or pa.types.is_fixed_size_binary(t)
        or pa.types.is_time(t)
        or pa.types.is_duration(t)
        or pa.types.is_binary_view(t)
        or pa.types.is_string_view(t)
    )


def _exact_in_float64(v: Any) -> bool:
    """Whether pyarrow's own comparison of v (cast with its column to
    float64) is exact: it is not past 2**53."""
    return abs(v) < 2**52


def _literal(v: Any, rng: np.random.Generator) -> Any:
    """v, or a literal near it of another type: a fraction beside an
    integer, an integer past a type's range, a float no float32 holds."""
    draw = rng.random()
    if isinstance(v, bool):
        return v
    if isinstance(v, int) and draw < 0.3 and _exact_in_float64(v):
        return v + float(rng.choice([0.5, -0.5, 0.25]))
    if isinstance(v, int) and draw < 0.4:
        return int(rng.choice([-1, 2**40, -(2**40), 255, 256, 0]))
    if isinstance(v, float) and draw < 0.3:
        return float(rng.choice([0.1, -0.3, 1e-7, 1e30, math.inf, -math.inf, -0.0, 0.0]))
    if isinstance(v, str | bytes) and draw < 0.2:
        return v + v[:1] * 2  # most likely in no row: a bloom filter rules it out
    if isinstance(v, decimal.Decimal) and draw < 0.3:
        if rng.random() < 0.5:
            return v + decimal.Decimal("0.0001")
        return float(v) + 0.001 if _exact_in_float64(v) else v
    return v


def random_filter(rng: np.random.Generator, table: pa.Table) -> list | None:
    """A random DNF filter on the table's flat columns; None where there is none."""
    flat = [c for c in table.column_names if _filterable(table[c].type)]
    if not flat:
        return None
    terms = []
    for _ in range(int(rng.integers(1, 3))):
        column = flat[int(rng.integers(0, len(flat)))]
        present = [v for v in table[column].to_pylist() if v is not None]
        if not present:
            return None

        def pick(present: list = present) -> Any:
            return present[int(rng.integers(0, len(present)))]

        op = str(rng.choice(["==", "!=", "<", "<=", ">", ">=", "in", "not in"]))
        if op in ("in", "not in"):
            value: Any = [_literal(pick(), rng) for _ in range(3)]
            if rng.random() < 0.3:
                value.append(None)
        else:
            value = _literal(pick(), rng) if rng.random() > 0.1 else None
        terms.append((column, op, value))
    return [terms, [terms[0]]] if rng.random() < 0.3 else terms


@dataclass
class Difference:
    """One read that differed from pyarrow's."""

    read: str
    detail: str


def _same(p: Any, q: Any) -> bool:
    """Equal values, NaN equal to NaN, at any depth."""
    if isinstance(p, float) and isinstance(q, float) and math.isnan(p) and math.isnan(q):
        return True
    if isinstance(p, dict) and isinstance(q, dict):
        return p.keys() == q.keys() and all(_same(p[k], q[k]) for k in p)
    if isinstance(p, list | tuple) and isinstance(q, list | tuple):
        return len(p) == len(q) and all(_same(a, b) for a, b in zip(p, q, strict=True))
    return p == q


def difference(got: pa.Table, want: pa.Table) -> str | None:
    """How two tables differ; None where they do not."""
    if got.equals(want):
        return None
    if got.schema != want.schema:
        return f"schema: fastingest {got.schema} | pyarrow {want.schema}"
    if got.num_rows != want.num_rows:
        return f"{got.num_rows} rows, pyarrow {want.num_rows}"
    # By position: dotted paths into structs name their columns by the last
    # field, so two of them may share a name ("s.f0" and "s.f0.f0").
    for at, name in enumerate(got.column_names):
        mine, theirs = got.column(at).to_pylist(), want.column(at).to_pylist()
        bad = [i for i, (p, q) in enumerate(zip(mine, theirs, strict=True)) if not _same(p, q)]
        if bad:
            i = bad[0]
            return f"column {name}: {len(bad)} rows differ, first {i}: {mine[i]!r} vs {theirs[i]!r}"
    return None


def check_seed(seed: int, folder: Path, read: Callable[..., pa.Table], batches: Callable) -> list:
    """The reads of seed's file that differ from pyarrow's. `read` and
    `batches` are the reader under test (``fastingest.read_parquet`` and
    ``fastingest.iter_batches``)."""
    rng = np.random.default_rng(seed)
    table = random_table(rng)
    path = folder / f"random-{seed}.parquet"
    try:
        write_random(table, path, rng)
        want = pq.read_table(path)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, OSError):
        # Shapes pyarrow cannot write or read back (an encoding its writer
        # refuses for a type, a fixed-size list with nulls under a list):
        # nothing to compare with.
        return []
    if want.num_rows != table.num_rows:
        # pyarrow reads back fewer rows than it wrote and its footer counts
        # (a null map of fixed-size lists: 0 of 1; apache/arrow#35692 is
        # the same family): the rows written are the reference.
        try:
            d = _rows_differ(read(path), table)
        except Exception as e:  # noqa: BLE001 - any refusal is a difference
            d = f"{type(e).__name__}: {e}"
        return [Difference("whole file (pyarrow misreads it)", d)] if d else []
    found: list[Difference] = []

    def compare(what: str, mine: Callable[[], pa.Table], theirs: Callable[[], pa.Table]) -> None:
        try:
            expected = theirs()
        except (
            pa.ArrowNotImplementedError,
            pa.ArrowInvalid,
            pa.ArrowTypeError,
            OverflowError,
            OSError,  # "Not yet implemented: DecodeArrow of DictAccumulator ..."
        ):
            return  # pyarrow refuses this read
        try:
            d = difference(mine(), expected)
        except Exception as e:  # noqa: BLE001 - any refusal is a difference
            d = f"{type(e).__name__}: {e}"
        if d:
            found.append(Difference(what, d))

    compare("whole file", lambda: read(path), lambda: want)
    names = want.column_names
    if len(names) > 1:
        chosen = sorted(rng.choice(len(names), size=len(names) // 2, replace=False))
        subset = [names[i] for i in chosen] or names[:1]
        compare(
            f"columns {subset}", lambda: read(path, columns=subset), lambda: want.select(subset)
        )
    for _ in range(3):
        filters = random_filter(rng, want)
        if filters is not None:
            compare(
                f"filters {filters!r}",
                lambda f=filters: read(path, filters=f),
                lambda f=filters: pyarrow_filtered(path, f),
            )
    if len(names) > 1:
        # Columns, a filter (perhaps on a column not asked for) and the
        # streamed batches of that read.
        filters = random_filter(rng, want)
        few = [names[int(rng.integers(0, len(names)))]]
        if filters is not None:
            compare(
                f"columns {few} filters {filters!r}",
                lambda: read(path, columns=few, filters=filters),
                lambda: pyarrow_filtered(path, filters, few),
            )
            compare(
                f"batches of columns {few} filters {filters!r}",
                lambda: _streamed(batches(path, columns=few, filters=filters), want.select(few)),
                lambda: pyarrow_filtered(path, filters, few),
            )
    groups = pq.ParquetFile(path).num_row_groups
    if groups > 1:
        picked = sorted({int(g) for g in rng.integers(0, groups, 2)})
        compare(
            f"row groups {picked}",
            lambda: read(path, row_groups=picked),
            lambda: pq.ParquetFile(path).read_row_groups(picked),
        )

    byte_leaves = [
        leaf
        for f in want.schema
        for leaf, t in _leaves(f.name, f.type)
        if pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t)
    ]
    if byte_leaves:
        asked = [leaf for leaf in byte_leaves if rng.random() < 0.6] or byte_leaves[:1]
        compare(
            f"read_dictionary {asked}",
            lambda: read(path, read_dictionary=asked),
            lambda: pq.read_table(path, read_dictionary=asked),
        )
    if (
        not pq.read_metadata(path).metadata
        or b"ARROW:schema" not in pq.read_metadata(path).metadata
    ):
        # pyarrow's `binary_type` applies only where no Arrow schema is stored.
        layout = [pa.binary_view(), pa.large_binary(), pa.binary()][int(rng.integers(0, 3))]
        compare(
            f"binary_type {layout}",
            lambda: read(path, binary_type=layout),
            lambda: pq.read_table(path, binary_type=layout),
        )
    paths = [p for f in want.schema for p in _struct_paths(f.name, f.type)]
    if paths:
        # Dotted paths into structs: each struct cut to the fields asked for.
        asked = [p for p in paths if rng.random() < 0.4] or paths[:1]
        expected = _nullable_within(pq.read_table(path, columns=asked), want.schema, asked)
        compare(f"columns {asked}", lambda: read(path, columns=asked), lambda: expected)
        compare(
            f"batches of columns {asked}",
            lambda: _streamed(batches(path, columns=asked), expected),
            lambda: expected,
        )
        filters = random_filter(rng, want)
        if filters is not None:
            # The rows the filter keeps of the whole table, the paths taken
            # from them (pyarrow's pushed-down read prunes NaN rows away).
            compare(
                f"columns {asked} filters {filters!r}",
                lambda: read(path, columns=asked, filters=filters),
                lambda: _paths_of(want.filter(pq.filters_to_expression(filters)), asked, expected),
            )

    compare("batches", lambda: _streamed(batches(path), want), lambda: want)
    return found


def _nullable_within(table: pa.Table, schema: pa.Schema, paths: list[str]) -> pa.Table:
    """pyarrow's `table` of dotted `paths`, each field within a nullable
    struct made nullable, as fastingest types it (pyarrow keeps a `not
    null` field's flag though a null struct above it makes it null)."""
    fields = []
    for field, dotted in zip(table.schema, paths, strict=True):
        names = dotted.split(".")
        node = schema.field(names[0])
        within_nullable = False
        for name in names[1:]:
            within_nullable |= node.nullable
            node = node.type.field(name)
        fields.append(field.with_nullable(field.nullable or within_nullable))
    # (Not a cast: pyarrow's nested `not null` fields may hold nulls, which
    # a cast refuses.)
    return pa.Table.from_arrays(table.columns, schema=pa.schema(fields, table.schema.metadata))


def _paths_of(table: pa.Table, paths: list[str], like: pa.Table) -> pa.Table:
    """The columns at dotted `paths` of `table` (a null struct makes its
    fields null), under `like`'s schema."""
    columns = []
    for dotted in paths:
        names = dotted.split(".")
        column = table.column(names[0])
        for name in names[1:]:
            column = pc.struct_field(column, name)
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=like.schema)


def _struct_paths(name: str, t: pa.DataType) -> Iterator[str]:
    """The dotted paths of a column's fields within its structs (not within
    lists or maps), at every depth."""
    if pa.types.is_struct(t):
        for f in t:
            yield f"{name}.{f.name}"
            yield from _struct_paths(f"{name}.{f.name}", f.type)


def pyarrow_filtered(source: Path, filters: Any, columns: list[str] | None = None) -> pa.Table:
    """pyarrow's rows for `filters`: `pq.read_table`'s, unless its own filter
    of the unpruned rows keeps others. Its pruning by statistics drops NaN
    rows that `!=`, `not in` and `in [nan]` keep (min and max leave NaN out,
    as the format says; fastingest follows the rows, docs/api.md)."""
    pushed = pq.read_table(source, columns=columns, filters=filters)
    try:
        whole = pq.read_table(source).filter(pq.filters_to_expression(filters))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return pushed
    rows = whole.select(pushed.column_names) if columns is not None else whole
    if rows.schema == pushed.schema and difference(pushed, rows) is not None:
        return rows
    return pushed


def _rows_differ(got: pa.Table, written: pa.Table) -> str | None:
    """How a read's rows differ from the rows written (as Python values:
    the types read back may be others, as without a stored schema)."""
    if got.num_rows != written.num_rows:
        return f"{got.num_rows} rows, {written.num_rows} written"
    if not _same(got.to_pylist(), written.to_pylist()):
        return "rows differ from those written"
    return None


def _streamed(stream: Any, like: pa.Table) -> pa.Table:
    """A stream of batches as a table (`like`'s empty slice where none came)."""
    parts = list(stream)
    return pa.Table.from_batches(parts) if parts else like.slice(0, 0)


def check_int96_seed(
    seed: int, folder: Path, read: Callable[..., pa.Table], batches: Callable
) -> list:
    """Reads of a random file whose timestamps are written as INT96 (as
    Spark writes them), in a random `coerce_int96_timestamp_unit`, that
    differ from pyarrow's: whole, by columns, and streamed."""
    rng = np.random.default_rng(seed)
    table = random_table(rng)
    # Every file has INT96 values, at the top and in a list, beside the
    # random columns (which may hold more).
    n, unit_written = table.num_rows, str(rng.choice(["s", "ms", "us", "ns"]))
    stamp = pa.timestamp(unit_written)
    table = table.append_column("t96", random_array(stamp, n, rng, 0.2, None))
    table = table.append_column("t96s", random_array(pa.list_(stamp), n, rng, 0.2, 5))
    path = folder / f"int96-{seed}.parquet"
    try:
        pq.write_table(
            table,
            path,
            use_deprecated_int96_timestamps=True,
            # pyarrow ignores a stored Arrow schema's zone and unit for INT96
            # columns; fastingest keeps them (docs/api.md): compared without.
            store_schema=False,
            data_page_size=int(rng.choice([64, 1 << 20])),
            use_dictionary=bool(rng.random() < 0.5),
            compression=str(rng.choice(["none", "snappy", "zstd"])),
        )
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, OSError):
        return []
    unit = str(rng.choice(["s", "ms", "us", "ns"]))
    found: list[Difference] = []
    names = table.column_names
    reads: list[tuple[str, dict[str, Any]]] = [
        ("whole", {}),
        ("a column and the list of INT96", {"columns": [names[0], "t96s"]}),
    ]
    for what, kwargs in reads:
        try:
            want = pq.read_table(path, coerce_int96_timestamp_unit=unit, **kwargs)
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid, OSError):
            continue
        for how, mine in (
            ("read", lambda kw=kwargs: read(path, coerce_int96_timestamp_unit=unit, **kw)),
            (
                "batches",
                lambda kw=kwargs, w=want: _streamed(
                    batches(path, coerce_int96_timestamp_unit=unit, **kw), w
                ),
            ),
        ):
            try:
                d = difference(mine(), want)
            except Exception as e:  # noqa: BLE001 - any refusal is a difference
                d = f"{type(e).__name__}: {e}"
            if d:
                found.append(Difference(f"INT96 in {unit!r}, {what}, {how}", d))
    return found


def check_dataset_seed(seed: int, folder: Path, read: Callable[..., pa.Table]) -> list:
    """The filtered reads of a random hive-partitioned directory that
    differ from pyarrow's: keys of ints or strings (one of them null as
    `__HIVE_DEFAULT_PARTITION__`), files of which the later ones may lack a
    column, and filters on keys and columns alike. Rows are compared in the
    order of their `id` (the two readers order files alike, but this is not
    what is checked here)."""
    rng = np.random.default_rng(seed)
    root = folder / f"lake-{seed}"
    strings = rng.random() < 0.5
    keys = [f"k{i}" if strings else str(i * 7 - 3) for i in range(int(rng.integers(2, 5)))]
    if rng.random() < 0.3:
        keys.append("__HIVE_DEFAULT_PARTITION__")
    next_id = 0
    first = True
    for key in keys:
        for part in range(int(rng.integers(1, 3))):
            n = int(rng.integers(1, 40))
            columns: dict[str, pa.Array] = {
                "id": pa.array(range(next_id, next_id + n), pa.int64()),
                "x": random_array(pa.float64(), n, rng, 0.2, 5),
                "s": random_array(pa.string(), n, rng, 0.2, 4),
            }
            next_id += n
            if not first and rng.random() < 0.3:
                del columns[str(rng.choice(["x", "s"]))]  # a later file lacks it
            first = False
            (root / f"k={key}").mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.table(columns), root / f"k={key}" / f"part-{part}.parquet")
    whole = pq.read_table(root)
    found: list[Difference] = []
    for _ in range(4):
        filters = random_filter(rng, whole.drop_columns(["id"]).cast(_plain_keys(whole.schema)))
        if filters is None:
            continue
        try:
            theirs = pyarrow_filtered(root, filters)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            continue
        try:
            mine = read(str(root), filters=filters)
            if set(theirs.column_names) < set(mine.column_names):
                # pyarrow's schema is the first file's; fastingest's has every
                # file's columns (docs/datasets.md).
                mine = mine.select(theirs.column_names)
            d = difference(_by_id(mine), _by_id(theirs))
        except Exception as e:  # noqa: BLE001 - any refusal is a difference
            d = f"{type(e).__name__}: {e}"
        if d:
            found.append(Difference(f"filters {filters!r}", d))
    return found


def _plain_keys(schema: pa.Schema) -> pa.Schema:
    """The schema without the id, its dictionary key as plain values."""
    fields = [f for f in schema if f.name != "id"]
    return pa.schema(
        [f.with_type(f.type.value_type) if pa.types.is_dictionary(f.type) else f for f in fields]
    )


def _by_id(table: pa.Table) -> pa.Table:
    """The rows in order of id, the partition key as plain values (the two
    readers hold a null key differently in the dictionary)."""
    key = table["k"].cast(table.schema.field("k").type.value_type)
    table = table.set_column(table.schema.get_field_index("k"), "k", key)
    return table.sort_by("id")


# Slice sizes the cached reads take in turn, so that the entries one read
# wrote serve later reads planned otherwise.
CACHED_SLICES = ["64K", "1M", "8M", "256K"]


def through_store(
    put: Callable[[str, bytes], str], options: dict[str, str], cache_dir: Path | None = None
) -> tuple[Callable[..., pa.Table], Callable[..., Any]]:
    """`read_parquet` and `iter_batches` of a local path's copy in an object
    store: `put(key, bytes)` uploads it (once) and gives its URL. With
    `cache_dir`, through a disk cache there, each read with the next of
    `CACHED_SLICES`."""
    import fastingest

    urls: dict[Path, str] = {}
    through: dict[str, Any] = {"storage_options": options}
    cache = None
    if cache_dir is not None:
        cache = fastingest.Cache(cache_dir, validate="immutable", min_free_bytes=0)
    turn = iter(range(1 << 62))

    def url(path: Path) -> str:
        if path not in urls:
            urls[path] = put(f"random/{path.name}", Path(path).read_bytes())
        return urls[path]

    def planned(kwargs: dict[str, Any]) -> dict[str, Any]:
        if cache is None:
            return {**through, **kwargs}
        slice_size = CACHED_SLICES[next(turn) % len(CACHED_SLICES)]
        config = fastingest.Config(slice_size=slice_size, near_slice_size=slice_size)
        return {**through, "cache": cache, "config": config, **kwargs}

    def read(path: Path, **kwargs: Any) -> pa.Table:
        return fastingest.read_parquet(url(path), **planned(kwargs))

    def batches(path: Path, **kwargs: Any) -> Any:
        return fastingest.iter_batches(url(path), **planned(kwargs))

    return read, batches


def _seeds(spec: str) -> list[int]:
    out: list[int] = []
    for part in spec.split(","):
        first, _, last = part.partition("-")
        out.extend(range(int(first), int(last or first) + 1))
    return out


def main() -> int:
    import fastingest

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="0-199", help="e.g. 0-999 or 3,17,40-50")
    ap.add_argument("--datasets", action="store_true", help="hive directories, not files")
    ap.add_argument("--minio", action="store_true", help="files read from MinIO on loopback")
    ap.add_argument("--int96", action="store_true", help="timestamps written as INT96")
    ap.add_argument(
        "--cache",
        action="store_true",
        help="with --minio: through a disk cache, each read planned with another slice size",
    )
    args = ap.parse_args()
    if args.cache and not args.minio:
        ap.error("--cache reads from MinIO: add --minio")
    seeds = _seeds(args.seeds)
    differing = 0
    read, batches = fastingest.read_parquet, fastingest.iter_batches
    servers = None
    cache_dir: Path | None = None
    if args.minio:
        # Whole small files, pages picked by the page index, coalesced and
        # split ranges: the fetch plans that local reads do not make.
        from .servers import MINIO_PASSWORD, MINIO_USER, Servers

        servers = Servers()
        servers.start_minio()
        if servers.s3_endpoint is None:
            sys.exit(f"no MinIO: {servers.missing}")
        client = servers.minio_client()
        client.create_bucket(Bucket="random")

        def put(key: str, data: bytes) -> str:
            client.put_object(Bucket="random", Key=key, Body=data)
            return f"s3://random/{key}"

        options = {
            "endpoint_url": servers.s3_endpoint,
            "access_key_id": MINIO_USER,
            "secret_access_key": MINIO_PASSWORD,
            "region": "us-east-1",
            "allow_http": "true",
        }
        cache_dir = Path(tempfile.mkdtemp(prefix="random-cache-")) if args.cache else None
        read, batches = through_store(put, options, cache_dir)
    with tempfile.TemporaryDirectory() as folder:
        for seed in seeds:
            if args.datasets:
                found = check_dataset_seed(seed, Path(folder), fastingest.read_parquet)
            elif args.int96:
                found = check_int96_seed(seed, Path(folder), read, batches)
            else:
                found = check_seed(seed, Path(folder), read, batches)
            if found:
                differing += 1
                for d in found:
                    print(f"seed {seed}: {d.read}: {d.detail[:400]}")
    if servers is not None:
        servers.stop()
    if cache_dir is not None:
        shutil.rmtree(cache_dir, ignore_errors=True)
    print(f"{differing} of {len(seeds)} seeds differ")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
