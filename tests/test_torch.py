"""fastingest.torch: the training loader, with real torch DataLoaders (in
process, forked and spawned workers), simulated ranks, one real
torch.distributed (gloo) run, and MinIO with a shared cache."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
import torch.distributed
import torch.multiprocessing

import fastingest
from fastingest._epoch import Settings, Unit, fresh
from fastingest.torch import DataLoader, ParquetDataset

ROWS = 10_007  # not a multiple of anything used below
ROW_GROUP = 97


@pytest.fixture(scope="module")
def sorted_file(tmp_path_factory) -> str:
    """`id` 0..ROWS in order, in row groups of ROW_GROUP rows."""
    path = tmp_path_factory.mktemp("torch") / "sorted.parquet"
    ids = np.arange(ROWS, dtype=np.int64)
    table = pa.table({"id": ids, "x": (ids * 0.5).astype(np.float32), "name": ids.astype(str)})
    pq.write_table(table, path, row_group_size=ROW_GROUP)
    return str(path)


def dataset(path: str, **kwargs) -> ParquetDataset:
    kwargs.setdefault("columns", ["id", "x"])
    kwargs.setdefault("batch_size", 256)
    return ParquetDataset(path, **kwargs)


def epoch_ids(ds: ParquetDataset, workers: int = 0, **loader_kwargs) -> list[np.ndarray]:
    """The `id` tensor of every batch one epoch yields, in order."""
    loader = DataLoader(ds, num_workers=workers, **loader_kwargs)
    return [batch["id"].numpy().copy() for batch in loader]


def all_rows(batches: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(batches) if batches else np.empty(0, np.int64)


@pytest.mark.parametrize("workers", [0, 2])
def test_every_row_once_across_ranks_and_workers(sorted_file, workers):
    for world in (1, 3):
        per_rank = []
        for rank in range(world):
            ds = dataset(sorted_file, shuffle=True, seed=3, rank=rank, world_size=world)
            batches = epoch_ids(ds, workers)
            assert len(batches) == len(ds), "len(ds) is what the rank yields"
            per_rank.append(batches)
            # x travels with its row: the columns of a batch stay aligned.
        counts = [len(b) for b in per_rank]
        assert max(counts) - min(counts) <= 1
        got = np.sort(all_rows([b for rank in per_rank for b in rank]))
        np.testing.assert_array_equal(got, np.arange(ROWS))


def test_len_does_not_depend_on_workers(sorted_file):
    lengths = set()
    for workers in (0, 1, 3):
        ds = dataset(sorted_file, shuffle=True, rank=1, world_size=2)
        lengths.add((len(ds), len(epoch_ids(ds, workers))))
    assert len(lengths) == 1, lengths


def test_drop_last_gives_every_rank_the_same_full_batches(sorted_file):
    world = 3
    seen = []
    counts = set()
    for rank in range(world):
        ds = dataset(sorted_file, shuffle=True, drop_last=True, rank=rank, world_size=world)
        batches = epoch_ids(ds, 2)
        counts.add(len(batches))
        assert all(len(b) == 256 for b in batches)
        seen.extend(batches)
    assert len(counts) == 1
    rows = all_rows(seen)
    assert len(np.unique(rows)) == len(rows), "no row twice"
    assert ROWS - len(rows) < world * 256


def test_batches_keep_their_rows_together(sorted_file):
    ds = dataset(sorted_file, shuffle=True, seed=5)
    for batch in DataLoader(ds, num_workers=0):
        assert batch["id"].dtype == torch.int64 and batch["x"].dtype == torch.float32
        np.testing.assert_array_equal(batch["x"].numpy(), batch["id"].numpy() * 0.5)


def test_same_settings_same_batches_other_epoch_or_seed_other_order(sorted_file):
    def run(seed, epoch, workers):
        ds = dataset(sorted_file, shuffle=True, seed=seed, rank=0, world_size=2)
        ds.set_epoch(epoch)
        return epoch_ids(ds, workers)

    first = run(0, 0, 2)
    again = run(0, 0, 2)
    assert len(first) == len(again)
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    for other in (run(0, 1, 2), run(1, 0, 2)):
        assert not np.array_equal(all_rows(other), all_rows(first))
        # The same rank's share is another set of rows, or the same in another order.
    plain = epoch_ids(dataset(sorted_file))
    np.testing.assert_array_equal(all_rows(plain), np.arange(ROWS))


@pytest.mark.parametrize("shuffle_buffer", [256 << 20, 8 * ROW_GROUP * 24])
def test_shuffle_mixes_rows_of_many_row_groups(sorted_file, shuffle_buffer):
    rhos, groups_per_batch = [], []
    for seed in range(8):
        ds = dataset(
            sorted_file, shuffle=True, seed=seed, batch_size=64, shuffle_buffer=shuffle_buffer
        )
        batches = epoch_ids(ds)
        order = all_rows(batches)
        np.testing.assert_array_equal(np.sort(order), np.arange(ROWS))
        # ids are a permutation of 0..n-1, so they are their own ranks.
        rhos.append(np.corrcoef(np.arange(ROWS), order)[0, 1])
        groups_per_batch.extend(len(np.unique(b // ROW_GROUP)) for b in batches)
    assert abs(np.mean(rhos)) < 0.15, rhos
    assert np.mean(groups_per_batch) >= 4, np.mean(groups_per_batch)


@pytest.mark.parametrize("workers,world,batch", [(2, 1, 256), (3, 2, 100), (4, 3, 7)])
def test_no_window_is_read_by_two_workers(workers, world, batch):
    # A window spanning two workers' blocks would be fetched and decoded by
    # both (a shuffled window is read whole).
    units = [Unit(rows=97 + (i % 5), decoded_bytes=10_000) for i in range(103)]
    settings = Settings(batch, True, 5, False, 40_000)
    layout = fresh(units, settings, epoch=1, world_size=world, workers=workers)
    for rank in range(world):
        readers: dict[int, set[int]] = {}
        for worker in range(workers):
            for window, _, _ in layout.worker_rows(rank, workers, worker, 0):
                readers.setdefault(window, set()).add(worker)
        assert readers and all(len(w) == 1 for w in readers.values()), readers
        assert len(readers) >= workers  # every worker has windows of its own


def test_small_shuffle_buffer_bounds_the_window(sorted_file):
    buffer = 8 * ROW_GROUP * 24
    ds = dataset(sorted_file, shuffle=True, batch_size=64, shuffle_buffer=buffer)
    windows = ds._fresh(1, 1).windows
    assert len(windows) > 5
    for window in windows:
        held = sum(
            ds._units[u].decoded_bytes * (end - start) / ds._units[u].rows
            for u, start, end in window.pieces
        )
        assert held <= buffer or len(window.pieces) == 1
        assert len(window.pieces) >= 4, "each window still mixes several row groups"


def _take(loader: DataLoader, k: int) -> list[np.ndarray]:
    out = []
    if k == 0:
        return out
    for batch in loader:
        out.append(batch["id"].numpy().copy())
        if len(out) == k:
            break
    return out


@pytest.mark.parametrize("workers,cuts", [(0, [0, 7, 20]), (2, [1, 6, 13])])
def test_resume_yields_exactly_the_rest(sorted_file, workers, cuts):
    make = lambda: dataset(sorted_file, shuffle=True, seed=9, rank=1, world_size=2)  # noqa: E731
    full = epoch_ids(make(), workers)
    for k in cuts:
        loader = DataLoader(make(), num_workers=workers)
        taken = _take(loader, k)
        assert all(np.array_equal(a, b) for a, b in zip(taken, full[:k], strict=True))
        state = json.loads(json.dumps(loader.state_dict()))
        assert state["batches"] == k
        resumed = make()
        resumed.load_state_dict(state)
        assert len(resumed) == len(full) - k
        rest = epoch_ids(resumed, workers)
        assert len(rest) == len(full) - k
        assert all(np.array_equal(a, b) for a, b in zip(rest, full[k:], strict=True))


def test_resume_with_state_dict_of_the_dataset(sorted_file):
    ds = dataset(sorted_file, shuffle=True, seed=2)
    full = epoch_ids(ds, 0)
    ds.load_state_dict(ds.state_dict(batches=10, num_workers=0))
    rest = epoch_ids(ds, 0)
    assert all(np.array_equal(a, b) for a, b in zip(rest, full[10:], strict=True))
    # The workers tell the dataset how many they were.
    fresh = dataset(sorted_file, shuffle=True, seed=2)
    with pytest.raises(fastingest.InvalidArgumentError, match="num_workers"):
        fresh.state_dict(batches=3)
    epoch_ids(fresh, 2)
    assert fresh.state_dict(batches=3)["num_workers"] == 2


def _consume_all_ranks(path, world, workers, k, state=None, **kwargs):
    """Every rank of `world` takes `k` batches through `workers` workers
    (after loading `state`); returns their rows and rank 0's state."""
    rows, first_state = [], None
    for rank in range(world):
        ds = dataset(path, shuffle=True, seed=4, rank=rank, world_size=world, **kwargs)
        if state is not None:
            ds.load_state_dict(state)
        loader = DataLoader(ds, num_workers=workers)
        rows.extend(_take(loader, k))
        if rank == 0:
            first_state = json.loads(json.dumps(loader.state_dict()))
    return rows, first_state


