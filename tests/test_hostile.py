"""Hostile and damaged input (issue 16): files whose footers and page
headers lie, a short seeded pass of the mutation fuzzer, and the edge cases
found by trying fastingest as a new user would."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

import fastingest
from devtools import fuzz, hostile

ROOT = Path(__file__).resolve().parent.parent


def read_limited(path: Path, call: str, memory_mib: int = 512, keywords: str = "") -> dict:
    """`fastingest.<call>(path)` in a fresh process whose address space may
    grow by `memory_mib` after start-up: an allocation of what a lying
    header claims kills it (the test then fails on the exit code). pyarrow
    (and numpy, OpenBLAS under it) is imported before the cap: a read
    returns its tables, and their ~300 MiB of mappings would otherwise come
    out of the allowance, leaving the test to fail on the import at random."""
    code = f"""
import json, sys
import fastingest
import pyarrow
from devtools.fuzz import limit_memory
limit_memory({memory_mib})
try:
    fastingest.{call}({str(path)!r}{keywords})
    print(json.dumps({{"ok": True}}))
except fastingest.FastIngestError as e:
    print(json.dumps({{"ok": False, "type": type(e).__name__, "message": str(e)}}))
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, (
        f"{call} on {path.name} died ({done.returncode}): {done.stderr[-3000:]}"
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_hand_written_files_are_honest(tmp_path):
    # The builders' unlying files read the same in pyarrow and fastingest,
    # so a lie is the only thing wrong with the hostile ones.
    path = tmp_path / "honest.parquet"
    path.write_bytes(hostile.parquet_file(values=1000))
    assert pq.read_table(path)["x"].to_pylist() == list(range(1000))
    assert fastingest.read_parquet(str(path)).equals(pq.read_table(path))
    orc_path = tmp_path / "honest.orc"
    orc_path.write_bytes(hostile.orc_file())
    assert orc.read_table(orc_path).schema.names == ["a"]
    assert fastingest.read_orc(str(orc_path)).schema.field("a").type == pa.int64()


@pytest.mark.parametrize("call", ["read_parquet", "read_chunks", "metadata", "iter_batches"])
def test_footer_claiming_a_billion_columns_fails_before_allocating(tmp_path, call):
    path = tmp_path / "children.parquet"
    path.write_bytes(hostile.parquet_file(claim_children=1 << 30))
    got = read_limited(path, call if call != "iter_batches" else "read_parquet")
    assert got["type"] == "CorruptFileError", got
    assert "children.parquet" in got["message"] and "children" in got["message"].split(":", 1)[1]


def test_page_claiming_two_gib_fails_before_allocating(tmp_path):
    path = tmp_path / "page.parquet"
    path.write_bytes(hostile.parquet_file(values=1000, claim_uncompressed=(1 << 31) - 1))
    got = read_limited(path, "read_parquet")
    assert got["type"] == "CorruptFileError", got
    assert "page.parquet" in got["message"]
    assert "more than the codec can produce" in got["message"]
    # The byte range names where the page header is.
    assert "(bytes 4.." in got["message"]


@pytest.mark.parametrize(
    ("rows", "page_values"),
    [
        ((1 << 28) - 5, None),  # the footer alone: its pages count 1000 values
        ((1 << 23) + 1, None),
        (1 << 28, 1 << 28),  # footer and page header agree, on 1 GiB of int32
        ((1 << 23) + 1, (1 << 23) + 1),
        ((1 << 28) + 1, (1 << 28) + 1),  # beyond what is decoded here at all
        (1 << 40, None),
    ],
)
def test_a_claim_of_many_rows_does_not_size_the_decoders_output(tmp_path, rows, page_values):
    # Row groups of over 2^23 rows are decoded here when each chunk's page
    # headers count the footer's rows; the output is reserved from that
    # count. Under a 512 MiB cap on the address space, a claim the pages do
    # not back reserves nothing, and one they do whose room the allocator
    # refuses goes to the `parquet` crate: an answer, never an abort.
    path = tmp_path / "rows.parquet"
    path.write_bytes(
        hostile.parquet_file(values=1000, claim_rows=rows, claim_page_values=page_values)
    )
    got = read_limited(path, "read_parquet")
    try:
        theirs = pq.read_table(path)
    except OSError:
        theirs = None
    if theirs is None:
        assert got["type"] == "CorruptFileError", got
        assert "rows.parquet" in got["message"], got
    else:
        # The 1000 values the page holds, as pyarrow reads them.
        assert got["ok"], got
        assert fastingest.read_parquet(str(path)).equals(theirs)


def test_fixed_width_claiming_a_gigabyte_per_value_fails_before_allocating(tmp_path):
    honest = tmp_path / "fixed4.parquet"
    honest.write_bytes(hostile.parquet_file(values=100, claim_width=4))
    assert fastingest.read_parquet(str(honest)).equals(pq.read_table(honest))
    # 1000 values of 2^30 bytes: the decoder would reserve a terabyte (the
    # fuzzer's input 20261123:718638 aborted the process).
    path = tmp_path / "fixed.parquet"
    path.write_bytes(hostile.parquet_file(values=1000, claim_width=1 << 30))
    for call in ("read_parquet", "metadata"):
        got = read_limited(path, call)
        assert got["type"] == "CorruptFileError", got
        assert "fixed.parquet" in got["message"]
        assert "fixed-length values of 1073741824 bytes" in got["message"]


# Honest tails and their lies, and what each lie is refused with. Snappy:
# the fuzzer's input 777001:1546259, where orc-rust zero-filled the 1.3 GB a
# chunk declared and the process died. Zstd: 16,384 RLE blocks of 128 KiB,
# 2 GiB from 64 KiB on disk, which orc-rust decompresses to its end. Block
# size: orc-rust allocates a whole block for each LZ4 chunk.
ORC_TAIL_LIES = {
    "block size": (
        {"snappy_claim": 0, "block_size": 1 << 20},
        {"snappy_claim": 0, "block_size": 1 << 40},
        "the postscript gives 1099511627776-byte compression blocks, more than 67108864",
    ),
    "snappy": (
        {"snappy_claim": 0},
        {"snappy_claim": 1_348_519_118},
        "metadata: a Snappy chunk at byte 0 of a stream says it holds 1348519118 bytes",
    ),
    "zstd": (
        {"zstd_blocks": 0},
        {"zstd_blocks": 16_384},
        "metadata: a zstd chunk at byte 0 of a stream unfolds to as many as 2147483648 bytes",
    ),
}


@pytest.mark.parametrize("call", ["read_orc", "metadata"])
@pytest.mark.parametrize("lie", sorted(ORC_TAIL_LIES))
def test_an_orc_tail_that_would_unfold_to_gigabytes_fails_before_allocating(tmp_path, lie, call):
    honest_args, lying_args, refusal = ORC_TAIL_LIES[lie]
    honest = tmp_path / "honest.orc"
    honest.write_bytes(hostile.orc_file(**honest_args))
    assert orc.read_table(honest).schema.names == ["a"]
    assert fastingest.read_orc(str(honest)).num_rows == 0
    path = tmp_path / "lying.orc"
    path.write_bytes(hostile.orc_file(**lying_args))
    got = read_limited(path, call)
    assert got["type"] == "CorruptFileError", got
    assert "lying.orc" in got["message"]
    assert refusal in got["message"]


def test_an_orc_snappy_chunk_claiming_too_much_in_a_stripe_is_refused(tmp_path):
    # Text that Snappy compresses: its chunks hold whole 256 KiB blocks, whose
    # lengths take 3-byte varints.
    table = pa.table({"s": [f"row {i:08d} of a table that compresses well" for i in range(60_000)]})
    path = tmp_path / "stripe.orc"
    orc.write_table(table, path, compression="snappy")
    assert fastingest.read_orc(str(path)).equals(table)
    # Walk the data section's chunks to the first compressed one with a
    # 3-byte length; that length becomes the most 3 bytes hold, 2^21 - 1.
    stripe = fastingest.metadata(str(path))["stripes"][0]
    data = bytearray(path.read_bytes())
    at = stripe["offset"] + stripe["index_length"]
    while True:
        header = int.from_bytes(data[at : at + 3], "little")
        varint = data[at + 3 : at + 6]
        if header & 1 == 0 and varint[0] & 0x80 and varint[1] & 0x80 and not varint[2] & 0x80:
            break
        at += 3 + (header >> 1)
        assert at < stripe["offset"] + stripe["index_length"] + stripe["data_length"]
    data[at + 3 : at + 6] = b"\xff\xff\x7f"
    path.write_bytes(bytes(data))
    with pytest.raises(fastingest.CorruptFileError) as caught:
        fastingest.read_orc(str(path))
    message = str(caught.value)
    assert "stripe.orc" in message
    assert "a Snappy chunk at byte" in message
    assert "says it holds 2097151 bytes, more than the file's compression blocks" in message


def test_an_orc_zlib_chunk_unfolding_past_the_block_size_is_refused(tmp_path):
    # Written with 1 MiB compression blocks, then the postscript made to say
    # 256 KiB: each data chunk now unfolds past the block size the file
    # gives, which the ORC format (and its C++ and Java readers) do not
    # allow. Zlib streams say nothing of their size up front, so the read
    # stops at the limit and names the chunk. (pyarrow stores this text's
    # LZ4 chunks uncompressed; the Rust tests hold LZ4 to the limit.)
    codec = "zlib"
    table = pa.table({"s": [f"row {i:08d} of a table that compresses well" for i in range(60_000)]})
    path = tmp_path / f"blocks-{codec}.orc"
    orc.write_table(table, path, compression=codec, compression_block_size=1 << 20)
    assert fastingest.read_orc(str(path)).equals(table)
    data = bytearray(path.read_bytes())
    ps_start = len(data) - 1 - data[-1]
    postscript = bytes(data[ps_start:-1])
    # Field 3 (compressionBlockSize), a varint: 1 MiB, then 256 KiB.
    assert postscript.count(b"\x18\x80\x80\x40") == 1
    data[ps_start:-1] = postscript.replace(b"\x18\x80\x80\x40", b"\x18\x80\x80\x10")
    path.write_bytes(bytes(data))
    with pytest.raises(fastingest.CorruptFileError) as caught:
        fastingest.read_orc(str(path))
    message = str(caught.value)
    assert f"blocks-{codec}.orc" in message
    assert "column 's'" in message
    assert "the compression chunk at byte" in message
    assert "262144 bytes" in message


@pytest.mark.parametrize("call", ["read_orc", "iter_orc_batches", "read_orc_stripes"])
def test_an_lzo_stripe_footer_longer_than_its_stripe_is_refused_naming_the_file(tmp_path, call):
    # The fuzzer's input 1129:258494: orc-rust's decompressor (which reads
    # LZO files) panicked on the chunk header while the read was planned, and
    # the read failed as "the read task panicked".
    honest = tmp_path / "honest.orc"
    honest.write_bytes(hostile.orc_lzo_file_with_long_stripe_footer(0))
    assert orc.read_table(honest).to_pydict() == {"a": [7]}
    assert fastingest.read_orc(str(honest)).to_pydict() == {"a": [7]}
    path = tmp_path / "lying.orc"
    path.write_bytes(hostile.orc_lzo_file_with_long_stripe_footer(2))
    with pytest.raises(fastingest.CorruptFileError) as caught:
        result = getattr(fastingest, call)(str(path))
        if call == "iter_orc_batches":
            list(result)
    message = str(caught.value)
    assert "lying.orc" in message
    assert "stripe 0" in message


@pytest.mark.parametrize("call", ["metadata", "read_parquet", "iter_batches", "plan_parquet"])
def test_a_decimal_precision_no_arrow_type_holds_is_refused_naming_the_file(tmp_path, call):
    # The fuzzer's input 777001:663040: the footer said precision 127, and
    # `metadata` handed the schema to pyarrow, which raised its own
    # ArrowInvalid naming no file.
    path = tmp_path / "decimal.parquet"
    path.write_bytes(hostile.parquet_file(values=10, claim_decimal=127))
    with pytest.raises(fastingest.CorruptFileError) as caught:
        getattr(fastingest, call)(str(path))
    message = str(caught.value)
    assert "decimal.parquet" in message
    assert 'column "x" is a decimal of precision 127, outside 1-76' in message


@pytest.mark.parametrize(
    "types, words",
    [
        # Type 0 lists itself: a cycle the schema builder would recurse into.
        ([hostile.orc_type(hostile.STRUCT_KIND, [0], [b"a"])], "subtype 0"),
        # A list of 5000 nested structs, each the next one's parent.
        (
            [hostile.orc_type(hostile.STRUCT_KIND, [i + 1], [b"s"]) for i in range(5000)]
            + [hostile.orc_type(hostile.LONG_KIND)],
            "deeper than",
        ),
        # A decimal of precision 0 is Hive 0.11's only at scale 0; one of
        # scale 3 is no decimal at all.
        (
            [
                hostile.orc_type(hostile.STRUCT_KIND, [1], [b"d"]),
                hostile.orc_type(hostile.DECIMAL_KIND, precision=0, scale=3),
            ],
            "precision 0 and scale 3",
        ),
        (
            [
                hostile.orc_type(hostile.STRUCT_KIND, [1], [b"a\0b"]),
                hostile.orc_type(hostile.LONG_KIND),
            ],
            "NUL",
        ),
    ],
)
def test_orc_type_trees_that_are_not_trees_are_refused(tmp_path, types, words):
    path = tmp_path / "types.orc"
    path.write_bytes(hostile.orc_file(types))
    for call in ("read_orc", "metadata"):
        got = read_limited(path, call)
        assert got["type"] == "CorruptFileError", got
        assert "types.orc" in got["message"] and words in got["message"], got


def test_a_hive_011_decimal_deep_in_structs_reads_as_pyarrow_reads_it(tmp_path):
    # (It was refused: only top-level ones were read.)
    path = tmp_path / "types.orc"
    types = [
        hostile.orc_type(hostile.STRUCT_KIND, [1], [b"s"]),
        hostile.orc_type(hostile.STRUCT_KIND, [2], [b"d"]),
        hostile.orc_type(hostile.DECIMAL_KIND, precision=0, scale=0),
    ]
    path.write_bytes(hostile.orc_file(types))
    assert read_limited(path, "read_orc") == {"ok": True}
    want = orc.read_table(path)
    assert str(want.schema.field("s").type) == "struct<d: decimal128(38, 6)>"
    got = fastingest.read_orc(str(path))
    assert got.schema.equals(want.schema) and got.num_rows == want.num_rows


def test_short_seeded_fuzz_pass_finds_nothing(tmp_path):
    report = fuzz.run(inputs=3000, seed=20261123, workers=2, quiet=True, out=tmp_path)
    assert report.inputs == 3000
    assert report.findings == [], json.dumps(report.findings[:5], indent=1)
    # Both outcomes happen for every entry point: the pass reaches decoding,
    # not only the footer checks.
    calls = (
        "metadata",
        "read_parquet",
        "read_dictionary",
        "read_parquet filtered",
        "read_chunks",
        "read_orc",
    )
    for call in (*calls, "read_orc_stripes"):
        read, refused = report.outcomes[call]
        assert read > 20 and refused > 20, (call, read, refused)


@pytest.mark.parametrize(
    ("index", "said"),
    [
        # The footer's offset of the page index lies: a buffer of 32 TB.
        (2841, "points at bytes"),
        # A page's offset in the offset index lies (a flipped bit): a range
        # of 2^48 bytes, split into slices for a plan.
        (79660, "beyond the end of the file"),
    ],
)
def test_a_page_index_placing_bytes_past_the_end_is_refused_before_allocating(
    tmp_path, index, said
):
    # Found by the fuzzer once it drove filtered reads (which use the page
    # index of the seed written with one); each aborted the process.
    seed, data, _ = fuzz.input_of(fuzz.write_seeds(), 29, index)
    assert seed.name == "lz4-stats.parquet"
    path = tmp_path / "index.parquet"
    path.write_bytes(data)
    got = read_limited(path, "read_parquet", keywords=", filters=[('i', '<', -900)]")
    assert got["type"] == "CorruptFileError", got
    assert "index.parquet" in got["message"] and said in got["message"]


def test_the_fuzzer_reports_what_goes_wrong(tmp_path, monkeypatch):
    # A harness that cannot fail proves nothing: a call that raises a
    # non-fastingest error is reported with the input that caused it.
    path = tmp_path / "input.parquet"
    path.write_bytes(b"PAR1" + b"\0" * 20 + b"PAR1")

    def broken(*args, **kwargs):
        raise RuntimeError("not a fastingest error")

    monkeypatch.setattr(fastingest, "read_parquet", broken)
    problems = fuzz.drive(path, "parquet")
    assert [(p["call"], p["problem"]) for p in problems] == [
        ("read_parquet", "builtins.RuntimeError"),
        ("read_dictionary", "builtins.RuntimeError"),
        ("read_parquet filtered", "builtins.RuntimeError"),
    ]
    # The same input is generated from (seed, index) every time.
    seeds = fuzz.write_seeds()
    assert fuzz.input_of(seeds, 5, 17)[1] == fuzz.input_of(seeds, 5, 17)[1]
    assert fuzz.input_of(seeds, 5, 17)[1] != fuzz.input_of(seeds, 5, 18)[1]


def test_read_chunks_of_a_zero_row_row_group(tmp_path):
    # pyarrow writes an empty table as one row group of no rows whose chunk
    # is a dictionary page alone (data page offset 0).
    path = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"s": pa.array([], pa.string()), "i": pa.array([], pa.int64())}), path)
    chunks = fastingest.read_chunks(str(path))
    assert len(chunks) == 0
    rebuilt = pq.read_table(io.BytesIO(chunks.to_parquet_bytes()))
    assert rebuilt.num_rows == 0 and rebuilt.schema.names == ["s", "i"]
    assert fastingest.read_parquet(str(path)).num_rows == 0


