"""An emulated cloud object store: MinIO on loopback behind toxiproxy, with the
link shaped like a cloud region (latency and per-connection bandwidth).

    servers = Servers()
    store = CloudStore(servers)          # starts MinIO and toxiproxy
    url = store.upload(path)             # s3://bench/<name>
    store.shape("cloud")                 # or "far", or "minio" (no toxics)
    fastingest.read_parquet(url, storage_options=store.options("cloud"))
"""

from __future__ import annotations

from pathlib import Path

from .servers import MINIO_PASSWORD, MINIO_USER, Servers

BUCKET = "bench"

# Links toxiproxy emulates; rates are per connection, as a cloud store's are.
PROFILES: dict[str, dict | None] = {
    "minio": None,  # MinIO direct on loopback
    "cloud": {"latency": 30, "jitter": 5, "rate_kbps": 100_000},  # same region
    "far": {"latency": 100, "jitter": 10, "rate_kbps": 50_000},  # another region
}


def describe(profile: str) -> str:
    """The link of `profile` in words, for reports."""
    link = PROFILES[profile]
    if link is None:
        return "MinIO on loopback"
    return (
        f"{link['latency']} ms +-{link['jitter']} latency, "
        f"{link['rate_kbps'] // 1000} MB/s per connection"
    )


class CloudStore:
    """MinIO (with `minio_env`, e.g. an audit webhook) and toxiproxy in front
    of it, one bucket created. Raises RuntimeError when a server is missing."""

    def __init__(self, servers: Servers, minio_env: dict[str, str] | None = None) -> None:
        self.servers = servers
        servers.start_minio(minio_env)
        servers.start_toxiproxy()
        if servers.s3_endpoint is None or servers.toxi is None:
            raise RuntimeError(f"cannot start MinIO/toxiproxy: {servers.missing}")
        self.client = servers.minio_client()
        self.client.create_bucket(Bucket=BUCKET)

    def upload(self, path: Path, key: str | None = None) -> str:
        """Uploads one file; returns its s3:// URL."""
        key = key or path.name
        self.client.upload_file(str(path), BUCKET, key)
        return f"s3://{BUCKET}/{key}"

    def options(self, profile: str) -> dict[str, str]:
        """storage_options for MinIO direct ("minio") or through the proxy."""
        endpoint = (
            self.servers.s3_endpoint if profile == "minio" else self.servers.s3_proxy_endpoint
        )
        return {"key": MINIO_USER, "secret": MINIO_PASSWORD, "endpoint": endpoint}

    def reset_link(self) -> None:
        """Closes every connection through the proxy (disables it, then enables
        it again). A reader that stops mid-stream (a first-batch run, a read
        killed on a timeout) leaves toxiproxy 2.5 holding its links and their
        bytes: after 40 first-batch runs of a 256 MB file through the far
        profile it held 5.7 GiB, and a reader of many connections got its first
        batch in 447-542 ms instead of 364 (polars-scan 469-508 throughout);
        with the links closed, 359 again."""
        self.servers.toxi.close_links("s3")

    def shape(self, profile: str) -> None:
        """Sets toxiproxy's toxics to the profile's link."""
        toxi = self.servers.toxi
        toxi.clear("s3")
        link = PROFILES[profile]
        if link:
            toxi.add_toxic("s3", "latency", {"latency": link["latency"], "jitter": link["jitter"]})
            toxi.add_toxic("s3", "bandwidth", {"rate": link["rate_kbps"]})