@pytest.mark.parametrize("drop_last", [False, True])
def test_elastic_resume_yields_the_rows_no_rank_consumed(sorted_file, drop_last):
    consumed, state = _consume_all_ranks(sorted_file, 2, 2, 5, drop_last=drop_last)
    # Three ranks of one worker take some more, then one rank finishes.
    more, state2 = _consume_all_ranks(sorted_file, 3, 0, 3, state, drop_last=drop_last)
    assert state2["batches"] == 5 + 3 and state2["resumed_from"]["world_size"] == 2
    last, _ = _consume_all_ranks(sorted_file, 1, 2, 10**9, state2, drop_last=drop_last)
    rows = all_rows(consumed + more + last)
    assert len(np.unique(rows)) == len(rows), "no row twice"
    if drop_last:
        assert ROWS - len(rows) < 3 * 256 + 2 * 256
    else:
        np.testing.assert_array_equal(np.sort(rows), np.arange(ROWS))


def test_resume_with_other_workers_same_ranks(sorted_file):
    consumed, state = _consume_all_ranks(sorted_file, 2, 2, 4)
    lengths = []
    rest = []
    for rank in range(2):
        ds = dataset(sorted_file, shuffle=True, seed=4, rank=rank, world_size=2)
        ds.load_state_dict(state)
        batches = epoch_ids(ds, 3)
        lengths.append((len(ds), len(batches)))
        rest.extend(batches)
    assert all(a == b for a, b in lengths)
    np.testing.assert_array_equal(np.sort(all_rows(consumed + rest)), np.arange(ROWS))


