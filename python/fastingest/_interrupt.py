"""Ctrl-C that lands while a read imports a module is delivered, not lost.

CPython runs a signal's Python handler at the next check of whatever Python
code runs in the main thread. An import runs weakref callbacks (importlib's
module locks have them), and a ``KeyboardInterrupt`` raised inside one is
printed as "Exception ignored" and dropped. A read whose Ctrl-C was dropped
that way then waits for its requests, up to their timeout. So a read's
imports run with Ctrl-C held back, and a held Ctrl-C is raised again once the
import is done, through whatever handler the program had installed.
"""

from __future__ import annotations

import importlib
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType


@contextmanager
def ctrl_c_held() -> Iterator[None]:
    """Holds SIGINT back for the block and raises it again after it.

    Only the main thread runs signal handlers (and may set them); elsewhere,
    and where the handler was not set from Python, the block runs as it is.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is None:
        yield
        return
    held: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, _frame: held.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if held:
            # Runs the program's own handler (KeyboardInterrupt by default,
            # nothing for SIG_IGN) here, outside any callback.
            signal.raise_signal(signal.SIGINT)


def import_module(name: str) -> ModuleType:
    """``importlib.import_module`` with Ctrl-C held back while it runs."""
    module = sys.modules.get(name)
    if module is not None:
        return module
    with ctrl_c_held():
        return importlib.import_module(name)
