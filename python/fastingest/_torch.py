"""Decoded columns as Torch tensors.

The conversion has two steps. :func:`host_columns` turns each column of an
Arrow table into NumPy arrays over Arrow's own buffers (no copy where the
layout allows: fixed-width values of a single chunk); it needs no Torch and
is what the CPU tests check. :func:`to_torch` wraps those arrays as tensors
on the CPU; for a CUDA device, :func:`pack_host` writes every column, chunk
by chunk, straight into one pinned host block (no concatenation first) on
several threads, and each column leaves for the device as soon as its bytes
are in, while the next ones are still being written.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
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
    bytes; for a ``fixed_size_list``, one row of ``(size, ...)`` items per
    row), ``validity`` (``True`` = present; ``None`` without nulls) and, for
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
    if pa.types.is_fixed_size_list(t):
        return HostColumn(_fixed_size_items(name, arr, validity), validity)
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
        f"column {name!r} is {t}: only integers, floats, booleans, dates, times, timestamps, "
        f"fixed_size_list of integers or floats, and (with strings='offsets') strings become "
        f"tensors"
    )


def _fixed_size_items(name: str, arr: pa.Array, validity: np.ndarray | None) -> np.ndarray:
    """The items of a ``fixed_size_list`` column (of any depth) of integers
    or floats, as one array of shape ``(rows, size, ...)`` over Arrow's
    buffer (an embedding column of ``fixed_size_list<float>[128]`` becomes
    rows x 128). A null row's items are unspecified, as any null's value
    (read from Parquet, they are null items); a null item, or a null list
    below the top, inside a row that is not null has no place in a tensor.
    ``validity``: the rows' own, as :func:`_one` read it."""
    shape: list[int] = []
    items = arr
    # Per element of `items`: whether it lies in a row that is not null
    # (None: every row is present).
    present = validity
    while pa.types.is_fixed_size_list(items.type):
        if shape:
            present = _refuse_nulls_under(name, arr, items, present, "null lists inside its rows")
        size = items.type.list_size
        shape.append(size)
        # `.values` ignores the array's offset: the rows' items only.
        items = items.values.slice(items.offset * size, len(items) * size)
        if present is not None:
            present = np.repeat(present, size)
    if items.type not in _FIXED:
        raise InvalidArgumentError(
            f"column {name!r} is {arr.type}: a fixed_size_list becomes a tensor when its items "
            f"are integers or floats"
        )
    _refuse_nulls_under(
        name,
        arr,
        items,
        present,
        "null items",
    )
    dtype = np.dtype(_FIXED[items.type])
    if len(items) == 0:
        return np.empty((len(arr), *shape), dtype)
    values = np.frombuffer(
        items.buffers()[1],
        dtype=dtype,
        count=len(items),
        offset=items.offset * dtype.itemsize,
    )
    return values.reshape((len(arr), *shape))


def _validity(arr: pa.Array) -> np.ndarray | None:
    """``arr``'s own validity as booleans; ``None`` without nulls."""
    if not arr.null_count:
        return None
    return _bits(arr.buffers()[0], arr.offset, len(arr))


def _refuse_nulls_under(
    name: str, column: pa.Array, level: pa.Array, present: np.ndarray | None, what: str
) -> np.ndarray | None:
    """Raises if ``level`` (the lists or items inside ``column``'s rows)
    holds a null where ``present`` (its rows are not null); returns where
    its elements are present."""
    valid = _validity(level)
    if valid is None:
        return present
    if (~valid if present is None else present & ~valid).any():
        raise InvalidArgumentError(
            f"column {name!r} is {column.type} with {what}: a tensor has no place for them "
            f"(fill them, e.g. with pyarrow.compute.fill_null, or leave the column out)"
        )
    return valid if present is None else present & valid


def _chunks_of(column: pa.ChunkedArray) -> list[pa.Array]:
    return column.chunks or [pa.array([], type=column.type)]


def host_columns(data: Any, *, strings: str = "error") -> dict[str, HostColumn]:
    """Each column of ``data`` as :class:`HostColumn` NumPy arrays, without
    copying where Arrow's buffers allow (fixed-width values, one chunk)."""
    if strings not in ("error", "offsets"):
        raise InvalidArgumentError(f"strings must be 'error' or 'offsets', not {strings!r}")
    table = _as_table(data)
    out: dict[str, HostColumn] = {}
    for name, column in zip(table.column_names, table.columns, strict=True):
        chunks = _chunks_of(column)
        out[name] = _one(name, chunks[0] if len(chunks) == 1 else pa.concat_arrays(chunks), strings)
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


