"""A PyTorch training loader straight from Parquet: sharded across ranks and
DataLoader workers, shuffled with bounded memory, resumable mid-epoch (also
with another world size or number of workers).

    >>> from fastingest.torch import ParquetDataset, DataLoader
    >>> ds = ParquetDataset("s3://bucket/train/", columns=["x", "y"], batch_size=1024,
    ...                     shuffle=True, seed=0)
    >>> loader = DataLoader(ds, num_workers=4, pin_memory=True)
    >>> for epoch in range(10):
    ...     ds.set_epoch(epoch)
    ...     for batch in loader:            # dict[str, torch.Tensor]
    ...         ...
    ...         checkpoint = loader.state_dict()   # JSON-serialisable

Every footer is read once when the dataset is made (and once in each worker
process); row groups are then fetched and decoded in Rust, ahead of the
consumer and bounded in bytes, with the GIL released. Which rows each rank and
worker reads, and in which order, is computed from the row groups' row counts
alone (``fastingest._epoch``), so every process agrees without talking.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import multiprocessing.context
import os
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import torch
import torch.utils.data

from . import _cache_arg, _warn_cache
from ._epoch import Layout, Segment, Settings, Unit, Window, fresh, resumed
from ._fastingest import open_parquet_units, take_rows
from ._options import PARQUET_KEYS, Filters, Partitioning, Source, read_args
from ._parts import reopenable
from ._torch import host_arrays, host_columns, in_one_shared_storage
from .exceptions import CorruptFileError, InvalidArgumentError

__all__ = ["DataLoader", "ParquetDataset"]

# /2: windows cut at the workers' blocks (a /1 state would resume in
# another order).
STATE_FORMAT = "fastingest.torch.ParquetDataset/2"

# How a DataLoader worker hands a batch to the main process. Shared memory
# (torch's way, and ours under a plain DataLoader) costs ~1.7 ms a batch
# whatever its size: a segment made, its descriptor passed over a socket and
# mapped again. A pickled copy through the worker's pipe costs ~1 ms per MB.
# fastingest's DataLoader takes batches of up to this many bytes as NumPy
# arrays through the pipe and makes the tensors itself; larger ones still go
# through shared memory.
PIPE_BATCH_BYTES = 1 << 20


class _Arrays(dict[str, np.ndarray]):
    """A batch as NumPy arrays on its way from a worker to
    :class:`DataLoader`, which makes the tensors."""


_UNSET: Any = object()


class ParquetDataset(torch.utils.data.IterableDataset):
    """Batches of a Parquet dataset as ``dict[str, torch.Tensor]`` (the
    conversion of :func:`fastingest.to_torch`, on the CPU; let the DataLoader's
    ``pin_memory=True`` and your ``.to(device)`` take them to the GPU).

    Each epoch, every row of the source (after ``filters``) is yielded exactly
    once across all ranks and DataLoader workers. Use it with
    ``torch.utils.data.DataLoader(ds, batch_size=None, num_workers=W)`` or with
    :class:`DataLoader`, which also counts batches for checkpoints.

    - ``source``, ``columns``, ``filters``, ``partitioning``, ``schema``,
      ``storage_options``, ``config``, ``cache``: as for
      :func:`fastingest.read_parquet`. With ``filters``, the rows each row
      group keeps are counted when the dataset is made (one read of the
      filter's columns), so that ``len()`` and the shares are exact.
    - ``batch_size``: rows per batch; the last batch of a rank may be shorter
      unless ``drop_last``.
    - ``shuffle``, ``seed``: row groups in a seeded order per epoch, and rows
      mixed within windows of consecutive row groups that together take at
      most ``shuffle_buffer`` bytes decoded (per worker). ``set_epoch`` picks
      the epoch's order.
    - ``drop_last``: every rank yields the same number of full batches (the
      rows that do not fill them are skipped this epoch).
    - ``rank``, ``world_size``: this process's share; by default
      ``torch.distributed``'s when it is initialised, else 0 and 1.
    - ``strings``: ``"error"`` (string columns raise) or ``"offsets"``.
    - ``prefetch_bytes``: how far the fetch runs ahead of the batches taken,
      per worker.
    """

    def __init__(
        self,
        source: Source,
        *,
        columns: Sequence[str] | None = None,
        filters: Filters | None = None,
        batch_size: int = 1024,
        shuffle: bool = False,
        seed: int = 0,
        drop_last: bool = False,
        rank: int | None = None,
        world_size: int | None = None,
        storage_options: dict[str, Any] | None = None,
        config: Any = None,
        cache: Any = None,
        strings: str = "error",
        partitioning: Partitioning = _UNSET,
        schema: pa.Schema | None = None,
        shuffle_buffer: int = 256 << 20,
        prefetch_bytes: int = 64 << 20,
    ) -> None:
        super().__init__()
        for name, value, least in (
            ("batch_size", batch_size, 1),
            ("shuffle_buffer", shuffle_buffer, 1),
            ("prefetch_bytes", prefetch_bytes, 1),
            ("seed", seed, 0),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise InvalidArgumentError(f"{name} must be an int >= {least}, not {value!r}")
        if strings not in ("error", "offsets"):
            raise InvalidArgumentError(f"strings must be 'error' or 'offsets', not {strings!r}")
        self.source = source
        self.settings = Settings(batch_size, bool(shuffle), seed, bool(drop_last), shuffle_buffer)
        self.strings = strings
        self.prefetch_bytes = prefetch_bytes
        self.epoch = 0
        self._rank, self._world_size = rank, world_size
        self._placement()  # a bad explicit rank fails here, not in a worker
        self._options: dict[str, Any] = {
            "columns": columns,
            "filters": filters,
            "storage_options": storage_options,
            "config": config,
            "cache": cache,
            "schema": schema,
        }
        if partitioning is not _UNSET:
            self._options["partitioning"] = partitioning
        self._resume: dict[str, Any] | None = None
        self._layouts: dict[tuple[Any, ...], Layout] = {}
        # DataLoader workers write their count here, so that state_dict (in
        # the main process) knows how the batches were dealt out.
        self._seen_workers = multiprocessing.RawValue("i", -1)
        # Set by fastingest's DataLoader while it starts its workers: batches
        # of at most this many bytes go back as NumPy arrays (0: tensors).
        self._pipe_batch_bytes = 0

        reader = self._reader()
        self.schema: pa.Schema = reader.schema
        host_columns(self.schema.empty_table(), strings=strings)  # unsupported types fail now
        self._locations: list[str] = reader.locations()
        # Other processes (DataLoader workers) open exactly these files, not
        # the source again: no listing of their own. Not where partition
        # keys come from the paths, which the source's layout gives.
        self._files: list[str] | None = None
        if reader.partitions() is None:
            self._files = [reopenable(source) for source in reader.sources()]
        described = reader.units()
        rows = [u[2] for u in described]
        if filters:
            rows = self._count_matching_rows(described)
        self._units = [Unit(n, u[4]) for n, u in zip(rows, described, strict=True)]
        self._unit_ids = [(u[0], u[1]) for u in described]
        self.fingerprint = _fingerprint(self._locations, self._unit_ids, rows, self.schema)

    # -- placement and plan ------------------------------------------------

    def _placement(self) -> tuple[int, int]:
        """(rank, world size): as given, else torch.distributed's, else (0, 1)."""
        dist = torch.distributed
        initialised = dist.is_available() and dist.is_initialized()
        world = self._world_size
        if world is None:
            world = dist.get_world_size() if initialised else 1
        rank = self._rank
        if rank is None:
            rank = dist.get_rank() if initialised and self._world_size is None else 0
        if not isinstance(world, int) or world < 1:
            raise InvalidArgumentError(f"world_size must be an int >= 1, not {world!r}")
        if not isinstance(rank, int) or not 0 <= rank < world:
            raise InvalidArgumentError(
                f"rank must be in [0, world_size) = [0, {world}), not {rank!r}"
            )
        return rank, world

    def set_epoch(self, epoch: int) -> None:
        """Sets the epoch whose order the next iteration yields (the shuffle
        differs per epoch). Moving to another epoch than a loaded state's
        drops the resume point."""
        if not isinstance(epoch, int) or epoch < 0:
            raise InvalidArgumentError(f"epoch must be an int >= 0, not {epoch!r}")
        if epoch != self.epoch:
            self._resume = None
        self.epoch = epoch

    def _fresh(self, world: int, workers: int) -> Layout:
        key = ("fresh", self.epoch, world, workers)
        if key not in self._layouts:
            self._layouts.clear()  # one epoch's plans at a time
            self._layouts[key] = fresh(self._units, self.settings, self.epoch, world, workers)
        return self._layouts[key]

    def _layout_of(self, state: dict[str, Any]) -> Layout:
        """The plan ``state`` was taken in."""
        base = state["resumed_from"]
        if base is None:
            return self._fresh(state["world_size"], state["num_workers"])
        parent = self._layout_of(base)
        consumed = base["batches"] - parent.offset
        return resumed(
            parent, base["num_workers"], consumed, state["world_size"], self.settings.drop_last
        )

    def _plan(self, world: int, workers: int | None) -> tuple[Layout, int]:
        """This iteration's plan and the batches of it already consumed. With
        ``workers`` unknown (``len``), any plan with the right counts."""
        state = self._resume
        if state is None:
            return self._fresh(world, workers or 1), 0
        layout = self._layout_of(state)
        consumed = state["batches"] - layout.offset
        same_workers = workers is None or workers == state["num_workers"]
        if world == layout.world_size and same_workers:
            return layout, consumed
        rest = resumed(layout, state["num_workers"], consumed, world, self.settings.drop_last)
        return rest, 0

    @property
    def start_batch(self) -> int:
        """Batches of this epoch this rank consumed before the next iteration
        starts: 0, or where a loaded state left off."""
        return 0 if self._resume is None else int(self._resume["batches"])

    def __len__(self) -> int:
        """Batches the next iteration yields on this rank, whatever the number
        of workers (after a resume: those left of the epoch)."""
        rank, world = self._placement()
        layout, consumed = self._plan(world, None)
        return max(0, layout.batches(rank) - consumed)

    # -- checkpoints ---------------------------------------------------------

    def state_dict(self, batches: int = 0, *, num_workers: int | None = None) -> dict[str, Any]:
        """Where this epoch stands after this rank consumed ``batches`` batches
        of it (counting any consumed before a resume): a JSON-serialisable
        dict for :meth:`load_state_dict`. Under DDP every rank consumes the
        same number, so one rank's state describes them all.

        ``num_workers``: the DataLoader's; by default the number the workers
        reported when they last iterated this dataset."""
        if num_workers is None:
            num_workers = self._seen_workers.value
        if not isinstance(batches, int) or batches < self.start_batch:
            raise InvalidArgumentError(
                f"batches must be an int >= {self.start_batch} (the batches of this epoch "
                f"consumed before the resume), not {batches!r}"
            )
        if num_workers < 0:
            if batches > self.start_batch:
                raise InvalidArgumentError(
                    "state_dict needs the DataLoader's num_workers: iterate the dataset "
                    "first, pass num_workers=, or use fastingest.torch.DataLoader"
                )
            num_workers = 0
        workers = max(1, num_workers)
        rank, world = self._placement()
        total = self.start_batch + len(self)
        if batches > total:
            raise InvalidArgumentError(
                f"batches={batches}, but this rank has {total} batches in epoch {self.epoch}"
            )
        base = self._resume
        if base is not None:
            layout = self._layout_of(base)
            if layout.world_size == world and base["num_workers"] == workers:
                base = base["resumed_from"]  # the same plan, continued
        return {
            "format": STATE_FORMAT,
            "fingerprint": self.fingerprint,
            "seed": self.settings.seed,
            "shuffle": self.settings.shuffle,
            "batch_size": self.settings.batch_size,
            "drop_last": self.settings.drop_last,
            "shuffle_buffer": self.settings.shuffle_buffer,
            "epoch": self.epoch,
            "world_size": world,
            "num_workers": workers,
            "batches": batches,
            "resumed_from": base,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume: the next iteration yields what an uninterrupted run would
        have yielded after the state's batches (with the same world size and
        workers: the same batches, in the same order; with others: exactly
        the rows no rank consumed, once)."""
        self._check_state(state)
        self.epoch = int(state["epoch"])
        self._resume = json.loads(json.dumps(state))  # a private copy
        self._layouts.clear()

    def _check_state(self, state: Any) -> None:
        if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
            raise InvalidArgumentError(
                f"not a state of fastingest.torch.ParquetDataset (format {STATE_FORMAT!r})"
            )
        if state.get("fingerprint") != self.fingerprint:
            raise InvalidArgumentError(
                "the state is from another dataset: its files, row groups, row counts or "
                f"schema differ (fingerprint {state.get('fingerprint')!r}, this dataset's "
                f"{self.fingerprint!r})"
            )
        mine = {
            "seed": self.settings.seed,
            "shuffle": self.settings.shuffle,
            "batch_size": self.settings.batch_size,
            "drop_last": self.settings.drop_last,
            "shuffle_buffer": self.settings.shuffle_buffer,
        }
        for key, value in mine.items():
            if state.get(key) != value:
                raise InvalidArgumentError(
                    f"the state was taken with {key}={state.get(key)!r}, this dataset has "
                    f"{key}={value!r}: resume with the same {key}"
                )
        chain: dict[str, Any] | None = state
        while chain is not None:
            for key in ("world_size", "num_workers", "batches", "epoch"):
                value = chain.get(key)
                if not isinstance(value, int) or value < (
                    1 if key != "batches" and key != "epoch" else 0
                ):
                    raise InvalidArgumentError(f"the state's {key} is not valid: {value!r}")
            chain = chain.get("resumed_from")

    # -- reading -------------------------------------------------------------

    def _args(self, **overrides: Any) -> dict[str, Any]:
        options = {**self._options, **overrides}
        options = {k: v for k, v in options.items() if v is not None or k == "partitioning"}
        return read_args("ParquetDataset", options, PARQUET_KEYS, _cache_arg)

    def _reader(self) -> Any:
        """This process's reader (footers read once per process)."""
        pid = os.getpid()
        cached = self.__dict__.get("_reader_of")
        if cached is None or cached[0] != pid:
            made = self.__dict__.get("_locations")
            files = self.__dict__.get("_files")
            if made is None or files is None:
                args = self._args()
                reader = open_parquet_units(self.source, args)
            else:
                args = self._args(partitioning=None)
                reader = open_parquet_units(files, args)
            _warn_cache(args["cache"])
            if made is not None and (
                reader.locations() not in (made, files)
                or [u[:2] for u in reader.units()] != [tuple(u) for u in self._unit_ids]
            ):
                raise InvalidArgumentError(
                    f"{self.source!r}: the dataset's files or row groups changed since "
                    "the ParquetDataset was made; make it again"
                )
            self.__dict__["_reader_of"] = (pid, reader)
            return reader
        return cached[1]

    def _count_matching_rows(self, described: list[tuple[int, ...]]) -> list[int]:
        """Rows each row group keeps under the filter: one read of the
        filter's columns."""
        from ._filters import normalize

        wanted: list[str] = []
        for conjunction in normalize(self._options["filters"]) or []:
            for column, _, _ in conjunction:
                if column not in wanted:
                    wanted.append(column)
        args = self._args(columns=wanted, schema=None)
        counter = open_parquet_units(self.source, args)
        if [u[:2] for u in counter.units()] != [u[:2] for u in described]:
            raise InvalidArgumentError(
                f"{self.source!r}: the dataset changed while it was being opened"
            )
        with counter.stream(list(range(len(described))), self.prefetch_bytes) as batches:
            return [b.num_rows for b in batches]

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        info = torch.utils.data.get_worker_info()
        workers, worker = (info.num_workers, info.id) if info is not None else (1, 0)
        self._seen_workers.value = info.num_workers if info is not None else 0
        rank, world = self._placement()
        layout, consumed = self._plan(world, workers)
        segments = layout.worker_rows(rank, workers, worker, consumed)
        yield from self._batches(layout.windows, segments)

    def _batches(
        self, windows: Sequence[Window], segments: Sequence[Segment]
    ) -> Iterator[dict[str, torch.Tensor]]:
        reader = self._reader()
        # Consecutive segments of one window are read together.
        groups: list[tuple[int, list[tuple[int, int]]]] = []
        for window, a, b in segments:
            if groups and groups[-1][0] == window:
                groups[-1][1].append((a, b))
            else:
                groups.append((window, [(a, b)]))
        order = [piece[0] for w, _ in groups for piece in windows[w].pieces]
        if not order:
            return
        size = self.settings.batch_size
        pending: list[Any] = []
        nullable = False  # some pending part holds a validity array
        filled = 0
        with reader.stream(order, self.prefetch_bytes) as stream:
            for w, ranges in groups:
                # The positions of the window's order this rank reads (all of
                # them but after a resume): a shuffle puts only those in order.
                lo, hi = min(a for a, _ in ranges), max(b for _, b in ranges)
                rows = windows[w].order(True)[lo:hi] if self.settings.shuffle else None
                window = _WindowRows(
                    self._window_parts(windows[w], stream), self.schema, self.strings, rows
                )
                for a, b in ranges:
                    at = a
                    while at < b:
                        n = min(b - at, size - filled)
                        pending.append(window.slice(at - lo if rows is not None else at, n))
                        nullable |= window.nullable
                        filled += n
                        at += n
                        if filled == size:
                            yield self._tensors(pending, nullable)
                            pending, nullable, filled = [], False, 0
        if pending:
            yield self._tensors(pending, nullable)

    def _window_parts(self, window: Window, stream: Any) -> list[pa.RecordBatch]:
        parts = []
        for unit, start, end in window.pieces:
            batch = next(stream)
            expected = self._units[unit].rows
            if batch.num_rows != expected:
                file, row_group = self._unit_ids[unit]
                raise CorruptFileError(
                    f"{self._locations[file]}: row group {row_group} gave {batch.num_rows} rows "
                    f"where the dataset counted {expected} (was the file replaced?)"
                )
            parts.append(batch.slice(start, end - start))
        return parts

    def _tensors(self, parts: list[Any], nullable: bool) -> dict[str, torch.Tensor]:
        """One batch from its parts (NumPy arrays by tensor name, or Arrow
        tables where strings are read)."""
        if isinstance(parts[0], pa.Table):
            table = parts[0] if len(parts) == 1 else pa.concat_tables(parts)
            arrays = host_arrays(table, strings=self.strings)
        else:
            arrays = _joined(parts, nullable)
        if torch.utils.data.get_worker_info() is None:
            # Views where they can be; Arrow's buffers are read-only, which
            # torch warns of (once per batch here, not once per tensor).
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                return {k: torch.from_numpy(v) for k, v in arrays.items()}
        # In a worker: the batch goes to the main process through shared
        # memory, best as one block, or, small, through the pipe.
        if sum(a.nbytes for a in arrays.values()) <= self._pipe_batch_bytes:
            return _Arrays(arrays)  # type: ignore[return-value]
        return in_one_shared_storage(torch, arrays)

    # -- pickling (spawned DataLoader workers) -------------------------------

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_reader_of", None)
        state["_layouts"] = {}
        # The workers cannot see torch.distributed: fix the placement here.
        state["_rank"], state["_world_size"] = self._placement()
        if multiprocessing.context.get_spawning_popen() is None:
            state["_seen_workers"] = None  # shared memory travels only to children
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self._seen_workers is None:
            self._seen_workers = multiprocessing.RawValue("i", -1)


class DataLoader(torch.utils.data.DataLoader):
    """A ``torch.utils.data.DataLoader`` over a :class:`ParquetDataset` that
    counts the batches it hands out, for checkpoints: :meth:`state_dict` and
    :meth:`load_state_dict`. ``batch_size`` defaults to ``None`` (the dataset
    makes the batches); every other argument is the DataLoader's."""

    def __init__(self, dataset: ParquetDataset, batch_size: int | None = None, **kwargs: Any):
        if not isinstance(dataset, ParquetDataset):
            raise InvalidArgumentError(
                "fastingest.torch.DataLoader takes a fastingest.torch.ParquetDataset, "
                f"not {type(dataset).__name__}"
            )
        # Small batches come back from the workers through their pipes (see
        # PIPE_BATCH_BYTES): the collate function passes them on untouched
        # and __iter__ makes the tensors. Not with pinned memory (its thread
        # pins tensors only) or a collate function of the caller's.
        piped = kwargs.get("num_workers", 0) > 0 and not kwargs.get("pin_memory", False)
        if kwargs.get("collate_fn") is None and batch_size is None:
            kwargs["collate_fn"] = _as_is
        else:
            piped = False
        super().__init__(dataset, batch_size=batch_size, **kwargs)
        self._pipe_batch_bytes = PIPE_BATCH_BYTES if piped else 0
        self._epoch = dataset.epoch
        self._taken = dataset.start_batch

    def __iter__(self) -> Iterator[Any]:
        dataset: ParquetDataset = self.dataset  # type: ignore[assignment]
        self._epoch, self._taken = dataset.epoch, dataset.start_batch
        # The workers take their copy of the dataset when they start, in
        # super().__iter__(); the dataset itself stays as it was for others.
        dataset._pipe_batch_bytes = self._pipe_batch_bytes
        try:
            batches = super().__iter__()
        finally:
            dataset._pipe_batch_bytes = 0
        for batch in batches:
            if type(batch) is _Arrays:
                batch = {k: torch.from_numpy(v) for k, v in batch.items()}
            self._taken += 1
            yield batch

    def state_dict(self) -> dict[str, Any]:
        """The dataset's state after the batches this loader handed out this
        epoch."""
        dataset: ParquetDataset = self.dataset  # type: ignore[assignment]
        taken = self._taken if self._epoch == dataset.epoch else dataset.start_batch
        return dataset.state_dict(batches=taken, num_workers=self.num_workers)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume from :meth:`state_dict` (of this or another world size or
        number of workers)."""
        dataset: ParquetDataset = self.dataset  # type: ignore[assignment]
        dataset.load_state_dict(state)
        self._epoch, self._taken = dataset.epoch, dataset.start_batch


class _WindowRows:
    """A window's decoded rows, from which batches are sliced: NumPy arrays by
    tensor name (converted once per window), or an Arrow table where a column
    has offsets (strings), which NumPy cannot hold.

    Shuffled (``rows``: the window's rows in their seeded order, positions in
    its pieces laid end to end), each column is put in that order once, whole
    (``take_rows``, in Rust): one column of a window stays in the CPU caches
    while it is gathered, where gathering batch by batch across all columns
    missed the cache on every value. Batches are then slices, as unshuffled."""

    def __init__(
        self,
        parts: list[pa.RecordBatch],
        schema: pa.Schema,
        strings: str,
        rows: np.ndarray | None,
    ):
        self.table: pa.Table | None = None
        self.arrays: dict[str, np.ndarray] = {}
        converted = [host_arrays(part, strings=strings) for part in parts]
        if not converted or any(k.endswith(".offsets") for k in converted[0]):
            self.table = pa.Table.from_batches(parts, schema)
            if rows is not None:
                self.table = self.table.take(rows)
            self.nullable = False
            return
        # Every part gets the same tensors: a validity array where any has one.
        keys = list(dict.fromkeys(k for c in converted for k in c))
        self.nullable = any(k.endswith(".validity") for k in keys)
        if self.nullable:
            for c, part in zip(converted, parts, strict=True):
                for k in keys:
                    if k not in c:
                        c[k] = np.ones(part.num_rows, np.bool_)
        if rows is not None:
            self.arrays = {k: _taken([c[k] for c in converted], rows) for k in keys}
        elif len(converted) == 1:
            self.arrays = {k: converted[0][k] for k in keys}
        else:
            self.arrays = {k: np.concatenate([c[k] for c in converted]) for k in keys}

    def slice(self, start: int, n: int) -> Any:
        """Rows ``[start, start + n)``."""
        if self.table is not None:
            return self.table.slice(start, n)
        return {k: v[start : start + n] for k, v in self.arrays.items()}


def _taken(parts: list[np.ndarray], rows: np.ndarray) -> np.ndarray:
    """The rows ``rows`` of the column ``parts`` laid end to end (along
    their first axis), gathered in Rust with the GIL released into memory
    that fastingest's allocator reuses window after window (a fresh NumPy
    array faults in new pages each time; NumPy's ``take`` also checks and
    copies value by value, about twice as slow here). Read-only, as the
    unshuffled path's views of Arrow buffers."""
    parts = [np.ascontiguousarray(p) for p in parts]
    dtype, shape = parts[0].dtype, parts[0].shape[1:]
    width = dtype.itemsize * int(np.prod(shape, dtype=np.int64))
    if width == 0:
        return np.empty((len(rows), *shape), dtype)
    taken = take_rows([p.reshape(-1).view(np.uint8) for p in parts], width, rows)
    return np.frombuffer(taken, dtype).reshape((len(rows), *shape))


