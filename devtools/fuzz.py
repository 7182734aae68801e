"""Mutation fuzzing of fastingest's readers on the stable toolchain.

Real files (small ones written here by pyarrow, plus the conformance corpora's
small files when ``--corpora`` is given) are mutated (bit flips, interesting
bytes, truncation, splices, and lying lengths and counts written into Parquet
footers, page headers and ORC tails) and driven through ``metadata``,
``read_parquet`` (also filtered), ``iter_batches``, ``read_chunks`` + ``to_parquet_bytes``,
``read_orc`` and ``read_orc_stripes``.

Every input is reproducible from ``(seed, index)``. Worker processes run the
inputs; each works under

- an address-space limit (``--memory``, beyond what the worker had after its
  first read): an allocation past it aborts the worker, which is a finding;
- a per-input time limit (``--time-limit``): a read still running then dumps
  its stack and ends the worker, which is a finding.

Any outcome but a result or a :class:`fastingest.FastIngestError` whose
message names the file is a finding: another exception type (a panic crosses
FFI as ``PanicException``), a crash, a hang. Findings are written to
``--out`` (the input bytes and a JSON line each) and the run exits non-zero.

    python -m devtools.fuzz --inputs 1000000            # make fuzz
    python -m devtools.fuzz --replay 7:12345            # one input, in-process
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

# Values that make lengths, counts and offsets lie: zero, one, sign and
# width boundaries, and sizes no file of a few KB can honour.
INTERESTING = [
    0,
    1,
    -1,
    127,
    128,
    255,
    0x7FFF,
    0x8000,
    0xFFFF,
    0x7FFF_FFFF,
    0x8000_0000,
    0xFFFF_FFFF,
    1 << 31,
    1 << 32,
    (1 << 62),
    (1 << 63) - 1,
]
MIB = 1 << 20


# --- seeds -------------------------------------------------------------------


@dataclass
class Seed:
    """A real file and what the structure-aware mutations aim at."""

    name: str
    format: str  # "parquet" or "orc"
    data: bytes
    # Byte offsets of page headers (Parquet) where lying sizes are written.
    page_offsets: list[int] = field(default_factory=list)
    # Written here (so it must read cleanly), not taken from the corpora.
    ours: bool = True


def write_seeds() -> list[Seed]:
    """Small files of the shapes the readers decode: every codec, plain and
    dictionary pages, data page v2, nulls, nested types, several row groups
    and stripes."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.orc as orc
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    n = 300
    ints = pa.array(rng.integers(-1000, 1000, n), pa.int64())
    small = pa.array(rng.integers(0, 100, n).astype(np.int16), mask=rng.random(n) < 0.2)
    floats = pa.array(rng.random(n))
    strings = pa.array([f"s{i % 17}" for i in range(n)])
    lists = pa.array([[i, i + 1][: i % 3] for i in range(n)], pa.list_(pa.int32()))
    # Lists in lists with a null or an empty list at every level.
    nested = pa.array(
        [
            None
            if i % 7 == 0
            else [None if j == 1 else [i, None, j][: (i + j) % 4] for j in range(i % 3)]
            for i in range(n)
        ],
        pa.list_(pa.list_(pa.int64())),
    )
    structs = pa.StructArray.from_arrays([ints, strings], ["a", "b"])
    flags = pa.array(rng.random(n) < 0.5)
    stamps = pa.array(rng.integers(0, 10**12, n), pa.timestamp("ms"))
    table = pa.table(
        {
            "i": ints,
            "s16": small,
            "f": floats,
            "s": strings,
            "l": lists,
            "ll": nested,
            "st": structs,
            "b": flags,
            "t": stamps,
        }
    )
    seeds: list[Seed] = []
    variants = [
        ("plain-none", {"compression": "none", "use_dictionary": False}),
        ("dict-snappy", {"compression": "snappy"}),
        ("zstd-v2", {"compression": "zstd", "data_page_version": "2.0"}),
        ("gzip-pages", {"compression": "gzip", "data_page_size": 256}),
        ("lz4-stats", {"compression": "lz4", "write_page_index": True}),
        # Bloom filters, which the filtered read below looks `s` up in.
        (
            "bloom",
            {"bloom_filter_options": {c: {"ndv": 64, "fpp": 0.1} for c in ("i", "s", "t")}},
        ),
    ]
    for name, options in variants:
        buf = io.BytesIO()
        pq.write_table(table, buf, row_group_size=100, **options)
        data = buf.getvalue()
        seeds.append(Seed(f"{name}.parquet", "parquet", data, parquet_page_offsets(data)))
    buf = io.BytesIO()
    pq.write_table(table.select(["i", "s"]).slice(0, 0), buf)
    seeds.append(Seed("empty.parquet", "parquet", buf.getvalue(), []))
    flat = table.select(["i", "s16", "f", "s", "b", "t", "l", "st"])
    for codec in ("uncompressed", "zlib", "snappy", "zstd", "lz4"):
        buf = io.BytesIO()
        orc.write_table(flat, buf, compression=codec, stripe_size=4096, batch_size=64)
        seeds.append(Seed(f"{codec}.orc", "orc", buf.getvalue()))
    return seeds


