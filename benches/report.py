"""The suite's report: medians and ratios, the targets checked, the sweep's
verdict on the defaults, and the plots; written as JSON, Markdown and PNG."""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import time
from collections import defaultdict
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FASTINGEST = {
    "fastingest",
    "fastingest-warm",
    "fastingest-chunks",
    "fastingest-view",
    "fastingest-orc",
}
# How a read was timed: the only read of a fresh process, or the last of
# several in one process (results saved before the suite had modes: fresh).
MODES = {"fresh": "fresh process per read", "steady": "steady state"}
# Issue 12: fastingest's peak RSS at most this many times polars'.
RSS_LIMIT_VS_POLARS = 1.1
# Issue 12: one large file through a link, decoded, at least this share of
# the lesser of the link's ceiling and the local read (decoding overlapped
# with the fetch, not added to it); checked on the profiles with a link.
OVERLAP_LIMIT = 0.85
# Issue 12 judges the run-to-run spread over at least this many runs of each
# reader: the slowest of 3 or 5 runs is too much a matter of chance (a peer
# with 5 quiet runs sets a bar that one noisy run of 5 misses).
SPREAD_MIN_RUNS = 7
LINKED = ("cloud", "far")
# Single files at least this large, read whole, get the overlap check and a
# ceiling of their own (see `has_own_ceiling`).
LARGE_FILE_BYTES = 100e6

DEFAULT_SLICE_MIB, DEFAULT_INFLIGHT = 8, 32
PEERS = ["pyarrow", "polars", "fsspec", "s3fs", "obstore", "boto3", "numpy", "matplotlib"]


def mode_of(result: dict) -> str:
    return result.get("mode", "fresh")


