"""The main job on local data, side by side with the peers: write a sample
Parquet dataset, read it with fastingest, pyarrow and polars (the same reads,
interleaved, medians), and, where the test servers are built, read it through
an emulated cloud link (MinIO behind toxiproxy), cold and then as a warm epoch
from fastingest's on-disk cache.

    python scripts/demo.py [--files 8] [--rows 1000000] [--rounds 5] [--no-cloud]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# numpy's OpenBLAS threads spin after import and steal the cores from the
# reads (see benches/); set before anything imports numpy.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benches"))

import one_read  # noqa: E402  (the benchmark's readers: the same calls as `make bench`)

import fastingest  # noqa: E402
from devtools.servers import TOOLS_BIN  # noqa: E402

PEERS = ["fastingest", "pyarrow", "polars"]
READS: list[tuple[str, dict[str, Any]]] = [
    ("all columns", {}),
    ("2 columns + filter", {"columns": ["id", "value"], "filters": [["category", "<", 5]]}),
]


def write_sample(folder: Path, files: int, rows_per_file: int) -> list[Path]:
    """`files` Parquet files of five columns (ints, floats, strings), snappy,
    four row groups each; kept for later runs."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(42)
    labels = np.array([f"label-{k:04d}" for k in range(1000)])
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
                "label": pa.array(labels[np.arange(n) % 1000]),
            }
        )
        tmp = path.with_suffix(".tmp")
        pq.write_table(table, tmp, row_group_size=n // 4, compression="snappy")
        tmp.rename(path)
    return paths


def timed(run: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = run()
    return time.perf_counter() - started, result


def rows(result: Any) -> int:
    return int(result.num_rows if hasattr(result, "num_rows") else result.height)


def compare(label: str, specs: dict[str, dict], rounds: int, size_mb: float) -> None:
    """Times each reader's read `rounds` times, interleaved (A B C A B C ...)
    after one untimed warm-up each, and prints medians and the ratio to the
    fastest peer. All readers must return the same number of rows."""
    runs = {name: one_read.READERS[name](spec) for name, spec in specs.items()}
    counts = {name: rows(run()) for name, run in runs.items()}  # warm-up
    if len(set(counts.values())) != 1:
        raise SystemExit(f"readers disagree on the row count: {counts}")
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            times[name].append(timed(run)[0])
    medians = {name: statistics.median(t) for name, t in times.items()}
    best_peer = min((m, n) for n, m in medians.items() if not n.startswith("fastingest"))
    cells = "  ".join(
        f"{name} {medians[name]:6.3f} s ({size_mb / medians[name]:6.0f} MB/s)" for name in runs
    )
    ratio = best_peer[0] / medians["fastingest"]
    verdict = "faster" if ratio >= 1 else "slower"
    print(f"  {label:<20} {cells}")
    print(
        f"  {'':<20} fastingest is {ratio:.2f}x the best peer ({best_peer[1]}): {verdict}; "
        f"{next(iter(counts.values())):,} rows"
    )


def local_reads(folder: Path, rounds: int, size_mb: float) -> None:
    print(
        f"\nlocal disk (page cache warm; one process, steady state; "
        f"median of {rounds} interleaved rounds):"
    )
    for label, extra in READS:
        specs = {
            name: {"reader": name, "url": str(folder), "folder": True, **extra} for name in PEERS
        }
        compare(label, specs, rounds, size_mb)


def cloud_reads(paths: list[Path], rounds: int, size_mb: float) -> None:
    """The same dataset through MinIO behind toxiproxy shaped like a cloud
    region; then fastingest's cache: a cold epoch fills it, a warm one is
    served from local disk with no request."""
    from devtools.cloud import CloudStore, describe
    from devtools.servers import Servers

    servers = Servers()
    try:
        store = CloudStore(servers)
        for p in paths:
            store.upload(p, f"demo/{p.name}")
        store.shape("cloud")
        s3 = {**store.options("cloud")}
        url = "s3://bench/demo/"
        print(f"\nemulated cloud link ({describe('cloud')}; median of {rounds} rounds):")
        specs = {name: {"reader": name, "url": url, "folder": True, "s3": s3} for name in PEERS}
        compare("all columns", specs, rounds, size_mb)

        print("\nepochs through fastingest's on-disk cache (same link):")
        with tempfile.TemporaryDirectory(prefix="fastingest-demo-cache-") as cache_dir:
            cache = fastingest.Cache(cache_dir, min_free_bytes=0)
            options = one_read.storage_options(s3)
            for epoch in (1, 2, 3):
                stats = fastingest.ReadStats()
                secs, table = timed(
                    lambda stats=stats: fastingest.read_parquet(
                        url + "*.parquet", storage_options=options, cache=cache, stats=stats
                    )
                )
                print(
                    f"  epoch {epoch}: {secs:6.3f} s ({size_mb / secs:6.0f} MB/s), "
                    f"{stats.requests} request(s), {stats.bytes_fetched / 1e6:.1f} MB over the "
                    f"link, {stats.bytes_from_cache / 1e6:.1f} MB from the cache, "
                    f"{table.num_rows:,} rows"
                )
                # Released before the next epoch, as a training loop that has
                # consumed it would: held, it made the next epoch pay for
                # fresh memory (epoch 2 took 0.48 s where epoch 3 took 0.11).
                del table
        print(
            "  (a warm epoch's one request is the LIST that expands the glob and shows that\n"
            "   no object changed; with validate='immutable' even that is cached)"
        )
    finally:
        servers.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--dir", default=".demo/data", help="where the sample dataset goes")
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows per file")
    ap.add_argument("--rounds", type=int, default=5, help="timed reads per reader")
    ap.add_argument("--no-cloud", action="store_true", help="skip the emulated cloud link")
    args = ap.parse_args()

    folder = Path(args.dir)
    if not all((folder / f"part-{i:03d}.parquet").exists() for i in range(args.files)):
        print(f"writing the sample dataset to {folder} (once; about 10 s)", flush=True)
    paths = write_sample(folder, args.files, args.rows)
    size_mb = sum(p.stat().st_size for p in paths) / 1e6
    source = str(folder / "*.parquet")
    print(f"dataset: {len(paths)} files, {size_mb:.1f} MB, {args.files * args.rows:,} rows")

    stats = fastingest.ReadStats()
    fastingest.read_parquet(source, stats=stats)
    print(
        f"fastingest's plan for a full read: {stats.requests} requests, "
        f"{stats.bytes_fetched / 1e6:.1f} MB read for {stats.bytes_needed / 1e6:.1f} MB needed"
    )
    local_reads(folder, args.rounds, size_mb)

    if args.no_cloud:
        return
    missing = [b for b in ("minio", "toxiproxy-server") if not (TOOLS_BIN / b).exists()]
    if missing:
        print(
            f"\nemulated cloud link: skipped, the test servers are not built yet "
            f"({', '.join(missing)} missing in {TOOLS_BIN}); `make test` builds them "
            f"(about 5 min, once), then run `make demo` again"
        )
        return
    print("\nstarting MinIO and toxiproxy on loopback, uploading the dataset (~10 s)", flush=True)
    cloud_reads(paths, max(3, args.rounds // 2), size_mb)


if __name__ == "__main__":
    main()