def nested_seeds() -> list[Seed]:
    """Small files of the nested shapes fastingest's own decoders take: a
    struct holding a list, a list of structs and a map (its validity from
    the first's levels), lists of structs holding a list or a struct, maps,
    lists of booleans. Kept apart from `write_seeds`, whose inputs earlier
    findings are replayed from."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 300
    ints = pa.array(range(n), pa.int64())
    lists = pa.array([[i, i + 1][: i % 3] for i in range(n)], pa.list_(pa.int32()))
    item = pa.struct([("k", pa.int64()), ("v", pa.list_(pa.int64()))])
    items = pa.array(
        [
            None if i % 6 == 0 else [{"k": i, "v": [i, j][: (i + j) % 3]} for j in range(i % 3)]
            for i in range(n)
        ],
        pa.list_(item),
    )
    maps = pa.array(
        [None if i % 5 == 0 else [(f"k{j}", i + j) for j in range(i % 4)] for i in range(n)],
        pa.map_(pa.string(), pa.int64()),
    )
    holding = pa.StructArray.from_arrays(
        [items, lists, ints, maps],
        ["items", "l", "n", "m"],
        mask=pa.array([i % 5 == 2 for i in range(n)]),
    )
    # Lists of booleans, and lists of structs holding a struct (booleans
    # and strings, a required field in it).
    flags = pa.array(
        [None if i % 7 == 1 else [j % 2 == 0 for j in range(i % 4)] for i in range(n)],
        pa.list_(pa.bool_()),
    )
    pair = pa.struct([("x", pa.bool_()), pa.field("y", pa.string(), nullable=False)])
    deep = pa.array(
        [
            [
                {"k": i, "p": None if j == 1 else {"x": i % 3 == 0, "y": f"y{j}"}}
                for j in range(i % 3)
            ]
            for i in range(n)
        ],
        pa.list_(pa.struct([("k", pa.int64()), ("p", pair)])),
    )
    # `i` and `s` for the filtered read (`drive`), which keeps a tenth of
    # the rows: the nested columns decoded under a selection.
    strings = pa.array([f"s{i % 17}" for i in range(n)])
    table = pa.table(
        {
            "i": ints,
            "s": strings,
            "holding": holding,
            "items": items,
            "m": maps,
            "flags": flags,
            "deep": deep,
        }
    )
    seeds = []
    for name, options in [
        ("nested-dict", {"compression": "snappy"}),
        ("nested-plain-v2", {"use_dictionary": False, "data_page_version": "2.0"}),
    ]:
        buf = io.BytesIO()
        pq.write_table(table, buf, row_group_size=100, data_page_size=512, **options)
        data = buf.getvalue()
        seeds.append(Seed(f"{name}.parquet", "parquet", data, parquet_page_offsets(data)))
    return seeds


def corpus_seeds(root: Path, max_bytes: int = 64 * 1024) -> list[Seed]:
    """The corpora's small files (good and malformed) as more seeds."""
    seeds = []
    for path in sorted(root.rglob("*")):
        suffix = path.suffix.lower()
        if not path.is_file() or path.stat().st_size > max_bytes:
            continue
        if suffix == ".parquet":
            data = path.read_bytes()
            seeds.append(Seed(path.name, "parquet", data, parquet_page_offsets(data), ours=False))
        elif suffix == ".orc":
            seeds.append(Seed(path.name, "orc", path.read_bytes(), ours=False))
    return seeds


