"""Normalising pyarrow-style DNF filters for the Rust core."""

from __future__ import annotations

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
            literal = pa.array(list(value))
        else:
            literal = pa.array([value])
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        raise InvalidArgumentError(f"filter value for {column!r} is not usable: {e}") from e
    return column, op, literal


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