def test_set_epoch_moves_on_from_a_resume(sorted_file):
    ds = dataset(sorted_file, shuffle=True)
    ds.load_state_dict(ds.state_dict(batches=5, num_workers=0))
    assert ds.start_batch == 5 and len(ds) == -(-ROWS // 256) - 5
    ds.set_epoch(0)  # the same epoch: still resuming
    assert ds.start_batch == 5
    ds.set_epoch(1)
    assert ds.start_batch == 0 and len(ds) == -(-ROWS // 256)


def test_filters_and_strings(sorted_file, tmp_path):
    filters = [[("id", "<", 3000), ("x", ">=", 100.0)], [("id", ">", 9000)]]
    ds = dataset(sorted_file, filters=filters, shuffle=True, rank=0, world_size=2)
    other = dataset(sorted_file, filters=filters, shuffle=True, rank=1, world_size=2)
    rows = all_rows(epoch_ids(ds, 2) + epoch_ids(other, 0))
    want = [i for i in range(ROWS) if (i < 3000 and i * 0.5 >= 100) or i > 9000]
    np.testing.assert_array_equal(np.sort(rows), want)
    with pytest.raises(fastingest.InvalidArgumentError, match="'name'.*strings='offsets'"):
        dataset(sorted_file, columns=["id", "name"])
    ds = dataset(sorted_file, columns=["id", "name"], strings="offsets", batch_size=10)
    batch = next(iter(ds))
    assert set(batch) == {"id", "name", "name.offsets"}
    offsets = batch["name.offsets"].numpy()
    text = bytes(batch["name"].numpy()).decode()
    ids = batch["id"].numpy()
    assert [text[offsets[i] : offsets[i + 1]] for i in range(len(ids))] == [str(i) for i in ids]


def test_every_way_a_batch_travels_gives_the_same_tensors(tmp_path, monkeypatch):
    # fastingest's DataLoader takes small batches from its workers through
    # their pipes as NumPy arrays, large ones (and a plain DataLoader all) in
    # shared memory; in process the tensors view the window's arrays. Nulls
    # (validity), booleans and a batch spanning windows ride along.
    n = 3_001
    ids = np.arange(n, dtype=np.int64)
    table = pa.table(
        {
            "id": ids,
            "flag": pa.array(ids % 3 == 0),
            # Nulls in the first row groups only: windows join parts with
            # and without a validity array.
            "maybe": pa.array([None if i % 7 == 0 and i < 1200 else float(i) for i in range(n)]),
            # An embedding as pyarrow stores one: a tensor of rows x 4.
            "emb": pa.FixedSizeListArray.from_arrays(
                pa.array((ids[:, None] * 4 + np.arange(4)).reshape(-1).astype(np.float32)), 4
            ),
        }
    )
    path = tmp_path / "mixed.parquet"
    pq.write_table(table, path, row_group_size=250)

    def make(**kwargs):
        columns = ["id", "flag", "maybe", "emb"]
        return ParquetDataset(str(path), columns=columns, batch_size=128, shuffle=True, **kwargs)

    def run(loader):
        out = []
        for batch in loader:
            assert all(isinstance(t, torch.Tensor) for t in batch.values())
            out.append({k: t.numpy().copy() for k, t in batch.items()})
        return out

    small_buffer = {"shuffle_buffer": 20_000}  # windows of a few row groups
    in_process = run(DataLoader(make(**small_buffer), num_workers=0))
    piped_ds = make(**small_buffer)
    piped = run(DataLoader(piped_ds, num_workers=2))
    assert piped_ds._pipe_batch_bytes == 0, "the dataset is left as it was"
    # A plain DataLoader over the same dataset gets tensors from its workers.
    plain = run(torch.utils.data.DataLoader(piped_ds, batch_size=None, num_workers=2))
    monkeypatch.setattr(fastingest.torch, "PIPE_BATCH_BYTES", 0)
    shared = run(DataLoader(make(**small_buffer), num_workers=2))
    # The same workers give the same batches, whichever way they travel.
    for other in (plain, shared):
        assert len(other) == len(piped)
        for got, want in zip(other, piped, strict=True):
            assert got.keys() == want.keys()
            for k in want:
                assert got[k].dtype == want[k].dtype, k
                np.testing.assert_array_equal(got[k], want[k], err_msg=k)
    # In process (other workers, other batches): the same rows and values.
    for batches in (in_process, piped):
        assert {"id", "flag", "maybe", "emb"} <= set(batches[0])
        assert batches[0]["flag"].dtype == np.bool_
        got = {k: np.concatenate([b[k] for b in batches]) for k in ("id", "flag", "maybe", "emb")}
        valid = np.concatenate(
            [b.get("maybe.validity", np.ones(len(b["id"]), np.bool_)) for b in batches]
        )
        order = np.argsort(got["id"])
        np.testing.assert_array_equal(got["id"][order], ids)
        np.testing.assert_array_equal(got["flag"][order], ids % 3 == 0)
        present = (ids % 7 != 0) | (ids >= 1200)
        np.testing.assert_array_equal(valid[order], present)
        np.testing.assert_array_equal(got["maybe"][order][present], ids[present])
        assert got["emb"].shape == (n, 4) and got["emb"].dtype == np.float32
        np.testing.assert_array_equal(got["emb"][order], ids[:, None] * 4 + np.arange(4))
    # A validity tensor only where the batch holds a null, as to_torch makes.
    for b in in_process + piped:
        assert ("maybe.validity" in b) == (not b.get("maybe.validity", np.ones(1)).all())


@pytest.mark.parametrize("workers", [0, 2])
def test_a_shuffled_epoch_holds_every_value_of_every_type(tmp_path, workers):
    # A shuffle puts each column of a window in its seeded order whole (in
    # Rust, from the window's parts); every type to_torch takes, with and
    # without nulls, must come out row for row as the unshuffled epoch has it.
    n = 2_003
    ids = np.arange(n, dtype=np.int64)
    rng = np.random.default_rng(7)
    nulls = rng.random(n) < 0.2
    table = pa.table(
        {
            "id": ids,
            "i8": pa.array((ids % 200 - 100).astype(np.int8)),
            "u16": pa.array((ids * 7 % 65_536).astype(np.uint16)),
            "i32": pa.array((ids * -3).astype(np.int32), mask=nulls),
            "f16": pa.array((ids % 100).astype(np.float16)),
            "f64": pa.array(ids * 0.25, mask=~nulls),
            "flag": pa.array(ids % 3 == 0, mask=nulls),
            "day": pa.array(ids.astype(np.int32), pa.date32()),
            "at": pa.array(ids * 1_000_003, pa.timestamp("us")),
            "emb": pa.FixedSizeListArray.from_arrays(
                pa.array(np.repeat(ids, 3).astype(np.int16)), 3, mask=pa.array(nulls)
            ),
        }
    )
    path = tmp_path / "types.parquet"
    pq.write_table(table, path, row_group_size=111)

    def by_id(shuffle: bool) -> dict[str, np.ndarray]:
        ds = ParquetDataset(
            str(path), batch_size=100, shuffle=shuffle, seed=1, shuffle_buffer=30_000
        )
        batches = [
            {k: t.numpy().copy() for k, t in b.items()} for b in DataLoader(ds, num_workers=workers)
        ]
        keys = {k for b in batches for k in b}
        rows = [len(b["id"]) for b in batches]
        got = {
            k: np.concatenate(
                [
                    b[k] if k in b else np.ones(r, np.bool_)
                    for b, r in zip(batches, rows, strict=True)
                ]
            )
            for k in keys
        }
        order = np.argsort(got["id"])
        return {k: v[order] for k, v in got.items()}

    shuffled, plain = by_id(True), by_id(False)
    np.testing.assert_array_equal(shuffled["id"], ids)
    assert shuffled.keys() == plain.keys()
    assert {"i32.validity", "f64.validity", "flag.validity", "emb.validity"} <= shuffled.keys()
    assert shuffled["emb"].shape == (n, 3)
    present = ~nulls
    np.testing.assert_array_equal(
        shuffled["emb"][present], np.repeat(ids, 3).reshape(n, 3)[present]
    )
    for k in plain:
        assert shuffled[k].dtype == plain[k].dtype, k
        np.testing.assert_array_equal(shuffled[k], plain[k], err_msg=k)


def test_hive_partitions_and_globs(tmp_path):
    table = pa.table({"id": np.arange(300, dtype=np.int64), "part": np.arange(300) % 3})
    pq.write_to_dataset(table, tmp_path / "lake", partition_cols=["part"])
    ds = ParquetDataset(str(tmp_path / "lake"), batch_size=64, shuffle=True)
    batches = list(DataLoader(ds, num_workers=2))
    ids = torch.cat([b["id"] for b in batches]).numpy()
    parts = torch.cat([b["part"] for b in batches]).numpy()
    np.testing.assert_array_equal(np.sort(ids), np.arange(300))
    np.testing.assert_array_equal(parts, ids % 3)
    ds = ParquetDataset(str(tmp_path / "lake" / "part=*" / "*.parquet"), columns=["id"])
    assert len(all_rows([b["id"].numpy() for b in ds])) == 300


def test_bad_input_gets_clear_errors(sorted_file, tmp_path):
    with pytest.raises(fastingest.InvalidArgumentError, match="rank must be in"):
        dataset(sorted_file, rank=2, world_size=2)
    with pytest.raises(fastingest.InvalidArgumentError, match="world_size"):
        dataset(sorted_file, rank=0, world_size=0)
    with pytest.raises(fastingest.InvalidArgumentError, match="batch_size"):
        dataset(sorted_file, batch_size=0)
    with pytest.raises(fastingest.NotFoundError):
        dataset(str(tmp_path / "missing.parquet"))
    ds = dataset(sorted_file, shuffle=True, seed=1)
    state = ds.state_dict(batches=2, num_workers=0)
    with pytest.raises(fastingest.InvalidArgumentError, match="seed=1.*seed=2"):
        dataset(sorted_file, shuffle=True, seed=2).load_state_dict(state)
    other = tmp_path / "other.parquet"
    pq.write_table(pa.table({"id": np.arange(50), "x": np.ones(50, np.float32)}), other)
    with pytest.raises(fastingest.InvalidArgumentError, match="another dataset"):
        dataset(str(other), shuffle=True, seed=1).load_state_dict(state)
    with pytest.raises(fastingest.InvalidArgumentError, match="not a state"):
        ds.load_state_dict({"batches": 3})
    with pytest.raises(fastingest.InvalidArgumentError, match="batches"):
        ds.state_dict(batches=10**6, num_workers=0)
    with pytest.raises(fastingest.InvalidArgumentError, match="ParquetDataset"):
        DataLoader(torch.utils.data.TensorDataset(torch.zeros(3)))


def test_a_file_replaced_after_the_dataset_was_made_is_an_error(tmp_path):
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"id": np.arange(1000)}), path, row_group_size=100)
    ds = ParquetDataset(str(path), batch_size=100)
    pq.write_table(pa.table({"id": np.arange(900)}), path, row_group_size=100)
    with pytest.raises(fastingest.InvalidArgumentError, match="changed"):
        list(DataLoader(ds, num_workers=1))


