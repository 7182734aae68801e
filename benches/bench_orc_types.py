"""ORC by column type: one file per type group of the suite (`benches/datasets.py`),
written as ORC by pyarrow (snappy, 64 MiB stripes), read whole by
fastingest.read_orc and by pyarrow.orc.read_table from local disk with the page cache
warm. `string-dict` is the 1,000-distinct-value string file written with dictionary
encoding (pyarrow's writer uses it only when asked). `timestamp-taipei` is the timestamp
file written uncompressed with its stripe footers made to say Asia/Taipei where
pyarrow's writer records `GMT`: wall-clock times in a zone other than UTC, as Hive and
Spark write them (pyarrow's writer has no setting for the zone). Readers are interleaved (A B A B
..., the order flipped each round), each round in fresh processes; two figures per
reader: the read timed in a fresh process (after the imports), and steady state (the
median of reads 3-8 in one process).

    python benches/bench_orc_types.py [--rounds 5] [--size-mb 128] [--types int,string,...]
        [--pythonpath-before DIR]

``--pythonpath-before DIR`` adds a third reader, fastingest imported from DIR (an
unpacked wheel of another build), to measure a change against what it replaces.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from datasets import Dataset, materialize  # noqa: E402

# Type group (of datasets.TYPE_GROUPS), cardinality, whether strings are dictionary
# encoded. pyarrow's ORC writer takes no unsigned integers. `list` is the suite's
# list<list<int32>> (`orc/nested.rs`). `timestamp-taipei`: see ZONED.
TYPES = {
    "int": ("int", 0, False),
    "float": ("float", 0, False),
    "string": ("string", 0, False),
    "string-dict": ("string", 1000, True),
    "timestamp": ("timestamp", 0, False),
    "timestamp-taipei": ("timestamp", 0, False),
    "decimal": ("decimal", 0, False),
    "mixed": ("mixed", 0, False),
    "list": ("list", 0, False),
}

# Run in a child: one reader, `reads` reads of one file; prints the times.
CHILD = r"""
import json, sys, time
reader, path, reads = sys.argv[1], sys.argv[2], int(sys.argv[3])
if reader.startswith("fastingest"):
    # pyarrow too, before the clock starts: the first read would import it
    # to return its table (80 ms here), which the other reader pays above.
    import pyarrow
    import fastingest
    read = lambda: fastingest.read_orc(path)
else:
    import pyarrow.orc as orc
    read = lambda: orc.read_table(path)
times = []
for _ in range(reads):
    t = time.perf_counter(); table = read(); times.append(time.perf_counter() - t); del table
print(json.dumps(times))
"""


# Files whose stripe footers are made to name a writer zone in place of the GMT that
# pyarrow's writer records (`devtools.orc_zone`).
ZONED = {"timestamp-taipei": "Asia/Taipei"}


def orc_file(name: str, size_mb: int, data: Path) -> Path:
    """The ORC copy of type group `name`'s suite file (written once)."""
    import pyarrow.orc as orc
    import pyarrow.parquet as pq

    group, cardinality, dictionary = TYPES[name]
    parquet = materialize(Dataset(types=group, cardinality=cardinality, size_mb=size_mb), data)
    suffix = "-dict" if dictionary else ""
    if name in ZONED:
        suffix = "-" + name.split("-")[-1]
    path = parquet.with_name(f"{parquet.stem}{suffix}.orc")
    if path.exists():
        return path
    tmp = path.with_suffix(".tmp")
    orc.write_table(
        pq.read_table(parquet),
        tmp,
        # Stripe footers are rewritten in place below: stored, not compressed.
        compression="uncompressed" if name in ZONED else "snappy",
        stripe_size=64 << 20,
        dictionary_key_size_threshold=1.0 if dictionary else 0.0,
    )
    if name in ZONED:
        sys.path.insert(0, str(HERE.parent))
        from devtools.orc_zone import written_in

        tmp.write_bytes(written_in(tmp.read_bytes(), ZONED[name]))
    tmp.rename(path)
    return path


def run(reader: str, path: Path, reads: int, pythonpath: str | None) -> list[float]:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    out = subprocess.run(
        [sys.executable, "-c", CHILD, reader, str(path), str(reads)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--size-mb", type=int, default=128, help="Arrow size of each table")
    ap.add_argument("--types", default=",".join(TYPES))
    ap.add_argument("--data", default=str(HERE / "data"))
    ap.add_argument("--pythonpath-before", help="another build of fastingest, as a third reader")
    args = ap.parse_args()
    readers = {"fastingest": None, "pyarrow": None}
    if args.pythonpath_before:
        readers["fastingest-before"] = args.pythonpath_before
    rows = []
    for name in args.types.split(","):
        path = orc_file(name, args.size_mb, Path(args.data))
        fresh: dict[str, list[float]] = {r: [] for r in readers}
        steady: dict[str, list[float]] = {r: [] for r in readers}
        for i in range(args.rounds):
            order = list(readers) if i % 2 == 0 else list(readers)[::-1]
            for reader in order:
                fresh[reader].append(run(reader, path, 1, readers[reader])[0])
                steady[reader].append(statistics.median(run(reader, path, 8, readers[reader])[2:]))
        print(f"{name}: {args.rounds} rounds", file=sys.stderr, flush=True)
        rows.append((name, path, fresh, steady))
    print(f"ORC by column type, {args.rounds} rounds, page cache warm; ms, median (min-max)\n")
    head = "| file | MB | reader | fresh | steady | fresh vs pyarrow | steady vs pyarrow |"
    print(head)
    print("|---|---:|---|---:|---:|---:|---:|")
    for name, path, fresh, steady in rows:
        base_f, base_s = statistics.median(fresh["pyarrow"]), statistics.median(steady["pyarrow"])
        for reader in readers:
            f, s = fresh[reader], steady[reader]
            mf, ms = statistics.median(f), statistics.median(s)
            print(
                f"| {name} | {path.stat().st_size / 1e6:.0f} | {reader} "
                f"| {mf * 1e3:.1f} ({min(f) * 1e3:.1f}-{max(f) * 1e3:.1f}) "
                f"| {ms * 1e3:.1f} ({min(s) * 1e3:.1f}-{max(s) * 1e3:.1f}) "
                f"| {base_f / mf:.2f}x | {base_s / ms:.2f}x |"
            )


if __name__ == "__main__":
    main()
