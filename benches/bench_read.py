"""Read benchmark of the core reader (issue 2): fastingest vs pyarrow vs polars
on one ~250 MB file (8 row groups x 5 columns, snappy), from local disk, MinIO
on loopback, and MinIO behind toxiproxy shaped like a cloud store (30 ms +-5
latency, 100 MB/s per connection). Readers run interleaved (A B C A B C ...),
each read in a fresh process; the table gives medians, min-max and peak RSS.

    python benches/bench_read.py [--runs 3] [--quick] [--profiles local,minio,cloud]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from devtools.cloud import CloudStore  # noqa: E402
from devtools.servers import Servers  # noqa: E402

READERS = ["fastingest", "pyarrow", "polars"]


def make_dataset(path: Path, target_mb: int) -> Path:
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    # ~31 bytes per row across the 5 columns after snappy.
    rows_per_group = int(target_mb * 1e6 / 8 / 31)
    schema = pa.schema(
        [
            ("i64", pa.int64()),
            ("f64", pa.float64()),
            ("i32", pa.int32()),
            ("f32", pa.float32()),
            ("s", pa.string()),
        ]
    )
    tmp = path.with_suffix(".tmp")
    with pq.ParquetWriter(tmp, schema, compression="snappy") as w:
        for _ in range(8):
            n = rows_per_group
            words = np.array([f"w{k:05d}" for k in range(20_000)])
            w.write_table(
                pa.table(
                    {
                        "i64": rng.integers(0, 2**62, n),
                        "f64": rng.standard_normal(n),
                        "i32": rng.integers(0, 2**31 - 1, n, dtype=np.int32),
                        "f32": rng.random(n, dtype=np.float32),
                        "s": pa.array(words[rng.integers(0, len(words), n)]),
                    },
                    schema=schema,
                ),
                row_group_size=n,
            )
    tmp.rename(path)
    return path


def start_cloud(servers: Servers, data: Path) -> tuple[str, dict, dict]:
    """Starts MinIO with `data` uploaded and toxiproxy in front of it shaped
    like a cloud store (30 ms +-5 latency, 100 MB/s per connection). Returns
    the object's URL and the credentials for MinIO direct and proxied."""
    store = CloudStore(servers)
    url = store.upload(data)
    store.shape("cloud")
    return url, store.options("minio"), store.options("cloud")


