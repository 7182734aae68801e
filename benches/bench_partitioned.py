"""Partitioned-dataset benchmark (issue 13): a hive lake of 1,000 files in
100 partitions (`region=r0..r9/day=d00..d09/part-N.parquet`) on MinIO behind
toxiproxy, read with a filter on the partition keys that selects 5 % of it
(5 partitions, 50 files), by fastingest (`read_parquet("s3://b/lake/",
filters=...)`), pyarrow (`pq.read_table`), pyarrow.dataset and polars
(`scan_parquet(hive_partitioning=True)`); `fastingest+_metadata` reads a
copy of the lake with a `_metadata` summary (written by pyarrow, uploaded
after the data, as writers do) beside it. Every read runs in a fresh
process; rounds are interleaved (A B C D A B C D ...). Steady state: in one
process per reader, one read to warm up, then the median of three more.
Requests are MinIO's own count (its audit log), so every reader is counted
the same way (per read: a steady-state round's count is divided by its reads).

    python benches/bench_partitioned.py [--runs 3] [--profiles cloud,far] [--quick]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

READERS = ["fastingest", "fastingest+_metadata", "pyarrow", "pyarrow-dataset", "polars"]
# 5 of the 100 partitions.
FILTERS = [("region", "=", "r3"), ("day", "in", ["d00", "d01", "d02", "d03", "d04"])]


def make_lake(root: Path, files_per_partition: int, rows: int) -> Path:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    lake = root / "lake"
    if (lake / "_SUCCESS").exists():
        return lake
    rng = np.random.default_rng(13)
    for r in range(10):
        for d in range(10):
            part = lake / f"region=r{r}" / f"day=d{d:02d}"
            part.mkdir(parents=True, exist_ok=True)
            for i in range(files_per_partition):
                table = pa.table(
                    {
                        "id": pa.array(np.arange(rows, dtype=np.int64) + i * rows),
                        "value": pa.array(rng.random(rows)),
                        "qty": pa.array(rng.integers(0, 1000, rows, dtype=np.int32)),
                    }
                )
                pq.write_table(table, part / f"part-{i}.parquet")
    (lake / "_SUCCESS").write_bytes(b"")
    return lake


def make_summary(lake: Path, out: Path) -> Path:
    """The `_metadata` summary of `lake`, as pyarrow's `write_metadata` makes
    it from the files' footers."""
    import pyarrow.parquet as pq

    collected = []
    files = sorted(lake.rglob("*.parquet"))
    for f in files:
        meta = pq.read_metadata(f)
        meta.set_file_path(f.relative_to(lake).as_posix())
        collected.append(meta)
    pq.write_metadata(pq.read_schema(files[0]), out, metadata_collector=collected)
    return out


def one_read(reader: str, s3: dict) -> dict:
    """Runs in the child: one read, its wall time and row count; with
    `steady` in `s3`, a warm-up read then the median of three."""
    if not s3.get("steady"):
        return _read(reader, s3)
    _read(reader, s3)
    runs = [_read(reader, s3) for _ in range(3)]
    return {"seconds": statistics.median(r["seconds"] for r in runs), "rows": runs[0]["rows"]}


def _read(reader: str, s3: dict) -> dict:
    import one_read as helpers

    url = s3["url"]
    started = time.perf_counter()
    if reader == "fastingest+_metadata":
        import fastingest

        table = fastingest.read_parquet(
            s3["summarised_url"], filters=FILTERS, storage_options=helpers.storage_options(s3)
        )
        rows = table.num_rows
    elif reader == "fastingest":
        import fastingest

        stats = fastingest.ReadStats()
        table = fastingest.read_parquet(
            url, filters=FILTERS, storage_options=helpers.storage_options(s3), stats=stats
        )
        rows = table.num_rows
    elif reader in ("pyarrow", "pyarrow-dataset"):
        import pyarrow.dataset as pads
        import pyarrow.parquet as pq

        fs, path = helpers.pyarrow_fs(url, s3)
        if reader == "pyarrow":
            rows = pq.read_table(path, filesystem=fs, filters=FILTERS).num_rows
        else:
            dataset = pads.dataset(path, filesystem=fs, format="parquet", partitioning="hive")
            expr = pq.filters_to_expression(FILTERS)
            rows = dataset.to_table(filter=expr).num_rows
    elif reader == "polars":
        import polars as pl

        lf = pl.scan_parquet(
            url,
            hive_partitioning=True,
            storage_options=helpers._polars_options(s3),
        )
        lf = lf.filter((pl.col("region") == "r3") & pl.col("day").is_in(FILTERS[1][2]))
        rows = lf.collect().height
    else:
        raise ValueError(reader)
    return {"seconds": time.perf_counter() - started, "rows": rows}


