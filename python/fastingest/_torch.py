"""Decoded columns as Torch tensors.

The conversion has two steps. :func:`host_columns` turns each column of an
Arrow table into NumPy arrays over Arrow's own buffers (no copy where the
layout allows: fixed-width values of a single chunk); it needs no Torch and
is what the CPU tests check. :func:`to_torch` wraps those arrays as tensors
and, for a CUDA device, copies them through pinned host buffers with
asynchronous copies, so that staging column k+1 overlaps the upload of k.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from .exceptions import DeviceUnavailableError, InvalidArgumentError

# Arrow types whose values are one NumPy dtype, read straight from the buffer.
_FIXED = {
    pa.int8(): np.int8,
    pa.int16(): np.int16,
    pa.int32(): np.int32,
    pa.int64(): np.int64,
    pa.uint8(): np.uint8,
    pa.uint16(): np.uint16,
    pa.uint32(): np.uint32,
    pa.uint64(): np.uint64,
    pa.float16(): np.float16,
    pa.float32(): np.float32,
    pa.float64(): np.float64,
}


@dataclass
class HostColumn:
    """One column as NumPy arrays: ``values`` (for strings and binary, the
    bytes), ``validity`` (``True`` = present; ``None`` without nulls) and, for
    strings and binary, ``offsets`` (int64, one more than rows). Values under
    nulls are unspecified."""

    values: np.ndarray
    validity: np.ndarray | None = None
    offsets: np.ndarray | None = None


def _as_table(data: Any) -> pa.Table:
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, (list, tuple)):
        return pa.Table.from_batches(list(data))
    if hasattr(data, "read_all"):  # a RecordBatchReader
        return data.read_all()
    raise InvalidArgumentError(
        f"to_torch takes a pyarrow Table, RecordBatch or list of batches, not {type(data).__name__}"
    )


def _bits(buf: pa.Buffer, offset: int, n: int) -> np.ndarray:
    """An Arrow bitmap (LSB first) as booleans."""
    raw = np.frombuffer(buf, dtype=np.uint8)
    return np.unpackbits(raw, bitorder="little", count=offset + n)[offset:].astype(bool)


def _one(name: str, arr: pa.Array, strings: str) -> HostColumn:
    t = arr.type
    n = len(arr)
    if pa.types.is_dictionary(t):
        return _one(name, arr.dictionary_decode(), strings)
    bufs = arr.buffers()
    validity = _bits(bufs[0], arr.offset, n) if arr.null_count and bufs[0] is not None else None
    if t in _FIXED:
        values = np.frombuffer(bufs[1], dtype=_FIXED[t], count=n, offset=arr.offset * t.byte_width)
        return HostColumn(values, validity)
    if pa.types.is_boolean(t):
        return HostColumn(_bits(bufs[1], arr.offset, n), validity)
    if pa.types.is_timestamp(t) or pa.types.is_duration(t) or pa.types.is_date64(t):
        values = np.frombuffer(bufs[1], dtype=np.int64, count=n, offset=arr.offset * 8)
        return HostColumn(values, validity)
    if pa.types.is_time64(t):
        values = np.frombuffer(bufs[1], dtype=np.int64, count=n, offset=arr.offset * 8)
        return HostColumn(values, validity)
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        # As int64 (days, or the time unit): one dtype for every temporal column.
        raw = np.frombuffer(bufs[1], dtype=np.int32, count=n, offset=arr.offset * 4)
        return HostColumn(raw.astype(np.int64), validity)
    is_text = pa.types.is_string(t) or pa.types.is_large_string(t)
    is_binary = pa.types.is_binary(t) or pa.types.is_large_binary(t)
    if is_text or is_binary:
        if strings != "offsets":
            raise InvalidArgumentError(
                f"column {name!r} is {t}: tensors hold fixed-width values; pass "
                f"strings='offsets' for offsets and bytes tensors, or leave the column out"
            )
        wide = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
        raw = np.frombuffer(
            bufs[1],
            dtype=np.int64 if wide else np.int32,
            count=n + 1,
            offset=arr.offset * (8 if wide else 4),
        )
        start, end = int(raw[0]), int(raw[-1])
        data = (
            np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.empty(0, np.uint8)
        )
        return HostColumn(data[start:end], validity, (raw - start).astype(np.int64))
    raise InvalidArgumentError(
        f"column {name!r} is {t}: only integers, floats, booleans, dates, times, timestamps "
        f"and (with strings='offsets') strings become tensors"
    )


def host_columns(data: Any, *, strings: str = "error") -> dict[str, HostColumn]:
    """Each column of ``data`` as :class:`HostColumn` NumPy arrays, without
    copying where Arrow's buffers allow (fixed-width values, one chunk)."""
    if strings not in ("error", "offsets"):
        raise InvalidArgumentError(f"strings must be 'error' or 'offsets', not {strings!r}")
    table = _as_table(data)
    out: dict[str, HostColumn] = {}
    for name, column in zip(table.column_names, table.columns, strict=True):
        chunks = column.chunks
        arr = (
            chunks[0]
            if len(chunks) == 1
            else pa.concat_arrays(chunks)
            if chunks
            else pa.array([], type=column.type)
        )
        out[name] = _one(name, arr, strings)
    return out