def one(
    reader: str,
    url: str,
    s3: dict | None,
    config: dict | None = None,
    cache: dict | None = None,
) -> dict:
    spec = {"reader": reader, "url": url, "s3": s3, "config": config or {}, "cache": cache}
    out = subprocess.run(
        [sys.executable, str(HERE / "one_read.py"), json.dumps(spec)],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},  # see suite.READER_ENV
    )
    if out.returncode != 0:
        raise RuntimeError(f"{reader} failed on {url}:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def ceiling_probe(url: str, s3: dict, size: int, inflight: int = 32, slice_mb: int = 8) -> float:
    """Raw parallel 8 MiB range GETs of the whole object: the profile's ceiling."""
    import concurrent.futures as cf

    import boto3
    from botocore.config import Config as BotoConfig

    client = boto3.client(
        "s3",
        endpoint_url=s3["endpoint"],
        aws_access_key_id=s3["key"],
        aws_secret_access_key=s3["secret"],
        region_name="us-east-1",
        config=BotoConfig(max_pool_connections=inflight),
    )
    bucket, key = url.removeprefix("s3://").split("/", 1)
    step = slice_mb << 20

    def get(start: int) -> int:
        end = min(size, start + step) - 1
        body = client.get_object(Bucket=bucket, Key=key, Range=f"bytes={start}-{end}")["Body"]
        return len(body.read())

    started = time.perf_counter()
    with cf.ThreadPoolExecutor(inflight) as pool:
        total = sum(pool.map(get, range(0, size, step)))
    assert total == size
    return size / 1e6 / (time.perf_counter() - started)


def run_child(script: str, reader: str, spec: dict, timeout: float = 1800) -> dict:
    """Runs `script --one reader spec` in a fresh process: its last stdout
    line as JSON, or {"error": ...} with its last stderr line."""
    out = subprocess.run(
        [sys.executable, script, "--one", reader, json.dumps(spec)],
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
    )
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1][:300] if out.stderr else "failed"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def write_results(out: Path, prefix: str, table: str, record: dict) -> None:
    """Writes `<prefix><timestamp>.json` (the record plus the machine and the
    commit) and `.md` (the table) under `out`."""
    out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    ).stdout.strip()
    record = {
        "machine": {"cores": os.cpu_count(), "platform": platform.platform()},
        "commit": commit,
        **record,
    }
    (out / f"{prefix}{stamp}.json").write_text(json.dumps(record, indent=1))
    (out / f"{prefix}{stamp}.md").write_text(table + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--size-mb", type=int, default=250)
    ap.add_argument("--profiles", default="local,minio,cloud")
    ap.add_argument("--quick", action="store_true", help="one small case, one run (smoke test)")
    ap.add_argument("--out", default=str(HERE / "results"))
    args = ap.parse_args()
    if args.quick:
        args.runs, args.size_mb, args.profiles = 1, 16, "local,minio"

    data = make_dataset(HERE / "data" / f"bench_{args.size_mb}mb.parquet", args.size_mb)
    size = data.stat().st_size
    profiles = args.profiles.split(",")
    servers = Servers()
    results: dict[str, dict[str, list[dict]]] = {}
    ceilings: dict[str, float] = {}
    try:
        urls: dict[str, tuple[str, dict | None]] = {"local": (str(data), None)}
        if any(p in profiles for p in ("minio", "cloud")):
            url, direct, proxied = start_cloud(servers, data)
            urls["minio"] = (url, direct)
            urls["cloud"] = (url, proxied)
        for profile in profiles:
            url, s3 = urls[profile]
            if s3:
                ceilings[profile] = ceiling_probe(url, s3, size)
            results[profile] = {r: [] for r in READERS}
            for run in range(args.runs):
                for reader in READERS:  # interleaved: A B C A B C ...
                    r = one(reader, url, s3)
                    results[profile][reader].append(r)
                    print(
                        f"[{profile} run {run + 1}/{args.runs}] {reader:<10} "
                        f"{size / 1e6 / r['seconds']:8.1f} MB/s  peak {r['peak_mib']:.0f} MiB",
                        flush=True,
                    )
    finally:
        servers.stop()

    lines = [
        f"File: {size / 1e6:.0f} MB, 8 row groups x 5 columns (int64, float64, int32, "
        f"float32, string), snappy. Median of {args.runs} interleaved runs, each read in "
        f"a fresh process; MB/s = file bytes / wall seconds.",
        "",
        "| profile | reader | MB/s median | min-max | vs best peer | peak RSS MiB |",
        "|---|---|---:|---:|---:|---:|",
    ]
    summary = {}
    for profile, by_reader in results.items():
        mbps = {r: [size / 1e6 / x["seconds"] for x in runs] for r, runs in by_reader.items()}
        med = {r: statistics.median(v) for r, v in mbps.items()}
        best_peer = max(med["pyarrow"], med["polars"])
        for r in READERS:
            peak = statistics.median(x["peak_mib"] for x in by_reader[r])
            lines.append(
                f"| {profile} | {r} | {med[r]:.0f} | {min(mbps[r]):.0f}-{max(mbps[r]):.0f}"
                f" | {med[r] / best_peer:.2f}x | {peak:.0f} |"
            )
        if profile in ceilings:
            lines.append(
                f"| {profile} | raw parallel 8 MiB GETs (ceiling) | {ceilings[profile]:.0f} | | | |"
            )
        summary[profile] = {"median_mbps": med, "ceiling_mbps": ceilings.get(profile)}
    table = "\n".join(lines)
    print("\n" + table)
    record = {
        "size_bytes": size,
        "runs": results,
        "summary": summary,
        "versions": {m: __import__(m).__version__ for m in ("pyarrow", "polars")},
    }
    write_results(Path(args.out), "", table, record)


if __name__ == "__main__":
    main()