def run_child(reader: str, s3: dict) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--one", reader, json.dumps(s3)],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
        env={**__import__("os").environ, "OPENBLAS_NUM_THREADS": "1"},
    )
    if out.returncode != 0:
        raise RuntimeError(f"{reader} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--profiles", default="cloud,far")
    ap.add_argument("--files-per-partition", type=int, default=10)
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--quick", action="store_true", help="100 files, one run, cloud only")
    ap.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--out", default=str(HERE / "results"))
    args, _ = ap.parse_known_args()
    if args.one:
        print(json.dumps(one_read(args.one[0], json.loads(args.one[1]))))
        return
    if args.quick:
        args.runs, args.files_per_partition, args.profiles = 1, 1, "cloud"

    from suite import Store

    from devtools.cloud import BUCKET, describe
    from devtools.servers import Servers

    data = Path(tempfile.gettempdir()) / f"fastingest-lake-{args.files_per_partition}x{args.rows}"
    lake = make_lake(data, args.files_per_partition, args.rows)
    files = sorted(lake.rglob("*.parquet"))
    servers = Servers()
    results: dict[tuple[str, str], list[dict]] = {}
    try:
        store = Store(servers)
        for f in files:
            store.upload(f, "lake/" + f.relative_to(lake).as_posix())
        for f in files:
            store.upload(f, "summarised/" + f.relative_to(lake).as_posix())
        summary = make_summary(lake, data / "_metadata")
        store.upload(summary, "summarised/_metadata")
        print(f"_metadata: {summary.stat().st_size} bytes", flush=True)
        for profile in args.profiles.split(","):
            store.shape(profile)
            s3 = {
                **store.options(profile),
                "url": f"s3://{BUCKET}/lake/",
                "summarised_url": f"s3://{BUCKET}/summarised/",
            }
            for _ in range(args.runs):
                for mode, reads in (("fresh", 1), ("steady", 4)):
                    for reader in READERS:
                        before = store.counters()
                        r = run_child(reader, {**s3, "steady": mode == "steady"})
                        after = store.counters()
                        r["requests"] = (after[0] - before[0]) / reads
                        r["bytes_sent"] = (after[1] - before[1]) / reads
                        results.setdefault((profile, mode, reader), []).append(r)
                        print(profile, mode, reader, r, flush=True)
    finally:
        servers.stop()
    lines = [
        f"# Partitioned lake: {len(files)} files in 100 partitions, a filter selecting 5 %",
        "",
    ]
    for profile in args.profiles.split(","):
        for mode in ("fresh", "steady"):
            lines += [
                f"## {profile} ({describe(profile)}), {mode} process",
                "",
                "| reader | median s | vs fastingest | requests per read | rows |",
                "|---|---|---|---|---|",
            ]
            ours = results[(profile, mode, "fastingest")]
            base = statistics.median(r["seconds"] for r in ours)
            for reader in READERS:
                rs = results[(profile, mode, reader)]
                med = statistics.median(r["seconds"] for r in rs)
                reqs = statistics.median(r["requests"] for r in rs)
                lines.append(
                    f"| {reader} | {med:.3f} | {med / base:.2f}x | {reqs:.0f} | {rs[0]['rows']} |"
                )
            lines.append("")
    report = "\n".join(lines)
    print(report)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (out / f"partitioned-{stamp}.md").write_text(report)
    (out / f"partitioned-{stamp}.json").write_text(
        json.dumps({"/".join(k): v for k, v in results.items()}, indent=1)
    )


if __name__ == "__main__":
    main()
