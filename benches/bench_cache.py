"""Cache benchmark (issue 3): three epochs of one file over the emulated
cloud store (MinIO behind toxiproxy: 30 ms +-5 latency, 100 MB/s per
connection) through a fastingest cache, next to fastingest reading the same
file from local disk. Every read runs in a fresh process (so a warm epoch is
a new process finding the cache on disk), and rounds are interleaved:
local, epoch 1 (cold), epoch 2, epoch 3 (warm, "immutable"), and a warm
epoch under "once" (a new process revalidates: one request per object).

    python benches/bench_cache.py [--runs 3] [--size-mb 250] [--far] [--quick]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from bench_read import make_dataset, one, start_cloud, write_results  # noqa: E402

from devtools.servers import Servers  # noqa: E402

STEPS = ["local disk", "epoch 1 (cold)", "epoch 2 (warm)", "epoch 3 (warm)", "warm, once"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--size-mb", type=int, default=250)
    ap.add_argument(
        "--far",
        action="store_true",
        help="a far region instead (100 ms latency, 50 MB/s per connection)",
    )
    ap.add_argument("--quick", action="store_true", help="a small file, one run")
    ap.add_argument("--out", default=str(HERE / "results"))
    # Options meant for bench_read.py (scripts/bench.sh passes them to both) are ignored.
    args, _ = ap.parse_known_args()
    if args.quick:
        args.runs, args.size_mb = 1, 16
    data = make_dataset(HERE / "data" / f"bench_{args.size_mb}mb.parquet", args.size_mb)
    size = data.stat().st_size
    servers = Servers()
    runs: dict[str, list[dict]] = {s: [] for s in STEPS}
    try:
        url, _, s3 = start_cloud(servers, data)
        link = "emulated cloud store (30 ms +-5, 100 MB/s per connection)"
        if args.far:
            servers.toxi.clear("s3")
            servers.toxi.add_toxic("s3", "latency", {"latency": 100, "jitter": 10})
            servers.toxi.add_toxic("s3", "bandwidth", {"rate": 50_000})  # KB/s per connection
            link = "far region (100 ms +-10, 50 MB/s per connection)"
        for run in range(args.runs):
            cache_dir = tempfile.mkdtemp(prefix="fastingest-bench-cache-")
            immutable = {"dir": cache_dir, "validate": "immutable"}
            try:
                plan = [
                    ("local disk", str(data), None, None),
                    ("epoch 1 (cold)", url, s3, immutable),
                    ("epoch 2 (warm)", url, s3, immutable),
                    ("epoch 3 (warm)", url, s3, immutable),
                    ("warm, once", url, s3, {"dir": cache_dir, "validate": "once"}),
                ]
                for step, source, creds, cache in plan:
                    r = one("fastingest", source, creds, cache=cache)
                    runs[step].append(r)
                    requests = r.get("stats", {}).get("requests", "-")
                    print(
                        f"[run {run + 1}/{args.runs}] {step:<16} "
                        f"{size / 1e6 / r['seconds']:9.1f} MB/s  requests {requests}",
                        flush=True,
                    )
            finally:
                shutil.rmtree(cache_dir, ignore_errors=True)
    finally:
        servers.stop()

    med = {s: statistics.median(size / 1e6 / r["seconds"] for r in rs) for s, rs in runs.items()}
    lines = [
        f"File: {size / 1e6:.0f} MB (8 row groups x 5 columns, snappy), {link}. "
        f"Median of {args.runs} interleaved rounds, "
        "each read in a fresh process; MB/s = file bytes / wall seconds.",
        "",
        "| read | MB/s median | min-max | requests | bytes fetched | vs local disk "
        "| vs cold epoch |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for step, rs in runs.items():
        mbps = [size / 1e6 / r["seconds"] for r in rs]
        reqs = statistics.median(r.get("stats", {}).get("requests", 0) for r in rs)
        fetched = statistics.median(r.get("stats", {}).get("bytes_fetched", 0) for r in rs)
        lines.append(
            f"| {step} | {med[step]:.0f} | {min(mbps):.0f}-{max(mbps):.0f} | "
            f"{reqs:.0f} | {fetched / 1e6:.1f} MB | {med[step] / med['local disk']:.2f}x | "
            f"{med[step] / med['epoch 1 (cold)']:.1f}x |"
        )
    table = "\n".join(lines)
    print("\n" + table)
    record = {"benchmark": "cache", "size_bytes": size, "runs": runs, "median_mbps": med}
    write_results(Path(args.out), "cache-", table, record)


if __name__ == "__main__":
    main()
