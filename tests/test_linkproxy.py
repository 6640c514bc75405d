"""The slow, lossy link of the fault tests (tests/linkproxy.py) does what they rely on: each chunk arrives ``delay``
later in each direction, in order and unchanged, and a dropped connection is closed before a byte is forwarded."""

from __future__ import annotations

import socket
import socketserver
import threading
import time

from linkproxy import LinkProxy


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(65536):
            self.request.sendall(data)


def _echo_server() -> socketserver.ThreadingTCPServer:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _receive(sock: socket.socket, size: int) -> bytes:
    got = b""
    while len(got) < size:
        chunk = sock.recv(size - len(got))
        if not chunk:
            break
        got += chunk
    return got


def test_a_round_trip_through_the_link_takes_twice_its_delay_and_keeps_the_bytes_in_order():
    server = _echo_server()
    try:
        with LinkProxy("127.0.0.1", server.server_address, delay=0.1, drop=0.0) as link:
            with socket.create_connection(("127.0.0.1", link.port), timeout=10) as sock:
                payload = bytes(range(256)) * 400  # several chunks
                started = time.monotonic()
                sock.sendall(payload)
                echoed = _receive(sock, len(payload))
                elapsed = time.monotonic() - started
            assert echoed == payload
            assert 0.2 <= elapsed < 2.0, elapsed  # 0.1 s each way, and not a delay per byte
            assert link.counts == {"connections": 1, "dropped": 0}
    finally:
        server.shutdown()


def test_a_dropped_connection_forwards_nothing_and_the_first_ones_can_be_dropped_on_purpose():
    server = _echo_server()
    try:
        with LinkProxy("127.0.0.1", server.server_address, delay=0.0, drop=0.0, drop_first=2) as link:
            for attempt in range(3):
                with socket.create_connection(("127.0.0.1", link.port), timeout=10) as sock:
                    try:
                        sock.sendall(b"ping")
                        answer = _receive(sock, 4)
                    except ConnectionError:
                        answer = b""
                assert answer == (b"ping" if attempt == 2 else b""), attempt
            assert link.counts == {"connections": 3, "dropped": 2}
        with LinkProxy("127.0.0.1", server.server_address, delay=0.0, drop=0.25, seed=3) as link:
            for _ in range(40):
                with socket.create_connection(("127.0.0.1", link.port), timeout=10) as sock:
                    try:
                        sock.sendall(b"x")
                        _receive(sock, 1)
                    except ConnectionError:
                        pass
            assert 3 <= link.counts["dropped"] <= 20, link.counts  # a quarter of 40, drawn
    finally:
        server.shutdown()
