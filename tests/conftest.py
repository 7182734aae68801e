"""Shared fixtures: the conformance corpora, loopback servers, and helpers."""

from __future__ import annotations

import math
import os
import uuid
from pathlib import Path

import pyarrow as pa
import pytest

import fastingest
from devtools.servers import MINIO_PASSWORD, MINIO_USER, Servers

REQUIRE_SERVERS = os.environ.get("FASTINGEST_REQUIRE_SERVERS") == "1"
# Set on the GPU machine, where Torch, CuPy and a GPU must be present.
REQUIRE_GPU = os.environ.get("FASTINGEST_REQUIRE_GPU") == "1"


def need_torch():
    """PyTorch, or a skip saying it is absent (a failure where it must be)."""
    try:
        import torch
    except ImportError:
        if REQUIRE_GPU:
            pytest.fail("PyTorch is required (FASTINGEST_REQUIRE_GPU=1) but not installed")
        pytest.skip("PyTorch is not installed here (the GPU machine has it)")
    return torch


def need_cupy():
    """CuPy, or a skip saying it is absent (a failure where it must be)."""
    try:
        import cupy
    except ImportError:
        if REQUIRE_GPU:
            pytest.fail("CuPy is required (FASTINGEST_REQUIRE_GPU=1) but not installed")
        pytest.skip("CuPy is not installed here (the GPU machine has it)")
    return cupy


def need_gpu():
    """A CUDA device fastingest can use, or a skip saying why not."""
    if not fastingest.cuda_available():
        try:
            fastingest.cuda_device_count()
            reason = "no CUDA device"
        except fastingest.FastIngestError as e:
            reason = str(e)
        if REQUIRE_GPU:
            pytest.fail(f"a GPU is required (FASTINGEST_REQUIRE_GPU=1): {reason}")
        pytest.skip(f"no GPU: {reason}")


def _plain_maps(t: pa.DataType) -> pa.DataType:
    """pyarrow's Parquet reader names a map's entries field after the column,
    but any map imported through the Arrow C interface gets the standard name
    "entries"; this is the one schema difference fastingest cannot avoid."""
    if pa.types.is_map(t):
        return pa.map_(
            t.key_field.with_type(_plain_maps(t.key_type)),
            t.item_field.with_type(_plain_maps(t.item_type)),
            t.keys_sorted,
        )
    if pa.types.is_struct(t):
        return pa.struct(
            [t.field(i).with_type(_plain_maps(t.field(i).type)) for i in range(t.num_fields)]
        )
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        item = t.value_field.with_type(_plain_maps(t.value_type))
        return pa.list_(item) if pa.types.is_list(t) else pa.large_list(item)
    return t


def _plain_schema(s: pa.Schema) -> pa.Schema:
    fields = [f.with_type(_plain_maps(f.type)) for f in s]
    return pa.schema(fields, metadata=s.metadata)


def assert_tables_equal(got: pa.Table, want: pa.Table) -> None:
    """Same schema (metadata included), same rows, same order."""
    if any("map<" in str(f.type) for f in want.schema):
        want = want.cast(_plain_schema(want.schema))
        got = got.cast(_plain_schema(got.schema))
    assert got.schema.equals(want.schema, check_metadata=True), (
        f"schema differs:\n--- fastingest\n{got.schema}\n--- pyarrow\n{want.schema}"
    )
    assert got.num_rows == want.num_rows
    try:
        if got.combine_chunks().equals(want.combine_chunks()):
            return
    except pa.ArrowInvalid:
        pass  # pyarrow cannot combine dictionaries with null values: compare rows

    # Table.equals treats NaN != NaN; compare values with NaN equal to NaN.
    assert _nan_equal(got.to_pylist(), want.to_pylist()), "rows differ"


