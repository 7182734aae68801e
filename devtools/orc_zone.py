"""ORC files made to name another writer zone: what pyarrow's writer cannot
do (it records GMT), for the tests and benchmarks of zone handling.

An ORC file's tail and stripe footers are protobuf messages; in an
uncompressed file they are stored as they are, so a stripe footer's zone
(field 3) can be replaced and every length that moves with it fixed.
"""

from __future__ import annotations

from .fuzz import varint

Field = tuple[int, int, "int | bytes"]


def _varint_at(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        value |= (data[i] & 0x7F) << shift
        i += 1
        if data[i - 1] < 0x80:
            return value, i
        shift += 7


def fields(message: bytes) -> list[Field]:
    """A protobuf message's fields: (number, wire type, value), varints
    and length-delimited ones (all an ORC tail and stripe footer hold)."""
    out, i = [], 0
    while i < len(message):
        key, i = _varint_at(message, i)
        if key & 7 == 0:
            value, i = _varint_at(message, i)
        elif key & 7 == 2:
            n, i = _varint_at(message, i)
            value, i = message[i : i + n], i + n
        else:
            raise ValueError(f"wire type {key & 7}: only varints and length-delimited fields")
        out.append((key >> 3, key & 7, value))
    return out


def encoded(message: list[Field]) -> bytes:
    out = bytearray()
    for number, wire, value in message:
        out += varint(number << 3 | wire)
        out += varint(value) if wire == 0 else varint(len(value)) + value
    return bytes(out)


def written_in(data: bytes, zone: str) -> bytes:
    """An uncompressed ORC file as if written in `zone`: each stripe
    footer's writer zone replaced, and what moves with it (each stripe's
    offset and footer length, the content length, the footer length in the
    postscript)."""
    ps_len = data[-1]
    ps = fields(data[-1 - ps_len : -1])
    footer_len = next(v for n, _, v in ps if n == 1)
    metadata_len = next(v for n, _, v in ps if n == 5)
    if next((v for n, _, v in ps if n == 2), 0) != 0:
        raise ValueError("uncompressed files only")
    footer_at = len(data) - 1 - ps_len - footer_len
    footer = fields(data[footer_at : footer_at + footer_len])
    content, stripes, grown = bytearray(data[:3]), [], 0
    for n, _, v in footer:
        if n != 3:
            continue
        info = {k: value for k, _, value in fields(v)}
        body_end = info[1] + info[2] + info[3]
        old = data[body_end : body_end + info[4]]
        new = encoded([f for f in fields(old) if f[0] != 3] + [(3, 2, zone.encode())])
        content += data[info[1] : body_end] + new
        moved = {1: info[1] + grown, 4: len(new)}
        stripes.append(encoded([(k, w, moved.get(k, x)) for k, w, x in fields(v)]))
        grown += len(new) - len(old)
    if len(content) != footer_at - metadata_len + grown:
        raise ValueError("the stripes do not lie end to end before the metadata")
    stripes_left = iter(stripes)
    new_footer = encoded(
        [(n, w, next(stripes_left) if n == 3 else v + grown if n == 2 else v) for n, w, v in footer]
    )
    new_ps = encoded([(n, w, len(new_footer) if n == 1 else v) for n, w, v in ps])
    metadata = data[footer_at - metadata_len : footer_at]
    return bytes(content) + metadata + new_footer + new_ps + bytes([len(new_ps)])
