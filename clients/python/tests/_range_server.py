"""A local HTTP server of a folder's files with HEAD and ranged GETs, as S3 answers them, for the
tests that read remote shards: each file's ETag, the requests it saw, and the body bytes it sent for
each file (what a node fetched). A subclass refuses what it must with ``refuse``."""

import http.server
import re
import threading
from pathlib import Path
from typing import Optional, Tuple
from urllib.parse import urlsplit


class RangeServer(http.server.ThreadingHTTPServer):
    """Serves ``folder``'s files at ``PREFIX/NAME`` on 127.0.0.1, started at once on a daemon thread.

    Args:
        folder (Path): the files served.
        prefix (str): the path they are under, ``"/"`` or ``"/shards/"``.
    """

    daemon_threads = True

    def __init__(self, folder: Path, prefix: str = "/") -> None:
        self.folder = folder
        self.prefix = prefix
        self.requests = []  # each request's path and query, in order
        self.sent = {}  # file name -> body bytes sent
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)
        threading.Thread(target=self.serve_forever, name="range-server", daemon=True).start()

    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{self.prefix}"

    def refuse(self, path: str, query: str) -> Optional[Tuple[int, str]]:
        """The status and reason to answer a request with instead of the file, or None to serve it."""
        return None

    def etag(self, file: Path, data: bytes) -> str:
        return f'"v1-{file.name}"'

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


class _Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:  # the default logs every request, query and all, to stderr
        pass

    def do_HEAD(self) -> None:
        self._serve(body=False)

    def do_GET(self) -> None:
        self._serve(body=True)

    def _serve(self, body: bool) -> None:
        server = self.server
        parts = urlsplit(self.path)
        with server.lock:
            server.requests.append(self.path)
        refused = server.refuse(parts.path, parts.query)
        if refused is not None:
            self.send_error(*refused)
            return
        file = server.folder / Path(parts.path).name
        if not parts.path.startswith(server.prefix) or not file.is_file():
            self.send_error(404)
            return
        data = file.read_bytes()
        first, last = 0, len(data) - 1
        m = re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers.get("Range") or "")
        if m:
            first, last = int(m.group(1)), min(int(m.group(2)), len(data) - 1)
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {first}-{last}/{len(data)}")
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(last - first + 1))
        self.send_header("ETag", server.etag(file, data))
        self.end_headers()
        if body:
            self.wfile.write(data[first:last + 1])
            with server.lock:
                server.sent[file.name] = server.sent.get(file.name, 0) + last - first + 1
