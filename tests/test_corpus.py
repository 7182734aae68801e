"""Conformance with real files from other writers (apache/parquet-testing):
every file pyarrow reads must read identically, locally and through MinIO;
every file pyarrow rejects (most of bad_data/) must raise a clear fastingest
exception naming the file."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

import fastingest

from .conftest import assert_tables_equal

# Files fastingest knowingly reads differently from pyarrow, with the reason.
# This list only shrinks.
KNOWN_UNSUPPORTED = {
    "data/int96_from_spark.parquet": (
        "INT96 timestamps outside the nanosecond range (years < 1677) overflow "
        "differently in arrow-rs and pyarrow; the in-range rows are compared"
    ),
}


def corpus_files(corpora: Path) -> list[Path]:
    root = corpora / "parquet-testing"
    files = sorted(p for p in (root / "data").rglob("*") if p.is_file() and ".parquet" in p.name)
    return files + sorted((root / "bad_data").glob("*.parquet"))


def _expected(path: Path):
    try:
        return pq.read_table(path), None
    except Exception as e:  # noqa: BLE001 - any rejection by pyarrow counts
        return None, e


def check_file(path: Path, rel: str, source: str, storage_options=None) -> str:
    want, pa_error = _expected(path)
    if rel in KNOWN_UNSUPPORTED:
        try:
            got = fastingest.read_parquet(source, storage_options=storage_options)
        except fastingest.FastIngestError as e:
            assert path.name in str(e)
            return "known-rejected"
        if rel.endswith("int96_from_spark.parquet") and want is not None:
            assert_tables_equal(got.slice(0, 2), want.slice(0, 2))
        return "known-differs"
    # A bad_data/ file that pyarrow reads (ARROW-GH-43605: a zero bit-width
    # dictionary index run, which means all-zero indices) must read the same.
    if want is not None:
        got = fastingest.read_parquet(source, storage_options=storage_options)
        assert_tables_equal(got, want)
        return "equal"
    with pytest.raises(fastingest.FastIngestError) as info:
        fastingest.read_parquet(source, storage_options=storage_options)
    assert path.name in str(info.value), f"error does not name the file: {info.value}"
    assert pa_error is not None
    return "rejected"


def test_corpus_local(corpora):
    files = corpus_files(corpora)
    assert len(files) > 80
    outcomes: dict[str, str] = {}
    failures = []
    for path in files:
        rel = str(path.relative_to(corpora / "parquet-testing"))
        try:
            outcomes[rel] = check_file(path, rel, str(path))
        except AssertionError as e:
            failures.append(f"{rel}: {e}")
    assert not failures, "\n".join(failures)
    assert sum(1 for v in outcomes.values() if v == "equal") >= 70
    assert all(outcomes[k].startswith("known") for k in KNOWN_UNSUPPORTED)


def test_corpus_through_minio(corpora, s3):
    files = corpus_files(corpora)
    failures = []
    for path in files:
        rel = str(path.relative_to(corpora / "parquet-testing"))
        url = s3.put_file(rel, path)
        try:
            check_file(path, rel, url, s3.options())
        except AssertionError as e:
            failures.append(f"{rel}: {e}")
    assert not failures, "\n".join(failures)


def test_corpus_metadata_and_plans_for_readable_files(corpora):
    for path in corpus_files(corpora):
        if "bad_data" in str(path) or path.suffix != ".parquet":
            continue
        want, err = _expected(path)
        if want is None:
            continue
        try:
            md = fastingest.metadata(str(path))
        except fastingest.FastIngestError:
            continue
        assert (
            md["num_rows"] == pq.ParquetFile(path).metadata.num_rows
            or md["num_rows"] == want.num_rows
        )
        # metadata() reports the schema a read returns, key-value metadata included.
        assert md["schema"].equals(want.schema, check_metadata=True) or "map<" in str(want.schema)
        plan = fastingest.plan_parquet(str(path))[0]
        assert plan["bytes_to_fetch"] >= plan["bytes_needed"]
        assert plan["bytes_to_fetch"] <= path.stat().st_size


def test_encrypted_files_are_not_implemented_errors(corpora):
    files = sorted((corpora / "parquet-testing" / "data").rglob("*.parquet.encrypted"))
    assert len(files) >= 10
    for path in files:
        with pytest.raises(NotImplementedError, match="encrypted") as info:
            fastingest.read_parquet(str(path))
        assert path.name in str(info.value)


def test_corpus_with_string_views(corpora):
    """Every file pyarrow reads reads with ``binary_type=binary_view()`` too:
    its string and binary columns as views, with pyarrow's values."""
    import pyarrow as pa

    from .test_binary_type import relaid_schema

    failures = []
    compared = 0
    for path in corpus_files(corpora):
        rel = str(path.relative_to(corpora / "parquet-testing"))
        want, _ = _expected(path)
        if want is None or rel in KNOWN_UNSUPPORTED:
            continue
        try:
            got = fastingest.read_parquet(str(path), binary_type=pa.binary_view())
            assert got.schema.equals(relaid_schema(want.schema, "binary_view")), (
                got.schema,
                want.schema,
            )
            assert_tables_equal(got.cast(want.schema), want)
            compared += 1
        except (AssertionError, fastingest.FastIngestError) as e:
            failures.append(f"{rel}: {e}")
    assert not failures, "\n".join(failures)
    assert compared >= 70


def test_page_checksum_files_as_parquet_testing_describes_them(corpora):
    """parquet-testing's CRC files: with `verify_checksums` those whose
    pages match their CRCs read as pyarrow reads them, and those with a bad
    CRC (a data page of `a`, a dictionary page of each column) fail naming
    the page, as pyarrow's `page_checksum_verification` fails them. Without
    it every one reads, as pyarrow reads them unchecked."""
    data = corpora / "parquet-testing" / "data"
    on = fastingest.Config(verify_checksums=True)
    good = [
        "datapage_v1-uncompressed-checksum.parquet",
        "datapage_v1-snappy-compressed-checksum.parquet",
        "rle-dict-snappy-checksum.parquet",
        "plain-dict-uncompressed-checksum.parquet",
    ]
    for name in good:
        want = pq.read_table(data / name, page_checksum_verification=True)
        assert fastingest.read_parquet(data / name, config=on).equals(want), name
    bad = {
        "datapage_v1-corrupt-checksum.parquet": '"a"',
        "rle-dict-uncompressed-corrupt-checksum.parquet": '"long_field"',
    }
    for name, column in bad.items():
        path = data / name
        with pytest.raises(OSError, match="(?i)crc|checksum"):
            pq.read_table(path, page_checksum_verification=True)
        with pytest.raises(fastingest.CorruptFileError) as caught:
            fastingest.read_parquet(path, config=on)
        said = str(caught.value)
        assert name in said and "page checksum mismatch" in said, said
        assert f"column {column}" in said, said
        assert fastingest.read_parquet(path).equals(pq.read_table(path)), name
