"""A webhook endpoint for the tools (make chaos audits every delivery, make bench's sizing part
gives its tenant an endpoint): a plain HTTP server in a thread that answers 200 and counts."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Receiver:
    """A webhook endpoint in a thread: counts ``transfer.created`` deliveries by transfer id,
    and the distinct event ids among them (``x-service-webhook-id``, the same on every
    attempt): a second delivery with the same id is a redelivery (at least once); a second id
    for one transfer would be a second event."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.created: Counter[str] = Counter()
        self.ids: dict[str, set[str]] = {}
        self.deliveries = 0
        self.last_at = 0.0  # time.monotonic() of the latest delivery
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            # Keep-alive, as a partner's endpoint is: under HTTP/1.0 (the server's default) each
            # delivery closed its connection and the sender paid a new one every time (about a
            # tenth of the webhooks service's CPU in the 100/s profile, docs/performance/history.md).
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                try:
                    ev: dict[str, Any] = json.loads(body)
                except ValueError:
                    ev = {}
                with receiver._lock:
                    receiver.deliveries += 1
                    receiver.last_at = time.monotonic()
                    if ev.get("type") == "transfer.created":
                        tid = str(ev.get("data", {}).get("transfer_id"))
                        receiver.created[tid] += 1
                        receiver.ids.setdefault(tid, set()).add(self.headers.get("x-service-webhook-id", ""))
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks"

    def stop(self) -> None:
        self.server.shutdown()
