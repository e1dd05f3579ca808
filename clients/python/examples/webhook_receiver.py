from collections.abc import Callable
from typing import Any

from litestar import Litestar, Request, Response, post

from sluice_sdk import WebhookEvent, WebhookRefused, verify_webhook


def receiver(secret: str, handle: Callable[[WebhookEvent], None]) -> Litestar:
    @post("/hooks")
    async def hooks(request: Request[Any, Any, Any]) -> Response[str]:
        try:
            event = verify_webhook(await request.body(), request.headers, secret)
        except WebhookRefused:
            return Response("refused", status_code=400)
        handle(event)  # at least once: deduplicate on event["id"]
        return Response("ok", status_code=200)

    return Litestar([hooks])
