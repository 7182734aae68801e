"""Local files read through a memory mapping (`Config.map_local_files`): the
same tables as `pread`, data that never points into a mapping, and a file cut
short during a read failing that read (naming the file) without killing the
process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fastingest

from .conftest import assert_tables_equal
from .datagen import all_types_table


def evict(path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)  # dirty pages stay in the page cache
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


MAPPED = fastingest.Config(map_local_files=True)
PREAD = fastingest.Config(map_local_files=False)


def test_the_knob_defaults_on_and_takes_the_environment(monkeypatch):
    assert fastingest.Config().map_local_files is True
    assert fastingest.Config(map_local_files=False).map_local_files is False
    monkeypatch.setenv("FASTINGEST_MAP_LOCAL_FILES", "0")
    assert fastingest.Config().map_local_files is False
    with pytest.raises(fastingest.InvalidArgumentError, match="map_local_files"):
        fastingest.Config(map_local_files="sometimes")


def mapped_bytes(path, config, **options) -> tuple[pa.Table, int, int]:
    """The table, the bytes read through a mapping and the column bytes needed."""
    stats = fastingest.ReadStats()
    table = fastingest.read_parquet(path, config=config, stats=stats, **options)
    return table, stats.bytes_mapped, stats.bytes_needed


@pytest.mark.parametrize("codec", ["none", "snappy"])
def test_mapped_and_read_files_give_pyarrow_tables(tmp_path, codec):
    # Over `small_file` (1 MiB) either way: a smaller file read whole is one
    # `pread` of all of it, not mapped.
    table = pa.concat_tables([all_types_table()] * 60)
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, compression=codec, row_group_size=2_000)
    expected = pq.read_table(path)
    got, mapped, needed = mapped_bytes(path, MAPPED)
    assert_tables_equal(got, expected)
    assert mapped >= needed, (mapped, needed)
    got, mapped, _ = mapped_bytes(path, PREAD)
    assert_tables_equal(got, expected)
    assert mapped == 0
    # Out of the page cache: bytes that must come from disk are read with
    # `pread` even when mapping is on (at least the first span; the disk's
    # readahead may bring later ones into the page cache meanwhile).
    evict(path)
    got, mapped, needed = mapped_bytes(path, MAPPED)
    assert_tables_equal(got, expected)
    assert mapped < needed, (mapped, needed)
    # Small spans (one column's chunk in each of 20 row groups) are read, not mapped.
    got, mapped, _ = mapped_bytes(path, MAPPED, columns=[table.column_names[0]])
    assert_tables_equal(got, expected.select([0]))
    assert mapped == 0
    for config in (MAPPED, PREAD):
        streamed = pa.Table.from_batches(
            list(fastingest.iter_batches(path, config=config)), expected.schema
        )
        assert_tables_equal(streamed, expected)


def test_long_cold_spans_of_a_rotational_disk_are_read_through_the_mapping(tmp_path):
    # Row groups of 8 MiB columns: spans of at least 4 MiB, which on a disk
    # read as rotational are read into the page cache through the mapping
    # and decoded in place; elsewhere, or with mapping off, read by `pread`.
    n = 1 << 20
    table = pa.table(
        {
            "i": pa.array(np.arange(2 * n, dtype=np.int64)),
            "f": pa.array(np.random.default_rng(1).standard_normal(2 * n)),
        }
    )
    path = tmp_path / "long.parquet"
    pq.write_table(table, path, compression="none", row_group_size=n)
    expected = pq.read_table(path)
    for config, all_mapped in (
        (fastingest.Config(local_disk="rotational"), True),
        (fastingest.Config(local_disk="ssd"), False),
        (fastingest.Config(local_disk="rotational", map_local_files=False), False),
    ):
        evict(path)
        got, mapped, needed = mapped_bytes(path, config)
        assert_tables_equal(got, expected)
        if all_mapped:
            assert mapped >= needed, (config, mapped, needed)
        else:
            assert mapped < needed, (config, mapped, needed)


def test_no_decoded_or_raw_bytes_point_into_the_mapping(tmp_path):
    # Uncompressed pages of view-typed strings are what a decoder hands out
    # as they are (views of the page); if those were the mapping's pages,
    # cutting the file short afterwards would turn them into zeros.
    n = 50_000
    words = pa.array([f"value-{i % 977:05d}-{'x' * (i % 23)}" for i in range(n)])
    table = pa.table(
        {
            "views": words.cast(pa.string_view()),
            "strings": words,
            "ints": pa.array(range(n), pa.int64()),
        }
    )
    path = tmp_path / "views.parquet"
    pq.write_table(table, path, compression="none", use_dictionary=False, row_group_size=10_000)
    expected = pq.read_table(path)
    read = fastingest.read_parquet(path, config=MAPPED)
    streamed = list(fastingest.iter_batches(path, config=MAPPED))
    chunks = fastingest.read_chunks(path, config=MAPPED)
    raw = [bytes(c) for c in chunks]
    os.truncate(path, 0)
    assert_tables_equal(read, expected)
    assert_tables_equal(pa.Table.from_batches(streamed, expected.schema), expected)
    assert [bytes(c) for c in chunks] == raw
    assert any(b.strip(b"\0") for b in raw)


CUT_SHORT = textwrap.dedent(
    """
    import os, sys
    import pyarrow as pa, pyarrow.parquet as pq
    import fastingest

    path = sys.argv[1]
    n = 3_000_000
    pq.write_table(
        pa.table({"a": pa.array(range(n), pa.int64()), "b": pa.array(range(n), pa.float64())}),
        path, compression="none", row_group_size=n // 12,
    )
    config = fastingest.Config(map_local_files=True, memory_budget="8M")
    if os.environ.get("LATE_FAULTHANDLER"):
        # A SIGBUS handler installed after fastingest's first mapping.
        import faulthandler
        fastingest.read_parquet(path, config=config)
        faulthandler.enable()
    batches = fastingest.iter_batches(path, config=config)
    first = next(batches)
    os.truncate(path, os.path.getsize(path) // 40)
    try:
        for _ in batches:
            pass
    except fastingest.FastIngestError as e:
        print("raised", type(e).__name__, e)
    else:
        print("no error")
    sys.stdout.flush()
    if len(sys.argv) > 2:
        # A fault outside fastingest's mappings still takes its usual course.
        import mmap
        with open(sys.argv[2], "w+b") as f:
            f.write(b"x" * 65536)
            f.flush()
            m = mmap.mmap(f.fileno(), 65536, access=mmap.ACCESS_READ)
            os.truncate(sys.argv[2], 0)
            print("foreign fault survived", m[60000])
    """
)


def run_script(tmp_path, *args: str, late: bool = False) -> subprocess.CompletedProcess:
    script = tmp_path / "cut_short.py"
    script.write_text(CUT_SHORT)
    env = {**os.environ, **({"LATE_FAULTHANDLER": "1"} if late else {})}
    return subprocess.run(
        [sys.executable, *([] if late else ["-X", "faulthandler"]), str(script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


@pytest.mark.parametrize("late", [False, True], ids=["faulthandler-first", "faulthandler-later"])
def test_a_file_cut_short_during_a_read_fails_that_read_naming_it(tmp_path, late):
    path = tmp_path / "shrinking.parquet"
    done = run_script(tmp_path, str(path), late=late)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "raised RemoteIOError" in done.stdout, done.stdout + done.stderr[-2000:]
    assert "shrinking.parquet" in done.stdout, done.stdout
    # Cut inside the first row group: pages mapped before the cut fault
    # (SIGBUS), read as zeros, and fail the read; bytes read after it fail
    # it in the same words (the file held them when it was opened).
    assert "cut short while it was being read" in done.stdout, done.stdout
    assert "Fatal Python error" not in done.stderr


@pytest.mark.parametrize("late", [False, True], ids=["faulthandler-first", "faulthandler-later"])
def test_a_fault_outside_the_mappings_still_kills_the_process(tmp_path, late):
    done = run_script(tmp_path, str(tmp_path / "a.parquet"), str(tmp_path / "other.bin"), late=late)
    assert "raised" in done.stdout, done.stdout + done.stderr[-2000:]
    assert "foreign fault survived" not in done.stdout
    assert done.returncode == -7, (done.returncode, done.stderr[-2000:])  # SIGBUS
    # faulthandler, the handler before ours, still reports it.
    assert "Fatal Python error: Bus error" in done.stderr
