"""Read speed of two builds of the extension, side by side: two cargo
profiles (is the faster-building `local` profile as fast as `release`?), or
the working tree against an earlier git revision (did a change cost speed?).

Builds (or reuses) one wheel per build, unpacks each into its own folder,
then reads the demo's dataset with each build, interleaved: a fresh process
per read (what a script pays) and the median of 5 reads in one process
(steady state).

    python benches/bench_profiles.py [--profiles local,release] [--runs 7]
    python benches/bench_profiles.py --profiles local,git:HEAD~1

A `git:<rev>` build is that revision, checked out in a temporary worktree and
built with the `local` profile (cargo shares the dependencies' artifacts).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

READ = """
import json, os, statistics, sys, time
import pyarrow
import fastingest
source, mode = sys.argv[1], sys.argv[2]
def once(**kw):
    t = time.perf_counter(); fastingest.read_parquet(source, **kw); return time.perf_counter() - t
shapes = {"all": {}, "filtered": {"columns": ["id", "value"], "filters": [("category", "<", 5)]}}
out = {}
for name, kw in shapes.items():
    if mode == "fresh":
        out[name] = once(**kw)
    else:
        once(**kw)
        out[name] = statistics.median(once(**kw) for _ in range(5))
print(json.dumps({"file": fastingest._fastingest.__file__, **out}))
"""


def wheel_for(build: str, out: Path) -> Path:
    """Builds the wheel of `build` (a profile, or `git:<rev>`) into `out`
    (cargo reuses what it can)."""
    source, profile = ROOT, build
    if build.startswith("git:"):
        source, profile = out.parent / f"src-{out.name}", "local"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(source), build[4:]], cwd=ROOT, check=True
        )
    flag = ["--release"] if profile == "release" else ["--profile", profile]
    try:
        subprocess.run(
            ["maturin", "build", "--quiet", *flag, "-o", str(out)], cwd=source, check=True
        )
    finally:
        if source != ROOT:
            subprocess.run(["git", "worktree", "remove", "--force", str(source)], cwd=ROOT)
    (wheel,) = sorted(out.glob("fastingest-*.whl"))
    return wheel


def unpack(wheel: Path, into: Path) -> Path:
    with zipfile.ZipFile(wheel) as z:
        z.extractall(into)
    return into


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--profiles", default="local,release")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--data", default=str(ROOT / ".demo" / "data"))
    args = ap.parse_args()
    source = str(Path(args.data) / "*.parquet")
    if not list(Path(args.data).glob("*.parquet")):
        raise SystemExit(f"no dataset in {args.data}: run `make demo` first")
    profiles = args.profiles.split(",")
    work = Path(tempfile.mkdtemp(prefix="fastingest-profiles-"))
    sites = {}
    for p in profiles:
        name = p.replace(":", "-").replace("/", "-")
        wheel = wheel_for(p, work / f"wheel-{name}")
        sites[p] = unpack(wheel, work / f"site-{name}")
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    results: dict[str, dict[str, dict[str, list[float]]]] = {
        mode: {p: {"all": [], "filtered": []} for p in profiles} for mode in ("fresh", "steady")
    }
    for _ in range(args.runs):
        for mode in ("fresh", "steady"):
            for p in profiles:
                run_env = {**env, "PYTHONPATH": str(sites[p])}
                line = subprocess.run(
                    [sys.executable, "-c", READ, source, mode],
                    env=run_env,
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout.strip()
                record = json.loads(line)
                assert record["file"].startswith(str(sites[p])), record["file"]
                for shape in ("all", "filtered"):
                    results[mode][p][shape].append(record[shape])
    print(f"{args.runs} interleaved runs; medians in seconds (min-max)\n")
    print("| mode | read | " + " | ".join(profiles) + " | ratio |")
    print("|---|---|" + "---:|" * (len(profiles) + 1))
    for mode, by_profile in results.items():
        for shape in ("all", "filtered"):
            meds = [statistics.median(by_profile[p][shape]) for p in profiles]
            cells = [
                f"{m:.3f} ({min(by_profile[p][shape]):.3f}-{max(by_profile[p][shape]):.3f})"
                for m, p in zip(meds, profiles, strict=True)
            ]
            ratio = meds[-1] / meds[0] if meds[0] else float("nan")
            print(f"| {mode} | {shape} | " + " | ".join(cells) + f" | {ratio:.2f} |")
    print(f"\nratio: {profiles[-1]} time / {profiles[0]} time (> 1: {profiles[0]} faster)")


if __name__ == "__main__":
    main()
