"""Ctrl-C that lands while a read imports a module is delivered, not lost.

CPython drops a KeyboardInterrupt raised inside a weakref callback, and
imports run such callbacks (importlib's module locks). These tests raise
SIGINT from inside one, deterministically, where CI once hit it by chance
(`test_remote.py::test_ctrl_c_interrupts_a_slow_read_at_any_moment`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import weakref

import pyarrow as pa
import pyarrow.parquet as pq

from fastingest._interrupt import ctrl_c_held


class _Referent:
    pass


def _sigint_inside_a_weakref_callback() -> None:
    """Sends SIGINT so that its Python handler runs inside a weakref
    callback, where CPython prints and drops what the handler raises."""

    def callback(_ref: object) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        total = 0
        for i in range(100_000):  # the handler runs at one of these checks
            total += i

    referent = _Referent()
    ref = weakref.ref(referent, callback)
    del referent
    assert ref() is None


def test_a_held_ctrl_c_reaches_the_programs_own_handler_after_the_block():
    calls: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: calls.append(signum))
    try:
        mine = signal.getsignal(signal.SIGINT)
        with ctrl_c_held():
            _sigint_inside_a_weakref_callback()
            assert calls == [], "the handler ran inside the block"
        assert calls == [signal.SIGINT]
        assert signal.getsignal(signal.SIGINT) is mine
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_held_ctrl_c_is_a_keyboard_interrupt_by_default_and_nothing_when_ignored():
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        raised = False
        try:
            with ctrl_c_held():
                _sigint_inside_a_weakref_callback()
        except KeyboardInterrupt:
            raised = True
        assert raised, "the held Ctrl-C was lost"
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        with ctrl_c_held():
            _sigint_inside_a_weakref_callback()
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


def test_off_the_main_thread_the_block_runs_as_it_is():
    before = signal.getsignal(signal.SIGINT)
    seen: list[object] = []

    def run() -> None:
        with ctrl_c_held():
            seen.append(signal.getsignal(signal.SIGINT))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert seen == [before]


_FIRST_READ_CHILD = textwrap.dedent(
    """
    import os, signal, sys, weakref
    import fastingest

    # A shell's background job starts with SIGINT ignored (CI runs so).
    signal.signal(signal.SIGINT, signal.default_int_handler)

    assert "pyarrow" not in sys.modules, "import fastingest imported pyarrow"


    class Referent:
        pass


    def callback(_ref):
        os.kill(os.getpid(), signal.SIGINT)
        total = 0
        for i in range(100_000):
            total += i


    class SigintWhilePyarrowImports:
        # The first read imports pyarrow: Ctrl-C lands inside that import,
        # in a weakref callback, as it did by chance on CI.
        def find_spec(self, name, path=None, target=None):
            if name == "pyarrow":
                sys.meta_path.remove(self)
                referent = Referent()
                ref = weakref.ref(referent, callback)
                del referent
            return None


    sys.meta_path.insert(0, SigintWhilePyarrowImports())
    try:
        table = fastingest.read_parquet(sys.argv[1])
        print("finished", table.num_rows)
    except KeyboardInterrupt:
        print("interrupted")
    """
)


def test_ctrl_c_while_the_first_read_imports_pyarrow_interrupts_the_read(tmp_path):
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": list(range(1000))}), path)
    child = subprocess.run(
        [sys.executable, "-c", _FIRST_READ_CHILD, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "interrupted", child.stdout + child.stderr
    assert "Exception ignored" not in child.stderr, child.stderr