# Bytes one writing task copies at most: small enough to spread a column
# over the threads, large enough that a task's overhead does not show.
_TASK_BYTES = 4 << 20

_writers: ThreadPoolExecutor | None = None


def _writer_pool() -> ThreadPoolExecutor:
    """Threads writing into pinned memory, one per core up to 8 (NumPy
    copies release the GIL; one thread copies ~10 GB/s, a fifth of what
    PCIe 5 moves)."""
    global _writers
    if _writers is None:
        _writers = ThreadPoolExecutor(
            max_workers=max(1, min(8, os.cpu_count() or 1)), thread_name_prefix="fastingest-pack"
        )
    return _writers


@dataclass
class Slot:
    """Where one array of :func:`host_arrays` lies in a packed block."""

    start: int
    nbytes: int
    dtype: np.dtype
    shape: tuple[int, ...]


@dataclass
class Shifted:
    """A chunk's string offsets, each plus ``base`` (the bytes before it)."""

    offsets: np.ndarray
    base: int


@dataclass
class AllValid:
    """The validity of a chunk without nulls: ``rows`` times ``True``."""

    rows: int


# What one chunk contributes to one packed array.
Piece = np.ndarray | Shifted | AllValid


def _pieces(name: str, column: pa.ChunkedArray, strings: str) -> dict[str, list[Piece]]:
    """Per output key (as :func:`host_arrays` names them), what each chunk
    of ``column`` contributes, in order."""
    parts = [_one(name, arr, strings) for arr in _chunks_of(column)]
    out: dict[str, list[Piece]] = {name: [p.values for p in parts]}
    if parts[0].offsets is not None:
        base, offsets = 0, []
        for i, p in enumerate(parts):
            # After the first chunk, each chunk's leading 0 is the previous end.
            offsets.append(Shifted(p.offsets if i == 0 else p.offsets[1:], base))
            base += len(p.values)
        out[f"{name}.offsets"] = offsets
    if any(p.validity is not None for p in parts):
        out[f"{name}.validity"] = [
            p.validity
            if p.validity is not None
            else AllValid(len(p.offsets) - 1 if p.offsets is not None else len(p.values))
            for p in parts
        ]
    return out


def _piece_len(piece: Piece) -> int:
    if isinstance(piece, Shifted):
        return len(piece.offsets)
    if isinstance(piece, AllValid):
        return piece.rows
    return len(piece)


def _piece_dtype(piece: Piece) -> np.dtype:
    if isinstance(piece, Shifted):
        return np.dtype(np.int64)
    if isinstance(piece, AllValid):
        return np.dtype(bool)
    return piece.dtype


@dataclass
class Layout:
    """A packed block: its size, each array's slot in it (64-byte aligned, in
    :func:`host_arrays`' order), and the pieces that fill each slot."""

    size: int
    slots: dict[str, Slot]
    pieces: dict[str, list[Piece]]


def pack_layout(data: Any, *, strings: str = "error") -> Layout:
    """Where each array of :func:`host_arrays` goes in a packed block
    (checks every column, as :func:`host_arrays` does)."""
    if strings not in ("error", "offsets"):
        raise InvalidArgumentError(f"strings must be 'error' or 'offsets', not {strings!r}")
    table = _as_table(data)
    pieces: dict[str, list[Piece]] = {}
    for name, column in zip(table.column_names, table.columns, strict=True):
        pieces.update(_pieces(name, column, strings))
    slots: dict[str, Slot] = {}
    total = 0
    for key, parts in pieces.items():
        dtype = _piece_dtype(parts[0])
        # A row's shape: () but for a fixed_size_list's items.
        row = parts[0].shape[1:] if isinstance(parts[0], np.ndarray) else ()
        n = sum(_piece_len(p) for p in parts)
        nbytes = n * int(np.prod(row, dtype=np.int64)) * dtype.itemsize
        total = (total + 63) // 64 * 64
        slots[key] = Slot(total, nbytes, dtype, (n, *row))
        total += nbytes
    return Layout(total, slots, pieces)


