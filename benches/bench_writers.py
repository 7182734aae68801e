"""Files as other writers lay them out: polars writes zstd, its own page
sizes, and ``large_string`` / ``large_list`` into the file's Arrow schema
(so pyarrow, and fastingest, return those types). The suite's files are all
pyarrow's; these are what a polars user points fastingest at.

Three files, made once into ``benches/data/writers/`` from a fixed seed:
- ``lineitem``: 6 M rows shaped like TPC-H ``lineitem`` (keys, prices,
  dates, flags of 2-7 values, a comment of 100,000 distinct values);
- ``lists``: 2 M rows of ``large_list<int64>``, ``large_list<large_string>``
  (500 tags) and a float;
- ``smallint``: 10 M rows of int8/int16/uint8/uint16/bool, 10 % nulls.

Readers fastingest, polars and pyarrow, interleaved (A B C, then C B A),
each round in fresh processes, local disk, page cache warm. Per reader: the
read timed in a fresh process (after the imports), steady state (the
median of reads 3-8 of one process) and the fresh process's peak RSS.

    python benches/bench_writers.py [--rounds 5] [--files lineitem,lists,smallint]
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
    """Writes file `name` with polars, from a fixed seed."""
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
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    frame.write_parquet(partial)
    partial.replace(path)


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
    ap.add_argument("--files", default="lineitem,lists,smallint")
    args = ap.parse_args()
    print("| file | reader | fresh ms | steady ms | peak MiB | fresh vs best | steady vs best |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name in args.files.split(","):
        path = DATA / f"{name}-polars.parquet"
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