def parquet_page_offsets(data: bytes) -> list[int]:
    """Where the column chunks' first pages start (their page headers)."""
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(io.BytesIO(data)).metadata
    except Exception:  # noqa: BLE001 - a malformed seed has no known pages
        return []
    offsets = set()
    for rg in range(meta.num_row_groups):
        for c in range(meta.num_columns):
            chunk = meta.row_group(rg).column(c)
            for offset in (chunk.dictionary_page_offset, chunk.data_page_offset):
                if offset is not None and 0 <= offset < len(data):
                    offsets.add(offset)
    return sorted(offsets)


# --- mutations ---------------------------------------------------------------


def varint(value: int) -> bytes:
    """Unsigned LEB128, as protobuf and Thrift's compact protocol write
    lengths (values are taken as 64-bit)."""
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def zigzag(value: int) -> int:
    return ((value << 1) ^ (value >> 63)) & ((1 << 64) - 1)


def lying_number(rng: random.Random) -> bytes:
    value = rng.choice(INTERESTING)
    return varint(zigzag(value) if rng.random() < 0.5 else value)


def footer_span(seed_format: str, data: bytes) -> tuple[int, int]:
    """Where a file's metadata lies: a Parquet footer (by its length field),
    an ORC tail (the last few hundred bytes)."""
    size = len(data)
    if seed_format == "parquet" and size >= 12:
        length = int.from_bytes(data[-8:-4], "little")
        start = max(4, size - 8 - length)
        return start, size - 8
    return max(0, size - 512), size


def mutate(seed: Seed, others: list[Seed], rng: random.Random) -> tuple[bytes, str]:
    """One mutated copy of `seed` and the names of the mutations applied."""
    data = bytearray(seed.data)
    applied = []
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        kind = rng.choice(MUTATIONS)
        applied.append(kind.__name__)
        data = kind(seed, data, others, rng)
        if not data:
            break
    return bytes(data), "+".join(applied)


def flip_bits(seed: Seed, data: bytearray, others: list[Seed], rng: random.Random) -> bytearray:
    for _ in range(rng.randint(1, 8)):
        if data:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    return data


def flip_footer_bits(
    seed: Seed, data: bytearray, others: list[Seed], rng: random.Random
) -> bytearray:
    start, end = footer_span(seed.format, bytes(data))
    for _ in range(rng.randint(1, 4)):
        if end > start:
            data[rng.randrange(start, end)] ^= 1 << rng.randrange(8)
    return data


def interesting_bytes(
    seed: Seed, data: bytearray, others: list[Seed], rng: random.Random
) -> bytearray:
    if data:
        at = rng.randrange(len(data))
        data[at] = rng.choice((0x00, 0x01, 0x7F, 0x80, 0xFF, 0x19, 0x1C, 0x3C, 0xFC))
    return data


def truncate(seed: Seed, data: bytearray, others: list[Seed], rng: random.Random) -> bytearray:
    cut = rng.choice((rng.randrange(len(data) + 1), len(data) - rng.randint(1, 16)))
    return data[: max(0, cut)]


def cut_middle(seed: Seed, data: bytearray, others: list[Seed], rng: random.Random) -> bytearray:
    """A hole in the middle: offsets after it all point a bit off."""
    if len(data) < 16:
        return data
    start = rng.randrange(len(data) - 8)
    return data[:start] + data[start + rng.randint(1, min(256, len(data) - start)) :]


def splice(seed: Seed, data: bytearray, others: list[Seed], rng: random.Random) -> bytearray:
    """A slice of another file of the same format written over this one."""
    same = [o for o in others if o.format == seed.format and o.data]
    if not same or not data:
        return data
    other = rng.choice(same).data
    length = rng.randint(1, min(len(other), 512))
    src = rng.randrange(len(other) - length + 1)
    dst = rng.randrange(len(data))
    data[dst : dst + length] = other[src : src + length]
    return data


def lying_footer_number(
    seed: Seed, data: bytearray, others: list[Seed], rng: random.Random
) -> bytearray:
    """A varint in the metadata replaced by a huge or negative one: a list
    size, a column or row count, an offset, a length."""
    start, end = footer_span(seed.format, bytes(data))
    if end - start < 2:
        return data
    at = rng.randrange(start, end)
    # Overwrite one varint (up to its last byte) with the lying value.
    stop = at
    while stop < end - 1 and data[stop] & 0x80:
        stop += 1
    data[at : stop + 1] = lying_number(rng)
    return fix_parquet_footer_length(seed, data, end, rng)


