"""Random Parquet files (every type pyarrow writes, nested, with nulls, all
its encodings, page versions, page sizes and page indexes) read as pyarrow
reads them: whole, by columns, through random filters, by row groups, with
`read_dictionary` and `binary_type`, and in batches; from local disk and from
MinIO, directly and through a disk cache; their timestamps written as INT96 and read in a random
`coerce_int96_timestamp_unit`; and random hive directories through filters. `python -m
devtools.random_parquet --seeds 0-4999` (`--datasets`, `--minio`, `--minio --cache`) runs the
same checks over more seeds."""

from __future__ import annotations

import pytest

import fastingest
from devtools.random_parquet import (
    check_dataset_seed,
    check_int96_seed,
    check_seed,
    through_store,
)

SEEDS = range(20261128, 20261128 + 60)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_files_and_reads_match_pyarrow(tmp_path, seed):
    found = check_seed(seed, tmp_path, fastingest.read_parquet, fastingest.iter_batches)
    assert not found, "\n".join(f"{d.read}: {d.detail}" for d in found)


@pytest.mark.parametrize("seed", range(20261128, 20261128 + 30))
def test_random_hive_directories_filter_as_pyarrow_does(tmp_path, seed):
    found = check_dataset_seed(seed, tmp_path, fastingest.read_parquet)
    assert not found, "\n".join(f"{d.read}: {d.detail}" for d in found)


@pytest.mark.parametrize("seed", range(20261128, 20261128 + 12))
def test_random_files_read_from_minio_match_pyarrow(tmp_path, s3, seed):
    # The fetch plans of a store: whole small files, pages picked by the
    # page index, coalesced and split ranges.
    read, batches = through_store(s3.put, s3.options())
    found = check_seed(seed, tmp_path, read, batches)
    assert not found, "\n".join(f"{d.read}: {d.detail}" for d in found)


@pytest.mark.parametrize("seed", range(20261128, 20261128 + 12))
def test_random_files_read_through_a_cache_planned_otherwise_match_pyarrow(tmp_path, s3, seed):
    # Each read with another slice size, so that the entries earlier reads
    # wrote serve later ones whose spans and requests fall elsewhere.
    read, batches = through_store(s3.put, s3.options(), tmp_path / "cache")
    found = check_seed(seed, tmp_path, read, batches)
    assert not found, "\n".join(f"{d.read}: {d.detail}" for d in found)


@pytest.mark.parametrize("seed", range(20261128, 20261128 + 20))
def test_random_int96_files_read_in_the_unit_asked_for_as_pyarrow_reads_them(tmp_path, seed):
    found = check_int96_seed(seed, tmp_path, fastingest.read_parquet, fastingest.iter_batches)
    assert not found, "\n".join(f"{d.read}: {d.detail}" for d in found)
