"""Small Parquet and ORC files written byte by byte, honest or lying in one
named way, for the tests of hostile input (tests/test_hostile.py).

Each builder with no lie writes a file pyarrow reads; each lie changes one
claim and nothing else, so a test knows exactly what the reader was shown.
"""

from __future__ import annotations

import struct
import zlib

from .fuzz import varint, zigzag

# --- Thrift compact protocol (Parquet) ----------------------------------------

I32, I64, BINARY, LIST, STRUCT = 5, 6, 8, 9, 12


def thrift_struct(*fields: tuple[int, int, object]) -> bytes:
    """A struct of `(id, type, value)` fields in increasing id order; values
    are ints, bytes, nested structs (bytes, type STRUCT) or lists given as
    `(element type, [encoded elements])`."""
    out = bytearray()
    last = 0
    for field_id, kind, value in fields:
        out.append(((field_id - last) << 4) | kind)
        last = field_id
        if kind in (I32, I64):
            out += varint(zigzag(value))
        elif kind == BINARY:
            out += varint(len(value)) + value
        elif kind == STRUCT:
            out += value
        elif kind == LIST:
            elem, items = value
            header = (len(items) << 4) | elem if len(items) < 15 else 0xF0 | elem
            out.append(header)
            if len(items) >= 15:
                out += varint(len(items))
            for item in items:
                out += item
    out.append(0)
    return bytes(out)


def parquet_file(
    values: int = 1000,
    claim_uncompressed: int | None = None,
    claim_children: int | None = None,
    claim_width: int | None = None,
    claim_decimal: int | None = None,
    claim_rows: int | None = None,
    claim_page_values: int | None = None,
) -> bytes:
    """One required INT32 column `x` = 0..values-1 in one gzip data page.
    `claim_uncompressed`: the page header's uncompressed size instead of the
    real one; `claim_children`: the root schema element's child count;
    `claim_width`: the column as FIXED_LEN_BYTE_ARRAY of that width (its
    4-byte values are a valid FIXED_LEN_BYTE_ARRAY(4) column);
    `claim_decimal`: the column as a BYTE_ARRAY decimal of that precision
    (scale 0), a type the footer alone defines; `claim_rows`: the row
    group's (and the file's) count of rows; `claim_page_values`: the data
    page header's count of values."""
    physical = 1 if claim_width is None else 7  # INT32 or FIXED_LEN_BYTE_ARRAY
    rows = values if claim_rows is None else claim_rows
    page_values = values if claim_page_values is None else claim_page_values
    plain = struct.pack(f"<{values}i", *range(values))
    packer = zlib.compressobj(wbits=31)  # gzip framing, as Parquet's GZIP
    compressed = packer.compress(plain) + packer.flush()
    page_header = thrift_struct(
        (1, I32, 0),  # DATA_PAGE
        (2, I32, claim_uncompressed if claim_uncompressed is not None else len(plain)),
        (3, I32, len(compressed)),
        (5, STRUCT, thrift_struct((1, I32, page_values), (2, I32, 0), (3, I32, 3), (4, I32, 3))),
    )
    chunk = page_header + compressed
    column_meta = thrift_struct(
        (1, I32, physical),
        (2, LIST, (I32, [varint(zigzag(0))])),  # PLAIN
        (3, LIST, (BINARY, [varint(1) + b"x"])),
        (4, I32, 2),  # GZIP
        (5, I64, page_values),
        (6, I64, len(page_header) + len(plain)),
        (7, I64, len(chunk)),
        (9, I64, 4),
    )
    column_chunk = thrift_struct((2, I64, 4), (3, STRUCT, column_meta))
    row_group = thrift_struct(
        (1, LIST, (STRUCT, [column_chunk])), (2, I64, len(plain)), (3, I64, rows)
    )
    root = thrift_struct(
        (4, BINARY, b"schema"), (5, I32, claim_children if claim_children is not None else 1)
    )
    if claim_decimal is not None:
        column = thrift_struct(
            (1, I32, 6),  # BYTE_ARRAY
            (3, I32, 0),
            (4, BINARY, b"x"),
            (6, I32, 5),  # converted type DECIMAL
            (7, I32, 0),  # scale
            (8, I32, claim_decimal),  # precision
        )
    elif claim_width is None:
        column = thrift_struct((1, I32, physical), (3, I32, 0), (4, BINARY, b"x"))
    else:
        column = thrift_struct(
            (1, I32, physical), (2, I32, claim_width), (3, I32, 0), (4, BINARY, b"x")
        )
    footer = thrift_struct(
        (1, I32, 1),
        (2, LIST, (STRUCT, [root, column])),
        (3, I64, rows),
        (4, LIST, (STRUCT, [row_group])),
    )
    return b"PAR1" + chunk + footer + struct.pack("<I", len(footer)) + b"PAR1"


# --- protobuf (ORC) ----------------------------------------------------------


def proto_field(number: int, value: int | bytes) -> bytes:
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    return varint((number << 3) | 2) + varint(len(value)) + value