def _nan_equal(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_nan_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_nan_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def read_in_forked_child(read, timeout: float = 60.0) -> bytes:
    """Forks; the child runs `read()` (returning bytes) and reports it through
    a pipe. Fails the test if the child hangs, which is what a runtime or
    connection pool inherited from the parent would do."""
    import time

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.write(w, read())
        finally:
            os._exit(0)
    os.close(w)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.read(r, 1000)
        time.sleep(0.05)
    os.kill(pid, 9)
    pytest.fail("a read in a forked child hung")


@pytest.fixture(scope="session")
def corpora() -> Path:
    """The shared conformance corpora. FASTINGEST_CORPORA names them; when it
    is set the folder must exist (CI), when unset the tests skip."""
    value = os.environ.get("FASTINGEST_CORPORA")
    if not value:
        pytest.skip("FASTINGEST_CORPORA is not set: conformance corpora unavailable")
    path = Path(value)
    if not (path / "parquet-testing").is_dir():
        pytest.fail(f"FASTINGEST_CORPORA={value} does not hold parquet-testing/")
    return path


@pytest.fixture(scope="session")
def servers():
    s = Servers()
    try:
        s.start_minio()
        s.start_toxiproxy()
        s.start_gcs()
        s.start_azurite()
        yield s
    finally:
        s.stop()


def _need(servers: Servers, name: str, ok: bool) -> None:
    if ok:
        return
    reason = servers.missing.get(name, f"{name} is not running")
    if REQUIRE_SERVERS:
        pytest.fail(f"{name} is required (FASTINGEST_REQUIRE_SERVERS=1): {reason}")
    pytest.skip(reason)


class S3:
    """A fresh MinIO bucket, reachable directly and through toxiproxy."""

    def __init__(self, servers: Servers) -> None:
        self.servers = servers
        self.bucket = f"t-{uuid.uuid4().hex[:12]}"
        self.client = servers.minio_client()
        self.client.create_bucket(Bucket=self.bucket)

    def options(self, *, proxied: bool = False) -> dict[str, str]:
        endpoint = self.servers.s3_proxy_endpoint if proxied else self.servers.s3_endpoint
        return {
            "endpoint_url": endpoint,
            "access_key_id": MINIO_USER,
            "secret_access_key": MINIO_PASSWORD,
            "region": "us-east-1",
            "allow_http": "true",
        }

    def put(self, key: str, data: bytes) -> str:
        self.client.put_object(Bucket=self.bucket, Key=key, Body=data)
        return self.url(key)

    def put_file(self, key: str, path: Path) -> str:
        return self.put(key, Path(path).read_bytes())

    def url(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    def presign(self, key: str, *, proxied: bool = False) -> str:
        client = self.servers.minio_client(proxied=True) if proxied else self.client
        return client.generate_presigned_url(
            "get_object", Params={"Bucket": self.bucket, "Key": key}, ExpiresIn=600
        )


@pytest.fixture
def s3(servers) -> S3:
    _need(servers, "minio", servers.s3_endpoint is not None)
    return S3(servers)


@pytest.fixture
def toxi(servers, s3):
    _need(servers, "toxiproxy", servers.toxi is not None)
    servers.toxi.clear("s3")
    yield servers.toxi
    # Every connection through the proxy is closed before the toxics are
    # removed: a removal waits for the toxic's links, and one link held up
    # by a connection still open (a `limit_data` test) kept toxiproxy's API
    # past its 25 s limit (HTTP 503 for this and the next tests' calls).
    servers.toxi.set_enabled("s3", False)
    servers.toxi.clear("s3")
    servers.toxi.set_enabled("s3", True)


@pytest.fixture
def gcs(servers) -> Servers:
    _need(servers, "fake-gcs-server", servers.gcs_endpoint is not None)
    return servers


@pytest.fixture
def azure(servers) -> Servers:
    _need(servers, "azurite", servers.azure_endpoint is not None)
    return servers


@pytest.fixture
def fast_retry_config() -> fastingest.Config:
    return fastingest.Config(
        max_retries=6,
        retry_backoff=0.05,
        retry_backoff_max=0.3,
        request_timeout=5,
        connect_timeout=2,
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks every test that uses the loopback servers `remote`, so that
    `-m "not remote"` (`make quick`) runs the rest without starting them."""
    for item in items:
        if "servers" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.remote)