def test_remote_spawned_workers_share_the_cache(s3, sorted_file, tmp_path):
    table = pq.read_table(sorted_file)
    for i, start in enumerate((0, 4000, 7000)):
        part = tmp_path / f"p{i}.parquet"
        pq.write_table(table.slice(start, [4000, 3000, ROWS - 7000][i]), part, row_group_size=500)
        s3.put_file(f"train/p{i}.parquet", part)
    cache = fastingest.Cache(tmp_path / "cache", validate="immutable")
    ds = ParquetDataset(
        s3.url("train/*.parquet"),
        columns=["id", "x"],
        batch_size=512,
        shuffle=True,
        storage_options=s3.options(),
        cache=cache,
    )
    loader = DataLoader(ds, num_workers=2, multiprocessing_context="spawn", pin_memory=True)
    rows = all_rows([b["id"].numpy() for b in loader])
    np.testing.assert_array_equal(np.sort(rows), np.arange(ROWS))
    assert cache.info()["entries"] > 0
    # The objects are gone: epoch 2 is served by the cache the workers filled.
    for i in range(3):
        s3.client.delete_object(Bucket=s3.bucket, Key=f"train/p{i}.parquet")
    ds.set_epoch(1)
    again = all_rows([b["id"].numpy() for b in DataLoader(ds, num_workers=2)])
    np.testing.assert_array_equal(np.sort(again), np.arange(ROWS))
    assert not np.array_equal(again, rows)


