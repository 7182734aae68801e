"""Training-loader benchmark (issue 14): samples per second of one epoch fed to
a torch DataLoader (2 workers, batches of 1,024 rows as tensors), from
Parquet on MinIO behind the emulated cloud link, by

- fastingest: `fastingest.torch.ParquetDataset` with an on-disk cache
  (epoch 1 cold, epoch 2 from the cache), shuffle off and on;
- pyarrow: an IterableDataset over `ParquetFile.iter_batches` on pyarrow's
  S3 filesystem, files dealt out to the workers;
- hf-datasets: Hugging Face `datasets` streaming Parquet (`load_dataset(
  "parquet", streaming=True)` over s3fs), `.batch(1024).with_format("torch")`, timed
  over its first `--slow-rows` rows (a whole epoch takes minutes);
- ray-data: `ray.data.read_parquet(...).iter_torch_batches()` (Ray started
  before the clock).

and fastingest reading the same files from local disk, the figure epoch 2 is
held to. Every epoch runs in a fresh process; readers are interleaved round
by round; medians are reported.

    python benches/bench_loader.py [--runs 3] [--profiles cloud,far] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

BATCH = 1024
WORKERS = 2
FEATURES = 16
READERS = [
    "fastingest",
    "fastingest-shuffle",
    "fastingest-epoch2",
    "fastingest-local",
    "pyarrow",
    "hf-datasets",
    "ray-data",
]


def make_files(root: Path, files: int, rows: int) -> list[Path]:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    root.mkdir(parents=True, exist_ok=True)
    paths = [root / f"train-{i:03d}.parquet" for i in range(files)]
    rng = np.random.default_rng(14)
    for i, path in enumerate(paths):
        if path.exists():
            continue
        columns = {f"f{j}": rng.random(rows, dtype=np.float32) for j in range(FEATURES)}
        columns["label"] = np.arange(rows, dtype=np.int64) + i * rows
        pq.write_table(pa.table(columns), path, row_group_size=64 * 1024)
    return paths


# --- in the child: one epoch -------------------------------------------------


def _columns() -> list[str]:
    return [f"f{j}" for j in range(FEATURES)] + ["label"]


def epoch(reader: str, spec: dict) -> dict:
    import one_read as helpers
    import torch

    started = None
    rows = 0
    if reader.startswith("fastingest"):
        from fastingest.torch import DataLoader, ParquetDataset

        local = reader == "fastingest-local"
        ds = ParquetDataset(
            spec["local_glob"] if local else spec["url"],
            columns=_columns(),
            batch_size=BATCH,
            shuffle=reader == "fastingest-shuffle",
            storage_options=None if local else helpers.storage_options(spec),
            cache=False if local else spec["cache"],
        )
        started = time.perf_counter()  # footers read, as every peer's start
        for batch in DataLoader(ds, num_workers=WORKERS):
            rows += len(batch["label"])
    elif reader == "pyarrow":
        files = spec["keys"]

        class Files(torch.utils.data.IterableDataset):
            def __iter__(self):
                import pyarrow.parquet as pq

                info = torch.utils.data.get_worker_info()
                mine = files[info.id :: info.num_workers] if info else files
                fs, _ = helpers.pyarrow_fs("s3://", spec)
                for key in mine:
                    with fs.open_input_file(key) as f:
                        for b in pq.ParquetFile(f).iter_batches(BATCH, columns=_columns()):
                            yield {
                                n: torch.from_numpy(b.column(n).to_numpy()) for n in b.schema.names
                            }

        started = time.perf_counter()
        for batch in torch.utils.data.DataLoader(Files(), batch_size=None, num_workers=WORKERS):
            rows += len(batch["label"])
    elif reader == "hf-datasets":
        # benches/datasets.py would shadow Hugging Face's package.
        sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
        sys.modules.pop("datasets", None)
        import datasets

        datasets.utils.logging.set_verbosity_error()
        options = {
            "key": spec["key"],
            "secret": spec["secret"],
            "client_kwargs": {"endpoint_url": spec["endpoint"], "region_name": "us-east-1"},
        }
        started = time.perf_counter()
        ds = datasets.load_dataset(
            "parquet",
            data_files=["s3://" + k for k in spec["keys"]],
            streaming=True,
            storage_options=options,
            split="train",
        )
        # Batched in the dataset (`.batch`), its fastest path; per-example
        # iteration with the DataLoader batching ran at ~1,900 samples/s.
        ds = ds.batch(BATCH).with_format("torch")
        loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=WORKERS)
        for batch in loader:
            rows += len(batch["label"])
            if rows >= spec["slow_rows"]:
                break  # its rate over the first rows (a whole epoch takes minutes)
    elif reader == "ray-data":
        import ray

        ray.init(num_cpus=WORKERS, include_dashboard=False, log_to_driver=False)
        fs, _ = helpers.pyarrow_fs("s3://", spec)
        started = time.perf_counter()
        data = ray.data.read_parquet(spec["keys"], filesystem=fs, columns=_columns())
        for batch in data.iter_torch_batches(batch_size=BATCH):
            rows += len(batch["label"])
    else:
        raise ValueError(reader)
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "rows": rows, "samples_per_s": rows / seconds}


# The targets as ratios of two readers measured in the same round
# (interleaved, so they share the machine's state): the median of the
# rounds' ratios, and their range.
PAIRS = [
    ("fastingest-shuffle", "fastingest", "shuffle on / off", 0.9),
    ("fastingest-epoch2", "fastingest-local", "epoch 2 (cache) / local disk", 1.0),
]


def _paired(results: dict, profile: str, readers: list[str]) -> list[str]:
    lines = []
    for a, b, name, target in PAIRS:
        if a not in readers or b not in readers:
            continue
        ratios = [
            ra["samples_per_s"] / rb["samples_per_s"]
            for ra, rb in zip(results[(profile, a)], results[(profile, b)], strict=True)
            if "samples_per_s" in ra and "samples_per_s" in rb
        ]
        if ratios:
            lines.append(
                f"- {name}, per round: median {statistics.median(ratios):.2f}x "
                f"(range {min(ratios):.2f}-{max(ratios):.2f}, {len(ratios)} rounds; "
                f"target >= {target}x)"
            )
    return lines


def run_child(reader: str, spec: dict) -> dict:
    from bench_read import run_child as run_script

    return run_script(__file__, reader, spec)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--profiles", default="cloud,far")
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--rows", type=int, default=250_000)
    ap.add_argument("--readers", default=",".join(READERS))
    ap.add_argument(
        "--slow-rows",
        type=int,
        default=262_144,
        help="hf-datasets is timed over this many rows, not the whole epoch",
    )
    ap.add_argument("--quick", action="store_true", help="2 files of 50,000 rows, one run, cloud")
    ap.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--out", default=str(HERE / "results"))
    args, _ = ap.parse_known_args()
    if args.one:
        print(json.dumps(epoch(args.one[0], json.loads(args.one[1]))))
        return
    if args.quick:
        args.runs, args.files, args.rows, args.profiles = 1, 2, 50_000, "cloud"
    readers = args.readers.split(",")

    from devtools.cloud import BUCKET, CloudStore, describe
    from devtools.servers import Servers

    data = Path(tempfile.gettempdir()) / f"fastingest-loader-{args.files}x{args.rows}"
    paths = make_files(data, args.files, args.rows)
    size = sum(p.stat().st_size for p in paths)
    servers = Servers()
    results: dict[tuple[str, str], list[dict]] = {}
    cache_dir = Path(tempfile.mkdtemp(prefix="fastingest-loader-cache-"))
    try:
        store = CloudStore(servers)
        for p in paths:
            store.upload(p, "train/" + p.name)
        for profile in args.profiles.split(","):
            store.shape(profile)
            options = store.options(profile)
            spec = {
                "url": f"s3://{BUCKET}/train/*.parquet",
                "keys": [f"{BUCKET}/train/{p.name}" for p in paths],
                "local_glob": str(data / "*.parquet"),
                "slow_rows": args.slow_rows,
                **options,
            }
            for _ in range(args.runs):
                for reader in readers:
                    cache = (
                        cache_dir / "warm" if reader == "fastingest-epoch2" else cache_dir / "cold"
                    )
                    if reader != "fastingest-epoch2":
                        shutil.rmtree(cache, ignore_errors=True)
                    elif not cache.exists():
                        run_child("fastingest", {**spec, "cache": str(cache)})  # epoch 1 fills it
                        # Its writes on disk before epoch 2, as after an epoch of
                        # training: not the kernel's write-back during the read.
                        os.sync()
                    r = run_child(reader, {**spec, "cache": str(cache)})
                    results.setdefault((profile, reader), []).append(r)
                    print(profile, reader, r, flush=True)
                shutil.rmtree(cache_dir / "warm", ignore_errors=True)
    finally:
        servers.stop()
        shutil.rmtree(cache_dir, ignore_errors=True)
    rows = args.files * args.rows
    lines = [
        f"# Training loader: {args.files} files, {rows:,} rows x {FEATURES} float32 + int64 "
        f"({size / 1e6:.0f} MB), batches of {BATCH}, {WORKERS} DataLoader workers",
        "",
    ]
    for profile in args.profiles.split(","):
        lines += [
            f"## {profile} ({describe(profile)})",
            "",
            "| reader | samples/s (median) | vs fastingest epoch 1 | runs |",
            "|---|---|---|---|",
        ]
        ok = [r for r in results[(profile, "fastingest")] if "samples_per_s" in r]
        base = statistics.median(r["samples_per_s"] for r in ok) if ok else float("nan")
        for reader in readers:
            rs = [r for r in results[(profile, reader)] if "samples_per_s" in r]
            if not rs:
                err = results[(profile, reader)][0].get("error", "?")
                lines.append(f"| {reader} | failed: {err} | | 0 |")
                continue
            med = statistics.median(r["samples_per_s"] for r in rs)
            lines.append(f"| {reader} | {med:,.0f} | {med / base:.2f}x | {len(rs)} |")
        lines += ["", *_paired(results, profile, readers), ""]
    report = "\n".join(lines)
    print(report)
    from bench_read import write_results

    write_results(Path(args.out), "loader-", report, {"/".join(k): v for k, v in results.items()})


if __name__ == "__main__":
    main()
