"""GPU benchmark (issue 17), on a machine with CUDA, PyTorch and a local file:

- upload: `ChunkSet.to_device(0)` (fastingest's staged host→device copy of
  every column chunk) against torch copying the same number of bytes from
  pinned and from pageable host memory;
- `read_chunks(path, device=0)` (fetch + upload overlapped) against
  `read_chunks(path)` (the fetch alone): how much of the upload is hidden;
- `read_torch(path, "cuda:0")` against `pq.read_table` + `torch.from_numpy(...).cuda()`.

Every measurement is interleaved round by round in one process (steady
state, page cache warm), medians over `--runs`; CUDA is synchronised before
each clock stops.

    python benches/bench_gpu.py [--rows 8000000] [--runs 7] [--out DIR]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch

import fastingest


def make_file(path: Path, rows: int) -> None:
    rng = np.random.default_rng(17)
    table = pa.table(
        {
            "id": np.arange(rows, dtype=np.int64),
            "x": rng.random(rows),
            "y": rng.random(rows).astype(np.float32),
            "k": rng.integers(0, 1 << 30, rows, dtype=np.int32),
        }
    )
    pq.write_table(table, path, row_group_size=1 << 20, compression="none")


def timed(fn) -> float:
    torch.cuda.synchronize()
    started = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=8_000_000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    assert torch.cuda.is_available(), "needs a CUDA device"
    path = Path(tempfile.mkdtemp()) / "gpu.parquet"
    make_file(path, args.rows)
    host = fastingest.read_chunks(path)
    nbytes = sum(len(memoryview(c)) for c in host)
    pinned = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    pageable = torch.from_numpy(np.ones(nbytes, dtype=np.uint8))
    columns = ["id", "x", "y", "k"]

    def pyarrow_to_cuda() -> None:
        table = pq.read_table(path, columns=columns)
        for name in columns:
            torch.from_numpy(table.column(name).to_numpy()).cuda()

    cases = {
        "to_device (host chunks -> GPU)": lambda: host.to_device(0),
        "torch copy, pinned": lambda: pinned.to("cuda"),
        "torch copy, pageable": lambda: pageable.to("cuda"),
        "read_chunks(device=0)": lambda: fastingest.read_chunks(path, device=0),
        "read_chunks (host only)": lambda: fastingest.read_chunks(path),
        'read_torch(..., "cuda:0")': lambda: fastingest.read_torch(path, "cuda:0"),
        "pq.read_table + torch .cuda()": pyarrow_to_cuda,
    }
    for fn in cases.values():  # warm-up: CUDA context, allocator, page cache
        fn()
    times: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(args.runs):
        for name, fn in cases.items():
            times[name].append(timed(fn))
    med = {k: statistics.median(v) for k, v in times.items()}
    gb = nbytes / 1e9
    lines = [
        f"# GPU: {torch.cuda.get_device_name(0)}, {nbytes / 1e6:.0f} MB of column chunks "
        f"({args.rows:,} rows x 4 columns, uncompressed), median of {args.runs} interleaved rounds",
        "",
        "| what | median s | GB/s | min-max s |",
        "|---|---:|---:|---:|",
    ]
    for name, v in times.items():
        lines.append(
            f"| {name} | {med[name]:.4f} | {gb / med[name]:.1f} | {min(v):.4f}-{max(v):.4f} |"
        )
    upload = med["torch copy, pinned"] / med["to_device (host chunks -> GPU)"]
    hidden = med["read_chunks (host only)"] / med["read_chunks(device=0)"]
    torch_read = med["pq.read_table + torch .cuda()"] / med['read_torch(..., "cuda:0")']
    lines += [
        "",
        f"- to_device: {upload:.2f} of the pinned copy's speed (target >= 0.85)",
        f"- read_chunks(device=0) vs host-only: {hidden:.2f} (1.00 = upload fully hidden)",
        f"- read_torch vs pyarrow + .cuda(): {torch_read:.2f}x",
    ]
    report = "\n".join(lines)
    print(report)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "gpu.md").write_text(report + "\n")


if __name__ == "__main__":
    main()
