"""Slice size x requests in flight sweep on the emulated cloud profile (and
MinIO on loopback): which defaults fetch fastest. Interleaved, median of runs.

    python benches/sweep.py [--runs 3] [--size-mb 250]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_read import make_dataset, one, start_cloud  # noqa: E402

from tests.servers import Servers  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--size-mb", type=int, default=250)
    ap.add_argument("--slices", default="1,4,8,16,32")
    ap.add_argument("--inflight", default="4,8,16,32,64")
    ap.add_argument("--profiles", default="cloud")
    args = ap.parse_args()
    data = make_dataset(HERE / "data" / f"bench_{args.size_mb}mb.parquet", args.size_mb)
    size = data.stat().st_size
    servers = Servers()
    try:
        url, direct, proxied = start_cloud(servers, data)
        credentials = {"cloud": proxied, "minio": direct}
        grid = list(itertools.product(args.slices.split(","), args.inflight.split(",")))
        for profile in args.profiles.split(","):
            s3 = credentials[profile]
            times: dict[tuple[str, str], list[float]] = {g: [] for g in grid}
            for _ in range(args.runs):
                for sl, inf in grid:
                    cfg = {"slice_size": f"{sl}M", "max_in_flight": int(inf)}
                    times[(sl, inf)].append(one("fastingest", url, s3, cfg)["seconds"])
            print(
                f"\n{profile}: MB/s (median of {args.runs}); "
                "rows = slice MiB, columns = requests in flight"
            )
            print("| slice \\ in flight | " + " | ".join(args.inflight.split(",")) + " |")
            print("|---" * (1 + len(args.inflight.split(","))) + "|")
            for sl in args.slices.split(","):
                cells = [
                    f"{size / 1e6 / statistics.median(times[(sl, i)]):.0f}"
                    for i in args.inflight.split(",")
                ]
                print(f"| {sl} | " + " | ".join(cells) + " |")
    finally:
        servers.stop()


if __name__ == "__main__":
    main()