def fix_parquet_footer_length(
    seed: Seed, data: bytearray, old_end: int, rng: random.Random
) -> bytearray:
    """After a footer changed size, its length field is rewritten (mostly),
    so that the footer still parses up to the lie."""
    if seed.format != "parquet" or len(data) < 12 or rng.random() < 0.2:
        return data
    length = int.from_bytes(seed.data[-8:-4], "little") + (len(data) - len(seed.data))
    if 0 <= length < 1 << 32:
        data[-8:-4] = length.to_bytes(4, "little")
    return data


def lying_footer_length(
    seed: Seed, data: bytearray, others: list[Seed], rng: random.Random
) -> bytearray:
    """The Parquet footer length (or the ORC postscript length) lies."""
    if len(data) < 8:
        return data
    if seed.format == "parquet":
        value = rng.choice(INTERESTING + [len(data), len(data) - 8, len(data) - 7])
        data[-8:-4] = (value & 0xFFFF_FFFF).to_bytes(4, "little")
    else:
        data[-1] = rng.randrange(256)
    return data


def lying_page_header(
    seed: Seed, data: bytearray, others: list[Seed], rng: random.Random
) -> bytearray:
    """A page header's sizes or value count lie (the first few fields of a
    Thrift PageHeader are its type and sizes)."""
    if not seed.page_offsets:
        return lying_footer_number(seed, data, others, rng)
    offset = rng.choice(seed.page_offsets)
    at = offset + rng.randint(1, 12)
    if at >= len(data):
        return data
    stop = at
    while stop < len(data) - 1 and data[stop] & 0x80:
        stop += 1
    data[at : stop + 1] = lying_number(rng)
    return data


MUTATIONS = [
    flip_bits,
    flip_footer_bits,
    interesting_bytes,
    truncate,
    cut_middle,
    splice,
    lying_footer_number,
    lying_footer_number,
    lying_footer_length,
    lying_page_header,
    lying_page_header,
]


def input_of(seeds: list[Seed], run_seed: int, index: int) -> tuple[Seed, bytes, str]:
    """Input `index` of the run seeded `run_seed`, the same every time."""
    rng = random.Random(run_seed * 1_000_003 + index)
    seed = seeds[rng.randrange(len(seeds))]
    data, applied = mutate(seed, seeds, rng)
    return seed, data, applied


# --- one input ---------------------------------------------------------------


# Per call: how many inputs it read and how many it refused with an error
# (this process's; workers report theirs when they finish).
OUTCOMES: dict[str, list[int]] = {}


def drive(path: Path, fmt: str, strict: bool = False) -> list[dict]:
    """Runs every entry point on the file at `path`; returns the problems
    (empty when each call gave a result or a clear fastingest error; with
    `strict`, any error is a problem)."""
    import fastingest

    calls = {
        "parquet": [
            ("metadata", lambda: fastingest.metadata(str(path), format="parquet")),
            ("read_parquet", lambda: fastingest.read_parquet(str(path))),
            # The seeds' string columns as dictionaries: fastingest's own
            # dictionary decoder.
            (
                "read_dictionary",
                lambda: fastingest.read_parquet(str(path), read_dictionary=["s", "st.b"]),
            ),
            # A filter (an OR, on the columns every seed has): its pages'
            # header bounds and the page index, the string column's keys
            # compared through its dictionary, the other columns' pages
            # passed over, late materialisation.
            (
                "read_parquet filtered",
                lambda: fastingest.read_parquet(
                    str(path),
                    filters=[[("i", "<", -900)], [("i", ">", 950)], [("s", "in", ["s3", "s11"])]],
                ),
            ),
            ("iter_batches", lambda: sum(b.num_rows for b in fastingest.iter_batches(str(path)))),
            ("read_chunks", lambda: fastingest.read_chunks(str(path)).to_parquet_bytes()),
        ],
        "orc": [
            ("metadata", lambda: fastingest.metadata(str(path), format="orc")),
            ("read_orc", lambda: fastingest.read_orc(str(path))),
            ("read_orc_stripes", lambda: len(fastingest.read_orc_stripes(str(path)))),
        ],
    }[fmt]
    problems = []
    for name, call in calls:
        counts = OUTCOMES.setdefault(name, [0, 0])
        try:
            call()
            counts[0] += 1
        except fastingest.FastIngestError as e:
            counts[1] += 1
            if strict:
                problems.append({"call": name, "problem": "a good file fails", "error": str(e)})
            elif path.name not in str(e):
                problems.append(
                    {"call": name, "problem": "message does not name the file", "error": repr(e)}
                )
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # noqa: BLE001 - a panic is a BaseException
            problems.append(
                {
                    "call": name,
                    "problem": f"{type(e).__module__}.{type(e).__name__}",
                    "error": str(e)[:500],
                }
            )
    return problems