def test_workers_open_the_files_found_and_trust_the_parents_validation(s3, sorted_file, tmp_path):
    # Forked workers open exactly the files the dataset found (no listing of
    # their own; a name with "%" reopens as itself) and, under
    # validate="once", trust what their parent validated: epoch 2 from the
    # cache makes no request, even with the objects gone.
    table = pq.read_table(sorted_file)
    names = ["a%20b.parquet", "plain.parquet"]
    for i, name in enumerate(names):
        part = tmp_path / f"p{i}.parquet"
        half = ROWS // 2
        pq.write_table(table.slice(i * half, half if i == 0 else ROWS - half), part)
        s3.put_file(f"found/{name}", part)
    cache = fastingest.Cache(tmp_path / "cache", validate="once")
    ds = ParquetDataset(
        s3.url("found/*.parquet"),
        columns=["id"],
        batch_size=500,
        shuffle=True,
        storage_options=s3.options(),
        cache=cache,
    )
    assert ds._files is not None and len(ds._files) == 2
    rows = all_rows(epoch_ids(ds, 2))
    np.testing.assert_array_equal(np.sort(rows), np.arange(ROWS))
    for name in names:
        s3.client.delete_object(Bucket=s3.bucket, Key=f"found/{name}")
    ds.set_epoch(1)
    again = all_rows(epoch_ids(ds, 2))
    np.testing.assert_array_equal(np.sort(again), np.arange(ROWS))


