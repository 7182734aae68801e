"""The benchmark suite: fastingest against its peers, across data shapes and
storage profiles, with the fetch defaults checked by a sweep.

    python benches/suite.py            # the full run (make bench)
    python benches/suite.py --quick    # under 3 minutes (make bench-quick)

It generates the datasets once (benches/data/), starts MinIO and toxiproxy,
and for each storage profile runs every applicable reader on every dataset,
interleaved, the order turned by one each round (A B C, B C A, C A B, ...),
each read in a fresh process (what a script pays), then again in steady state
(the last of several reads of the file in one process: what a pipeline pays).
Requests and
bytes sent are read from MinIO's own counters around each read, so they are
measured the same way for every reader. Results: benches/results/suite-<time>
.json (machine, versions, commit, every run), .md (summary and targets) and
.png plots (throughput per reader and profile, the slice x in-flight heat
map, MB/s per epoch).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import datasets as ds  # noqa: E402
import report  # noqa: E402
from bench_read import ceiling_probe  # noqa: E402
from one_read import (  # noqa: E402
    REMOTE_ONLY,
    SINGLE_FILE_ONLY,
    STREAMERS,
    parquet_files,
    set_page_cache,
)

from devtools.cloud import BUCKET, CloudStore  # noqa: E402
from devtools.cloud import PROFILES as LINKS  # noqa: E402
from devtools.servers import Servers  # noqa: E402

# The profiles: local disk, then the links devtools.cloud emulates.
PROFILES: dict[str, dict | None] = {"local": None, "local-warm": None, **LINKS}
# Local disk, cold (each file evicted from the page cache first) and warm
# (each file read whole into the page cache first).
LOCAL_PROFILES = ("local", "local-warm")
PARQUET_READERS = [
    "fastingest",
    "fastingest-warm",
    "fastingest-chunks",
    "fastingest-view",
    "pyarrow",
    "pyarrow-dataset",
    "polars",
    "polars-scan",
    "s3fs",
    "fsspec-parquet",
    "obstore",
]
ORC_READERS = ["fastingest-orc", "pyarrow-orc"]
# Measured in steady state too: fastingest and the peers issue 12 holds it
# to (polars read/scan, pyarrow read_table/dataset).
# fastingest-view (strings as views) is measured there too: polars' strings
# are views.
STEADY_READERS = {
    "fastingest",
    "fastingest-view",
    "pyarrow",
    "pyarrow-dataset",
    "polars",
    "polars-scan",
}
# Every reader imports numpy (through pyarrow); its OpenBLAS starts one thread
# per core that spins for a while after import, taking the CPU the read needs
# on this 2-core machine (a 16 MB read: median 0.054 s with them, 0.030 s
# without). No reader uses BLAS, so the readers run without those threads.
READER_ENV = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}


@dataclass
class Source:
    """A dataset as the readers see it."""

    name: str
    local: Path  # file or folder
    key: str  # object key (or prefix) in the bucket
    folder: bool
    size: int  # bytes of the file(s)
    rows: int
    columns: list[str] | None
    needed: int  # bytes of the column chunks the read needs
    readers: list[str]
    fmt: str = "parquet"


@dataclass
class Run:
    """What the suite is asked to do, and what it found."""

    args: argparse.Namespace
    sources: list[Source] = field(default_factory=list)
    results: list[dict] = field(default_factory=list)
    ceilings: dict[str, list[float]] = field(default_factory=dict)
    # Ceilings of the large files' own bytes, by "profile|dataset" (see
    # `report.has_own_ceiling`): one sample a round, beside the file's reads.
    file_ceilings: dict[str, list[float]] = field(default_factory=dict)
    first_batch: list[dict] = field(default_factory=list)
    sweep: list[dict] = field(default_factory=list)
    epochs: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def describe(d: ds.Dataset, path: Path, readers: list[str]) -> Source:
    import pyarrow.parquet as pq

    import fastingest

    files = parquet_files(path)
    columns = ds.read_columns(d, files[0])
    plan = fastingest.plan_parquet(
        [str(f) for f in files] if path.is_dir() else str(path), columns=columns
    )
    plans = plan if isinstance(plan, list) else [plan]
    rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    key = f"{d.name}/" if path.is_dir() else path.name
    if path.is_dir():
        readers = [r for r in readers if r not in SINGLE_FILE_ONLY]
    if d.types not in ("string", "mixed") or d.columns:
        # No string column: the same read as `fastingest`.
        readers = [r for r in readers if r != "fastingest-view"]
    return Source(
        name=d.name,
        local=path,
        key=key,
        folder=path.is_dir(),
        size=sum(f.stat().st_size for f in files),
        rows=rows,
        columns=columns,
        needed=sum(p["bytes_needed"] for p in plans),
        readers=readers,
    )


def orc_source(parquet: Source) -> Source:
    """The first dataset as ORC: fastingest's ORC reader against pyarrow's."""
    path = ds.orc_copy(parquet.local)
    return Source(
        name=f"{parquet.name} (orc)",
        local=path,
        key=path.name,
        folder=False,
        size=path.stat().st_size,
        rows=parquet.rows,
        columns=None,
        needed=path.stat().st_size,
        readers=ORC_READERS,
        fmt="orc",
    )


# --- servers and counters ------------------------------------------------------


class AuditCounter:
    """Counts the requests MinIO serves, from its audit log: MinIO posts one
    JSON event per request to this loopback HTTP endpoint (its Prometheus
    counters are only refreshed every ~10 s, too late to attribute requests
    to one read)."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        counter = self
        self.lock = threading.Lock()
        self.requests = 0
        self.sent = 0

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                self.send_response(200)
                self.end_headers()
                try:
                    events = json.loads(body)
                except ValueError:
                    return
                for event in events if isinstance(events, list) else [events]:
                    api = event.get("api", {})
                    if api.get("name", "").startswith(("Put", "CreateBucket", "NewMultipart")):
                        continue
                    with counter.lock:
                        counter.requests += 1
                        counter.sent += int(api.get("tx", 0) or 0)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def snapshot(self) -> tuple[int, int]:
        with self.lock:
            return self.requests, self.sent

    def settled(self, quiet: float = 0.3, limit: float = 10.0) -> tuple[int, int]:
        """The counts once no event has arrived for `quiet` seconds (events
        are posted asynchronously, just after each request)."""
        last, since, deadline = self.snapshot(), time.monotonic(), time.monotonic() + limit
        while time.monotonic() < deadline:
            time.sleep(0.05)
            now = self.snapshot()
            if now != last:
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= quiet:
                break
        return last


