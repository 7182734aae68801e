"""String layouts benchmark: the suite's dictionary-heavy file
(``mixed-card1000``: 1,000 distinct values per column, strings among them;
``--cardinality 0`` for the unbounded one) read with its string column as
Arrow ``string``, as ``dictionary<int32, string>`` (``read_dictionary``) and
as ``string_view`` (``binary_type=pyarrow.binary_view()``), by fastingest
and (the first two) by pyarrow, and by polars (whose strings are views).
``+polars`` readers hand fastingest's table on to polars
(``pl.from_arrow``), as a pipeline that works in polars would. Local disk,
page cache warm. Readers are interleaved (A B C A B C ...), each round in
fresh processes; two figures per reader: the read timed in a fresh process
(after the imports, pyarrow's included), and steady state (the median of
reads 31-60 in one process: on this VM a process's first dozen reads still
fault in fresh memory).

    python benches/bench_dictionary.py [--rounds 7] [--size-mb 16] [--cardinality 1000]
        [--column-only]
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
sys.path.insert(0, str(HERE))

from datasets import Dataset, materialize  # noqa: E402

READERS = [
    "fastingest",
    "fastingest-dict",
    "fastingest-view",
    "pyarrow",
    "pyarrow-dict",
    "polars",
    "fastingest+polars",
    "fastingest-view+polars",
]

# Run in a child: one reader, `reads` reads of one file; prints the times.
CHILD = r"""
import json, sys, time
reader, path, column, reads = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
columns = [column] if column else None
import pyarrow
if reader.startswith("fastingest"):
    import fastingest
    names = [column or "mixed4_string"] if reader.endswith("-dict") else None
    layout = pyarrow.binary_view() if "-view" in reader else None
    def read():
        return fastingest.read_parquet(
            path, columns=columns, read_dictionary=names, binary_type=layout
        )
    if reader.endswith("+polars"):
        import polars as pl
        arrow_read = read
        read = lambda: pl.from_arrow(arrow_read())
elif reader.startswith("pyarrow"):
    import pyarrow.parquet as pq
    names = [column or "mixed4_string"] if reader.endswith("-dict") else None
    read = lambda: pq.read_table(path, columns=columns, read_dictionary=names)
else:
    import polars as pl
    read = lambda: pl.read_parquet(path, columns=columns)
times = []
for _ in range(reads):
    t = time.perf_counter(); table = read(); times.append(time.perf_counter() - t); del table
print(json.dumps(times))
"""


def run(reader: str, path: Path, column: str, reads: int) -> list[float]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, reader, str(path), column, str(reads)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
    )
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--size-mb", type=int, default=16)
    ap.add_argument("--cardinality", type=int, default=1000, help="0: unbounded")
    ap.add_argument("--column-only", action="store_true", help="read the string column alone")
    args = ap.parse_args()
    dataset = Dataset(cardinality=args.cardinality, size_mb=args.size_mb)
    path = materialize(dataset, HERE / "data")
    column = "mixed4_string" if args.column_only else ""
    fresh: dict[str, list[float]] = {r: [] for r in READERS}
    steady: dict[str, list[float]] = {r: [] for r in READERS}
    for i in range(args.rounds):
        for reader in READERS:  # interleaved
            fresh[reader].append(run(reader, path, column, 1)[0])
            steady[reader].append(statistics.median(run(reader, path, column, 60)[30:]))
        print(f"round {i + 1}/{args.rounds}", file=sys.stderr, flush=True)
    what = "the string column" if column else "all five columns"
    print(f"{path.name} ({path.stat().st_size / 1e6:.1f} MB), {what}, {args.rounds} rounds\n")
    print("| reader | fresh process ms (median, min-max) | steady ms | steady vs polars |")
    print("|---|---:|---:|---:|")
    base = statistics.median(steady["polars"])
    for reader in READERS:
        f, s = fresh[reader], statistics.median(steady[reader])
        print(
            f"| {reader} | {statistics.median(f) * 1e3:.2f} ({min(f) * 1e3:.2f}-{max(f) * 1e3:.2f})"
            f" | {s * 1e3:.2f} | {base / s:.2f}x |"
        )


if __name__ == "__main__":
    main()
