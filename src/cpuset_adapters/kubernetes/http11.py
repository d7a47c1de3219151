"""One HTTP/1.1 connection to the API server, kept alive between requests: the least of HTTP
the API client needs, on ``socket`` (and ``ssl`` when the credentials ask for TLS).

``http.client`` cost the daemon 0.9 MiB resident with the publisher or the events on (it
parses every answer's header with ``email``'s parser, and imports ``email`` whole for it);
this reads what an API server sends: a status line, header fields, and a body framed by
``Content-Length``, by chunks, or by the connection's end. Blocking, with one timeout for the
connection and each read. Every failure is an ``OSError``: the socket's own (``TimeoutError``
included, ``ssl.SSLError`` too) or :class:`HttpError` for an answer that is not HTTP/1.x.
Decision 60.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from io import BufferedReader
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import ssl

MAX_LINE: Final = 65_536
"""Longest status line, header field or chunk-size line read, in bytes (http.client's)."""

MAX_FIELDS: Final = 100
"""Most header fields in one answer (http.client's)."""


class HttpError(OSError):
    """An answer that is not HTTP/1.x as this client reads it, or that ended early."""


class Connection:
    """Requests to ``host:port``, one at a time, over one connection opened at the first and
    kept while the server keeps it; ``context`` makes it TLS (the server's name checked)."""

    def __init__(self, host: str, port: int, *, timeout: float,
                 context: ssl.SSLContext | None = None) -> None:
        self.host, self.port, self.timeout, self._context = host, port, timeout, context
        self._sock: socket.socket | None = None
        self._file: BufferedReader | None = None
        name = f"[{host}]" if ":" in host else host
        default = 80 if context is None else 443
        self._host_field = name if port == default else f"{name}:{port}"

    def request(self, method: str, path: str, body: bytes,
                headers: Mapping[str, str]) -> tuple[int, bytes]:
        """Send the request and return the answer's status and body; raises ``OSError``."""
        if self._sock is None or self._file is None:
            self._open()
        assert self._sock is not None and self._file is not None  # noqa: PT018 - opened above
        lines = [f"{method} {path} HTTP/1.1", f"Host: {self._host_field}",
                 f"Content-Length: {len(body)}", *(f"{k}: {v}" for k, v in headers.items())]
        self._sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        status, fields = _head(self._file)
        while 100 <= status < 200:  # informational answers come before the final one
            status, fields = _head(self._file)
        answer, until_close = _body(self._file, method, status, fields)
        if until_close or "close" in fields.get("connection", "").lower():
            self.close()
        return status, answer

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def _open(self) -> None:
        sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        try:
            if self._context is not None:
                sock = self._context.wrap_socket(sock, server_hostname=self.host)
        except OSError:
            sock.close()
            raise
        self._sock, self._file = sock, sock.makefile("rb")


def _line(file: BufferedReader) -> bytes:
    line = file.readline(MAX_LINE + 1)
    if len(line) > MAX_LINE:
        raise HttpError(f"a line of the answer is longer than {MAX_LINE} bytes")
    if not line.endswith(b"\n"):
        raise HttpError("the connection ended before the answer did")
    return line.rstrip(b"\r\n")


def _head(file: BufferedReader) -> tuple[int, dict[str, str]]:
    """The status and the header fields (names in lower case; repeated ones joined)."""
    status_line = _line(file).decode("latin-1")
    version, _, rest = status_line.partition(" ")
    code = rest[:3]
    if not version.startswith("HTTP/1.") or not (code.isdigit() and len(code) == 3):
        raise HttpError(f"not an HTTP/1.x status line: {status_line[:80]!r}")
    fields: dict[str, str] = {}
    count = 0
    while line := _line(file):
        count += 1
        if count > MAX_FIELDS:
            raise HttpError(f"more than {MAX_FIELDS} header fields")
        name, colon, value = line.decode("latin-1").partition(":")
        if not colon:
            raise HttpError(f"not a header field: {line[:80]!r}")
        key = name.strip().lower()
        fields[key] = f"{fields[key]}, {value.strip()}" if key in fields else value.strip()
    return int(code), fields


def _body(file: BufferedReader, method: str, status: int,
          fields: Mapping[str, str]) -> tuple[bytes, bool]:
    """The answer's body, and whether the connection's end framed it (then it is done)."""
    if method == "HEAD" or status in {204, 304}:
        return b"", False
    if "chunked" in fields.get("transfer-encoding", "").lower():
        return _chunks(file), False
    length = fields.get("content-length")
    if length is None:
        return file.read(), True
    if not length.strip().isdigit():
        raise HttpError(f"not a Content-Length: {length[:80]!r}")
    return _exactly(file, int(length)), False


def _chunks(file: BufferedReader) -> bytes:
    parts = []
    while True:
        size_field = _line(file).split(b";", 1)[0].strip()
        if not size_field or size_field.strip(b"0123456789abcdefABCDEF"):
            raise HttpError(f"not a chunk size: {size_field[:80]!r}")
        size = int(size_field, 16)
        if size == 0:
            break
        parts.append(_exactly(file, size))
        if _line(file):
            raise HttpError("a chunk longer than its size")
    while _line(file):  # trailer fields, unused
        pass
    return b"".join(parts)


def _exactly(file: BufferedReader, size: int) -> bytes:
    data = file.read(size)
    if len(data) != size:
        raise HttpError(f"the connection ended {size - len(data)} bytes before the body did")
    return data