class Store(CloudStore):
    """MinIO (+ toxiproxy) holding every dataset, and its request counters."""

    def __init__(self, servers: Servers) -> None:
        self.audit = AuditCounter()
        super().__init__(
            servers,
            {
                "MINIO_AUDIT_WEBHOOK_ENABLE_bench": "on",
                "MINIO_AUDIT_WEBHOOK_ENDPOINT_bench": self.audit.url,
            },
        )

    def upload_source(self, source: Source) -> None:
        if source.folder:
            for f in parquet_files(source.local):
                self.upload(f, source.key + f.name)
        else:
            self.upload(source.local, source.key)

    def counters(self) -> tuple[int, int]:
        """(requests, bytes sent) so far, every request's event counted."""
        return self.audit.settled()


# --- one read ------------------------------------------------------------------


def read_once(
    reader: str,
    source: Source,
    profile: str,
    store: Store | None,
    *,
    config: dict | None = None,
    cache: dict | None = None,
    first_batch: bool = False,
    repeat: int = 1,
    timeout: float = 1800,
) -> dict:
    """Runs one read in a fresh process (the last of `repeat` reads in it);
    adds MinIO's request and byte counts (of the last read when repeated)."""
    remote = profile not in LOCAL_PROFILES
    spec = {
        "reader": reader,
        "url": f"s3://{BUCKET}/{source.key}" if remote else str(source.local),
        "folder": source.folder,
        "s3": store.options(profile) if remote and store else None,
        "columns": source.columns,
        "config": config or {},
        "cache": cache,
        "first_batch": first_batch,
        "repeat": repeat,
        # The state each read starts from, set here for the first and by the
        # reader's process between repeated ones.
        "page_cache": {"local": "evict", "local-warm": "warm"}.get(profile),
        "local": str(source.local),
    }
    set_page_cache(spec)
    if remote and store and profile != "minio":
        store.reset_link()  # what an earlier reader left in the proxy
    before = store.counters() if remote and store else None
    try:
        out = subprocess.run(
            [sys.executable, str(HERE / "one_read.py"), json.dumps(spec)],
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
            env=READER_ENV,
        )
    except subprocess.TimeoutExpired:
        if store and remote:
            store.counters()  # let the killed reader's requests settle
        return {"error": f"timed out after {timeout:.0f} s", "timed_out": True}
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1][-300:] if out.stderr else "failed"}
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if before and repeat == 1:
        after = store.counters()
        result["requests"] = after[0] - before[0]
        result["bytes_sent"] = after[1] - before[1]
    elif "stats" in result:
        result["requests"] = result["stats"].get("requests")
        result["bytes_sent"] = result["stats"].get("bytes_fetched")
    return result


