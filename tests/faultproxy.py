"""A fault-injecting HTTP proxy for the tests: in front of a real server (a local S3 server), it forwards every
request and answers some of them itself, as a failing object store does (503 SlowDown, 500 InternalError), or
holds them (a stall: the connection closed unanswered after the stall, the request never forwarded).

    with FaultProxy("127.0.0.1", upstream_port) as proxy:   # proxy.url: give it as AWS_ENDPOINT_URL
        proxy.fail(share=0.2, status=503, seed=1)            # about one request in five answered 503 SlowDown
        ...
        proxy.heal()                                         # forward everything again
        proxy.counts                                         # {"forwarded": ..., "failed": ...}
"""

from __future__ import annotations

import http.client
import random
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailers",
              "transfer-encoding", "upgrade"}
ERRORS = {503: ("SlowDown", "Please reduce your request rate."),
          500: ("InternalError", "We encountered an internal error. Please try again.")}


class FaultProxy:
    """A threaded HTTP/1.1 proxy on ``host`` (a free port) forwarding to ``host:upstream_port``."""

    def __init__(self, host: str, upstream_port: int) -> None:
        self.host, self.upstream_port = host, upstream_port
        self.counts = {"forwarded": 0, "failed": 0, "stalled": 0}
        self._share, self._stall, self._methods = 0.0, 0.0, None
        self._status: int | tuple[int, ...] = 503
        self._rng = random.Random(0)
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def _body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    parts = []
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                                pass
                            return b"".join(parts)
                        parts.append(self.rfile.read(size))
                        self.rfile.readline()
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def _handle(self) -> None:
                body = self._body()
                fault = proxy._draw(self.command)
                if fault == "stall":  # held, then closed unanswered: the request never reaches the server
                    time.sleep(proxy._stall)
                    self.close_connection = True
                    return
                if fault is not None:
                    code, message = ERRORS.get(fault, ("InternalError", "injected"))
                    payload = (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code><Message>{message}'
                               "</Message></Error>").encode()
                    self.send_response(fault)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(payload)
                    return
                upstream = http.client.HTTPConnection(proxy.host, proxy.upstream_port, timeout=60)
                headers = {key: value for key, value in self.headers.items()
                           if key.lower() not in HOP_BY_HOP and key.lower() != "content-length"}
                if body or self.command in ("PUT", "POST"):
                    headers["Content-Length"] = str(len(body))
                upstream.request(self.command, self.path, body=body or None, headers=headers)
                response = upstream.getresponse()
                payload = response.read()
                upstream.close()
                self.send_response(response.status)
                for key, value in response.getheaders():
                    if key.lower() not in HOP_BY_HOP and key.lower() != "content-length":
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

        self._server = ThreadingHTTPServer((host, 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.url = f"http://{host}:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _draw(self, method: str) -> int | str | None:
        with self._lock:
            if self._methods is not None and method not in self._methods:
                self.counts["forwarded"] += 1
                return None
            if self._share and self._rng.random() < self._share:
                key = "stalled" if self._stall else "failed"
                self.counts[key] += 1
                if self._stall:
                    return "stall"
                return self._rng.choice(self._status) if isinstance(self._status, tuple) else self._status
            self.counts["forwarded"] += 1
            return None

    def fail(self, share: float, status: int | tuple[int, ...] = 503, *, seed: int = 0,
             methods: tuple[str, ...] | None = None, stall: float = 0.0) -> None:
        """Answer ``share`` of the requests (of ``methods``, default all) with ``status`` (a tuple: one of them at
        random each time), or hold them ``stall`` seconds and close them unanswered (when ``stall`` > 0)."""
        with self._lock:
            self._share, self._status, self._stall = share, status, stall
            self._methods = None if methods is None else set(methods)
            self._rng = random.Random(seed)

    def heal(self) -> None:
        self.fail(0.0)

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
