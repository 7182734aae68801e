"""Lookups of one key in a file with bloom filters (parquet/bloom.rs).

A file of 4 M rows in 40 row groups whose `id` (int64) and `user` (string)
columns are unsorted, so every row group's minimum and maximum span the
whole range and statistics rule nothing out; pyarrow wrote bloom filters
for both (`ndv` 100,000, `fpp` 0.01: 128 KiB a column chunk). Two lookups:
an id that one row group holds (`hit`), and one that none holds (`miss`).

Readers, interleaved (A B C D, then D C B A): fastingest; fastingest with
`Config(bloom_filters=False)` (what the read cost before); polars
(`scan_parquet(...).filter(...)`); pyarrow (`read_table(filters=...)`).
Profiles: `local` (page cache warm), `minio` (loopback) and `cloud`
(toxiproxy: 30 ms, 100 MB/s a connection). Each read runs in a fresh
process (timed after the imports) and, for steady state, as the median of
reads 2-5 of one process. Bytes sent are MinIO's own count (audit log).

    python benches/bench_bloom.py [--rounds 5] [--profiles local,minio,cloud]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

DATA = HERE / "data" / "bloom"
READERS = ["fastingest", "fastingest-no-bloom", "polars", "pyarrow"]
ROWS, GROUP = 4_000_000, 100_000


def make(path: Path) -> dict:
    """Writes the file once (a fixed seed); returns the two lookups' ids."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(42)
    # Even ids only, shuffled over the whole file: an odd one is in no row group.
    ids = rng.permutation(ROWS * 2)[:ROWS].astype(np.int64) * 2
    keys = {"hit": int(ids[GROUP * 17 + 5]), "miss": int(ids[GROUP * 17 + 5]) + 1}
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        table = pa.table(
            {
                "id": ids,
                "user": pa.array([f"user-{x:09d}" for x in ids // 2]),
                "amount": rng.random(ROWS),
                "count": rng.integers(0, 1 << 40, ROWS),
                "score": rng.random(ROWS),
                "day": pa.array(rng.integers(18_000, 19_000, ROWS).astype(np.int32)).cast(
                    pa.date32()
                ),
            }
        )
        blooms = {c: {"ndv": GROUP, "fpp": 0.01} for c in ("id", "user")}
        tmp = path.with_suffix(".tmp")
        pq.write_table(table, tmp, row_group_size=GROUP, bloom_filter_options=blooms)
        tmp.rename(path)
    return keys


# Run in a child: `reads` reads of one lookup by one reader.
CHILD = r"""
import json, sys, time
reader, url, key, reads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
s3 = json.loads(sys.argv[5])
sys.path.insert(0, sys.argv[6])
import pyarrow
import one_read as helpers
filters = [("id", "==", key)]
if reader.startswith("fastingest"):
    import fastingest
    config = fastingest.Config(bloom_filters=reader == "fastingest")
    opts = helpers.storage_options(s3)
    read = lambda: fastingest.read_parquet(
        url, filters=filters, config=config, storage_options=opts
    ).num_rows
elif reader == "pyarrow":
    import pyarrow.parquet as pq
    fs, path = helpers.pyarrow_fs(url, s3)
    read = lambda: pq.read_table(path, filesystem=fs, filters=filters).num_rows
else:
    import polars as pl
    opts = helpers._polars_options(s3)
    lazy = pl.scan_parquet(url, storage_options=opts).filter(pl.col("id") == key)
    read = lambda: lazy.collect().height
times, rows = [], None
for _ in range(reads):
    t = time.perf_counter(); rows = read(); times.append(time.perf_counter() - t)
print(json.dumps({"times": times, "rows": rows}))
"""


def child(reader: str, url: str, key: int, reads: int, s3: dict | None) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, reader, url, str(key), str(reads), json.dumps(s3), str(HERE)],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
    )
    if out.returncode != 0:
        raise RuntimeError(f"{reader} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--profiles", default="local,minio,cloud")
    ap.add_argument("--out", default=str(HERE / "results"))
    args = ap.parse_args()
    path = DATA / "lookup.parquet"
    keys = make(path)
    profiles = args.profiles.split(",")
    servers = store = None
    if any(p != "local" for p in profiles):
        from suite import Store

        from devtools.servers import Servers

        servers = Servers()
        store = Store(servers)
        remote_url = store.upload(path, "bloom/lookup.parquet")
    results: dict[tuple, list] = {}
    try:
        for profile in profiles:
            s3, url = None, str(path)
            if profile != "local":
                store.shape(profile)
                s3, url = store.options(profile), remote_url
            for r in range(args.rounds):
                order = READERS if r % 2 == 0 else READERS[::-1]
                for lookup, key in keys.items():
                    for reader in order:
                        before = store.counters() if store and s3 else (0, 0)
                        fresh = child(reader, url, key, 1, s3)
                        after = store.counters() if store and s3 else (0, 0)
                        steady = child(reader, url, key, 5, s3)
                        cell = results.setdefault((profile, lookup, reader), [])
                        cell.append(
                            {
                                "fresh": fresh["times"][0],
                                "steady": statistics.median(steady["times"][1:]),
                                "rows": fresh["rows"],
                                "bytes": after[1] - before[1],
                            }
                        )
                print(f"{profile}: round {r + 1} of {args.rounds}", flush=True)
    finally:
        if servers:
            servers.stop()
    lines = [
        f"# Key lookups: {ROWS:,} rows in {ROWS // GROUP} row groups, bloom filters on `id`",
        "",
        "| profile | lookup | reader | fresh ms | steady ms | fresh vs fastingest "
        "| steady vs fastingest | MB sent | rows |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for profile in profiles:
        for lookup in keys:
            ours = results[(profile, lookup, "fastingest")]
            base_f = statistics.median(c["fresh"] for c in ours)
            base_s = statistics.median(c["steady"] for c in ours)
            for reader in READERS:
                cells = results[(profile, lookup, reader)]
                f = statistics.median(c["fresh"] for c in cells)
                s = statistics.median(c["steady"] for c in cells)
                mb = statistics.median(c["bytes"] for c in cells) / 1e6
                lines.append(
                    f"| {profile} | {lookup} | {reader} | {f * 1e3:.1f} | {s * 1e3:.1f} "
                    f"| {f / base_f:.2f}x | {s / base_s:.2f}x | {mb:.1f} | {cells[0]['rows']} |"
                )
    report = "\n".join(lines)
    print(report)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (out / f"bloom-{stamp}.md").write_text(report + "\n")


if __name__ == "__main__":
    main()
