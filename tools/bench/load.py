"""A small HTTP/1.1 keep-alive load generator (its own process during ``make bench``).

Closed loop (``--rate 0``): each connection sends its next request as soon as the previous
answer arrives, for maximum throughput. Open loop (``--rate R``): requests start on a fixed
schedule of R per second regardless of answers, so latency includes queueing (no
coordinated omission), on a new connection whenever none is free (``--connections`` is where
it starts), so the queue is the server's, not the client's; requests still unanswered
``--grace`` seconds after the schedule ends are counted as ``unfinished`` errors with their
latency so far (a lower bound). With ``--wallets FILE`` each request is a ``POST
/v1/transfers`` of 0.01 USDC between two random wallets of the file (``--hot S``: from the
first wallet for a share S), its Idempotency-Key in the header and the body. Prints one JSON
object: requests, errors (every answer not 2xx), refused (503 overloaded), failed (any other
5xx; ``failed_by_reason``), no_answer, unfinished, rps, p50/p99 in ms over the 2xx answers
(tools.bench.answers), connections opened.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tools.bench.answers import (
    NO_ANSWER,
    STILL_RUNNING,
    Answer,
    failed_by_reason,
    open_loop,
    quantile_ms,
    reason_of,
)

MAX_OPEN_CONNECTIONS = 8192  # open loop: connections opened as the rate needs them, up to this
IDLE_REOPEN_S = 2.0  # a connection idle this long is reopened before its next request


class Conn:
    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.used = 0.0  # when its last answer arrived
        self.body = b""  # the last answer's body (a 5xx's names its reason)

    async def request(self, raw: bytes) -> int:
        if self.writer is not None and time.perf_counter() - self.used > IDLE_REOPEN_S:
            self.writer.close()  # the server closes idle connections (uvicorn: 5 s): not an error of its
            self.writer = None
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        self.writer.write(raw)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length = 0
        for line in head.split(b"\r\n"):
            if line[:15].lower() == b"content-length:":
                length = int(line[15:])
        self.body = await self.reader.readexactly(length) if length else b""
        self.used = time.perf_counter()
        return status


def transfer(source: str, destination: str, key: str) -> dict[str, Any]:
    """A book transfer of 0.01 USDC between two wallets: the request every load sends."""
    rail = {"payment_rail": "provider_wallet", "currency": "USDC"}
    return {
        "source": {**rail, "amount": "0.01", "provider_wallet_id": source},
        "destination": {**rail, "provider_wallet_id": destination},
        "idempotency_key": key,
    }


def transfer_body(wallets: list[str], hot: float, key: str) -> bytes:
    s = 0 if hot > 0 and random.random() < hot else random.randrange(len(wallets))
    d = random.randrange(len(wallets) - 1)
    d += d >= s
    return json.dumps(transfer(wallets[s], wallets[d], key)).encode()


def build(
    method: str,
    url: str,
    headers: dict[str, str],
    body: bytes | None,
    unique: bool,
    wallets: list[str] | None = None,
    hot: float = 0.0,
) -> bytes:
    parts = urlsplit(url)
    hs = {"Host": parts.netloc, "Connection": "keep-alive", **headers}
    if unique or wallets:
        hs["Idempotency-Key"] = uuid.uuid4().hex
    if wallets:
        body = transfer_body(wallets, hot, hs["Idempotency-Key"])
    if body is not None:
        hs["Content-Length"] = str(len(body))
    head = f"{method} {parts.path or '/'} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in hs.items())
    return head.encode() + b"\r\n" + (body or b"")


async def run(args: argparse.Namespace) -> dict[str, Any]:
    parts = urlsplit(args.url)
    headers = dict(h.split(":", 1) for h in args.header)
    headers = {k.strip(): v.strip() for k, v in headers.items()}
    body = args.body.encode() if args.body else None
    conns = [Conn(parts.hostname or "127.0.0.1", parts.port or 80) for _ in range(args.connections)]
    wallets = args.wallet_ids or None
    out: list[Answer] = []
    opened = len(conns)
    stop_at = time.perf_counter() + args.duration

    async def one(conn: Conn, scheduled: float) -> None:
        reason = None
        try:
            raw = build(args.method, args.url, headers, body, args.unique, wallets, args.hot)
            status = await conn.request(raw)
            if status >= 500:
                reason = reason_of(conn.body)
        except (OSError, asyncio.IncompleteReadError, ValueError):
            status = NO_ANSWER
            conn.writer = None
        out.append(Answer(status, reason, time.perf_counter() - scheduled))

    async def closed(conn: Conn) -> None:
        while time.perf_counter() < stop_at:
            await one(conn, time.perf_counter())

    start = time.perf_counter()
    lag: list[float] = []
    if args.rate <= 0:
        await asyncio.gather(*(closed(c) for c in conns))
    else:
        free: asyncio.Queue[Conn] = asyncio.LifoQueue()  # the most recently used first
        for c in conns:
            free.put_nowait(c)
        tasks: dict[asyncio.Task[None], float] = {}
        interval = 1.0 / args.rate
        # how late each request left against its schedule: ``lag``
        n = 0
        while True:
            scheduled = start + n * interval
            if scheduled >= stop_at:
                break
            delay = scheduled - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            lag.append(max(0.0, time.perf_counter() - scheduled))

            async def fire(s: float = scheduled) -> None:
                nonlocal opened
                if free.empty() and opened < MAX_OPEN_CONNECTIONS:
                    # Open loop: a request never waits for one of our connections (the client
                    # must not be the queue); the server's answer is what is timed.
                    opened += 1
                    free.put_nowait(Conn(parts.hostname or "127.0.0.1", parts.port or 80))
                c = await free.get()
                try:
                    await one(c, s)
                finally:
                    free.put_nowait(c)

            tasks[asyncio.create_task(fire())] = scheduled
            n += 1
        _, pending = await asyncio.wait(tasks, timeout=max(0.0, stop_at + args.grace - time.perf_counter()))
        now = time.perf_counter()
        for t in pending:
            t.cancel()
        out.extend(Answer(STILL_RUNNING, None, now - tasks[t]) for t in pending)  # their wait so far
    elapsed = time.perf_counter() - start
    # p50/p99 over the 2xx answers only; refusals (503 overloaded), failures by reason, no
    # answer and still running counted apart (tools.bench.answers).
    return {
        **open_loop(out, elapsed),
        "connections": opened,
        "failed_by_reason": failed_by_reason(out),
        "schedule_lag_p99_ms": quantile_ms(lag, 0.99),  # the driver's own lag (open loop only)
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--method", default="GET")
    ap.add_argument("--header", action="append", default=[])
    ap.add_argument("--body", default="")
    ap.add_argument("--unique", action="store_true", help="fresh Idempotency-Key per request")
    ap.add_argument("--duration", type=float, default=10)
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--rate", type=float, default=0)
    ap.add_argument("--grace", type=float, default=30, help="open loop: wait this long after the schedule")
    ap.add_argument("--wallets", default="", help="file of wallet ids: POST /v1/transfers bodies")
    ap.add_argument("--hot", type=float, default=0.0, help="share of transfers from the first wallet")
    args = ap.parse_args()
    args.wallet_ids = Path(args.wallets).read_text().split() if args.wallets else []
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # connections opened as needed
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    print(json.dumps(asyncio.run(run(args))), flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
