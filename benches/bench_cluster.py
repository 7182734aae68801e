"""Cluster-engine benchmark (issue 15): one full read of a Parquet dataset on
MinIO behind the emulated cloud link, with 2 workers, by

- fastingest-ray: `fastingest.ray.read_parquet(...).materialize()`;
- ray-data: `ray.data.read_parquet(..., filesystem=pyarrow S3).materialize()`;
- fastingest-dask: `fastingest.dask.read_parquet(...).sum().compute()`;
- dask: `dd.read_parquet("s3://...", storage_options=s3fs's).sum().compute()`.

Ray runs with 2 CPUs, Dask as a LocalCluster of 2 worker processes (1 thread
each); the engine starts before the clock, the plan (listing, footers) is
inside it. No cache: every read fetches through the link. Each process reads
twice: the first read pays for the engine starting its workers (what a
script pays), the second is a warm cluster's steady state. Processes are
fresh per run, readers interleaved round by round; medians and their ratios
are reported.

    python benches/bench_cluster.py [--runs 3] [--profiles cloud] [--quick]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

WORKERS = 2
READERS = ["fastingest-ray", "ray-data", "fastingest-dask", "dask"]
PAIRS = [("fastingest-ray", "ray-data"), ("fastingest-dask", "dask")]


def one_read(reader: str, spec: dict) -> dict:
    """Starts the engine, then times the same read twice: the first pays
    for starting the engine's workers (what a script pays), the second is
    the steady state of a warm cluster (no cache: it fetches again)."""
    import one_read as helpers

    if reader in ("fastingest-ray", "ray-data"):
        import ray

        ray.init(num_cpus=WORKERS, include_dashboard=False, log_to_driver=False)

        def read() -> int:
            if reader == "fastingest-ray":
                import fastingest.ray

                ds = fastingest.ray.read_parquet(
                    spec["url"], storage_options=helpers.storage_options(spec), cache=False
                )
            else:
                fs, _ = helpers.pyarrow_fs("s3://", spec)
                ds = ray.data.read_parquet(spec["keys"], filesystem=fs)
            return ds.materialize().count()

    else:
        from dask.distributed import Client, LocalCluster

        cluster = LocalCluster(
            n_workers=WORKERS, processes=True, threads_per_worker=1, dashboard_address=None
        )
        client = Client(cluster)

        def read() -> int:
            if reader == "fastingest-dask":
                import fastingest.dask

                df = fastingest.dask.read_parquet(
                    spec["url"], storage_options=helpers.storage_options(spec), cache=False
                )
            else:
                import dask.dataframe as dd

                options = {"endpoint_url": spec["endpoint"], "region_name": "us-east-1"}
                df = dd.read_parquet(
                    spec["url"],
                    storage_options={
                        "key": spec["key"],
                        "secret": spec["secret"],
                        "client_kwargs": options,
                    },
                )
            # Every column is read and reduced on the workers.
            sums = df.sum().compute()
            assert len(sums) > 0
            return int(df["label"].count().compute())

    timings = []
    for _ in range(2):
        started = time.perf_counter()
        rows = read()
        timings.append(time.perf_counter() - started)
    if reader.endswith("dask"):
        client.close()
        cluster.close()
    return {"seconds": timings[0], "steady": timings[1], "rows": rows}


def run_child(reader: str, spec: dict) -> dict:
    from bench_read import run_child as run_script

    return run_script(__file__, reader, spec)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--profiles", default="cloud")
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--rows", type=int, default=250_000)
    ap.add_argument("--readers", default=",".join(READERS))
    ap.add_argument("--quick", action="store_true", help="2 files of 50,000 rows, one run")
    ap.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--out", default=str(HERE / "results"))
    args, _ = ap.parse_known_args()
    if args.one:
        print(json.dumps(one_read(args.one[0], json.loads(args.one[1]))))
        return
    if args.quick:
        args.runs, args.files, args.rows = 1, 2, 50_000
    readers = args.readers.split(",")

    from bench_loader import make_files
    from bench_read import write_results

    from devtools.cloud import BUCKET, CloudStore, describe
    from devtools.servers import Servers

    data = Path(tempfile.gettempdir()) / f"fastingest-loader-{args.files}x{args.rows}"
    paths = make_files(data, args.files, args.rows)
    size = sum(p.stat().st_size for p in paths)
    servers = Servers()
    results: dict[tuple[str, str], list[dict]] = {}
    try:
        store = CloudStore(servers)
        for p in paths:
            store.upload(p, "table/" + p.name)
        for profile in args.profiles.split(","):
            store.shape(profile)
            spec = {
                "url": f"s3://{BUCKET}/table/",
                "keys": [f"{BUCKET}/table/{p.name}" for p in paths],
                "bytes": size,
                **store.options(profile),
            }
            for _ in range(args.runs):
                for reader in readers:
                    r = run_child(reader, spec)
                    results.setdefault((profile, reader), []).append(r)
                    print(profile, reader, r, flush=True)
    finally:
        servers.stop()
    lines = [
        f"# Cluster engines: {args.files} files, {args.files * args.rows:,} rows, "
        f"{size / 1e6:.0f} MB of Parquet, {WORKERS} workers, no cache",
        "",
    ]
    for profile in args.profiles.split(","):
        lines += [
            f"## {profile} ({describe(profile)})",
            "",
            "| reader | first read, s (median) | vs its engine's | steady read, s | vs its "
            "engine's | MB/s steady | runs |",
            "|---|---|---|---|---|---|---|",
        ]
        medians: dict[str, dict[str, float]] = {}
        for reader in readers:
            ok = [r for r in results[(profile, reader)] if "seconds" in r]
            if ok:
                medians[reader] = {
                    k: statistics.median(r[k] for r in ok) for k in ("seconds", "steady")
                }
        for reader in readers:
            if reader not in medians:
                err = results[(profile, reader)][0].get("error", "?")
                lines.append(f"| {reader} | failed: {err} | | | | | 0 |")
                continue
            m = medians[reader]
            peer = medians.get(dict(PAIRS).get(reader, ""))
            first = f"{peer['seconds'] / m['seconds']:.2f}x" if peer else ""
            steady = f"{peer['steady'] / m['steady']:.2f}x" if peer else ""
            runs = sum("seconds" in r for r in results[(profile, reader)])
            lines.append(
                f"| {reader} | {m['seconds']:.2f} | {first} | {m['steady']:.2f} | {steady} "
                f"| {size / m['steady'] / 1e6:.0f} | {runs} |"
            )
        lines.append("")
    report = "\n".join(lines)
    print(report)
    write_results(Path(args.out), "cluster-", report, {"/".join(k): v for k, v in results.items()})


if __name__ == "__main__":
    main()
