"""The main job on local data: write a sample Parquet dataset, read it with
fastingest, and print what the read did."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import fastingest


def write_sample(folder: Path, files: int, rows_per_file: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(42)
    paths = []
    for i in range(files):
        path = folder / f"part-{i:03d}.parquet"
        paths.append(path)
        if path.exists():
            continue
        n = rows_per_file
        table = pa.table(
            {
                "id": pa.array(np.arange(i * n, (i + 1) * n), pa.int64()),
                "value": pa.array(rng.standard_normal(n)),
                "category": pa.array(rng.integers(0, 50, n), pa.int32()),
                "score": pa.array(rng.random(n), pa.float32()),
                "label": pa.array([f"label-{k % 1000:04d}" for k in range(n)]),
            }
        )
        pq.write_table(table, path, row_group_size=n // 4, compression="snappy")
    return paths


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--dir", default=".demo/data", help="where the sample dataset goes")
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows per file")
    args = ap.parse_args()

    paths = write_sample(Path(args.dir), args.files, args.rows)
    size = sum(p.stat().st_size for p in paths)
    source = str(Path(args.dir) / "*.parquet")
    print(f"dataset: {len(paths)} files, {size / 1e6:.1f} MB in {args.dir}")

    for label, kwargs in [
        ("all columns", {}),
        ("all columns, again", {}),
        ("2 columns + filter", {"columns": ["id", "value"], "filters": [("category", "<", 5)]}),
    ]:
        stats = fastingest.ReadStats()
        started = time.perf_counter()
        table = fastingest.read_parquet(source, stats=stats, **kwargs)
        secs = time.perf_counter() - started
        print(
            f"{label:>20}: {table.num_rows:>10,} rows x {table.num_columns} columns "
            f"in {secs:.3f} s = {size / 1e6 / secs:8.1f} MB/s of files; "
            f"{stats.requests} requests, {stats.bytes_fetched / 1e6:.1f} MB read "
            f"({stats.bytes_needed / 1e6:.1f} MB needed)"
        )


if __name__ == "__main__":
    main()
