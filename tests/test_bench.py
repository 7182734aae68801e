"""The benchmark suite's entry point works: its smallest case (local disk,
one small dataset, four readers, one run) runs end to end and writes the
JSON, the Markdown summary and the plots. CI runs no benchmark beyond this."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_suite_smallest_case_runs_end_to_end(tmp_path):
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benches" / "suite.py"),
            "--smallest",
            "--out",
            str(tmp_path / "results"),
            "--data",
            str(tmp_path / "data"),
        ],
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
    fi = [r for r in record["summary"]["rows"] if r["reader"] == "fastingest"]
    assert fi and fi[0]["mbps"] > 0 and fi[0]["vs_best_peer"] > 0
    # fastingest's own counters: the whole needed bytes, a handful of requests.
    assert fi[0]["requests"] >= 1
    assert record["machine"]["cores"] >= 1 and record["versions"]["pyarrow"]
    assert record["first_batch"], "time to first batch was not measured"
    md = record_path.with_suffix(".md").read_text()
    assert "| local |" in md and "fastingest" in md
    assert list(results.glob("suite-*-throughput.png"))
