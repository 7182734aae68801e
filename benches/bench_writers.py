"""Files as other writers lay them out: polars writes zstd, its own page
sizes, and ``large_string`` / ``large_list`` into the file's Arrow schema
(so pyarrow, and fastingest, return those types); v2 writers (DuckDB's
``PARQUET_VERSION v2``, Spark's, feature stores) pick other encodings than
dictionary and plain. The suite's files are all pyarrow's defaults; these
are what a polars or DuckDB user points fastingest at.

Eleven files, made once into ``benches/data/writers/`` from a fixed seed:
- polars' ``lineitem``: 6 M rows shaped like TPC-H ``lineitem`` (keys,
  prices, dates, flags of 2-7 values, a comment of 100,000 distinct values);
- polars' ``lists``: 2 M rows of ``large_list<int64>``,
  ``large_list<large_string>`` (500 tags) and a float;
- polars' ``smallint``: 10 M rows of int8/int16/uint8/uint16/bool, 10 %
  nulls;
- pyarrow's ``features``: 2 M rows of 12 float32/float64 columns,
  BYTE_STREAM_SPLIT, zstd;
- pyarrow's ``embeddings``: 250,000 rows of an id and a 128-float
  ``list<float32>``, its items BYTE_STREAM_SPLIT, zstd;
- pyarrow's ``fixed_size``: the same rows as ``fixed_size_list<float>[128]``
  (how pyarrow stores embeddings), plain, zstd;
- pyarrow's ``delta``: 3 M rows of two strings as DELTA_BYTE_ARRAY (one
  sorted) and two integers as DELTA_BINARY_PACKED, snappy.
- pyarrow's ``one_row_group``: 3 M rows of int64, double, int32 (5 %
  nulls), a string of 200,000 values, bool and timestamp, in one row group
  (as Spark writes a 128 MB file), snappy, dictionaries as pyarrow's
  defaults.
- pyarrow's ``tall``: 20 M rows of narrow columns (int64, int32 of 100
  values, double, int8 of 3, a string of 4 words) in one row group: a
  128 MB Spark file of a narrow table holds tens of millions of rows.
- pyarrow's ``images``: 2,000 incompressible values of 20-100 KB (encoded
  images) as Hugging Face's ``datasets`` writes an image column: a struct
  of ``bytes`` and ``path``, row groups of 100 rows, dictionary-encoded
  (each row group's dictionary page holds its 100 values);
- pyarrow's ``blobs``: the same values as a ``binary`` column with
  pyarrow's defaults: one row group, whose dictionary page takes the first
  1,024 values before the writer falls back to PLAIN pages.

Readers fastingest, polars and pyarrow, interleaved (A B C, then C B A),
each round in fresh processes, local disk, page cache warm. Per reader: the
read timed in a fresh process (after the imports), steady state (the
median of reads 3-8 of one process) and the fresh process's peak RSS.

    python benches/bench_writers.py [--rounds 5] [--files lineitem,lists,smallint,...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "writers"
READERS = ["fastingest", "polars", "pyarrow"]
# Who writes each file.
WRITERS = {
    "lineitem": "polars",
    "lists": "polars",
    "smallint": "polars",
    "features": "pyarrow",
    "embeddings": "pyarrow",
    "fixed_size": "pyarrow",
    "delta": "pyarrow",
    "one_row_group": "pyarrow",
    "tall": "pyarrow",
    "images": "pyarrow",
    "blobs": "pyarrow",
}

# Run in a child: one reader, `reads` reads of one file; prints the times
# and the process's peak RSS.
CHILD = r"""
import json, sys, time
reader, path, reads = sys.argv[1], sys.argv[2], int(sys.argv[3])
import pyarrow
if reader == "fastingest":
    import fastingest
    read = lambda: fastingest.read_parquet(path)
elif reader == "pyarrow":
    import pyarrow.parquet as pq
    read = lambda: pq.read_table(path)
else:
    import polars as pl
    read = lambda: pl.read_parquet(path)
times = []
for _ in range(reads):
    t = time.perf_counter(); table = read(); times.append(time.perf_counter() - t); del table
with open("/proc/self/status") as status:
    peak = next(int(l.split()[1]) for l in status if l.startswith("VmHWM")) / 1024
print(json.dumps({"times": times, "peak_mib": peak}))
"""


def make(name: str, path: Path) -> None:
    """Writes file `name` with its writer, from a fixed seed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    if WRITERS.get(name) == "pyarrow":
        make_with_pyarrow(name, partial)
    else:
        polars_frame(name).write_parquet(partial)
    partial.replace(path)


