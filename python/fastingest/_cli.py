"""The ``fastingest`` command line: ``fastingest cache info | prune | clear``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from ._fastingest import Cache


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fastingest", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    cache = commands.add_parser("cache", help="inspect and manage an on-disk cache")
    actions = cache.add_subparsers(dest="action", required=True)
    for name, text in (
        ("info", "size, entries, objects and hit ratio"),
        ("prune", "evict least-recently-used entries down to --max-bytes"),
        ("clear", "delete everything in the cache"),
    ):
        sub = actions.add_parser(name, help=text)
        sub.add_argument(
            "--dir",
            default=os.environ.get("FASTINGEST_CACHE_DIR"),
            help="the cache directory (default: $FASTINGEST_CACHE_DIR)",
        )
        sub.add_argument("--json", action="store_true", help="print JSON")
        if name == "prune":
            sub.add_argument(
                "--max-bytes", required=True, help='bytes to keep, e.g. 10000000 or "10G"'
            )
    return parser


def _print(result: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps({k: os.fspath(v) if k == "path" else v for k, v in result.items()}))
        return
    for key, value in result.items():
        if isinstance(value, int) and "bytes" in key and value is not None:
            value = f"{value} ({_human(value)})"
        elif key == "hit_ratio":
            value = f"{value:.1%}"
        print(f"{key:>16}: {value}")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if not args.dir:
        print(
            "fastingest: no cache directory: pass --dir or set FASTINGEST_CACHE_DIR",
            file=sys.stderr,
        )
        return 2
    if not os.path.isdir(args.dir):
        print(f"fastingest: {args.dir} is not a directory", file=sys.stderr)
        return 2
    if os.listdir(args.dir) and not os.path.exists(os.path.join(args.dir, "CACHEDIR.TAG")):
        # Never turn (or clear) a directory that is not a cache into one.
        print(f"fastingest: {args.dir} is not a fastingest cache", file=sys.stderr)
        return 2
    cache = Cache(args.dir)
    if args.action == "info":
        _print(dict(cache.info()), args.json)
    elif args.action == "prune":
        max_bytes = int(args.max_bytes) if args.max_bytes.isdigit() else args.max_bytes
        _print(dict(cache.prune(max_bytes)), args.json)
    else:
        _print(dict(cache.clear()), args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
