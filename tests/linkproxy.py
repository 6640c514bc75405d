"""A slow, lossy network link for the tests: a TCP proxy that delays every chunk of bytes it forwards, in each
direction, and drops a share of the connections made through it (closed at once, before a byte is forwarded, as a
connection whose packets are lost for good). This kernel has no ``netem``: this is the link's fault in user space.

    with LinkProxy("10.250.0.254", ("10.250.0.1", 8786), delay=0.05, drop=0.01, seed=1, drop_first=0) as link:
        link.address                       # "10.250.0.254:PORT": give it in place of the upstream's address
        link.counts                        # {"connections": ..., "dropped": ...}

Each direction keeps its bytes in order: a chunk read at time t is written at t + delay, after every earlier chunk.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time


class LinkProxy:
    """A TCP proxy on ``host`` (a free port, or ``port``) forwarding to ``upstream`` (host, port)."""

    def __init__(self, host: str, upstream: tuple[str, int], *, delay: float = 0.05, drop: float = 0.01,
                 seed: int = 0, port: int = 0, drop_first: int = 0) -> None:
        self.host, self.upstream, self.delay, self.drop = host, upstream, delay, drop
        self.drop_first = drop_first  # the first connections dropped whatever the draw (a link down at first)
        self.counts = {"connections": 0, "dropped": 0}
        self._rng = random.Random(seed)
        self._port = port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()

    @property
    def address(self) -> str:
        return f"{self.host}:{self._port}"

    @property
    def port(self) -> int:
        return self._port

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Forward ``reader`` to ``writer``, each chunk ``delay`` after it was read, in order."""
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def later() -> None:
            while True:
                due, chunk = await queue.get()
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                if not chunk:
                    break
                writer.write(chunk)
                await writer.drain()

        sender = asyncio.ensure_future(later())
        try:
            while True:
                chunk = await reader.read(65536)
                queue.put_nowait((time.monotonic() + self.delay, chunk))
                if not chunk:
                    break
            await sender
        except (ConnectionError, OSError):
            sender.cancel()
        finally:
            try:
                writer.close()
            except (ConnectionError, OSError, RuntimeError):
                pass

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.counts["connections"] += 1
        if self._rng.random() < self.drop or self.counts["connections"] <= self.drop_first:
            self.counts["dropped"] += 1
            transport = writer.transport
            transport.abort()  # a reset, nothing forwarded
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.transport.abort()
            return
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer), return_exceptions=True)

    def _serve(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        self._server = loop.run_until_complete(asyncio.start_server(self._connection, self.host, self._port))
        self._port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        loop.run_forever()
        self._server.close()
        loop.run_until_complete(self._server.wait_closed())
        for task in asyncio.all_tasks(loop):
            task.cancel()
        loop.run_until_complete(asyncio.gather(*asyncio.all_tasks(loop), return_exceptions=True))
        loop.close()

    def __enter__(self) -> LinkProxy:
        self._thread = threading.Thread(target=self._serve, daemon=True, name=f"link-proxy-{self.upstream[1]}")
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError(f"the link proxy to {self.upstream} did not start within 30 s")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=30)