def make_with_pyarrow(name: str, path: Path) -> None:
    """Writes pyarrow file `name`, in the encodings v2 writers choose."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(20261130)
    if name == "features":
        rows = 2_000_000
        table = pa.table(
            {
                f"f{i}": (rng.normal(size=rows) * (i + 1)).astype(
                    np.float32 if i % 2 else np.float64
                )
                for i in range(12)
            }
        )
        options = {"use_byte_stream_split": True, "compression": "zstd"}
    elif name in ("embeddings", "fixed_size"):
        rows, width = 250_000, 128
        items = pa.array(rng.normal(size=rows * width).astype(np.float32))
        if name == "fixed_size":
            emb = pa.FixedSizeListArray.from_arrays(items, width)
            options = {"compression": "zstd"}
        else:
            offsets = pa.array(np.arange(0, rows * width + 1, width, dtype=np.int32))
            emb = pa.ListArray.from_arrays(offsets, items)
            options = {"use_byte_stream_split": ["emb.list.element"], "compression": "zstd"}
        table = pa.table({"id": np.arange(rows), "emb": emb})
    elif name == "delta":
        rows = 3_000_000
        words = np.array([f"user-{i:07d}-{'x' * (i % 23)}" for i in range(200_000)])
        table = pa.table(
            {
                "url": words[rng.integers(0, len(words), rows)],
                "sorted": np.sort(words[rng.integers(0, len(words), rows)]),
                "k": np.cumsum(rng.integers(0, 100, rows)),
                "v": rng.integers(-1000, 1000, rows).astype(np.int32),
            }
        )
        encodings = ["DELTA_BYTE_ARRAY"] * 2 + ["DELTA_BINARY_PACKED"] * 2
        options = {
            "column_encoding": dict(zip(table.column_names, encodings, strict=True)),
            "compression": "snappy",
        }
    elif name == "one_row_group":
        rows = 3_000_000
        words = np.array([f"item-{i:07d}-{'x' * (i % 13)}" for i in range(200_000)])
        stamps = 1_700_000_000_000_000 + np.sort(rng.integers(0, 10**12, rows))
        table = pa.table(
            {
                "i64": rng.integers(-(10**12), 10**12, rows),
                "f64": rng.standard_normal(rows),
                "i32": pa.array(
                    rng.integers(0, 10**6, rows).astype(np.int32), mask=rng.random(rows) < 0.05
                ),
                "s": words[rng.integers(0, len(words), rows)],
                "b": rng.random(rows) < 0.3,
                "ts": pa.array(stamps, pa.timestamp("us")),
            }
        )
        # pyarrow's defaults but one row group for the whole file, as Spark
        # writes a 128 MB file.
        options = {"use_dictionary": True, "compression": "snappy", "row_group_size": rows}
    elif name == "tall":
        rows = 20_000_000
        words = np.array(["alpha", "beta", "gamma", "delta"])
        table = pa.table(
            {
                "id": np.arange(rows, dtype=np.int64),
                "qty": rng.integers(0, 100, rows).astype(np.int32),
                "price": rng.random(rows),
                "flag": rng.integers(0, 3, rows).astype(np.int8),
                "cat": words[rng.integers(0, len(words), rows)],
            }
        )
        options = {"use_dictionary": True, "compression": "snappy", "row_group_size": rows}
    elif name in ("images", "blobs"):
        # Incompressible values of 20-100 KB (encoded images, audio).
        rows = 2_000
        sizes = rng.integers(20_000, 100_000, rows)
        blobs = pa.array([rng.bytes(int(n)) for n in sizes], pa.binary())
        labels = rng.integers(0, 1000, rows)
        if name == "images":
            # As Hugging Face's `datasets` writes an image column: a struct
            # of the encoded bytes and a path, row groups of 100 rows.
            paths = pa.array([f"train/{i:06d}.jpg" for i in range(rows)])
            image = pa.StructArray.from_arrays([blobs, paths], names=["bytes", "path"])
            table = pa.table({"image": image, "label": labels})
            options = {"use_dictionary": True, "compression": "snappy", "row_group_size": 100}
        else:
            # pyarrow's defaults: one row group; the dictionary page takes
            # the first 1,024 values before the writer falls back to PLAIN.
            table = pa.table({"blob": blobs, "label": labels})
            options = {"use_dictionary": True, "compression": "snappy"}
    else:
        raise SystemExit(f"unknown file {name!r}")
    pq.write_table(table, path, **{"use_dictionary": False, **options})


def polars_frame(name: str):
    """Polars file `name`'s frame."""
    import numpy as np
    import polars as pl
    import pyarrow as pa

    rng = np.random.default_rng(20261127)
    if name == "lineitem":
        rows = 6_000_000
        frame = pl.DataFrame(
            {
                "l_orderkey": np.sort(rng.integers(1, 6_000_000, rows)),
                "l_partkey": rng.integers(1, 200_000, rows),
                "l_suppkey": rng.integers(1, 10_000, rows),
                "l_linenumber": rng.integers(1, 8, rows).astype(np.int32),
                "l_quantity": rng.integers(1, 51, rows).astype(np.float64),
                "l_extendedprice": rng.random(rows) * 100_000,
                "l_discount": rng.integers(0, 11, rows) / 100,
                "l_tax": rng.integers(0, 9, rows) / 100,
                "l_returnflag": rng.choice(["A", "N", "R"], rows),
                "l_linestatus": rng.choice(["O", "F"], rows),
                "l_shipdate": np.datetime64("1992-01-01")
                + rng.integers(0, 2500, rows).astype("timedelta64[D]"),
                "l_shipinstruct": rng.choice(
                    ["DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN"], rows
                ),
                "l_shipmode": rng.choice(
                    ["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"], rows
                ),
                "l_comment": rng.choice(
                    [f"comment words {i} furiously regular" for i in range(100_000)], rows
                ),
            }
        )
    elif name == "lists":
        rows = 2_000_000
        offsets = pa.array(np.concatenate([[0], np.cumsum(rng.integers(0, 8, rows))]), pa.int32())
        items = offsets[-1].as_py()
        tags = pa.array([f"tag{i}" for i in range(500)])
        frame = pl.from_arrow(
            pa.table(
                {
                    "ints": pa.ListArray.from_arrays(
                        offsets, pa.array(rng.integers(0, 1000, items), pa.int64())
                    ),
                    "tags": pa.ListArray.from_arrays(
                        offsets, tags.take(pa.array(rng.integers(0, 500, items)))
                    ),
                    "f": rng.random(rows),
                }
            )
        )
    elif name == "smallint":
        rows = 10_000_000

        def ints(dtype, low, high):
            mask = rng.random(rows) < 0.1
            return pa.array(rng.integers(low, high, rows).astype(dtype), mask=mask)

        frame = pl.from_arrow(
            pa.table(
                {
                    "i8": ints(np.int8, -128, 127),
                    "i16": ints(np.int16, -30_000, 30_000),
                    "u8": ints(np.uint8, 0, 255),
                    "u16": ints(np.uint16, 0, 60_000),
                    "b": pa.array(rng.random(rows) < 0.5, mask=rng.random(rows) < 0.1),
                }
            )
        )
    else:
        raise SystemExit(f"unknown file {name!r}")
    return frame