def orc_type(kind: int, subtypes: list[int] = (), names: list[bytes] = (), **ints: int) -> bytes:
    out = proto_field(1, kind)
    if subtypes:
        out += proto_field(2, b"".join(varint(s) for s in subtypes))
    for name in names:
        out += proto_field(3, name)
    for number, value in (("precision", 5), ("scale", 6)):
        if number in ints:
            out += proto_field(value, ints[number])
    return out


STRUCT_KIND, LONG_KIND, DECIMAL_KIND = 12, 4, 14


def orc_chunk(body: bytes, original: bool) -> bytes:
    """One ORC compression chunk: a 3-byte header (the body's length shifted
    left once, the lowest bit set for a body stored as it is), then `body`."""
    header = (len(body) << 1) | int(original)
    return header.to_bytes(3, "little") + body


def zstd_rle_frame(blocks: int) -> bytes:
    """A zstd frame of `blocks` RLE blocks of 128 KiB each (one byte apiece
    on disk), or of one empty raw block when `blocks` is 0."""
    out = bytes([0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x58])  # magic, no content size, a window
    sizes = [(1, 128 << 10)] * blocks or [(0, 0)]
    for i, (kind, size) in enumerate(sizes):
        header = int(i + 1 == len(sizes)) | (kind << 1) | (size << 3)
        out += header.to_bytes(3, "little") + (b"z" if kind == 1 else b"")
    return out


def orc_file(
    types: list[bytes] | None = None,
    snappy_claim: int | None = None,
    zstd_blocks: int | None = None,
    block_size: int = 256 * 1024,
) -> bytes:
    """An ORC file without rows (no stripes): by default a struct with one
    bigint column `a`; `types` replaces the footer's type list.
    `snappy_claim`: the file is Snappy-compressed (its footer a stored
    chunk) and its metadata section one Snappy chunk that says it holds that
    many bytes (0: an honest empty one). `zstd_blocks`: the file is
    zstd-compressed and its metadata one chunk of that many RLE blocks of
    128 KiB ([`zstd_rle_frame`]). `block_size`: the compression block
    size the postscript of a compressed file gives."""
    if types is None:
        types = [orc_type(STRUCT_KIND, [1], [b"a"]), orc_type(LONG_KIND)]
    footer = proto_field(1, 3) + proto_field(2, 3)
    for t in types:
        footer += proto_field(4, t)
    footer += proto_field(6, 0)
    metadata = b""
    codec = proto_field(2, 0)  # compression NONE
    if snappy_claim is not None:
        footer = orc_chunk(footer, original=True)
        lie = bytes(8) if snappy_claim else b""
        metadata = orc_chunk(varint(snappy_claim) + lie, original=False)
        codec = proto_field(2, 2) + proto_field(3, block_size)  # SNAPPY
    if zstd_blocks is not None:
        footer = orc_chunk(footer, original=True)
        metadata = orc_chunk(zstd_rle_frame(zstd_blocks), original=False)
        codec = proto_field(2, 5) + proto_field(3, block_size)  # ZSTD
    postscript = (
        proto_field(1, len(footer))
        + codec
        + proto_field(4, varint(0) + varint(12))  # version 0.12, packed
        + proto_field(5, len(metadata))  # metadata length
        + proto_field(8000, b"ORC")
    )
    return b"ORC" + metadata + footer + postscript + bytes([len(postscript)])


def orc_lzo_file_with_long_stripe_footer(overrun: int) -> bytes:
    """An LZO-compressed ORC file of one stripe: one row of a bigint column
    `a` (7), every section a stored chunk. The stripe's footer chunk says it
    holds `overrun` bytes more than the stripe gives it: orc-rust's
    decompressor, which reads LZO files, panicked on that (the fuzzer's input
    1129:258494)."""
    data = orc_chunk(b"\xff" + varint(14), original=True)  # RLE v1: one literal, zigzag(7)
    stream = proto_field(1, 1) + proto_field(2, 1) + proto_field(3, len(data))  # DATA of `a`
    body = proto_field(1, stream) + proto_field(2, proto_field(1, 0)) * 2  # DIRECT encodings
    header = ((len(body) + overrun) << 1) | 1
    stripe_footer = header.to_bytes(3, "little") + body
    stripe = (
        proto_field(1, 3)  # offset: after the magic
        + proto_field(2, 0)  # index length
        + proto_field(3, len(data))
        + proto_field(4, len(stripe_footer))
        + proto_field(5, 1)  # rows
    )
    content = 3 + len(data) + len(stripe_footer)
    footer = proto_field(1, 3) + proto_field(2, content) + proto_field(3, stripe)
    for t in (orc_type(STRUCT_KIND, [1], [b"a"]), orc_type(LONG_KIND)):
        footer += proto_field(4, t)
    footer = orc_chunk(footer + proto_field(6, 1), original=True)
    postscript = (
        proto_field(1, len(footer))
        + proto_field(2, 3)  # LZO
        + proto_field(3, 256 * 1024)
        + proto_field(4, varint(0) + varint(12))
        + proto_field(5, 0)  # no metadata section
        + proto_field(8000, b"ORC")
    )
    return b"ORC" + data + stripe_footer + footer + postscript + bytes([len(postscript)])
