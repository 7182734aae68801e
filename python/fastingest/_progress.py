"""Progress of a long read on stderr (or a notebook), through tqdm.

``progress=True`` shows a bar for that read anywhere (logs and CI
included); ``progress=False`` never; the default shows one only on a
terminal and only when the read is still going after two seconds.
``FASTINGEST_PROGRESS=1`` (or ``0``) forces it on (off) for every read that
does not say.

The bar counts bytes: planned (grows as footers are read and files
planned) against fetched or served by the cache, with the rate, the
requests made and the files opened. It is drawn from the read's
:class:`ReadStats`, polled by a thread while the read runs in Rust with the
GIL released.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ._fastingest import ReadStats
from ._interrupt import import_module
from .exceptions import InvalidArgumentError

POLL_SECONDS = 0.1
# A read shorter than this draws nothing unless progress was asked for.
QUIET_SECONDS = 2.0


def _wanted(progress: Any) -> bool | None:
    """True (forced on), False (off) or None (on a terminal, after a delay)."""
    if progress is None:
        env = os.environ.get("FASTINGEST_PROGRESS", "").strip().lower()
        if env in ("1", "true", "yes", "on"):
            return True
        if env in ("0", "false", "no", "off"):
            return False
        if env:
            raise InvalidArgumentError(
                f"FASTINGEST_PROGRESS must be 1 or 0 (true/false), not {env!r}"
            )
        return None
    if not isinstance(progress, bool):
        raise InvalidArgumentError(f"progress must be True, False or None, not {progress!r}")
    return progress


@contextmanager
def reporting(args: dict[str, Any], progress: Any, description: str) -> Iterator[None]:
    """Shows the progress of the read made inside the block with `args`
    (whose ``stats`` it fills in when the caller passed none)."""
    wanted = _wanted(progress)
    # Off a terminal the default draws nothing: decided before importing
    # tqdm (tens of milliseconds a process's first read would pay).
    if wanted is False or (wanted is None and not sys.stderr.isatty()):
        yield
        return
    try:
        tqdm = import_module("tqdm.auto").tqdm
    except ImportError as e:
        if wanted:
            raise InvalidArgumentError("progress=True needs tqdm: pip install tqdm") from e
        yield
        return
    if args.get("stats") is None:
        args["stats"] = ReadStats()
    stats: ReadStats = args["stats"]
    before = stats.to_dict()
    started = time.monotonic()
    terminal = sys.stderr.isatty()
    bar: Any = None

    def update() -> None:
        nonlocal bar
        if bar is None:
            if not wanted and time.monotonic() - started < QUIET_SECONDS:
                return
            bar = tqdm(
                total=0,
                desc=description,
                unit="B",
                unit_scale=True,
                unit_divisor=1024,
                leave=bool(wanted),
                file=sys.stderr,
                dynamic_ncols=True,
                # A log file gets a line every few seconds, not every tick.
                mininterval=0.1 if terminal else 5.0,
            )
        now = stats.to_dict()
        delta = {k: now[k] - before[k] for k in now}
        done = int(delta["bytes_fetched"] + delta["bytes_from_cache"])
        bar.total = max(int(delta["bytes_needed"]), done)
        bar.set_postfix(files=int(delta["files"]), requests=int(delta["requests"]), refresh=False)
        bar.update(done - bar.n)

    stop = threading.Event()

    def poll() -> None:
        while not stop.wait(POLL_SECONDS):
            update()

    poller = threading.Thread(target=poll, name="fastingest-progress", daemon=True)
    poller.start()
    try:
        yield
    finally:
        stop.set()
        poller.join()
        # Asked for: drawn even when the read ended before the first tick.
        if bar is not None or wanted:
            update()
            bar.refresh()
            bar.close()
