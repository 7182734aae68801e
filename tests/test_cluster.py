"""fastingest.ray and fastingest.dask on real engines started here (Ray with
2 CPUs, a Dask LocalCluster of 2 worker processes), data on MinIO, pyarrow
as the oracle."""

from __future__ import annotations

import os
import pickle
import signal
import threading
import time
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import ray
from dask.distributed import Client, LocalCluster
from ray.data.expressions import col

import fastingest
import fastingest.dask as fdask
import fastingest.ray as fray
from devtools.servers import MINIO_PASSWORD
from fastingest._parts import plan

KEYS = [(2024, "a b"), (2024, "x"), (2025, "a b"), (2025, "x")]
FILES_PER_KEY = 2
ROWS_PER_FILE = 3_000
ROW_GROUP = 1_000


def write_lake(root: Path) -> Path:
    """A hive lake: year=/cat=/part-N.parquet, 3 row groups each, ids
    unique across files, nulls in `score`, one file without `note`."""
    rng = np.random.default_rng(15)
    next_id = 0
    for year, cat in KEYS:
        folder = root / f"year={year}" / f"cat={cat.replace(' ', '%20')}"
        folder.mkdir(parents=True, exist_ok=True)
        for n in range(FILES_PER_KEY):
            ids = np.arange(next_id, next_id + ROWS_PER_FILE, dtype=np.int64)
            next_id += ROWS_PER_FILE
            score = rng.random(ROWS_PER_FILE)
            columns = {
                "id": ids,
                "score": pa.array(score, mask=ids % 7 == 0),
                "label": pa.array([f"l{i % 5}" for i in ids]),
            }
            if not (year == 2025 and cat == "x" and n == 1):
                columns["note"] = pa.array([f"n{i}" for i in ids])
            pq.write_table(
                pa.table(columns), folder / f"part-{n}.parquet", row_group_size=ROW_GROUP
            )
    return root


def plain(table: pa.Table) -> pa.Table:
    """`table` with dictionary columns decoded, sorted by id: comparable
    across engines whose chunks carry different dictionaries."""
    columns = []
    for name in table.column_names:
        column = table.column(name)
        if pa.types.is_dictionary(column.type):
            column = column.cast(column.type.value_type)
        columns.append(column.combine_chunks())
    out = pa.table(columns, names=table.column_names)
    if "id" in out.column_names:
        out = out.sort_by("id")
    return out


def oracle(root: Path, **kwargs) -> pa.Table:
    return plain(pq.read_table(root, partitioning="hive", **kwargs))


@pytest.fixture(scope="module")
def lake(tmp_path_factory) -> Path:
    return write_lake(tmp_path_factory.mktemp("lake") / "lake")


@pytest.fixture
def s3_lake(s3, lake):
    for path in sorted(lake.rglob("*.parquet")):
        s3.put_file("lake/" + path.relative_to(lake).as_posix(), path)
    return s3, s3.url("lake/")


@pytest.fixture(scope="module")
def ray_engine():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def dask_client():
    cluster = LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None
    )
    client = Client(cluster)
    yield client
    client.close()
    cluster.close()


def read_function(df) -> fdask.ReadPartition:
    """The function a fastingest.dask frame's partitions are read by."""
    readers = [e for e in df.expr.walk() if type(e).__name__ == "FromMapProjectable"]
    return readers[0].operand("func")


def ray_table(ds) -> pa.Table:
    return pa.concat_tables(ray.get(ds.to_arrow_refs()))


# --- plan --------------------------------------------------------------------