def ceiling(source: Source, store: Store, profile: str) -> float:
    """Raw parallel 8 MiB range GETs (32 in flight) of the whole of `source`
    (a single file), MB/s: the profile's ceiling on its largest file, and a
    large file's own."""
    url = f"s3://{BUCKET}/{source.key}"
    return ceiling_probe(url, store.options(profile), source.size)


# --- the run ---------------------------------------------------------------------


def applicable(reader: str, profile: str) -> bool:
    if profile in LOCAL_PROFILES:
        return reader not in REMOTE_ONLY and reader != "fastingest-warm"
    return True


def readers_for(source: Source, profile: str) -> list[str]:
    """The readers that run on `source` in `profile`, in the suite's order."""
    return [r for r in source.readers if applicable(r, profile)]


def turned(items: list[str], by: int) -> list[str]:
    """`items` rotated left by `by` (A B C by 1: B C A)."""
    if not items:
        return items
    by %= len(items)
    return items[by:] + items[:by]


def plan_reads(run: Run) -> list[tuple[str, Source, str, str]]:
    """Every measured read as (profile, source, reader, mode), in the order
    they run: interleaved per dataset, the readers' order turned by one each
    round, so that no reader always runs first (just after another dataset's
    reads, whose freed memory and server state the first read of a round
    meets) or always after the same one. Each dataset's fresh-process rounds
    come first, then its steady-state rounds (mode "steady")."""
    steady_runs = getattr(run.args, "steady_runs", 0)
    reads = []
    for profile in run.args.profiles:
        for source in run.sources:
            if (
                profile == "far"
                and run.args.far_datasets
                and not any(s in source.name for s in run.args.far_datasets)
            ):
                continue
            readers = readers_for(source, profile)
            for i in range(run.args.runs):
                reads += [(profile, source, r, "fresh") for r in turned(readers, i)]
            steady = [r for r in readers if r in STEADY_READERS]
            for i in range(steady_runs):
                reads += [(profile, source, r, "steady") for r in turned(steady, i)]
    return reads


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small datasets, one run: < 3 minutes")
    ap.add_argument("--smallest", action="store_true", help="the quick mode's smallest case only")
    ap.add_argument(
        "--runs",
        type=int,
        default=7,
        help="fresh-process runs per reader and dataset (issue 12 judges the run-to-run "
        "spread over 7 or more)",
    )
    ap.add_argument(
        "--steady-runs",
        type=int,
        default=5,
        help="processes per reader and dataset measuring the steady state (0: none)",
    )
    ap.add_argument(
        "--steady-reads",
        type=int,
        default=5,
        help="reads of the file in each steady-state process; the last is timed",
    )
    ap.add_argument(
        "--warmup",
        type=int,
        default=1,
        help="unmeasured rounds of every reader before each dataset's runs (per profile)",
    )
    ap.add_argument("--size-mb", type=int, default=256, help="in-memory size per dataset (MiB)")
    ap.add_argument("--small-files", type=int, default=2000)
    ap.add_argument("--small-kb", type=int, default=128)
    ap.add_argument("--profiles", default="local,local-warm,minio,cloud,far")
    ap.add_argument("--datasets", default="", help="comma-separated name filters")
    ap.add_argument("--far-datasets", default="mixed-unbounded-rl1-snappy,small,wide")
    ap.add_argument("--readers", default="", help="comma-separated reader names (default: all)")
    ap.add_argument("--sweep-runs", type=int, default=2)
    ap.add_argument("--slices", default="1,4,8,16,32")
    ap.add_argument("--inflight", default="4,8,16,32,64")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument(
        "--read-timeout",
        type=float,
        default=300,
        help="a read taking longer is stopped and reported as timed out (seconds)",
    )
    ap.add_argument(
        "--slow",
        type=float,
        default=60,
        help="a reader whose first run on a dataset takes longer is not repeated there",
    )
    ap.add_argument("--out", default=str(HERE / "results"))
    ap.add_argument("--data", default=str(HERE / "data"))
    ap.add_argument("--report-only", help="remake the report from a saved last-run.raw.json")
    args = ap.parse_args()
    if args.report_only:
        run, elapsed = load_raw(Path(args.report_only))
        report.write(run, Path(args.out), elapsed=elapsed)
        return
    if args.quick or args.smallest:
        args.runs, args.size_mb, args.small_files, args.small_kb = 1, 16, 40, 64
        args.steady_runs, args.steady_reads = 1, 2
        args.warmup = 0 if args.quick else args.warmup  # --quick stays under 3 minutes
        args.profiles = "local,minio,cloud"
        args.slices, args.inflight, args.sweep_runs, args.epochs = "4,8", "16,32", 1, 2
    if args.smallest:
        args.profiles, args.datasets = "local", "mixed"
        args.readers = "fastingest,fastingest-chunks,pyarrow,polars"
        args.slices = args.inflight = ""
        args.epochs = 0
    args.profiles = [p for p in args.profiles.split(",") if p]
    args.far_datasets = [s for s in args.far_datasets.split(",") if s]
    started = time.time()
    run = Run(args)

    from tqdm import tqdm

    wanted = [r for r in args.readers.split(",") if r]
    defs = ds.suite(args.quick or args.smallest, args.size_mb, args.small_files, args.small_kb)
    defs = [
        d for d in defs if not args.datasets or any(s in d.name for s in args.datasets.split(","))
    ]
    for d in tqdm(defs, desc="datasets", unit="dataset"):
        readers = [r for r in PARQUET_READERS if not wanted or r in wanted]
        run.sources.append(describe(d, ds.materialize(d, Path(args.data)), readers))
    orc_wanted = not wanted or any(r in ORC_READERS for r in wanted)
    if not args.smallest and orc_wanted:
        # pyarrow's ORC writer takes no unsigned integers: the ORC copy is made
        # of the first dataset it can write.
        for parquet in run.sources:
            try:
                run.sources.append(orc_source(parquet))
                break
            except pa.ArrowNotImplementedError as e:
                print(f"no ORC copy of {parquet.name}: {e}", file=sys.stderr)

    # Ctrl-C, or a SIGTERM (a `timeout`), ends the measuring but not the run:
    # the report is made from what was measured until then.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    interrupted = False
    servers = Servers()
    store = None
    try:
        if any(p not in LOCAL_PROFILES for p in args.profiles):
            store = Store(servers)
            for s in tqdm(run.sources, desc="uploading", unit="dataset"):
                store.upload_source(s)
        measure(run, store)
    except KeyboardInterrupt:
        interrupted = True
        minutes = (time.time() - started) / 60
        run.notes.append(
            f"Interrupted after {minutes:.1f} min: this report holds only the reads "
            "measured until then."
        )
        print("\ninterrupted: reporting what was measured", file=sys.stderr)
    finally:
        servers.stop()
    run.notes.append(
        "local: each file is evicted from the page cache (posix_fadvise DONTNEED) before "
        "each read, so local reads are cold; local-warm: each file is read whole before "
        "each read, so they are in the page cache."
        if hasattr(os, "posix_fadvise")
        else "local: the page cache could not be dropped here; local reads may be warm."
    )
    save_raw(run, Path(args.out) / "last-run.raw.json", time.time() - started)
    report.write(run, Path(args.out), elapsed=time.time() - started)
    if interrupted:
        sys.exit(130)