@pytest.mark.parametrize("rows", [0, 3])
def test_dictionary_of_nulls_reads_as_null_like_pyarrow(tmp_path, rows):
    # A dictionary-typed column of only nulls (what an empty or all-null
    # categorical becomes): pyarrow reads it back as `null`; the decoder
    # cannot build a dictionary of nulls (it used to fail with 3 rows).
    path = tmp_path / "nulls.parquet"
    nulls = pa.DictionaryArray.from_arrays(
        pa.array([None] * rows, pa.int32()), pa.array([], pa.null())
    )
    inner = pa.StructArray.from_arrays([nulls, pa.array(range(rows), pa.int64())], ["d", "v"])
    table = pa.table({"d": nulls, "i": pa.array(range(rows), pa.int32()), "s": inner})
    pq.write_table(table, path)
    want = pq.read_table(path)
    got = fastingest.read_parquet(str(path))
    assert got.schema.field("d").type == want.schema.field("d").type == pa.null()
    assert got.equals(want)
    assert fastingest.read_parquet(str(path), columns=["d"]).equals(want.select(["d"]))


@pytest.mark.parametrize("codec", ["snappy", "gzip", "brotli", "lz4"])
def test_a_damaged_compressed_page_names_its_column_and_bytes(tmp_path, codec):
    # The page's body, past its header, garbled: fastingest's decoder finds
    # it, the `parquet` crate (which then tries) fails too; the error names
    # the row group, the column, the chunk's bytes and what the codec said.
    rows = 200_000
    table = pa.table({"x": pa.array(range(rows), pa.int64()), "y": pa.array([1.5] * rows)})
    path = tmp_path / f"damaged-{codec}.parquet"
    pq.write_table(table, path, compression=codec, use_dictionary=False)
    chunk = pq.ParquetFile(path).metadata.row_group(0).column(0)
    data = bytearray(path.read_bytes())
    for at in range(chunk.data_page_offset + 2000, chunk.data_page_offset + 2100):
        data[at] ^= 0x55
    path.write_bytes(bytes(data))
    start = chunk.data_page_offset
    end = start + chunk.total_compressed_size
    for read in (
        lambda: fastingest.read_parquet(path),
        lambda: list(fastingest.iter_batches(path)),
        lambda: fastingest.read_parquet(path, filters=[("y", "==", 1.5)]),
    ):
        with pytest.raises(fastingest.CorruptFileError) as caught:
            read()
        said = str(caught.value)
        assert str(path) in said and f"bytes {start}..{end}" in said, said
        assert 'row group 0, column "x"' in said, said
        assert "(the parquet crate:" in said, said


