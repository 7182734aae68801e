"""GPU benchmark (issue 17), on a machine with CUDA, PyTorch and a local file:

- upload: `ChunkSet.to_device(0)` (fastingest's staged host→device copy of
  every column chunk) against torch copying the same number of bytes from
  pinned and from pageable host memory;
- `read_chunks(path, device=0)` (fetch + upload overlapped) against
  `read_chunks(path)` (the fetch alone): how much of the upload is hidden;
- `read_torch(path, "cuda:0")` against `pq.read_table` + `torch.from_numpy(...).cuda()`;
- with `--link` (needs toxiproxy-server: `make test` builds it, or pass
  `--toxiproxy PATH`), the same file over the emulated cloud link (the file
  served by `devtools.ranges` behind toxiproxy: 30 ms, 100 MB/s per
  connection), no cache: `read_chunks(url, device=0)` against
  `read_chunks(url)`, the fetch alone. 1.00 = the upload fully hidden
  behind the fetch.

Every measurement is interleaved round by round in one process (steady
state, page cache warm), medians over `--runs`; CUDA is synchronised before
each clock stops.

    python benches/bench_gpu.py [--rows 8000000] [--runs 7] [--link] [--out DIR]
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

REPO = Path(__file__).resolve().parent.parent


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


def interleaved(cases: dict, runs: int) -> dict[str, list[float]]:
    """Each case once as a warm-up, then `runs` rounds of every case in turn."""
    for fn in cases.values():
        fn()
    times: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(runs):
        for name, fn in cases.items():
            times[name].append(timed(fn))
    return times


def table(times: dict[str, list[float]], nbytes: int) -> list[str]:
    lines = ["| what | median s | GB/s | min-max s |", "|---|---:|---:|---:|"]
    for name, v in times.items():
        med = statistics.median(v)
        lines.append(
            f"| {name} | {med:.4f} | {nbytes / 1e9 / med:.2f} | {min(v):.4f}-{max(v):.4f} |"
        )
    return lines


def report_of(dev) -> str:
    r = dev.upload_report
    keys = ("copies", "staging_threads", "staging_allocated", "staging_waits")
    secs = ("staging_copy_s", "wait_for_data_s", "total_s")
    return ", ".join(
        [f"{k} {r[k]}" for k in keys if k in r] + [f"{k} {r[k] * 1000:.1f} ms" for k in secs]
    )


def link_section(path: Path, runs: int, toxiproxy: Path) -> list[str]:
    """read_chunks(url, device=0) against the fetch alone, over the emulated link."""
    import sys

    sys.path.insert(0, str(REPO))
    from devtools.cloud import PROFILES, describe
    from devtools.ranges import RangeServer
    from devtools.servers import Toxiproxy, free_port, start, wait_http

    server = RangeServer(path.parent)
    port = free_port()
    proxy = start(
        "toxiproxy",
        [str(toxiproxy), "-host", "127.0.0.1", "-port", str(port)],
        Path(tempfile.mkdtemp()),
    )
    try:
        toxi = Toxiproxy(f"http://127.0.0.1:{port}")
        wait_http(toxi.api + "/version")
        listen = toxi.create("http", server.address)
        link = PROFILES["cloud"]
        toxi.add_toxic("http", "latency", {"latency": link["latency"], "jitter": link["jitter"]})
        toxi.add_toxic("http", "bandwidth", {"rate": link["rate_kbps"]})
        url = f"http://{listen}/{path.name}"
        nbytes = sum(len(memoryview(c)) for c in fastingest.read_chunks(url, cache=False))
        kept: dict[str, object] = {}

        def to_device() -> None:
            kept["dev"] = fastingest.read_chunks(url, device=0, cache=False)

        times = interleaved(
            {
                "read_chunks(url) (the fetch alone)": lambda: fastingest.read_chunks(
                    url, cache=False
                ),
                "read_chunks(url, device=0)": to_device,
            },
            runs,
        )
        med = {k: statistics.median(v) for k, v in times.items()}
        hidden = med["read_chunks(url) (the fetch alone)"] / med["read_chunks(url, device=0)"]
        return [
            "",
            f"## Over the emulated cloud link ({describe('cloud')}), no cache, "
            f"median of {runs} interleaved rounds",
            "",
            *table(times, nbytes),
            "",
            f"- read_chunks(url, device=0) vs the fetch alone: {hidden:.2f} "
            "(1.00 = upload fully hidden; target >= 0.95)",
            f"- last upload: {report_of(kept['dev'])}",
        ]
    finally:
        proxy.stop()
        server.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=8_000_000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--out", default=None)
    ap.add_argument("--link", action="store_true", help="also over the emulated cloud link")
    ap.add_argument(
        "--toxiproxy",
        default=str(
            Path.home() / ".cache" / "fastingest-dev" / "tools" / "bin" / "toxiproxy-server"
        ),
    )
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

    pinned_host = host.pin(0)
    cases = {
        "to_device (host chunks -> GPU)": lambda: host.to_device(0),
        "to_device of ChunkSet.pin(0)": lambda: pinned_host.to_device(0),
        "torch copy, pinned": lambda: pinned.to("cuda"),
        "torch copy, pageable": lambda: pageable.to("cuda"),
        "read_chunks(device=0)": lambda: fastingest.read_chunks(path, device=0),
        "read_chunks (host only)": lambda: fastingest.read_chunks(path),
        'read_torch(..., "cuda:0")': lambda: fastingest.read_torch(path, "cuda:0"),
        "pq.read_table + torch .cuda()": pyarrow_to_cuda,
    }
    times = interleaved(cases, args.runs)
    med = {k: statistics.median(v) for k, v in times.items()}
    lines = [
        f"# GPU: {torch.cuda.get_device_name(0)}, {nbytes / 1e6:.0f} MB of column chunks "
        f"({args.rows:,} rows x 4 columns, uncompressed), median of {args.runs} interleaved rounds",
        "",
        *table(times, nbytes),
    ]
    upload = med["torch copy, pinned"] / med["to_device (host chunks -> GPU)"]
    upload_pinned = med["torch copy, pinned"] / med["to_device of ChunkSet.pin(0)"]
    pageable_ratio = med["torch copy, pageable"] / med["to_device (host chunks -> GPU)"]
    hidden = med["read_chunks (host only)"] / med["read_chunks(device=0)"]
    torch_read = med["pq.read_table + torch .cuda()"] / med['read_torch(..., "cuda:0")']
    lines += [
        "",
        f"- to_device: {upload:.2f} of the pinned copy's speed (target >= 0.85), "
        f"{pageable_ratio:.2f} of the pageable copy's; from ChunkSet.pin(0): {upload_pinned:.2f}",
        f"- read_chunks(device=0) vs host-only: {hidden:.2f} (1.00 = upload fully hidden)",
        f"- read_torch vs pyarrow + .cuda(): {torch_read:.2f}x",
        f"- one to_device: {report_of(host.to_device(0))}",
        f"- one read_chunks(device=0): {report_of(fastingest.read_chunks(path, device=0))}",
    ]
    if args.link:
        lines += link_section(path, args.runs, Path(args.toxiproxy).resolve())
    report = "\n".join(lines)
    print(report)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "gpu.md").write_text(report + "\n")


if __name__ == "__main__":
    main()
