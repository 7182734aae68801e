"""One timed read in a fresh process, so that peak memory is the reader's own.
Prints one JSON line: seconds, rows, peak RSS and RSS before the read (MiB)."""

from __future__ import annotations

import json
import sys
import time


def peak_rss_mib() -> float:
    """This process's peak RSS (VmHWM). Not ru_maxrss: Linux carries that
    over from the parent across fork and exec."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def storage_options(s3: dict | None) -> dict | None:
    """fastingest's storage options for the benchmark's MinIO."""
    if not s3:
        return None
    return {
        "endpoint_url": s3["endpoint"],
        "access_key_id": s3["key"],
        "secret_access_key": s3["secret"],
        "region": "us-east-1",
        "allow_http": "true",
    }


def pyarrow_fs(url: str, s3: dict | None):
    """pyarrow's S3 filesystem and path for `url` (None and the path if local)."""
    if not s3:
        return None, url
    import pyarrow.fs as pafs

    fs = pafs.S3FileSystem(
        access_key=s3["key"],
        secret_key=s3["secret"],
        region="us-east-1",
        endpoint_override=s3["endpoint"].removeprefix("http://"),
        scheme="http",
    )
    return fs, url.removeprefix("s3://")


def main() -> None:
    spec = json.loads(sys.argv[1])
    reader, url, s3 = spec["reader"], spec["url"], spec.get("s3")
    report: dict = {}
    import pyarrow as pa  # noqa: F401 - imported before the baseline by every reader
    import pyarrow.parquet as pq

    if reader in ("fastingest", "fastingest-orc"):
        import fastingest

        opts = storage_options(s3)
        cfg = fastingest.Config(**spec.get("config", {}))
        cache = False
        if spec.get("cache"):
            c = spec["cache"]
            cache = fastingest.Cache(c["dir"], validate=c["validate"], min_free_bytes=0)
        stats = fastingest.ReadStats()
        report["stats"] = stats
        read = fastingest.read_orc if reader == "fastingest-orc" else fastingest.read_parquet

        def run():
            return read(url, storage_options=opts, config=cfg, cache=cache, stats=stats)

    elif reader == "pyarrow-orc":
        import pyarrow.orc as orc

        fs, path = pyarrow_fs(url, s3)

        def run():
            return orc.read_table(path, filesystem=fs)

    elif reader == "pyarrow":
        fs, path = pyarrow_fs(url, s3)

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
    peak = peak_rss_mib()
    report.update(seconds=seconds, rows=len(result), peak_mib=peak, before_mib=before)
    if "stats" in report:
        report["stats"] = report["stats"].to_dict()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
