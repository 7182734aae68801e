"""What moving pageable host bytes into pinned memory costs on a GPU machine,
the bound on uploading chunks that sit in ordinary memory (`ChunkSet.to_device`):

- page-locking a buffer in place and releasing it (`cudaHostRegister` +
  `cudaHostUnregister`), then the host-to-device copy from it;
- host-to-device copies from pinned and from pageable memory;
- copying into pinned memory on 1, 2, 4 and 8 threads (NumPy releases the
  GIL for the copy).

Needs CUDA, PyTorch and CuPy. Medians of 5.

    python benches/bench_pinned.py [--mb 216]
"""

from __future__ import annotations

import argparse
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import cupy
import numpy as np
import torch


def clock(fn, reps: int = 5) -> float:
    times = []
    for _ in range(reps):
        torch.cuda.synchronize()
        started = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--mb", type=int, default=216)
    n = ap.parse_args().mb * 1_000_000
    rt = cupy.cuda.runtime
    src = np.ones(n, dtype=np.uint8)
    device = cupy.empty(n, dtype=cupy.uint8)
    stream = cupy.cuda.Stream(non_blocking=True)
    pinned = torch.empty(n, dtype=torch.uint8, pin_memory=True).numpy()

    def upload(host: np.ndarray) -> None:
        rt.memcpyAsync(device.data.ptr, host.ctypes.data, n, 1, stream.ptr)
        stream.synchronize()

    def lock_and_release() -> None:
        rt.hostRegister(src.ctypes.data, n, 0)
        rt.hostUnregister(src.ctypes.data)

    def rate(seconds: float) -> str:
        return f"{seconds * 1e3:.1f} ms ({n / seconds / 1e9:.1f} GB/s)"

    print(f"{n / 1e6:.0f} MB, medians of 5")
    print(f"page-lock in place + release: {rate(clock(lock_and_release))}")
    rt.hostRegister(src.ctypes.data, n, 0)
    print(f"host to device from page-locked: {rate(clock(lambda: upload(src)))}")
    rt.hostUnregister(src.ctypes.data)
    print(f"host to device from pinned: {rate(clock(lambda: upload(pinned)))}")
    print(f"host to device from pageable: {rate(clock(lambda: upload(src)))}")
    for threads in (1, 2, 4, 8):
        step = -(-n // threads)
        pool = ThreadPoolExecutor(threads)

        def copy(i: int, step: int = step) -> None:
            np.copyto(pinned[i * step : (i + 1) * step], src[i * step : (i + 1) * step])

        seconds = clock(lambda pool=pool, threads=threads: list(pool.map(copy, range(threads))))
        print(f"copy into pinned on {threads} threads: {rate(seconds)}")
        pool.shutdown()


if __name__ == "__main__":
    main()