def _joined(parts: list[dict[str, np.ndarray]], nullable: bool) -> dict[str, np.ndarray]:
    """A batch's arrays from its parts (``nullable``: some part holds a
    validity array). As :func:`fastingest.to_torch` makes them of the batch's
    rows: ``"<name>.validity"`` only where one of them is null (a part from a
    window without nulls has none)."""
    if not nullable:  # the common case
        if len(parts) == 1:
            return parts[0]
        return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    if len(parts) == 1:
        arrays = parts[0]
    else:
        keys = dict.fromkeys(k for p in parts for k in p)
        rows = [len(next(iter(p.values()))) for p in parts]
        arrays = {
            k: np.concatenate(
                [p[k] if k in p else np.ones(n, np.bool_) for p, n in zip(parts, rows, strict=True)]
            )
            for k in keys
        }
    return {k: v for k, v in arrays.items() if not (k.endswith(".validity") and v.all())}


def _as_is(batch: Any) -> Any:
    """The collate function of fastingest's DataLoader: the dataset made
    the batch."""
    return batch


def _fingerprint(
    locations: list[str], units: list[tuple[int, int]], rows: list[int], schema: pa.Schema
) -> str:
    digest = hashlib.sha256()
    digest.update(json.dumps([locations, units, rows]).encode())
    digest.update(schema.serialize().to_pybytes())
    return digest.hexdigest()[:16]
