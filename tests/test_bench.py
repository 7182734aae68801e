"""The benchmark suite's entry point works: its smallest case (local disk,
one small dataset, four readers, one run) runs end to end and writes the
JSON, the Markdown summary and the plots. CI runs no benchmark beyond this."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def smallest_case(tmp_path: Path) -> list[str]:
    """The suite's smallest case, its data and results under `tmp_path`."""
    suite = str(ROOT / "benches" / "suite.py")
    out, data = str(tmp_path / "results"), str(tmp_path / "data")
    return [sys.executable, suite, "--smallest", "--out", out, "--data", data]


def test_suite_smallest_case_runs_end_to_end(tmp_path):
    out = subprocess.run(
        smallest_case(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    results = tmp_path / "results"
    (record_path,) = results.glob("suite-*.json")
    record = json.loads(record_path.read_text())
    readers = {r["reader"] for r in record["results"]}
    assert readers == {"fastingest", "fastingest-chunks", "pyarrow", "polars"}
    assert all("error" not in r and r["seconds"] > 0 for r in record["results"])
    # The steady state: the peers issue 12 names and fastingest (not its raw
    # chunks), each timed on the last of its reads in one process.
    steady = [r for r in record["results"] if r["mode"] == "steady"]
    assert {r["reader"] for r in steady} == {"fastingest", "pyarrow", "polars"}
    for r in steady:
        assert len(r["all_seconds"]) == 2 and r["seconds"] == r["all_seconds"][-1]
    fi_steady = next(r for r in steady if r["reader"] == "fastingest")
    fi_fresh = next(
        r for r in record["results"] if r["reader"] == "fastingest" and r["mode"] == "fresh"
    )
    # Its counters are the last read's own, not the sum of both.
    assert fi_steady["stats"]["bytes_needed"] == fi_fresh["stats"]["bytes_needed"]
    fi = [r for r in record["summary"]["rows"] if r["reader"] == "fastingest"]
    assert fi and fi[0]["mbps"] > 0 and fi[0]["vs_best_peer"] > 0
    # fastingest's own counters: the whole needed bytes, a handful of requests.
    assert fi[0]["requests"] >= 1
    assert record["machine"]["cores"] >= 1 and record["versions"]["pyarrow"]
    assert record["first_batch"], "time to first batch was not measured"
    md = record_path.with_suffix(".md").read_text()
    assert "| local |" in md and "fastingest" in md
    assert "Steady state: the 2nd read" in md
    targets = {t["target"] for t in record["targets"]}
    assert "local: fastingest >= 1.0x best peer (steady state)" in targets, targets
    assert "local: peak RSS / polars' <= 1.1" in targets, targets
    assert list(results.glob("suite-*-throughput.png"))


def test_orc_types_benchmark_reports_every_type_and_reader(tmp_path):
    # benches/bench_orc_types.py at its smallest: four type groups, one round.
    script = str(ROOT / "benches" / "bench_orc_types.py")
    types = ("decimal", "string-dict", "timestamp-taipei", "list")
    args = ["--rounds", "1", "--size-mb", "1", "--types", ",".join(types)]
    out = subprocess.run(
        [sys.executable, script, *args, "--data", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    rows = re.findall(
        r"^\| (\S+) \| \d+ \| (\S+) \| ([\d.]+) .* \| ([\d.]+)x \|$", out.stdout, re.M
    )
    assert {(name, reader) for name, reader, _, _ in rows} == {
        (name, reader) for name in types for reader in ("fastingest", "pyarrow")
    }, out.stdout
    assert all(float(ms) > 0 and float(ratio) > 0 for _, _, ms, ratio in rows)
    # The dictionary-encoded copy is written beside its Parquet file.
    assert list(tmp_path.glob("string-card1000-*-dict.orc"))
    # The zoned copy reads as Taipei's wall clock: pyarrow's times, moved
    # from the UTC ones written.
    import pyarrow.orc as orc
    import pyarrow.parquet as pq

    import fastingest

    (taipei,) = tmp_path.glob("timestamp-*-taipei.orc")
    want = orc.read_table(taipei)
    assert fastingest.read_orc(str(taipei)).equals(want)
    written = pq.read_table(next(tmp_path.glob("timestamp-*.parquet")))
    assert not want.column(0).equals(written.column(0).cast(want.column(0).type))
    # The nested copy (list<list<int32>>, decoded by orc/nested.rs).
    (lists,) = tmp_path.glob("list-*.orc")
    assert fastingest.read_orc(str(lists)).equals(orc.read_table(lists))


def test_an_interrupted_suite_reports_what_it_measured(tmp_path):
    # Interrupted (as Ctrl-C or `timeout` would) once a few reads are done:
    # those reads are saved and reported, marked as an interrupted run.
    suite = subprocess.Popen(
        smallest_case(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    progress = re.compile(rb"reads:[^|]*\|[^|]*\| *(\d+)/\d+")
    seen = b""
    deadline = time.monotonic() + 300
    try:
        while time.monotonic() < deadline:
            chunk = suite.stderr.read1(4096) if suite.stderr else b""
            if not chunk:
                break
            seen += chunk
            done = [int(n) for n in progress.findall(seen)]
            if done and max(done) >= 3:
                suite.send_signal(signal.SIGTERM)
                break
        rest = suite.communicate(timeout=120)[1]
    finally:
        suite.kill()
    stderr = (seen + rest).decode(errors="replace")
    assert suite.returncode == 130, stderr[-3000:]
    results = tmp_path / "results"
    (record_path,) = results.glob("suite-*.json")
    record = json.loads(record_path.read_text())
    # Fewer reads than the whole case's 4 fresh and 3 steady ones.
    assert 1 <= len(record["results"]) < 7, stderr[-3000:]
    assert all("error" not in r and r["seconds"] > 0 for r in record["results"])
    assert (results / "last-run.raw.json").exists()
    assert "Interrupted after" in record_path.with_suffix(".md").read_text()


# Run in a child: the suite puts benches/ first on sys.path, where its
# `datasets` and `report` modules would shadow others for later tests.
ORDER_AND_SPREAD = r"""
import sys
from types import SimpleNamespace as NS
sys.path.insert(0, sys.argv[1])
import suite, report

assert suite.turned(["a", "b", "c"], 0) == ["a", "b", "c"]
assert suite.turned(["a", "b", "c"], 1) == ["b", "c", "a"]
assert suite.turned(["a", "b", "c"], 5) == ["c", "a", "b"]
assert suite.turned([], 3) == []

# Each round starts one reader later: over three rounds every reader runs
# first once, and the rounds stay whole (every reader once per round).
source = NS(name="d", readers=["fastingest", "fastingest-chunks", "pyarrow", "polars"])
run = NS(args=NS(profiles=["local"], runs=3, far_datasets=[]), sources=[source])
source.readers.remove("fastingest-chunks")
order = [reader for _, _, reader, _ in suite.plan_reads(run)]
assert order == [
    "fastingest", "pyarrow", "polars",
    "pyarrow", "polars", "fastingest",
    "polars", "fastingest", "pyarrow",
], order
# Steady-state rounds follow a dataset's fresh ones, turned the same way,
# for the readers issue 12 compares (no raw chunks).
source.readers.insert(1, "fastingest-chunks")
run.args.runs, run.args.steady_runs = 1, 2
plan = [(reader, mode) for _, _, reader, mode in suite.plan_reads(run)]
assert plan == [
    ("fastingest", "fresh"), ("fastingest-chunks", "fresh"), ("pyarrow", "fresh"),
    ("polars", "fresh"),
    ("fastingest", "steady"), ("pyarrow", "steady"), ("polars", "steady"),
    ("pyarrow", "steady"), ("polars", "steady"), ("fastingest", "steady"),
], plan

# The spread target: fastingest's slowest / quickest run against the best
# peer's, met only when no wider, and judged only over 7 runs or more.
def results(reader, seconds, mode=None, peak=1.0):
    extra = {"mode": mode} if mode else {}  # results saved before modes: fresh
    return [
        {"profile": "local", "dataset": "d", "reader": reader, "seconds": s, "rows": 1,
         "peak_mib": peak, **extra}
        for s in seconds
    ]
src = NS(name="d", size=10**8, rows=1, needed=10**8, fmt="parquet", folder=False, columns=None)
polars_seconds = [1.2, 1.3, 1.44, 1.3, 1.3, 1.3, 1.3]
for fi_seconds, met in (
    ([1.0, 1.1, 1.5, 1.1, 1.1, 1.1, 1.1], False),
    ([1.0, 1.05, 1.1, 1.05, 1.05, 1.05, 1.05], True),
    ([1.0, 1.1, 1.5], None),  # 3 runs: reported, not judged
):
    run = NS(
        args=NS(profiles=["local"]),
        sources=[src],
        results=results("fastingest", fi_seconds)
        + results("polars", polars_seconds[: len(fi_seconds)]),
        ceilings={},
    )
    rows = report.summarize(run)["rows"]
    (check,) = [c for c in report.targets(run, rows) if "spread" in c["target"]]
    assert check["met"] is met and check["at_most"], check
    assert abs(check["value"] - max(fi_seconds) / min(fi_seconds)) < 1e-9, check
    assert check["limit"] == 1.2, check
    assert f"of {len(fi_seconds)} runs" in check["target"], check
    verdict = {True: "| yes |", False: "| **no** |", None: "| not judged (< 7 runs) |"}[met]
    assert verdict in report.check_line(check), check

# Each mode has its own best peer and its own checks; peak RSS is held to
# polars' in the fresh mode only (a steady process keeps its high mark).
run = NS(
    args=NS(profiles=["local"]),
    sources=[src],
    results=results("fastingest", [1.0, 1.0, 1.0], "fresh", peak=120.0)
    + results("polars", [0.8, 0.8, 0.8], "fresh", peak=100.0)
    + results("fastingest", [0.5, 0.5, 0.5], "steady", peak=500.0)
    + results("polars", [0.6, 0.6, 0.6], "steady", peak=100.0),
    ceilings={},
)
rows = report.summarize(run)["rows"]
checks = {c["target"]: c for c in report.targets(run, rows)}
fresh, steady = (checks[f"local: fastingest >= 1.0x best peer{m}"]
                 for m in ("", " (steady state)"))
assert not fresh["met"] and abs(fresh["value"] - 0.8) < 1e-9, fresh
assert steady["met"] and abs(steady["value"] - 1.2) < 1e-9, steady
(rss,) = [c for t, c in checks.items() if "peak RSS" in t]
assert not rss["met"] and abs(rss["value"] - 1.2) < 1e-9 and rss["at_most"], rss
md = report.steady_headline(report.summarize(run))
assert len(md) == 3 and "| local | d |" in md[2] and "1.20x" in md[2], md

# A peer slower than `--slow` is read once, fresh: fastingest's steady reads
# then have nothing to be compared with, which is not judged, not missed; a
# fastingest read that failed is missed.
run.results = [r for r in run.results if not (r["reader"] == "polars" and r["mode"] == "steady")]
checks = {c["target"]: c for c in report.targets(run, report.summarize(run)["rows"])}
steady = checks["local: fastingest >= 1.0x best peer (steady state)"]
assert steady["met"] is None and steady["why"] == "no peer result in this mode", steady
assert "| not judged (no peer result in this mode) |" in report.check_line(steady), steady
run.results = [
    {**r, "error": "boom"} if r["reader"] == "fastingest" and r["mode"] == "fresh" else r
    for r in run.results
]
checks = {c["target"]: c for c in report.targets(run, report.summarize(run)["rows"])}
assert checks["local: fastingest >= 1.0x best peer"]["met"] is False, checks

# One large file through a link: decoded against the lesser of the link's
# ceiling and the local-warm read, for each file of 100 MB or more read whole
# (not `wide`, read in part).
big = NS(name="big", size=4 * 10**8, rows=1, needed=4 * 10**8, fmt="parquet", folder=False,
         columns=None)
wide = NS(name="wide", size=10**9, rows=1, needed=10**7, fmt="parquet", folder=False,
          columns=["c0"])
def timed(profile, dataset, seconds):
    return [{"profile": profile, "dataset": dataset, "reader": "fastingest", "seconds": s,
             "rows": 1, "peak_mib": 1.0} for s in seconds]
run = NS(
    args=NS(profiles=["local-warm", "cloud", "far"]),
    sources=[src, big, wide],
    # 400 MB: 1000 MB/s locally; 400 and 180 MB/s through links of 500 and 200.
    results=timed("local-warm", "big", [0.4]) + timed("cloud", "big", [1.0])
    + timed("far", "big", [400 / 180]) + timed("cloud", "wide", [0.1]),
    ceilings={"cloud": [500.0], "far": [190.0, 200.0, 210.0], "minio": [900.0]},
)
checks = [c for c in report.targets(run, report.summarize(run)["rows"]) if "large" in c["target"]]
assert [(c["target"].split(":")[0], c["dataset"], c["met"]) for c in checks] == [
    ("cloud", "big", False), ("far", "big", True)
], checks
assert abs(checks[0]["value"] - 0.8) < 1e-9 and abs(checks[1]["value"] - 0.9) < 1e-9, checks
# A ceiling measured on the file's own bytes (the median of its samples)
# replaces its profile's, for that profile only, in the overlap check and in
# the ratio of its rows to the ceiling; the report's header lists it.
run.file_ceilings = {"cloud|big": [380.0, 400.0, 450.0]}
summary = report.summarize(run)
checks = [c for c in report.targets(run, summary["rows"]) if "large" in c["target"]]
assert [(c["dataset"], c["met"]) for c in checks] == [("big", True), ("big", True)], checks
assert abs(checks[0]["value"] - 1.0) < 1e-9 and abs(checks[1]["value"] - 0.9) < 1e-9, checks
(cloud_big,) = [r for r in summary["rows"] if r["profile"] == "cloud" and r["dataset"] == "big"]
(cloud_wide,) = [r for r in summary["rows"] if r["profile"] == "cloud" and r["dataset"] == "wide"]
assert abs(cloud_big["vs_ceiling"] - 1.0) < 1e-9, cloud_big
assert abs(cloud_wide["vs_ceiling"] - 10_000 / 500) < 1e-9, cloud_wide  # 1 GB in 0.1 s
(line,) = report.own_ceilings_line(run)
assert line.endswith("MB/s: cloud big 400"), line
assert not report.has_own_ceiling(wide) and report.has_own_ceiling(big)
print("ok")
"""


def test_suite_turns_the_readers_order_and_checks_the_spread():
    out = subprocess.run(
        [sys.executable, "-c", ORDER_AND_SPREAD, str(ROOT / "benches")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-3000:]


def test_closing_the_proxy_s_links_ends_a_transfer_left_open_and_the_link_still_serves(s3, toxi):
    """The suite closes every connection through toxiproxy before each read
    (`CloudStore.reset_link`), so that what a reader that stopped mid-stream
    left in the proxy does not slow the next reader: a transfer still going
    through it ends, and the next request through the same address is
    answered in full."""
    import http.client
    import urllib.parse

    data = bytes(range(256)) * (16 * 1024)  # 4 MiB
    s3.put("bench/link.bin", data)
    toxi.add_toxic("s3", "bandwidth", {"rate": 64})  # KB/s: about a minute for the whole
    url = urllib.parse.urlsplit(s3.presign("bench/link.bin", proxied=True))

    def get() -> http.client.HTTPResponse:
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
        conn.request("GET", f"{url.path}?{url.query}")
        return conn.getresponse()

    left_open = get()
    assert left_open.status == 200 and left_open.read(1024) == data[:1024]
    started = time.monotonic()
    toxi.close_links("s3")
    try:
        rest = left_open.read()
    except (http.client.IncompleteRead, ConnectionError) as cut:
        rest = getattr(cut, "partial", b"")
    assert len(rest) < len(data) - 1024 and time.monotonic() - started < 10
    toxi.clear("s3")
    fresh = get()
    assert fresh.status == 200 and fresh.read() == data


def test_steady_bench_reports_each_read_and_its_requests(tmp_path, s3, toxi):
    """`bench_steady.py` reads a file from its own MinIO in processes of
    several reads, a peer beside fastingest, and reports each build's fresh
    and steady medians with the requests of fastingest's steady reads."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = 200_000
    pq.write_table(
        pa.table({"a": pa.array(range(rows)), "b": pa.array([float(i) for i in range(rows)])}),
        tmp_path / "f.parquet",
        row_group_size=rows // 4,
    )
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benches" / "bench_steady.py"),
            "--data",
            str(tmp_path),
            "--files",
            "f.parquet",
            "--profile",
            "minio",
            "--rounds",
            "2",
            "--reads",
            "3",
            "--warm",
            "2",
            "--peer",
            "polars-scan",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    # Two processes of three reads per build, each read's ms and requests.
    per_process = [line for line in out.stdout.splitlines() if line.startswith("round ")]
    assert len(per_process) == 4, out.stdout
    rows_of = {
        cells[2]: cells
        for line in out.stdout.splitlines()
        if line.startswith("| f.parquet |")
        for cells in [[c.strip() for c in line.split("|")]]
    }
    assert set(rows_of) == {"installed", "polars-scan"}, out.stdout
    fresh, steady = float(rows_of["installed"][3]), float(rows_of["installed"][4])
    assert fresh > 0 and steady > 0
    # fastingest's 4 steady reads, each counted with the requests it made.
    counts = re.findall(r"(\d+) ×(\d+)", rows_of["installed"][6])
    assert sum(int(n) for _, n in counts) == 4 and all(int(r) >= 1 for r, _ in counts)
    assert rows_of["polars-scan"][6] == "-"
