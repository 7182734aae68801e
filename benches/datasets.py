"""Generated benchmark datasets, shaped the way cuDF's I/O benchmarks shape
theirs: a data-type group, a cardinality (unbounded, or N distinct values), an
average run length (1: no repetition; 32: each value repeated ~32 times), a
codec, and a target in-memory size. Plus a many-small-files dataset and a wide
table. Files are written once under ``benches/data/`` and reused (the name
encodes every parameter).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

MiB = 1 << 20

# The columns of each data-type group.
TYPE_GROUPS: dict[str, list[pa.DataType]] = {
    "int": [pa.int8(), pa.int16(), pa.int32(), pa.int64()],
    "uint": [pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()],
    "float": [pa.float32(), pa.float64()],
    "string": [pa.string(), pa.string()],
    "timestamp": [pa.timestamp("ms"), pa.timestamp("us"), pa.timestamp("ns", tz="UTC")],
    "decimal": [pa.decimal128(9, 2), pa.decimal128(18, 4), pa.decimal128(38, 10)],
    "list": [pa.list_(pa.list_(pa.int32()))],
    # A struct of flat fields (nested records as JSON-shaped data lands).
    "struct": [
        pa.struct(
            [("id", pa.int64()), ("score", pa.float64()), ("n", pa.int32()), ("label", pa.string())]
        )
    ],
    # The core reader's original mix (int64, float64, int32, float32, string).
    "mixed": [pa.int64(), pa.float64(), pa.int32(), pa.float32(), pa.string()],
}

CODECS = {"snappy": "snappy", "zstd": "zstd", "none": "none"}


@dataclass(frozen=True)
class Dataset:
    """One benchmark dataset: a single file, or ``files`` files in a folder."""

    types: str = "mixed"
    cardinality: int = 0  # 0 = unbounded, else the number of distinct values
    run_length: int = 1  # average repetition of a value
    codec: str = "snappy"
    size_mb: int = 256  # target in-memory (Arrow) size of the whole dataset, MiB
    files: int = 1
    columns: int = 0  # > 0: a wide table of this many float64/int64 columns
    read_columns: int = 0  # > 0: read only this many of the columns
    row_groups: int = 8  # per file

    @property
    def name(self) -> str:
        if self.columns:
            return f"wide{self.columns}-read{self.read_columns}-{self.size_mb}mb"
        if self.files > 1:
            return f"small-{self.files}x{self.size_mb * 1024 // self.files}kb"
        card = f"card{self.cardinality}" if self.cardinality else "unbounded"
        return f"{self.types}-{card}-rl{self.run_length}-{self.codec}-{self.size_mb}mb"

    def with_(self, **changes) -> Dataset:
        return dataclasses.replace(self, **changes)


def _runs(n: int, run_length: int, rng: np.random.Generator) -> np.ndarray:
    """Indices 0.. repeated in runs of average length `run_length`, n long."""
    if run_length <= 1:
        return np.arange(n)
    lengths = rng.geometric(1.0 / run_length, size=n // run_length + 16)
    idx = np.repeat(np.arange(len(lengths)), lengths)
    while len(idx) < n:  # rare: the geometric draws fell short
        idx = np.concatenate([idx, idx[-1] + 1 + np.arange(n - len(idx))])
    return idx[:n]


def _strings(n: int, rng: np.random.Generator) -> pa.Array:
    """n strings of 8-40 characters: 90% ASCII, 10% with a 2-byte UTF-8 character."""
    lengths = rng.integers(8, 41, n)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = rng.integers(ord("a"), ord("z") + 1, offsets[-1], dtype=np.uint8)
    unicode_rows = np.flatnonzero(rng.random(n) < 0.1)
    data[offsets[unicode_rows]] = 0xC3  # "é" = C3 A9, valid UTF-8 in place of 2 letters
    data[offsets[unicode_rows] + 1] = 0xA9
    return pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data)).cast(
        pa.string()
    )


def _values(t: pa.DataType, n: int, rng: np.random.Generator) -> pa.Array:
    """n distinct-ish random values of type t (no repetition imposed)."""
    if pa.types.is_string(t):
        return _strings(n, rng)
    if pa.types.is_integer(t):
        info = np.iinfo(t.to_pandas_dtype())
        return pa.array(rng.integers(info.min, info.max, n, dtype=info.dtype, endpoint=True), t)
    if pa.types.is_floating(t):
        return pa.array(rng.standard_normal(n).astype(t.to_pandas_dtype()), t)
    if pa.types.is_timestamp(t):
        unit = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}[t.unit]
        seconds = rng.integers(0, 2_000_000_000, n)  # 1970..2033
        return pa.array(seconds * unit + rng.integers(0, unit, n), pa.int64()).cast(t)
    if pa.types.is_decimal(t):
        # Unscaled 128-bit values, little-endian, sign-extended from int64.
        limit = 10 ** min(t.precision, 18) - 1
        unscaled = rng.integers(-limit, limit, n, dtype=np.int64)
        words = np.empty((n, 2), dtype=np.int64)
        words[:, 0] = unscaled
        words[:, 1] = unscaled >> 63
        return pa.Array.from_buffers(t, n, [None, pa.py_buffer(words)])
    if pa.types.is_list(t) and pa.types.is_list(t.value_type):
        inner_n = rng.integers(0, 5, 2 * n)  # 0-4 ints per inner list
        inner_off = np.zeros(2 * n + 1, dtype=np.int32)
        np.cumsum(inner_n, out=inner_off[1:])
        leaves = pa.array(rng.integers(-(2**31), 2**31 - 1, inner_off[-1], dtype=np.int32))
        inner = pa.ListArray.from_arrays(pa.array(inner_off), leaves)
        outer_off = np.arange(0, 2 * n + 1, 2, dtype=np.int32)  # 2 inner lists per row
        return pa.ListArray.from_arrays(pa.array(outer_off), inner, type=t)
    if pa.types.is_struct(t):
        children = [_values(t.field(i).type, n, rng) for i in range(t.num_fields)]
        return pa.StructArray.from_arrays(children, fields=list(t))
    raise ValueError(f"no generator for {t}")


def _column(t: pa.DataType, n: int, d: Dataset, rng: np.random.Generator) -> pa.Array:
    distinct = d.cardinality or n
    pool = _values(t, min(distinct, n), rng)
    if d.cardinality:
        pick = rng.integers(0, len(pool), n)
    else:
        pick = np.arange(n)
    pick = pick[_runs(n, d.run_length, rng) % n] if d.run_length > 1 else pick
    return pool.take(pa.array(pick))


def _bytes_per_row(types: list[pa.DataType], rng: np.random.Generator) -> float:
    sample = pa.table({f"c{i}": _values(t, 2000, rng) for i, t in enumerate(types)})
    return sample.nbytes / 2000


def _table(d: Dataset, target_bytes: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    if d.columns:
        types = [pa.float64() if i % 2 else pa.int64() for i in range(d.columns)]
        n = max(1, target_bytes // (8 * d.columns))
        return pa.table({f"c{i:03d}": _values(t, n, rng) for i, t in enumerate(types)})
    types = TYPE_GROUPS[d.types]
    n = max(1, int(target_bytes / _bytes_per_row(types, rng)))
    names = [f"{d.types}{i}_{str(t).split('[')[0].replace(' ', '')}" for i, t in enumerate(types)]
    return pa.table({name: _column(t, n, d, rng) for name, t in zip(names, types, strict=True)})


def _write(table: pa.Table, path: Path, d: Dataset) -> None:
    tmp = path.with_name(path.name + ".tmp")
    rows = max(1, -(-table.num_rows // d.row_groups))
    pq.write_table(table, tmp, compression=CODECS[d.codec], row_group_size=rows)
    tmp.rename(path)


def materialize(d: Dataset, root: Path) -> Path:
    """Writes `d` under `root` once; returns the file, or the folder of files."""
    root.mkdir(parents=True, exist_ok=True)
    if d.files > 1:
        folder = root / d.name
        done = folder / ".complete"
        if not done.exists():
            folder.mkdir(exist_ok=True)
            per_file = d.size_mb * MiB // d.files
            for i in range(d.files):
                path = folder / f"part-{i:05d}.parquet"
                if not path.exists():
                    _write(_table(d.with_(files=1), per_file, seed=1000 + i), path, d)
            done.touch()
        return folder
    path = root / f"{d.name}.parquet"
    if not path.exists():
        _write(_table(d, d.size_mb * MiB, seed=7), path, d)
    return path


def read_columns(d: Dataset, path: Path) -> list[str] | None:
    """The columns a benchmark read asks for (None: all)."""
    if not d.read_columns:
        return None
    names = pq.read_schema(path).names
    step = max(1, len(names) // d.read_columns)
    return names[::step][: d.read_columns]


def orc_copy(path: Path) -> Path:
    """The Parquet file `path` rewritten as ORC (snappy, 64 MiB stripes), once."""
    import pyarrow.orc as orc

    out = path.with_suffix(".orc")
    if not out.exists():
        tmp = out.with_name(out.name + ".tmp")
        orc.write_table(pq.read_table(path), tmp, compression="snappy", stripe_size=64 * MiB)
        tmp.rename(out)
    return out


def suite(quick: bool, size_mb: int, small_files: int, small_kb: int) -> list[Dataset]:
    """The datasets of a run: each type group at its defaults (unbounded,
    run length 1, snappy), the cardinality / run-length / codec axes varied on
    the mixed group, many small files, and a wide table. Quick mode: the
    mixed group and a few small files, small."""
    if quick:
        base = Dataset(size_mb=size_mb)
        return [base, Dataset(files=small_files, size_mb=max(1, small_files * small_kb // 1024))]
    base = Dataset(size_mb=size_mb)
    out = [base.with_(types=t) for t in TYPE_GROUPS]
    out += [
        base.with_(cardinality=1000),
        base.with_(run_length=32),
        base.with_(cardinality=1000, run_length=32),
        base.with_(codec="zstd"),
        base.with_(codec="none"),
        Dataset(files=small_files, size_mb=max(1, small_files * small_kb // 1024)),
        Dataset(columns=500, read_columns=10, size_mb=size_mb),
    ]
    return out
