"""ORC benchmark (issue 6): the read benchmark's file written as ORC
(snappy, pyarrow's default 64 MiB stripes), read with fastingest.read_orc and
with pyarrow.orc.read_table (through pyarrow's S3 filesystem for the remote
profiles), interleaved, each read in a fresh process: local disk, MinIO on
loopback, and the emulated cloud (toxiproxy: 30 ms +-5, 100 MB/s per
connection).

    python benches/bench_orc.py [--runs 5] [--size-mb 250] [--profiles local,minio,cloud] [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from bench_read import make_dataset, one, start_cloud, write_results  # noqa: E402

from devtools.servers import Servers  # noqa: E402

READERS = ["fastingest-orc", "pyarrow-orc"]


def orc_dataset(parquet: Path) -> Path:
    """The Parquet benchmark file rewritten as ORC (once)."""
    path = parquet.with_suffix(".orc")
    if path.exists():
        return path
    import pyarrow.orc as orc
    import pyarrow.parquet as pq

    tmp = path.with_suffix(".tmp")
    orc.write_table(pq.read_table(parquet), tmp, compression="snappy")
    tmp.rename(path)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--size-mb", type=int, default=250)
    ap.add_argument("--profiles", default="local,minio,cloud")
    ap.add_argument("--quick", action="store_true", help="a small file, one run")
    ap.add_argument("--out", default=str(HERE / "results"))
    # Options meant for bench_read.py (scripts/bench.sh passes them to all) are ignored.
    args, _ = ap.parse_known_args()
    if args.quick:
        args.runs, args.size_mb = 1, 16
    data = orc_dataset(
        make_dataset(HERE / "data" / f"bench_{args.size_mb}mb.parquet", args.size_mb)
    )
    size = data.stat().st_size
    servers = Servers()
    results: dict[str, dict[str, list[dict]]] = {}
    try:
        url, direct, proxied = start_cloud(servers, data)
        profiles = {"local": (str(data), None), "minio": (url, direct), "cloud": (url, proxied)}
        for profile in args.profiles.split(","):
            source, s3 = profiles[profile]
            results[profile] = {r: [] for r in READERS}
            for run in range(args.runs):
                for reader in READERS:  # interleaved
                    r = one(reader, source, s3)
                    results[profile][reader].append(r)
                    print(
                        f"[{profile} run {run + 1}/{args.runs}] {reader:<15} "
                        f"{size / 1e6 / r['seconds']:8.1f} MB/s  peak {r['peak_mib']:.0f} MiB",
                        flush=True,
                    )
    finally:
        servers.stop()

    lines = [
        f"File: {size / 1e6:.0f} MB ORC (the read benchmark's table, snappy, 64 MiB stripes). "
        f"Median of {args.runs} interleaved runs, each read in a fresh process; "
        "MB/s = file bytes / wall seconds.",
        "",
        "| profile | reader | MB/s median | min-max | fastingest vs pyarrow | peak RSS MiB |",
        "|---|---|---:|---:|---:|---:|",
    ]
    summary = {}
    for profile, by_reader in results.items():
        mbps = {r: [size / 1e6 / x["seconds"] for x in runs] for r, runs in by_reader.items()}
        med = {r: statistics.median(v) for r, v in mbps.items()}
        for r in READERS:
            peak = statistics.median(x["peak_mib"] for x in by_reader[r])
            ratio = med[r] / med["pyarrow-orc"]
            lines.append(
                f"| {profile} | {r} | {med[r]:.0f} | {min(mbps[r]):.0f}-{max(mbps[r]):.0f}"
                f" | {ratio:.2f}x | {peak:.0f} |"
            )
        summary[profile] = med
    table = "\n".join(lines)
    print("\n" + table)
    import pyarrow

    record = {
        "benchmark": "orc",
        "size_bytes": size,
        "runs": results,
        "median_mbps": summary,
        "versions": {"pyarrow": pyarrow.__version__},
    }
    write_results(Path(args.out), "orc-", table, record)


if __name__ == "__main__":
    main()
