"""Operability (issue 16): progress bars, the `fastingest inspect` command."""

from __future__ import annotations

import json
import subprocess
import sys

import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

import fastingest


@pytest.fixture
def parquet_file(tmp_path):
    path = tmp_path / "p.parquet"
    table = pa.table(
        {"id": pa.array(range(50_000), pa.int64()), "s": [f"v{i % 7}" for i in range(50_000)]}
    )
    pq.write_table(table, path, row_group_size=20_000, compression="zstd")
    return path, table


def test_progress_true_draws_a_bar_of_the_bytes_read(parquet_file, capsys, monkeypatch):
    monkeypatch.delenv("FASTINGEST_PROGRESS", raising=False)
    path, table = parquet_file
    stats = fastingest.ReadStats()
    assert fastingest.read_parquet(str(path), progress=True, stats=stats).equals(table)
    err = capsys.readouterr().err
    assert "read_parquet" in err and "100%" in err, err
    assert "files=1" in err and f"requests={stats.to_dict()['requests']}" in err, err


def test_progress_is_silent_by_default_off_a_terminal(parquet_file, capsys, monkeypatch):
    monkeypatch.delenv("FASTINGEST_PROGRESS", raising=False)
    path, table = parquet_file
    assert fastingest.read_parquet(str(path)).equals(table)
    assert fastingest.read_parquet(str(path), progress=False).equals(table)
    assert capsys.readouterr().err == ""


def test_progress_variable_sets_the_default(parquet_file, capsys, monkeypatch):
    path, _ = parquet_file
    monkeypatch.setenv("FASTINGEST_PROGRESS", "1")
    fastingest.read_chunks(str(path))
    assert "read_chunks" in capsys.readouterr().err
    # An explicit False wins over the variable.
    fastingest.read_parquet(str(path), progress=False)
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("FASTINGEST_PROGRESS", "sometimes")
    with pytest.raises(fastingest.InvalidArgumentError, match="FASTINGEST_PROGRESS"):
        fastingest.read_parquet(str(path))


def test_progress_orc_and_bad_values(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("FASTINGEST_PROGRESS", raising=False)
    path = tmp_path / "o.orc"
    orc.write_table(pa.table({"a": list(range(1000))}), path)
    assert fastingest.read_orc(str(path), progress=True).num_rows == 1000
    assert "read_orc" in capsys.readouterr().err
    with pytest.raises(fastingest.InvalidArgumentError, match="progress"):
        fastingest.read_parquet(str(path), progress="yes")
    with pytest.raises(TypeError, match="progress"):
        fastingest.iter_batches(str(path), progress=True)


def inspect(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fastingest", "inspect", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_inspect_parquet_as_text_and_json(parquet_file):
    path, table = parquet_file
    done = inspect(str(path), "--json")
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    want = pq.ParquetFile(path).metadata
    assert got["num_rows"] == want.num_rows == table.num_rows
    assert len(got["row_groups"]) == want.num_row_groups == 3
    assert [f["name"] for f in got["schema"]] == ["id", "s"]
    assert got["row_groups"][0]["columns"][0]["codec"] == "ZSTD"
    text = inspect(str(path))
    assert text.returncode == 0, text.stderr
    for words in ("id: int64", "s: string", "row group 0: 20000 rows", "row group 2: 10000 rows"):
        assert words in text.stdout, text.stdout


def test_inspect_orc(tmp_path):
    path = tmp_path / "o.orc"
    orc.write_table(pa.table({"a": list(range(3000)), "b": ["x"] * 3000}), path, stripe_size=4096)
    done = inspect(str(path), "--json")
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["num_rows"] == 3000
    assert len(got["stripes"]) == orc.ORCFile(path).nstripes
    text = inspect(str(path))
    assert "a: int64" in text.stdout and "stripe" in text.stdout, text.stdout


def test_inspect_errors_are_messages_not_tracebacks(tmp_path):
    missing = inspect(str(tmp_path / "nope.parquet"))
    assert missing.returncode == 1
    assert "nope.parquet" in missing.stderr and "Traceback" not in missing.stderr
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 garbage PAR1")
    corrupt = inspect(str(bad))
    assert corrupt.returncode == 1 and "bad.parquet" in corrupt.stderr
    option = inspect(str(bad), "-o", "novalue")
    assert option.returncode == 2 and "KEY=VALUE" in option.stderr