# What `save_raw` keeps of a run besides its arguments, sources and notes.
RAW_FIELDS = ("results", "ceilings", "file_ceilings", "sweep", "epochs", "first_batch")


def save_raw(run: Run, path: Path, elapsed: float) -> None:
    """Everything measured, before the report is made from it (so that
    `--report-only` can remake a report without measuring again)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = {
        "args": vars(run.args),
        "elapsed": elapsed,
        "sources": [{**vars(s), "local": str(s.local)} for s in run.sources],
        **{k: getattr(run, k) for k in RAW_FIELDS},
        "notes": run.notes,
    }
    path.write_text(json.dumps(raw, default=str))


def load_raw(path: Path) -> tuple[Run, float]:
    raw = json.loads(path.read_text())
    run = Run(argparse.Namespace(**raw["args"]))
    run.sources = [Source(**{**s, "local": Path(s["local"])}) for s in raw["sources"]]
    for k in (*RAW_FIELDS, "notes"):
        if k in raw:  # (runs saved before 2026-11-28 have no file_ceilings)
            setattr(run, k, raw[k])
    return run, raw["elapsed"]


def measure(run: Run, store: Store | None) -> None:
    from tqdm import tqdm

    args = run.args
    reads = plan_reads(run)
    sweep_profiles = [p for p in ("cloud", "local") if p in args.profiles]
    slices = [s for s in args.slices.split(",") if s]
    inflight = [i for i in args.inflight.split(",") if i]
    n_sweep = len(sweep_profiles) * len(slices) * len(inflight) * args.sweep_runs
    n_epochs = args.epochs * 3 * args.runs if "cloud" in args.profiles else 0
    streamers = [r for r in STREAMERS if r in run.sources[0].readers]
    n_first = len(args.profiles) * len(streamers) * args.runs
    bar = tqdm(total=len(reads) + n_first + n_sweep + n_epochs, desc="reads", unit="read")
    warm_dirs: dict[tuple[str, str], str] = {}
    slow: set[tuple[str, str, str]] = set()
    warmed: set[tuple[str, str]] = set()
    fresh_reads: dict[tuple[str, str], int] = {}
    shaped = None
    try:
        for profile, source, reader, mode in reads:
            if store and profile not in LOCAL_PROFILES and profile != shaped:
                store.shape(profile)
                shaped = profile
                run.ceilings[profile] = [
                    ceiling(max(run.sources, key=lambda s: s.size * (not s.folder)), store, profile)
                    for _ in range(3)
                ]
            if (profile, source.name) not in warmed:
                # The first reads after another dataset's ran slower, whoever
                # made them: in two full runs fastingest, first in the round,
                # had its slowest run there in 21 and 27 of 63 cells (13 by
                # chance), and again in 22 of 63 with the order turned each
                # round (9 by chance). So a round is read and thrown away first.
                warmed.add((profile, source.name))
                # (fastingest-warm's unmeasured cache fill is its own.)
                warmups = [w for w in readers_for(source, profile) if w != "fastingest-warm"]
                for _ in range(args.warmup):
                    for w in warmups:
                        bar.set_postfix_str(f"{profile} {source.name[:28]} warm-up {w}")
                        read_once(w, source, profile, store, timeout=args.slow)
            if mode == "fresh" and store and profile not in LOCAL_PROFILES:
                # A round starts every len(readers) fresh reads of a file.
                seen = fresh_reads.get((profile, source.name), 0)
                fresh_reads[(profile, source.name)] = seen + 1
                if report.has_own_ceiling(source) and seen % len(readers_for(source, profile)) == 0:
                    bar.set_postfix_str(f"{profile} {source.name[:28]} ceiling")
                    run.file_ceilings.setdefault(f"{profile}|{source.name}", []).append(
                        ceiling(source, store, profile)
                    )
            cache = None
            if reader == "fastingest-warm":
                key = (profile, source.name)
                if key not in warm_dirs:  # fill once (not measured), then read warm
                    warm_dirs[key] = tempfile.mkdtemp(prefix="fastingest-suite-cache-")
                    read_once(
                        "fastingest",
                        source,
                        profile,
                        store,
                        cache={"dir": warm_dirs[key], "validate": "immutable"},
                    )
                cache = {"dir": warm_dirs[key], "validate": "immutable"}
            key3 = (profile, source.name, reader)
            if key3 in slow:  # one run was long enough to say where it stands
                bar.update()
                continue
            bar.set_postfix_str(f"{profile} {source.name[:28]} {reader} {mode}")
            repeat = args.steady_reads if mode == "steady" else 1
            r = read_once(
                reader,
                source,
                profile,
                store,
                cache=cache,
                repeat=repeat,
                timeout=args.read_timeout * repeat,
            )
            run.results.append(
                {"profile": profile, "dataset": source.name, "reader": reader, "mode": mode, **r}
            )
            if r.get("timed_out") or r.get("seconds", 0) > args.slow:
                slow.add(key3)
                run.notes.append(
                    f"{profile} / {source.name} / {reader}: "
                    + (r["error"] if "error" in r else f"{r['seconds']:.0f} s")
                    + " in its first run, so it was run once."
                )
            bar.update()
        main_source = run.sources[0]
        for profile in args.profiles:  # time to first batch, streaming readers
            if store and profile not in LOCAL_PROFILES:
                store.shape(profile)
            for i in range(args.runs):
                for reader in turned(streamers, i):
                    bar.set_postfix_str(f"first batch {profile} {reader}")
                    r = read_once(reader, main_source, profile, store, first_batch=True)
                    run.first_batch.append({"profile": profile, "reader": reader, **r})
                    bar.update()
        for profile in sweep_profiles:
            if store and profile not in LOCAL_PROFILES:
                store.shape(profile)
            for _ in range(args.sweep_runs):
                for sl in slices:
                    for inf in inflight:
                        cfg = {"slice_size": f"{sl}M", "max_in_flight": int(inf)}
                        bar.set_postfix_str(f"sweep {profile} {sl} MiB x {inf}")
                        r = read_once("fastingest", main_source, profile, store, config=cfg)
                        run.sweep.append(
                            {"profile": profile, "slice_mib": int(sl), "inflight": int(inf), **r}
                        )
                        bar.update()
        if n_epochs and store:
            store.shape("cloud")
            for _ in range(args.runs):
                cache_dir = tempfile.mkdtemp(prefix="fastingest-suite-epochs-")
                try:
                    for epoch in range(1, args.epochs + 1):
                        for reader in ("fastingest", "pyarrow", "polars"):
                            cache = (
                                {"dir": cache_dir, "validate": "immutable"}
                                if reader == "fastingest"
                                else None
                            )
                            bar.set_postfix_str(f"epoch {epoch} {reader}")
                            r = read_once(reader, main_source, "cloud", store, cache=cache)
                            run.epochs.append({"epoch": epoch, "reader": reader, **r})
                            bar.update()
                finally:
                    shutil.rmtree(cache_dir, ignore_errors=True)
    finally:
        bar.close()
        for d in warm_dirs.values():
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
