"""The compiled extension; use the wrappers in ``fastingest`` instead."""

from typing import Any

from . import Cache as Cache
from . import Config as Config
from . import ReadStats as ReadStats

__version__: str

# `args` is the dict `fastingest._read_args` builds: columns, filters,
# row_groups, storage_options, config, stats, cache.
def read_parquet(source: Any, args: dict[str, Any]) -> Any: ...
def start_read_parquet(callback: Any, source: Any, args: dict[str, Any]) -> None: ...
def plan_parquet(source: Any, args: dict[str, Any]) -> list[dict[str, Any]]: ...
def read_metadata(source: Any, args: dict[str, Any]) -> list[dict[str, Any]]: ...
def _put(url: str, data: bytes, storage_options: dict[str, str] | None = None) -> None: ...