def run(reader: str, path: Path, reads: int) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, reader, str(path), str(reads)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
    )
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--files", default=",".join(WRITERS))
    args = ap.parse_args()
    print("| file | reader | fresh ms | steady ms | peak MiB | fresh vs best | steady vs best |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name in args.files.split(","):
        if name not in WRITERS:
            raise SystemExit(f"unknown file {name!r}; the files: {', '.join(WRITERS)}")
        path = DATA / f"{name}-{WRITERS[name]}.parquet"
        if not path.exists():
            make(name, path)
        path.read_bytes()  # page cache warm
        fresh: dict[str, list[float]] = {r: [] for r in READERS}
        steady: dict[str, list[float]] = {r: [] for r in READERS}
        peak: dict[str, list[float]] = {r: [] for r in READERS}
        for i in range(args.rounds):
            for reader in READERS if i % 2 == 0 else READERS[::-1]:
                one = run(reader, path, 1)
                fresh[reader].append(one["times"][0] * 1e3)
                peak[reader].append(one["peak_mib"])
                many = run(reader, path, 8)["times"][2:]
                steady[reader].append(statistics.median(many) * 1e3)
        med = {r: (statistics.median(fresh[r]), statistics.median(steady[r])) for r in READERS}
        best_fresh = min(med[r][0] for r in READERS if r != "fastingest")
        best_steady = min(med[r][1] for r in READERS if r != "fastingest")
        for r in READERS:
            ratios = (
                f"{best_fresh / med[r][0]:.2f}x | {best_steady / med[r][1]:.2f}x"
                if r == "fastingest"
                else " | "
            )
            print(
                f"| {name} | {r} | {med[r][0]:.1f} | {med[r][1]:.1f} | "
                f"{statistics.median(peak[r]):.0f} | {ratios} |"
            )


if __name__ == "__main__":
    main()
