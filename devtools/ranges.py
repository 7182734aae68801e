"""A static-file HTTP server on loopback that answers ranged GETs, for
machines where MinIO is not built (the GPU machine): files of one folder,
`Range: bytes=a-b` answered 206 with `Content-Range`, a strong ETag, bodies
sent with `sendfile` so that the server keeps up with many connections.

    server = RangeServer(folder)          # http://127.0.0.1:<port>/<name>
    url = server.url + "/data.parquet"
    server.stop()
"""

from __future__ import annotations

import os
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

RANGE = re.compile(r"bytes=(\d*)-(\d*)$")


class RangeServer:
    def __init__(self, folder: Path) -> None:
        root = Path(folder).resolve()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as a store's connections are

            def do_GET(self) -> None:  # noqa: N802 - the http.server API
                path = (root / self.path.lstrip("/").split("?")[0]).resolve()
                if path.parent != root or not path.is_file():
                    self.send_error(404)
                    return
                stat = path.stat()
                size = stat.st_size
                start, end = 0, size - 1
                wanted = self.headers.get("Range")
                if wanted:
                    m = RANGE.match(wanted.strip())
                    if not m or (not m[1] and not m[2]):
                        self.send_error(416)
                        return
                    if m[1]:
                        start = int(m[1])
                        end = min(int(m[2]), size - 1) if m[2] else size - 1
                    else:  # a suffix: the last N bytes
                        start = max(size - int(m[2]), 0)
                    if start > end:
                        self.send_error(416)
                        return
                self.send_response(206 if wanted else 200)
                self.send_header("Content-Length", str(end - start + 1))
                self.send_header("ETag", f'"{stat.st_mtime_ns:x}-{size:x}"')
                self.send_header("Accept-Ranges", "bytes")
                if wanted:
                    self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
                self.end_headers()
                with open(path, "rb") as f:
                    self.wfile.flush()
                    try:
                        self.connection.sendfile(f, start, end - start + 1)
                    except (BrokenPipeError, ConnectionResetError):
                        # The client gave up on the request (a read that
                        # hedges a slow answer cancels the loser).
                        self.close_connection = True

            def log_message(self, *args: object) -> None:
                pass

        class Server(ThreadingHTTPServer):
            # The default backlog of 5 drops the SYNs of a reader opening
            # dozens of connections at once; each dropped one costs a 1 s
            # retransmit, which would be measured as the link.
            request_queue_size = 1024
            daemon_threads = True

            def handle_error(self, request, client_address) -> None:
                # A client closing a kept-alive connection is not an error.
                if not isinstance(sys.exc_info()[1], ConnectionError):
                    super().handle_error(request, client_address)

        self.server = Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.address = f"127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _main() -> None:
    import time

    server = RangeServer(Path(sys.argv[1] if len(sys.argv) > 1 else os.getcwd()))
    print(server.url, flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    _main()