def test_parts_cover_every_unit_once_in_order(lake):
    planned = plan("t", "parquet", str(lake), {}, fastingest._cache_arg)
    units = len(planned.units)
    assert units == len(KEYS) * FILES_PER_KEY * (ROWS_PER_FILE // ROW_GROUP)
    for count in (1, 3, 5, units, units + 10):
        parts = planned.parts_of_count(count)
        assert len(parts) == min(count, units)
        flat = [(p.locations[f], i) for p in parts for f, i in p.units]
        want = [(planned.locations[u[0]], u[1]) for u in planned.units]
        assert flat == want
        assert sum(p.num_rows for p in parts) == len(KEYS) * FILES_PER_KEY * ROWS_PER_FILE
    sizes = [p.size_bytes for p in planned.parts_of_count(4)]
    assert max(sizes) <= 1.5 * min(sizes), sizes
    # Every unit at least half the target: two make a part.
    by_size = planned.parts_of_size(2 * min(u[4] for u in planned.units))
    assert [len(p.units) for p in by_size] == [2] * (units // 2)
    assert [len(p.locations) for p in planned.parts_by_file()] == [1] * len(planned.locations)


# --- Ray ---------------------------------------------------------------------


def test_ray_reads_a_partitioned_lake_on_minio_like_pyarrow(ray_engine, s3_lake, lake):
    s3, url = s3_lake
    ds = fray.read_parquet(url, storage_options=s3.options())
    # Exact metadata from the footers, no data read: rows and the schema.
    assert ds.count() == len(KEYS) * FILES_PER_KEY * ROWS_PER_FILE
    assert ds.schema().names == ["id", "score", "label", "note", "year", "cat"]
    got = ray_table(ds)
    assert pa.types.is_dictionary(got.schema.field("year").type)
    assert plain(got).equals(oracle(lake))


def test_ray_projection_filters_and_pushed_predicates(ray_engine, s3_lake, lake):
    s3, url = s3_lake
    opts = s3.options()
    ds = fray.read_parquet(
        url, columns=["id", "score", "cat"], filters=[("year", "==", 2025)], storage_options=opts
    )
    want = oracle(lake, columns=["id", "score", "cat"], filters=[("year", "==", 2025)])
    assert plain(ray_table(ds)).equals(want)
    assert ds.count() == want.num_rows

    # A predicate Ray pushes down that translates to fastingest filters...
    pushed = fray.read_parquet(url, storage_options=opts).filter(
        expr=(col("id") >= 5_000) & col("label").is_in(["l1", "l2"]) & (col("cat") == "x")
    )
    table = pq.read_table(lake, partitioning="hive")
    mask = pc.and_(
        pc.and_(
            pc.greater_equal(table["id"], 5_000), pc.is_in(table["label"], pa.array(["l1", "l2"]))
        ),
        pc.equal(table["cat"].cast(pa.string()), "x"),
    )
    assert plain(ray_table(pushed.select_columns(["id", "label"]))).equals(
        plain(table.filter(mask).select(["id", "label"]))
    )
    # ...and one that does not (NOT, is_null) is evaluated on each task's table.
    residual = fray.read_parquet(url, storage_options=opts).filter(
        expr=~(col("id") < 20_000) | col("score").is_null()
    )
    mask = pc.or_(pc.invert(pc.less(table["id"], 20_000)), pc.is_null(table["score"]))
    assert sorted(residual.select_columns(["id"]).to_pandas()["id"]) == sorted(
        table.filter(mask)["id"].to_pylist()
    )
    assert residual.count() == pc.sum(mask).as_py()


def test_ray_override_num_blocks_sets_the_read_tasks(ray_engine, lake):
    units = len(KEYS) * FILES_PER_KEY * (ROWS_PER_FILE // ROW_GROUP)
    planned = plan("t", "parquet", str(lake), {}, fastingest._cache_arg)
    for asked, made in ((5, 5), (units + 7, units), (1, 1)):
        source = fray.FastingestDatasource(planned, num_blocks=asked)
        assert len(source.get_read_tasks(asked)) == made
    ds = fray.read_parquet(str(lake), override_num_blocks=5)
    assert ds.materialize().num_blocks() == 5
    with pytest.raises(fastingest.InvalidArgumentError, match="override_num_blocks"):
        fray.read_parquet(str(lake), override_num_blocks=0)


def test_ray_default_task_count_follows_the_cpus(ray_engine, lake):
    # Ray's default asks for a block per MiB of small data (or 200); each
    # fastingest task fetches in parallel inside itself, so it makes
    # TASKS_PER_CPU (one) per cluster CPU unless bytes call for more.
    planned = plan("t", "parquet", str(lake), {}, fastingest._cache_arg)
    cpus = int(ray.cluster_resources()["CPU"])
    source = fray.FastingestDatasource(planned)
    assert len(source.get_read_tasks(200)) == fray.TASKS_PER_CPU * cpus
    assert len(source.get_read_tasks(1)) == 1
    ds = fray.read_parquet(str(lake))
    assert ds.materialize().num_blocks() == fray.TASKS_PER_CPU * cpus
    assert ray_table(ds).num_rows == len(KEYS) * FILES_PER_KEY * ROWS_PER_FILE


def test_ray_does_not_split_the_tasks_blocks(ray_engine, lake):
    # With a small minimum block size Ray's default parallelism is in the
    # hundreds: left to itself it would cut each task's table into many
    # small blocks after the read. It is told fastingest's task count.
    context = ray.data.DataContext.get_current()
    saved = context.target_min_block_size
    context.target_min_block_size = 1
    try:
        ds = fray.read_parquet(str(lake)).materialize()
    finally:
        context.target_min_block_size = saved
    assert ds.num_blocks() == fray.TASKS_PER_CPU * int(ray.cluster_resources()["CPU"])
    assert ray_table(ds).num_rows == len(KEYS) * FILES_PER_KEY * ROWS_PER_FILE


def test_ray_task_yields_blocks_of_the_target_size(ray_engine, lake):
    # A task reading more than Ray's target block size hands over several
    # blocks as it reads, not one table at the end.
    planned = plan("t", "parquet", str(lake), {}, fastingest._cache_arg)
    (task,) = fray.FastingestDatasource(planned, num_blocks=1).get_read_tasks(1)
    context = ray.data.DataContext.get_current()
    saved = context.target_max_block_size
    context.target_max_block_size = planned.total_bytes() // 4
    try:
        blocks = list(task.read_fn())
    finally:
        context.target_max_block_size = saved
    assert len(blocks) >= 3
    assert sum(b.num_rows for b in blocks) == len(KEYS) * FILES_PER_KEY * ROWS_PER_FILE
    assert all(b.schema == planned.scan.schema for b in blocks)


def test_ray_bad_input_raises_at_the_call(ray_engine, tmp_path):
    with pytest.raises(fastingest.NotFoundError):
        fray.read_parquet(str(tmp_path / "missing.parquet"))
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 not a parquet file PAR1")
    with pytest.raises(fastingest.CorruptFileError, match="bad.parquet"):
        fray.read_parquet(str(bad))


def test_ray_reads_orc(ray_engine, tmp_path):
    import pyarrow.orc as orc

    table = pa.table({"id": np.arange(30_000, dtype=np.int64), "v": np.arange(30_000) * 0.5})
    for i in range(2):
        orc.write_table(
            table.slice(i * 15_000, 15_000), tmp_path / f"p{i}.orc", stripe_size=64 * 1024
        )
    ds = fray.read_orc(str(tmp_path / "*.orc"), columns=["id"], filters=[("id", ">=", 100)])
    got = ray_table(ds)
    assert got.column_names == ["id"]
    assert sorted(got["id"].to_pylist()) == list(range(100, 30_000))


def test_ray_tasks_carry_no_credentials_in_reprs(ray_engine, s3_lake):
    s3, url = s3_lake
    source = fray.FastingestDatasource(
        plan("t", "parquet", url, {"storage_options": s3.options()}, fastingest._cache_arg)
    )
    tasks = source.get_read_tasks(3)
    assert len(tasks) == min(3, fray.TASKS_PER_CPU * int(ray.cluster_resources()["CPU"]))
    for task in tasks:
        text = repr(task.read_fn) + repr(task.read_fn.scan) + repr(task.metadata)
        assert MINIO_PASSWORD not in text
        # Small: locations and unit indices, not bytes.
        assert len(pickle.dumps(task.read_fn)) < 20_000


def _ray_read_tasks_running() -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if cmdline.startswith(b"ray::ReadFastingest"):
            pids.append(int(entry))
    return pids


def test_ray_retries_a_read_task_whose_worker_is_killed(ray_engine, s3_lake, lake, toxi):
    s3, url = s3_lake
    toxi.add_toxic("s3", "bandwidth", {"rate": 40})  # KB/s: tasks take seconds
    ds = fray.read_parquet(url, storage_options=s3.options(proxied=True), override_num_blocks=4)
    killed: list[int] = []

    def kill_one() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not killed:
            running = _ray_read_tasks_running()
            if running:
                os.kill(running[0], signal.SIGKILL)
                killed.append(running[0])
            time.sleep(0.05)

    killer = threading.Thread(target=kill_one)
    killer.start()
    got = ray_table(ds)
    killer.join()
    assert killed, "no read task was seen running"
    assert plain(got).equals(oracle(lake))


def test_ray_workers_share_the_cache(ray_engine, s3_lake, lake, tmp_path):
    s3, url = s3_lake
    cache = fastingest.Cache(tmp_path / "cache", validate="immutable")
    first = ray_table(fray.read_parquet(url, storage_options=s3.options(), cache=cache))
    assert cache.info()["entries"] > 0
    # Every object gone: the second read is served by the cache the two
    # worker processes filled (footers and column chunks).
    for path in lake.rglob("*.parquet"):
        s3.client.delete_object(Bucket=s3.bucket, Key="lake/" + path.relative_to(lake).as_posix())
    second = ray_table(fray.read_parquet(url, storage_options=s3.options(), cache=cache))
    assert plain(second).equals(plain(first))


# --- Dask --------------------------------------------------------------------


def test_dask_reads_a_partitioned_lake_on_minio_like_pyarrow(dask_client, s3_lake, lake):
    s3, url = s3_lake
    df = fdask.read_parquet(url, storage_options=s3.options(), blocksize="32KiB")
    assert df.npartitions > len(KEYS)
    assert list(df.columns) == ["id", "score", "label", "note", "year", "cat"]
    # Hive keys: categoricals over every value, as dd.read_parquet has them.
    assert list(df["cat"].dtype.categories) == ["a b", "x"]
    got = df.compute()
    want = pq.read_table(lake, partitioning="hive").to_pandas()
    got = got.sort_values("id").reset_index(drop=True)
    want = want.sort_values("id").reset_index(drop=True)
    assert list(got["cat"].dtype.categories) == list(want["cat"].dtype.categories)
    assert got["id"].tolist() == want["id"].tolist()
    assert got["note"].isna().sum() == want["note"].isna().sum() == ROWS_PER_FILE
    assert np.allclose(got["score"].to_numpy(), want["score"].to_numpy(), equal_nan=True)
    assert got["year"].astype(int).tolist() == want["year"].astype(int).tolist()
    assert got["cat"].astype(str).tolist() == want["cat"].astype(str).tolist()


@pytest.fixture(params=["gcs", "azure"])
def other_cloud_lake(request, lake):
    """The lake on fake-gcs-server or Azurite (written with fastingest's own
    store client), with the storage options that reach it."""
    servers = request.getfixturevalue(request.param)
    prefix = f"lake-{uuid.uuid4().hex[:8]}/"
    files = [
        (p.relative_to(lake).as_posix(), p.read_bytes()) for p in sorted(lake.rglob("*.parquet"))
    ]
    if request.param == "gcs":
        options = {
            "service_account_path": str(servers.gcs_service_account()),
            "allow_http": "true",
        }
        for key, data in files:
            servers.gcs_upload("test-bucket", prefix + key, data)
        return f"gs://test-bucket/{prefix}", options
    container = f"lake{uuid.uuid4().hex[:8]}"
    servers.azure_create_container(container)
    options = servers.azure_options()
    for key, data in files:
        # Written by key: the object store client takes the key as it is.
        fastingest._fastingest._put(f"az://{container}/{prefix}{key}", data, options)
    return f"az://{container}/{prefix}", options


def test_ray_and_dask_read_the_lake_on_gcs_and_azure(
    ray_engine, dask_client, other_cloud_lake, lake
):
    root, options = other_cloud_lake
    want = plain(pq.read_table(lake, partitioning="hive").select(["id", "score", "year", "cat"]))
    columns = ["id", "score", "year", "cat"]
    filters = [("year", "==", 2025)]
    got = plain(
        ray_table(
            fray.read_parquet(root, columns=columns, filters=filters, storage_options=options)
        )
    )
    wanted = want.filter(pc.equal(want["year"], 2025))
    assert got.column("id").equals(wanted.column("id"))
    assert got.column("cat").to_pylist() == wanted.column("cat").to_pylist()
    df = fdask.read_parquet(root, columns=columns, storage_options=options, blocksize="32KiB")
    frame = df.compute().sort_values("id")
    assert frame["id"].tolist() == want.column("id").to_pylist()
    assert np.allclose(
        frame["score"].to_numpy(),
        want.column("score").to_numpy(zero_copy_only=False),
        equal_nan=True,
    )


def test_dask_projection_reaches_the_read(dask_client, lake):
    df = fdask.read_parquet(str(lake))
    projected = df[["id", "cat"]].simplify()
    readers = [e for e in projected.expr.walk() if type(e).__name__ == "FromMapProjectable"]
    assert readers and readers[0].columns == ["id", "cat"]
    got = projected.compute()
    assert list(got.columns) == ["id", "cat"]
    assert len(got) == len(KEYS) * FILES_PER_KEY * ROWS_PER_FILE
    assert df["score"].sum().compute() == pytest.approx(
        pc.sum(pq.read_table(lake, columns=["score"])["score"]).as_py()
    )


def test_dask_filters_and_blocksize(dask_client, lake):
    df = fdask.read_parquet(
        str(lake), columns=["id", "year"], filters=[("year", "==", 2024)], blocksize=None
    )
    # year=2025 files pruned from the listing, one partition per file left.
    assert df.npartitions == 2 * FILES_PER_KEY
    want = oracle(lake, columns=["id"], filters=[("year", "==", 2024)])
    assert sorted(df.compute()["id"]) == want["id"].to_pylist()
    # Row groups the statistics rule out are no partition at all.
    narrow = [("year", "==", 2024), ("id", "<", 2_500)]
    df = fdask.read_parquet(str(lake), columns=["id"], filters=narrow, blocksize=None)
    assert df.npartitions == 1
    assert sorted(df.compute()["id"]) == list(range(2_500))
    with pytest.raises(fastingest.InvalidArgumentError, match="blocksize"):
        fdask.read_parquet(str(lake), blocksize="lots")
    func = read_function(fdask.read_parquet(str(lake)))
    with pytest.raises(fastingest.InvalidArgumentError, match="not in the dataset"):
        func.project_columns(["nope"])


def test_ray_and_dask_pass_read_dictionary_on(ray_engine, dask_client, lake):
    dictionary = pa.dictionary(pa.int32(), pa.string())
    ds = fray.read_parquet(str(lake), columns=["id", "label"], read_dictionary=["label"])
    got = ray_table(ds)
    assert got.schema.field("label").type == dictionary
    want = oracle(lake, columns=["id", "label"])
    assert plain(got).equals(want)
    df = fdask.read_parquet(str(lake), columns=["id", "label"], read_dictionary=["label"])
    # Each partition has its row groups' categories: Dask is told they are
    # unknown, not that there are none.
    assert df["label"].dtype == "category" and not df["label"].cat.known
    frame = df.compute().sort_values("id")
    assert frame["label"].astype(str).tolist() == want["label"].to_pylist()
    with pytest.raises(fastingest.InvalidArgumentError, match="read_dictionary"):
        fray.read_orc(str(lake), read_dictionary=["label"])
    with pytest.raises(fastingest.InvalidArgumentError, match="read_dictionary"):
        fdask.read_orc(str(lake), read_dictionary=["label"])


def test_ray_and_dask_pass_binary_type_on(ray_engine, dask_client, lake):
    ds = fray.read_parquet(str(lake), columns=["id", "label"], binary_type=pa.large_binary())
    got = ray_table(ds)
    assert got.schema.field("label").type == pa.large_string()
    want = oracle(lake, columns=["id", "label"])
    assert plain(got.cast(want.schema)).equals(want)
    # Ray Data fails on views inside its tasks: refused before it starts.
    with pytest.raises(fastingest.InvalidArgumentError, match="Ray Data does not take"):
        fray.read_parquet(str(lake), binary_type=pa.binary_view())
    df = fdask.read_parquet(str(lake), columns=["id", "label"], binary_type="binary_view")
    assert df.partitions[0].compute().shape[0] > 0
    frame = df.compute().sort_values("id")
    assert frame["label"].astype(str).tolist() == want["label"].to_pylist()
    for reader in (fray, fdask):
        with pytest.raises(fastingest.InvalidArgumentError, match="binary_type"):
            reader.read_orc(str(lake), binary_type=pa.binary_view())
        with pytest.raises(fastingest.InvalidArgumentError, match="binary_type"):
            reader.read_parquet(str(lake), binary_type=pa.int8())


def test_dask_reads_orc(dask_client, tmp_path):
    import pyarrow.orc as orc

    table = pa.table(
        {"id": np.arange(20_000, dtype=np.int64), "s": [str(i) for i in range(20_000)]}
    )
    orc.write_table(table, tmp_path / "t.orc", stripe_size=64 * 1024)
    df = fdask.read_orc(str(tmp_path / "t.orc"), blocksize=1)
    assert df.npartitions > 1
    got = df.compute().sort_values("id")
    assert got["id"].tolist() == list(range(20_000))
    assert got["s"].tolist() == [str(i) for i in range(20_000)]


def test_dask_task_names_and_reprs_carry_no_credentials(dask_client, s3_lake):
    s3, url = s3_lake
    df = fdask.read_parquet(url, storage_options=s3.options())
    func = read_function(df)
    assert MINIO_PASSWORD not in repr(func)
    assert all(MINIO_PASSWORD not in str(k) for k in df.__dask_graph__())
    assert any("fastingest-read-parquet" in str(k) for k in df.__dask_graph__())


def test_dask_reruns_a_partition_whose_worker_is_killed(dask_client, s3_lake, lake, toxi):
    s3, url = s3_lake
    toxi.add_toxic("s3", "bandwidth", {"rate": 40})  # KB/s: partitions take seconds
    df = fdask.read_parquet(url, storage_options=s3.options(proxied=True), blocksize=None)
    pids = dask_client.run(os.getpid)
    future = dask_client.compute(df)
    deadline = time.monotonic() + 60
    while not any(dask_client.processing().values()) and time.monotonic() < deadline:
        time.sleep(0.05)
    busy = [w for w, tasks in dask_client.processing().items() if tasks]
    assert busy and not future.done(), "no partition was seen running"
    os.kill(pids[busy[0]], signal.SIGKILL)
    got = future.result(timeout=240)
    assert sorted(got["id"]) == oracle(lake)["id"].to_pylist()


def test_dask_workers_share_the_cache(dask_client, s3_lake, lake, tmp_path):
    s3, url = s3_lake
    cache = fastingest.Cache(tmp_path / "cache", validate="immutable")
    first = fdask.read_parquet(url, storage_options=s3.options(), cache=cache).compute()
    assert cache.info()["entries"] > 0
    for path in lake.rglob("*.parquet"):
        s3.client.delete_object(Bucket=s3.bucket, Key="lake/" + path.relative_to(lake).as_posix())
    second = fdask.read_parquet(url, storage_options=s3.options(), cache=cache).compute()
    assert sorted(second["id"]) == sorted(first["id"])
    assert second["score"].sum() == pytest.approx(first["score"].sum())
