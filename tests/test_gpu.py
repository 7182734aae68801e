"""CUDA uploads: device chunks through DLPack and the CUDA Array Interface,
and decoded columns as CUDA tensors. These need a GPU, PyTorch and CuPy:
they skip without them, saying why, and fail instead where
FASTINGEST_REQUIRE_GPU=1 (the GPU machine's run)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import fastingest

from .conftest import need_cupy, need_gpu, need_torch
from .datagen import all_types_table, numeric_table, parquet_bytes


@pytest.fixture
def gpu():
    need_gpu()


@pytest.fixture
def chunks(tmp_path):
    path = tmp_path / "g.parquet"
    path.write_bytes(parquet_bytes(all_types_table(20_000), row_group_size=5000))
    return path, fastingest.read_chunks(path)


def test_device_chunks_are_the_host_bytes(gpu, chunks):
    torch = need_torch()
    _, host = chunks
    dev = host.to_device(0, staging_size=1 << 16, staging_buffers=3)
    assert dev.device == "cuda:0" and len(dev) == len(host)
    assert dev.upload_report["staging_allocated"] <= 3
    for h, d in zip(host, dev, strict=True):
        assert d.__dlpack_device__() == (2, 0)
        t = torch.from_dlpack(d)
        assert t.device.type == "cuda" and t.dtype == torch.uint8
        assert t.data_ptr() == d.ptr  # zero-copy
        assert bytes(t.cpu().numpy()) == bytes(memoryview(h))
        cai = d.__cuda_array_interface__
        assert cai["version"] == 3 and cai["shape"] == (h.length,) and cai["data"][0] == d.ptr


def test_a_pinned_set_uploads_without_staging(gpu, chunks):
    torch = need_torch()
    _, host = chunks
    pinned = host.pin(0)
    assert [bytes(memoryview(c)) for c in pinned] == [bytes(memoryview(c)) for c in host]
    dev = pinned.to_device(0)
    assert dev.upload_report["staging_allocated"] == 0
    assert dev.upload_report["copies"] == sum(1 for c in host if c.length)
    for h, d in zip(host, dev, strict=True):
        assert bytes(torch.from_dlpack(d).cpu().numpy()) == bytes(memoryview(h))
    assert host.to_device(0).upload_report["staging_allocated"] > 0


def test_cupy_reads_device_chunks_zero_copy(gpu, chunks):
    cupy = need_cupy()
    _, host = chunks
    dev = host.to_device("cuda:0")
    for h, d in zip(host, dev, strict=True):
        a = cupy.asarray(d)
        assert a.data.ptr == d.ptr
        assert cupy.asnumpy(a).tobytes() == bytes(memoryview(h))


def test_read_chunks_to_device_equals_host(gpu, chunks):
    torch = need_torch()
    path, host = chunks
    dev = fastingest.read_chunks(path, device=0)
    for h, d in zip(host, dev, strict=True):
        assert bytes(torch.from_dlpack(d).cpu().numpy()) == bytes(memoryview(h))


def test_bad_device_ordinal_is_an_argument_error(gpu, chunks):
    _, host = chunks
    with pytest.raises(fastingest.InvalidArgumentError, match="does not exist"):
        host.to_device(fastingest.cuda_device_count())


def test_to_torch_cuda_equals_the_table(gpu, tmp_path):
    torch = need_torch()
    table = numeric_table(50_000)
    nulls = pa.array(np.where(np.arange(50_000) % 7 == 0, None, np.arange(50_000)), pa.int64())
    table = table.append_column("n", nulls)
    path = tmp_path / "t.parquet"
    path.write_bytes(parquet_bytes(table))
    got = fastingest.read_torch(path, "cuda:0", columns=["id", "x", "flag", "n"])
    assert got["id"].device.type == "cuda"
    assert torch.equal(got["id"].cpu(), torch.arange(50_000))
    assert np.array_equal(got["x"].cpu().numpy(), table["x"].to_numpy())
    assert got["flag"].dtype == torch.bool
    valid = got["n.validity"].cpu().numpy()
    assert np.array_equal(valid, np.arange(50_000) % 7 != 0)
    assert np.array_equal(got["n"].cpu().numpy()[valid], np.arange(50_000)[valid])


def test_to_torch_cuda_of_many_chunks_equals_the_cpu_tensors(gpu):
    """The CUDA path packs chunk by chunk into pinned memory on several
    threads: many chunks, nulls in some, booleans, strings as offsets and a
    fixed_size_list must come out as the CPU path makes them."""
    torch = need_torch()
    rng = np.random.default_rng(9)
    batches = []
    for n, nulls in [(70_000, False), (0, True), (130_000, True), (55_555, False)]:
        mask = (rng.random(n) < 0.2) if nulls else None
        words = [f"v{i % 17}" * (i % 3) for i in range(n)]
        batches.append(
            pa.record_batch(
                {
                    "i": pa.array(rng.integers(0, 1 << 40, n), pa.int64(), mask=mask),
                    "f": pa.array(rng.random(n).astype(np.float32)),
                    "b": pa.array(rng.random(n) < 0.5, mask=mask),
                    "s": pa.array(words, pa.string(), mask=mask),
                    # An embedding: rows x 8 on the device, as on the CPU.
                    "e": pa.FixedSizeListArray.from_arrays(
                        pa.array(rng.random(n * 8).astype(np.float32)),
                        8,
                        mask=None if mask is None else pa.array(mask),
                    ),
                }
            )
        )
    table = pa.Table.from_batches(batches)
    cpu = fastingest.to_torch(table, "cpu", strings="offsets")
    assert cpu["e"].shape == (table.num_rows, 8)
    cuda = fastingest.to_torch(table, "cuda:0", strings="offsets")
    assert list(cuda) == list(cpu)
    for key, want in cpu.items():
        got = cuda[key]
        assert got.device.type == "cuda" and got.dtype == want.dtype, key
        got = got.cpu()
        valid = cpu.get(f"{key}.validity")
        if valid is not None and f"{key}.offsets" not in cpu:
            assert torch.equal(got[valid], want[valid]), key
        else:
            assert torch.equal(got, want), key
