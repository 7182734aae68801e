"""devtools.ranges, the loopback server of ranged GETs that the GPU
benchmark reads through where MinIO is not built: fastingest reads a file
through it as from disk, and it answers ranges as a store does."""

from __future__ import annotations

import urllib.error
import urllib.request

import pyarrow.parquet as pq
import pytest

import fastingest
from devtools.ranges import RangeServer

from .conftest import assert_tables_equal
from .datagen import numeric_table


def test_files_read_through_the_range_server_equal_the_files(tmp_path):
    path = tmp_path / "t.parquet"
    pq.write_table(numeric_table(50_000), path, row_group_size=10_000)
    data = path.read_bytes()
    server = RangeServer(tmp_path)
    try:
        url = f"{server.url}/t.parquet"
        stats = fastingest.ReadStats()
        got = fastingest.read_parquet(url, stats=stats, cache=False)
        assert_tables_equal(got, pq.read_table(path))
        assert stats.requests >= 1
        chunks = fastingest.read_chunks(url, cache=False)
        assert [bytes(memoryview(c)) for c in chunks] == [
            bytes(memoryview(c)) for c in fastingest.read_chunks(path)
        ]

        def get(headers: dict[str, str], name: str = "t.parquet") -> tuple[int, bytes, str]:
            request = urllib.request.Request(f"{server.url}/{name}", headers=headers)
            with urllib.request.urlopen(request, timeout=10) as r:
                return r.status, r.read(), r.headers.get("Content-Range", "")

        assert get({"Range": "bytes=10-19"}) == (206, data[10:20], f"bytes 10-19/{len(data)}")
        status, tail, _ = get({"Range": "bytes=-8"})
        assert (status, tail) == (206, data[-8:])
        assert get({})[:2] == (200, data)
        with pytest.raises(urllib.error.HTTPError, match="416"):
            get({"Range": f"bytes={len(data)}-"})
        with pytest.raises(urllib.error.HTTPError, match="404"):
            get({}, "../t.parquet.missing")
    finally:
        server.stop()
