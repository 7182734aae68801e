"""Python ``logging`` for fastingest's records, set up by the first record:
``import fastingest`` does not import ``logging`` (a fifth of its import
time, paid before a fresh process's first read could start).

Records go to loggers under "fastingest": "fastingest.retry" (WARNING: a
request failed and is tried again), "fastingest.request" (INFO: a request
took over 10 s), "fastingest.summary" (a ``_metadata`` file not used),
"fastingest.cache" (WARNING: what CacheWarning says). Nothing is printed
unless the program configures logging.
"""

from __future__ import annotations

import atexit
import logging

from ._fastingest import _flush_logs

logging.getLogger("fastingest").addHandler(logging.NullHandler())
# Records still queued when the program ends reach the handlers before they
# are closed: atexit runs handlers last-registered first, and logging
# registered its shutdown when it was imported, above.
atexit.register(_flush_logs)


def emit(logger: str, level: int, text: str) -> None:
    """One record, from the core's forwarder thread or the cache warnings."""
    logging.getLogger(logger).log(level, text)  # no args: a "%" in text stays as it is
