"""One timed read in a fresh process, so that peak memory is the reader's own.
Prints one JSON line: seconds, rows, peak RSS and RSS before the read (MiB)."""

from __future__ import annotations

import json
import resource
import sys
import time


def rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def main() -> None:
    spec = json.loads(sys.argv[1])
    reader, url, s3 = spec["reader"], spec["url"], spec.get("s3")
    report: dict = {}
    import pyarrow as pa  # noqa: F401 - imported before the baseline by every reader
    import pyarrow.parquet as pq

    if reader == "fastingest":
        import fastingest

        opts = None
        if s3:
            opts = {
                "endpoint_url": s3["endpoint"],
                "access_key_id": s3["key"],
                "secret_access_key": s3["secret"],
                "region": "us-east-1",
                "allow_http": "true",
            }
        cfg = fastingest.Config(**spec.get("config", {}))
        cache = False
        if spec.get("cache"):
            c = spec["cache"]
            cache = fastingest.Cache(c["dir"], validate=c["validate"], min_free_bytes=0)
        stats = fastingest.ReadStats()
        report["stats"] = stats

        def run():
            return fastingest.read_parquet(
                url, storage_options=opts, config=cfg, cache=cache, stats=stats
            )

    elif reader == "pyarrow":
        fs = None
        path = url
        if s3:
            import pyarrow.fs as pafs

            fs = pafs.S3FileSystem(
                access_key=s3["key"],
                secret_key=s3["secret"],
                region="us-east-1",
                endpoint_override=s3["endpoint"].removeprefix("http://"),
                scheme="http",
            )
            path = url.removeprefix("s3://")

        def run():
            return pq.read_table(path, filesystem=fs)

    elif reader == "polars":
        import polars as pl

        opts = None
        if s3:
            opts = {
                "aws_endpoint_url": s3["endpoint"],
                "aws_access_key_id": s3["key"],
                "aws_secret_access_key": s3["secret"],
                "aws_region": "us-east-1",
                "aws_allow_http": "true",
            }

        def run():
            return pl.read_parquet(url, storage_options=opts)

    else:
        raise SystemExit(f"unknown reader {reader}")

    before = rss_mib()
    started = time.perf_counter()
    result = run()
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    report.update(seconds=seconds, rows=len(result), peak_mib=peak, before_mib=before)
    if "stats" in report:
        report["stats"] = report["stats"].to_dict()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
