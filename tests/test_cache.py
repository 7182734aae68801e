"""The on-disk cache against a real MinIO (through toxiproxy where requests
must be slowed, counted or refused): warm reads, validation policies, many
processes, crashes, damaged entries, eviction and full disks."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fastingest
from devtools.servers import MINIO_PASSWORD

from .conftest import assert_tables_equal
from .datagen import numeric_table, parquet_bytes

REPO = Path(__file__).resolve().parent.parent

# A child process that reads with a cache and prints its stats and a digest.
CHILD = """
import hashlib, json, sys, fastingest
source, options, cache_dir, validate = json.loads(sys.argv[1])
stats = fastingest.ReadStats()
cfg = fastingest.Config(request_timeout=30, max_retries=2, retry_backoff=0.05)
cache = fastingest.Cache(cache_dir, validate=validate, min_free_bytes=0)
table = fastingest.read_parquet(source, storage_options=options, config=cfg, stats=stats,
                                cache=cache)
sink = __import__("pyarrow").BufferOutputStream()
import pyarrow.ipc as ipc
with ipc.new_stream(sink, table.schema) as w:
    w.write_table(table)
digest = hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest()
print(json.dumps({"stats": stats.to_dict(), "digest": digest, "rows": table.num_rows}))
"""


def child_argv(source, options, cache_dir, validate="once") -> list[str]:
    return [sys.executable, "-c", CHILD, json.dumps([source, options, str(cache_dir), validate])]


def read_in_child(source, options, cache_dir, validate="once") -> dict:
    out = subprocess.run(
        child_argv(source, options, cache_dir, validate),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def digest(table: pa.Table) -> str:
    import hashlib

    import pyarrow.ipc as ipc

    sink = pa.BufferOutputStream()
    with ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest()


def entry_files(cache_dir: Path) -> list[Path]:
    """The cached ranges (named <start>-<end>) in a cache directory."""
    return [
        p
        for p in (cache_dir / "objects").glob("*/*/*")
        if p.is_file() and not p.name.endswith(".lock")
    ]


def cache(path: Path, **kwargs) -> fastingest.Cache:
    # The test disk may be nearly full; the min_free tests set their own.
    kwargs.setdefault("min_free_bytes", 0)
    return fastingest.Cache(path, **kwargs)


@pytest.fixture
def dataset(s3):
    """Three files under one prefix, several row groups each."""
    tables = [numeric_table(60_000, seed=i) for i in range(3)]
    for i, t in enumerate(tables):
        s3.put(f"ds/part-{i}.parquet", parquet_bytes(t, row_group_size=20_000))
    return tables


def test_warm_immutable_read_makes_no_request(s3, toxi, tmp_path, dataset, fast_retry_config):
    options = s3.options(proxied=True)
    glob = s3.url("ds/*.parquet")
    want = pa.concat_tables(dataset)
    cold = fastingest.ReadStats()
    got = fastingest.read_parquet(
        glob, storage_options=options, cache=cache(tmp_path, validate="immutable"), stats=cold
    )
    assert_tables_equal(got, want)
    assert cold.requests > 0 and cold.cache_misses > 0

    # Every request now fails: the proxy refuses connections.
    toxi.set_enabled("s3", False)
    for c in (cache(tmp_path, validate="immutable"), cache(tmp_path, validate="immutable")):
        warm = fastingest.ReadStats()
        got = fastingest.read_parquet(
            glob, storage_options=options, cache=c, stats=warm, config=fast_retry_config
        )
        assert_tables_equal(got, want)
        assert warm.requests == 0, warm
        assert warm.bytes_fetched == 0
        assert warm.bytes_from_cache >= cold.bytes_needed
    # A new process, too (the glob's listing is cached under "immutable").
    report = read_in_child(glob, options, tmp_path, "immutable")
    assert report["stats"]["requests"] == 0
    assert report["digest"] == digest(got)


def test_once_asks_once_per_object_per_process(s3, tmp_path, dataset):
    options = s3.options()
    urls = [s3.url(f"ds/part-{i}.parquet") for i in range(3)]
    want = pa.concat_tables(dataset)
    c = cache(tmp_path)  # validate="once"
    fastingest.read_parquet(urls, storage_options=options, cache=c)
    again = fastingest.ReadStats()
    assert_tables_equal(
        fastingest.read_parquet(urls, storage_options=options, cache=c, stats=again), want
    )
    assert again.requests == 0, "validated by this process already"

    # A new process validates: one listing of the common prefix for the
    # three objects named one by one, one HEAD for a single object, and the
    # glob's own listing for a glob.
    for source, expected in ((urls, 1), (urls[0], 1), (s3.url("ds/*.parquet"), 1)):
        report = read_in_child(source, options, tmp_path)
        assert report["stats"]["requests"] == expected, (source, report["stats"])
        assert report["stats"]["bytes_fetched"] == 0


@pytest.mark.parametrize("policy", ["once", "always", "ttl"])
def test_changed_object_is_never_served_stale(s3, tmp_path, policy):
    key = "changing/t.parquet"
    old, new = numeric_table(30_000, seed=1), numeric_table(30_000, seed=2)
    s3.put(key, parquet_bytes(old))
    validate = {"once": "once", "always": "always", "ttl": 1}[policy]
    c = cache(tmp_path, validate=validate)
    url, options = s3.url(key), s3.options()
    assert_tables_equal(fastingest.read_parquet(url, storage_options=options, cache=c), old)
    s3.put(key, parquet_bytes(new))
    if policy == "once":
        report = read_in_child(url, options, tmp_path, "once")
        assert report["digest"] == digest(fastingest.read_parquet(url, storage_options=options))
        assert report["stats"]["bytes_fetched"] > 0
    else:
        if policy == "ttl":
            time.sleep(1.1)
        assert_tables_equal(fastingest.read_parquet(url, storage_options=options, cache=c), new)
    # The old version's bytes are gone from the cache.
    versions = list((tmp_path / "objects").glob("*/*/"))
    assert len(versions) == 1, versions


def test_immutable_trusts_the_cache_even_after_a_change(s3, tmp_path):
    """What "immutable" promises: the cached version is served, no request."""
    key = "frozen/t.parquet"
    old = numeric_table(10_000, seed=1)
    s3.put(key, parquet_bytes(old))
    c = cache(tmp_path, validate="immutable")
    fastingest.read_parquet(s3.url(key), storage_options=s3.options(), cache=c)
    s3.put(key, parquet_bytes(numeric_table(10_000, seed=2)))
    stats = fastingest.ReadStats()
    got = fastingest.read_parquet(s3.url(key), storage_options=s3.options(), cache=c, stats=stats)
    assert_tables_equal(got, old)
    assert stats.requests == 0


def test_many_processes_fill_one_cache_once(s3, toxi, tmp_path):
    """Eight processes start on one empty cache at once: identical results,
    and every range is fetched by exactly one of them."""
    table = numeric_table(300_000, seed=5)
    s3.put("many/t.parquet", parquet_bytes(table, row_group_size=50_000, compression="none"))
    toxi.add_toxic("s3", "latency", {"latency": 30, "jitter": 5})
    source, options = s3.url("many/t.parquet"), s3.options(proxied=True)
    procs = [
        subprocess.Popen(
            child_argv(source, options, tmp_path),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(8)
    ]
    reports = []
    for p in procs:
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, err
        reports.append(json.loads(out))
    want = fastingest.read_parquet(source, storage_options=s3.options())
    assert_tables_equal(want, table)
    assert {r["digest"] for r in reports} == {digest(want)}
    entries = entry_files(tmp_path)
    misses = sum(r["stats"]["cache_misses"] for r in reports)
    fetched = sum(r["stats"]["bytes_fetched"] for r in reports)
    detail = json.dumps([r["stats"] for r in reports]) + str(sorted(p.name for p in entries))
    assert misses == len(entries), detail
    assert fetched == sum(p.stat().st_size - 40 for p in entries), detail
    assert list((tmp_path / "tmp").iterdir()) == []


def test_killed_writer_leaves_nothing_trusted(s3, toxi, tmp_path):
    table = numeric_table(400_000, seed=6)
    s3.put("kill/t.parquet", parquet_bytes(table, row_group_size=25_000, compression="none"))
    # Slow enough that the cache is being filled when the kill lands.
    toxi.add_toxic("s3", "bandwidth", {"rate": 2000})  # KB/s
    source, options = s3.url("kill/t.parquet"), s3.options(proxied=True)
    child = subprocess.Popen(
        child_argv(source, options, tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(entry_files(tmp_path)) < 3:
        time.sleep(0.02)
    child.send_signal(signal.SIGKILL)
    child.wait()
    partial = len(entry_files(tmp_path))
    assert partial >= 3, "the child was killed before it cached anything"
    # What a writer killed mid-write leaves: an unlocked temporary file.
    (tmp_path / "tmp" / "999999-0-dead.tmp").write_bytes(b"half an entry")
    toxi.clear("s3")
    stats = fastingest.ReadStats()
    got = fastingest.read_parquet(
        source, storage_options=options, cache=cache(tmp_path), stats=stats
    )
    assert_tables_equal(got, table)
    assert list((tmp_path / "tmp").iterdir()) == [], "start-up removes crashed writers' files"
    assert stats.cache_corrupt == 0
    assert stats.cache_hits >= partial - 1


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty"])
def test_damaged_entries_are_detected_and_refetched(s3, tmp_path, damage):
    table = numeric_table(100_000, seed=7)
    url = s3.put("dmg/t.parquet", parquet_bytes(table, row_group_size=25_000))
    options = s3.options()
    c = cache(tmp_path, validate="immutable")
    fastingest.read_parquet(url, storage_options=options, cache=c)
    victims = sorted(entry_files(tmp_path), key=lambda p: p.stat().st_size)[-2:]
    for p in victims:
        raw = bytearray(p.read_bytes())
        if damage == "truncate":
            raw = raw[: len(raw) // 2]
        elif damage == "flip":
            raw[len(raw) // 2] ^= 0x01
        else:
            raw = bytearray()
        p.write_bytes(bytes(raw))
    stats = fastingest.ReadStats()
    with pytest.warns(fastingest.CacheWarning, match="damaged"):
        got = fastingest.read_parquet(url, storage_options=options, cache=c, stats=stats)
    assert_tables_equal(got, table)
    assert stats.cache_corrupt == len(victims)
    assert stats.bytes_fetched > 0
    # Refetched and cached again, whole.
    again = fastingest.ReadStats()
    fastingest.read_parquet(url, storage_options=options, cache=c, stats=again)
    assert again.cache_corrupt == 0 and again.requests == 0


def test_eviction_keeps_the_limit_under_concurrent_readers(s3, tmp_path):
    tables = [numeric_table(50_000, seed=10 + i) for i in range(6)]
    urls = [
        s3.put(f"ev/p{i}.parquet", parquet_bytes(t, compression="none"))
        for i, t in enumerate(tables)
    ]
    sizes = [len(parquet_bytes(t, compression="none")) for t in tables]
    limit = int(sum(sizes) * 0.5)
    c = cache(tmp_path, max_bytes=limit)
    errors: list[BaseException] = []

    def reader(k: int) -> None:
        try:
            for j in range(6):
                i = (k + j) % len(urls)
                got = fastingest.read_parquet(urls[i], storage_options=s3.options(), cache=c)
                assert_tables_equal(got, tables[i])
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=reader, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    # Eviction runs in the background: give it a moment to finish.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and c.info()["bytes"] > limit:
        time.sleep(0.05)
    info = c.info()
    assert 0 < info["bytes"] <= limit, (info, limit)
    assert info["hits"] > 0 and info["misses"] > 0


def test_a_full_disk_degrades_to_uncached_reads(s3, tmp_path):
    table = numeric_table(20_000)
    url = s3.put("full/t.parquet", parquet_bytes(table))
    c = fastingest.Cache(tmp_path, min_free_bytes=1 << 62)  # more than any disk has free
    with pytest.warns(fastingest.CacheWarning, match="min_free_bytes") as caught:
        got = fastingest.read_parquet(url, storage_options=s3.options(), cache=c)
    assert_tables_equal(got, table)
    assert len(caught) == 1
    assert entry_files(tmp_path) == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once per cache, not on every read
        assert_tables_equal(
            fastingest.read_parquet(url, storage_options=s3.options(), cache=c), table
        )


def test_an_unusable_directory_degrades_to_uncached_reads(s3, tmp_path, caplog):
    table = numeric_table(5_000)
    url = s3.put("nodir/t.parquet", parquet_bytes(table))
    blocker = tmp_path / "a-file"
    blocker.write_bytes(b"")
    with pytest.warns(fastingest.CacheWarning, match="not usable"):
        got = fastingest.read_parquet(
            url, storage_options=s3.options(), cache=str(blocker / "cache")
        )
    assert_tables_equal(got, table)
    # The same warning reaches logging, for programs that collect logs.
    logged = [r for r in caplog.records if r.name == "fastingest.cache"]
    assert logged and "not usable" in logged[0].getMessage()
    assert logged[0].levelname == "WARNING"


def test_cache_is_private_and_holds_no_credentials(s3, tmp_path):
    table = numeric_table(5_000)
    key = "secret/odd name, v1.parquet"
    s3.put(key, parquet_bytes(table))
    root = tmp_path / "c"
    c = cache(root)
    fastingest.read_parquet(s3.url(key), storage_options=s3.options(), cache=c)
    presigned = s3.presign(key)
    fastingest.read_parquet(presigned, cache=c)
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    signature = presigned.split("X-Amz-Signature=")[1].split("&")[0]
    for p in root.rglob("*"):
        assert p.resolve().is_relative_to(root.resolve())
        if p.is_file():
            data = p.read_bytes()
            assert MINIO_PASSWORD.encode() not in data, p
            assert signature.encode() not in data, p


def test_presigned_urls_of_one_object_share_entries(s3, tmp_path):
    table = numeric_table(20_000)
    key = "pre/t.parquet"
    s3.put(key, parquet_bytes(table))
    c = cache(tmp_path, validate="immutable")
    first = s3.client.generate_presigned_url(
        "get_object", Params={"Bucket": s3.bucket, "Key": key}, ExpiresIn=600
    )
    second = s3.client.generate_presigned_url(
        "get_object", Params={"Bucket": s3.bucket, "Key": key}, ExpiresIn=900
    )
    assert first != second
    fastingest.read_parquet(first, cache=c)
    stats = fastingest.ReadStats()
    assert_tables_equal(fastingest.read_parquet(second, cache=c, stats=stats), table)
    assert stats.requests == 0


def test_a_range_partly_cached_fetches_only_the_rest(s3, tmp_path):
    n = 50_000
    table = pa.table({f"c{i:02d}": pa.array(range(i, i + n), pa.int64()) for i in range(10)})
    url = s3.put("part/w.parquet", parquet_bytes(table, compression="none"))
    c = cache(tmp_path, validate="immutable")
    fastingest.read_parquet(url, columns=["c03"], storage_options=s3.options(), cache=c)
    stats = fastingest.ReadStats()
    got = fastingest.read_parquet(
        url, columns=["c03", "c04"], storage_options=s3.options(), cache=c, stats=stats
    )
    assert_tables_equal(got, table.select(["c03", "c04"]))
    chunk = pq.ParquetFile(pa.BufferReader(parquet_bytes(table, compression="none")))
    c04 = chunk.metadata.row_group(0).column(4).total_compressed_size
    assert stats.cache_hits >= 1
    assert 0 < stats.bytes_fetched <= c04 + 64 * 1024


def test_a_later_read_planned_otherwise_reads_each_entry_once(s3, tmp_path):
    # The filling read's requests (2 MiB: two column chunks each) and a later
    # read's (1 MiB: one chunk each) differ, as a near store's and a read
    # served by the cache did: the later read still reads each entry once,
    # whole, not once for each of its halves.
    import io

    rng = __import__("numpy").random.default_rng(7)
    table = pa.table({f"c{i:02d}": rng.integers(0, 1 << 62, 87_500) for i in range(32)})
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="none", use_dictionary=False)
    url = s3.put("planned/w.parquet", buf.getvalue())
    c = cache(tmp_path, validate="immutable")
    opts = s3.options()
    fill = fastingest.Config(slice_size="2M", near_slice_size="2M")
    fastingest.read_parquet(url, storage_options=opts, cache=c, config=fill)
    entries = entry_files(tmp_path)
    assert len(entries) >= 16, [p.name for p in entries]
    stats = fastingest.ReadStats()
    later = fastingest.Config(slice_size="1M", near_slice_size="1M")
    got = fastingest.read_parquet(url, storage_options=opts, cache=c, config=later, stats=stats)
    assert_tables_equal(got, table)
    assert stats.requests == 0
    # One hit an entry (the tail's entry may serve the last chunk's end too).
    assert stats.cache_hits <= len(entries) + 1, (stats.cache_hits, len(entries))


def test_a_range_covered_by_several_entries_is_read_from_them_alone(s3, tmp_path):
    # The second read's range spans two entries (c03's, and c04's fetched as
    # the gap): later reads of it are served from both, with no request and
    # without waiting for the range's lock (held here, as by a process
    # fetching it: a read that took it would wait out the 30 s timeout).
    n = 50_000
    table = pa.table({f"c{i:02d}": pa.array(range(i, i + n), pa.int64()) for i in range(10)})
    url = s3.put("cover/w.parquet", parquet_bytes(table, compression="none"))
    c = cache(tmp_path, validate="immutable")
    opts = s3.options()
    fastingest.read_parquet(url, columns=["c03"], storage_options=opts, cache=c)
    fastingest.read_parquet(url, columns=["c03", "c04"], storage_options=opts, cache=c)
    held = [open(p, "rb+") for p in (tmp_path / "objects").rglob("*.lock")]  # noqa: SIM115
    try:
        for f in held:
            fcntl.flock(f, fcntl.LOCK_EX)
        stats = fastingest.ReadStats()
        started = time.monotonic()
        got = fastingest.read_parquet(
            url,
            columns=["c03", "c04"],
            storage_options=opts,
            cache=c,
            config=fastingest.Config(request_timeout=30),
            stats=stats,
        )
        waited = time.monotonic() - started
    finally:
        for f in held:
            f.close()
    assert held, "the first reads took locks"
    assert_tables_equal(got, table.select(["c03", "c04"]))
    assert stats.requests == 0 and stats.cache_hits >= 2
    assert waited < 15, f"waited {waited:.1f} s for a lock"
    # A damaged entry among them: detected, its piece fetched again, right.
    c04 = max(entry_files(tmp_path), key=lambda p: int(p.name.split("-")[0]))
    raw = bytearray(c04.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    c04.write_bytes(bytes(raw))
    stats = fastingest.ReadStats()
    with pytest.warns(fastingest.CacheWarning, match="damaged"):
        got = fastingest.read_parquet(
            url, columns=["c03", "c04"], storage_options=opts, cache=c, stats=stats
        )
    assert_tables_equal(got, table.select(["c03", "c04"]))
    assert stats.cache_corrupt == 1 and stats.bytes_fetched > 0


def test_local_files_are_not_cached(tmp_path):
    path = tmp_path / "t.parquet"
    pq.write_table(numeric_table(1_000), path)
    c = cache(tmp_path / "c")
    fastingest.read_parquet(str(path), cache=c)
    assert c.info()["entries"] == 0


def test_environment_turns_the_cache_on(s3, tmp_path):
    table = numeric_table(5_000)
    url = s3.put("env/t.parquet", parquet_bytes(table))
    code = (
        "import json, sys, fastingest\n"
        "t = fastingest.read_parquet(sys.argv[1], storage_options=json.loads(sys.argv[2]))\n"
        "print(t.num_rows)\n"
    )
    env = dict(os.environ, FASTINGEST_CACHE_DIR=str(tmp_path), FASTINGEST_CACHE_MIN_FREE_BYTES="0")
    out = subprocess.run(
        [sys.executable, "-c", code, url, json.dumps(s3.options())],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert out.stdout.strip() == "5000", out.stderr
    assert entry_files(tmp_path)


def test_command_line_info_prune_clear(s3, tmp_path):
    url = s3.put("cli/t.parquet", parquet_bytes(numeric_table(50_000), row_group_size=10_000))
    c = cache(tmp_path)
    fastingest.read_parquet(url, storage_options=s3.options(), cache=c)
    fastingest.read_parquet(url, storage_options=s3.options(), cache=c)

    def cli(*args: str) -> dict:
        out = subprocess.run(
            [sys.executable, "-m", "fastingest", "cache", *args, "--dir", str(tmp_path), "--json"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    info = cli("info")
    assert info["entries"] == len(entry_files(tmp_path)) > 1
    assert info["objects"] == 1
    assert info["hits"] > 0 and 0 < info["hit_ratio"] < 1
    total = info["bytes"]
    pruned = cli("prune", "--max-bytes", str(total // 2))
    assert pruned["entries_removed"] > 0
    assert cli("info")["bytes"] <= total // 2
    cli("clear")
    assert cli("info")["entries"] == 0
    # The console script installed with the package is the same command.
    script = Path(sys.executable).parent / "fastingest"
    out = subprocess.run(
        [str(script), "cache", "info", "--dir", str(tmp_path), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0 and json.loads(out.stdout)["entries"] == 0, out.stderr
    # A directory that is not a cache is left alone.
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("x")
    out = subprocess.run(
        [sys.executable, "-m", "fastingest", "cache", "clear", "--dir", str(other)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "not a fastingest cache" in out.stderr
    assert (other / "keep.txt").exists()


def test_bad_cache_arguments_are_clear_errors(tmp_path):
    with pytest.raises(fastingest.InvalidArgumentError, match="validate"):
        fastingest.Cache(tmp_path, validate="sometimes")
    with pytest.raises(fastingest.InvalidArgumentError, match="max_bytes"):
        fastingest.Cache(tmp_path, max_bytes="lots")
    with pytest.raises(fastingest.InvalidArgumentError, match="cache must be"):
        fastingest.read_parquet("x.parquet", cache=42)
    c = fastingest.Cache(tmp_path, max_bytes="2G", validate=60)
    assert c.max_bytes == 2 << 30 and c.validate == "60"
    # A relative directory is made absolute when the cache opens.
    cwd = os.getcwd()
    try:
        os.chdir(tmp_path)
        assert Path(fastingest.Cache("rel").path) == tmp_path / "rel"
    finally:
        os.chdir(cwd)


@pytest.fixture(params=["s3", "gcs", "azure"])
def store(request, servers, tmp_path):
    """(URL prefix, storage options, upload) for each object store."""
    import uuid

    from .conftest import _need

    name = request.param
    run = uuid.uuid4().hex[:8]
    if name == "s3":
        _need(servers, "minio", servers.s3_endpoint is not None)
        from .conftest import S3

        s3 = S3(servers)
        return s3.url(f"v{run}"), s3.options(), lambda key, data: s3.put(f"v{run}/{key}", data)
    if name == "gcs":
        _need(servers, "fake-gcs-server", servers.gcs_endpoint is not None)
        opts = {"service_account_path": str(servers.gcs_service_account()), "allow_http": "true"}
        return (
            f"gs://test-bucket/v{run}",
            opts,
            lambda key, data: servers.gcs_upload("test-bucket", f"v{run}/{key}", data),
        )
    _need(servers, "azurite", servers.azure_endpoint is not None)
    servers.azure_create_container("cached")
    opts = servers.azure_options()
    return (
        f"az://cached/v{run}",
        opts,
        lambda key, data: fastingest._fastingest._put(f"az://cached/v{run}/{key}", data, opts),
    )


def test_every_store_validates_without_refetching(store, tmp_path):
    """Listings and HEADs report versions the cache matches against the ones
    its GETs recorded: a new process validates, and fetches no byte again."""
    prefix, options, upload = store
    tables = [numeric_table(8_000, seed=i) for i in range(2)]
    for i, t in enumerate(tables):
        upload(f"p{i}.parquet", parquet_bytes(t, row_group_size=2_000))
    glob, one = f"{prefix}/*.parquet", f"{prefix}/p0.parquet"
    fastingest.read_parquet(glob, storage_options=options, cache=cache(tmp_path))
    for source in (glob, one):
        report = read_in_child(source, options, tmp_path)
        assert report["stats"]["requests"] == 1, (source, report["stats"])
        assert report["stats"]["bytes_fetched"] == 0, (source, report["stats"])
        assert report["stats"]["cache_misses"] == 0


def test_every_call_reads_through_the_cache(s3, tmp_path):
    """read_parquet_async, plan_parquet and metadata take the cache too."""
    import asyncio

    table = numeric_table(20_000)
    url = s3.put("calls/t.parquet", parquet_bytes(table, row_group_size=5_000))
    c = cache(tmp_path, validate="immutable")
    got = asyncio.run(fastingest.read_parquet_async(url, storage_options=s3.options(), cache=c))
    assert_tables_equal(got, table)
    stats = fastingest.ReadStats()
    meta = fastingest.metadata(url, storage_options=s3.options(), cache=c, stats=stats)
    plans = fastingest.plan_parquet(url, storage_options=s3.options(), cache=c, stats=stats)
    assert meta["num_rows"] == 20_000 and plans[0]["bytes_needed"] > 0
    assert stats.requests == 0 and stats.cache_hits == 2
