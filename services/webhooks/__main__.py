"""``python -m webhooks``: logging first (so import-time and start-up failures are JSON too)."""

if __name__ == "__main__":
    from common.logging import setup_logging

    setup_logging("webhooks")

    from common.service import serve
    from common.settings import load_settings
    from webhooks.app import create_app

    settings = load_settings("webhooks")
    serve(
        create_app(settings), settings.webhooks_host, settings.webhooks_port, setting="SLUICE_WEBHOOKS_PORT"
    )