def _checksummed(path: Path, table: pa.Table, **options) -> None:
    pq.write_table(table, path, write_page_checksum=True, **options)


def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x04
    path.write_bytes(bytes(data))


def test_page_checksums_pass_on_honest_files_of_every_page_kind(tmp_path):
    """Dictionary pages, v1 and v2 data pages, compressed or not, with a
    CRC in each header: checked, they read as pyarrow reads them, whole,
    streamed, projected and filtered. A file without CRCs reads as well."""
    rows = 50_000
    table = pa.table(
        {
            "i": pa.array(range(rows), pa.int64()),
            "k": pa.array([f"key{i % 97}" for i in range(rows)]),
            "f": pa.array([i / 7 if i % 5 else None for i in range(rows)]),
        }
    )
    on = fastingest.Config(verify_checksums=True)
    assert on.verify_checksums and not fastingest.Config().verify_checksums
    for version in ("1.0", "2.0"):
        for codec in ("none", "snappy", "zstd"):
            path = tmp_path / f"crc-{version}-{codec}.parquet"
            _checksummed(
                path, table, compression=codec, data_page_version=version, row_group_size=20_000
            )
            want = pq.read_table(path, page_checksum_verification=True)
            assert fastingest.read_parquet(path, config=on).equals(want)
            streamed = pa.Table.from_batches(list(fastingest.iter_batches(path, config=on)))
            assert streamed.equals(want)
            got = fastingest.read_parquet(
                path, columns=["k"], filters=[("i", ">=", 45_000)], config=on
            )
            assert got.equals(want.filter(pa.compute.field("i") >= 45_000).select(["k"]))
    plain = tmp_path / "no-crc.parquet"
    pq.write_table(table, plain)
    assert fastingest.read_parquet(plain, config=on).equals(pq.read_table(plain))