# --- worker ------------------------------------------------------------------


def vm_size() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def limit_memory(mib: int) -> None:
    """Caps this process's address space at what it has now plus `mib`."""
    if mib:
        limit = vm_size() + mib * MIB
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def worker(args: argparse.Namespace) -> None:
    """Runs inputs `start..stop`, printing each index before it runs (the
    parent's record of what was running when a worker died) and each
    finding as a JSON line."""
    import faulthandler

    # A crash prints the Python stack it happened under.
    faulthandler.enable()
    seeds = load_seeds(args)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    out = sys.stdout
    # Every seed written here reads cleanly, unmutated (else the run would
    # measure nothing); this also starts the runtime and its threads, so
    # that the memory bound counts from there.
    for seed in (s for s in seeds if s.ours):
        good = work / f"seed-{seed.name}"
        good.write_bytes(seed.data)
        for problem in drive(good, seed.format, strict=True):
            finding = {"index": -1, "seed": seed.name, **problem}
            out.write("F " + json.dumps(finding) + "\n")
    limit_memory(args.memory)
    for index in range(args.start, args.stop):
        seed, data, applied = input_of(seeds, args.seed, index)
        path = work / f"input-{index}.{seed.format}"
        path.write_bytes(data)
        out.write(f"{index}\n")
        out.flush()
        faulthandler.dump_traceback_later(args.time_limit, exit=True)
        problems = drive(path, seed.format)
        faulthandler.cancel_dump_traceback_later()
        path.unlink()
        for problem in problems:
            finding = {"index": index, "seed": seed.name, "mutations": applied, **problem}
            out.write("F " + json.dumps(finding) + "\n")
            out.flush()
        if index % 1000 == 999:
            # Counts so far, so that a worker that dies later loses few.
            out.write("S " + json.dumps(OUTCOMES) + "\n")
            OUTCOMES.clear()
    out.write("S " + json.dumps(OUTCOMES) + "\n")
    out.write("done\n")
    out.flush()


def load_seeds(args: argparse.Namespace) -> list[Seed]:
    seeds = write_seeds() + nested_seeds()
    if args.corpora:
        seeds += corpus_seeds(Path(args.corpora))
    return seeds


# --- supervisor ----------------------------------------------------------------


@dataclass
class Report:
    inputs: int = 0
    findings: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    outcomes: dict[str, list[int]] = field(default_factory=dict)
    """Per call: [read, refused with a fastingest error] (workers that
    crashed report none)."""


