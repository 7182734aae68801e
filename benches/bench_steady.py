"""Steady reads of files from a store, read after read: each read's time and
the requests it made (fastingest's own counters), for builds side by side.

The suite times one steady read per process (the 5th), so a cell is decided
by whichever read a process drew. This bench keeps every read of a process:
its first (fresh) and the later ones (steady, from ``--warm`` on), and how
many requests each made, which shows a read planned differently from its
neighbours (the 2026-12-02 entry of docs/benchmarks.md: one cloud read in
four planned for a store a region away after one late footer answer).

Each round runs one process per build and file, the builds' order turned
each round; ``--build NAME=DIR`` (repeatable) puts ``DIR`` first on
``PYTHONPATH`` for a before/after (a ``pip install --target`` of a wheel);
without one, the installed fastingest. ``--peer polars-scan`` adds polars'
lazy reader as one more build (no request counts). The files are the
suite's datasets (``--data``, made by ``benches/suite.py``) or any Parquet
files; they are uploaded to a MinIO started here, read directly
(``--profile minio``) or through toxiproxy's emulated link (``cloud``,
``far``).

    python benches/bench_steady.py --data /tmp/suitedata \\
        --files float-unbounded-rl1-snappy-128mb.parquet --profile cloud \\
        --rounds 4 --reads 12 --build before=/tmp/a.pkg --build after=/tmp/b.pkg
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benches"))

from one_read import storage_options  # noqa: E402

from devtools.cloud import BUCKET, PROFILES, CloudStore  # noqa: E402
from devtools.servers import Servers  # noqa: E402

# One process: `reads` reads of the file, each read's seconds and requests.
CHILD = r"""
import json, sys, time
spec = json.loads(sys.argv[1])
reads = []
if spec["reader"] == "polars-scan":
    import polars as pl
    o = spec["options"]
    opts = {"aws_access_key_id": o["access_key_id"],
            "aws_secret_access_key": o["secret_access_key"],
            "aws_endpoint_url": o["endpoint_url"], "aws_region": o["region"],
            "aws_allow_http": "true"}
    for _ in range(spec["reads"]):
        t = time.perf_counter()
        pl.scan_parquet(spec["url"], storage_options=opts).collect()
        reads.append((time.perf_counter() - t, None))
else:
    import fastingest
    for _ in range(spec["reads"]):
        stats = fastingest.ReadStats()
        t = time.perf_counter()
        fastingest.read_parquet(spec["url"], storage_options=spec["options"], stats=stats)
        reads.append((time.perf_counter() - t, stats.requests))
print(json.dumps(reads))
"""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, required=True, help="folder of the files")
    p.add_argument("--files", required=True, help="comma-separated file names in --data")
    p.add_argument("--profile", default="cloud", choices=sorted(PROFILES))
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--reads", type=int, default=12, help="reads per process")
    p.add_argument("--warm", type=int, default=5, help="the first steady read (1-based)")
    p.add_argument("--build", action="append", default=[], help="NAME=DIR (repeatable)")
    p.add_argument("--peer", choices=["polars-scan"], help="a peer read beside the builds")
    args = p.parse_args(argv)
    if not 1 < args.warm <= args.reads:
        p.error("--warm must be after the first read and at most --reads")
    return args


def builds_of(args: argparse.Namespace) -> dict[str, str | None]:
    """Each build's name and the folder put first on PYTHONPATH (None:
    the installed package)."""
    builds: dict[str, str | None] = {}
    for spec in args.build:
        name, sep, folder = spec.partition("=")
        if not sep or not Path(folder).is_dir():
            raise SystemExit(f"--build {spec!r}: expected NAME=DIR with DIR a folder")
        builds[name] = folder
    if not builds:
        builds["installed"] = None
    if args.peer:
        builds[args.peer] = None
    return builds


def read_in_process(reader: str, folder: str | None, url: str, options: dict, reads: int):
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    if folder:
        env["PYTHONPATH"] = os.pathsep.join([folder, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    spec = {"reader": reader, "url": url, "options": options, "reads": reads}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(spec)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"{reader} ({folder or 'installed'}) failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def report(runs: dict, files: list[str], builds: list[str], warm: int) -> str:
    lines = [
        "| file | build | fresh median ms | steady median ms | steady max / median "
        "| requests of steady reads (count) |",
        "|---|---|---:|---:|---:|---|",
    ]
    for name in files:
        for build in builds:
            processes = runs[(name, build)]
            fresh = statistics.median(p[0][0] for p in processes) * 1e3
            steady = [s * 1e3 for p in processes for s, _ in p[warm - 1 :]]
            counts = collections.Counter(r for p in processes for _, r in p[warm - 1 :])
            asked = ", ".join(f"{r} ×{n}" for r, n in sorted(counts.items()) if r is not None)
            med = statistics.median(steady)
            lines.append(
                f"| {name} | {build} | {fresh:.0f} | {med:.1f} | {max(steady) / med:.2f} "
                f"| {asked or '-'} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    files = args.files.split(",")
    missing = [f for f in files if not (args.data / f).is_file()]
    if missing:
        raise SystemExit(f"not in {args.data}: {', '.join(missing)}")
    builds = builds_of(args)
    servers = Servers()
    try:
        store = CloudStore(servers)
        for name in files:
            store.upload(args.data / name)
        store.shape(args.profile)
        options = storage_options(store.options(args.profile))
        runs: dict[tuple[str, str], list] = collections.defaultdict(list)
        order = list(builds)
        for rnd in range(args.rounds):
            turned = order[rnd % len(order) :] + order[: rnd % len(order)]
            for name in files:
                for build in turned:
                    store.reset_link()  # what an earlier process left in the proxy
                    reader = build if build == args.peer else "fastingest"
                    url = f"s3://{BUCKET}/{name}"
                    reads = read_in_process(reader, builds[build], url, options, args.reads)
                    runs[(name, build)].append(reads)
                    print(
                        f"round {rnd} {name} {build}: ms",
                        [round(s * 1e3) for s, _ in reads],
                        "requests",
                        [r for _, r in reads],
                        flush=True,
                    )
    finally:
        servers.stop()
    print(
        f"\n{args.profile}, {args.rounds} processes per build and file, {args.reads} reads "
        f"each; steady: reads {args.warm}-{args.reads}\n"
    )
    print(report(runs, files, order, args.warm))


if __name__ == "__main__":
    main()