@pytest.mark.parametrize(
    "case",
    [
        # fastingest's own decoders: a PLAIN page, a dictionary page.
        "plain",
        "dictionary",
        # A page the `parquet` crate decodes (DELTA_BINARY_PACKED in a v2
        # page): checked all the same, before either decoder reads it.
        "delta-v2",
    ],
)
def test_a_page_whose_bytes_miss_its_checksum_fails_the_read_when_checked(tmp_path, case):
    """One bit flipped in a page's body, where no decoder can tell: read as
    it is, the values come back wrong; with `verify_checksums`, every read
    fails naming the file, the row group, the column, the bytes and the
    mismatch (the page's bytes), as pyarrow's `page_checksum_verification`
    refuses it."""
    rows = 40_000
    # Values that neither the dictionary nor DELTA_BINARY_PACKED shrink to
    # a few bytes: the bit flipped lies inside the first page.
    x = pa.array([i * 7919 % 1_000_003 for i in range(rows)], pa.int64())
    table = pa.table({"x": x, "y": pa.array([i % 3 for i in range(rows)])})
    path = tmp_path / f"{case}.parquet"
    if case == "plain":
        _checksummed(path, table, compression="none", use_dictionary=False)
    elif case == "dictionary":
        _checksummed(path, table, compression="none", use_dictionary=["x"])
    else:
        _checksummed(
            path,
            table,
            compression="none",
            use_dictionary=False,
            data_page_version="2.0",
            column_encoding={"x": "DELTA_BINARY_PACKED", "y": "PLAIN"},
        )
    chunk = pq.ParquetFile(path).metadata.row_group(0).column(0)
    start = chunk.dictionary_page_offset if case == "dictionary" else chunk.data_page_offset
    _flip(path, start + 1000)
    with pytest.raises(OSError, match="(?i)crc|checksum"):
        pq.read_table(path, page_checksum_verification=True)
    unchecked = fastingest.read_parquet(path)
    assert not unchecked.equals(table), "a flipped bit no decoder can see"
    on = fastingest.Config(verify_checksums=True)
    for read in (
        lambda: fastingest.read_parquet(path, config=on),
        lambda: list(fastingest.iter_batches(path, config=on)),
        lambda: fastingest.read_parquet(path, filters=[("y", "==", 1)], config=on),
    ):
        with pytest.raises(fastingest.CorruptFileError) as caught:
            read()
        said = str(caught.value)
        assert str(path) in said and "page checksum mismatch" in said, said
        assert 'row group 0, column "x"' in said, said
        # The damaged page's bytes: from its header on.
        assert f"(bytes {start}.." in said, said
    # The other column's pages are sound: read alone, it passes.
    alone = fastingest.read_parquet(path, columns=["y"], config=on)
    assert alone.equals(table.select(["y"]))