def run(
    inputs: int,
    seed: int = 1,
    workers: int = 2,
    time_limit: float = 10.0,
    memory_mib: int = 1024,
    corpora: str | None = None,
    out: Path | None = None,
    quiet: bool = False,
) -> Report:
    """Fuzzes `inputs` inputs over `workers` processes; returns what ran and
    what was found (findings' inputs saved under `out`)."""
    started = time.monotonic()
    report = Report()
    work_root = Path(tempfile.mkdtemp(prefix="fastingest-fuzz-", dir=_scratch()))
    bounds = [(inputs * k // workers, inputs * (k + 1) // workers) for k in range(workers)]
    queue = [b for b in bounds if b[0] < b[1]]
    running: list[tuple[subprocess.Popen, list[int], Path]] = []
    last_note = started
    try:
        while queue or running:
            while queue and len(running) < workers:
                start, stop = queue.pop(0)
                work = work_root / f"w{start}"
                errors = work_root / f"w{start}.stderr"
                command = [
                    sys.executable,
                    "-m",
                    "devtools.fuzz",
                    "--worker",
                    f"--seed={seed}",
                    f"--start={start}",
                    f"--stop={stop}",
                    f"--time-limit={time_limit}",
                    f"--memory={memory_mib}",
                    f"--work={work}",
                ]
                if corpora:
                    command.append(f"--corpora={corpora}")
                proc = subprocess.Popen(
                    command,
                    stdout=subprocess.PIPE,
                    stderr=errors.open("w"),
                    text=True,
                    cwd=Path(__file__).resolve().parent.parent,
                )
                running.append((proc, [start, stop, start - 1], errors))
            proc, state, errors = running.pop(0)
            line = proc.stdout.readline() if proc.stdout else ""
            if line.startswith("S "):
                for name, (ok, refused) in json.loads(line[2:]).items():
                    counts = report.outcomes.setdefault(name, [0, 0])
                    counts[0] += ok
                    counts[1] += refused
                running.append((proc, state, errors))
            elif line.startswith("F "):
                report.findings.append(json.loads(line[2:]))
                running.append((proc, state, errors))
            elif line.strip().isdigit():
                state[2] = int(line)
                report.inputs += 1
                running.append((proc, state, errors))
            elif line.strip() == "done":
                proc.wait()
            else:
                # The worker died: the input it was running is a finding.
                code = proc.wait()
                index = state[2]
                # The first lines after the last caught panic's report: the
                # fatal message (an allocation failure, a signal) and stack.
                text = errors.read_text()
                detail = text[-6000:]
                report.findings.append(
                    {
                        "index": index,
                        "problem": "hang (time limit)"
                        if "Timeout (" in detail
                        else f"crash (exit {code})",
                        "error": detail,
                    }
                )
                if index + 1 < state[1]:
                    queue.append((index + 1, state[1]))
            if not quiet and time.monotonic() - last_note > 30:
                last_note = time.monotonic()
                rate = report.inputs / (last_note - started)
                print(
                    f"fuzz: {report.inputs}/{inputs} inputs, {len(report.findings)} findings, "
                    f"{rate:.0f}/s",
                    file=sys.stderr,
                )
    finally:
        for proc, _, _ in running:
            proc.kill()
        shutil.rmtree(work_root, ignore_errors=True)
    report.seconds = time.monotonic() - started
    if out is not None and report.findings:
        save_findings(report, seed, corpora, out)
    return report


def save_findings(report: Report, run_seed: int, corpora: str | None, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    namespace = argparse.Namespace(corpora=corpora)
    seeds = load_seeds(namespace)
    with (out / "findings.jsonl").open("a") as f:
        for finding in report.findings:
            seed, data, applied = input_of(seeds, run_seed, finding["index"])
            name = f"{run_seed}-{finding['index']}.{seed.format}"
            (out / name).write_bytes(data)
            f.write(
                json.dumps({"file": name, "replay": f"{run_seed}:{finding['index']}", **finding})
                + "\n"
            )


def _scratch() -> str | None:
    # Inputs are written and read once each: memory-backed when there is one.
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def replay(args: argparse.Namespace) -> int:
    run_seed, index = (int(x) for x in args.replay.split(":"))
    seed, data, applied = input_of(load_seeds(args), run_seed, index)
    path = Path(tempfile.mkdtemp()) / f"input-{index}.{seed.format}"
    path.write_bytes(data)
    print(f"{path} (from {seed.name}, {applied}, {len(data)} bytes)", flush=True)
    limit_memory(args.memory)
    problems = drive(path, seed.format)
    for problem in problems:
        print(json.dumps(problem))
    return 1 if problems else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--inputs", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--time-limit", type=float, default=10.0, help="seconds per input")
    ap.add_argument("--memory", type=int, default=1024, help="MiB of address space per worker")
    ap.add_argument("--corpora", default=os.environ.get("FASTINGEST_CORPORA"))
    ap.add_argument("--out", default="fuzz-findings")
    ap.add_argument("--replay", help="SEED:INDEX: run one input in this process")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--stop", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--work", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return 0
    if args.replay:
        return replay(args)
    report = run(
        args.inputs,
        seed=args.seed,
        workers=args.workers,
        time_limit=args.time_limit,
        memory_mib=args.memory,
        corpora=args.corpora,
        out=Path(args.out),
    )
    rate = report.inputs / report.seconds if report.seconds else 0
    print(
        f"fuzz: {report.inputs} inputs in {report.seconds:.0f} s ({rate:.0f}/s), "
        f"{len(report.findings)} findings" + (f" (in {args.out}/)" if report.findings else "")
    )
    for name, (ok, refused) in sorted(report.outcomes.items()):
        print(f"  {name:<18} read {ok:>9}  refused {refused:>9}")
    for finding in report.findings[:20]:
        print("  " + json.dumps(finding)[:300])
    return 1 if report.findings else 0


if __name__ == "__main__":
    sys.exit(main())