def _writes(block: np.ndarray, slot: Slot, pieces: list[Piece]) -> list[Callable[[], None]]:
    """Tasks that together write ``pieces`` into ``slot`` of ``block``."""
    view = block[slot.start : slot.start + slot.nbytes].view(slot.dtype)
    step = max(1, _TASK_BYTES // slot.dtype.itemsize)
    tasks: list[Callable[[], None]] = []
    at = 0
    for piece in pieces:
        if isinstance(piece, np.ndarray):
            piece = piece.reshape(-1)  # a fixed_size_list's rows, item by item
        n = _piece_len(piece)
        for lo in range(0, n, step):
            dst = view[at + lo : at + min(n, lo + step)]
            if isinstance(piece, Shifted):
                src = piece.offsets[lo : lo + step]
                tasks.append(lambda dst=dst, src=src, base=piece.base: np.add(src, base, out=dst))
            elif isinstance(piece, AllValid):
                tasks.append(lambda dst=dst: dst.fill(True))
            else:
                tasks.append(lambda dst=dst, src=piece[lo : lo + step]: np.copyto(dst, src))
        at += n
    return tasks


def pack_host(
    layout: Layout,
    block: Callable[[int], np.ndarray],
    written: Callable[[str, Slot], None] | None = None,
) -> np.ndarray:
    """Writes the arrays of ``layout`` into the flat ``uint8`` block that
    ``block(size)`` returns (pinned memory for a GPU), chunk by chunk on
    several threads, and calls ``written(key, slot)`` for each array once its
    bytes are all in, in order. Returns the block."""
    flat = block(layout.size)
    pool = _writer_pool()
    pending = [
        (key, [pool.submit(task) for task in _writes(flat, slot, layout.pieces[key])])
        for key, slot in layout.slots.items()
    ]
    for key, futures in pending:
        for future in futures:
            future.result()
        if written is not None:
            written(key, layout.slots[key])
    return flat


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
        out[key] = block[start : start + arr.nbytes].view(dtype).reshape(arr.shape)
    return out


def to_torch(data: Any, device: Any = "cuda:0", *, strings: str = "error") -> dict[str, Any]:
    """Columns of a pyarrow Table (or batches) as ``dict[str, torch.Tensor]``.

    Integers, floats and booleans keep their type; dates, times and timestamps
    become int64 (their unit); a ``fixed_size_list`` of integers or floats
    (an embedding, any depth) becomes one tensor of shape ``(rows, size,
    ...)``. A column with nulls adds ``"<name>.validity"``
    (bool). Strings and binary raise :class:`InvalidArgumentError` naming the
    column, unless ``strings="offsets"``: then ``"<name>"`` holds the bytes
    (uint8) and ``"<name>.offsets"`` the int64 offsets. On ``device="cpu"`` the
    tensors share Arrow's buffers where the layout allows; on a CUDA device
    each array is staged in pinned memory and copied asynchronously, and the
    call returns once every copy is done.
    """
    on_cpu = str(device) == "cpu" or str(device).startswith("cpu:")
    # Columns are checked (and strings refused) before anything else.
    arrays = host_arrays(data, strings=strings) if on_cpu else None
    layout = None if on_cpu else pack_layout(data, strings=strings)
    torch = _import_torch()
    target = torch.device(device)
    if target.type == "cuda" and not torch.cuda.is_available():
        raise DeviceUnavailableError(f"to_torch(device={device!r}): torch sees no CUDA device")
    if arrays is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return {k: torch.from_numpy(v) for k, v in arrays.items()}
    return _to_cuda(torch, layout, target)


def _to_cuda(torch: Any, layout: Layout, target: Any) -> dict[str, Any]:
    """Every column packed into one pinned block on several threads, each
    copied to the device as soon as its bytes are in."""
    pinned: list[Any] = []

    def block(size: int) -> np.ndarray:
        # Torch's host allocator keeps pinned blocks for reuse.
        pinned.append(torch.empty(max(size, 1), dtype=torch.uint8, pin_memory=True))
        return pinned[0].numpy()

    out: dict[str, Any] = {}

    def written(key: str, slot: Slot) -> None:
        host = pinned[0][slot.start : slot.start + slot.nbytes]
        dtype = _tensor(torch, np.empty(0, slot.dtype)).dtype
        out[key] = host.view(dtype).reshape(slot.shape).to(target, non_blocking=True)

    pack_host(layout, block, written=written)
    torch.cuda.current_stream(target).synchronize()
    return out
