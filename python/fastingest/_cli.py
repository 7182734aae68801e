"""The ``fastingest`` command line: ``fastingest inspect FILE|URL`` (a Parquet
or ORC file's schema, row groups or stripes, sizes, codecs and statistics,
from its footer alone) and ``fastingest cache info | prune | clear``."""

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
    inspect = commands.add_parser(
        "inspect",
        help="a file's schema, row groups or stripes, sizes, codecs and statistics",
        description="Reads only the footer (one request for a remote file).",
    )
    inspect.add_argument("source", help="a path or URL (s3://, gs://, az://, https://)")
    inspect.add_argument("--format", choices=("parquet", "orc"), help="default: by name or content")
    inspect.add_argument(
        "-o",
        "--storage-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a storage option (e.g. -o region=us-east-1 -o skip_signature=true); repeatable",
    )
    inspect.add_argument("--json", action="store_true", help="print JSON")
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
    if args.command == "inspect":
        return _inspect(args)
    return _cache(args)


def _inspect(args: argparse.Namespace) -> int:
    from . import metadata
    from .exceptions import FastIngestError

    options: dict[str, str] = {}
    for item in args.storage_option:
        key, sep, value = item.partition("=")
        if not sep or not key:
            print(f"fastingest: --storage-option wants KEY=VALUE, not {item!r}", file=sys.stderr)
            return 2
        options[key] = value
    try:
        found = metadata(args.source, format=args.format, storage_options=options or None)
    except FastIngestError as e:
        print(f"fastingest: {e}", file=sys.stderr)
        return 1
    files = found if isinstance(found, list) else [found]
    if args.json:
        described = [{**f, "schema": _schema_json(f["schema"])} for f in files]
        print(json.dumps(described if isinstance(found, list) else described[0], default=str))
        return 0
    for i, file in enumerate(files):
        if i:
            print()
        _print_file(file)
    return 0


def _schema_json(schema: Any) -> list[dict[str, Any]]:
    return [{"name": f.name, "type": str(f.type), "nullable": f.nullable} for f in schema]


def _print_file(file: dict[str, Any]) -> None:
    """A file's metadata as an indented report."""
    fmt = file["format"]
    print(f"{file.get('path') or file.get('location') or ''}")
    head = {k: v for k, v in file.items() if not isinstance(v, list | dict) and k != "schema"}
    for key, value in head.items():
        print(f"  {key}: {value}")
    print("  schema:")
    for field in file["schema"]:
        print(f"    {field.name}: {field.type}{'' if field.nullable else ' not null'}")
    if fmt == "parquet":
        for group in file["row_groups"]:
            print(
                f"  row group {group['index']}: {group['num_rows']} rows, "
                f"{_human(group['compressed_size'])} compressed, "
                f"{_human(group['total_byte_size'])} uncompressed"
            )
            for column in group["columns"]:
                stats = column.get("statistics") or {}
                shown = ", ".join(f"{k}={v}" for k, v in stats.items() if v is not None)
                print(
                    f"    {column['path']}: {column['codec']}, "
                    f"{'/'.join(column['encodings'])}, {_human(column['compressed_size'])}"
                    + (f"; {shown}" if shown else "")
                )
    else:
        for stripe in file["stripes"]:
            sizes = {k: v for k, v in stripe.items() if k.endswith("length")}
            print(
                f"  stripe {stripe.get('index', '')}: {stripe['num_rows']} rows at byte "
                f"{stripe['offset']}, " + ", ".join(f"{k} {_human(v)}" for k, v in sizes.items())
            )
        for name, stats in (file.get("statistics") or {}).items():
            shown = ", ".join(f"{k}={v}" for k, v in (stats or {}).items() if v is not None)
            print(f"    {name}: {shown}")


def _cache(args: argparse.Namespace) -> int:
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
