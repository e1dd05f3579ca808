"""The partner's webhook endpoint in ``make compose-check``: HTTPS, each delivery kept whole.

Run inside a container (the sluice image's Python, standard library only): it serves TLS with
the certificate the check made, answers 200, and appends every delivery (its headers and raw
body) as one JSON line to ``deliveries.jsonl`` beside it, which the check reads and verifies
with the SDK's ``verify_webhook``, as a partner's code would.
"""

from __future__ import annotations

import json
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent
_LOCK = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        line = json.dumps({"headers": dict(self.headers.items()), "body": body.decode()})
        with _LOCK, open(HERE / "deliveries.jsonl", "a") as out:
            out.write(line + "\n")
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002  (the base's name)
        return


def main() -> None:
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8443
    server = ThreadingHTTPServer(("0.0.0.0", port), Handler)  # nosec B104  (its own network)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(HERE / "receiver.pem", HERE / "receiver.key")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
