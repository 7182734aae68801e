"""Normalising pyarrow-style DNF filters for the Rust core."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from .exceptions import InvalidArgumentError

_OPS = {"==", "=", "!=", "<", "<=", ">", ">=", "in", "not in"}


def _term(term: Any) -> tuple[str, str, pa.Array]:
    if not isinstance(term, tuple | list) or len(term) != 3:
        raise InvalidArgumentError(f"filter term must be a (column, op, value) tuple, got {term!r}")
    column, op, value = term
    if not isinstance(column, str):
        raise InvalidArgumentError(f"filter column must be a str, got {column!r}")
    if not isinstance(op, str) or op.strip().lower() not in _OPS:
        raise InvalidArgumentError(f"unknown filter operator {op!r}; use one of {sorted(_OPS)}")
    op = op.strip().lower()
    try:
        if op in ("in", "not in"):
            if isinstance(value, str | bytes) or not hasattr(value, "__iter__"):
                raise InvalidArgumentError(f"filter {column!r} {op!r} needs a collection of values")
            literal = _array(list(value))
        else:
            literal = _array([value])
    except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeError, OverflowError) as e:
        raise InvalidArgumentError(f"filter value for {column!r} is not usable: {e}") from e
    return column, op, literal


def _array(values: list[Any]) -> pa.Array:
    """`values` as ``pa.array`` makes them (same type, same values)."""
    built = _from_buffers(values)
    return built if built is not None else pa.array(values)


def _from_buffers(values: list[Any]) -> pa.Array | None:
    """Values of one plain Python type (bool, int within int64, float, str,
    bytes) as an array built from its buffers; ``None`` for anything else.
    ``pa.array`` on Python objects imports pandas when it is installed: 0.3 s
    on the first filtered read of a process, more than the read itself."""
    n = len(values)
    kinds = {type(v) for v in values}
    if n == 0 or len(kinds) != 1:
        return None
    kind = kinds.pop()
    if kind is bool:
        bits = sum(1 << i for i, v in enumerate(values) if v)
        data = bits.to_bytes((n + 7) // 8, "little")
        return pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(data)])
    if kind is int:
        if not all(-(2**63) <= v < 2**63 for v in values):
            return None
        data = struct.pack(f"<{n}q", *values)
        return pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(data)])
    if kind is float:
        data = struct.pack(f"<{n}d", *values)
        return pa.Array.from_buffers(pa.float64(), n, [None, pa.py_buffer(data)])
    if kind is str or kind is bytes:
        try:
            encoded = [v.encode() for v in values] if kind is str else values
        except UnicodeEncodeError:
            return None
        offsets = [0]
        for v in encoded:
            offsets.append(offsets[-1] + len(v))
        if offsets[-1] >= 2**31:
            return None
        arrow_type = pa.string() if kind is str else pa.binary()
        buffers = [
            None,
            pa.py_buffer(struct.pack(f"<{n + 1}i", *offsets)),
            pa.py_buffer(b"".join(encoded)),
        ]
        return pa.Array.from_buffers(arrow_type, n, buffers)
    return None


def normalize(filters: Any) -> list[list[tuple[str, str, pa.Array]]] | None:
    """``[(c, op, v), ...]`` (AND) or ``[[...], [...]]`` (OR of ANDs) to the
    OR-of-ANDs form, with each value turned into a pyarrow array."""
    if filters is None:
        return None
    if not isinstance(filters, Sequence) or isinstance(filters, str) or len(filters) == 0:
        raise InvalidArgumentError(
            "filters must be a non-empty list of tuples or of lists of tuples"
        )
    if all(isinstance(t, tuple) for t in filters):
        return [[_term(t) for t in filters]]
    if all(isinstance(c, list) for c in filters):
        if any(len(c) == 0 for c in filters):
            raise InvalidArgumentError("each conjunction of filters must be non-empty")
        return [[_term(t) for t in conj] for conj in filters]
    raise InvalidArgumentError(
        "filters must be a list of (column, op, value) tuples, or a list of such lists"
    )
