from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from sluice_sdk import WebhookEvent, WebhookRefused, verify_webhook


def receiver(port: int, secret: str, handle: Callable[[WebhookEvent], None]) -> ThreadingHTTPServer:
    class Hooks(BaseHTTPRequestHandler):  # the standard library's server: nothing else to install
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))  # the raw bytes
            try:
                event = verify_webhook(body, dict(self.headers), secret)
            except WebhookRefused:
                self.send_response(400)
            else:
                handle(event)  # at least once: deduplicate on event["id"]
                self.send_response(200)
            self.end_headers()

    return ThreadingHTTPServer(("127.0.0.1", port), Hooks)
