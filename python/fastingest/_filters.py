"""Normalising pyarrow-style DNF filters for the Rust core."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from ._interrupt import import_module
from .exceptions import InvalidArgumentError

if TYPE_CHECKING:
    import pyarrow as pa

_OPS = {"==", "=", "!=", "<", "<=", ">", ">=", "in", "not in"}


# A literal as the Rust core takes it: a pyarrow array, or (kind, values)
# for values of one plain Python type, which the core builds into an Arrow
# array itself.
FilterLiteral: TypeAlias = "pa.Array | tuple[str, list[Any]]"


def _term(term: Any) -> tuple[str, str, FilterLiteral]:
    if not isinstance(term, tuple | list) or len(term) != 3:
        raise InvalidArgumentError(f"filter term must be a (column, op, value) tuple, got {term!r}")
    column, op, value = term
    if not isinstance(column, str):
        raise InvalidArgumentError(f"filter column must be a str, got {column!r}")
    if not isinstance(op, str) or op.strip().lower() not in _OPS:
        raise InvalidArgumentError(f"unknown filter operator {op!r}; use one of {sorted(_OPS)}")
    op = op.strip().lower()
    if op in ("in", "not in"):
        if isinstance(value, str | bytes) or not hasattr(value, "__iter__"):
            raise InvalidArgumentError(f"filter {column!r} {op!r} needs a collection of values")
        values = list(value)
    else:
        values = [value]
    return column, op, _plain(values) or _arrow(column, values)


def _arrow(column: str, values: list[Any]) -> pa.Array:
    """`values` as ``pa.array`` types them (decimals, datetimes, mixed ints
    and floats, ...)."""
    pa = import_module("pyarrow")  # Ctrl-C kept (see _interrupt)
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeError, OverflowError) as e:
        raise InvalidArgumentError(f"filter value for {column!r} is not usable: {e}") from e


_EPOCH_ORDINAL = datetime.date(1970, 1, 1).toordinal()


def _plain(values: list[Any]) -> tuple[str, list[Any]] | None:
    """Values of one plain Python type (bool, int within int64, float, str,
    bytes, date) tagged with the Arrow type ``pa.array`` gives them; ``None``
    for anything else. Keeping pyarrow out of this path lets a read start
    its requests while pyarrow is imported, and ``pa.array`` on Python
    objects would import pandas when it is installed (0.3 s)."""
    kinds = {type(v) for v in values}
    if not values or len(kinds) != 1:
        return None
    kind = kinds.pop()
    if kind is bool:
        return "bool", values
    if kind is int:
        if all(-(2**63) <= v < 2**63 for v in values):
            return "int64", values
        # pa.array refuses these; an unsigned 64-bit column holds them.
        return ("uint64", values) if all(0 <= v < 2**64 for v in values) else None
    if kind is float:
        return "float64", values
    if kind is str:
        try:
            size = sum(len(v.encode()) for v in values)
        except UnicodeEncodeError:
            return None  # pa.array names the problem
        return ("string", values) if size < 2**31 else None  # 32-bit offsets
    if kind is bytes:
        return ("binary", values) if sum(map(len, values)) < 2**31 else None
    if kind is datetime.date:
        return "date32", [v.toordinal() - _EPOCH_ORDINAL for v in values]
    return None


def normalize(filters: Any) -> list[list[tuple[str, str, FilterLiteral]]] | None:
    """``[(c, op, v), ...]`` (AND) or ``[[...], [...]]`` (OR of ANDs) to the
    OR-of-ANDs form, with each value turned into a literal for the core.

    The shape is told as pyarrow tells it: when the first item's first
    element is a column name, the list is one AND of terms; otherwise each
    item is an AND. A term may be a tuple or a list (filters read from JSON
    or YAML are lists: ``[["x", "<", 5]]`` is one term, as in pyarrow)."""
    if filters is None:
        return None
    if type(filters).__name__ == "Expression":
        raise InvalidArgumentError(
            "filters must be pyarrow's DNF tuples, e.g. [('x', '>', 5)]; a"
            " pyarrow.compute.Expression is not taken"
        )
    if not _is_list_like(filters) or len(filters) == 0:
        raise InvalidArgumentError(
            "filters must be a non-empty list of tuples or of lists of tuples"
        )
    for item in filters:
        if not _is_list_like(item):
            raise InvalidArgumentError(
                "filters must be a list of (column, op, value) tuples, or a list of such lists;"
                f" got the item {item!r}"
            )
        if len(item) == 0:
            raise InvalidArgumentError("each conjunction of filters must be non-empty")
    if isinstance(filters[0][0], str):
        return [[_term(t) for t in filters]]
    return [[_term(t) for t in conj] for conj in filters]


def _is_list_like(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)
