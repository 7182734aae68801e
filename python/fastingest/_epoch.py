"""The training loader's epoch plan: which rows each rank and each DataLoader
worker reads, and in which order. Pure arithmetic over the dataset's units
(row groups and their row counts): no I/O and no torch, so every process
computes the same plan from the same numbers.

The shape of an epoch:

1. The units are put in a seeded order (``shuffle``) and their rows laid end
   to end; rank ``r`` of ``W`` takes the ``r``-th of ``W`` contiguous, equal
   (±1 row) shares, so ranks' batch counts differ by at most one.
   ``drop_last`` gives every rank the same whole number of batches instead.
2. A rank's batches are consecutive ``batch_size`` rows of its share, in
   order. DataLoader worker ``w`` of ``K`` takes a contiguous block of them
   (the lower workers one more when they do not divide evenly).
3. Each worker's block is cut into *windows*: consecutive pieces of units
   whose decoded size stays within the shuffle buffer. A window's rows are
   read in a seeded permutation, so a batch mixes rows of every unit in its
   window; no window spans two blocks, so no worker decodes another's rows.
   The DataLoader hands out the workers' batches round-robin, so after ``k``
   batches, worker ``w`` has given ``k // K + (w < k % K)`` of its own.

Resuming with the same world size and workers continues the same plan;
resuming with others lays the rows no rank consumed out again over the new
ranks (:func:`rest`), keeping their windows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

Piece = tuple[int, int, int]
"""Rows ``[start, end)`` of unit ``u``, after the filter: ``(u, start, end)``."""

Segment = tuple[int, int, int]
"""Positions ``[start, end)`` of window ``w``'s permuted rows: ``(w, start, end)``."""


@dataclass(frozen=True)
class Unit:
    """One row group as the plan sees it."""

    rows: int
    """Rows after the filter."""
    decoded_bytes: int
    """About how much memory its rows take decoded."""


@dataclass(frozen=True)
class Settings:
    """What shapes an epoch besides the ranks and workers."""

    batch_size: int
    shuffle: bool
    seed: int
    drop_last: bool
    shuffle_buffer: int
    """Bytes of decoded rows a window may hold."""


@dataclass(frozen=True)
class Window:
    """Rows read together and mixed: consecutive pieces of one rank's share."""

    pieces: tuple[Piece, ...]
    key: tuple[int, ...]
    """Seeds the permutation of its rows."""

    @property
    def rows(self) -> int:
        return sum(end - start for _, start, end in self.pieces)

    def order(self, shuffle: bool) -> np.ndarray:
        """The window's rows (positions in its pieces laid end to end) in the
        order they are read."""
        if not shuffle:
            return np.arange(self.rows, dtype=np.int64)
        rows = np.random.default_rng(list(self.key)).permutation(self.rows)
        return rows.astype(np.int64, copy=False)  # int64 already: no copy


