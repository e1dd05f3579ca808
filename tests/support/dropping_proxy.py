"""A TCP proxy in front of a gateway that loses answers: for the first ``drops`` connections
it relays the request and, once the gateway's answer starts to come back (the work is done),
closes the client's connection without relaying a byte of it. The client sees a dropped
connection after the gateway acted: the case an idempotency key exists for."""

from __future__ import annotations

import asyncio
import threading
from urllib.parse import urlsplit

from tools.stack.processes import free_port


class DroppingProxy:
    def __init__(self, upstream: str, drops: int = 1) -> None:
        parts = urlsplit(upstream)
        self.host, self.upstream_port = parts.hostname or "127.0.0.1", parts.port or 80
        self.port = free_port()
        self.drops = drops
        self.dropped = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def _handle(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        up_r, up_w = await asyncio.open_connection(self.host, self.upstream_port)
        if self.dropped < self.drops:
            self.dropped += 1
            forward = asyncio.ensure_future(self._pipe(client_r, up_w))
            await up_r.read(1)  # the gateway has answered: its work is done
            forward.cancel()
            client_w.transport.abort()  # the answer is lost on the way back
            up_w.close()
            return
        await asyncio.gather(self._pipe(client_r, up_w), self._pipe(up_r, client_w))

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._handle, "127.0.0.1", self.port)
        )
        self._ready.set()
        self._loop.run_forever()

    def __enter__(self) -> DroppingProxy:
        threading.Thread(target=self._run, daemon=True).start()
        self._ready.wait(10)
        return self

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
