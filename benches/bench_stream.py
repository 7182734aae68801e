"""Streams of a file written as one large row group, with and without a
filter: the time to the first batch, to the end of the stream, and the
process's peak RSS.

A Spark file of a narrow table holds tens of millions of rows in one row
group; a training job or a pipeline streams it, often with a filter. The
file is ``bench_writers.py``'s ``tall`` (20 M rows: int64 ``id`` rising
with the row, int32 ``qty`` of 100 values, double ``price``, int8 ``flag``
of 3 values, string ``cat`` of 4 words; one row group, snappy), made once
into ``benches/data/writers/``.

Readers, interleaved (their order turned by one each round), each stream in
a fresh process with its imports done before the clock, local disk, page
cache warm:
- ``fastingest``: ``fastingest.iter_batches(path, columns=, filters=)``;
  ``--build NAME=DIR`` (repeatable) runs it from each of several builds
  (``DIR`` put first on ``PYTHONPATH``), for a before/after;
- ``pyarrow``: ``pyarrow.dataset.dataset(path).to_batches(columns=,
  filter=)``;
- ``polars``: ``pl.scan_parquet(path).filter(...).select(...)
  .collect_batches()``.

    python benches/bench_stream.py [--rounds 7] [--cases all,id-tail,qty-5pct,...]
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

import bench_writers  # noqa: E402  (the file's maker)

# Each case: the columns read (None: all) and a filter as
# (column, op, value) conjunctions, the form every reader is given.
CASES: dict[str, tuple[list[str] | None, list[tuple[str, str, object]]]] = {
    "all": (None, []),
    "cat-qty": (["cat", "qty"], []),
    # The last tenth of the rows: `id` rises, so page statistics rule out
    # the rest.
    "id-tail": (None, [("id", ">=", 18_000_000)]),
    # 5 % of the rows, spread over the whole file.
    "qty-5pct": (None, [("qty", "<", 5)]),
    # A third of the rows, a column read only for the filter.
    "flag-third": (["id", "price", "cat"], [("flag", "=", 1)]),
}

CHILD = r"""
import json, sys, time
reader, path, case = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
columns, filters = case["columns"], [tuple(f) for f in case["filters"]]
import pyarrow as pa
if reader == "fastingest":
    import fastingest
    def stream():
        return fastingest.iter_batches(path, columns=columns, filters=filters or None)
elif reader == "pyarrow":
    import pyarrow.compute as pc
    import pyarrow.dataset as ds
    def stream():
        expr = None
        for name, op, value in filters:
            field = pc.field(name)
            term = {">=": field >= value, "<": field < value, "=": field == value}[op]
            expr = term if expr is None else expr & term
        return ds.dataset(path).to_batches(columns=columns, filter=expr)
else:
    import polars as pl
    def stream():
        frame = pl.scan_parquet(path)
        for name, op, value in filters:
            col = pl.col(name)
            frame = frame.filter({">=": col >= value, "<": col < value, "=": col == value}[op])
        if columns:
            frame = frame.select(columns)
        return frame.collect_batches()
start = time.perf_counter()
first = None
rows = 0
for batch in stream():
    if first is None and len(batch):
        first = time.perf_counter() - start
    rows += len(batch)
total = time.perf_counter() - start
# VmHWM, not ru_maxrss: the latter keeps the parent's high mark across exec.
status = open("/proc/self/status").read().split("VmHWM:")[1]
peak = int(status.split()[0]) / 1024
print(json.dumps({"first": first or total, "total": total, "rows": rows, "peak_mib": peak}))
"""


def run(reader: str, path: Path, case: str, pythonpath: str | None) -> dict:
    columns, filters = CASES[case]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [pythonpath, env.get("PYTHONPATH")]))
    spec = json.dumps({"columns": columns, "filters": filters})
    out = subprocess.run(
        [sys.executable, "-c", CHILD, reader.split("@")[0], str(path), spec],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--readers", default="fastingest,pyarrow,polars")
    ap.add_argument(
        "--build",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="run fastingest from DIR (first on PYTHONPATH) as reader fastingest@NAME",
    )
    args = ap.parse_args()
    readers = [r for r in args.readers.split(",") if r != "fastingest" or not args.build]
    paths: dict[str, str | None] = {r: None for r in readers}
    for spec in args.build:
        name, _, directory = spec.partition("=")
        paths[f"fastingest@{name}"] = str(Path(directory).resolve())
    readers = list(paths)
    path = bench_writers.DATA / "tall-pyarrow.parquet"
    if not path.exists():
        bench_writers.make("tall", path)
    path.read_bytes()  # page cache warm
    print("| case | reader | first ms | all ms (range) | peak MiB | rows |")
    print("|---|---|---:|---:|---:|---:|")
    for case in args.cases.split(","):
        if case not in CASES:
            raise SystemExit(f"unknown case {case!r}; the cases: {', '.join(CASES)}")
        got: dict[str, list[dict]] = {r: [] for r in readers}
        for i in range(args.rounds):
            turn = i % len(readers)
            for reader in readers[turn:] + readers[:turn]:
                got[reader].append(run(reader, path, case, paths[reader]))
        rows = {r: {g["rows"] for g in got[r]} for r in readers}
        if len(set().union(*rows.values())) != 1:
            raise SystemExit(f"{case}: the readers kept different rows: {rows}")
        for r in readers:
            first = statistics.median(g["first"] * 1e3 for g in got[r])
            totals = [g["total"] * 1e3 for g in got[r]]
            peak = statistics.median(g["peak_mib"] for g in got[r])
            print(
                f"| {case} | {r} | {first:.1f} | {statistics.median(totals):.1f} "
                f"({min(totals):.0f}-{max(totals):.0f}) | {peak:.0f} | {got[r][0]['rows']:,} |"
            )


if __name__ == "__main__":
    main()