@dataclass(frozen=True)
class Layout:
    """Every rank's rows for one epoch, or for the rest of one after a resume."""

    windows: tuple[Window, ...]
    ranks: tuple[tuple[Segment, ...], ...]
    """Per rank, its rows in order: segments of the windows."""
    batch_size: int
    offset: int = 0
    """Batches every rank had consumed of this epoch before this layout starts."""

    @property
    def world_size(self) -> int:
        return len(self.ranks)

    def rows(self, rank: int) -> int:
        return sum(end - start for _, start, end in self.ranks[rank])

    def batches(self, rank: int) -> int:
        """Batches rank ``rank`` yields (the last may be short)."""
        return -(-self.rows(rank) // self.batch_size)

    def worker_blocks(self, rank: int, workers: int) -> list[tuple[int, int]]:
        """Per worker, its batches of the rank: ``(first, count)``."""
        return deal(self.batches(rank), workers)

    def worker_rows(
        self, rank: int, workers: int, worker: int, consumed: int
    ) -> tuple[Segment, ...]:
        """The rows worker ``worker`` of ``workers`` still reads after the rank
        consumed ``consumed`` batches of this layout. The workers are rotated
        so that the DataLoader's round-robin, which starts again at worker 0,
        goes on where it stopped."""
        plays = (worker + consumed) % workers
        first, count = self.worker_blocks(rank, workers)[plays]
        done = min(count, taken(consumed, workers, plays))
        start = (first + done) * self.batch_size
        end = min((first + count) * self.batch_size, self.rows(rank))
        return cut(self.ranks[rank], start, end)


def deal(batches: int, workers: int) -> list[tuple[int, int]]:
    """``batches`` dealt out to ``workers`` in contiguous blocks, the lower
    workers one more when they do not divide evenly: ``(first, count)``."""
    q, extra = divmod(batches, workers)
    blocks, first = [], 0
    for w in range(workers):
        count = q + (w < extra)
        blocks.append((first, count))
        first += count
    return blocks


def taken(consumed: int, workers: int, worker: int) -> int:
    """Batches of worker ``worker`` among the first ``consumed`` that a
    round-robin over ``workers`` hands out."""
    return consumed // workers + (worker < consumed % workers)


def cut(segments: Sequence[Segment], start: int, end: int) -> tuple[Segment, ...]:
    """Rows ``[start, end)`` of the row sequence ``segments`` (or pieces) make."""
    out: list[Segment] = []
    position = 0
    for window, a, b in segments:
        n = b - a
        lo, hi = max(start, position), min(end, position + n)
        if lo < hi:
            out.append((window, a + lo - position, a + hi - position))
        position += n
        if position >= end:
            break
    return tuple(out)


def shares(total: int, world_size: int, batch_size: int, drop_last: bool) -> list[int]:
    """Where each rank's share of ``total`` rows starts (and the last ends)."""
    if drop_last:
        per = total // world_size // batch_size * batch_size
        return [r * per for r in range(world_size + 1)]
    return [r * total // world_size for r in range(world_size + 1)]


# Windows per worker's block, at least: a worker cuts batches from one
# window while the next is fetched.
WINDOWS_PER_WORKER = 8


def fresh(
    units: Sequence[Unit], settings: Settings, epoch: int, world_size: int, workers: int = 1
) -> Layout:
    """The plan of a whole epoch, for ``workers`` DataLoader workers per rank
    (which places the windows: the rows of each rank do not depend on it)."""
    n = len(units)
    if settings.shuffle:
        order = np.random.default_rng([settings.seed, epoch]).permutation(n).tolist()
    else:
        order = list(range(n))
    laid: list[Piece] = [(u, 0, units[u].rows) for u in order if units[u].rows > 0]
    total = sum(units[u].rows for u, _, _ in laid)
    bounds = shares(total, world_size, settings.batch_size, settings.drop_last)
    windows: list[Window] = []
    ranks: list[tuple[Segment, ...]] = []
    for rank in range(world_size):
        rows = bounds[rank + 1] - bounds[rank]
        pieces = cut(laid, bounds[rank], bounds[rank + 1])
        # Each worker's block of batches gets windows of its own: a window
        # across two blocks would be read and decoded by both workers.
        groups = [
            group
            for start, end in _block_rows(rows, settings.batch_size, workers)
            for group in _windows(cut(pieces, start, end), units, settings)
        ]
        segments = []
        for j, group in enumerate(groups):
            key = (settings.seed, epoch, world_size, rank, j)
            window = Window(tuple(group), key)
            segments.append((len(windows), 0, window.rows))
            windows.append(window)
        ranks.append(tuple(segments))
    return Layout(tuple(windows), tuple(ranks), settings.batch_size)


def resumed(
    layout: Layout, workers: int, consumed: int, world_size: int, drop_last: bool
) -> Layout:
    """What is left of ``layout`` after every rank consumed ``consumed``
    batches through ``workers`` DataLoader workers, for ``world_size`` ranks
    (with the same ranks and workers, iterate ``layout`` itself with
    :meth:`Layout.worker_rows`: that keeps the batches). With the same world
    size each rank keeps its own rows, so its batch count does not depend on
    the workers; with another, the rows are shared out again."""
    if world_size == layout.world_size:
        ranks = tuple(
            tuple(s for w in range(workers) for s in layout.worker_rows(r, workers, w, consumed))
            for r in range(world_size)
        )
        return Layout(layout.windows, ranks, layout.batch_size, layout.offset + consumed)
    return rest(layout, workers, consumed, world_size, drop_last)


def rest(
    layout: Layout,
    workers: int,
    consumed: int,
    world_size: int,
    drop_last: bool,
) -> Layout:
    """The rows of ``layout`` no rank consumed (each rank consumed ``consumed``
    batches through ``workers`` DataLoader workers), laid out again over
    ``world_size`` ranks, in their windows."""
    left: list[Segment] = []
    for rank in range(layout.world_size):
        for worker in range(workers):
            left.extend(layout.worker_rows(rank, workers, worker, consumed))
    total = sum(b - a for _, a, b in left)
    bounds = shares(total, world_size, layout.batch_size, drop_last)
    ranks = tuple(cut(left, bounds[r], bounds[r + 1]) for r in range(world_size))
    return Layout(layout.windows, ranks, layout.batch_size, layout.offset + consumed)


def _block_rows(rows: int, batch_size: int, workers: int) -> list[tuple[int, int]]:
    """The rows ``[start, end)`` of each worker's block of a rank's ``rows``
    (empty blocks left out)."""
    out = []
    for first, count in deal(-(-rows // batch_size), workers):
        start, end = first * batch_size, min((first + count) * batch_size, rows)
        if end > start:
            out.append((start, end))
    return out


def _windows(
    pieces: Sequence[Piece], units: Sequence[Unit], settings: Settings
) -> list[list[Piece]]:
    """Consecutive pieces grouped while their decoded size stays within the
    shuffle buffer and a ``WINDOWS_PER_WORKER``-th of the block (a piece
    larger than that is a window alone), so that a worker's fetch runs ahead
    while it cuts batches from earlier windows. Without a shuffle each piece
    is its own window: nothing is mixed."""
    if not settings.shuffle:
        return [[p] for p in pieces]

    def size_of(piece: Piece) -> float:
        unit = units[piece[0]]
        return unit.decoded_bytes * (piece[2] - piece[1]) / max(unit.rows, 1)

    block = sum(size_of(p) for p in pieces)
    limit = min(settings.shuffle_buffer, block / WINDOWS_PER_WORKER)
    groups: list[list[Piece]] = []
    current: list[Piece] = []
    size = 0.0
    for piece in pieces:
        piece_bytes = size_of(piece)
        if current and size + piece_bytes > limit:
            groups.append(current)
            current, size = [], 0.0
        current.append(piece)
        size += piece_bytes
    if current:
        groups.append(current)
    return groups