@pytest.mark.parametrize("store", ["gcs", "azure", "http"])
def test_gcs_azure_and_presigned_http_sources(store, request, sorted_file, tmp_path):
    table = pq.read_table(sorted_file, columns=["id", "x"])
    blobs = []
    for i, (start, n) in enumerate(((0, 6000), (6000, ROWS - 6000))):
        part = tmp_path / f"p{i}.parquet"
        pq.write_table(table.slice(start, n), part, row_group_size=500)
        blobs.append(part.read_bytes())
    opts = None
    if store == "gcs":
        gcs = request.getfixturevalue("gcs")
        for i, b in enumerate(blobs):
            gcs.gcs_upload("test-bucket", f"loader/day={i}/p.parquet", b)
        source = "gs://test-bucket/loader/"
        opts = {"service_account_path": str(gcs.gcs_service_account()), "allow_http": "true"}
    elif store == "azure":
        azure = request.getfixturevalue("azure")
        azure.azure_create_container("loader")
        opts = azure.azure_options()
        for i, b in enumerate(blobs):
            fastingest._fastingest._put(f"az://loader/t/day={i}/p.parquet", b, opts)
        source = "az://loader/t/"
    else:
        s3 = request.getfixturevalue("s3")
        for i, b in enumerate(blobs):
            s3.put(f"loader-http/p{i}.parquet", b)
        source = [s3.presign(f"loader-http/p{i}.parquet") for i in range(2)]

    def dataset() -> ParquetDataset:
        return ParquetDataset(
            source, columns=["id"], batch_size=512, shuffle=True, seed=3, storage_options=opts
        )

    rows = all_rows([b["id"].numpy() for b in DataLoader(dataset(), num_workers=2)])
    np.testing.assert_array_equal(np.sort(rows), np.arange(ROWS))
    # Resumed after 5 batches: exactly what an uninterrupted run yields next.
    whole = [b["id"].numpy() for b in DataLoader(dataset(), num_workers=0)]
    ds = dataset()
    ds.load_state_dict(dataset().state_dict(batches=5, num_workers=0))
    rest = [b["id"].numpy() for b in DataLoader(ds, num_workers=0)]
    np.testing.assert_array_equal(all_rows(rest), all_rows(whole[5:]))