def machine() -> dict:
    mem_kb = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
    return {
        "cores": os.cpu_count(),
        "memory_gib": round(mem_kb / 2**20, 1),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def versions() -> dict:
    out = {}
    for name in ["fastingest", *PEERS]:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def commit() -> str:
    git = ["git", "-C", str(ROOT)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run([*git, "status", "--porcelain"], capture_output=True, text=True)
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def _med(xs: list[float]) -> float | None:
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def link_ceilings(run: Any) -> dict[str, float]:
    """Each profile's ceiling (MB/s, the median of its samples), for the
    profiles where one was measured."""
    return {p: statistics.median(v) for p, v in run.ceilings.items() if v}


def has_own_ceiling(source: Any) -> bool:
    """Whether the suite measures a ceiling on this source's own bytes: a
    large single Parquet file read whole. Through a link with latency the
    ceiling in MB/s grows with the file (its 8 MiB GETs run side by side,
    so a read takes about as long whatever the file's size: far, 2026-11-28,
    393 MB/s for the 143 MB `int` file against 340 for the 119 MB
    `mixed-zstd`), so the largest file's ceiling understates what a smaller
    one could have done through the same link."""
    return (
        not source.folder
        and source.fmt == "parquet"
        and not source.columns
        and source.size >= LARGE_FILE_BYTES
    )


def file_ceilings(run: Any) -> dict[tuple[str, str], float]:
    """The ceiling measured on each large file's own bytes, by (profile,
    dataset): the median of the samples taken one per round beside its
    reads (runs saved before 2026-11-28 have none)."""
    measured = getattr(run, "file_ceilings", None) or {}
    return {tuple(key.split("|", 1)): statistics.median(v) for key, v in measured.items() if v}


def ceiling_for(run: Any, profile: str, dataset: str) -> float | None:
    """The ceiling a read is held to: its file's own where measured, else
    its profile's (the largest file's)."""
    own = file_ceilings(run).get((profile, dataset))
    return own or link_ceilings(run).get(profile)


def summarize(run: Any) -> dict:
    """Per (profile, dataset, reader, mode): medians, min-max, and the ratios
    (against the best peer in the same mode)."""
    sources = {s.name: s for s in run.sources}
    groups: dict[tuple[str, str, str, str], list[dict]] = defaultdict(list)
    for r in run.results:
        groups[(r["profile"], r["dataset"], r["reader"], mode_of(r))].append(r)
    rows = []
    for (profile, dataset, reader, mode), rs in groups.items():
        src = sources[dataset]
        ok = [r for r in rs if "error" not in r]
        mbps = [src.size / 1e6 / r["seconds"] for r in ok]
        seconds = [r["seconds"] for r in ok]
        timed_out = any(r.get("timed_out") for r in rs)
        rows.append(
            {
                "profile": profile,
                "dataset": dataset,
                "reader": reader,
                "mode": mode,
                "runs": len(rs),
                "errors": [r["error"] for r in rs if "error" in r],
                "timed_out": timed_out,
                "mbps": _med(mbps),
                "mbps_min": min(mbps) if mbps else None,
                "mbps_max": max(mbps) if mbps else None,
                # The slowest run over the quickest: how far apart the same
                # read lands from one process to the next.
                "spread": max(seconds) / min(seconds) if len(seconds) >= 3 else None,
                "rows_per_s": _med([src.rows / r["seconds"] for r in ok]),
                "requests": _med([r.get("requests") for r in ok]),
                "bytes_sent": _med([r.get("bytes_sent") for r in ok]),
                "bytes_needed": src.needed,
                "size": src.size,
                "peak_mib": _med([r["peak_mib"] for r in ok]),
            }
        )
    best: dict[tuple[str, str, str], tuple[str, float]] = {}
    for row in rows:
        if row["reader"] in FASTINGEST or row["mbps"] is None:
            continue
        key = (row["profile"], row["dataset"], row["mode"])
        if key not in best or row["mbps"] > best[key][1]:
            best[key] = (row["reader"], row["mbps"])
    ceilings = link_ceilings(run)
    for row in rows:
        peer = best.get((row["profile"], row["dataset"], row["mode"]))
        row["best_peer"] = peer[0] if peer else None
        row["vs_best_peer"] = row["mbps"] / peer[1] if peer and row["mbps"] else None
        c = ceiling_for(run, row["profile"], row["dataset"])
        row["vs_ceiling"] = row["mbps"] / c if c and row["mbps"] else None
    order = {p: i for i, p in enumerate(run.args.profiles)}
    ds_order = {s.name: i for i, s in enumerate(run.sources)}
    mode_order = {m: i for i, m in enumerate(MODES)}
    rows.sort(
        key=lambda r: (
            mode_order[r["mode"]],
            order[r["profile"]],
            ds_order[r["dataset"]],
            r["reader"],
        )
    )
    return {"rows": rows, "ceilings": ceilings}


def targets(run: Any, rows: list[dict]) -> list[dict]:
    """The issue's targets, each checked per dataset from the medians."""
    sources = {s.name: s for s in run.sources}
    out = []

    def check(
        name: str,
        profile: str,
        reader: str,
        pick,
        measure: str,
        limit: float,
        modes: tuple[str, ...] = ("fresh",),
    ) -> None:
        for row in rows:
            if row["profile"] != profile or row["reader"] != reader or not pick(row):
                continue
            if row["mode"] not in modes:
                continue
            value = row[measure]
            check = {
                "target": name + ("" if row["mode"] == "fresh" else f" ({MODES[row['mode']]})"),
                "dataset": row["dataset"],
                "value": value,
                "limit": limit,
                "met": value is not None and value >= limit,
            }
            # fastingest read, but no peer did in this mode (the suite runs a
            # reader slower than `--slow` once, fresh): nothing to compare with.
            if measure == "vs_best_peer" and row["mbps"] and not row["best_peer"]:
                check.update(met=None, why="no peer result in this mode")
            out.append(check)

    both = tuple(MODES)

    big = lambda r: sources[r["dataset"]].size >= 100e6 and sources[r["dataset"]].fmt == "parquet"  # noqa: E731
    parquet = lambda r: sources[r["dataset"]].fmt == "parquet"  # noqa: E731
    small = lambda r: sources[r["dataset"]].folder  # noqa: E731
    check(
        "cloud: fastingest >= 2.5x best peer (datasets >= 100 MB)",
        "cloud",
        "fastingest",
        big,
        "vs_best_peer",
        2.5,
    )
    check(
        "cloud: raw chunk reads >= 80% of the ceiling",
        "cloud",
        "fastingest-chunks",
        big,
        "vs_ceiling",
        0.8,
    )
    for p in ("local", "local-warm", "minio"):
        check(
            f"{p}: fastingest >= 1.0x best peer",
            p,
            "fastingest",
            parquet,
            "vs_best_peer",
            1.0,
            both,
        )
    check(
        "cloud: many small files >= 3x best peer", "cloud", "fastingest", small, "vs_best_peer", 3.0
    )
    for p in ("cloud", "far"):
        check(
            f"{p}: fastingest >= 1.25x best peer",
            p,
            "fastingest",
            parquet,
            "vs_best_peer",
            1.25,
            both,
        )
    by_key = {(r["profile"], r["dataset"], r["reader"], r["mode"]): r for r in rows}
    for row in rows:
        if row["reader"] != "fastingest":
            continue
        peer = by_key.get((row["profile"], row["dataset"], row["best_peer"], row["mode"]))
        if row["spread"] is not None and peer and peer["spread"] is not None:
            out.append(
                {
                    "target": f"{row['profile']}: run-to-run spread (slowest / quickest of "
                    f"{row['runs']} runs) <= the best peer's"
                    + ("" if row["mode"] == "fresh" else f" ({MODES[row['mode']]})"),
                    "dataset": row["dataset"],
                    "value": row["spread"],
                    "limit": round(peer["spread"], 2),
                    "at_most": True,
                    # None: too few runs to judge (reported, not counted).
                    "met": row["spread"] <= peer["spread"]
                    if min(row["runs"], peer["runs"]) >= SPREAD_MIN_RUNS
                    else None,
                    "why": f"< {SPREAD_MIN_RUNS} runs",
                }
            )
        # Peak memory is a fresh process's: a steady one's holds its earlier reads' high mark.
        polars = by_key.get((row["profile"], row["dataset"], "polars", row["mode"]))
        if row["mode"] == "fresh" and row["peak_mib"] and polars and polars["peak_mib"]:
            ratio = row["peak_mib"] / polars["peak_mib"]
            out.append(
                {
                    "target": f"{row['profile']}: peak RSS / polars' <= {RSS_LIMIT_VS_POLARS}",
                    "dataset": row["dataset"],
                    "value": ratio,
                    "limit": RSS_LIMIT_VS_POLARS,
                    "at_most": True,
                    "met": ratio <= RSS_LIMIT_VS_POLARS,
                }
            )
    out.extend(overlap_targets(run, by_key))
    check(
        "cloud: ORC >= 1x pyarrow's ORC reader",
        "cloud",
        "fastingest-orc",
        lambda r: True,
        "vs_best_peer",
        1.0,
    )
    return out


def own_ceilings_line(run: Any) -> list[str]:
    """The ceilings measured on the large files' own bytes, as a line of
    the report's header (none for runs that measured none)."""
    own = file_ceilings(run)
    if not own:
        return []
    cells = ", ".join(f"{p} {d} {c:.0f}" for (p, d), c in sorted(own.items()))
    return [
        "Each large file's own ceiling (the same GETs of its bytes, one sample a round beside "
        f"its reads; its chunk and overlap ratios use it), MB/s: {cells}"
    ]


def overlap_targets(run: Any, by_key: dict) -> list[dict]:
    """Decoding hidden behind the fetch: each large single file read whole
    (100 MB or more), through each linked profile, at least `OVERLAP_LIMIT`
    of the lesser of the link's ceiling for that file's bytes and the same
    read from local disk (page cache warm), both fresh processes."""
    out = []
    for source in run.sources:
        if not has_own_ceiling(source):
            continue
        local = by_key.get(("local-warm", source.name, "fastingest", "fresh"))
        for profile in link_ceilings(run):
            row = by_key.get((profile, source.name, "fastingest", "fresh"))
            if profile not in LINKED or not row or not local:
                continue
            ceiling = ceiling_for(run, profile, source.name)
            if not row["mbps"] or not local["mbps"]:
                continue
            value = row["mbps"] / min(ceiling, local["mbps"])
            out.append(
                {
                    "target": f"{profile}: one large file, decoded >= {OVERLAP_LIMIT} of the "
                    "lesser of the ceiling and the local-warm read",
                    "dataset": source.name,
                    "value": value,
                    "limit": OVERLAP_LIMIT,
                    "met": value >= OVERLAP_LIMIT,
                }
            )
    return out


def sweep_table(run: Any) -> dict:
    cells: dict[str, dict[tuple[int, int], list[float]]] = defaultdict(lambda: defaultdict(list))
    size = run.sources[0].size if run.sources else 0
    for r in run.sweep:
        if "error" not in r:
            cells[r["profile"]][(r["slice_mib"], r["inflight"])].append(size / 1e6 / r["seconds"])
    out = {}
    for profile, grid in cells.items():
        med = {k: statistics.median(v) for k, v in grid.items()}
        best = max(med, key=med.get)
        default = med.get((DEFAULT_SLICE_MIB, DEFAULT_INFLIGHT))
        out[profile] = {
            "cells": {f"{k[0]}x{k[1]}": v for k, v in med.items()},
            "best": {"slice_mib": best[0], "inflight": best[1], "mbps": med[best]},
            "default_mbps": default,
            "default_vs_best": default / med[best] if default else None,
        }
    return out


def epochs_table(run: Any) -> dict:
    size = run.sources[0].size if run.sources else 0
    by: dict[tuple[str, int], list[float]] = defaultdict(list)
    reqs: dict[tuple[str, int], list[float]] = defaultdict(list)
    for r in run.epochs:
        if "error" not in r:
            by[(r["reader"], r["epoch"])].append(size / 1e6 / r["seconds"])
            reqs[(r["reader"], r["epoch"])].append(r.get("requests") or 0)
    return {
        f"{reader}@{epoch}": {
            "mbps": statistics.median(v),
            "requests": statistics.median(reqs[(reader, epoch)]),
        }
        for (reader, epoch), v in sorted(by.items())
    }


def first_batch_table(run: Any) -> dict:
    """Median seconds to the first batch, per profile and streaming reader,
    next to the same reader's median full read."""
    by: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in run.first_batch:
        if "error" not in r:
            by[(r["profile"], r["reader"])].append(r["seconds"])
    name = run.sources[0].name if run.sources else ""
    full: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in run.results:
        if r["dataset"] == name and "error" not in r and mode_of(r) == "fresh":
            full[(r["profile"], r["reader"])].append(r["seconds"])
    return {
        f"{p}/{rd}": {
            "first_batch_s": statistics.median(v),
            "full_read_s": statistics.median(full[(p, rd)]) if full[(p, rd)] else None,
        }
        for (p, rd), v in by.items()
    }


def check_line(c: dict) -> str:
    """A target's row of the report; a check whose `met` is None could not be
    judged, for the reason in its `why`."""
    met = c["met"]
    verdict = f"not judged ({c.get('why')})" if met is None else "yes" if met else "**no**"
    return (
        f"| {c['target']} | {c['dataset']} | {_fmt(c['value'], '.2f')} | "
        f"{'<= ' if c.get('at_most') else ''}{c['limit']} | {verdict} |"
    )


def _fmt(x: Any, spec: str = ".0f", none: str = "-") -> str:
    return none if x is None else format(x, spec)


def _ordinal(n: int | None) -> str:
    if not n:
        return "last"
    suffix = {1: "st", 2: "nd", 3: "rd"}.get(n % 10 if n % 100 not in (11, 12, 13) else 0, "th")
    return f"{n}{suffix}"


def headline(summary: dict) -> list[str]:
    """One line per profile and dataset: fastingest next to the best peer,
    a fresh process per read."""
    rows: dict[tuple[str, str], dict[str, dict]] = defaultdict(dict)
    for r in summary["rows"]:
        if r["mode"] == "fresh":
            rows[(r["profile"], r["dataset"])][r["reader"]] = r
    out = [
        "| profile | dataset | fastingest MB/s | best peer | peer MB/s | ratio "
        "| raw chunks MB/s | chunks / ceiling | warm cache MB/s |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for (profile, dataset), by in rows.items():
        fi = by.get("fastingest") or by.get("fastingest-orc")
        if not fi or fi["mbps"] is None:
            continue
        peer = by.get(fi["best_peer"]) if fi["best_peer"] else None
        chunks = by.get("fastingest-chunks")
        warm = by.get("fastingest-warm")
        out.append(
            f"| {profile} | {dataset} | {fi['mbps']:.0f} | {fi['best_peer'] or '-'} | "
            f"{_fmt(peer and peer['mbps'])} | {_fmt(fi['vs_best_peer'], '.2f')}x | "
            f"{_fmt(chunks and chunks['mbps'])} | {_fmt(chunks and chunks['vs_ceiling'], '.2f')} | "
            f"{_fmt(warm and warm['mbps'])} |"
        )
    return out


def steady_headline(summary: dict) -> list[str]:
    """The steady state next to the fresh process, per profile and dataset:
    fastingest's MB/s and ratio to the best peer in each mode, and both
    modes' spreads (fastingest's, the best peer's)."""
    by: dict[tuple[str, str], dict[tuple[str, str], dict]] = defaultdict(dict)
    for r in summary["rows"]:
        by[(r["profile"], r["dataset"])][(r["reader"], r["mode"])] = r
    out = [
        "| profile | dataset | fresh MB/s | ratio | spread (peer's) | steady MB/s "
        "| best peer | peer MB/s | ratio | spread (peer's) |",
        "|---|---|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    for (profile, dataset), rows in by.items():
        steady = rows.get(("fastingest", "steady"))
        if not steady or steady["mbps"] is None:
            continue
        fresh = rows.get(("fastingest", "fresh"))
        cells = []
        for fi in (fresh, steady):
            peer = fi and rows.get((fi["best_peer"], fi["mode"]))
            cells.append(
                (
                    fi,
                    peer,
                    f"{_fmt(fi and fi['spread'], '.2f')} ({_fmt(peer and peer['spread'], '.2f')})",
                )
            )
        (f, _, f_spread), (s, s_peer, s_spread) = cells
        out.append(
            f"| {profile} | {dataset} | {_fmt(f and f['mbps'])} | "
            f"{_fmt(f and f['vs_best_peer'], '.2f')}x | {f_spread} | {s['mbps']:.0f} | "
            f"{s['best_peer'] or '-'} | {_fmt(s_peer and s_peer['mbps'])} | "
            f"{_fmt(s['vs_best_peer'], '.2f')}x | {s_spread} |"
        )
    return out if len(out) > 2 else []


def markdown(
    run: Any,
    summary: dict,
    checks: list[dict],
    sweep: dict,
    epochs: dict,
    info: dict,
    first: dict,
) -> str:
    a = run.args
    lines = [
        f"Suite run {info['stamp']} (commit {info['commit']}), {info['machine']['cores']} cores, "
        f"{info['machine']['memory_gib']} GiB; {a.runs} interleaved runs per reader"
        # Runs saved before the suite turned the order and warmed up have no `warmup`.
        + (
            f" (the order turned each round, after {a.warmup} unmeasured round(s) per dataset)"
            if hasattr(a, "warmup")
            else ""
        )
        + ", each read in a fresh process"
        + (
            f"; then {a.steady_runs} steady-state runs (the last of {a.steady_reads} reads "
            "in one process)"
            if getattr(a, "steady_runs", 0)
            else ""
        )
        + f"; took {info['elapsed_s'] / 60:.1f} min.",
        "Profiles: local disk (page cache dropped per file before each read), MinIO on loopback, "
        "emulated cloud (toxiproxy: 30 ms +-5, 100 MB/s per connection), far region (100 ms "
        "+-10, 50 MB/s per connection). MB/s = bytes of the file(s) / wall seconds; requests and "
        "bytes sent are MinIO's own counters around each read; 'needed' = the column chunks the "
        "read asks for.",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in info["versions"].items() if v) + ".",
        "",
        "Ceilings (raw parallel 8 MiB range GETs, 32 in flight, boto3; the profile's on its "
        "largest file): " + ", ".join(f"{p} {c:.0f} MB/s" for p, c in summary["ceilings"].items()),
        *own_ceilings_line(run),
        "",
        *headline(summary),
        "",
    ]
    steady = steady_headline(summary)
    if steady:
        reads = getattr(a, "steady_reads", None)
        lines += [
            f"Steady state: the {_ordinal(reads)} read of the file in one process (earlier "
            "reads warm the imports, thread pools, connections and allocator; the page cache "
            "is set as the profile says before each), against the best peer measured the same "
            "way; a fresh process per read beside it. Spread: slowest / quickest run.",
            "",
            *steady,
            "",
        ]
    lines += [
        "Every reader:",
        "",
        "| profile | dataset | reader | mode | MB/s median | min-max | Mrows/s | requests "
        "| sent / needed | peak RSS MiB | vs best peer | vs ceiling |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in summary["rows"]:
        if r["mbps"] is None:
            lines.append(
                f"| {r['profile']} | {r['dataset']} | {r['reader']} | {r['mode']} | failed: "
                f"{r['errors'][0][:80]} | | | | | | | |"
            )
            continue
        ratio = (
            r["bytes_sent"] / r["bytes_needed"] if r["bytes_sent"] and r["bytes_needed"] else None
        )
        mrows = r["rows_per_s"] / 1e6 if r["rows_per_s"] else None
        lines.append(
            f"| {r['profile']} | {r['dataset']} | {r['reader']} | {r['mode']} | {r['mbps']:.0f} | "
            f"{r['mbps_min']:.0f}-{r['mbps_max']:.0f} | {_fmt(mrows, '.1f')} | "
            f"{_fmt(r['requests'])} | {_fmt(ratio, '.2f')} | {_fmt(r['peak_mib'])} | "
            f"{_fmt(r['vs_best_peer'], '.2f')}x | {_fmt(r['vs_ceiling'], '.2f')} |"
        )
    lines += [
        "",
        "Targets (from this run's medians):",
        "",
        "| target | dataset | value | needed | met |",
        "|---|---|---:|---:|---|",
    ]
    lines += [check_line(c) for c in checks]
    if first:
        lines += [
            "",
            f"Time to first batch ({run.sources[0].name}; readers with a streaming API: "
            "fastingest.iter_batches, ParquetFile.iter_batches, dataset.to_batches, "
            "scan_parquet().collect_batches(); seconds, median):",
            "",
            "| profile | reader | first batch s | full read s |",
            "|---|---|---:|---:|",
        ]
        for key, v in first.items():
            p, rd = key.split("/", 1)
            lines.append(
                f"| {p} | {rd} | {v['first_batch_s']:.3f} | {_fmt(v['full_read_s'], '.3f')} |"
            )
    if sweep:
        lines += [
            "",
            "Sweep (fastingest on the first dataset; MB/s medians; rows = slice MiB, "
            "columns = requests in flight):",
            "",
        ]
        for profile, s in sweep.items():
            slices = sorted({int(k.split("x")[0]) for k in s["cells"]})
            infl = sorted({int(k.split("x")[1]) for k in s["cells"]})
            lines += [
                f"{profile}:",
                "",
                "| slice \\ in flight | " + " | ".join(map(str, infl)) + " |",
                "|---" * (1 + len(infl)) + "|",
            ]
            for sl in slices:
                lines.append(
                    f"| {sl} | "
                    + " | ".join(_fmt(s["cells"].get(f"{sl}x{i}")) for i in infl)
                    + " |"
                )
            b = s["best"]
            pct = 100 * s["default_vs_best"] if s["default_vs_best"] else None
            lines += [
                "",
                f"best {b['slice_mib']} MiB x {b['inflight']}: {b['mbps']:.0f} MB/s; default "
                f"{DEFAULT_SLICE_MIB} MiB x {DEFAULT_INFLIGHT}: {_fmt(s['default_mbps'])} MB/s "
                f"= {_fmt(pct, '.0f')}% of the best",
                "",
            ]
    if epochs:
        lines += [
            "",
            "Epochs over the emulated cloud (fastingest through its cache, validate="
            "'immutable'; peers have no cache): MB/s median (requests)",
            "",
        ]
        readers = sorted({k.split("@")[0] for k in epochs})
        n = max(int(k.split("@")[1]) for k in epochs)
        lines += [
            "| reader | " + " | ".join(f"epoch {e}" for e in range(1, n + 1)) + " |",
            "|---" * (n + 1) + "|",
        ]
        for rd in readers:
            cells = [epochs.get(f"{rd}@{e}") for e in range(1, n + 1)]
            lines.append(
                f"| {rd} | "
                + " | ".join(f"{c['mbps']:.0f} ({c['requests']:.0f})" if c else "-" for c in cells)
                + " |"
            )
    if run.notes:
        lines += ["", *[f"Note: {n}" for n in run.notes]]
    return "\n".join(lines)


def plots(run: Any, summary: dict, sweep: dict, epochs: dict, prefix: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    profiles = [p for p in run.args.profiles if any(r["profile"] == p for r in summary["rows"])]
    all_readers = list(dict.fromkeys(r["reader"] for r in summary["rows"]))
    palette = plt.get_cmap("tab20")
    if profiles:
        fig, axes = plt.subplots(len(profiles), 1, figsize=(14, 3.2 * len(profiles)), squeeze=False)
        for ax, profile in zip(axes[:, 0], profiles, strict=True):
            rows = [
                r
                for r in summary["rows"]
                if r["profile"] == profile and r["mbps"] and r["mode"] == "fresh"
            ]
            datasets = list(dict.fromkeys(r["dataset"] for r in rows))
            readers = list(dict.fromkeys(r["reader"] for r in rows))
            width = 0.8 / max(1, len(readers))
            for i, reader in enumerate(readers):
                color = palette(all_readers.index(reader) % 20)
                xs, ys = [], []
                for j, d in enumerate(datasets):
                    hit = [r for r in rows if r["dataset"] == d and r["reader"] == reader]
                    if hit:
                        xs.append(j + i * width)
                        ys.append(hit[0]["mbps"])
                ax.bar(xs, ys, width, label=reader, color=color)
            if profile in summary["ceilings"]:
                ax.axhline(summary["ceilings"][profile], color="k", ls="--", lw=1, label="ceiling")
            ax.set_xticks([j + 0.4 - width / 2 for j in range(len(datasets))])
            ax.set_xticklabels(datasets, rotation=20, ha="right", fontsize=7)
            ax.set_ylabel("MB/s (log)")
            ax.set_yscale("log")
            ax.set_title(
                f"{profile}: throughput (median, fresh process per read; MB/s of the file's bytes)"
            )
            ax.legend(ncol=7, fontsize=6, loc="upper left")
        fig.tight_layout()
        path = prefix.with_name(prefix.name + "-throughput.png")
        fig.savefig(path, dpi=90)
        plt.close(fig)
        written.append(path.name)
    if sweep:
        fig, axes = plt.subplots(1, len(sweep), figsize=(5.5 * len(sweep), 4), squeeze=False)
        for ax, (profile, s) in zip(axes[0], sweep.items(), strict=True):
            slices = sorted({int(k.split("x")[0]) for k in s["cells"]})
            infl = sorted({int(k.split("x")[1]) for k in s["cells"]})
            grid = [[s["cells"].get(f"{sl}x{i}", float("nan")) for i in infl] for sl in slices]
            im = ax.imshow(grid, cmap="viridis", aspect="auto")
            for y, row in enumerate(grid):
                for x, v in enumerate(row):
                    ax.text(x, y, f"{v:.0f}", ha="center", va="center", color="w", fontsize=8)
            ax.set_xticks(range(len(infl)), [str(i) for i in infl])
            ax.set_yticks(range(len(slices)), [f"{sl} MiB" for sl in slices])
            ax.set_xlabel("requests in flight")
            ax.set_title(f"{profile}: MB/s by slice x in flight")
            fig.colorbar(im, ax=ax)
        fig.tight_layout()
        path = prefix.with_name(prefix.name + "-sweep.png")
        fig.savefig(path, dpi=90)
        plt.close(fig)
        written.append(path.name)
    if epochs:
        fig, ax = plt.subplots(figsize=(6, 4))
        for reader in sorted({k.split("@")[0] for k in epochs}):
            pts = sorted(
                (int(k.split("@")[1]), v["mbps"])
                for k, v in epochs.items()
                if k.startswith(reader + "@")
            )
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=reader)
        ax.set_xlabel("epoch")
        ax.set_ylabel("MB/s")
        ax.set_xticks(sorted({int(k.split("@")[1]) for k in epochs}))
        ax.set_title("emulated cloud: MB/s per epoch")
        ax.legend()
        fig.tight_layout()
        path = prefix.with_name(prefix.name + "-epochs.png")
        fig.savefig(path, dpi=90)
        plt.close(fig)
        written.append(path.name)
    return written


def write(run: Any, out: Path, elapsed: float) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    prefix = out / f"suite-{stamp}"
    info = {
        "stamp": stamp,
        "commit": commit(),
        "machine": machine(),
        "versions": versions(),
        "elapsed_s": elapsed,
    }
    summary = summarize(run)
    checks = targets(run, summary["rows"])
    sweep = sweep_table(run)
    epochs = epochs_table(run)
    first = first_batch_table(run)
    md = markdown(run, summary, checks, sweep, epochs, info, first)
    images = plots(run, summary, sweep, epochs, prefix)
    md += "\n\n" + "\n".join(f"![{name}]({name})" for name in images) + "\n"
    record = {
        **info,
        "args": {k: v for k, v in vars(run.args).items()},
        "datasets": [
            {**{k: str(v) if isinstance(v, Path) else v for k, v in vars(s).items()}}
            for s in run.sources
        ],
        "results": run.results,
        "ceilings": run.ceilings,
        "file_ceilings": getattr(run, "file_ceilings", {}),
        "sweep": run.sweep,
        "epochs": run.epochs,
        "first_batch": run.first_batch,
        "first_batch_summary": first,
        "summary": summary,
        "targets": checks,
        "sweep_summary": sweep,
        "epochs_summary": epochs,
        "notes": run.notes,
    }
    prefix.with_suffix(".json").write_text(json.dumps(record, indent=1, default=str))
    prefix.with_suffix(".md").write_text(md)
    print("\n" + md)
    print(f"\nwrote {prefix}.json, .md and {len(images)} plots")
    return prefix
