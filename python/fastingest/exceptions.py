"""Exceptions raised by fastingest.

Every exception derives from :class:`FastIngestError` and, where one fits, from
the matching builtin, so ``except FileNotFoundError`` works as it does for
local files. Messages name the file or object, and the byte range where it
matters.

Hierarchy::

    FastIngestError
    ├── NotFoundError (FileNotFoundError)
    ├── PermissionDeniedError (PermissionError)
    ├── CorruptFileError (ValueError)          not the format, truncated, corrupt footer or page
    ├── UnsupportedError (NotImplementedError) e.g. encrypted files
    ├── ColumnNotFoundError (KeyError)         lists the available columns
    ├── SchemaMismatchError (ValueError)       files of one read differ
    ├── RemoteIOError (OSError)                a request failed after its retries
    │   └── RequestTimeoutError (TimeoutError)
    ├── InvalidArgumentError (ValueError)      bad arguments, options or config
    ├── DeviceUnavailableError (RuntimeError)  no GPU, no CUDA driver, or no CUDA build
    └── DeviceError (RuntimeError)             a device allocation or copy failed

Warnings: :class:`CacheWarning` (a ``RuntimeWarning``) when the cache cannot
be used or written (full disk, unwritable directory) or held a damaged entry;
the read itself still succeeds, reading uncached what it could not cache.
"""

from __future__ import annotations


class FastIngestError(Exception):
    """Base class of every fastingest error."""


class NotFoundError(FastIngestError, FileNotFoundError):
    """The file or object does not exist (or a glob matched nothing)."""


class PermissionDeniedError(FastIngestError, PermissionError):
    """Access was denied or the credentials were rejected."""


class CorruptFileError(FastIngestError, ValueError):
    """The file is not a valid file of its format."""


class UnsupportedError(FastIngestError, NotImplementedError):
    """The file uses a feature fastingest does not support."""


class ColumnNotFoundError(FastIngestError, KeyError):
    """A requested column does not exist; the message lists those that do."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class SchemaMismatchError(FastIngestError, ValueError):
    """Files read together do not share a schema."""


class RemoteIOError(FastIngestError, OSError):
    """A read failed after all its retries; the message names the byte range."""


class RequestTimeoutError(RemoteIOError, TimeoutError):
    """The last attempt of a request timed out."""


class InvalidArgumentError(FastIngestError, ValueError):
    """An argument, storage option or config value is invalid."""


class DeviceUnavailableError(FastIngestError, RuntimeError):
    """A GPU call was made where there is no GPU, CUDA driver or CUDA build."""


class DeviceError(FastIngestError, RuntimeError):
    """A device allocation, copy or synchronisation failed."""


class CacheWarning(RuntimeWarning):
    """The cache could not be used for part of a read; the read succeeded."""


__all__ = [
    "CacheWarning",
    "ColumnNotFoundError",
    "CorruptFileError",
    "DeviceError",
    "DeviceUnavailableError",
    "FastIngestError",
    "InvalidArgumentError",
    "NotFoundError",
    "PermissionDeniedError",
    "RemoteIOError",
    "RequestTimeoutError",
    "SchemaMismatchError",
    "UnsupportedError",
]