def _import_torch() -> Any:
    try:
        import torch
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise ImportError("fastingest.to_torch needs PyTorch: pip install torch") from e
    return torch


def _tensor(torch: Any, arr: np.ndarray) -> Any:
    # Arrow's buffers are read-only; the tensors share them and are not
    # meant to be written (Torch warns once about that).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return torch.from_numpy(arr)


def host_arrays(data: Any, *, strings: str = "error") -> dict[str, np.ndarray]:
    """The arrays :func:`to_torch` makes tensors of, by the tensors' names:
    ``"<name>"``, ``"<name>.offsets"`` (strings), ``"<name>.validity"`` (nulls)."""
    arrays: dict[str, np.ndarray] = {}
    for name, col in host_columns(data, strings=strings).items():
        arrays[name] = col.values
        if col.offsets is not None:
            arrays[f"{name}.offsets"] = col.offsets
        if col.validity is not None:
            arrays[f"{name}.validity"] = col.validity
    return arrays


def in_one_shared_storage(torch: Any, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    """``arrays`` copied into one block of shared memory, as tensors viewing
    it. A DataLoader worker hands each tensor's storage to the main process
    through shared memory: one storage per batch costs one segment, not one
    per column (which made 2 workers 15x slower than 0 on 17 columns)."""
    offsets: dict[str, int] = {}
    total = 0
    for key, arr in arrays.items():
        total = (total + 63) // 64 * 64  # every view aligned for its dtype
        offsets[key] = total
        total += arr.nbytes
    block = torch.empty(total, dtype=torch.uint8).share_memory_()
    flat = block.numpy()
    out: dict[str, Any] = {}
    for key, arr in arrays.items():
        start = offsets[key]
        flat[start : start + arr.nbytes] = np.ascontiguousarray(arr).view(np.uint8).reshape(-1)
        dtype = _tensor(torch, arr[:0]).dtype
        out[key] = block[start : start + arr.nbytes].view(dtype)
    return out


def to_torch(data: Any, device: Any = "cuda:0", *, strings: str = "error") -> dict[str, Any]:
    """Columns of a pyarrow Table (or batches) as ``dict[str, torch.Tensor]``.

    Integers, floats and booleans keep their type; dates, times and timestamps
    become int64 (their unit). A column with nulls adds ``"<name>.validity"``
    (bool). Strings and binary raise :class:`InvalidArgumentError` naming the
    column, unless ``strings="offsets"``: then ``"<name>"`` holds the bytes
    (uint8) and ``"<name>.offsets"`` the int64 offsets. On ``device="cpu"`` the
    tensors share Arrow's buffers where the layout allows; on a CUDA device
    each array is staged in pinned memory and copied asynchronously, and the
    call returns once every copy is done.
    """
    arrays = host_arrays(data, strings=strings)
    torch = _import_torch()
    target = torch.device(device)
    if target.type == "cuda" and not torch.cuda.is_available():
        raise DeviceUnavailableError(f"to_torch(device={device!r}): torch sees no CUDA device")
    if target.type == "cpu":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return {k: torch.from_numpy(v) for k, v in arrays.items()}
    out: dict[str, Any] = {}
    staged = []
    for key, arr in arrays.items():
        pinned = torch.empty(arr.shape, dtype=_tensor(torch, arr[:0]).dtype, pin_memory=True)
        pinned.numpy()[...] = arr  # the copy to device of the previous column runs meanwhile
        out[key] = pinned.to(target, non_blocking=True)
        staged.append(pinned)
    torch.cuda.current_stream(target).synchronize()
    del staged
    return out