def _ddp_rank(rank: int, world: int, port: int, path: str, out: str) -> None:
    torch.distributed.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world
    )
    try:
        ds = ParquetDataset(path, columns=["id"], batch_size=128, shuffle=True, drop_last=True)
        loader = DataLoader(ds, num_workers=1)
        count = 0
        ids = []
        for batch in loader:
            ids.append(batch["id"])
            count += 1
            # Every rank takes a step together, as DDP's all-reduce would.
            torch.distributed.all_reduce(torch.ones(1))
        np.save(out, torch.cat(ids).numpy())
        Path(out + ".len").write_text(f"{len(ds)} {count}")
    finally:
        torch.distributed.destroy_process_group()


def test_torch_distributed_gloo_two_processes(sorted_file, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    outs = [str(tmp_path / f"rank{r}.npy") for r in range(2)]
    context = torch.multiprocessing.start_processes(
        _ddp_worker,
        args=(2, port, sorted_file, str(tmp_path)),
        nprocs=2,
        join=False,
        start_method="spawn",
    )
    while not context.join(timeout=120):
        pass
    rows = np.concatenate([np.load(o) for o in outs])
    lengths = [tuple(map(int, Path(o + ".len").read_text().split())) for o in outs]
    assert lengths[0] == lengths[1] and lengths[0][0] == lengths[0][1]
    assert len(np.unique(rows)) == len(rows)
    assert ROWS - len(rows) < 2 * 128


def _ddp_worker(rank: int, world: int, port: int, path: str, out_dir: str) -> None:
    os.environ.pop("FASTINGEST_CACHE_DIR", None)
    _ddp_rank(rank, world, port, path, os.path.join(out_dir, f"rank{rank}.npy"))
